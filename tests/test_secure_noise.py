"""Noise that survives floating point: ChaCha20, the rounded Gaussian table,
the discrete Laplace, releases on a grid, and the floating-point attack."""

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skdpval import DPLabelQuality, LayeredShapleyValuator
from skdpval.privacy import _secure_noise as sn
from skdpval.privacy._release import release_on_grid, releases_on_grid
from skdpval.privacy._accounting import gdp_mu

# --- ChaCha20: RFC 8439 ------------------------------------------------------------


def _words(hex_bytes):
    return np.frombuffer(bytes.fromhex(hex_bytes), "<u4").astype(np.uint64)


def _keystream(key, nonce, counter, n_bytes):
    out = np.empty(16, np.uint64)
    stream = b""
    while len(stream) < n_bytes:
        sn.chacha20_block(key, counter, nonce, out)
        stream += out.astype("<u4").tobytes()
        counter += 1
    return stream[:n_bytes]


def test_chacha20_block_function_rfc8439_2_3_2():
    key = np.frombuffer(bytes(range(32)), "<u4").astype(np.uint64)
    out = np.empty(16, np.uint64)
    sn.chacha20_block(key, 1, _words("000000090000004a00000000"), out)
    expected = ("e4e7f110 15593bd1 1fdd0f50 c47120a3 c7f4d1c7 0368c033 9aaa2204 "
                "4e6cd4c3 466482d2 09aa9f07 05d7c214 a2028bd9 d19c12b5 b94e16de "
                "e883d0cb 4e3c50a2").split()
    assert [f"{int(w):08x}" for w in out] == expected


def test_chacha20_encryption_rfc8439_2_4_2_and_a_1():
    key = np.frombuffer(bytes(range(32)), "<u4").astype(np.uint64)
    plaintext = (b"Ladies and Gentlemen of the class of '99: If I could offer you "
                 b"only one tip for the future, sunscreen would be it.")
    stream = _keystream(key, _words("000000000000004a00000000"), 1, len(plaintext))
    ciphertext = bytes(p ^ s for p, s in zip(plaintext, stream))
    assert ciphertext[:32].hex() == ("6e2e359a2568f98041ba0728dd0d6981"
                                     "e97e7aec1d4360c20a27afccfd9fae0b")
    # Appendix A.1, test vector 1: all-zero key and nonce, counter 0.
    zero = _keystream(np.zeros(8, np.uint64), np.zeros(3, np.uint64), 0, 64)
    assert zero.hex() == ("76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc"
                          "8b770dc7da41597c5157488d7724e03fb8d84a376a43b8f41518a11c"
                          "c387b669b2ee6586")


def test_noise_key_is_os_entropy_unless_a_seed_is_given():
    assert_array_equal(sn.noise_key(7), sn.noise_key(7))
    assert not np.array_equal(sn.noise_key(7), sn.noise_key(8))
    assert not np.array_equal(sn.noise_key(None), sn.noise_key(None))
    assert sn.noise_key(None).shape == (8,) and sn.noise_key(None).max() < 2**32


def test_uniform_coins_are_the_top_53_bits_of_the_stream_s_64_bit_words():
    key, nonce = sn.noise_key(4), sn.stream_nonce(sn.ROUNDING, 7)
    coins = sn.uniform_coins(key, nonce, 20_000)
    block = np.empty(16, np.uint64)
    sn.chacha20_block(key, 0, nonce, block)
    words = [int(w) for w in block]
    for i in range(8):
        assert coins[i] == ((words[2 * i] << 32 | words[2 * i + 1]) >> 11) * 2.0**-53
    assert np.all((coins >= 0) & (coins < 1)) and np.all(coins * 2**53 % 1 == 0)
    # Uniform: the mean and the deciles (5 standard errors).
    assert abs(coins.mean() - 0.5) < 5 * math.sqrt(1 / 12 / len(coins))
    counts = np.histogram(coins, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(counts - 2000) < 5 * math.sqrt(2000 * 0.9))
    # Another stream, other coins.
    assert not np.array_equal(coins[:8], sn.uniform_coins(
        key, sn.stream_nonce(sn.ROUNDING, 8), 8))


