"""The kernels' arithmetic: exp, log and softplus without branches, sums in a
fixed order, the validation rows' layout, and the compile flags every kernel
shares.

Kernels use ``error_model="numpy"`` (Python's zero-division checks would
put a branch in every loop and stop LLVM from vectorising them). A fit's
first call compiles them (numba caches them on disk afterwards), so they
avoid what makes that slow: array-to-array slice copies (they compile
numba's error-message formatting), allocation inside kernels, IR-level
inlining (``inline="always"`` re-types the inlined body at every call site;
the walk's helpers are inlined by LLVM instead, ``forceinline``), the
builtins ``min`` and ``max`` of two scalars (compiled as functions of their
own, one per signature: written as conditional expressions, ``b if b < a
else a`` for ``min(a, b)``, which is how numba evaluates them), more than
one kernel per fit (the learning-rate search and the party gradients are
walks too) and code for losses the fit does not use
(:func:`skdpval.kernels._losses.kernel_codes`).

The validation set is stored transposed, ``X_val_t`` ``(n_columns, n_pad)``
and ``T_val_t`` ``(n_outputs, n_pad)``, zero-padded from ``n_val`` to
``n_pad = padded_length(n_val)`` rows (whole SIMD vectors: a scalar
remainder loop costs as much as the vectorised body), so that the inner
loops run over contiguous validation rows and vectorise.
"""

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic


# Doubles per SIMD vector (AVX-512); validation rows are padded to a multiple.
LANES = 8

# No reference counting (numba's private ``_nrt`` flag): every array
# argument of a jitted call and every view taken costs an atomic increment
# and decrement of a reference count, most of a step of the walk along a
# line (benchmarks/speed.py). Kernels allocate nothing (the caller passes the
# buffers); the few that do use ``_jit_alloc``.
_jit = dict(cache=True, nogil=True, error_model="numpy", no_cfunc_wrapper=True,
            _nrt=False)

_jit_alloc = dict(_jit, _nrt=True)

# Helpers of the walk: LLVM must inline them (numba's calling convention
# otherwise keeps them out of line: a scalar helper then keeps its loop
# scalar, and a step pays five calls).
_scalar = dict(_jit, forceinline=True, no_cpython_wrapper=True)

# The same for the helpers that are also called from Python (numba's
# wrapper for Python costs 30-40% of a small helper's compilation).
_scalar_py = dict(_jit, forceinline=True)

_LN2 = 0.6931471805599453

_LN2_HI = 6.93147180369123816490e-01  # trailing zeros: k * _LN2_HI is exact

_LN2_LO = 1.90821492927058770002e-10

_LOG2E = 1.4426950408889634

_SQRT2 = 1.4142135623730951

_MANTISSA = (1 << 52) - 1

_EXPONENT_ONE = 1023 << 52


@intrinsic
def _bits_to_float(typingctx, bits):
    """Reinterpret the bits of an int64 as a float64 (no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


@intrinsic
def _float_to_bits(typingctx, value):
    """Reinterpret the bits of a float64 as an int64 (no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def prefetch(typingctx, array, indices):
    """Hint that ``array[indices]`` (a tuple of integers) will be read soon:
    LLVM's prefetch, no load, no fault on a bad address."""
    if not (isinstance(array, types.Array) and isinstance(indices, types.UniTuple)
            and len(indices) == array.ndim):
        return None

    def codegen(context, builder, signature, args):
        array_type, index_type = signature.args
        data = context.make_array(array_type)(context, builder, args[0])
        index = cgutils.unpack_tuple(builder, args[1], len(index_type))
        pointer = cgutils.get_item_pointer(context, builder, array_type, data, index,
                                           wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        # Named by llvmlite for its pointer mode (p0, or p0i8 with typed pointers).
        function = builder.module.declare_intrinsic(
            "llvm.prefetch", [byte_pointer],
            ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]))
        # read, keep in all cache levels, data cache
        builder.call(function, [builder.bitcast(pointer, byte_pointer), i32(0), i32(3),
                                i32(1)])
        return context.get_dummy_value()

    return types.none(array, indices), codegen


@njit(**_scalar)
def _exp_neg(a):
    """exp(-a) for a >= 0, to 2 ulps: exp(-a) = 2^-k exp(r), |r| <= ln2 / 2."""
    a = 746.0 if 746.0 < a else a  # exp(-746) is below the smallest subnormal
    k = np.floor(a * _LOG2E + 0.5)
    r = (k * _LN2_HI - a) + k * _LN2_LO
    p = _exp_reduced(r)
    # 2^-k in two normal factors, so that subnormal results stay right.
    ki = np.int64(k)
    half = ki >> 1
    return (p * _bits_to_float((1023 - half) << 52)
            * _bits_to_float((1023 - (ki - half)) << 52))


