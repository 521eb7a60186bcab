"""
Bad labels in a table with text columns: preprocessing in a Pipeline
====================================================================

A customer table with three text columns and three numeric ones, a
public validation set of 200 clean rows and 2,000 private training rows
with a quarter of their labels flipped. The valuators need numbers: a
``ColumnTransformer`` one-hot encodes the text and scales the numbers in a
scikit-learn ``Pipeline`` in front of :class:`~skdpval.DPLabelQuality`.

Two things make it private (:doc:`/user_guide/pipelines`):

- the preprocessing is fitted on the **public** rows and frozen,
  ``FrozenEstimator(encode.fit(X_val))``: fitted on the private rows, the
  categories it found and the means it computed would be a release without
  noise (:func:`skdpval.privacy_spent` lists it);
- the Pipeline transforms ``X_val`` as it transforms ``X``,
  ``transform_input=["X_val"]`` (metadata routing on, the valuator
  requesting ``X_val`` and ``y_val``). Without it, ``X_val`` reaches the
  valuator as text and the error says so.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import sklearn
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdpval import DPLabelQuality, privacy_spent
from skdpval.datasets import flip_labels
from skdpval.metrics import noisy_label_auc

rng = np.random.default_rng(0)
n = 2200
table = pd.DataFrame({
    "plan": rng.choice(["basic", "plus", "pro"], n),
    "region": rng.choice(["north", "south", "east", "west"], n),
    "channel": rng.choice(["web", "store", "phone"], n),
    "income": rng.lognormal(10, 0.5, n).round(-2),
    "age": rng.integers(18, 80, n),
    "tenure": rng.integers(0, 30, n),
}, index=pd.Index([f"C{i:05d}" for i in range(n)], name="customer"))
margin = (1.5 * (table["plan"] == "pro") - 1.0 * (table["plan"] == "basic")
          + 0.8 * (table["channel"] == "web") - 1.2 * np.log(table["income"] / 22000)
          + 0.05 * (table["tenure"] - 15) + rng.logistic(scale=0.3, size=n))
churn = (margin > 0).to_numpy().astype(int)
X_val, y_val = table.iloc[:200], churn[:200]            # public, clean
X, y = table.iloc[200:], churn[200:]                    # private
y_noisy, is_flipped = flip_labels(y, 0.25, random_state=0)
X.head()

# %%
# The preprocessing, fitted on the public rows only. ``handle_unknown``:
# a category seen only in the private rows encodes as zeros instead of an
# error that would quote it; pandas output passes the customers' ids on.
encode = ColumnTransformer([
    ("text", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
     ["plan", "region", "channel"]),
    ("numbers", StandardScaler(), ["income", "age", "tenure"]),
]).set_output(transform="pandas")

with sklearn.config_context(enable_metadata_routing=True):
    scorer = DPLabelQuality(epsilon=3.0, random_state=0).set_fit_request(
        X_val=True, y_val=True)
    pipe = Pipeline([("encode", FrozenEstimator(encode.fit(X_val))),
                     ("score", scorer)], transform_input=["X_val"])
    pipe.fit(X, y_noisy, X_val=X_val, y_val=y_val)

scores = pipe[-1].to_frame()                  # indexed by customer
print(scores.nsmallest(8, "value"))
print("leaks:", privacy_spent(pipe)["leaks"])

# %%
# Without ``transform_input`` (and metadata routing), ``X_val`` goes to the
# valuator as given, untransformed: the error names the remedy.
try:
    Pipeline([("encode", FrozenEstimator(encode)),
              ("score", DPLabelQuality(epsilon=3.0, random_state=0))]).fit(
        X, y_noisy, score__X_val=X_val, score__y_val=y_val)
except ValueError as error:
    print(error)

# %%
# The same Pipeline with the preprocessing fitted inside it, on the private
# rows: the encoder's categories and the scaler's means and deviations are
# then private statistics released without noise, and privacy_spent says so.
with sklearn.config_context(enable_metadata_routing=True):
    leaky = Pipeline([("encode", encode), ("score", DPLabelQuality(
        epsilon=3.0, random_state=0).set_fit_request(X_val=True, y_val=True))],
        transform_input=["X_val"]).fit(X, y_noisy, X_val=X_val, y_val=y_val)
print("leaks:", privacy_spent(leaky)["leaks"])

# %%
# The label scores of clean and flipped rows, against the ceiling that
# epsilon 3 sets on any method's expected AUC for flipped labels.
values = scores["value"].to_numpy()
auc = noisy_label_auc(values, is_flipped)
limit = pipe[-1].privacy_report_["max_noisy_label_auc"]
bins = np.linspace(values.min(), values.max(), 40)
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
ax.hist(values[~is_flipped], bins=bins, alpha=0.6, label="clean label")
ax.hist(values[is_flipped], bins=bins, alpha=0.6, label="flipped label")
ax.set_xlabel("private label score (low: suspicious)")
ax.set_ylabel("rows")
ax.set_title(f"epsilon 3: AUC {auc:.2f} (limit {limit:.3f})")
ax.legend()
plt.show()
