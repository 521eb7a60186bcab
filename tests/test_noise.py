"""Noise policies: the released noise has the variance the paper derives."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skdpval.kernels import _losses
from skdpval.privacy._noise import counted_permutations, noise_schedule
from skdpval.kernels._linear import make_problem
from skdpval.walks._runner import run_walks
from helpers import FixedDraws


def released_noise_variance(noise_mode, k=12, n_runs=300, d=40, s=1.0, seed=0,
                            batch_permutations=1):
    """Noise variance per coordinate of the released update at each permutation.

    One party whose hinge gradient ``-y x`` (y = -1) is clipped from norm 2 to
    norm 1 and stays constant (the learning rate keeps its margin below 1).
    The validation rows are the unit vectors with target 0, so at the end of
    each one-party walk ``-neg_mse = lr^2 |released|^2 / d``, and
    ``|released|^2 / d = |clipped|^2 / d + noise variance``.
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=d)
    x *= 2.0 / np.linalg.norm(x)
    clipped = x / 2.0
    lr = 1e-4
    x_tt, use_rolling, _ = noise_schedule(noise_mode, k, batch_permutations)
    problem = make_problem(
        x[None, :], np.array([[-1.0]]), np.arange(2), np.eye(d), np.zeros((d, 1)),
        np.zeros(d), loss=_losses.HINGE, utility=_losses.NEG_MSE,
        loss_param=0.0, l2=0.0, n_penalized=d, clip_norm=1.0,
        learning_rate=lr, total_sum_squares=1.0, weights=np.ones(1))
    moments = np.zeros(k)
    for _ in range(n_runs):
        noise = s * rng.normal(size=(k, 1, 1, d))
        result = run_walks(problem, FixedDraws(np.zeros((k, 1), np.int64), noise),
                           x_tt=x_tt, use_rolling=use_rolling,
                           counted=np.ones(k, bool),
                           batch_permutations=batch_permutations)
        moments += -result.end_utility / lr**2
    return moments / n_runs - clipped @ clipped / d


def test_correlated_noise_variance_is_s2_over_t():
    k = 12
    variance = released_noise_variance("correlated", k=k)
    t = np.arange(1, k + 1)
    # 300 runs x 40 coordinates per t: relative sampling error about 1.3%.
    assert_allclose(variance * t, 1.0, rtol=0.08)


def test_iid_noise_variance_is_s2():
    variance = released_noise_variance("iid")
    assert_allclose(variance, 1.0, rtol=0.08)


def test_correlated_noise_in_waves_has_variance_s2_over_releases_before_plus_one():
    """With waves of 4, permutation t uses the t0 releases before its wave."""
    k = 12
    variance = released_noise_variance("correlated", k=k, batch_permutations=4)
    t0 = (np.arange(k) // 4) * 4
    assert_allclose(variance * (t0 + 1), 1.0, rtol=0.08)
    x_tt, _, _ = noise_schedule("correlated", k, 4)
    assert_allclose(x_tt, 1.0 / (t0 + 1))


def test_no_noise_releases_the_clipped_gradient():
    x_tt, use_rolling, add_noise = noise_schedule("none", 5)
    assert not add_noise and not use_rolling
    assert_allclose(x_tt, 1.0)


def test_schedules():
    x_tt, use_rolling, add_noise = noise_schedule("correlated", 4)
    assert_allclose(x_tt, [1, 1 / 2, 1 / 3, 1 / 4])
    assert use_rolling and add_noise
    x_tt, use_rolling, _ = noise_schedule(lambda t, k: 0.75 - 0.7 * t / k, 10)
    assert_allclose(x_tt, 0.75 - 0.07 * np.arange(1, 11))
    assert use_rolling
    _, use_rolling, _ = noise_schedule(np.ones(3), 3)
    assert not use_rolling


@pytest.mark.parametrize("bad", [np.ones(4), np.zeros(3), [0.5, 1.2, 1.0],
                                 [np.nan, 1, 1], lambda t, k: np.ones(k + 1)])
def test_bad_schedules_are_refused(bad):
    with pytest.raises(ValueError, match="noise"):
        noise_schedule(bad, 3)


def test_burn_in_counts_t_greater_than_qk():
    assert counted_permutations(0.0, 4).tolist() == [True] * 4
    assert counted_permutations(0.5, 4).tolist() == [False, False, True, True]
    assert counted_permutations(0.9, 10).sum() == 1
    assert counted_permutations(0.3, 5).tolist() == [False, True, True, True, True]
