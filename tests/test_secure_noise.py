"""Noise that survives floating point: ChaCha20, the rounded Gaussian sampler
(its table's proven bound against the 50+-digit law, the exact path, the law
drawn), the discrete Laplace, releases on a grid, and the floating-point attack."""

import math
import random
from decimal import Context, Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from numpy.testing import assert_array_equal
from scipy.stats import chi2

from skdpval import DPLabelQuality, LayeredShapleyValuator
from skdpval.privacy import _exact_law as exact_law
from skdpval.privacy import _secure_noise as sn
from skdpval.privacy._discrete_laplace import discrete_laplace
from skdpval.privacy._grid import Grid
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


# Today's first draws of noise_seed 1, stream (WALK, 0), sigma 1: unchanged by the
# exact path (the same words, the same inversion wherever the old table was right).
PINNED_DRAWS = [-1.0, -1.0, 0.0, -1.0, -1.0, -1.0, -2.0, -1.0, 0.0, -1.0, 0.0, 1.0]


# --- the rounded Gaussian: the exact law (50+ digits) and the table's proven bound -----

# Scales (grid steps) from 1 to 10^6; the 50-digit law of _exact_law is the
# reference (itself checked against mpmath at 100 digits below).
SIGMA_GRID = [1.0, 1.5, 2.0, 3.7, 10.0, 31.6, 150.3, 1000.0, 4321.5, 3.0e4, 1.0e5,
              3.0e5, 1.0e6]


@pytest.fixture(scope="module")
def tables():
    cache = {}

    def get(sigma):
        if sigma not in cache:
            cache[sigma] = sn.RoundedGaussianTable(sigma)
        return cache[sigma]
    return get


def test_pi_bounds_hold_50_digits_of_pi():
    lo, hi = exact_law.pi_bounds(400)
    assert hi - lo <= 2
    pi50 = Fraction("3.14159265358979323846264338327950288419716939937510")
    slack = Fraction(1, 10**50)
    assert Fraction(lo, 2**400) - slack <= pi50 <= Fraction(hi, 2**400) + slack