@njit(**_scalar)
def _exp(x):
    """exp(x) for any x, branch-free (so that loops over rows vectorise), to 2
    ulps; inf past the largest float: exp(x) = 2^k exp(r), |r| <= ln2 / 2."""
    x = 710.0 if 710.0 < x else x  # beyond: inf
    x = -746.0 if -746.0 > x else x  # and below the smallest subnormal
    k = np.floor(x * _LOG2E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _exp_reduced(r)
    ki = np.int64(k)
    half = ki >> 1  # 2^k in two normal factors
    return (p * _bits_to_float((1023 + half) << 52)
            * _bits_to_float((1023 + (ki - half)) << 52))


@njit(**_scalar)
def _exp_reduced(r):
    """exp(r) for |r| <= ln2 / 2."""
    # Taylor series to r^13 (error below 1e-17), in Estrin's order: short
    # dependency chains, 35% faster than Horner's in vectorised loops.
    r2 = r * r
    r4 = r2 * r2
    low = (1.0 + r) + r2 * (0.5 + r * (1.0 / 6.0))
    mid = ((1.0 / 24.0 + r * (1.0 / 120.0))
           + r2 * (1.0 / 720.0 + r * (1.0 / 5040.0)))
    high = ((1.0 / 40320.0 + r * (1.0 / 362880.0))
            + r2 * (1.0 / 3628800.0 + r * (1.0 / 39916800.0)))
    top = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0)
    return (low + r4 * mid) + (r4 * r4) * (high + r4 * top)


@njit(**_scalar)
def _log1p_unit(e):
    """log(1 + e) for 0 <= e <= 1, as 2 atanh(s) with |s| <= 0.1716."""
    y = 1.0 + e
    big = np.float64(y > _SQRT2)  # then log(1 + e) = ln2 + log(y / 2)
    numerator = e + big * ((y - 2.0) - e)  # e, or y - 2 (exact)
    denominator = 2.0 + e + big * (y - e)  # 2 + e, or y + 2
    s = numerator / denominator
    # atanh series to s^21 (error below 1e-17), in Estrin's order.
    s2 = s * s
    s4 = s2 * s2
    s8 = s4 * s4
    low = (1.0 + s2 * (1.0 / 3.0)) + s4 * (1.0 / 5.0 + s2 * (1.0 / 7.0))
    mid = ((1.0 / 9.0 + s2 * (1.0 / 11.0))
           + s4 * (1.0 / 13.0 + s2 * (1.0 / 15.0)))
    high = (1.0 / 17.0 + s2 * (1.0 / 19.0)) + s4 * (1.0 / 21.0)
    q = low + s8 * (mid + s8 * high)
    return 2.0 * s * q + big * _LN2


@njit(**_scalar)
def _log_at_least_1(x):
    """log(x) for finite x >= 1, branch-free: e ln2 + log(1 + f), x = 2^e (1 + f)."""
    bits = _float_to_bits(x)
    e = np.float64((bits >> 52) - 1023)
    f = _bits_to_float((bits & _MANTISSA) | _EXPONENT_ONE) - 1.0  # exact, in [0, 1)
    return e * _LN2_HI + (e * _LN2_LO + _log1p_unit(f))


@njit(**_scalar)
def softplus(z):
    """log(1 + exp(z)), without overflow, branch-free, to about 1e-15."""
    return (0.0 if 0.0 > z else z) + _log1p_unit(_exp_neg(abs(z)))


@njit(**_jit)
def softplus_array(z, out):
    """``out[i] = softplus(z[i])`` (for tests and benchmarks)."""
    for i in range(z.shape[0]):
        out[i] = softplus(z[i])


@njit(**_jit)
def _max(values):
    top = values[0]
    for k in range(1, values.shape[0]):
        top = values[k] if values[k] > top else top
    return top


def padded_length(n_val):
    """``n_val`` rounded up to whole SIMD vectors of ``LANES`` rows."""
    return -(-n_val // LANES) * LANES


def validation_scratch(n_val):
    """Scratch for :func:`utility_of_margins`: ``(3, max(padded_length(n_val), 2 LANES))``."""
    return np.empty((3, max(padded_length(n_val), 2 * LANES)))


@njit(**_jit)
def _sum(values, n):
    """Sum of ``values[:n]`` with four accumulators (a fixed order: deterministic)."""
    a0 = a1 = a2 = a3 = 0.0
    i = 0
    while i + 4 <= n:
        a0 += values[i]
        a1 += values[i + 1]
        a2 += values[i + 2]
        a3 += values[i + 3]
        i += 4
    while i < n:
        a0 += values[i]
        i += 1
    return (a0 + a1) + (a2 + a3)


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def unit_weights(n_rows):
    """Row weights of an unweighted loss: ones (one multiply a row, no branch)."""
    return np.ones(n_rows)


def one_row_each(offsets, block=2**20):
    """Whether ``offsets`` is ``0, 1, ..., n`` (one row a party), checked a
    block at a time: no temporary of n numbers."""
    return all(np.array_equal(offsets[lo:lo + block],
                              np.arange(lo, min(lo + block, len(offsets))))
               for lo in range(0, len(offsets), block))


def pad_columns(a):
    """``a`` (rows) transposed to ``(n_columns, padded_length(n_rows))``, zero-padded.

    The validation set's layout in the walk: one contiguous row per feature
    (or output), padded so that loops over validation rows run in whole SIMD
    vectors.
    """
    a = np.asarray(a, dtype=np.float64)
    out = np.zeros((a.shape[1], padded_length(a.shape[0])))
    out[:, :a.shape[0]] = a.T
    return out


def level_flag(record_level):
    """The walks' ``record_level`` argument: True, or None at sample level.

    numba compiles a kernel once per argument type and drops the branches a
    None argument rules out (as :func:`skdpval.kernels._losses.kernel_codes`): a
    sample-level walk compiles without the record-level releases.
    """
    return True if record_level else None
