"""
Private from end to end: cleaning noisy labels, then a private model
=====================================================================

``breast_cancer`` with 30% of the training labels flipped. The training rows
are private; a small validation split is public (it defines the utility and
the feature scaling); a test split measures accuracy.

For each total budget epsilon in {2, 4, 8} (delta = 5e-5) we compare, on the
clean test labels:

- a private model on every training row: diffprivlib's
  ``LogisticRegression`` at the whole budget;
- private cleaning then a private model: the budget split in half between
  the private label-quality score (:class:`~skdpval.DPLabelQuality`: drop
  the 30% lowest-scored rows) and diffprivlib's ``LogisticRegression`` on
  the rows kept;

next to the non-private pipeline (scikit-learn's ``LogisticRegression``
with the same ``C``, with and without cleaning by noiseless values). ``privacy_report_`` of the
cleaning step composes the two halves exactly: slightly under their sum.
Then a ``GridSearchCV`` tunes both budgets, and
:func:`skdpval.privacy_spent` reports what the whole search spent.

Two leaks this example avoids: a ``StandardScaler`` fitted on the private
rows releases their mean and spread (we scale with the validation set's
statistics), and diffprivlib left to find ``data_norm`` itself reads it
from the private rows (we set it). Its ``C = 0.1`` and ``data_norm = 2``
(every row clipped to norm 2) were picked from a small grid (C in
{0.1, 1, 10}, data_norm in {1, 2, 4}) by the test accuracy of the private
model on all rows; in a real workflow, pick them without the private data.

This shows the workflow, not a case where cleaning pays: with 299 training
rows, the 100 clean validation rows alone do as well as any pipeline below
(the dash-dotted gray line: the same non-private model fitted on them). In
``benchmarks/cleaning.py`` (20 seeds, a non-private ``LogisticRegression()``
as the final model) the validation rows alone gave 0.967, the noisy rows
0.854, and the rows kept by private cleaning at epsilon 3 gave 0.906-0.915.
:ref:`sphx_glr_auto_examples_find_bad_labels_plot_cleaning_pays.py` shows where cleaning
pays: many training rows with class-dependent flips and a flexible final
model.
"""

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import sklearn.tree._tree
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.preprocessing import StandardScaler

from skdpval import DPDataValuator, DPFilteredClassifier, DPLabelQuality, privacy_spent
from skdpval.datasets import flip_labels

# diffprivlib 0.6 imports two constants scikit-learn 1.9 removed (for its
# random forest, unused here); they were these dtypes.
sklearn.tree._tree.DOUBLE = getattr(sklearn.tree._tree, "DOUBLE", np.float64)
sklearn.tree._tree.DTYPE = getattr(sklearn.tree._tree, "DTYPE", np.float32)
from diffprivlib.models import LogisticRegression as DPLogisticRegression  # noqa: E402

start = time.perf_counter()
X, y = load_breast_cancer(return_X_y=True)
order = np.random.default_rng(0).permutation(len(X))
test, val, train = order[:170], order[170:270], order[270:]
# Public statistics only: the validation set's mean and std, never the private rows'.
X = StandardScaler().fit(X[val]).transform(X)
X_train, X_val, X_test = X[train], X[val], X[test]
y_val, y_test = y[val], y[test]
y_train, is_flipped = flip_labels(y[train], 0.3, random_state=0)
public = dict(X_val=X_val, y_val=y_val)
print(f"{len(train)} private rows ({is_flipped.sum()} flipped), {len(val)} "
      f"public validation rows, {len(test)} test rows")


def make_valuator(epsilon):
    """The valuation step: DPLabelQuality, one release per row of its margin
    under a model fitted on the validation set (the library's best finder of
    flipped labels); ``DPDataValuator(epsilon=epsilon)`` fits here too."""
    return DPLabelQuality(epsilon=epsilon)


def private_model(epsilon):
    # data_norm given, not read from the private rows (diffprivlib clips to it).
    return DPLogisticRegression(epsilon=epsilon, data_norm=2.0, C=0.1)


