"""Noise that survives floating point, from a cryptographically secure generator.

A release is ``gamma * (a + m)``: ``a = rint(stat / gamma)`` is the clipped
statistic on the grid ``gamma = sensitivity * 2**-j`` and ``m`` integer noise.
The double released is ``fl(gamma * n)`` for the integer ``n = a + m``
(``|n| < 2**52``), an injective function of ``n`` that does not depend on the
data, so the floating-point value says nothing beyond ``n`` (the attack of
Mironov 2012 finds nothing to exploit).

- **Rounded Gaussian** (every Gaussian release): ``m = round(N(0, sigma_g^2))``.
  For an integer ``a``, ``a + round(N) = round(a + N)``: the release is
  post-processing of the continuous Gaussian mechanism ``a + N``, whose L2
  sensitivity is that of ``a`` in grid units, so the mu-GDP accounting of
  :mod:`skdpval.privacy._accounting` holds exactly with that sensitivity
  (:func:`skdpval.privacy._grid.grid_sensitivity`). The discrete Gaussian
  would need another accountant and more noise. ``|m|`` is drawn by inverting its cumulative
  distribution ``F`` at a uniform ``U``: a 63-bit table with a proven error
  bound (:class:`RoundedGaussianTable`) decides almost every draw exactly;
  a draw within that bound of an entry takes 512 more bits of ``U`` from its
  own stream and ``F`` to 45-200 digits (:mod:`skdpval.privacy._exact_law`),
  past the table too. The law drawn is within total variation ``eta =
  (29 sigma + 4) 2^-574`` of the exact one per draw
  (:func:`rounded_gaussian_eta`); ``k`` coordinates drawn for a party are
  within ``k eta``, which adds ``(1 + e^eps) k eta`` to delta
  (:func:`sampler_delta`). The proof is in the user guide's privacy model
  page (doc/user_guide/privacy_model.rst).
- **Discrete Laplace** (pure eps-DP releases): the exact sampler of Canonne,
  Kamath and Steinke (2020, Algorithms 1-2) in integer arithmetic
  (:mod:`skdpval.privacy._discrete_laplace`); with an integer L1 sensitivity
  ``Delta`` and scale ``t`` it is exactly ``(Delta / t)``-DP.

The bits come from ChaCha20 (RFC 8439), keyed with 32 bytes of OS entropy
(:func:`noise_key`), or, as an explicit opt-in, with the SHA-256 of a
``noise_seed``. Stream ``(kind, t)`` is the block sequence of nonce
``(kind, t mod 2**32, t >> 32)``: the walk's permutation ``t`` draws from its
own stream, so its noise does not depend on scheduling. The exact path's
further bits come from streams of their own (:func:`exact_nonce`).

References: I. Mironov, "On significance of the least significant bits for
differential privacy", CCS 2012. C. Canonne, G. Kamath, T. Steinke, "The
discrete Gaussian for differential privacy", NeurIPS 2020. Y. Nir, A.
Langley, "ChaCha20 and Poly1305 for IETF protocols", RFC 8439.
"""

import hashlib
import math
import secrets
from fractions import Fraction
from functools import lru_cache

import numpy as np
from numba import njit

from ._exact_law import abs_cdf, gauss_legendre_doubles, probability

_jit = dict(cache=True, nogil=True)
# The stream's kernels: no reference counting and no error checks (they
# allocate nothing and divide nothing), the quarter round inlined by LLVM;
# each flag takes code out of their compilation.
_stream = dict(_jit, error_model="numpy", no_cfunc_wrapper=True, _nrt=False)

# Stream kinds: the first word of the nonce. ROUNDING: secret coins that are
# not noise (the federated quantization's stochastic rounding).
WALK, LABEL_SCORE, FEDERATED, LAYERED, PUBLIC_FIT, ROUNDING = 1, 2, 3, 4, 5, 6

# --- ChaCha20 (RFC 8439, section 2.3) --------------------------------------------

_M32 = np.uint64(0xFFFFFFFF)
_CONSTANTS = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], np.uint64)


