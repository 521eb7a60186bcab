"""skdpval.testing.dp_test: the tester's own error rates, then every noise
primitive and a one-number projection of every estimator, each passing at
its claimed noise and failing with less.

The claims are the mechanisms' own: a Gaussian release of sensitivity
``Delta`` and noise std ``s`` claims ``mu``-GDP with ``mu = Delta / s``, that
is the whole profile ``(epsilon, gdp_delta(epsilon, mu))``; a discrete
Laplace release of scale ``t`` claims pure ``Delta / t``-DP. The noise of
the primitives comes from fixed ``noise_key`` seeds, so every test is
deterministic. The large runs (10^6-10^7 samples, power tables, the false
rejection rate over many repetitions) are in benchmarks/dp_test.py.
"""

import sys
from fractions import Fraction

import numpy as np
import pytest
from sklearn.linear_model import RidgeClassifier

from skdpval import DPLabelQuality
from skdpval.privacy._accounting import gdp_mu, noise_std_for_budget
from skdpval.privacy._noise import gaussian_noise, laplace_noise
from skdpval.privacy._release import releases_on_grid
from skdpval.privacy._grid import Grid
from skdpval.privacy._secure_noise import noise_key
from skdpval.testing import DPTestResult, dp_test, gdp_delta
from test_audit import (
    EPSILON,
    canary_rows,
    claimed_mu,
    data_valuator_statistic,
    federated_statistic,
    layered_fit,
    layered_statistic,
)

# The acceptance case: a sensitivity-1 statistic released with rounded
# Gaussian noise calibrated to (1, 1e-5), 10^6 releases per neighbour.
EPSILON_ACCEPTANCE, DELTA_ACCEPTANCE, N_ACCEPTANCE = 1.0, 1e-5, 10**6
# Where a Gaussian mechanism's profile is tested.
PROFILE_EPSILONS = np.array([0.0, 0.25, 0.5, 1.0, 2.0])


def gaussian_releases(n, factor=1.0, seed=0, statistics=(1.0, 0.0), clip=1.0,
                      epsilon=EPSILON_ACCEPTANCE, delta=DELTA_ACCEPTANCE, bound=None):
    """``n`` grid releases of each statistic (a neighbour pair), with the
    rounded Gaussian noise of the library calibrated to ``(epsilon, delta)``
    for one release of sensitivity ``clip``, its std times ``factor``.
    ``bound`` (grid units) overrides the grid's clamp."""
    grid = Grid(clip, 1)
    std = factor * noise_std_for_budget(epsilon, delta, 1, clip) / grid.gamma
    noise = gaussian_noise(noise_key(seed), 1, 0, len(statistics), std,
                           np.empty((len(statistics), n)))
    return [releases_on_grid(np.full(n, float(statistic)), row, grid.gamma,
                             grid.bound if bound is None else bound, np.empty(n))
            for statistic, row in zip(statistics, noise)]


def gdp_profile(mu):
    return PROFILE_EPSILONS, gdp_delta(PROFILE_EPSILONS, mu)


# --- the tester -------------------------------------------------------------------


def randomized_response(n, keep, seed):
    """A bit kept with probability ``keep``, on data 1 and on data 0:
    exactly ``ln(keep / (1 - keep))``-DP, tight on the event {1}."""
    rng = np.random.default_rng(seed)
    return rng.random(n) < keep, rng.random(n) < 1 - keep


def test_false_rejections_of_a_tight_claim_stay_below_alpha():
    """The claim of randomized response is exact on every event it has, so
    each bound sits at the boundary. At alpha = 0.2 (to see rejections at
    all) the rejection rate over 300 runs must stay below alpha. It is 0 of
    300; without the Bonferroni factor (``4 n_events``) it is 70."""
    keep, alpha = 0.75, 0.2
    rejections = sum(
        not dp_test(*randomized_response(2000, keep, seed), np.log(keep / (1 - keep)),
                    0.0, alpha=alpha, random_state=seed).passed
        for seed in range(300))
    assert rejections <= 0.2 * 300, rejections


def test_rejects_randomized_response_above_its_claim():
    on_one, on_zero = randomized_response(30_000, 0.75, seed=0)
    result = dp_test(on_one, on_zero, 0.9, 0.0, random_state=0)
    assert not result.passed and result.votes_against >= 2
    # ln 3 = 1.10 is the truth: the lower bound lies between claim and truth
    assert 0.9 < result.epsilon_lower <= np.log(3)
    assert result.worst_event == ((1.0, np.inf),)
    assert result.worst_event_favours == "samples"
    # swapped samples: the same verdict, the event or its direction swapped
    swapped = dp_test(on_zero, on_one, 0.9, 0.0, random_state=0)
    assert not swapped.passed
    assert (swapped.worst_event, swapped.worst_event_favours) in (
        (((1.0, np.inf),), "samples_neighbour"), (((-np.inf, 1.0),), "samples"))


