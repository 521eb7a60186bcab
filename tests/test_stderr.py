"""values_stderr_ covers the privacy noise (issue 35).

Two fits with fresh noise (``noise_seed=None``) and other permutations
(another ``random_state``) estimate the same value, so their difference
over the combined standard error ``sqrt(se_a^2 + se_b^2)`` is about a
standard normal. Checked: at most 10% of the parties lie more than 2
combined standard errors apart (about 5% expected), and the mean of the
squared ratio lies in [0.5, 2] (1 expected; below, padded; above, too
narrow). The noise is secret, so each case pools about 400 parties: over
12 repeats of every case at most 7.2% were apart and the mean squared
ratio stayed within 0.80-1.16, while the noise term's variance scaled by
0.25 or 4 fails them. With the Monte Carlo term alone (the spread of the
marginals, blind to the noise that the counted permutations share) the
defaults had 96% of the parties apart.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_breast_cancer

from skdpval import DPDataValuator, DPLabelQuality
from skdpval.privacy._noise import counted_permutations, noise_schedule, unseen_noise_factor


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:400], y[:400], X[400:], y[400:]


def refit_ratios(make, data, pairs=1, groups=None):
    """``d / sqrt(se_a^2 + se_b^2)`` over ``pairs`` pairs of fits (seeds 1, 2, ...)."""
    X, y, X_val, y_val = data
    ratios = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the default-epsilon and LOO notes
        for pair in range(pairs):
            a, b = (make(2 * pair + seed).fit(X, y, X_val=X_val, y_val=y_val,
                                              groups=groups) for seed in (1, 2))
            ratios.append((a.values_ - b.values_)
                          / np.sqrt(a.values_stderr_**2 + b.values_stderr_**2))
    return np.concatenate(ratios)


def assert_covers(ratios):
    outside, mean_z2 = np.mean(np.abs(ratios) > 2), np.mean(ratios**2)
    assert outside <= 0.10, (outside, mean_z2)
    assert 0.5 <= mean_z2 <= 2.0, (outside, mean_z2)


# Per case: the valuator (seed -> estimator), pairs of fits, group size.
CASES = {
    "defaults": (lambda seed: DPDataValuator(epsilon=3.0, random_state=seed), 1, None),
    "subspace=None": (lambda seed: DPDataValuator(
        epsilon=3.0, subspace=None, n_permutations=300, random_state=seed), 1, None),
    "groups, record-level": (lambda seed: DPDataValuator(
        epsilon=3.0, n_permutations=500, random_state=seed), 2, 2),
    "groups, group-level": (lambda seed: DPDataValuator(
        epsilon=3.0, privacy_unit="group", n_permutations=500, random_state=seed), 2, 2),
    "label score": (lambda seed: DPLabelQuality(epsilon=3.0, random_state=seed), 1, None),
    "label score, record-level groups": (lambda seed: DPLabelQuality(
        epsilon=3.0, random_state=seed), 2, 2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_two_fits_with_fresh_noise_differ_by_about_their_standard_errors(case, data):
    make, pairs, group_size = CASES[case]
    groups = None if group_size is None else np.arange(len(data[0])) // group_size
    assert_covers(refit_ratios(make, data, pairs, groups))


def test_the_monte_carlo_term_alone_misses_the_shared_noise(data):
    """The mutation check: without the noise term the defaults fail (the
    spread of the marginals does not see the running means' noise)."""
    X, y, X_val, y_val = data
    a, b = (DPDataValuator(epsilon=3.0, random_state=seed).fit(
        X, y, X_val=X_val, y_val=y_val) for seed in (1, 2))
    monte_carlo = np.sqrt(a.marginal_var_ / a.n_marginals_
                          + b.marginal_var_ / b.n_marginals_)
    assert np.mean(np.abs(a.values_ - b.values_) > 2 * monte_carlo) > 0.5
    assert np.all(a.values_stderr_**2 > a.marginal_var_ / a.n_marginals_)


@pytest.mark.parametrize("noise", ["iid", "none"])
def test_without_running_means_the_stderr_is_the_monte_carlo_term(noise, data):
    """i.i.d. releases (and no noise) are independent across permutations:
    the spread of the marginals sees all of their noise, nothing is added."""
    X, y, X_val, y_val = data
    valuator = DPDataValuator(epsilon=3.0, noise=noise, n_permutations=100,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    assert_allclose(valuator.values_stderr_,
                    np.sqrt(valuator.marginal_var_ / valuator.n_marginals_))


def test_the_label_scores_stderr_is_its_noise_std(data):
    X, y, X_val, y_val = data
    groups = np.arange(len(X)) // 8
    scorer = DPLabelQuality(epsilon=2.0, random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert_allclose(scorer.values_stderr_, scorer.privacy_report_["noise_std"])
    record = DPLabelQuality(epsilon=2.0, random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups)
    assert_allclose(record.values_stderr_, record.privacy_report_["noise_std"] / 8)
    exact = DPLabelQuality(epsilon=np.inf, random_state=0).fit(X, y)
    held_out = np.isnan(exact.values_)
    assert held_out.any() and np.all(np.isnan(exact.values_stderr_[held_out]))
    assert np.all(exact.values_stderr_[~held_out] == 0)


def release_weights(x_tt, batch_permutations):
    """The weight of each raw release in each permutation's update, by
    running the walk's rolling mean on unit releases: row ``t`` is the
    update of permutation ``t`` when release ``i`` is the unit vector
    ``e_i`` (the update is linear in the releases)."""
    k = len(x_tt)
    releases = np.eye(k)
    rolling_mean = np.zeros(k)
    updates = np.empty((k, k))
    for start in range(0, k, batch_permutations):
        stop = min(start + batch_permutations, k)
        for t in range(start, stop):
            updates[t] = x_tt[t] * releases[t] + (1 - x_tt[t]) * rolling_mean
        rolling_mean = (start * rolling_mean + releases[start:stop].sum(0)) / stop
    return updates


@pytest.mark.parametrize("noise, k, batch, q", [
    ("correlated", 40, 1, 0.9), ("correlated", 100, 16, 0.9),
    ("correlated", 37, 4, 0.5), ("correlated", 20, 3, 0.0), ("iid", 50, 1, 0.9),
    (lambda t, k: 0.75 - 0.7 * t / k, 30, 5, 0.3)])
def test_unseen_noise_factor_is_what_the_spread_misses(noise, k, batch, q):
    """Against the covariance of the updates, built by running the rolling
    mean: the variance of the mean counted update's noise, less what the
    spread (ddof=0) of the counted updates sees of it over ``K``."""
    x_tt, _, _ = noise_schedule(noise, k, batch)
    counted = counted_permutations(q, k)
    weights = release_weights(x_tt, batch)[counted]
    covariance = weights @ weights.T
    n = len(covariance)
    variance_of_mean = covariance.sum() / n**2
    seen_by_the_spread = (np.trace(covariance) / n - variance_of_mean) / n
    assert_allclose(unseen_noise_factor(x_tt, counted, batch),
                    variance_of_mean - seen_by_the_spread, rtol=1e-10)
    if noise == "iid":  # independent updates: only the ddof is missed
        assert_allclose(unseen_noise_factor(x_tt, counted, batch), 1 / n**2)


def test_the_walk_returns_the_mean_of_each_partys_releases():
    """What the stderr reads: the mean of the raw releases (clipped gradient
    plus noise), not a gradient. One party whose hinge gradient ``-y x`` is
    clipped from norm 2 to 1 and stays constant (a tiny learning rate)."""
    from skdpval.kernels import _losses
    from skdpval.kernels._linear import make_problem
    from skdpval.walks._runner import run_walks
    from helpers import FixedDraws

    rng = np.random.default_rng(0)
    d, k = 5, 12
    x = rng.normal(size=d)
    x *= 2.0 / np.linalg.norm(x)
    problem = make_problem(
        x[None, :], np.array([[-1.0]]), np.arange(2), np.eye(d), np.zeros((d, 1)),
        np.zeros(d), loss=_losses.HINGE, utility=_losses.NEG_MSE, loss_param=0.0,
        l2=0.0, n_penalized=d, clip_norm=1.0, learning_rate=1e-6,
        total_sum_squares=1.0, weights=np.ones(1))
    noise = rng.normal(size=(k, 1, 1, d))
    x_tt, use_rolling, _ = noise_schedule("correlated", k, 4)
    result = run_walks(problem, FixedDraws(np.zeros((k, 1), np.int64), noise.copy()),
                       x_tt=x_tt, use_rolling=use_rolling, counted=np.ones(k, bool),
                       batch_permutations=4)
    assert_allclose(result.rolling_mean[0, 0], x / 2 + noise.mean(axis=0)[0, 0])
    iid = run_walks(problem, FixedDraws(np.zeros((k, 1), np.int64), noise.copy()),
                    x_tt=np.ones(k), use_rolling=False, counted=np.ones(k, bool),
                    batch_permutations=4)
    assert iid.rolling_mean is None


@pytest.mark.parametrize("n_parties, dimension", [(400, 1), (400, 30), (40, 30), (20, 30)])
def test_the_slope_on_the_mean_releases_is_read_without_the_error_it_fits(
        n_parties, dimension):
    """Synthetic values ``c + a . r_j + e_j``: the squared slope comes back
    within sampling error, with the Monte Carlo error ``e`` removed (it
    would add about ``dimension * var(e) / (n var(r))``), and scaled back up
    when there are fewer parties than coordinates."""
    from skdpval.valuation._uncertainty import noise_slope_squared_norm

    rng = np.random.default_rng(n_parties + dimension)
    a = rng.normal(size=dimension)
    a *= 2.0 / np.linalg.norm(a)
    estimates = []
    for _ in range(200):
        releases = rng.normal(size=(n_parties, dimension))
        error_variance = rng.uniform(0.5, 1.5, size=n_parties)
        values = 3.0 + releases @ a + rng.normal(size=n_parties) * np.sqrt(error_variance)
        estimates.append(noise_slope_squared_norm(values, error_variance, releases))
    assert_allclose(np.mean(estimates), 4.0, rtol=0.1)


@pytest.mark.parametrize("n_parties", [2, 50, 70_000])
def test_the_slope_on_one_release_a_party_is_the_svds(n_parties):
    """One release a party (the public line) is read in blocks of parties,
    without an SVD: the same squared slope as the SVD's (plain numpy here);
    equal releases have none."""
    from skdpval.valuation._uncertainty import noise_slope_squared_norm

    rng = np.random.default_rng(n_parties)
    releases = rng.normal(size=(n_parties, 1)) * 3.0 + 1.0
    error_variance = rng.uniform(0.5, 1.5, size=n_parties)
    values = 2.0 + 0.7 * releases[:, 0] + 0.1 * rng.normal(size=n_parties)
    centred = releases - releases.mean(axis=0)
    u, singular, _ = np.linalg.svd(centred, full_matrices=False)
    slope = (u.T @ (values - values.mean())) / singular
    fitted_error = np.sum(error_variance @ (u / singular) ** 2)
    expected = max(0.0, float(slope @ slope) - fitted_error)
    assert expected > 0.0
    assert_allclose(noise_slope_squared_norm(values, error_variance, releases), expected,
                    rtol=1e-10)
    assert noise_slope_squared_norm(values, error_variance,
                                    np.full((n_parties, 1), 0.1)) == 0.0
