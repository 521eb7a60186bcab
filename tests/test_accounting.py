"""Exact GDP accounting, cross-checked against Google's PLD accountant."""

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import PLDAccountant
from numpy.testing import assert_allclose

from skdpval.privacy._accounting import (
    composed_mu,
    gdp_epsilon,
    gdp_mu,
    log_delta,
    mean_release_noise_std,
    noise_std_for_budget,
    pure_dp_mu,
)
from skdpval.privacy._mechanism import PrivacyMechanism


def test_published_calibration():
    # eps = 1, delta = 5e-5, k = 200, C = 1.
    assert_allclose(noise_std_for_budget(1.0, 5e-5, 200, 1.0), 47.4597, rtol=1e-4)


@pytest.mark.parametrize("k", [1, 10, 200, 1000])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [5e-5, 1e-3])
def test_matches_dp_accounting_pld(k, epsilon, delta):

    s = noise_std_for_budget(epsilon, delta, k, clip_norm=1.0)
    accountant = PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier=s), k)
    assert_allclose(accountant.get_epsilon(delta), epsilon, rtol=1e-3)


@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 5e-5, 0.1])
def test_round_trip_over_the_supported_range(epsilon, delta):
    mu = gdp_mu(epsilon, delta)
    assert np.isfinite(mu) and mu > 0
    assert_allclose(np.exp(log_delta(epsilon, mu)), delta, rtol=1e-8)
    assert_allclose(gdp_epsilon(mu, delta), epsilon, rtol=1e-8)


def test_delta_curve_against_direct_formula():
    from scipy.stats import norm

    for mu, epsilon in [(0.5, 0.2), (1.0, 1.0), (2.0, 3.0)]:
        direct = (norm.cdf(-epsilon / mu + mu / 2)
                  - np.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2))
        assert_allclose(np.exp(log_delta(epsilon, mu)), direct, rtol=1e-10)


def _report(noise_multiplier, n_unprotected=0, adds_noise=True):
    mechanism = PrivacyMechanism(epsilon=None, delta=1e-5,
                                 noise_multiplier=noise_multiplier,
                                 adds_noise=adds_noise)
    mechanism.protect("sample", 100)
    mechanism.gaussian("release", 1, n_releases=100, clip=1.0, dimension=1)
    mechanism.calibrate()
    return mechanism.report(n_unprotected)


def test_more_noise_less_epsilon_and_replace_one_is_worse():
    report = _report(20.0)
    assert_allclose(report["mu"], np.sqrt(100) / 20.0)
    assert report["epsilon_replace_one"] > report["epsilon"]
    assert_allclose(report["epsilon_replace_one"], gdp_epsilon(2 * report["mu"], 1e-5),
                    rtol=1e-5)  # net of the sampler's share of delta
    quieter = _report(40.0)
    assert quieter["epsilon"] < report["epsilon"]
    none = _report(20.0, n_unprotected=3, adds_noise=False)
    assert none["epsilon"] == np.inf and "not protected" in none["validation_set"]


def test_zero_epsilon_when_noise_is_huge():
    assert gdp_epsilon(1e-9, 0.1) == 0.0


def test_composed_mu_adds_the_squares_of_every_part():
    """Gaussian parts and pure parts (counted as pure_dp_mu-GDP) compose in
    mu^2; the mechanism's report and privacy_spent both use this function."""
    assert composed_mu() == 0.0
    assert composed_mu([(0.3, 1)]) == 0.3
    assert_allclose(composed_mu([(0.3, 2), (0.4, 1)], [(1.0, 3)]),
                    np.sqrt(2 * 0.09 + 0.16 + 3 * pure_dp_mu(1.0) ** 2), rtol=1e-15)
    assert composed_mu([(np.inf, 1)]) == np.inf


def test_mean_release_noise_std_divides_by_the_group_size():
    assert mean_release_noise_std(3.0) == 3.0
    assert_allclose(mean_release_noise_std(3.0, np.array([1, 2, 4])), [3.0, 1.5, 0.75])
