"""The rounded Gaussian's law to any precision, with rigorous error bounds.

Python's ``int``, ``fractions.Fraction`` and ``decimal.Decimal`` only (no
mpmath, no gmpy2): used at run time by the sampler's exact path
(:mod:`skdpval.privacy._secure_noise`) and by the tests as the reference
("50+ digits"). The proof that uses it is in the user guide's privacy model
page (doc/user_guide/privacy_model.rst, "The sampler").

The law: ``M = round(N(0, sigma^2))`` (ties have probability 0), ``sigma`` a
double. The sampler draws ``|M|`` by inversion of

    F(k) = P(|M| <= k) = P(|N| < k + 1/2) = erf(x),   x = (k + 1/2) / (sigma sqrt 2),

so everything rests on ``erf`` at ``y = x^2 = (2k + 1)^2 / (8 sigma^2)``, a
rational number (``sigma`` is a double, hence a rational), computed exactly
with Fractions and rounded once to Decimal.

erf by its series of positive terms (Abramowitz-Stegun 7.1.6)::

    erf(x) = (2 x / sqrt(pi)) e^{-y} S(y),   S(y) = sum_{n>=0} (2y)^n / (2n+1)!!

No cancellation: every term is positive, so a computation in P-digit
decimal floating point where each operation is correctly rounded (the
``decimal`` module's +, *, /, sqrt and exp are: ROUND_HALF_EVEN, the General
Decimal Arithmetic specification; ``exp`` is documented as correctly rounded)
has a relative error of at most ``(1 + u)^K - 1 <= 1.01 K u`` for ``K``
roundings, ``u = 10^(1-P) / 2`` (Higham, Accuracy and Stability of Numerical
Algorithms, Lemma 3.1). :func:`erf_of_square` counts them:

- ``y`` rounded once from the exact Fraction: the result is ``erf`` at
  ``y' = y (1 + d)``, ``|d| <= u``; ``|d erf(sqrt y) / dy| = e^{-y} / sqrt(pi y)``
  so that moves the value by at most ``u y e^{-y} / sqrt(pi y) <= 0.25 u``
  (absolute).
- ``z = 2 y'`` (1), ``t_{n+1} = t_n z / (2n + 3)`` (2 per term): ``t_n``
  within ``3n + 1`` roundings; the sum of ``N + 1`` positive terms adds
  ``N``: ``S`` within ``4N + 1``.
- The series is stopped at the first ``N`` with ``q = z / (2N + 3) <= 1/2``
  and ``t_N <= 10^-P S_N``: the terms after ``N`` decrease at least
  geometrically with ratio ``q``, so the remainder is at most
  ``t_N q / (1 - q) <= t_N <= 10^-P S`` (relative ``0.2 u``).
- ``sqrt(4 y' / pi)``: ``4 y'`` (1), ``pi`` (from :func:`pi_bounds`,
  relative error below ``u / 4``), the division (1), the square root (1,
  and it halves its argument's relative error); ``e^{-y'}`` (1); two
  products (2).

In all ``K = 4N + 8`` (the ``pi`` and truncation terms folded in), and the
absolute error of ``F(k)`` is at most ``1.01 K u + 0.25 u``
(:func:`abs_cdf`). Far in the tail (``y > 2.303 (digits + 10)``, ``y >= 1``)
:func:`abs_cdf` returns 1: ``0 < 1 - F(k) = erfc(x) <= e^-y / (x sqrt pi) <
10^-(digits + 10)`` (the series would need ``2y`` terms). ``P(m)`` is a difference of two such values, computed at
a precision that leaves ``digits`` significant digits
(:func:`probability`).

``pi`` is Machin's formula ``16 atan(1/5) - 4 atan(1/239)`` in integer
fixed point: each term ``floor(2^B / ((2k+1) n^(2k+1)))`` (nested integer
floor divisions are the floor of the exact quotient) is within one unit,
and the alternating series' truncation within one more.
"""

import math
from decimal import ROUND_HALF_EVEN, Context, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

__all__ = ["pi_bounds", "erf_of_square", "abs_cdf", "abs_cdf_bounds", "probability",
           "gauss_legendre", "gauss_legendre_doubles", "sigma_fraction",
           "GAUSS_LEGENDRE_HALF"]


