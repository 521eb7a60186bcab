"""The numba kernels against the plain-numpy reference of Algorithm 1."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from helpers import FixedDraws
from reference import LOSSES, TWEEDIE_POWERS, algorithm1, loss_and_dloss
from skdpval.kernels import _linear, _losses, _math
from skdpval.privacy._release import clip_l2
from skdpval.valuation._semivalues import semivalue_weights
from skdpval.kernels._linear import make_problem
from skdpval.walks._runner import run_walks

LOSS_CODES = {
    "logistic": _losses.LOGISTIC, "multinomial": _losses.MULTINOMIAL,
    "squared": _losses.SQUARED, "hinge": _losses.HINGE,
    "squared_hinge": _losses.SQUARED_HINGE,
    "modified_huber": _losses.MODIFIED_HUBER, "huber": _losses.HUBER,
    "perceptron": _losses.PERCEPTRON,
    "epsilon_insensitive": _losses.EPSILON_INSENSITIVE,
    "squared_epsilon_insensitive": _losses.SQUARED_EPSILON_INSENSITIVE,
    "pinball": _losses.PINBALL, "poisson": _losses.TWEEDIE,
    "gamma": _losses.TWEEDIE, "tweedie": _losses.TWEEDIE,
}
# The losses the walk had before L1 terms and row weights: the full grid of
# noise modes and semivalues runs on these; every loss runs the smaller one.
FIRST_LOSSES = LOSSES[:7]
REAL_TARGET_LOSSES = ("squared", "huber", "epsilon_insensitive",
                      "squared_epsilon_insensitive", "pinball")
POSITIVE_TARGET_LOSSES = ("poisson", "gamma", "tweedie")
UTILITY_CODES = {"neg_loss": _losses.NEG_LOSS, "accuracy": _losses.ACCURACY,
                 "neg_mse": _losses.NEG_MSE, "r2": _losses.R2}
HUBER_EPSILON = 0.3
TWEEDIE_POWER = 1.5


def loss_param_of(loss):
    """The kernels' loss parameter for a reference loss name."""
    if loss in TWEEDIE_POWERS:
        return TWEEDIE_POWERS[loss]
    return TWEEDIE_POWER if loss == "tweedie" else HUBER_EPSILON


def make_data(loss, n=6, d=3, n_val=5, n_outputs=None, seed=0):
    """Random data with an intercept column and targets suited to ``loss``."""
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(n, d)), np.ones((n, 1))])
    X_val = np.hstack([rng.normal(size=(n_val, d)), np.ones((n_val, 1))])
    if n_outputs is None:
        n_outputs = 3 if loss == "multinomial" else 1
    if loss in REAL_TARGET_LOSSES:
        T = rng.normal(size=(n, 1))
        T_val = rng.normal(size=(n_val, 1))
        labels = np.zeros(n_val, dtype=np.int64)
    elif loss in POSITIVE_TARGET_LOSSES:
        T = np.exp(rng.normal(size=(n, 1)))
        T_val = np.exp(rng.normal(size=(n_val, 1)))
        labels = np.zeros(n_val, dtype=np.int64)
    else:
        y = rng.integers(max(n_outputs, 2), size=n)
        labels = rng.integers(max(n_outputs, 2), size=n_val)
        if n_outputs == 1:
            T = np.where(y == 1, 1.0, -1.0)[:, None]
            T_val = np.where(labels == 1, 1.0, -1.0)[:, None]
        else:
            T = np.eye(n_outputs)[y]
            T_val = np.eye(n_outputs)[labels]
            if loss != "multinomial":  # one-vs-rest targets in {-1, +1}
                T, T_val = 2 * T - 1, 2 * T_val - 1
    return X, T, X_val, T_val, labels


