"""LayeredShapleyValuator: exact on exhaustive layers, the Laplace scale, bad input."""

import itertools
from math import comb

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdpval import LayeredShapleyValuator
from skdpval._layered import laplace_scale


@parametrize_with_checks([LayeredShapleyValuator(alpha=0.9, beta=0.5, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_exhaustive_layers_give_the_exact_shapley_value():
    rng = np.random.default_rng(0)
    n, d, lam = 5, 2, 0.5
    X = rng.random((n, d))
    y = np.array([0, 1, 0, 1, 1])
    X_val, y_val = rng.random((20, d)), rng.integers(2, size=20)
    valuator = LayeredShapleyValuator(LogisticRegression(C=1 / (2 * lam * n)), c=1e4,
                                      skip_below_baseline=False, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)

    # v(S), from an independent solver: mean log loss + lam |w|^2, intercept
    # as a penalised feature; v = negative validation log loss.
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    signs = lambda labels: np.where(labels == 1, 1.0, -1.0)

    def v(S):
        w = np.zeros(d + 1)
        if S:
            rows = list(S)
            objective = lambda w: (np.mean(np.logaddexp(0, -signs(y[rows]) * (ones(X[rows]) @ w)))
                                   + lam * w @ w)
            w = minimize(objective, w, method="BFGS", options=dict(gtol=1e-11)).x
        return -np.mean(np.logaddexp(0, -signs(y_val) * (ones(X_val) @ w)))

    exact = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            for S in itertools.combinations(others, size):
                exact[i] += (v(S + (i,)) - v(S)) / (n * comb(n - 1, size))
    assert_allclose(valuator.values_, exact, rtol=1e-6, atol=1e-9)
    assert np.ptp(exact) > 1e-3


def test_laplace_scale_by_hand():
    # n = 10, epsilon = 1, L = 1, kappa = 2, lambda = 0.5, alpha = beta = 0.05,
    # c = 0.01: p = 1e-4 ln(10) / (2 * 0.0025 * 10) * ln(400) = 0.027593;
    # epsilon_0 = ln((e - 1) / p + 1) = 4.14757; sensitivity =
    # 1 * 4 / (10 * 0.5) * H_9 = 0.8 * 2.828968 = 2.263175; scale = 0.545662.
    scale, sensitivity, p, base = laplace_scale(10, 1.0, 1.0, 2.0, 0.5, 0.05, 0.05, 0.01)
    assert p == pytest.approx(0.027593, rel=1e-4)
    assert base == pytest.approx(4.14757, rel=1e-4)
    assert sensitivity == pytest.approx(2.263175, rel=1e-6)
    assert scale == pytest.approx(0.545662, rel=1e-4)
    # No amplification when the inclusion bound is not below 1.
    scale, sensitivity, p, base = laplace_scale(10, 1.0, 1.0, 2.0, 0.5, 0.05, 0.05, 1.0)
    assert p > 1 and base == 1.0 and scale == pytest.approx(sensitivity)


@pytest.fixture(scope="module")
def unit_data():
    rng = np.random.default_rng(1)
    X = rng.random((40, 3))
    y = (X[:, 0] + 0.2 * rng.normal(size=40) > 0.5).astype(int)
    return X, y


def test_private_values_reproducible_and_parallel_invariant(unit_data):
    X, y = unit_data
    make = lambda n_jobs: LayeredShapleyValuator(alpha=0.3, epsilon=1.0,
                                                 n_jobs=n_jobs, random_state=0).fit(X, y)
    one, two = make(1), make(2)
    assert_allclose(one.values_, two.values_, rtol=0, atol=0)
    assert one.noise_scale_ == pytest.approx(one.privacy_report_["noise_scale"])
    assert one.privacy_report_["epsilon_all_values_basic_composition"] == pytest.approx(32)
    assert np.isnan(one.values_).sum() == 8 and np.all(one.n_coalitions_[~np.isnan(one.values_)] > 0)


@pytest.mark.parametrize("make, fit_args, match", [
    (lambda: LayeredShapleyValuator(epsilon=1.0), dict(shift=2.0), "must lie in \\[0, 1\\]"),
    (lambda: LayeredShapleyValuator(Ridge()), {}, "LogisticRegression only"),
    (lambda: LayeredShapleyValuator(LogisticRegression(l1_ratio=1.0)), {}, "L2 penalty"),
    (lambda: LayeredShapleyValuator(alpha=0.0), {}, "'alpha'"),
    (lambda: LayeredShapleyValuator(), dict(classes=3), "binary"),
    (lambda: LayeredShapleyValuator(), dict(X_val_only=True), "together"),
])
def test_bad_input(unit_data, make, fit_args, match):
    X, y = unit_data
    X = X + fit_args.get("shift", 0.0)
    if fit_args.get("classes") == 3:
        y = np.arange(len(y)) % 3
    extra = {"X_val": X[:5]} if fit_args.get("X_val_only") else {}
    with pytest.raises((ValueError, TypeError), match=match):
        make().fit(X, y, **extra)


def test_removing_high_layered_values_hurts_more_than_random():
    """breast_cancer, n = 100 (the paper's App. E), features min-max scaled."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import MinMaxScaler

    from skdpval.metrics import removal_curve

    X, y = load_breast_cancer(return_X_y=True)
    X = MinMaxScaler().fit_transform(X)
    gaps = []
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(y))
        train, val, test = order[:100], order[100:300], order[300:]
        valuator = LayeredShapleyValuator(alpha=0.15, n_jobs=2, random_state=0)
        valuator.fit(X[train], y[train], X_val=X[val], y_val=y[val])
        args = (X[train], y[train], X[test], y[test], valuator.values_,
                LogisticRegression(), [0.2])
        high = removal_curve(*args, order="high")[0]
        random = np.mean([removal_curve(*args, order="random", random_state=s)[0]
                          for s in range(20)])
        gaps.append(random - high)
    assert np.mean(gaps) > 0.02, gaps