# --- pi -------------------------------------------------------------------------------

@lru_cache(maxsize=16)
def pi_bounds(bits):
    """Integers ``(lo, hi)`` with ``lo <= pi 2^bits <= hi`` and ``hi - lo <= 2``."""
    guard = 24
    big = bits + guard
    one = 1 << big

    def arctan_inverse(n):
        # sum_k (-1)^k / ((2k+1) n^(2k+1)) in units of 2^-big; each term is the
        # floor of the exact term (within 1); returns (value, number of terms).
        power = one // n
        total, k, n2 = power, 0, n * n
        while power:
            k += 1
            power //= n2
            term = power // (2 * k + 1)
            total += -term if k % 2 else term
        return total, k + 1

    a, ka = arctan_inverse(5)
    b, kb = arctan_inverse(239)
    value = 16 * a - 4 * b
    # each term within 1, the truncation within 1: atan(1/5) within ka + 1 units.
    error = 16 * (ka + 1) + 4 * (kb + 1)
    assert error < 1 << (guard - 1)
    lo = (value - error) >> guard
    hi = -((-(value + error)) >> guard)
    return lo, hi


@lru_cache(maxsize=16)
def _pi_decimal(prec):
    """pi as a Decimal of ``prec`` digits, within ``10^-(prec + 1)`` relative."""
    bits = int((prec + 3) * 3.33) + 8
    lo, _ = pi_bounds(bits)
    with localcontext(Context(prec=prec + 2, rounding=ROUND_HALF_EVEN)):
        return Decimal(lo) / Decimal(1 << bits)


# --- erf of sqrt(y) ---------------------------------------------------------------------

def sigma_fraction(sigma):
    """The double ``sigma`` as an exact Fraction."""
    return Fraction(float(sigma))


def erf_of_square(y, prec):
    """``erf(sqrt(y))`` for a rational ``y >= 0`` (Fraction) at ``prec`` digits.

    Returns ``(value, error)``: a Decimal and a Fraction with
    ``|value - erf(sqrt(y))| <= error`` (the module docstring's bound).
    """
    y = Fraction(y)
    if y < 0:
        raise ValueError("y must be >= 0")
    if y == 0:
        return Decimal(0), Fraction(0)
    ctx = Context(prec=prec, rounding=ROUND_HALF_EVEN)
    with localcontext(ctx):
        yd = Decimal(y.numerator) / Decimal(y.denominator)
        z = yd * 2
        term = Decimal(1)
        total = Decimal(1)
        n = 0
        tiny = Decimal(10) ** (-prec)
        while True:
            term = term * z / (2 * n + 3)
            n += 1
            total += term
            if z <= (2 * n + 3) / Decimal(2) and term <= tiny * total:
                break
        prefactor = (4 * yd / _pi_decimal(prec)).sqrt()
        value = prefactor * (-yd).exp() * total
    rounding_ops = 4 * n + 8
    u = Fraction(1, 2 * 10 ** (prec - 1))
    error = Fraction(101, 100) * rounding_ops * u * Fraction(value) + u / 4
    # value may exceed the true one by the relative error: bound with value's
    # own size (at most 1 + 1e-6 for any prec >= 10).
    return value, error + error / 10**6


def _y(sigma, k):
    """``y = (k + 1/2)^2 / (2 sigma^2)`` exactly."""
    s = sigma_fraction(sigma)
    return Fraction((2 * k + 1) ** 2, 8) / (s * s)


