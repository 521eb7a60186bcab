"""
Private data values on breast cancer with flipped labels
========================================================

Values the training samples of ``breast_cancer`` (30% of labels flipped)
without noise, with the seed paper's mechanism (the full gradient clipped to
C = 1, correlated noise) and with the library's defaults (the gradient
projected on a public direction, then clipped and noised) at the same exact
privacy budget, and plots the values of clean and flipped samples, then the
private values sorted, with their error bars
(:func:`skdpval.plotting.plot_values`).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from skdpval import DPDataValuator
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import noisy_label_auc
from skdpval.plotting import plot_values

data = load_noisy_classification("breast_cancer", random_state=0)

# %%
# The loader standardises the features with the validation split's
# statistics (public); the valuator would do the same (standardize=True).
settings = {"no DP": dict(noise="none"),
            "paper: full gradient": dict(subspace=None, clip_norm=1.0),
            "defaults: public direction": {}}
fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
for ax, (label, params) in zip(axes, settings.items()):
    valuator = DPDataValuator(epsilon=3.0, n_permutations=300, random_state=0,
                              **params)
    valuator.fit(data.X_train, data.y_train, X_val=data.X_val, y_val=data.y_val)
    auc = noisy_label_auc(valuator.values_, data.is_noisy)
    bins = np.linspace(valuator.values_.min(), valuator.values_.max(), 30)
    ax.hist(valuator.values_[~data.is_noisy], bins=bins, alpha=0.6, label="clean")
    ax.hist(valuator.values_[data.is_noisy], bins=bins, alpha=0.6, label="flipped")
    ax.set_title(f"{label}: AUC {auc:.2f}")
    ax.set_xlabel("value")
axes[0].legend()
fig.tight_layout()
plt.show()

# %%
# The default private values, sorted, with error bars of two standard errors
# (``values_stderr_``: the Monte Carlo spread and the privacy noise, not
# the bias); flipped samples in red.
ax = plot_values(valuator, mark=data.is_noisy, mark_label="flipped")
ax.set_title(f"epsilon = {valuator.epsilon_:g}, max. expected AUC "
             f"{valuator.privacy_report_['max_noisy_label_auc']:.3f}")
plt.show()
