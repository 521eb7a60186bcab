"""
Noisy-label AUC against the burn-in q (seed paper, Fig. 3)
==========================================================

``breast_cancer`` with 30% flipped labels, epsilon = 3, correlated noise,
a fixed learning rate of 0.01, the seed paper's mechanism (the full gradient
clipped to C = 1: ``subspace=None, clip_norm=1.0``): the AUC of finding the
flipped labels as the burn-in ``q`` (the fraction of early, noisiest
permutations not counted) grows, for several budgets ``k``. The library's
default walk in a public direction reaches far higher AUCs: the limit
suite's tables on the :doc:`benchmarks page </benchmarks>`.
"""

# %%
import matplotlib.pyplot as plt

from skdpval import DPDataValuator
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import noisy_label_auc
from skdpval.plotting import plot_auc_vs_budget

data = load_noisy_classification("breast_cancer", flip_fraction=0.3, random_state=0)
burn_ins = [0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95]
aucs = {}
for k in (200, 500, 1000):
    aucs[f"k={k}"] = []
    for q in burn_ins:
        valuator = DPDataValuator(noise="correlated", q=q, epsilon=3.0,
                                  subspace=None, clip_norm=1.0,
                                  n_permutations=k, learning_rate=0.01,
                                  n_jobs=2, random_state=0)
        valuator.fit(data.X_train, data.y_train, X_val=data.X_val, y_val=data.y_val)
        aucs[f"k={k}"].append(noisy_label_auc(valuator.values_, data.is_noisy))
    print(f"k={k}", [round(a, 3) for a in aucs[f"k={k}"]])

# %%
ax = plot_auc_vs_budget(burn_ins, aucs, xlabel="burn-in q")
ax.figure.tight_layout()
plt.show()