def abs_cdf(sigma, k, digits=60):
    """``F(k) = P(|round(N(0, sigma^2))| <= k)`` to ``digits`` digits (absolute).

    Returns ``(value, error)`` (Decimal, Fraction), ``|value - F(k)| <= error
    <= 10^-digits``. ``k < 0`` gives ``F = 0`` exactly.
    """
    if k < 0:
        return Decimal(0), Fraction(0)
    y = _y(sigma, k)
    if y >= 1 and y > (digits + 10) * Fraction(2303, 1000):
        # F(k) = 1 - erfc(x), 0 < erfc(x) <= e^-y / (x sqrt(pi)) < e^-y
        # < 10^-(digits + 10) (x >= 1): no series needed (tiny sigma).
        return Decimal(1), Fraction(1, 10 ** (digits + 10))
    # N <= 2y + 3.33 prec + 2 terms (to q <= 1/2, then halving at least), so
    # 1.01 K u <= 10^-digits at this precision.
    terms = 2 * float(y) + 3.4 * (digits + 12) + 2
    prec = digits + 5 + int(math.ceil(math.log10(4 * terms + 8)))
    value, error = erf_of_square(y, prec)
    assert error <= Fraction(1, 10**digits)
    return value, error


def abs_cdf_bounds(sigma, k, bits):
    """Integers ``(lo, hi)`` with ``lo <= F(k) 2^bits <= hi`` (rigorous)."""
    digits = int(math.ceil(bits * 0.30103)) + 4
    value, error = abs_cdf(sigma, k, digits)
    exact = Fraction(value)
    scale = 1 << bits
    lo = math.floor((exact - error) * scale)
    hi = math.ceil((exact + error) * scale)
    return max(lo, 0), min(hi, scale)


def probability(sigma, m, digits=50):
    """``P(round(N(0, sigma^2)) = m)`` to ``digits`` significant digits.

    Returns ``(value, error)`` with ``|value - P(m)| <= error <= 10^-digits P(m)``.
    ``P(0) = F(0)``, ``P(m) = (F(|m|) - F(|m| - 1)) / 2``: the precision is
    raised by the digits the difference cancels (``-log10 P(m)``, from a
    first estimate) until the bound holds.
    """
    m = abs(int(m))
    extra = 10
    while True:
        prec = digits + extra
        hi, e_hi = abs_cdf(sigma, m, prec)
        lo, e_lo = abs_cdf(sigma, m - 1, prec)
        with localcontext(Context(prec=prec + 10)):
            value = hi - lo if m == 0 else (hi - lo) / 2
        error = (e_hi + e_lo) if m == 0 else (e_hi + e_lo) / 2
        if value > 0 and error <= Fraction(value) / 10**digits:
            return value, error
        # cancelled digits: about -log10(value) (Decimal's exponent: no underflow)
        lost = 10 if value <= 0 else max(10, -value.adjusted() + 10)
        extra = max(extra + 10, lost + 10)


# --- Gauss-Legendre nodes and weights (for the sampler's quadrature) --------------------

def _legendre_and_derivative(n, x):
    p0, p1 = Decimal(1), x
    for j in range(2, n + 1):
        p0, p1 = p1, ((2 * j - 1) * x * p1 - (j - 1) * p0) / j
    derivative = n * (x * p1 - p0) / (x * x - 1)
    return p1, derivative