def test_result_shapes_follow_the_claim():
    x, y = randomized_response(3000, 0.75, seed=1)
    scalar = dp_test(x, y, 1.2, 0.0, random_state=0)
    assert isinstance(scalar, DPTestResult)
    assert isinstance(scalar.epsilon_lower, float)
    assert isinstance(scalar.delta_lower, float)
    profile = dp_test(x, y, [0.5, 1.2], [0.3, 0.0], random_state=0)
    assert profile.epsilon_lower.shape == profile.delta_lower.shape == (2,)
    broadcast = dp_test(x, y, [0.5, 1.2], 0.0, random_state=0)
    assert broadcast.delta.shape == (2,)
    with pytest.raises(AttributeError):
        scalar.passed = False  # frozen


def test_constant_outputs_pass():
    """One value on both sides (a mechanism that ignores its input): one
    bin, no event to test but the certain one."""
    result = dp_test(np.zeros(1000), np.zeros(1000), 0.0, 0.0, random_state=0)
    assert result.passed and result.delta_lower == 0 and result.epsilon_lower == 0
    # two different constants: total variation 1, refuted at (1, 0.5)
    assert not dp_test(np.zeros(1000), np.ones(1000), 1.0, 0.5, random_state=0).passed


def test_gdp_delta_is_the_gaussian_profile():
    # epsilon 0: the total variation of N(mu, 1) and N(0, 1), 2 Phi(mu / 2) - 1
    from scipy.stats import norm
    assert gdp_delta(0.0, 0.7) == pytest.approx(2 * norm.cdf(0.35) - 1, rel=1e-12)
    # the calibration's own point: mu(1, 1e-5) gives delta 1e-5 at epsilon 1
    assert gdp_delta(1.0, gdp_mu(1.0, 1e-5)) == pytest.approx(1e-5, rel=1e-8)
    assert np.all(np.diff(gdp_delta(PROFILE_EPSILONS, 1.0)) < 0)


GOOD = np.arange(100.0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(samples=GOOD.reshape(10, 10)), "samples must be a 1-D array"),
    (dict(samples_neighbour=np.r_[GOOD[:-1], np.nan]),
     "samples_neighbour must be finite"),
    (dict(samples=np.r_[GOOD[:-1], np.inf]), "samples must be finite"),
    (dict(samples=["a"] * 100), "samples must be a 1-D array of numbers"),
    (dict(samples=GOOD[:50]), "samples must hold at least 80 values with n_votes=3"),
    (dict(samples_neighbour=GOOD[:79]), "samples_neighbour must hold at least 80"),
    (dict(epsilon=-0.1), "epsilon must be finite and >= 0"),
    (dict(epsilon=np.inf), "epsilon must be finite and >= 0"),
    (dict(epsilon=np.nan), "epsilon must be finite and >= 0"),
    (dict(delta=1.0), r"delta must lie in \[0, 1\)"),
    (dict(delta=-1e-9), r"delta must lie in \[0, 1\)"),
    (dict(epsilon=[1.0, 2.0], delta=[0.0, 0.1, 0.2]), "the same length"),
    (dict(epsilon=[]), "must not be empty"),
    (dict(alpha=0.0), r"alpha must be a real number in \(0, 0.5\]"),
    (dict(alpha=0.7), r"alpha must be a real number in \(0, 0.5\]"),
    (dict(n_votes=2), "n_votes must be an odd integer >= 1"),
    (dict(n_votes=0), "n_votes must be an odd integer >= 1"),
    (dict(n_votes=3.0), "n_votes must be an odd integer >= 1"),
    (dict(n_bins=1), "n_bins must be an integer >= 2"),
])
def test_bad_input_is_refused_with_the_allowed_range(kwargs, message):
    arguments = dict(samples=GOOD, samples_neighbour=GOOD, epsilon=1.0, delta=0.0)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        dp_test(**arguments)


def test_gdp_delta_refuses_bad_input():
    with pytest.raises(ValueError, match="mu must be a finite real number > 0"):
        gdp_delta(1.0, 0.0)
    with pytest.raises(ValueError, match="epsilon must be finite and >= 0"):
        gdp_delta(-1.0, 1.0)