def run_both(loss, utility_name, noise_mode, q, semivalue, *, n_outputs=None,
             k=5, learning_rate=0.4, clip_norm=1.0, l2=0.1, seed=0, n_jobs=None,
             l1=0.0, weighted=False):
    X, T, X_val, T_val, labels = make_data(loss, n_outputs=n_outputs, seed=seed)
    n, n_columns = X.shape
    rng = np.random.default_rng(seed + 1)
    permutations = np.array([rng.permutation(n) for _ in range(k)])
    noise = 0.7 * rng.normal(size=(k, n, T.shape[1], n_columns))
    t = np.arange(1, k + 1)
    x_tt = {"none": np.ones(k), "iid": np.ones(k), "correlated": 1.0 / t,
            "custom": 0.75 - 0.7 * t / k}[noise_mode]
    if noise_mode == "none":
        noise = np.zeros_like(noise)
    weights = semivalue_weights(semivalue, n)
    row_weights = rng.uniform(0.2, 3.0, size=n) if weighted else None
    common = dict(learning_rate=learning_rate, l2=l2, n_penalized=n_columns - 1,
                  clip_norm=clip_norm, l1=l1, row_weights=row_weights)
    psi, end_ref = algorithm1(
        X, T, X_val, T_val, labels, loss=loss, utility_name=utility_name,
        permutations=permutations, noise=noise, x_tt=x_tt, q=q, weights=weights,
        loss_param=loss_param_of(loss), **common)

    counted = t > q * k
    tss = float(np.sum((T_val[:, 0] - T_val[:, 0].mean()) ** 2))
    problem = make_problem(
        X, T, np.arange(n + 1), X_val, T_val, labels, loss=LOSS_CODES[loss],
        utility=UTILITY_CODES[utility_name], loss_param=loss_param_of(loss),
        total_sum_squares=tss, weights=weights, **common)
    result = run_walks(problem, FixedDraws(permutations,
                                           None if noise_mode == "none" else noise),
                       x_tt=x_tt, use_rolling=noise_mode in ("correlated", "custom"),
                       counted=counted, batch_permutations=1, n_jobs=n_jobs)
    return psi, result.marginal_mean, end_ref, result.end_utility


SEMIVALUES = ["shapley", "banzhaf", "loo", ("beta", 4, 1)]