@njit(forceinline=True, no_cpython_wrapper=True, **_stream)
def _quarter_round(a, b, c, d):
    """RFC 8439's quarter round on four 32-bit words (held in uint64): its
    rotations written out (a helper for them costs more to compile than it
    saves to read)."""
    a = (a + b) & _M32
    d ^= a
    d = ((d << np.uint64(16)) | (d >> np.uint64(16))) & _M32
    c = (c + d) & _M32
    b ^= c
    b = ((b << np.uint64(12)) | (b >> np.uint64(20))) & _M32
    a = (a + b) & _M32
    d ^= a
    d = ((d << np.uint64(8)) | (d >> np.uint64(24))) & _M32
    c = (c + d) & _M32
    b ^= c
    b = ((b << np.uint64(7)) | (b >> np.uint64(25))) & _M32
    return a, b, c, d


@njit(**_stream)
def chacha20_block(key, counter, nonce, out):
    """The 16 output words of block ``counter`` into ``out`` (uint64 holding 32 bits).

    ``key`` (8 words) and ``nonce`` (3 words) as uint64. The state lives in
    16 local variables (registers), the rounds written out.
    """
    for i in range(4):
        out[i] = _CONSTANTS[i]
    for i in range(8):
        out[4 + i] = key[i]
    out[12] = np.uint64(counter) & _M32
    for i in range(3):
        out[13 + i] = nonce[i]
    (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14,
     x15) = (out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7],
             out[8], out[9], out[10], out[11], out[12], out[13], out[14], out[15])
    for _ in range(10):
        x0, x4, x8, x12 = _quarter_round(x0, x4, x8, x12)
        x1, x5, x9, x13 = _quarter_round(x1, x5, x9, x13)
        x2, x6, x10, x14 = _quarter_round(x2, x6, x10, x14)
        x3, x7, x11, x15 = _quarter_round(x3, x7, x11, x15)
        x0, x5, x10, x15 = _quarter_round(x0, x5, x10, x15)
        x1, x6, x11, x12 = _quarter_round(x1, x6, x11, x12)
        x2, x7, x8, x13 = _quarter_round(x2, x7, x8, x13)
        x3, x4, x9, x14 = _quarter_round(x3, x4, x9, x14)
    state = (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15)
    for i in range(16):  # a loop, not sixteen lines: less to compile
        out[i] = (out[i] + state[i]) & _M32


