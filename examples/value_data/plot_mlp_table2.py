"""
A neural network's data values (seed paper, Table 2 bottom, on digits)
======================================================================

The seed paper's Table 2 (bottom) values MNIST with a CNN: finding noisy
labels with i.i.d. noise on the gradients against correlated noise, under
its own accounting. Here the same shape on digits 3 vs 8 with a
scikit-learn network, ``MLPClassifier((16,))``, 30% of the training labels
flipped, epsilon = 3 with exact accounting, a small budget (k = 100) so
that the page builds quickly:

- no DP (``noise="none"``);
- the paper's mechanism on the network: every parameter's gradient clipped
  to C = 1 and noised (``subspace=None``), with i.i.d. releases and with
  correlated ones (Y*, q = 0.9);
- the library's defaults: the walk along one public direction, from the
  network's initialisation toward the network fitted on the validation
  set, which spends the budget on one number a release.

``benchmarks/quality.py --suite mlp`` runs the full protocol (k = 1000,
several seeds, the fraction of the privacy limit reached).
"""

# %%
import matplotlib.pyplot as plt
from sklearn.neural_network import MLPClassifier

from skdpval import DPDataValuator
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import detection_auc_limit, noisy_label_auc

data = load_noisy_classification("digits_3_vs_8", n_train=150, flip_fraction=0.3,
                                 random_state=0)
methods = {
    "no DP": dict(noise="none"),
    "paper, i.i.d.": dict(subspace=None, clip_norm=1.0, noise="iid", q=0.0),
    "paper, correlated": dict(subspace=None, clip_norm=1.0, q=0.9),
    "defaults": dict(),
}
aucs = {}
for name, params in methods.items():
    valuator = DPDataValuator(MLPClassifier((16,), random_state=0), epsilon=3.0,
                              n_permutations=100, random_state=0, **params)
    valuator.fit(data.X_train, data.y_train, X_val=data.X_val, y_val=data.y_val)
    aucs[name] = noisy_label_auc(valuator.values_, data.is_noisy)
    print(f"{name:<18} AUC {aucs[name]:.3f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.barh(list(aucs), list(aucs.values()))
ax.axvline(0.5, color="grey", lw=0.8)
ax.axvline(detection_auc_limit(3.0, 5e-5), color="black", ls="--",
           label="the limit at eps 3")
ax.set_xlim(0.3, 1.0)
ax.set_xlabel("AUC of low values for the flipped labels")
ax.legend(loc="lower right")
plt.show()
