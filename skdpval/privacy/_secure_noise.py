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
  (:func:`grid_sensitivity`). The discrete Gaussian would need another
  accountant and more noise. Drawn by inversion of a 63-bit fixed-point
  table of ``|m|`` (and one bit for the sign), within total variation
  ``eta`` of the exact law (:class:`RoundedGaussianTable`); ``k``
  coordinates drawn for a party are within ``k eta``, which adds
  ``(1 + e^eps) k eta`` to delta (:func:`sampler_delta`).
- **Discrete Laplace** (pure eps-DP releases): the exact sampler of Canonne,
  Kamath and Steinke (2020, Algorithms 1-2) in integer arithmetic; with an
  integer L1 sensitivity ``Delta`` and scale ``t`` it is exactly
  ``(Delta / t)``-DP.

The bits come from ChaCha20 (RFC 8439), keyed with 32 bytes of OS entropy
(:func:`noise_key`), or, as an explicit opt-in, with the SHA-256 of a
``noise_seed``. Stream ``(kind, t)`` is the block sequence of nonce
``(kind, t mod 2**32, t >> 32)``: the walk's permutation ``t`` draws from its
own stream, so its noise does not depend on scheduling.

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
from scipy.special import log_ndtr

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


# --- the rounded Gaussian ---------------------------------------------------------

# Relative error of each computed probability P(m) (Gauss-Legendre on the
# density over [m - 1/2, m + 1/2]; tests/test_secure_noise.py checks it
# against a 40-digit computation).
PROBABILITY_RELATIVE_ERROR = 1e-13
# The table covers |m| <= TAIL_SIGMAS * sigma_g (mass outside < 2e-23).
TAIL_SIGMAS = 10.0


def _legendre_nodes(spread):
    """Gauss-Legendre nodes for an integrand whose log varies by ``spread``."""
    n = 4 if spread < 1e-4 else 8 if spread < 1e-2 else 16 if spread < 1 else 32
    return np.polynomial.legendre.leggauss(n)


def rounded_gaussian_probabilities(sigma, magnitudes):
    """``P(m) = Phi((m + 1/2) / sigma) - Phi((m - 1/2) / sigma)`` for ``m >= 0``.

    As the integral of the density over ``[m - 1/2, m + 1/2]`` (every term
    positive: relative accuracy, unlike a difference of ``ndtr`` values).
    """
    w = 1.0 / sigma
    m = np.asarray(magnitudes, dtype=np.float64)
    spread = (m.max() + 1.0) * w * w
    nodes, weights = _legendre_nodes(spread)
    total = np.zeros(len(m))
    for u, weight in zip(0.5 * nodes, 0.5 * weights):
        x = (m + u) * w
        total += weight * np.exp(-0.5 * x * x)
    return total * (w / math.sqrt(2.0 * math.pi))


class RoundedGaussianTable:
    """The law of ``|round(N(0, sigma^2))|`` as a 63-bit fixed-point CDF.

    ``cdf[i]`` is ``2**63`` times ``P(|m| <= i)`` rounded, the entries'
    probabilities ``P(0)``, ``2 P(i)`` rounded to integers and ``P(0)``
    set so that the total is exactly ``2**63``. A draw takes 63 uniform
    bits ``u`` and returns the first ``i`` with ``cdf[i] > u``, starting
    from ``guide[u >> shift]``; one more bit gives the sign.

    Attributes
    ----------
    eta : float
        A bound on the total variation distance between the law drawn and
        the exact rounded Gaussian: the probabilities' relative error, the
        rounding of each entry (``2**-64``) and the tail left out.
    """

    def __init__(self, sigma):
        if not (np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"the noise std on the grid must be finite and > 0, "
                             f"got {sigma!r}.")
        self.sigma = float(sigma)
        top = int(math.ceil(TAIL_SIGMAS * self.sigma)) + 1
        magnitudes = np.arange(top + 1)
        p = rounded_gaussian_probabilities(self.sigma, magnitudes)
        p[1:] *= 2.0
        scaled = np.rint(p * 2.0**63)
        counts = scaled.astype(np.uint64)
        counts[0] = 0
        rest = int(counts.sum(dtype=np.uint64))
        if rest >= 2**63:
            raise ValueError(f"sigma {sigma!r}: the table's mass exceeds one")
        counts[0] = np.uint64(2**63 - rest)
        # Drop the entries past the last one with any mass.
        last = int(np.flatnonzero(counts)[-1])
        self.cdf = np.cumsum(counts[:last + 1], dtype=np.uint64)
        assert int(self.cdf[-1]) == 2**63
        self.eta = rounded_gaussian_eta(self.sigma)
        # A guide cell holds at most 2 / len(cdf) of the mass, about half of a
        # central entry's (1 / (2.5 sigma)): one or two steps of the scan.
        bits = max(1, int(math.ceil(math.log2(len(self.cdf)))) - 1)
        self.shift = 63 - bits
        starts = np.arange(2**bits, dtype=np.uint64) << np.uint64(self.shift)
        self.guide = np.searchsorted(self.cdf, starts, side="right").astype(np.int64)


