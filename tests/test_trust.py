"""Trust: membership inference, numerical safety (the privacy audits: test_audit.py)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import StandardScaler

from skdpval import DPDataValuator
from skdpval.metrics import membership_inference_auc


def attack(noise, seed, n_targets=60):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    order = np.random.default_rng(seed).permutation(len(y))
    members, nonmembers = order[:n_targets], order[n_targets:2 * n_targets]
    shadow, val = order[2 * n_targets:4 * n_targets], order[4 * n_targets:]
    valuator = DPDataValuator(noise=noise, epsilon=1.0, n_permutations=100,
                              q=0.0 if noise == "none" else 0.9)
    return membership_inference_auc(
        valuator, X[members], y[members], X[nonmembers], y[nonmembers],
        X[shadow], y[shadow], X[val], y[val], n_shadow=16, random_state=seed)


def test_membership_attack_is_blind_at_epsilon_1():
    aucs = [attack("correlated", seed) for seed in range(3)]
    assert np.mean(aucs) <= 0.6, aucs


def test_divergence_is_an_error_or_a_warning_naming_the_remedy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * 1e3
    y = X @ [1.0, 2.0, 3.0]
    valuator = DPDataValuator(LinearRegression(), noise="none", q=0.0,
                              learning_rate=1e150, clip_norm=1e150,
                              n_permutations=3, random_state=0)
    with pytest.raises(FloatingPointError, match="learning_rate"):
        valuator.fit(X, y)
    valuator.set_params(learning_rate=1e3, clip_norm=1.0)
    with pytest.warns(ConvergenceWarning, match="smaller learning_rate"):
        valuator.fit(X, y)
    assert np.all(np.isfinite(valuator.values_[~np.isnan(valuator.values_)]))


def test_a_sane_walk_does_not_warn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPDataValuator(n_permutations=5, random_state=0).fit(X, y)