# --- the acceptance: 10^6 rounded Gaussian releases at (1, 1e-5) -----------------


@pytest.fixture(scope="module")
def acceptance_mu():
    return gdp_mu(EPSILON_ACCEPTANCE, DELTA_ACCEPTANCE)


def test_rounded_gaussian_passes_at_the_true_noise(acceptance_mu):
    x, y = gaussian_releases(N_ACCEPTANCE)
    profile = dp_test(x, y, *gdp_profile(acceptance_mu), random_state=0)
    assert profile.passed, profile
    point = dp_test(x, y, EPSILON_ACCEPTANCE, DELTA_ACCEPTANCE, random_state=0)
    assert point.passed, point
    # The bounds come close to the claim without crossing it: within
    # 0.01 of the total variation (the profile's delta at epsilon 0).
    assert 0 < gdp_profile(acceptance_mu)[1][0] - profile.delta_lower[0] < 0.01


def test_rounded_gaussian_fails_with_the_noise_times_0_8(acceptance_mu):
    """The mutation check of the acceptance: 20% less noise is refuted."""
    x, y = gaussian_releases(N_ACCEPTANCE, factor=0.8)
    result = dp_test(x, y, *gdp_profile(acceptance_mu), random_state=0)
    assert not result.passed and result.votes_against == 3, result
    # the delta excess at epsilon 0 (the total variation: 0.133 against 0.107)
    assert result.delta_lower[0] > gdp_profile(acceptance_mu)[1][0] + 0.01


def test_rounded_gaussian_point_claim_fails_with_half_the_noise():
    """At the single point (1, 1e-5) the test sees half the noise (x0.8 is
    beyond any test at 10^6 samples: see dp_test's docstring)."""
    x, y = gaussian_releases(N_ACCEPTANCE, factor=0.5)
    result = dp_test(x, y, EPSILON_ACCEPTANCE, DELTA_ACCEPTANCE, random_state=0)
    assert not result.passed and result.delta_lower > DELTA_ACCEPTANCE
    assert result.epsilon_lower > EPSILON_ACCEPTANCE


@pytest.mark.parametrize("seed", range(1, 6))
def test_rounded_gaussian_no_false_rejection_across_seeds(seed, acceptance_mu):
    x, y = gaussian_releases(300_000, seed=seed)
    assert dp_test(x, y, *gdp_profile(acceptance_mu), random_state=seed).passed
    assert dp_test(x, y, EPSILON_ACCEPTANCE, DELTA_ACCEPTANCE, random_state=seed).passed


# --- every noise primitive -------------------------------------------------------


@pytest.mark.parametrize("std", [1.0, 10.0, 1000.0])
@pytest.mark.parametrize("factor, passes", [(1.0, True), (0.8, False)])
def test_rounded_gaussian_at_several_scales(std, factor, passes):
    """Noise of ``std`` grid units on statistics ``std`` steps apart: mu = 1.
    At std 1 the outputs are a few integers (exact-value bins); at 1000 they
    spread over thousands of values (quantile bins)."""
    noise = gaussian_noise(noise_key(int(std)), 1, 0, 2, factor * std,
                           np.empty((2, 200_000)))
    x, y = noise[0] + std, noise[1]
    result = dp_test(x, y, *gdp_profile(1.0), random_state=0)
    assert result.passed is passes, result


@pytest.mark.parametrize("sensitivity", [1, 16])
@pytest.mark.parametrize("factor, passes",
                         [(Fraction(1), True), (Fraction(4, 5), False)])
def test_discrete_laplace(sensitivity, factor, passes):
    """The exact discrete Laplace of scale ``sensitivity / epsilon`` on
    statistics ``sensitivity`` steps apart: pure 1-DP; at 0.8 of the scale
    1.25-DP. (A slow exact sampler: 2 x 20,000 draws.)"""
    key, scale = noise_key(sensitivity), Fraction(sensitivity) * factor
    x = sensitivity + laplace_noise(key, 1, scale, 20_000)
    y = laplace_noise(key, 2, scale, 20_000)
    result = dp_test(x, y, 1.0, 0.0, random_state=0)
    assert result.passed is passes, result