def gauss_legendre(n, prec=50):
    """Nodes in ``(0, 1)`` (the positive half, and 0 for odd ``n``) and weights of
    the ``n``-point Gauss-Legendre rule on ``[-1, 1]``, as Decimals of ``prec``
    digits (Newton's method from Tricomi's estimate, to convergence)."""
    out = []
    with localcontext(Context(prec=prec + 10)):
        pi = _pi_decimal(prec + 10)
        for i in range(1, n // 2 + 1):
            theta = pi * (4 * i - 1) / (4 * n + 2)
            x = Decimal(math.cos(float(theta)))
            for _ in range(200):
                p, d = _legendre_and_derivative(n, x)
                step = p / d
                x -= step
                if abs(step) < Decimal(10) ** (-(prec + 5)):
                    break
            p, d = _legendre_and_derivative(n, x)
            weight = 2 / ((1 - x * x) * d * d)
            out.append((x, weight))
        if n % 2:
            x = Decimal(0)
            p, d = _legendre_and_derivative(n, x) if n > 1 else (Decimal(0), Decimal(1))
            # P_n'(0) for odd n: use the recurrence value
            weight = 2 / (d * d)
            out.append((x, weight))
    with localcontext(Context(prec=prec)):
        return [(+x, +w) for x, w in out]


def print_rules(sizes=(2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)):
    """Print :data:`GAUSS_LEGENDRE_HALF`: for each size, the doubles nearest
    to the exact nodes and weights of the rule on [-1/2, 1/2] (the positive
    half, then 0 for odd sizes), as float.hex."""
    print("GAUSS_LEGENDRE_HALF = {")
    for n in sizes:
        pairs = gauss_legendre(n, 40)
        nodes = ", ".join(repr(float(x / 2).hex()) for x, _ in pairs)
        weights = ", ".join(repr(float(w / 2).hex()) for _, w in pairs)
        print(f"    {n}: (({nodes},),\n         ({weights},)),")
    print("}")


def gauss_legendre_doubles(n):
    """``(nodes, weights)``: lists of the doubles of the ``n``-point rule on
    [-1/2, 1/2] (weights summing to 1), from :data:`GAUSS_LEGENDRE_HALF`."""
    half_nodes, half_weights = GAUSS_LEGENDRE_HALF[n]
    x = [float.fromhex(v) for v in half_nodes]
    w = [float.fromhex(v) for v in half_weights]
    if n % 2:  # the last is the node 0
        return ([-v for v in x[:-1]] + [0.0] + x[:-1][::-1],
                w[:-1] + [w[-1]] + w[:-1][::-1])
    return [-v for v in x] + x[::-1], w + w[::-1]


# The sampler's quadrature rules, generated by print_rules() (the tests
# recompute them at 45 digits): numpy's leggauss weights are off by up to
# 1e-12 (relative) at 48 nodes, these are the nearest doubles.
GAUSS_LEGENDRE_HALF = {
    2: (  # nodes, weights
        (
            '0x1.279a74590331cp-2',
        ), (
            '0x1.0000000000000p-1',
        )),
    3: (  # nodes, weights
        (
            '0x1.8c97ef43f7248p-2', '0x0.0p+0',
        ), (
            '0x1.1c71c71c71c72p-2', '0x1.c71c71c71c71cp-2',
        )),
    4: (  # nodes, weights
        (
            '0x1.b8e6dbcf63985p-2', '0x1.5c23fd9dd3dfcp-3',
        ), (
            '0x1.64340f7e7b66bp-3', '0x1.4de5f840c24cap-2',
        )),
    6: (  # nodes, weights
        (
            '0x1.dd6ca4e80a01ep-2', '0x1.528a09655c95ep-2', '0x1.e8b12d03675c5p-4',
        ), (
            '0x1.5edf601e2dbf8p-4', '0x1.716b7b5794c1cp-3', '0x1.df24d499545e8p-3',
        )),
    8: (  # nodes, weights
        (
            '0x1.ebab1cb0acc67p-2', '0x1.97e4ab249f41ep-2', '0x1.0d129583284b4p-2',
            '0x1.77ac94f3c7345p-4',
        ), (
            '0x1.9ea1d04ca0374p-5', '0x1.c76fb531d2b96p-4', '0x1.413c50a255615p-3',
            '0x1.736360b199343p-3',
        )),
    12: (  # nodes, weights
        (
            '0x1.f68f1d8e42e81p-2', '0x1.cee874ffb88b4p-2', '0x1.8a30aeed88f36p-2',
            '0x1.2cb4f05c077f9p-2', '0x1.78a8d20a8b19dp-3', '0x1.007a5f8f630e4p-4',
        ), (
            '0x1.8275d9dea6d8fp-6', '0x1.b60602bce6181p-5', '0x1.47d7258f22d8fp-4',
            '0x1.a0163e6b1ab72p-4', '0x1.de3155c256ab5p-4', '0x1.fe40ce6d4f025p-4',
        )),
    16: (  # nodes, weights
        (
            '0x1.fa92c264d787ep-2', '0x1.e39f56616f9b0p-2', '0x1.bb3403514e483p-2',
            '0x1.82c45dda4726bp-2', '0x1.3c5a466d5e8b8p-2', '0x1.d50259a43a772p-3',
            '0x1.205cae642337cp-3', '0x1.852bd6676a9f9p-5',
        ), (
            '0x1.bcddab4b7c211p-7', '0x1.fdfb1a2c1265dp-6', '0x1.85c4ee79cc258p-5',
            '0x1.fe7af2bad386ap-5', '0x1.325f61bca3cbfp-4', '0x1.5a6ebbb5a75fcp-4',
            '0x1.75f8c77e0c00fp-4', '0x1.83feae80e4dfcp-4',
        )),
    24: (  # nodes, weights
        (
            '0x1.fd892de691982p-2', '0x1.f30f9f0cbf876p-2', '0x1.e06585a70aa4dp-2',
            '0x1.c5d841864d0f5p-2', '0x1.a3d74ce0d3700p-2', '0x1.7af18edb9ddd6p-2',
            '0x1.4bd2ee5fa1086p-2', '0x1.17417bac4d72bp-2', '0x1.bc345d81e24b5p-3',
            '0x1.429a8c588e910p-3', '0x1.8769542b94f8dp-4', '0x1.0660853eda2e8p-5',
        ), (
            '0x1.9465bd3112202p-8', '0x1.d375514486f1dp-7', '0x1.6ab884f57c979p-6',
            '0x1.e5c6255d25edap-6', '0x1.2c6d5c2eff064p-5', '0x1.6108ef504463ap-5',
            '0x1.8fd8936444b16p-5', '0x1.b8177ba4a68dcp-5', '0x1.d91c78acb1b2dp-5',
            '0x1.f25cbce1d1ff6p-5', '0x1.01b7117cf8bd8p-4', '0x1.060475e763736p-4',
        )),
    32: (  # nodes, weights
        (
            '0x1.fe995e70409b6p-2', '0x1.f8a212714bcdcp-2', '0x1.edf5518053baap-2',
            '0x1.deac0259f7f42p-2', '0x1.caea9b4574cb9p-2', '0x1.b2e04fd686a13p-2',
            '0x1.96c69481c4bc5p-2', '0x1.76e0931d693bap-2', '0x1.537a89c487f8ap-2',
            '0x1.2ce9146962ca4p-2', '0x1.038862866b29dp-2', '0x1.af76b57c6f8f1p-3',
            '0x1.53d55ce57bdf6p-3', '0x1.ea0f7e19c094bp-4', '0x1.27e0ea717f237p-4',
            '0x1.8bbc8488cc499p-6',
        ), (
            '0x1.cbf8bc743cc5cp-9', '0x1.0aa3c248696c9p-7', '0x1.a0060a8531ffap-7',
            '0x1.18c5800a355d9p-6', '0x1.5ee963a335495p-6', '0x1.a1c6ae961fbfap-6',
            '0x1.e0bd76c924981p-6', '0x1.0d9b9a62cac10p-5', '0x1.2854103b35e0cp-5',
            '0x1.40483e126fd14p-5', '0x1.553ee25ebebc6p-5', '0x1.6705e18e13ed1p-5',
            '0x1.7572bdb3f6e51p-5', '0x1.8062fc0f6fef9p-5', '0x1.87bc776f8c6d7p-5',
            '0x1.8b6d9eaec77adp-5',
        )),
    48: (  # nodes, weights
        (
            '0x1.ff5ee9d8af2e2p-2', '0x1.fcaffc9af24a4p-2', '0x1.f7df2d6c8eed7p-2',
            '0x1.f0f161978472fp-2', '0x1.e7ee011520dfbp-2', '0x1.dcdeb7610754bp-2',
            '0x1.cfcf63e4a4e84p-2', '0x1.c0ce0c3f55453p-2', '0x1.afeaccf5eeb9ep-2',
            '0x1.9d37c81006d1dp-2', '0x1.88c91196f8e2dp-2', '0x1.72b49a0302d99p-2',
            '0x1.5b1216aac49a1p-2', '0x1.41fae84d5a001p-2', '0x1.2789ffd1f24a0p-2',
            '0x1.0bdbc159f3714p-2', '0x1.de1bcb894046ap-3', '0x1.a27eb589dea3bp-3',
            '0x1.65204357a6389p-3', '0x1.26425a1527d42p-3', '0x1.cc50f5488fbefp-4',
            '0x1.4a2ef25599831p-4', '0x1.8d54ccaa9b7b4p-5', '0x1.094223ea6196dp-6',
        ), (
            '0x1.9d50bc55d2d99p-10', '0x1.e037f45d9bd00p-9', '0x1.781605954a639p-8',
            '0x1.fe80c5c315c9dp-8', '0x1.416423e8cba8ep-7', '0x1.822eefbc97517p-7',
            '0x1.c15b1e8f69969p-7', '0x1.fea4d40fed235p-7', '0x1.1ce51f31f701fp-6',
            '0x1.3945ed05d7d70p-6', '0x1.54565a91a8406p-6', '0x1.6df9583af719dp-6',
            '0x1.86135edf0aa09p-6', '0x1.9c8a8d5861892p-6', '0x1.b146c443c7e24p-6',
            '0x1.c431bfe4b31a0p-6', '0x1.d537300bfd4dfp-6', '0x1.e444cde6d0026p-6',
            '0x1.f14a6f9e10ad4p-6', '0x1.fc3a19b11a2a4p-6', '0x1.028406fc86d37p-5',
            '0x1.05d56c2248c44p-5', '0x1.080dac3f3725fp-5', '0x1.092a652a0fbb7p-5',
        )),
    64: (  # nodes, weights
        (
            '0x1.ffa4e911f7533p-2', '0x1.fe204ab274ecdp-2', '0x1.fb661ac8c85a9p-2',
            '0x1.f777d976cfadap-2', '0x1.f257e4db5aabcp-2', '0x1.ec09586b58faap-2',
            '0x1.e490081f2891bp-2', '0x1.dbf07d935a5afp-2', '0x1.d22ff5221288ap-2',
            '0x1.c7545aa8c0dadp-2', '0x1.bb6445eadae2cp-2', '0x1.ae66f68eedbc6p-2',
            '0x1.a0644fb6d8db8p-2', '0x1.9164d335425e2p-2', '0x1.81719c62ec68ep-2',
            '0x1.70945a96f12c4p-2', '0x1.5ed74b4532f83p-2', '0x1.4c4533c68b412p-2',
            '0x1.38e95ace7b3c3p-2', '0x1.24cf81925487fp-2', '0x1.1003dca600f34p-2',
            '0x1.f52619257c3a1p-3', '0x1.c9142c5898fc5p-3', '0x1.9becb55272c9dp-3',
            '0x1.6dcb1f0620fffp-3', '0x1.3ecb6c46c76cbp-3', '0x1.0f0a26c56e49cp-3',
            '0x1.bd489b79ec83bp-4', '0x1.5b6e88ad5c00fp-4', '0x1.f182ff48e8a27p-5',
            '0x1.2afad5ee95ad0p-5', '0x1.8ef487a8cbc33p-7',
        ), (
            '0x1.d379f1846042ep-11', '0x1.0fc7ac3ac322fp-9', '0x1.aa46b24145a02p-9',
            '0x1.21e400109d479p-8', '0x1.6df524de84e24p-8', '0x1.b9283b35dfa9cp-8',
            '0x1.01a7c0a5c987fp-7', '0x1.261ef40a7a2e7p-7', '0x1.49e391bd2145fp-7',
            '0x1.6cdfe10bba3c0p-7', '0x1.8efea346845b4p-7', '0x1.b02b2071c0c2dp-7',
            '0x1.d05133c3af937p-7', '0x1.ef5d57d53b4a2p-7', '0x1.069e593b92370p-6',
            '0x1.14ee9010d92c8p-6', '0x1.22969f7b5c8c9p-6', '0x1.2f8e3ca7574ddp-6',
            '0x1.3bcd87e50de1cp-6', '0x1.474d117092813p-6', '0x1.5205ddf5a36dbp-6',
            '0x1.5bf16accdf42ep-6', '0x1.6509b1efb8deep-6', '0x1.6d492da0c2510p-6',
            '0x1.74aadbc614fb3p-6', '0x1.7b2a40f3ccddap-6', '0x1.80c36b24bdd19p-6',
            '0x1.8572f41fbb52dp-6', '0x1.89360387fe3a9p-6', '0x1.8c0a5097676bap-6',
            '0x1.8dee238192cd0p-6', '0x1.8ee0567ee2e50p-6',
        )),
}