# %%
# Non-private references: the same model without noise.
plain = LogisticRegression(C=0.1).fit(X_train, y_train).score(X_test, y_test)
cleaned = DPFilteredClassifier(
    DPDataValuator(LogisticRegression(), noise="none", q=0.0, n_permutations=200,
                   random_state=0),
    LogisticRegression(C=0.1), drop_fraction=0.3).fit(X_train, y_train, **public)
validation_only = LogisticRegression(C=0.1).fit(X_val, y_val).score(X_test, y_test)
print(f"non-private: all rows {plain:.3f}, cleaned {cleaned.score(X_test, y_test):.3f}, "
      f"the validation rows alone {validation_only:.3f} "
      f"(privacy_report_ says: {cleaned.privacy_report_['leaks'][0][:40]}...)")

# %%
# Private pipelines, averaged over 10 runs (the noise differs every run).
budgets, n_runs = (2.0, 4.0, 8.0), 10
rows = []
for budget in budgets:
    whole, split, spent = [], [], []
    for run in range(n_runs):
        whole.append(private_model(budget).fit(X_train, y_train).score(X_test, y_test))
        step = DPFilteredClassifier(make_valuator(budget / 2), private_model(budget / 2),
                                    drop_fraction=0.3)
        step.fit(X_train, y_train, **public)
        split.append(step.score(X_test, y_test))
        spent.append(step.privacy_report_["epsilon"])
    assert step.privacy_report_["private"], step.privacy_report_["leaks"]
    rows.append((budget, np.mean(whole), np.std(whole), np.mean(split), np.std(split),
                 spent[0]))
    print(f"epsilon {budget:g}: no cleaning {np.mean(whole):.3f} +- {np.std(whole):.3f}"
          f" | cleaning {np.mean(split):.3f} +- {np.std(split):.3f}"
          f" (exact total epsilon {spent[0]:.3f})")

# %%
# Tuning on private data spends privacy too: 4 candidates x 2 training folds
# per party, plus the refit. Folds that are not stratified: stratifying on
# private labels would be one more leak.
search = GridSearchCV(
    DPFilteredClassifier(make_valuator(1.0), private_model(1.0), drop_fraction=0.3),
    {"valuator__epsilon": [1.0, 2.0], "estimator__epsilon": [1.0, 2.0]},
    cv=KFold(3, shuffle=True, random_state=0))
search.fit(X_train, y_train, **public)
total = privacy_spent(search)
print(f"search: best {search.best_params_}, test accuracy "
      f"{search.score(X_test, y_test):.3f}")
print(f"  fits per party {total['max_fits_per_party']}, total epsilon "
      f"{total['epsilon']:.2f} at delta {total['delta']:g} (the refit alone: "
      f"{search.best_estimator_.privacy_report_['epsilon']:.2f})")
for leak in total["leaks"]:
    print("  not counted:", leak)
print(f"example ran in {time.perf_counter() - start:.0f} s")

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
budget, whole, whole_sd, split, split_sd, _ = map(np.array, zip(*rows))
ax.errorbar(budget, whole, whole_sd, marker="o", capsize=3,
            label="private model, all rows")
ax.errorbar(budget * 1.03, split, split_sd, marker="s", capsize=3,
            label="private cleaning + private model")
ax.axhline(plain, color="gray", linestyle="--", label="non-private, all rows")
ax.axhline(cleaned.score(X_test, y_test), color="black", linestyle=":",
           label="non-private, cleaned")
ax.axhline(validation_only, color="gray", linestyle="-.",
           label="non-private, validation rows only")
ax.set_xscale("log", base=2)
ax.set_xticks(budget, [f"{b:g}" for b in budget])
ax.set_xlabel("total epsilon (delta = 5e-5)")
ax.set_ylabel("test accuracy")
ax.legend(fontsize=8)
fig.tight_layout()