def rounded_gaussian_eta(sigma):
    """The table's total variation bound ``eta`` for ``sigma``, without
    building the table: the probabilities' relative error, the rounding of
    each of its ``ceil(10 sigma) + 2`` entries (``2**-64``) and the mass of
    ``|m| > top`` in the exact law, ``2 Phi(-(top + 1/2) / sigma)``."""
    top = int(math.ceil(TAIL_SIGMAS * sigma)) + 1
    tail = 2.0 * math.exp(float(log_ndtr(-(top + 0.5) / sigma)))
    return PROBABILITY_RELATIVE_ERROR + (top + 1) * 2.0**-64 + tail


@lru_cache(maxsize=8)
def rounded_gaussian_table(sigma):
    """The table of ``sigma`` (kept: a fit builds it once)."""
    return RoundedGaussianTable(sigma)


def rounded_gaussian(key, nonce, sigma, out):
    """Fill ``out`` (float64, any shape, C-contiguous) with ``round(N(0, sigma^2))``
    from stream ``nonce`` (:func:`stream_nonce`)."""
    table = rounded_gaussian_table(float(sigma))
    t = int(nonce[1]) | int(nonce[2]) << 32
    walk_noise(key, int(nonce[0]), t, t + 1, table.cdf, table.guide, table.shift,
               out.reshape(1, -1))
    return out


def walk_noise(key, kind, lo, hi, cdf, guide, shift, out):
    """``out[i]`` (flat per permutation) from stream ``(kind, lo + i)``:
    rounded Gaussian integers (as doubles), 2 words (63 bits and a sign) a
    draw, 8 draws a block."""
    _walk_noise(key, kind, lo, hi, cdf, guide, shift, out, np.empty(3, np.uint64),
                np.empty(16, np.uint64))
    return out


@njit(**_stream)
def _walk_noise(key, kind, lo, hi, cdf, guide, shift, out, nonce, block):
    """:func:`walk_noise` with its buffers (allocating them would need
    reference counting in the kernel)."""
    nonce[0] = kind
    low63 = np.uint64(0x7FFFFFFFFFFFFFFF)
    top = np.uint64(63)
    s = np.uint64(shift)
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
                k = guide[u >> s]
                while cdf[k] <= u:
                    k += 1
                row[8 * b + d] = -float(k) if (word >> top) != 0 else float(k)


# --- the grid ----------------------------------------------------------------------

# ``(gamma, bound)`` of no grid: releases ``value + noise`` (tests' own noise).
NO_GRID = (0.0, np.inf)


def grid_sensitivity(dimension, zero_neighbour=True, finer=0):
    """``(j, Delta)``: the grid exponent and the L2 sensitivity of the rounded
    statistic ``a = rint(v / gamma)`` in grid units, ``gamma = S 2**-j``, for
    statistics whose neighbours differ by at most ``S`` in L2.

    ``zero_neighbour`` (zero-out adjacency, ``||v|| <= S`` and the
    neighbour's ``v' = 0``): ``||a|| <= ||v|| / gamma + sqrt(d) / 2``; with
    one coordinate ``a`` is clamped to ``[-2**j, 2**j]`` and ``Delta = 2**j``
    exactly, and ``j = 6`` keeps the rounding (std ``gamma / sqrt(12)``) far
    below any noise. Otherwise (any two statistics ``S`` apart) each
    coordinate's rounding moves the difference by up to 1: ``Delta = 2**j +
    sqrt(d)``. ``j`` keeps the padding below ``2**-8`` of ``2**j``; ``2**-20``
    covers a clipped norm's overshoot of ``S`` by a few ulps (relative 1e-15).
    ``finer`` more bits make the grid finer (when the noise is small
    against ``S``).
    """
    if dimension <= 1 and zero_neighbour:
        return 6 + finer, float(2**(6 + finer))
    pad = math.sqrt(dimension) * (0.5 if zero_neighbour else 1.0)
    j = max(6, int(math.ceil(math.log2(256.0 * pad)))) + finer
    return j, 2.0**j + pad + 2.0**-20