@pytest.mark.parametrize("bound, passes", [(None, True), (np.inf, False)])
def test_grid_release_clamps_to_the_sensitivity(bound, passes):
    """Statistics beyond the clip (3.7 and -0.3 with clip 1) are clamped to
    ``[-2^j, 2^j]`` steps, so zero-out neighbours stay ``2^j`` apart: the
    noise of a clip-1 release covers them. Without the clamp they are 4 clips
    apart and the claim fails."""
    mu = gdp_mu(EPSILON_ACCEPTANCE, DELTA_ACCEPTANCE)
    for statistic in (3.7, -0.3):
        x, y = gaussian_releases(200_000, statistics=(statistic, 0.0), bound=bound)
        result = dp_test(x, y, *gdp_profile(mu), random_state=0)
        assert result.passed is (passes or abs(statistic) < 1), (statistic, result)


# --- one number of each estimator ---------------------------------------------------
#
# The canaries of tests/test_audit.py: party 0 against the same party with its
# label flipped (replace-one: 2 mu for mu-GDP releases per party), the
# statistic the canary's value (another point's for Layered, whose own value
# is not covered). Few fits, so only gross violations show: the noise is cut
# to 0.3 at every Gaussian draw site, to 0.001 at the Laplace one (the
# Layered canary moves other values by under a hundredth of the worst case,
# tests/test_audit.py).


def label_quality_statistic(canary, noise_seed):
    """DPLabelQuality on the audit's canary, with a closed-form public model
    (RidgeClassifier: the LogisticRegression of the audits costs 3x the fit)."""
    X, y = canary_rows(canary, 1, 1)
    scorer = DPLabelQuality(RidgeClassifier(fit_intercept=False), epsilon=EPSILON,
                            standardize=False, random_state=0, noise_seed=noise_seed)
    X_val = np.array([[1.0], [1.0], [-1.0], [-1.0]])
    return scorer.fit(X, y, X_val=X_val, y_val=np.array([1, 1, 0, 0])).values_[0]


def layered_claim():
    report = layered_fit(True, 0).privacy_report_
    return report["parts"][0]["epsilon_replace_one"], 0.0  # per value, pure


# name: (statistic, noise factor of the cut, fits per neighbour). Layered:
# with the noise cut the two neighbours' values barely overlap, and a pure
# epsilon of 2 shows only when P(S | D') has an upper bound near
# e^-2 P(S | D): 200 fits bound it at ~0.14, 400 at ~0.05.
ESTIMATORS = {
    "DPDataValuator": (data_valuator_statistic, 0.3, 200),
    "DPLabelQuality": (label_quality_statistic, 0.3, 200),
    "DPFederatedValuator": (federated_statistic, 0.3, 200),
    "LayeredShapleyValuator": (layered_statistic, 0.001, 400),
}


def estimator_claim(name):
    if name == "LayeredShapleyValuator":
        return layered_claim()
    # Every Gaussian valuator is calibrated to the same (EPSILON, delta) per
    # party: the replace-one mu of a fit's own report (as the audits claim).
    return gdp_profile(claimed_mu())


def fit_samples(statistic, n_fits, entropy=1):
    seeds = np.random.SeedSequence(entropy).generate_state(2 * n_fits)
    return ([statistic(True, int(seed)) for seed in seeds[:n_fits]],
            [statistic(False, int(seed)) for seed in seeds[n_fits:]])


def scale_every_draw(monkeypatch, factor):
    """Scale the noise wherever the package draws it: every skdpval module's
    reference to the Gaussian and Laplace draw functions."""
    factor = Fraction(factor).limit_denominator(10**6)
    scaled = {
        "gaussian_noise": lambda key, kind, lo, hi, std, out: gaussian_noise(
            key, kind, lo, hi, float(factor) * std, out),
        "laplace_noise": lambda key, kind, scale, size: laplace_noise(
            key, kind, scale * factor, size),
    }
    originals = {"gaussian_noise": gaussian_noise, "laplace_noise": laplace_noise}
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("skdpval"):
            continue
        for name, original in originals.items():
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, scaled[name])


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimator_passes_at_the_true_noise(name):
    statistic, _, n_fits = ESTIMATORS[name]
    result = dp_test(*fit_samples(statistic, n_fits), *estimator_claim(name),
                     random_state=0)
    assert result.passed, result


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimator_fails_with_the_noise_cut(name, monkeypatch):
    statistic, factor, n_fits = ESTIMATORS[name]
    claim = estimator_claim(name)  # calibrated before the cut
    scale_every_draw(monkeypatch, factor)
    result = dp_test(*fit_samples(statistic, n_fits), *claim, random_state=0)
    assert not result.passed, result