def test_exact_cdf_against_mpmath():
    """_exact_law.abs_cdf at 60 digits against mpmath's erf at 100 (a test
    extra: mpmath comes with dp-accounting), within its stated error."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 100
    cases = [(s, k) for s in SIGMA_GRID for k in
             {0, 1, int(0.5 * s), int(s), int(3 * s), int(7.7 * s), int(9.9 * s),
              int(12 * s)}]
    cases += [(0.3, 0), (0.3, 2), (2.0, 60), (1e6, 28_000_000)]
    for sigma, k in cases:
        value, error = exact_law.abs_cdf(sigma, k, 60)
        assert error <= Fraction(1, 10**60)
        x = mpmath.mpf(2 * k + 1) / (2 * mpmath.mpf(sigma) * mpmath.sqrt(2))
        reference = Fraction(mpmath.nstr(mpmath.erf(x), 95, strip_zeros=False))
        assert abs(Fraction(value) - reference) <= error + Fraction(1, 10**90), (sigma, k)


def test_exact_probabilities_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 120
    for sigma, m in [(1.0, 0), (1.0, 5), (1.0, 12), (150.3, 1503), (1e6, 9_000_000),
                     (1e6, 12_000_000), (4321.5, 0)]:
        value, error = exact_law.probability(sigma, m, 50)
        s = mpmath.mpf(sigma) * mpmath.sqrt(2)
        if m == 0:
            reference = mpmath.erf(mpmath.mpf(1) / (2 * s))
        else:
            reference = (mpmath.erfc((m - mpmath.mpf(0.5)) / s)
                         - mpmath.erfc((m + mpmath.mpf(0.5)) / s)) / 2
        reference = Fraction(mpmath.nstr(reference, 110, strip_zeros=False))
        assert abs(Fraction(value) - reference) <= error + reference / 10**100
        assert error <= Fraction(value) / 10**50


def test_quadrature_rules_are_the_nearest_doubles():
    """The hard-coded rules: each node and weight is the double nearest its
    exact value (recomputed here at 45 digits)."""
    for n in sn.RULE_SIZES:
        nodes, weights = sn._rule(n)
        pairs = exact_law.gauss_legendre(n, 45)
        for (x, w), node, weight in zip(pairs, nodes[::-1], weights[::-1]):
            for double, value in ((node, x / 2), (weight, w / 2)):
                error = abs(Fraction(double) - Fraction(value))
                assert error <= Fraction(math.ulp(double)) / 2 * (1 + Fraction(1, 10**20))
        assert abs(weights.sum() - 1.0) < 1e-15


@pytest.mark.parametrize("sigma", [0.3, 1.0, 10.0, 1000.0, 1e6])
def test_np_exp_is_within_the_assumed_bound_on_the_tables_arguments(sigma, tables):
    """The one assumption of the proof: np.exp within EXP_RELATIVE_ERROR
    (2^-46, 64 ulp) of the exact exp, here on the arguments the table's
    build takes (every node, magnitudes from 0 to the table's end), against
    a correctly rounded 40-digit exp."""
    table = tables(sigma)
    magnitudes = np.unique(np.r_[np.arange(min(table.top, 300) + 1),
                                 np.linspace(0, table.top, 400).astype(int)])
    nodes, _ = sn._rule(table.n_nodes)
    w = 1.0 / sigma
    worst = Fraction(0)
    with localcontext(Context(prec=40)):
        for t in nodes:
            x = (magnitudes + t) * w
            y = (x * -0.5) * x
            for argument, computed in zip(y, np.exp(y)):
                if computed == 0.0:
                    continue
                exact = Decimal(float(argument)).exp()
                worst = max(worst, abs(Fraction(float(computed)) / Fraction(exact) - 1))
    print(f"sigma={sigma}: np.exp's largest relative error {float(worst):.3g} "
          f"({float(worst) / 2**-53:.2f} u), assumed {sn.EXP_RELATIVE_ERROR:.3g}")
    assert worst <= Fraction(sn.EXP_RELATIVE_ERROR)


@pytest.mark.parametrize("sigma, m, n", [(1.0, 10, 2), (1.0, 10, 4), (1.0, 3, 6),
                                         (10.0, 90, 2), (10.0, 60, 3), (150.3, 1500, 2)])
def test_quadrature_bound_bounds_the_exact_rule(sigma, m, n):
    """The exact n-point rule (45-digit nodes, Decimal arithmetic) against the
    exact P(m): its relative error is within quadrature_bound."""
    pairs = exact_law.gauss_legendre(n, 45)
    nodes = list(pairs) + [(-x, w) for x, w in pairs if x != 0]
    w = Fraction(1) / Fraction(sigma)
    with localcontext(Context(prec=60)):
        scale = Decimal(w.numerator) / Decimal(w.denominator)
        total = sum(Decimal(weight) / 2 * (-((Decimal(m) + x / 2) * scale) ** 2 / 2).exp()
                    for x, weight in nodes)
        pi = Decimal(exact_law.pi_bounds(200)[0]) / Decimal(2**200)
        rule = total * scale / (2 * pi).sqrt()
    truth, _ = exact_law.probability(sigma, m, 40)
    relative = abs(Fraction(rule) / Fraction(truth) - 1)
    assert relative <= Fraction(sn.quadrature_bound(0.5 * m / sigma**2,
                                                    0.125 / sigma**2, n))


@pytest.mark.parametrize("sigma", SIGMA_GRID)
def test_probabilities_within_their_proven_relative_error(sigma, tables):
    """P~(m) of the table's rule against the 50-digit P(m), on the grid of
    scales (1 to 10^6 grid steps) and magnitudes to the table's end."""
    table = tables(sigma)
    top = table.top
    magnitudes = sorted({0, 1, 2, top, top - 1}
                        | {int(v) for v in np.linspace(0, top, 25)}
                        | {int(v) for v in np.geomspace(1, top, 25)})
    computed = sn.rounded_gaussian_probabilities(sigma, magnitudes, table.n_nodes)
    worst = 0
    for m, p in zip(magnitudes, computed):
        truth, _ = exact_law.probability(sigma, m, 50)
        worst = max(worst, abs(Fraction(float(p)) / Fraction(truth) - 1))
    print(f"sigma={sigma}: n={table.n_nodes}, largest relative error "
          f"{float(worst):.3g}, proven bound {table.relative_error:.3g}")
    assert worst <= Fraction(table.relative_error) <= Fraction(sn.R_MAX)


@pytest.mark.parametrize("sigma", SIGMA_GRID + [0.3, 0.1, 0.05, 1e-3])
def test_table_entries_within_their_bound(sigma, tables):
    """|C[k] - 2^63 F(k)| <= E_k (the bound the kernel decides with), F(k)
    at 60 digits, at the first, the last and sampled entries."""
    table = tables(sigma)
    cdf = table.cdf
    assert cdf[-1] == np.uint64(2**63) and np.all(np.diff(cdf.astype(object)) >= 0)
    n = len(cdf)
    ks = sorted({0, 1, n - 1, n - 2, n - 3} | {int(v) for v in np.linspace(0, n - 1, 40)}
                | {max(n - 1 - int(v), 0) for v in np.geomspace(1, n, 20)})
    worst = 0.0
    for k in [k for k in ks if 0 <= k < n]:
        value, error = exact_law.abs_cdf(sigma, k, 60)
        gap = abs(int(cdf[k]) - Fraction(value) * 2**63) + error * 2**63
        assert gap <= table.bound(k), (k, float(gap), table.bound(k))
        worst = max(worst, float(gap / table.bound(k)))
    print(f"sigma={sigma}: largest error / bound = {worst:.3g}")


def test_eta_is_the_formula_and_far_below_the_shares_that_matter():
    """eta = (29 sigma + 4) 2^-574 (no floor); the issue's reproducers (65,000
    and 1,057,000 draws a party at epsilon 10, delta 5e-5) put the sampler's
    share of delta far below 1% of it."""
    for sigma in [1e-3, 1.0, 1e6, 1e12]:
        assert sn.rounded_gaussian_eta(sigma) == (29 * sigma + 4) * 2.0**-574
        assert sn.rounded_gaussian_eta(sigma) < 1e-150
    for draws, sigma in [(65_000, 3e4), (1_057_000, 1.2e5), (1000, 949.0)]:
        share = sn.sampler_delta(sn.rounded_gaussian_eta(sigma), draws, 10.0)
        assert share < 0.01 * 5e-5 and share < 1e-140


@pytest.mark.parametrize("sigma", [0.3, 2.0, 150.3, 3e5])
def test_eta_without_the_table_is_the_tables(sigma):
    """The mechanism bounds the sampler's share without building the table."""
    assert sn.rounded_gaussian_eta(sigma) == sn.RoundedGaussianTable(sigma).eta


# --- the draws: the exact law, reproducible, the exact path --------------------------------

def _exact_law_cells(sigma, support):
    """P(M = m) for m in -support..support (20 digits) and the two tails."""
    p = {m: float(exact_law.probability(sigma, m, 20)[0]) for m in range(support + 1)}
    probabilities = np.array([p[abs(m)] for m in range(-support, support + 1)])
    tail = (1.0 - float(exact_law.abs_cdf(sigma, support, 30)[0])) / 2
    return np.r_[tail, probabilities, tail]


def _chi_square(draws, sigma, min_expected=20):
    support = int(math.ceil(6 * sigma)) + 1
    law = _exact_law_cells(sigma, support)
    counts = np.bincount(np.clip(draws.astype(np.int64), -support - 1, support + 1)
                         + support + 1, minlength=2 * support + 3)
    expected = law * len(draws)
    # pool the sparse tails inwards until each cell expects min_expected
    keep = expected >= min_expected
    first, last = np.argmax(keep), len(keep) - 1 - np.argmax(keep[::-1])
    observed = np.r_[counts[:first + 1].sum(), counts[first + 1:last], counts[last:].sum()]
    expected = np.r_[expected[:first + 1].sum(), expected[first + 1:last],
                     expected[last:].sum()]
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    return statistic, len(observed) - 1, float(chi2.sf(statistic, len(observed) - 1))


@pytest.mark.parametrize("sigma", [1.5, 40.0])
def test_chi_square_of_10_million_draws_against_the_exact_law(sigma):
    """10^7 draws (8 streams of 1.25 10^6) against the exact law (20 digits):
    the fixed key's p-value is far from 0; scale errors of 0.8 and 0.5 (the
    mutation table's) are rejected on 10^6 draws."""
    key = sn.noise_key(45)
    out = np.empty((8, 1_250_000))
    sn.walk_noise(key, sn.WALK, 0, 8, sn.RoundedGaussianTable(sigma), out)
    statistic, dof, p_value = _chi_square(out.ravel(), sigma)
    print(f"sigma={sigma}: chi2={statistic:.1f}, dof={dof}, p={p_value:.3g}")
    assert p_value > 1e-3
    for factor in (0.8, 0.5):
        wrong = np.empty((1, 1_000_000))
        sn.walk_noise(key, sn.WALK, 9, 10, sn.RoundedGaussianTable(factor * sigma), wrong)
        assert _chi_square(wrong.ravel(), sigma)[2] < 1e-6


@pytest.mark.parametrize("sigma", [1.0, 40.0, 4321.5])
def test_bit_reproducible_with_noise_seed_and_independent_of_scheduling(sigma, tables):
    """The same key (noise_seed) gives the same bits, whatever the ranges of
    streams a call draws; another key other draws."""
    table = tables(sigma)
    key = sn.noise_key(1)
    whole, again, part = np.empty((6, 1000)), np.empty((6, 1000)), np.empty((2, 1000))
    sn.walk_noise(key, sn.WALK, 0, 6, table, whole)
    sn.walk_noise(sn.noise_key(1), sn.WALK, 0, 6, sn.RoundedGaussianTable(sigma), again)
    sn.walk_noise(key, sn.WALK, 3, 5, table, part)
    assert_array_equal(whole, again)
    assert_array_equal(part, whole[3:5])
    assert not np.array_equal(whole[0], whole[1])
    other = np.empty((6, 1000))
    sn.walk_noise(sn.noise_key(2), sn.WALK, 0, 6, table, other)
    assert not np.array_equal(other, whole)
    # A fixed seed's draws are pinned: a change of the stream layout or of the
    # law drawn shows here.
    if sigma == 1.0:
        assert whole[0, :12].tolist() == PINNED_DRAWS


@pytest.mark.parametrize("sigma", [0.1, 0.3, 1.0, 2.5, 150.3, 1e6])
def test_forced_exact_path_gives_the_same_draws(sigma, tables):
    """The test hook: every draw undecided and settled by 45-200-digit
    comparisons alone (no table shortcut). The draws equal the fast path's:
    the fast path is the exact inversion."""
    table = tables(sigma)
    key = sn.noise_key(7)
    fast, slow = np.empty((2, 150)), np.empty((2, 150))
    assert sn.walk_noise(key, sn.WALK, 40, 42, table, fast) == 0
    count = sn.walk_noise(key, sn.WALK, 40, 42, table, slow, force_exact=True)
    assert count == slow.size
    assert_array_equal(fast, slow)


def _brute_inverse(sigma, v):
    """min {k : F(k) > U}, U in [v, v + 1) 2^-575, by exact comparisons only
    (F at 200 digits), independent of the table: bisection on
    [-1, 30 sigma + 30] (F(30 sigma + 30) > U for every v < 2^575 - 1)."""
    bits = sn.U_BITS + 40

    def greater(j):
        lo, hi = exact_law.abs_cdf_bounds(sigma, j, bits)
        if lo >= (v + 1) << 40:
            return True
        if hi <= v << 40:
            return False
        raise AssertionError("tie")
    low, high = -1, int(30 * sigma) + 30
    assert greater(high)
    while high - low > 1:
        middle = (low + high) // 2
        if greater(middle):
            high = middle
        else:
            low = middle
    return high


@pytest.mark.parametrize("sigma", [1.0, 3.7, 150.3, 4321.5])
def test_undecided_draws_are_resolved_exactly(sigma, tables):
    """Uniforms placed at the table's entries (u = C[k] + delta, |delta| up
    to a few E_k, the 512 further bits random) settle on the exact inversion,
    against a brute-force search on the 200-digit F alone."""
    table = tables(sigma)
    rng = random.Random(int(sigma * 10))
    n = len(table.cdf)
    ks = sorted({0, 1, n // 3, n // 2, n - 3, n - 2, n - 1}
                | {rng.randrange(n) for _ in range(8)})
    checked = 0
    for k in [k for k in ks if k >= 0]:
        c, e = int(table.cdf[k]), table.bound(k)
        for delta in (-2 * e, -e - 1, -e, -1, 0, 1, e - 1, e, 3 * e):
            u = min(max(c + delta, 0), 2**63 - 1)
            v = (u << sn.EXTRA_BITS) | rng.getrandbits(sn.EXTRA_BITS)
            guess = int(np.searchsorted(table.cdf_s, np.uint64(u), side="right")) - 1
            assert table.invert(u, v, guess) == _brute_inverse(sigma, v)
            checked += 1
    assert checked >= 60 and table.n_ties == 0


def test_a_table_wrong_within_its_bound_still_samples_exactly(tables):
    """Entries moved by up to 2^50 units (and e0 raised by as much): the draws
    do not change. The table only guides; the bound decides."""
    sigma = 40.0
    key = sn.noise_key(11)
    reference = np.empty((4, 2000))
    sn.walk_noise(key, sn.WALK, 0, 4, tables(sigma), reference)
    moved = sn.RoundedGaussianTable(sigma)
    shift = np.random.default_rng(0).integers(-2**50, 2**50, len(moved.cdf) - 1)
    moved.cdf_s[1:-1] = (moved.cdf_s[1:-1].astype(np.int64) + shift).astype(np.uint64)
    moved.cdf_s[1:] = np.maximum.accumulate(moved.cdf_s[1:])
    moved.e0 += 2**50 + 2**10  # (D >> 41) moves by at most 2^9 + 1 as well
    starts = np.arange(len(moved.guide), dtype=np.uint64) << np.uint64(moved.shift)
    moved.guide = np.searchsorted(moved.cdf_s, starts, side="right").astype(np.int64)
    out = np.empty((4, 2000))
    assert sn.walk_noise(key, sn.WALK, 0, 4, moved, out) > 50
    assert_array_equal(out, reference)


def test_draws_beyond_the_table_are_exact():
    """A table computed to 1 sigma only: a third of the draws land past it and
    are settled exactly (galloping on the exact F); the draws equal those of
    the full table."""
    sigma = 3.0
    full = sn.RoundedGaussianTable(sigma)
    short = sn.RoundedGaussianTable(sigma, tail_sigmas=1.0)
    assert len(short.cdf) < len(full.cdf)
    key = sn.noise_key(5)
    a, b = np.empty((2, 1500)), np.empty((2, 1500))
    sn.walk_noise(key, sn.WALK, 0, 2, full, a)
    assert sn.walk_noise(key, sn.WALK, 0, 2, short, b) > 500
    assert_array_equal(a, b)
    assert np.abs(a).max() > len(short.cdf)


def test_extra_words_come_from_the_documented_stream():
    """Draw j = 8 b + d of stream (kind, t) takes block b of stream
    (2^31 | d << 16 | kind, t mod 2^32, t >> 32), its 16 words most
    significant first; those nonces never equal a main stream's."""
    key = sn.noise_key(3)
    kind, t, j = sn.WALK, 2**33 + 17, 8 * 5 + 3
    nonce = np.array([2**31 | 3 << 16 | kind, t & 0xFFFFFFFF, t >> 32], np.uint64)
    block = np.empty(16, np.uint64)
    sn.chacha20_block(key, 5, nonce, block)
    assert sn.extra_bits(key, kind, t, j) == int("".join(f"{int(w):08x}" for w in block), 16)
    assert_array_equal(sn.exact_nonce(kind, t, 3), nonce)
    assert int(sn.exact_nonce(kind, t, 0)[0]) >= 2**31 > max(sn.WALK, sn.ROUNDING)
    with pytest.raises(ValueError, match="kind must be below"):
        sn.exact_nonce(2**16, 0, 0)


@pytest.mark.parametrize("sigma, limit", [(1e3, 1e-9), (1e6, 1e-6)])
def test_the_exact_path_is_rare(sigma, limit, tables):
    """P(undecided) <= sum_k min(width_k, E_{k-1} + E_k) / 2^63, from the
    table: about 2^-40 E|M|."""
    table = tables(sigma)
    c = table.cdf_s.astype(np.float64)
    e = (((np.uint64(2**63) - table.cdf_s) >> np.uint64(table.rshift))
         + np.uint64(table.e0)).astype(float)
    probability = float(np.sum(np.minimum(np.diff(c), e[:-1] + e[1:])) / 2**63)
    print(f"sigma={sigma}: P(exact path) <= {probability:.3g}")
    assert probability < limit


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


# --- the discrete Laplace ------------------------------------------------------------

def test_discrete_laplace_has_the_exact_law():
    """P(x) = (1 - e^(-1/t)) / (1 + e^(-1/t)) e^(-|x|/t): chi-square on 20,000 draws."""
    t = Fraction(5, 2)
    draws = discrete_laplace(sn.noise_key(0), sn.stream_nonce(sn.LAYERED), t, 20_000)
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
    gamma, bound = Grid(0.7, 1).gamma, 64.0
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
    # The largest |m| the sampler returns: F(k) > 1 - 2^-575 past 28.3 sigma.
    support = int(28.3 * std / gamma) + 2
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
    grid = Grid(clip, dimension)
    rng = np.random.default_rng(dimension)
    values = rng.uniform(-clip, clip, 4000) / math.sqrt(dimension)
    m = sn.rounded_gaussian(sn.noise_key(0), sn.stream_nonce(sn.WALK), std / grid.gamma,
                            np.empty(4000))
    released = releases_on_grid(values, m, grid.gamma, grid.bound, np.empty(4000))
    support = int(28.3 * std / grid.gamma) + 2
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
    # LogisticRegression: 5 parameters (the default may choose a network).
    DPDataValuator(LogisticRegression(), n_permutations=k, epsilon=2.0, delta=1e-5,
                   random_state=0,
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
    from skdpval.privacy._grid import check_noise_std

    with pytest.raises(ValueError, match="outside the floats the sampler draws"):
        check_noise_std(std, Grid(clip, 1), "noise_multiplier * clip_norm")
    assert check_noise_std(0.5, Grid(1.0, 1), "noise_multiplier * clip_norm") == 0.5