class Grid:
    """The grid of a release: ``gamma``, the clamp ``2**j`` and the padded
    sensitivity in grid units (:func:`grid_sensitivity`), for statistics of
    sensitivity ``clip`` in ``dimension`` coordinates."""

    def __init__(self, clip, dimension, zero_neighbour=True, finer=0):
        self.j, self.sensitivity = grid_sensitivity(dimension, zero_neighbour, finer)
        self.gamma = math.ldexp(float(clip), -self.j)
        self.bound = float(2**self.j) if zero_neighbour else np.inf
        self.dimension = int(dimension)

    @property
    def padding(self):
        """Sensitivity / ``2**j``: the factor the rounding adds to ``clip``."""
        return self.sensitivity / 2.0**self.j


def check_noise_std(noise_std, grid, parameters):
    """Refuse a requested noise std the sampler cannot draw on ``grid``.

    It draws integers of ``noise_std / gamma``: both must be positive normal
    floats, or a release would carry no noise (``noise_multiplier`` and a
    clip norm, each accepted alone, can have a product that underflows).
    ``parameters`` names what set the std, for the message.
    """
    tiny = np.finfo(np.float64).tiny
    with np.errstate(over="ignore", under="ignore"):
        ratio = noise_std / grid.gamma if grid.gamma > 0 else np.inf
    if not (noise_std >= tiny and grid.gamma >= tiny and tiny <= ratio < np.inf):
        raise ValueError(
            f"The noise std {float(noise_std)!r} (from {parameters}; grid step "
            f"{float(grid.gamma)!r}) is outside the floats the sampler draws on "
            f"its grid: both, and their ratio, must be finite and at least "
            f"{float(tiny)!r}. Give a larger noise_multiplier or clip norm.")
    return noise_std


def sampler_delta(eta, n_draws, epsilon):
    """What a sampler within ``eta`` (TV) per draw adds to delta: a party's
    ``n_draws`` draws are within ``n_draws eta``, and a mechanism within TV
    ``tau`` of an (eps, delta) one is (eps, delta + (1 + e^eps) tau)."""
    if not np.isfinite(epsilon):
        return 0.0
    return float((1.0 + math.exp(min(epsilon, 700.0))) * n_draws * eta)


# --- the discrete Laplace (Canonne, Kamath, Steinke 2020) -----------------------------


class WordStream:
    """32-bit words of one ChaCha20 stream, for the exact samplers below."""

    def __init__(self, key, nonce):
        self.key, self.nonce = key, nonce
        self.counter, self.buffer = 0, []
        self._block = np.empty(16, np.uint64)

    def word(self):
        if not self.buffer:
            chacha20_block(self.key, self.counter, self.nonce, self._block)
            self.counter += 1
            self.buffer = [int(w) for w in self._block[::-1]]
        return self.buffer.pop()

    def uniform_below(self, n):
        """Uniform integer in ``[0, n)``, exactly (rejection on whole words)."""
        n_words = max(1, (int(n - 1).bit_length() + 31) // 32)
        span = 1 << (32 * n_words)
        limit = span - span % n
        while True:
            x = 0
            for _ in range(n_words):
                x = (x << 32) | self.word()
            if x < limit:
                return x % n


def _bernoulli(stream, numerator, denominator):
    return stream.uniform_below(denominator) < numerator


def _bernoulli_exp(stream, gamma):
    """Bernoulli(exp(-gamma)) for a rational ``gamma >= 0`` (CKS Algorithm 1)."""
    while gamma > 1:
        if not _bernoulli_exp(stream, Fraction(1)):
            return False
        gamma -= 1
    k = 1
    while _bernoulli(stream, gamma.numerator, gamma.denominator * k):
        k += 1
    return k % 2 == 1


def _discrete_laplace_one(stream, s, t):
    """One draw of P(x) proportional to exp(-|x| s / t): scale ``t / s``,
    integers ``s, t > 0`` (CKS Algorithm 2)."""
    while True:
        u = stream.uniform_below(t)
        if not _bernoulli_exp(stream, Fraction(u, t)):
            continue
        v = 0
        while _bernoulli_exp(stream, Fraction(1)):
            v += 1
        y = (u + t * v) // s
        negative = stream.uniform_below(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_laplace(key, nonce, scale, size):
    """``size`` exact draws of the discrete Laplace of rational ``scale`` (a Fraction):
    ``P(x) proportional to exp(-|x| / scale)``, as int64."""
    scale = Fraction(scale)
    stream = WordStream(key, nonce)
    return np.array([_discrete_laplace_one(stream, scale.denominator, scale.numerator)
                     for _ in range(size)], dtype=np.int64)