# --- the rounded Gaussian: probabilities and the table's TV bound ------------------

getcontext().prec = 50
_PI = Decimal("3.14159265358979323846264338327950288419716939937510")


def _erf(x):
    """erf by its series of positive terms: 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (2n+1)!!."""
    term = x
    total = x
    n = 0
    while term > total * Decimal(10) ** -48:
        n += 1
        term = term * 2 * x * x / (2 * n + 1)
        total += term
    return 2 / _PI.sqrt() * (-x * x).exp() * total


def _erfc(x):
    """erfc by its continued fraction (x >= 3): e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + ...)))."""
    fraction = x
    for k in range(400, 0, -1):
        fraction = x + Decimal(k) / 2 / fraction
    return (-x * x).exp() / _PI.sqrt() / fraction


def _upper_tail(t):
    """P(N(0, 1) > t) for t >= 0, to ~45 digits."""
    x = t / Decimal(2).sqrt()
    return (1 - _erf(x)) / 2 if x < 3 else _erfc(x) / 2


def _exact_probability(sigma, m):
    """P(round(N(0, sigma^2)) = m), m >= 0, in 50-digit decimals."""
    sigma = Decimal(sigma)
    lower, upper = (Decimal(m) - Decimal("0.5")) / sigma, (Decimal(m) + Decimal("0.5")) / sigma
    if m == 0:
        return 1 - 2 * _upper_tail(upper)
    return _upper_tail(lower) - _upper_tail(upper)


@pytest.mark.parametrize("sigma, magnitudes", [
    (2.0, np.arange(0, 22)),
    (150.3, np.r_[0:40, 40:1504:37]),
    (3e5, np.r_[0:5, np.unique(np.geomspace(5, 3e6, 60).astype(int))]),
])
def test_probabilities_have_the_claimed_relative_accuracy(sigma, magnitudes):
    computed = sn.rounded_gaussian_probabilities(sigma, magnitudes)
    exact = [_exact_probability(sigma, int(m)) for m in magnitudes]
    relative = [abs((Decimal(float(c)) - e) / e) for c, e in zip(computed, exact)]
    assert max(relative) < sn.PROBABILITY_RELATIVE_ERROR


@pytest.mark.parametrize("sigma", [2.0, 150.3])
def test_table_is_within_its_tv_bound_of_the_exact_law(sigma):
    table = sn.RoundedGaussianTable(sigma)
    counts = np.diff(np.r_[0, table.cdf.astype(object)])  # exact Python ints
    total = Decimal(0)
    for m, count in enumerate(counts):
        exact = _exact_probability(sigma, m) * (1 if m == 0 else 2)
        total += abs(Decimal(int(count)) / Decimal(2**63) - exact)
    tail = 1 - sum(_exact_probability(sigma, m) * (1 if m == 0 else 2)
                   for m in range(len(counts)))
    tv = (total + abs(tail)) / 2
    assert tv <= Decimal(table.eta)
    assert table.eta < 1e-12
    assert int(table.cdf[-1]) == 2**63


def test_eta_stays_below_1e_12_for_large_tables():
    assert sn.RoundedGaussianTable(3e5).eta < 1e-12


@pytest.mark.parametrize("sigma", [3.7, 150.3, 6000.0])
def test_sampler_std_catches_a_5_percent_scale_error(sigma):
    """2e5 draws: the std's relative standard error is 0.16%; 1.5% is 9 of them
    (right scale passes, w.p. 1 - 1e-18), a 5% error is 30 of them off."""
    draws = sn.rounded_gaussian(sn.noise_key(0), sn.stream_nonce(9), sigma,
                                np.empty(200_000))
    assert np.all(draws == np.rint(draws))
    # The rounded Gaussian's variance is sigma^2 + 1/12 (up to e^(-2 pi^2 sigma^2)).
    expected = math.sqrt(sigma**2 + 1 / 12)
    assert abs(np.std(draws) / expected - 1) < 0.015
    assert abs(np.mean(draws)) < 6 * expected / math.sqrt(len(draws))
    for wrong in (0.95, 1.05):
        assert abs(np.std(draws) / (wrong * expected) - 1) > 0.015


