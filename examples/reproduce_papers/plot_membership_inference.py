"""
Membership inference against released values (seed paper, Table 5)
==================================================================

A likelihood-ratio attack (LiRA, with per-target shadow valuations, as in
the seed paper's App. D.1) on a valuation service: it holds a private data
set (25 members) and answers a query point with its value, computed with
the point added to the data set. The attacker knows everything but
membership: 25 non-members, the validation set, the public randomness.
Isotropic Gaussian features (d = 50), k = 50 permutations, 16 shadow rounds,
3 seeds. Membership of a fixed number of members is a replace-one change,
so at a budget of mu-GDP no attack's expected AUC beats ``Phi(sqrt(2) mu)``
(the dotted line at epsilon = 1).

With the seed paper's mechanism (the full gradient clipped to C = 1) the
attack finds members without noise, and noise at epsilon = 1 pulls it under
the limit. The library's default walk in a public direction releases one
number per step, in which a second copy of a point barely shows: there the
attack stays near chance even without noise (which is no privacy
guarantee: the end-to-end audits in ``tests/test_audit.py`` are the guard).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from skdpval import DPDataValuator
from skdpval.metrics import detection_auc_limit, membership_inference_auc

settings = {
    "paper, no DP": dict(subspace=None, clip_norm=1.0, noise="none"),
    "paper, eps=1": dict(subspace=None, clip_norm=1.0, epsilon=1.0),
    "defaults, no DP": dict(noise="none"),
    "defaults, eps=1": dict(epsilon=1.0),
}
results = {}
for label, params in settings.items():
    aucs = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(350, 50))
        y = (X @ rng.normal(size=50) + 3.5 * rng.normal(size=350) > 0).astype(int)
        members, nonmembers, val = np.arange(25), np.arange(25, 50), np.arange(50, 350)
        valuator = DPDataValuator(n_permutations=50, learning_rate=0.1,
                                  random_state=seed, **params)
        aucs.append(membership_inference_auc(
            valuator, X[members], y[members], X[nonmembers], y[nonmembers],
            X[:0], y[:0], X[val], y[val], n_shadow=16, random_state=seed))
    results[label] = aucs
    print(f"{label:<16} attack AUC {np.mean(aucs):.3f} "
          f"(std error {np.std(aucs) / np.sqrt(len(aucs)):.3f})")

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(list(results), [np.mean(a) for a in results.values()],
       yerr=[np.std(a) / np.sqrt(len(a)) for a in results.values()])
ax.axhline(0.5, color="grey", linestyle=":")
ax.axhline(detection_auc_limit(1.0, 5e-5), color="tab:red", linestyle=":",
           label="limit at eps = 1")
ax.set_ylabel("membership attack AUC")
ax.legend()
fig.tight_layout()
plt.show()
