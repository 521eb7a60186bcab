"""
Private data values on breast cancer with flipped labels
========================================================

Values the training samples of ``breast_cancer`` (30% of labels flipped)
without noise, with i.i.d. noise and with correlated noise at the same exact
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
plt.show()

# %%
# The correlated-noise values, sorted, with error bars of two standard errors
# when the valuator reports them (``values_stderr_``); flipped samples in red.
ax = plot_values(valuator, mark=data.is_noisy, mark_label="flipped")
ax.set_title(f"epsilon = {valuator.epsilon_:g}, max. AUC "
             f"{valuator.privacy_report_['max_noisy_label_auc']:.3f}")
ax.figure.tight_layout()
plt.show()