def test_streams_are_independent_of_scheduling():
    key = sn.noise_key(1)
    table = sn.rounded_gaussian_table(40.0)
    whole = np.empty((6, 50))
    sn.walk_noise(key, sn.WALK, 0, 6, table.cdf, table.guide, table.shift, whole)
    part = np.empty((2, 50))
    sn.walk_noise(key, sn.WALK, 3, 5, table.cdf, table.guide, table.shift, part)
    assert_array_equal(part, whole[3:5])
    assert not np.array_equal(whole[0], whole[1])


# --- the discrete Laplace ------------------------------------------------------------

def test_discrete_laplace_has_the_exact_law():
    """P(x) = (1 - e^(-1/t)) / (1 + e^(-1/t)) e^(-|x|/t): chi-square on 20,000 draws."""
    t = Fraction(5, 2)
    draws = sn.discrete_laplace(sn.noise_key(0), sn.stream_nonce(sn.LAYERED), t, 20_000)
    q = math.exp(-1 / float(t))
    values = np.arange(-8, 9)
    p = (1 - q) / (1 + q) * q ** np.abs(values)
    observed = np.array([np.sum(draws == v) for v in values])
    expected = len(draws) * p
    chi2 = np.sum((observed - expected) ** 2 / expected)
    assert chi2 < 45  # 17 cells: the 99.99th percentile is about 44
    # Variance 2q / (1 - q)^2: a 5% error in the scale moves it ~10%.
    variance = 2 * q / (1 - q) ** 2
    assert abs(np.var(draws) / variance - 1) < 0.05
    assert abs(np.var(draws) / (2 * q**1.05 / (1 - q**1.05) ** 2) - 1) > 0.05


# --- releases on the grid -----------------------------------------------------------

def test_release_is_a_function_of_the_integer_alone():
    gamma, bound = sn.Grid(0.7, 1).gamma, 64.0
    assert gamma == 0.7 / 64
    # Clipped values that overshoot the clip by an ulp still round into the clamp.
    assert release_on_grid(np.nextafter(0.7, 1), 0.0, gamma, bound) == 0.7
    assert release_on_grid(-np.nextafter(0.7, 1), 0.0, gamma, bound) == -0.7
    rng = np.random.default_rng(0)
    values = rng.uniform(-0.7, 0.7, 1000)
    m = np.rint(rng.normal(0, 500, 1000))
    released = releases_on_grid(values, m, gamma, bound, np.empty(1000))
    assert_array_equal(released, gamma * (np.rint(values / gamma) + m))


def _consistent_on_grid(release, neighbour_statistic, gamma, bound, support):
    """Is there an integer noise m, |m| <= support, with release_on_grid(neighbour, m) == release?"""
    a = min(max(np.rint(neighbour_statistic / gamma), -bound), bound)
    n = np.rint(release / gamma)
    return gamma * n == release and abs(n - a) <= support


def _consistent_in_floats(release, neighbour_statistic, std):
    """Mironov's test on fl(s + fl(z std)): is there a double z for the neighbour?"""
    y = release - neighbour_statistic
    for _ in range(8):
        y = np.nextafter(y, -np.inf)
    for _ in range(17):
        if neighbour_statistic + y == release:
            z = y / std
            for _ in range(8):
                z = np.nextafter(z, -np.inf)
            for _ in range(17):
                if z * std == y:
                    return True
                z = np.nextafter(z, np.inf)
        y = np.nextafter(y, np.inf)
    return False


def _label_quality_data(n=2000):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    X_val = rng.normal(size=(300, 4))
    y_val = (X_val[:, 0] > 0).astype(int)
    return X, y, X_val, y_val


