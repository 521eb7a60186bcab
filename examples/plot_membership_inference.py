"""
Membership inference against released values (seed paper, Table 5)
===================================================================

The likelihood-ratio attack of Wang et al. (2023) on data values, in the
seed paper's App. D.1 setting on ``breast_cancer``: 25 members (the private
data set of a valuation service), 25 non-members, 200 shadow points drawn
into 8 shadow valuations (the function's default is 32), k = 200,
logistic regression. The attack's ROC AUC without privacy and with
correlated noise at epsilon = 1, over 3 seeds (0.5 is a blind attacker).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from skdpval import DPDataValuator
from skdpval.metrics import membership_inference_auc

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)
settings = {"no DP": dict(noise="none", q=0.0),
            "correlated, eps=1": dict(noise="correlated", q=0.9, epsilon=1.0)}
results = {}
for label, params in settings.items():
    aucs = []
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(y))
        members, nonmembers = order[:25], order[25:50]
        shadow, val = order[50:250], order[250:]
        valuator = DPDataValuator(n_permutations=200, **params)
        aucs.append(membership_inference_auc(
            valuator, X[members], y[members], X[nonmembers], y[nonmembers],
            X[shadow], y[shadow], X[val], y[val], n_shadow=8, random_state=seed))
    results[label] = aucs
    print(f"{label:<18} attack AUC {np.mean(aucs):.3f} "
          f"(std error {np.std(aucs) / np.sqrt(len(aucs)):.3f})")

# %%
fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(list(results), [np.mean(a) for a in results.values()],
       yerr=[np.std(a) / np.sqrt(len(a)) for a in results.values()])
ax.axhline(0.5, color="grey", linestyle=":")
ax.set_ylabel("membership attack AUC")
fig.tight_layout()
plt.show()