@pytest.mark.parametrize("semivalue", SEMIVALUES, ids=str)
@pytest.mark.parametrize("q", [0.0, 0.5])
@pytest.mark.parametrize("noise_mode", ["none", "iid", "correlated", "custom"])
@pytest.mark.parametrize("loss", FIRST_LOSSES)
def test_walk_matches_reference(loss, noise_mode, q, semivalue):
    # Two jobs: the permutations of a one-permutation wave are still split
    # over workers, and the rolling means carry over between waves.
    psi, values, end_ref, end_kernel = run_both(loss, "neg_loss", noise_mode, q,
                                                semivalue, n_jobs=2)
    assert np.any(psi != 0)
    assert_allclose(values, psi, rtol=1e-10, atol=1e-10)
    assert_allclose(end_kernel, end_ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("l1", [0.0, 0.05])
@pytest.mark.parametrize("noise_mode", ["none", "correlated"])
@pytest.mark.parametrize("loss", LOSSES)
def test_walk_matches_reference_with_l1_and_row_weights(loss, noise_mode, l1,
                                                         weighted):
    psi, values, end_ref, end_kernel = run_both(
        loss, "neg_loss", noise_mode, 0.0, "shapley", l1=l1, weighted=weighted,
        learning_rate=0.2)
    assert np.any(psi != 0)
    assert_allclose(values, psi, rtol=1e-10, atol=1e-10)
    assert_allclose(end_kernel, end_ref, rtol=1e-10, atol=1e-10)


def test_a_weighted_party_gradient_is_its_weight_times_the_unweighted():
    """Before clipping, weight w multiplies the loss gradient; the penalty is not
    weighted; after clipping a weight > 1 saturates at the clip norm."""
    X, T, _, _, _ = make_data("logistic", n=5)
    theta = np.random.default_rng(7).normal(size=(1, X.shape[1]))
    offsets = np.arange(6)
    settings = dict(loss=_losses.LOGISTIC, loss_param=0.0, n_penalized=3)
    bare = _linear.party_gradients(theta, X, T, offsets, l2=0.0, **settings)
    weights = np.array([0.0, 0.5, 1.0, 2.0, 7.0])
    weighted = _linear.party_gradients(theta, X, T, offsets, l2=0.0,
                                        row_weights=weights, **settings)
    assert_allclose(weighted, weights[:, None, None] * bare, rtol=1e-14)
    with_l2 = _linear.party_gradients(theta, X, T, offsets, l2=0.3,
                                       row_weights=weights, **settings)
    penalty = np.zeros_like(theta)
    penalty[:, :3] = 0.3 * theta[:, :3]
    assert_allclose(with_l2, weighted + penalty, rtol=1e-13)
    clipped = weighted.copy()
    for g in clipped:
        clip_l2(g, 0.1)
    norms = np.linalg.norm(clipped.reshape(5, -1), axis=1)
    assert norms[0] == 0 and np.all(norms[3:] <= 0.1 + 1e-15)


def test_l1_term_is_a_sign_subgradient_on_penalised_columns():
    X, T, _, _, _ = make_data("squared", n=3)
    theta = np.array([[0.5, -2.0, 0.0, 1.5]])  # last column: the intercept
    settings = dict(loss=_losses.SQUARED, loss_param=0.0, n_penalized=3, l2=0.0)
    offsets = np.arange(4)
    bare = _linear.party_gradients(theta, X, T, offsets, **settings)
    with_l1 = _linear.party_gradients(theta, X, T, offsets, l1=0.25, **settings)
    assert_allclose(with_l1 - bare, np.broadcast_to([[[0.25, -0.25, 0.0, 0.0]]],
                                                    bare.shape), atol=1e-15)


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared", "modified_huber"])
def test_walk_matches_reference_one_vs_rest(loss):
    psi, values, _, _ = run_both(loss, "neg_loss", "correlated", 0.0, "shapley",
                                 n_outputs=3)
    assert_allclose(values, psi, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("loss, utility_name, n_outputs", [
    ("logistic", "accuracy", 1), ("multinomial", "accuracy", 3),
    ("hinge", "accuracy", 3), ("squared", "neg_mse", 1), ("huber", "r2", 1),
    ("poisson", "neg_mse", 1), ("tweedie", "r2", 1), ("pinball", "neg_mse", 1),
    ("perceptron", "accuracy", 3),
])
def test_walk_matches_reference_utilities(loss, utility_name, n_outputs):
    psi, values, end_ref, end_kernel = run_both(
        loss, utility_name, "iid", 0.0, "shapley", n_outputs=n_outputs, k=8)
    assert_allclose(values, psi, rtol=1e-10, atol=1e-10)
    assert_allclose(end_kernel, end_ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("loss", LOSSES)
def test_reference_gradient_matches_finite_differences(loss):
    """The reference's derivatives are themselves right (central differences)."""
    rng = np.random.default_rng(3)
    n_outputs = 3
    for _ in range(5):
        m = 1.5 * rng.normal(size=n_outputs)
        if loss == "multinomial":
            t = np.eye(n_outputs)[rng.integers(n_outputs)]
        elif loss in REAL_TARGET_LOSSES:
            t = rng.normal(size=n_outputs)
        elif loss in POSITIVE_TARGET_LOSSES:
            t = np.exp(rng.normal(size=n_outputs))
        else:
            t = rng.choice([-1.0, 1.0], size=n_outputs)
        _, grad = loss_and_dloss(loss, m, t, loss_param_of(loss))
        h = 1e-6
        numeric = [(loss_and_dloss(loss, m + h * e, t, loss_param_of(loss))[0]
                    - loss_and_dloss(loss, m - h * e, t, loss_param_of(loss))[0])
                   / (2 * h)
                   for e in np.eye(n_outputs)]
        assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss", LOSSES)
def test_sample_loss_matches_reference_and_is_stable(loss):
    rng = np.random.default_rng(4)
    n_outputs = 3 if loss == "multinomial" else 1
    for scale in (1.0, 1e3, 1e300):
        m = scale * rng.normal(size=n_outputs)
        t = (np.eye(n_outputs)[0] if loss == "multinomial"
             else np.array([1.0] * n_outputs))
        param = loss_param_of(loss)
        value = _losses.sample_loss(LOSS_CODES[loss], m, t, param)
        out = np.empty(n_outputs)
        _losses.sample_dloss(LOSS_CODES[loss], m, t, param, out)
        if (loss in ("squared", "squared_hinge", "squared_epsilon_insensitive")
                and scale == 1e300) or (loss in POSITIVE_TARGET_LOSSES and scale > 1):
            continue  # the loss itself is 1e600 or exp(1e3): overflow is right
        with np.errstate(over="ignore"):
            expected, expected_grad = loss_and_dloss(loss, m, t, param)
        assert np.isfinite(value) and np.all(np.isfinite(out))
        assert_allclose(value, expected, rtol=1e-12)
        assert_allclose(out, expected_grad, rtol=1e-12, atol=1e-300)


def test_clip_l2_matches_numpy():
    rng = np.random.default_rng(5)
    for norm_target in (0.1, 1.0, 7.0):
        g = rng.normal(size=(2, 4))
        g *= norm_target / np.linalg.norm(g)
        expected = g / max(1.0, np.linalg.norm(g) / 1.0)
        got = g.copy()
        clip_l2(got, 1.0)
        assert_allclose(got, expected, rtol=1e-14)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_clip_l2_zeroes_a_gradient_that_is_not_finite(bad):
    """An overflow in a private row releases pure noise, not NaN or infinity."""
    g = np.array([[0.5, bad, 1.0]])
    clip_l2(g, 1.0)
    assert_array_equal(g, np.zeros_like(g))


def test_clip_l2_clips_a_finite_gradient_whose_squares_overflow():
    g = np.array([[3e200, -4e200, 0.0]])
    assert clip_l2(g, 2.0) == pytest.approx(5e200)
    assert_allclose(g, [[1.2, -1.6, 0.0]], rtol=1e-14)


def test_fast_softplus_matches_numpy_to_1e14():
    rng = np.random.default_rng(6)
    z = np.concatenate([np.linspace(-700, 700, 100001), rng.normal(size=10000),
                        np.geomspace(1e-300, 700, 5000), -np.geomspace(1e-300, 700, 5000),
                        [0.0, np.log(2), -np.log(2), np.log(np.sqrt(2) - 1)]])
    out = np.empty_like(z)
    _math.softplus_array(z, out)
    assert_allclose(out, np.logaddexp(0.0, z), rtol=1e-14, atol=0)


def test_fast_softplus_extremes():
    z = np.array([-745.0, -800.0, -1e300, 1e300, 745.0, np.finfo(float).max])
    out = np.empty_like(z)
    _math.softplus_array(z, out)
    with np.errstate(under="ignore"):
        expected = np.logaddexp(0.0, z)
    assert np.all(np.isfinite(out))
    assert_allclose(out, expected, rtol=1e-14, atol=1e-320)


@pytest.mark.parametrize("n_val", [1, 5, 142, 513, 3000])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0, 800.0])
def test_logistic_loss_sum_matches_numpy(n_val, scale):
    """One log per 512 rows (products of 1 + exp(-|z|)) against logaddexp row by row."""
    rng = np.random.default_rng(n_val)
    n_rows = _math.padded_length(n_val)
    margins = rng.normal(size=n_rows) * scale
    targets = rng.choice([-1.0, 1.0], size=n_rows)
    margins[n_val:] = 1e300  # padding is ignored, whatever it holds
    expected = np.sum(np.logaddexp(0.0, -targets[:n_val] * margins[:n_val]))
    got = _losses.logistic_loss_sum(margins, targets, n_val,
                                     _math.validation_scratch(n_val))
    assert_allclose(got, expected, rtol=1e-13, atol=0)


def test_logistic_loss_sum_keeps_tiny_losses():
    """Confident rows (exp(-|z|) below 1e-16) still count, relatively exact."""
    margins = np.array([40.0, 45.0, 50.0, 60.0, 700.0, 36.0, 38.0, 41.0])
    expected = np.sum(np.logaddexp(0.0, -margins))
    got = _losses.logistic_loss_sum(margins, np.ones(8), 8,
                                     _math.validation_scratch(8))
    assert 0 < expected < 1e-15
    assert_allclose(got, expected, rtol=1e-13)
