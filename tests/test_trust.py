"""Trust: membership inference, an empirical DP check, numerical safety."""

import warnings

import numpy as np
import pytest
from scipy.stats import beta as beta_distribution
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import StandardScaler

from skdpval import DPDataValuator, _kernels
from skdpval._accounting import noise_std_for_budget
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


def clopper_pearson_upper(successes, trials, alpha):
    return beta_distribution.ppf(1 - alpha, successes + 1, trials - successes)


def empirical_epsilon_lower_bound(noise_std, n_releases, delta, n_trials=200000,
                                  seed=0):
    """Lower bound on epsilon from a threshold test on the releases.

    Neighbouring inputs under add/remove: the party present, with a gradient
    of norm 3C clipped to C by the kernel, or absent (a zero gradient). The
    test statistic projects the k releases on the gradient's direction and
    sums them. The threshold is chosen on one half of the samples, and its
    error rates are bounded (Clopper-Pearson, 95%) on the other half.
    """
    rng = np.random.default_rng(seed)
    d = 5
    gradient = rng.normal(size=(1, d))
    gradient *= 3.0 / np.linalg.norm(gradient)
    clipped = gradient.copy()
    _kernels.clip_l2(clipped, 1.0)
    direction = gradient[0] / np.linalg.norm(gradient)

    def statistic(present):
        releases = (present * clipped[0]
                    + noise_std * rng.standard_normal((n_trials, n_releases, d)))
        return releases.sum(axis=1) @ direction

    with_party, without_party = statistic(1.0), statistic(0.0)
    half = n_trials // 2

    def bound(with_sample, without_sample, threshold):
        n = len(without_sample)
        fpr_high = clopper_pearson_upper(np.sum(without_sample > threshold), n, 0.025)
        fnr_high = clopper_pearson_upper(np.sum(with_sample <= threshold), n, 0.025)
        return np.log(max(1 - fnr_high - delta, 1e-300) / fpr_high)

    thresholds = np.quantile(without_party[:half], np.linspace(0.5, 0.999, 100))
    threshold = max(thresholds, key=lambda tau: bound(with_party[:half],
                                                      without_party[:half], tau))
    return bound(with_party[half:], without_party[half:], threshold)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_empirical_epsilon_stays_below_the_claim(epsilon):
    k, delta = 10, 1e-5
    noise_std = noise_std_for_budget(epsilon, delta, k, clip_norm=1.0)
    lower_bound = empirical_epsilon_lower_bound(noise_std, k, delta)
    assert lower_bound < epsilon
    # The audit has power: it finds a good part of the claimed budget.
    assert lower_bound > 0.3 * epsilon


def test_empirical_epsilon_exceeds_the_claim_without_noise():
    # Almost no noise: the test tells the two inputs apart.
    assert empirical_epsilon_lower_bound(1e-6, 10, 1e-5) > 4.0


def test_divergence_is_an_error_or_a_warning_naming_the_remedy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * 1e3
    y = X @ [1.0, 2.0, 3.0]
    valuator = DPDataValuator(LinearRegression(), noise="none", q=0.0,
                              subspace=None, standardize=False,
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