@njit(**_jit)
def chacha20_words(key, nonce, n_words, out):
    """The first ``n_words`` words of stream ``nonce`` (counter from 0) into ``out``."""
    block = np.empty(16, np.uint64)
    for b in range((n_words + 15) // 16):
        chacha20_block(key, b, nonce, block)
        left = n_words - 16 * b
        for i in range(left if left < 16 else 16):
            out[16 * b + i] = block[i]


def noise_key(noise_seed):
    """The ChaCha20 key (8 words, uint64): 32 bytes of OS entropy, or from ``noise_seed``.

    ``noise_seed`` (an int, explicit opt-in) gives ``SHA-256("skdpval noise
    key" || seed)``: reproducible noise, secret only while the seed is.
    """
    if noise_seed is None:
        raw = secrets.token_bytes(32)
    else:
        raw = hashlib.sha256(b"skdpval noise key\x00"
                             + int(noise_seed).to_bytes(16, "little")).digest()
    return np.frombuffer(raw, dtype="<u4").astype(np.uint64)


def stream_nonce(kind, t=0):
    """The nonce of stream ``(kind, t)``: 3 words."""
    return np.array([kind, t & 0xFFFFFFFF, t >> 32], np.uint64)


def uniform_coins(key, nonce, size):
    """``size`` secret uniforms in ``[0, 1)`` from stream ``nonce``: the
    ``i``-th from the stream's words ``2 i`` (high) and ``2 i + 1`` (low),
    a 64-bit word ``w``, as ``(w >> 11) 2**-53`` (its top 53 bits: each of
    the ``2**53`` doubles ``j 2**-53`` with probability ``2**-53``, exactly)."""
    words = np.empty(2 * size, np.uint64)
    chacha20_words(key, nonce, 2 * size, words)
    draws = (words[0::2] << np.uint64(32)) | words[1::2]
    return (draws >> np.uint64(11)).astype(np.float64) * 2.0**-53


# --- the rounded Gaussian: the table and its proven bound ---------------------------

# Each computed probability P~(m) of a table is within its proven relative error
# ``RoundedGaussianTable.relative_error <= R_MAX`` of P(m); the table's entries
# are then within E_k = ((2^63 - C[k]) >> R_SHIFT) + e0 units of 2^63 F(k),
# 2^-R_SHIFT >= R_MAX / (1 - R_MAX) (doc/user_guide/privacy_model.rst).
R_MAX = 2.0**-42
R_SHIFT = 41
# The one assumption of the bound: numpy's float64 exp within 2^-46 (64 ulp)
# of the exact exp on the table's arguments. tests/test_secure_noise.py
# measures it on the tables' own arguments; the bound would still hold with
# exp several hundred ulp off.
EXP_RELATIVE_ERROR = 2.0**-46
_UNIT = 2.0**-53  # the unit roundoff of float64
# The table is computed to this many sigmas; past it a draw is decided by the
# exact path (probability 2 Phi(-10), 1.5e-23, a draw). Its entries below
# 2^63 stop near 9.15 sigma whatever the reach (2^63 times the mass beyond is
# then below 1/2), so a longer reach would only cost build time.
TAIL_SIGMAS = 10.0
# The exact path: 512 more bits of the uniform (one ChaCha20 block of the
# exact stream, exact_nonce), so U is known to 63 + 512 bits; F(k) is bounded
# at 45 digits, then at 200.
EXTRA_BITS = 512
U_BITS = 63 + EXTRA_BITS
_GUARD = 8
PRECISIONS = (45, 200)
# The exact path's stream for draw j = 8 b + d of stream (kind, t): nonce
# (EXACT_STREAM | d << 16 | kind, t mod 2^32, t >> 32), block b.
EXACT_STREAM = 1 << 31
_TWO63 = 1 << 63


def exact_nonce(kind, t, d):
    """The nonce of the exact path's stream for draws ``8 b + d`` of stream
    ``(kind, t)`` (``d < 8``): its block ``b`` holds the 512 further bits of
    that draw's uniform. Disjoint from every main stream (whose first word is
    a kind below ``2**16``) and from one another."""
    if not (0 <= kind < 1 << 16 and 0 <= d < 8):
        raise ValueError(f"kind must be below 2**16 and d below 8, got {kind}, {d}.")
    return np.array([EXACT_STREAM | d << 16 | kind, t & 0xFFFFFFFF, t >> 32], np.uint64)


def _gamma(n):
    """Higham's ``gamma_n = n u / (1 - n u)``."""
    return n * _UNIT / (1.0 - n * _UNIT)


@lru_cache(maxsize=None)
def _rule(n):
    """The ``n``-point Gauss-Legendre rule on [-1/2, 1/2] (weights summing to
    1): the doubles nearest the exact nodes and weights."""
    nodes, weights = gauss_legendre_doubles(n)
    return np.array(nodes), np.array(weights)


_RHOS = np.geomspace(1.001, 1e12, 3000)


def quadrature_bound(c, d, n):
    """A bound on the relative error of the exact ``n``-point Gauss rule for
    ``int_{-1}^{1} exp(-c t - d t^2) dt`` (``c, d >= 0``).

    The integrand is entire; on the Bernstein ellipse ``E_rho`` (semi-axes
    ``a = (rho + 1/rho) / 2``, ``b = (rho - 1/rho) / 2``) it is at most ``M =
    exp(c a + d b^2)``, so its Chebyshev coefficients are at most ``2 M
    rho^-k`` (Trefethen, ATAP Thm 8.1). The rule integrates degree ``2n - 1``
    exactly and odd ``T_k`` to 0 (symmetric nodes), and ``|I(T_k)|,
    |I_n(T_k)| <= 2``: the error is at most ``8 M rho^-2n / (1 - rho^-2)``.
    The integral is at least ``e^-d 2 sinh(c) / c``. The least over a grid
    of ``rho`` (each gives a valid bound), plus 1% for this computation's
    rounding.
    """
    rho = _RHOS
    a = 0.5 * (rho + 1.0 / rho)
    b = 0.5 * (rho - 1.0 / rho)
    if c > 1e-8:
        log_sinhc_over_c = c + math.log1p(-math.exp(-2.0 * c)) - math.log(2.0 * c)
    else:
        log_sinhc_over_c = 0.0  # sinh(c) / c >= 1
    log_integral = -d + math.log(2.0) + max(log_sinhc_over_c, 0.0)
    log_bound = (math.log(8.0) + c * a + d * b * b - log_integral
                 - 2.0 * n * np.log(rho) - np.log1p(-rho**-2.0))
    best = float(np.min(log_bound))
    return math.exp(best) * 1.01 if best < 700.0 else math.inf


def evaluation_bound(y_max, n, slope):
    """The relative error of :func:`rounded_gaussian_probabilities` against
    the exact ``n``-point rule, from floating point (Higham's ``gamma_n``).

    ``y_max``: the largest ``((m + t) / sigma)^2 / 2`` of the table;
    ``slope``: ``(top + 1) / sigma^2``, the largest ``|d log f / dt|``.
    Each exponent is within ``gamma_7`` (relative) of its exact value,
    moving ``exp`` by ``e^(gamma_7 y_max) - 1``; ``exp`` itself is within
    :data:`EXP_RELATIVE_ERROR` (the assumption); the weighted sum of
    positive terms and the prefactor within ``gamma_(n+6)``; the double
    nodes (within ``u/2``) and weights (within ``u``) within ``u (1 + slope)``.
    """
    argument = math.expm1(_gamma(7) * y_max)
    nodes = math.expm1(_UNIT * (1.0 + slope)) * 1.01
    return ((1.0 + EXP_RELATIVE_ERROR) * (1.0 + _gamma(n + 6)) * (1.0 + argument)
            * (1.0 + nodes) - 1.0)


RULE_SIZES = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
# Below this sigma (grid steps) no rule proves R_MAX: exact values instead.
_SMALLEST_RULE_SIGMA = 0.25


def choose_rule(sigma, top):
    """``(n, r)``: the fewest nodes whose proven relative error ``r`` is at
    most :data:`R_MAX` for every ``P(m)``, ``m <= top`` (``n`` None: none
    is, and the table takes exact values, within ``2 u``)."""
    if sigma < _SMALLEST_RULE_SIGMA:
        return None, 2.0 * _UNIT
    w = 1.0 / sigma
    margin = 1.0 + 1e-12
    c, d = 0.5 * top * w * w * margin, 0.125 * w * w * margin
    y_max = 0.5 * ((top + 0.5) * w) * ((top + 0.5) * w) * margin
    slope = (top + 1.0) * w * w * margin
    for n in RULE_SIZES:
        r = ((1.0 + quadrature_bound(c, d, n))
             * (1.0 + evaluation_bound(y_max, n, slope)) - 1.0)
        if r <= R_MAX:
            return n, r
    return None, 2.0 * _UNIT


def rounded_gaussian_probabilities(sigma, magnitudes, n_nodes, scratch=None):
    """``P(m) = Phi((m + 1/2) / sigma) - Phi((m - 1/2) / sigma)`` for ``m >= 0``
    by the ``n_nodes``-point rule on the density over ``[m - 1/2, m + 1/2]``
    (every term positive: relative accuracy), exactly the operations
    :func:`evaluation_bound` counts. ``scratch``: two float64 buffers of
    ``len(magnitudes)``."""
    w = 1.0 / sigma
    m = np.asarray(magnitudes, dtype=np.float64)
    nodes, weights = _rule(n_nodes)
    total = np.zeros(len(m))
    x, y = scratch if scratch is not None else (np.empty(len(m)), np.empty(len(m)))
    for t, weight in zip(nodes, weights):
        np.add(m, t, out=x)
        x *= w
        np.multiply(x, -0.5, out=y)
        y *= x
        np.exp(y, out=y)
        y *= weight
        total += y
    total *= w / math.sqrt(2.0 * math.pi)
    return total


_NEGLIGIBLE = Fraction(1, 10**80)


def _exact_probabilities(sigma, top):
    """``(p, slack)`` for a small sigma: ``P(m)``, ``m <= top``, each the
    double nearest a 20-digit value, except where ``P(|M| >= m) < 10^-80``:
    0 there, and ``slack`` bounds the absolute error those leave in the sums."""
    p, slack = np.zeros(top + 1), Fraction(0)
    for m in range(top + 1):
        if m > 0:
            value, error = abs_cdf(sigma, m - 1, 90)
            if 1 - Fraction(value) + error < _NEGLIGIBLE:
                slack += 1 - Fraction(value) + error
                continue
        p[m] = float(probability(sigma, m, 20)[0])
    return p, float(slack) * 1.01


def _tail_units(sigma, top):
    """An upper bound of ``2^63 P(|M| > top) = 2^64 Q((top + 1/2) / sigma)``
    (Mills: ``Q(x) <= phi(x) / x``), plus 1% for rounding."""
    x = (top + 0.5) / sigma
    if x > 1e150:
        return 0.0
    return 2.0**64 * math.exp(-0.5 * x * x) / (math.sqrt(2.0 * math.pi) * x) * 1.01


class RoundedGaussianTable:
    """The law of ``|round(N(0, sigma^2))|`` as a 63-bit table with a proven bound.

    ``cdf[k]`` (``C[k]``) approximates ``2^63 F(k)``, ``F(k) = P(|M| <= k)``,
    within ``E_k = ((2^63 - C[k]) >> rshift) + e0`` (:meth:`bound`): the
    probabilities by a Gauss-Legendre rule with a proven relative error
    (:func:`choose_rule`), the tail sums accumulated in integers. ``cdf_s``
    is ``cdf`` after a leading 0 (the kernel reads the entry below its answer
    without a branch); entries stop at the first ``C[k] = 2^63``. A draw
    whose 63 bits lie within ``E`` of an entry is decided exactly
    (:meth:`invert`).

    Attributes
    ----------
    sigma, top : float, int
        The scale (grid steps) and the last magnitude computed.
    n_nodes : int or None
        The rule's size (None: exact values).
    relative_error : float
        The proven relative error of each computed probability.
    e0, rshift : int
        The bound's constants.
    cdf_s, cdf, guide, shift
        The table, and the guide to its first entry above ``u >> shift``.
    eta : float
        The total variation from the exact law per draw,
        :func:`rounded_gaussian_eta`.
    n_exact, n_ties : int
        Exact evaluations of ``F`` and ties (``U`` within ``2^-575`` of
        ``F(k)``) met so far.
    """

    def __init__(self, sigma, tail_sigmas=TAIL_SIGMAS):
        if not (np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"the noise std on the grid must be finite and > 0, "
                             f"got {sigma!r}.")
        self.sigma = float(sigma)
        top = int(math.ceil(tail_sigmas * self.sigma)) + 1
        if top >= 1 << 31:
            raise ValueError(f"the noise std on the grid, {sigma!r} steps, would need "
                             f"a table of {top} entries: give a smaller "
                             "noise_multiplier or epsilon closer to the budget.")
        self.top = top
        self.n_nodes, self.relative_error = choose_rule(self.sigma, top)
        m = np.arange(top + 1, dtype=np.float64)
        x, y = np.empty(top + 1), np.empty(top + 1)
        slack = 0.0  # absolute error of the sums beyond the relative one
        if self.n_nodes is None:
            s, slack = _exact_probabilities(self.sigma, top)
        else:
            s = rounded_gaussian_probabilities(self.sigma, m, self.n_nodes, (x, y))
        # s[m] ~ 2^63 P(|M| = m) = 2^64 P(m), m >= 1 (an exact scaling); P(0)
        # is the remainder: only the sums over m > k are used.
        s *= 2.0**64
        s[0] = 0.0
        np.floor(s, out=x)  # the integer parts
        s -= x  # the fractions, exactly
        s *= 2.0**32
        np.floor(s, out=s)
        h = m.view(np.uint64)
        np.copyto(h, x, casting="unsafe")
        g = y.view(np.uint64)
        np.copyto(g, s, casting="unsafe")  # floor(2^32 frac): within 2^-32 of it
        # D[k] = sum_{m > k} h[m] + round(sum_{m > k} frac[m]), in integers.
        np.cumsum(h, out=h)
        np.subtract(h[-1], h, out=h)
        np.cumsum(g, out=g)
        np.subtract(g[-1], g, out=g)
        g += np.uint64(1 << 31)
        g >>= np.uint64(32)
        h += g
        if int(h[0]) >= _TWO63:
            raise ValueError(f"sigma {sigma!r}: the table's mass exceeds one")
        cdf = np.subtract(np.uint64(_TWO63), h, out=h)
        last = int(np.argmax(cdf == np.uint64(_TWO63)))
        self.cdf_s = np.empty(last + 2, np.uint64)
        self.cdf_s[0] = 0
        self.cdf_s[1:] = cdf[:last + 1]
        self.cdf = self.cdf_s[1:]
        # |C[k] - 2^63 F(k)| <= (r D_k + c0) / (1 - r): c0 is the rounding of
        # the sums (1/2 and top 2^-32) and the mass past top.
        c0 = 0.5 + top * 2.0**-32 + _tail_units(self.sigma, top) + 2.0**64 * slack
        self.rshift = R_SHIFT
        self.e0 = 1 + int(math.ceil(c0 * (1.0 + 2.0**-40)))
        self.eta = rounded_gaussian_eta(self.sigma)
        # The guide has as many cells as the entries up to where 2^64 P(m)
        # rounds to 0 (P(m) < 2^-65): a cell holds about half a central
        # entry's mass, one or two steps of the scan.
        reach = math.sqrt(max(2.0 * math.log(2.0**65 / (self.sigma
                                                        * math.sqrt(2 * math.pi))), 1.0))
        cells = min(len(self.cdf_s), reach * self.sigma + 2.0)
        bits = max(1, int(math.ceil(math.log2(cells))) - 1)
        self.shift = 63 - bits
        starts = np.arange(2**bits, dtype=np.uint64) << np.uint64(self.shift)
        self.guide = np.searchsorted(self.cdf_s, starts, side="right").astype(np.int64)
        self._exact = {}
        self.n_exact = 0
        self.n_ties = 0

    def bound(self, k):
        """``E_k`` (units of 2^-63): ``|C[k] - 2^63 F(k)| <= E_k``, ``k < len(cdf)``."""
        return ((_TWO63 - int(self.cdf[k])) >> self.rshift) + self.e0

    def exact_bounds(self, k, digits):
        """Integers ``(lo, hi)``: ``lo <= F(k) 2^(575 + 8) <= hi`` (``F`` to
        ``digits`` digits; kept)."""
        key = (k, digits)
        if key not in self._exact:
            self.n_exact += 1
            value, error = abs_cdf(self.sigma, k, digits)
            exact = Fraction(value)
            scale = 1 << (U_BITS + _GUARD)
            self._exact[key] = (math.floor((exact - error) * scale),
                                math.ceil((exact + error) * scale))
        return self._exact[key]

    def greater(self, k, u, v, use_table=True):
        """Is ``F(k) > U``, for ``U`` in ``[v, v + 1) 2^-575`` (``u = v >> 512``)?

        By the table when ``u`` is ``E_k`` away from ``C[k]``, else by
        ``F(k)``'s exact bounds; a tie (``F(k)``'s 200-digit bounds meet
        ``U``'s interval) counts as True and in ``n_ties``.
        """
        if k < 0:
            return False
        if use_table and k < len(self.cdf):
            c, e = int(self.cdf[k]), self.bound(k)
            if c - u > e:
                return True
            if u - c >= e:
                return False
        low, high = v << _GUARD, (v + 1) << _GUARD
        for digits in PRECISIONS:
            lo, hi = self.exact_bounds(k, digits)
            if lo >= high:
                return True
            if hi <= low:
                return False
        self.n_ties += 1
        return True

    def invert(self, u, v, guess, use_table=True):
        """The exact inversion ``min {k : F(k) > U}`` searched from ``guess``
        (galloping, then bisection: any ``guess``, past the table too)."""
        return _first_true(lambda k: self.greater(k, u, v, use_table), guess)


def _first_true(predicate, guess):
    """The least ``k >= 0`` with ``predicate(k)``, for a monotone predicate
    (``predicate(-1)`` False), searched from ``guess``."""
    if predicate(guess):
        high, step = guess, 1
        while True:
            low = high - step
            if low < 0:
                low = -1
                break
            if not predicate(low):
                break
            high, step = low, 2 * step
    else:
        low, step = guess, 1
        while True:
            high = low + step
            if predicate(high):
                break
            low, step = high, 2 * step
    while high - low > 1:
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle
    return high


def rounded_gaussian_eta(sigma):
    """The sampler's total variation from ``round(N(0, sigma^2))``, per draw.

    Only a tie separates the draw from the exact inversion: ``U`` within
    ``2^-575`` of ``F(k)`` for some ``k`` with ``1 - F(k) >= 2^-575`` (at
    most ``28.24 sigma + 1`` of them, each meeting at most two of ``U``'s
    ``2^-575`` cells), or ``U`` in the last two cells:
    ``eta = (29 sigma + 4) 2^-574`` (the user guide's privacy model page has
    the proof). No table needed.
    """
    return (29.0 * float(sigma) + 4.0) * 2.0**-574


@lru_cache(maxsize=8)
def rounded_gaussian_table(sigma):
    """The table of ``sigma`` (kept: a fit builds it once)."""
    return RoundedGaussianTable(sigma)


def rounded_gaussian(key, nonce, sigma, out):
    """Fill ``out`` (float64, any shape, C-contiguous) with ``round(N(0, sigma^2))``
    from stream ``nonce`` (:func:`stream_nonce`)."""
    table = rounded_gaussian_table(float(sigma))
    t = int(nonce[1]) | int(nonce[2]) << 32
    walk_noise(key, int(nonce[0]), t, t + 1, table, out.reshape(1, -1))
    return out


# --- the draws --------------------------------------------------------------------

_SCRATCH = 19  # the kernel's nonce (3 words) and block (16) before the pairs


def walk_noise(key, kind, lo, hi, table, out, *, force_exact=False):
    """``out[i]`` (``(hi - lo, n)``) from streams ``(kind, lo + i)``: rounded
    Gaussian integers as doubles, 2 words (63 bits and a sign) a draw, 8 draws
    a block, exact up to :func:`rounded_gaussian_eta` per draw.

    The kernel decides every draw whose 63 bits are farther than the table's
    bound from its entries; the others (rare) it records, and
    :func:`resolve` decides them exactly. ``force_exact`` (a test hook):
    every draw recorded and decided by exact comparisons alone, without the
    table's shortcut: the same values, slowly. Returns how many draws took
    the exact path.
    """
    e0 = _TWO63 - 1 if force_exact else table.e0
    capacity = 64 + out.size // 1024
    while True:
        scratch = np.empty(_SCRATCH + 2 * capacity, np.uint64)
        count = _walk_noise(key, kind, lo, hi, table.cdf_s, table.guide, table.shift,
                            table.rshift, e0, out, scratch)
        if count <= capacity:
            break
        capacity = count  # more undecided draws than room: run again
    if count:
        pairs = scratch[_SCRATCH:_SCRATCH + 2 * count]
        resolve(key, kind, lo, table, out, pairs[0::2].astype(np.int64), pairs[1::2],
                use_table=not force_exact)
    return count


@njit(**_stream)
def _walk_noise(key, kind, lo, hi, cdf_s, guide, shift, rshift, e0, out, scratch):
    """:func:`walk_noise`'s kernel. ``scratch`` (uint64): the nonce (3
    words), the block (16), then room for pairs (flat index, word) of the
    undecided draws, each keeping the table's answer in ``out`` and recorded
    while there is room; returns how many there were. (One buffer: every
    array argument costs the dispatcher on small calls.)"""
    nonce = scratch[0:3]
    block = scratch[3:19]
    pending = scratch[19:]
    capacity = pending.shape[0] // 2
    nonce[0] = kind
    low63 = np.uint64(0x7FFFFFFFFFFFFFFF)
    top = np.uint64(63)
    two63 = np.uint64(1) << top
    s = np.uint64(shift)
    r = np.uint64(rshift)
    e0 = np.uint64(e0)
    emax = (two63 >> r) + e0  # at least every E_k
    n_pending = 0
    for i in range(hi - lo):
        t = lo + i
        nonce[1] = np.uint64(t) & _M32
        nonce[2] = np.uint64(t) >> np.uint64(32)
        row = out[i]
        n = row.shape[0]
        for b in range((n + 7) // 8):
            chacha20_block(key, b, nonce, block)
            left = n - 8 * b
            for d in range(left if left < 8 else 8):
                word = (block[2 * d] << np.uint64(32)) | block[2 * d + 1]
                u = word & low63
                g = u >> s
                k = guide[g]
                c = cdf_s[k]
                # below: at most C[k-1] (the cell's start, guide[g] being the
                # first entry above it), or C[k-1] itself once the scan moves.
                below = g << s
                while c <= u:
                    below = c
                    k += 1
                    c = cdf_s[k]
                # Decided unless u is within E_k of C[k] (F(k) > U not sure)
                # or within E_{k-1} of C[k-1] (F(k-1) <= U not sure). Both E
                # are at most emax: the common path compares with emax only,
                # and reads C[k-1] on the rare one (one more dependent read
                # per draw would slow a table larger than the cache).
                if c - u <= emax or u - below < emax:
                    undecided = c - u <= ((two63 - c) >> r) + e0
                    if not undecided:
                        below = cdf_s[k - 1]
                        undecided = u - below < ((two63 - below) >> r) + e0
                    if undecided:
                        if n_pending < capacity:
                            pending[2 * n_pending] = np.uint64(i * n + 8 * b + d)
                            pending[2 * n_pending + 1] = word
                        n_pending += 1
                m = float(k - 1)
                row[8 * b + d] = -m if (word >> top) != 0 else m
    return n_pending


def extra_bits(key, kind, t, j):
    """The 512 further bits of the uniform of draw ``j`` of stream ``(kind,
    t)``: block ``j // 8`` of stream :func:`exact_nonce` ``(kind, t, j % 8)``,
    its 16 words in order, most significant first."""
    block = np.empty(16, np.uint64)
    b, d = divmod(j, 8)
    chacha20_block(key, b, exact_nonce(kind, t, d), block)
    v = 0
    for w in block:
        v = (v << 32) | int(w)
    return v


def resolve(key, kind, lo, table, out, indices, words, use_table=True):
    """Decide the undecided draws exactly, in Python integers: ``out``'s flat
    index ``i n + j`` (stream ``lo + i``, draw ``j``) with its word. ``U`` is
    known to 575 bits (:func:`extra_bits`); the search starts from the
    kernel's answer."""
    n = out.shape[1]
    for index, word in zip(indices.tolist(), words.tolist()):
        i, j = divmod(index, n)
        u = word & (_TWO63 - 1)
        v = (u << EXTRA_BITS) | extra_bits(key, kind, lo + i, j)
        k = table.invert(u, v, int(abs(out[i, j])), use_table)
        out[i, j] = -float(k) if word >> 63 else float(k)
    return out


# --- the sampler's share of delta ---------------------------------------------

def sampler_delta(eta, n_draws, epsilon):
    """What a sampler within ``eta`` (TV) per draw adds to delta: a party's
    ``n_draws`` draws are within ``n_draws eta``, and a mechanism within TV
    ``tau`` of an (eps, delta) one is (eps, delta + (1 + e^eps) tau)."""
    if not np.isfinite(epsilon):
        return 0.0
    return float((1.0 + math.exp(min(epsilon, 700.0))) * n_draws * eta)