def test_floating_point_attack_rules_out_no_neighbour_of_label_quality():
    X, y, X_val, y_val = _label_quality_data()
    clip = 1.0
    exact = DPLabelQuality(epsilon=np.inf, clip=clip).fit(X, y, X_val=X_val,
                                                       y_val=y_val).values_
    scorer = DPLabelQuality(epsilon=1.0, clip=clip, noise_seed=5).fit(
        X, y, X_val=X_val, y_val=y_val)
    std = clip / gdp_mu(1.0, 5e-5)
    gamma = clip / 64
    support = len(sn.rounded_gaussian_table(std / gamma).cdf) - 1
    # Neighbours: the flipped label (binary margin: -score) and zero-out (0).
    for neighbour in (-exact, np.zeros_like(exact)):
        ruled_out = [not _consistent_on_grid(r, s, gamma, 64.0, support)
                     for r, s in zip(scorer.values_, neighbour)]
        assert not any(ruled_out)
    # The same attack on the old release fl(score + fl(z std)) rules out many
    # flipped-label neighbours: the test can fail.
    z = np.random.default_rng(1).standard_normal(len(exact))
    old = exact + z * std
    ruled_out = [not _consistent_in_floats(r, s, std) for r, s in zip(old, -exact)]
    assert np.mean(ruled_out) > 0.05


@pytest.mark.parametrize("dimension", [1, 5])
def test_floating_point_attack_rules_out_no_neighbour_of_grid_releases(dimension):
    """The walk's and federated releases (release_on_grid, as the kernels call it):
    any hypothesised statistic within the clip is consistent with every release."""
    clip, std = 0.8, 30.0
    grid = sn.Grid(clip, dimension)
    rng = np.random.default_rng(dimension)
    values = rng.uniform(-clip, clip, 4000) / math.sqrt(dimension)
    m = sn.rounded_gaussian(sn.noise_key(0), sn.stream_nonce(sn.WALK), std / grid.gamma,
                            np.empty(4000))
    released = releases_on_grid(values, m, grid.gamma, grid.bound, np.empty(4000))
    support = len(sn.rounded_gaussian_table(std / grid.gamma).cdf) - 1
    neighbours = np.r_[np.zeros(2000), -values[2000:]]
    assert all(_consistent_on_grid(r, s, grid.gamma, grid.bound, support)
               for r, s in zip(released, neighbours))
    # The old release rules neighbours out.
    old = values + rng.standard_normal(4000) * std
    assert np.mean([not _consistent_in_floats(r, s, std)
                    for r, s in zip(old[:500], neighbours[:500])]) > 0.02


def test_floating_point_attack_rules_out_no_neighbour_of_layered():
    rng = np.random.default_rng(0)
    X = rng.random((24, 3))
    y = np.tile([0, 1], 12)
    valuator = LayeredShapleyValuator(alpha=0.3, epsilon=1.0, random_state=0,
                                      noise_seed=2, validation_fraction=0.25).fit(X, y)
    gamma = valuator.privacy_report_["sensitivity"] / 2**8
    released = valuator.values_[~np.isnan(valuator.values_)]
    # The discrete Laplace gives every integer: a release on the grid is
    # consistent with any neighbour's value.
    assert np.all(gamma * np.rint(released / gamma) == released)


# --- white-box calibration: the scale handed to the sampler at every draw site -------

def _recording_gaussian(monkeypatch, module):
    stds = []
    original = module.gaussian_noise

    def recording(key, kind, lo, hi, std, out):
        stds.append(std)
        return original(key, kind, lo, hi, std, out)

    monkeypatch.setattr(module, "gaussian_noise", recording)
    return stds


@pytest.mark.parametrize("params, dimension", [
    ({}, 1), ({"subspace": None}, 5), ({"noise": "iid", "q": 0.0}, 1)])
