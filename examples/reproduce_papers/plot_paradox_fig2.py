"""
More budget, worse private values: the paradox (seed paper, Fig. 2)
===================================================================

Diabetes (binarised at its median), logistic regression, epsilon = 1, a
fixed learning rate, the seed paper's mechanism (the full gradient clipped
to C = 1: ``subspace=None, clip_norm=1.0``). As the number of permutations ``k`` grows at a fixed
privacy budget, every release must carry more noise (its std grows like
``sqrt(k)``). Left: the mean-adjusted variance ``s^2 / |mu|`` of Sec. 6.1;
middle: the mean value; right: test accuracy after removing the
highest-valued training samples (good values make it drop fast).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from skdpval import DPDataValuator
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import mean_adjusted_variance, removal_curve
from skdpval.plotting import plot_auc_vs_budget, plot_removal_curves

data = load_noisy_classification("diabetes", flip_fraction=0.0, random_state=0)
fit_on = dict(X_val=data.X_val, y_val=data.y_val)
budgets = [25, 50, 100, 200, 400]
methods = {"i.i.d.": dict(noise="iid", q=0.0),
           "correlated, q=0.5": dict(noise="correlated", q=0.5)}


def valuate(k, **params):
    return DPDataValuator(epsilon=1.0, n_permutations=k, learning_rate=0.05,
                          subspace=None, clip_norm=1.0, random_state=0, **params).fit(data.X_train, data.y_train,
                                                        **fit_on)


# %%
variance, mean_value = {}, {}
for label, params in methods.items():
    fitted = [valuate(k, **params) for k in budgets]
    variance[label] = [mean_adjusted_variance(valuator=v) for v in fitted]
    mean_value[label] = [np.mean(v.values_) for v in fitted]
    print(label, "mean-adjusted variance", np.round(variance[label], 4))

# %%
fractions = np.linspace(0, 0.5, 6)
args = (data.X_train, data.y_train, data.X_test, data.y_test)
curves = {}
for label, k, params in [("i.i.d., k=50", 50, methods["i.i.d."]),
                         ("i.i.d., k=400", 400, methods["i.i.d."]),
                         ("correlated, k=400", 400, methods["correlated, q=0.5"]),
                         ("no DP, k=400", 400, dict(noise="none", q=0.0))]:
    curves[label] = removal_curve(*args, valuate(k, **params).values_,
                                  LogisticRegression(), fractions)
curves["random"] = [removal_curve(*args, np.zeros(len(data.y_train)),
                                  LogisticRegression(), fractions, order="random",
                                  random_state=seed) for seed in range(5)]

fig, axes = plt.subplots(1, 3, figsize=(15, 4))
plot_auc_vs_budget(budgets, variance, ax=axes[0], ylabel="mean-adjusted variance",
                   chance_level=None)
axes[0].set_yscale("log")
plot_auc_vs_budget(budgets, mean_value, ax=axes[1], ylabel="mean value",
                   chance_level=None)
plot_removal_curves(fractions, curves, ax=axes[2])
fig.tight_layout()
plt.show()
