"""Semivalue weights against subset enumeration on tiny games."""

import itertools
from math import comb, factorial

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import beta as beta_function

from skdpval.kernels import _losses
from skdpval.valuation._semivalues import semivalue_weights
from skdpval.kernels._linear import make_problem
from skdpval.walks._runner import run_walks
from helpers import FixedDraws

SEMIVALUES = ["shapley", "banzhaf", "loo", ("beta", 4, 1), ("beta", 16, 1),
              ("beta", 1, 4), ("beta", 1, 1)]


def coalition_weight(semivalue, n, s):
    """w(s): the weight of one coalition of size s, from the definitions."""
    if semivalue == "shapley":
        return 1 / (n * comb(n - 1, s))
    if semivalue == "banzhaf":
        return 2.0 ** -(n - 1)
    if semivalue == "loo":
        return 1.0 if s == n - 1 else 0.0
    _, a, b = semivalue
    return beta_function(s + b, n - 1 - s + a) / beta_function(a, b)


def exact_semivalue(v, n, semivalue):
    """phi_i = sum_{S not containing i} w(|S|) [v(S + i) - v(S)]."""
    phi = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            for S in itertools.combinations(others, size):
                phi[i] += coalition_weight(semivalue, n, size) * (
                    v(frozenset(S) | {i}) - v(frozenset(S)))
    return phi


@pytest.mark.parametrize("semivalue", SEMIVALUES, ids=str)
@pytest.mark.parametrize("n", [2, 5, 40, 300])
def test_weights_match_definition(semivalue, n):
    weights = semivalue_weights(semivalue, n)
    expected = [n * comb(n - 1, s) * coalition_weight(semivalue, n, s)
                for s in range(n)] if n <= 40 else None
    assert np.all(np.isfinite(weights)) and np.all(weights >= 0)
    # The coalition weights of a semivalue sum to one: mean of p(s) is 1.
    assert_allclose(weights.mean(), 1.0, rtol=1e-10)
    if expected is not None:
        assert_allclose(weights, expected, rtol=1e-9, atol=1e-300)


def test_beta_convention_small_coalitions():
    """Beta(16, 1) favours small coalitions, p(0) = 16 n / (n + 15)."""
    n = 50
    weights = semivalue_weights(("beta", 16, 1), n)
    assert_allclose(weights[0], 16 * n / (n + 15), rtol=1e-12)
    assert np.all(np.diff(weights) < 0)
    assert_allclose(semivalue_weights(("beta", 1, 1), n), 1.0, rtol=1e-12)


def hinge_game(n, seed):
    """A G-Shapley walk that is a set function, and that set function.

    Hinge loss without penalty, with a learning rate small enough that every
    margin stays below 1: each party's gradient is the constant ``-y_j x_j``
    whatever the order, so the parameters after a coalition S are
    ``lr * sum_{j in S} y_j x_j / max(1, |x_j| / C)`` and the accuracy of
    their sign on the validation set is a set function v(S).
    """
    rng = np.random.default_rng(seed)
    d = 3
    X = rng.normal(size=(n, d))
    y = rng.choice([-1.0, 1.0], size=n)
    X_val = rng.normal(size=(25, d))
    labels = (X_val @ rng.normal(size=d) + 0.3 * rng.normal(size=25) > 0).astype(int)
    T_val = np.where(labels == 1, 1.0, -1.0)[:, None]
    clip_norm, lr = 1.5, 1e-4
    steps = lr * (y[:, None] * X) / np.maximum(1, np.linalg.norm(X, axis=1) / clip_norm)[:, None]

    def v(S):
        theta = sum((steps[j] for j in S), np.zeros(d))
        return np.mean((X_val @ theta > 0).astype(int) == labels)

    kernel = dict(X=X, T=y[:, None], X_val=X_val, T_val=T_val, labels_val=labels,
                  loss=_losses.HINGE, utility=_losses.ACCURACY, loss_param=0.0,
                  l2=0.0, n_penalized=d, clip_norm=clip_norm, learning_rate=lr,
                  total_sum_squares=1.0)
    return v, kernel


@pytest.mark.parametrize("semivalue", SEMIVALUES, ids=str)
def test_all_permutations_give_the_exact_semivalue(semivalue):
    """Averaging over all n! permutations is the semivalue's expectation."""
    n = 5
    v, kernel = hinge_game(n, seed=0)
    permutations = np.array(list(itertools.permutations(range(n))))
    k = len(permutations)
    assert k == factorial(n)
    problem = make_problem(offsets=np.arange(n + 1),
                           weights=semivalue_weights(semivalue, n), **kernel)
    result = run_walks(problem, FixedDraws(permutations), x_tt=np.ones(k),
                       use_rolling=False, counted=np.ones(k, bool),
                       batch_permutations=7)
    exact = exact_semivalue(v, n, semivalue)
    assert np.ptp(exact) > 0.01  # a game where the semivalues differ
    assert_allclose(result.marginal_mean, exact, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("semivalue", ["shapley", "banzhaf", ("beta", 4, 1)], ids=str)
def test_random_permutations_converge_to_exact_semivalue(semivalue):
    """The estimator, through its public API, converges on the same game."""
    from sklearn.linear_model import SGDClassifier

    from skdpval import DPDataValuator

    n = 6
    v, kernel = hinge_game(n, seed=1)
    exact = exact_semivalue(v, n, semivalue)
    valuator = DPDataValuator(
        SGDClassifier(loss="hinge", alpha=0.0, penalty=None, fit_intercept=False),
        semivalue=semivalue, noise="none", q=0.0, utility="accuracy",
        subspace=None, standardize=False,
        clip_norm=kernel["clip_norm"], learning_rate=kernel["learning_rate"],
        n_permutations=6000, random_state=0)
    y = np.where(kernel["T"][:, 0] > 0, 1, 0)
    valuator.fit(kernel["X"], y, X_val=kernel["X_val"], y_val=kernel["labels_val"])
    scale = np.abs(exact).max()
    assert_allclose(valuator.values_, exact, atol=0.06 * scale)
    assert np.corrcoef(valuator.values_, exact)[0, 1] > 0.95


def test_loo_warns_with_the_share_of_parties_never_last():
    """Leave-one-out values only the parties some counted permutation puts
    last; the warning's share is what the fit then leaves at 0."""
    import re
    import warnings

    from sklearn.datasets import make_classification

    from skdpval import DPDataValuator
    from skdpval.exceptions import SkdpvalWarning

    X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    fit = lambda k, semivalue="loo": DPDataValuator(
        n_permutations=k, semivalue=semivalue, noise="none", q=0,
        random_state=0).fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:])
    with pytest.warns(SkdpvalWarning, match="semivalue='loo'") as record:
        few = fit(40)
    (message,) = [str(w.message) for w in record if "loo" in str(w.message)]
    predicted = int(re.search(r"about (\d+)% of the parties", message)[1]) / 100
    assert predicted == pytest.approx((39 / 40) ** 40, abs=0.005)
    assert np.mean(few.values_ == 0) == pytest.approx(predicted, abs=0.15)
    needed = int(re.search(r"at least (\d+) permutations", message)[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkdpvalWarning)
        enough = fit(needed)
        fit(40, semivalue="shapley")
    assert np.mean(enough.values_ == 0) <= 0.15
