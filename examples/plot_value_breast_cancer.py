"""
Private data values on breast cancer with flipped labels
========================================================

Values the training samples of ``breast_cancer`` (30% of labels flipped)
without noise, with i.i.d. noise and with correlated noise at the same exact
privacy budget, and plots the values of clean and flipped samples.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from skdpval import DPDataValuator
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import noisy_label_auc

data = load_noisy_classification("breast_cancer", random_state=0)

# %%
# Features are already standardised by the loader (StandardScaler fitted on
# the training split): the learning rate and the clipping norm act on them.
fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
for ax, noise in zip(axes, ["none", "iid", "correlated"]):
    valuator = DPDataValuator(noise=noise, q=0.9 if noise == "correlated" else 0.0,
                              epsilon=3.0, n_permutations=300, random_state=0)
    valuator.fit(data.X_train, data.y_train, X_val=data.X_val, y_val=data.y_val)
    auc = noisy_label_auc(valuator.values_, data.is_noisy)
    bins = np.linspace(valuator.values_.min(), valuator.values_.max(), 30)
    ax.hist(valuator.values_[~data.is_noisy], bins=bins, alpha=0.6, label="clean")
    ax.hist(valuator.values_[data.is_noisy], bins=bins, alpha=0.6, label="flipped")
    ax.set_title(f"noise={noise!r}: AUC {auc:.2f}")
    ax.set_xlabel("value")
axes[0].legend()
fig.tight_layout()
fig.savefig("value_breast_cancer.png", dpi=100)