def test_walk_draws_at_the_calibrated_scale(monkeypatch, params, dimension):
    """Each draw's std in grid units is sqrt(k) Delta / mu, Delta the grid's
    sensitivity (2**6 for one coordinate; 2**9 + sqrt(5)/2 + 2**-20 for 5),
    mu calibrated at delta net of the sampler's share (1 + e^eps) k d eta,
    which moves it by less than 1e-6 here: a scale error above that fails."""
    import skdpval.privacy._mechanism as module
    from skdpval import DPDataValuator

    stds = _recording_gaussian(monkeypatch, module)
    X, y, X_val, y_val = _label_quality_data(60)
    k = 8
    DPDataValuator(n_permutations=k, epsilon=2.0, delta=1e-5, random_state=0,
                   **params).fit(X, y, X_val=X_val, y_val=y_val)
    delta_grid = 64.0 if dimension == 1 else 2.0**9 + math.sqrt(5) / 2 + 2.0**-20
    assert stds and all(s == pytest.approx(math.sqrt(k) * delta_grid / gdp_mu(2.0, 1e-5),
                                           rel=1e-6) for s in stds)


def test_label_quality_draws_at_the_calibrated_scale(monkeypatch):
    import skdpval.privacy._mechanism as module

    stds = _recording_gaussian(monkeypatch, module)
    X, y, X_val, y_val = _label_quality_data(60)
    DPLabelQuality(epsilon=0.5, clip=3.0).fit(X, y, X_val=X_val, y_val=y_val)
    assert stds == [pytest.approx(64 / gdp_mu(0.5, 5e-5), rel=1e-6)]


def test_federated_draws_at_the_calibrated_scale(monkeypatch):
    import skdpval.privacy._mechanism as module
    from skdpval import DPFederatedValuator

    stds = _recording_gaussian(monkeypatch, module)
    X, y, X_val, y_val = _label_quality_data(60)
    groups = np.arange(60) % 5
    DPFederatedValuator(n_rounds=4, n_permutations_per_round=2, epsilon=1.0,
                        random_state=0).fit(X[:, :3], y, groups=groups,
                                            X_val=X_val[:, :3], y_val=y_val)
    # 4 parameters (3 features and the intercept), any-two-apart rounding:
    # j = 9, Delta = 2**9 + 2 + 2**-20.
    expected = math.sqrt(4) * (2.0**9 + 2 + 2.0**-20) / gdp_mu(1.0, 5e-5)
    assert len(stds) == 4 and all(s == pytest.approx(expected, rel=1e-6) for s in stds)


def test_layered_draws_at_the_calibrated_scale(monkeypatch):
    import skdpval.privacy._mechanism as module

    scales = []
    original = module.laplace_noise

    def recording(key, kind, scale, size):
        scales.append(scale)
        return original(key, kind, scale, size)

    monkeypatch.setattr(module, "laplace_noise", recording)
    rng = np.random.default_rng(0)
    LayeredShapleyValuator(alpha=0.3, epsilon=0.7, random_state=0,
                           validation_fraction=0.25).fit(rng.random((24, 3)),
                                                         np.tile([0, 1], 12))
    # The rounded value's integer sensitivity is 2**8 + 1 grid steps: exactly
    # 0.7-DP at scale 257 / 0.7 (as rationals).
    assert scales == [Fraction(257) / Fraction(0.7)]


@pytest.mark.parametrize("std, clip", [(0.0, 1.0), (1e-320, 1.0), (1e-300, 1e100),
                                       (1.0, 1e-320), (np.inf, 1.0)])
def test_a_noise_std_the_sampler_cannot_draw_is_refused(std, clip):
    from skdpval.privacy._secure_noise import Grid, check_noise_std

    with pytest.raises(ValueError, match="outside the floats the sampler draws"):
        check_noise_std(std, Grid(clip, 1), "noise_multiplier * clip_norm")
    assert check_noise_std(0.5, Grid(1.0, 1), "noise_multiplier * clip_norm") == 0.5


@pytest.mark.parametrize("sigma", [0.3, 2.0, 150.3, 3e5])
def test_eta_without_the_table_is_the_tables(sigma):
    """The mechanism bounds the sampler's share without building the table."""
    assert sn.rounded_gaussian_eta(sigma) == sn.RoundedGaussianTable(sigma).eta
