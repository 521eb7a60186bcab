"""
Semivalues under privacy (seed paper, Table 2)
==============================================

``breast_cancer`` with 30% flipped labels, epsilon = 3, k = 300: the AUC of
finding the flipped labels for the Shapley, Banzhaf, Beta(4, 1) and
Beta(16, 1) semivalues, without privacy, with i.i.d. noise, X*
(correlated, q = 0) and Y* (q = 0.5, 0.9), once with the paper's recipe (one
fixed learning rate, 0.03, for every method) and once with the library's
``learning_rate="auto"``, which scales the step to the noise. All with the
seed paper's mechanism (the full gradient clipped to C = 1:
``subspace=None, clip_norm=1.0``); the :doc:`benchmarks page </benchmarks>`
compares it with the library's default walk in a public direction.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from skdpval import DPDataValuator
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import noisy_label_auc

data = load_noisy_classification("breast_cancer", flip_fraction=0.3, random_state=0)
semivalues = {"Shapley": "shapley", "Banzhaf": "banzhaf",
              "Beta(4,1)": ("beta", 4, 1), "Beta(16,1)": ("beta", 16, 1)}
methods = {"no DP": dict(noise="none", q=0.0), "i.i.d.": dict(noise="iid", q=0.0),
           "X*": dict(noise="correlated", q=0.0),
           "Y*(.5)": dict(noise="correlated", q=0.5),
           "Y*(.9)": dict(noise="correlated", q=0.9)}
tables = {}
for policy in (0.03, "auto"):
    table = np.empty((len(semivalues), len(methods)))
    for i, semivalue in enumerate(semivalues.values()):
        for j, params in enumerate(methods.values()):
            valuator = DPDataValuator(semivalue=semivalue, epsilon=3.0,
                                      subspace=None, clip_norm=1.0,
                                      n_permutations=300, learning_rate=policy,
                                      n_jobs=2, random_state=0, **params)
            valuator.fit(data.X_train, data.y_train, X_val=data.X_val,
                         y_val=data.y_val)
            table[i, j] = noisy_label_auc(valuator.values_, data.is_noisy)
    tables[policy] = table
    print(f"learning_rate={policy!r}")
    print(" " * 11 + "".join(f"{m:>9}" for m in methods))
    for name, row in zip(semivalues, table):
        print(f"{name:<11}" + "".join(f"{a:9.3f}" for a in row))

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 3.5))
for ax, (policy, table) in zip(axes, tables.items()):
    image = ax.imshow(table, vmin=0.5, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(methods)), list(methods))
    ax.set_yticks(range(len(semivalues)), list(semivalues))
    ax.set_title(f"noisy-label AUC, learning_rate={policy!r}")
    for (i, j), value in np.ndenumerate(table):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="white")
fig.colorbar(image, ax=axes)
plt.show()
