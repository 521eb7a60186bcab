"""Numba kernels: losses, gradients, utilities and the permutation walk.

Everything here takes contiguous float64 / int64 arrays and plain scalars; the
Python side turns strings into the integer codes below once, before any kernel
runs, and allocates every buffer (kernels allocate nothing). The thin wrappers
at the bottom of the module are the only entry points used by the rest of the
package.

Layout:

- parameters ``theta`` are ``(n_outputs, n_columns)``; when the model fits an
  intercept, ``X`` carries a trailing column of ones and the last column of
  ``theta`` is the intercept, which the penalty does not touch
  (``n_penalized = n_columns - 1``; liblinear's models penalise it: then
  ``n_penalized = n_columns``);
- the penalty is ``l2/2 ||W||^2 + l1 ||W||_1`` on the penalised columns,
  its gradient added to the loss gradient before clipping; ``row_weights``
  (ones when unweighted) multiply each row's loss;
- a party is a block of rows ``X[offsets[j]:offsets[j + 1]]`` (one row per
  party for sample valuation); its gradient is that of its mean loss,
  clipped once, or (record-level privacy) the sum of its rows' clipped
  gradients, noised, then divided by its number of rows;
- the validation set is stored transposed, ``X_val_t`` ``(n_columns, n_pad)``
  and ``T_val_t`` ``(n_outputs, n_pad)``, zero-padded from ``n_val`` to
  ``n_pad = padded_length(n_val)`` rows (whole SIMD vectors: a scalar
  remainder loop costs as much as the vectorised body at n_val ~ 150); its
  margins ``(n_outputs, n_pad)`` are updated in place (exactly, as they are
  linear in theta), so that the inner loops run over contiguous validation
  rows and vectorise. ``labels_val`` keeps the true length ``n_val``.

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
walks too) and code for losses the fit does not use (``kernel_codes``).
"""

import numpy as np
from numba import njit
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ..privacy._release import clip_l2, release_step, walk_stream

# Loss codes. Margin losses (LOGISTIC, HINGE, SQUARED_HINGE, MODIFIED_HUBER,
# PERCEPTRON) take targets in {-1, +1}, one output per class for one-vs-rest;
# MULTINOMIAL takes one-hot targets; the others take real targets. One loss
# parameter ``loss_param`` serves the losses that have one: the epsilon of
# HUBER, EPSILON_INSENSITIVE and SQUARED_EPSILON_INSENSITIVE, the quantile of
# PINBALL, the power p of TWEEDIE (others ignore it).
LOGISTIC = 0
MULTINOMIAL = 1
SQUARED = 2  # 0.5 r^2, r = m - t
HINGE = 3  # max(0, 1 - t m)
SQUARED_HINGE = 4  # max(0, 1 - t m)^2
MODIFIED_HUBER = 5
HUBER = 6  # 0.5 r^2 for |r| <= eps, else eps |r| - eps^2 / 2
PERCEPTRON = 7  # max(0, -t m)
EPSILON_INSENSITIVE = 8  # max(0, |r| - eps)
SQUARED_EPSILON_INSENSITIVE = 9  # max(0, |r| - eps)^2
PINBALL = 10  # q (t - m) for t >= m, else (1 - q) (m - t)
# Half Tweedie deviance of the prediction exp(m) (log link), up to a term of
# t alone (it cancels in every difference of utilities and every gradient):
# exp((2 - p) m) / (2 - p) - t exp((1 - p) m) / (1 - p), with the limits
# exp(m) - t m at p = 1 (Poisson) and m + t exp(-m) at p = 2 (Gamma).
TWEEDIE = 11

# Utility codes.
NEG_LOSS = 0
ACCURACY = 1
NEG_MSE = 2
R2 = 3

# Doubles per SIMD vector (AVX-512); validation rows are padded to a multiple.
LANES = 8

# No reference counting (numba's private ``_nrt`` flag): every array
# argument of a jitted call and every view taken costs an atomic increment
# and decrement of a reference count, which took 180 of the 210 ns of a step
# of the walk along a line. Kernels allocate nothing (the caller passes the
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

# --- softplus, branch-free so that loops over validation rows vectorise -----

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


# --- losses -------------------------------------------------------------------

@njit(**_scalar)
def output_loss(loss, m, t, loss_param):
    """Loss of one output with margin ``m`` and target ``t`` (not MULTINOMIAL)."""
    if loss == LOGISTIC:
        return softplus(-t * m)
    if loss == SQUARED:
        r = m - t
        return 0.5 * r * r
    if loss == HINGE:
        h = 1.0 - t * m
        return h if h > 0.0 else 0.0
    if loss == SQUARED_HINGE:
        h = 1.0 - t * m
        h = h if h > 0.0 else 0.0
        return h * h
    if loss == MODIFIED_HUBER:
        z = t * m
        if z >= 1.0:
            return 0.0
        if z >= -1.0:
            return (1.0 - z) * (1.0 - z)
        return -4.0 * z
    if loss == HUBER:
        a = abs(m - t)
        if a <= loss_param:
            return 0.5 * a * a
        return loss_param * a - 0.5 * loss_param * loss_param
    if loss == PERCEPTRON:
        h = -t * m
        return h if h > 0.0 else 0.0
    if loss == EPSILON_INSENSITIVE:
        h = abs(m - t) - loss_param
        return h if h > 0.0 else 0.0
    if loss == SQUARED_EPSILON_INSENSITIVE:
        h = abs(m - t) - loss_param
        h = h if h > 0.0 else 0.0
        return h * h
    if loss == PINBALL:
        r = t - m
        a, b = loss_param * r, (loss_param - 1.0) * r
        return b if b > a else a
    # TWEEDIE
    if loss_param == 1.0:
        return np.exp(m) - t * m
    if loss_param == 2.0:
        return m + t * np.exp(-m)
    return (np.exp((2.0 - loss_param) * m) / (2.0 - loss_param)
            - t * np.exp((1.0 - loss_param) * m) / (1.0 - loss_param))


@njit(**_scalar)
def _logistic_dloss(m, t):
    """Derivative of ``softplus(-t m)`` with respect to ``m``, without overflow.

    Without a branch: the sign of ``t m`` is the data's, and a mispredicted
    branch stalls the walks that step together."""
    z = t * m
    e = np.exp(-abs(z))
    return -t * (e if z > 0.0 else 1.0) / (1.0 + e)


@njit(**_jit)
def _output_dloss(loss, m, t, loss_param):
    """Derivative of ``output_loss`` with respect to the margin ``m``."""
    if loss == LOGISTIC:
        return _logistic_dloss(m, t)
    if loss == SQUARED:
        return m - t
    if loss == HINGE:
        return -t if t * m < 1.0 else 0.0
    if loss == SQUARED_HINGE:
        z = t * m
        return -2.0 * t * (1.0 - z) if z < 1.0 else 0.0
    if loss == MODIFIED_HUBER:
        z = t * m
        if z >= 1.0:
            return 0.0
        if z >= -1.0:
            return -2.0 * t * (1.0 - z)
        return -4.0 * t
    if loss == HUBER:
        r = m - t
        if r > loss_param:
            return loss_param
        if r < -loss_param:
            return -loss_param
        return r
    if loss == PERCEPTRON:
        return -t if t * m <= 0.0 else 0.0
    if loss == EPSILON_INSENSITIVE:
        r = m - t
        if r > loss_param:
            return 1.0
        if r < -loss_param:
            return -1.0
        return 0.0
    if loss == SQUARED_EPSILON_INSENSITIVE:
        r = m - t
        if r > loss_param:
            return 2.0 * (r - loss_param)
        if r < -loss_param:
            return 2.0 * (r + loss_param)
        return 0.0
    if loss == PINBALL:
        return -loss_param if t > m else 1.0 - loss_param
    # TWEEDIE: d/dm, valid at p = 1 and p = 2 too
    return np.exp((2.0 - loss_param) * m) - t * np.exp((1.0 - loss_param) * m)


@njit(**_jit)
def _max(values):
    top = values[0]
    for k in range(1, values.shape[0]):
        top = values[k] if values[k] > top else top
    return top


@njit(**_jit)
def sample_loss(loss, margins, targets, loss_param):
    """Loss of one sample: summed over outputs (one-vs-rest) or multinomial."""
    if loss is None:  # binary logistic, compiled alone (see ``kernel_codes``)
        return 0.0 + softplus(-targets[0] * margins[0])
    n_outputs = margins.shape[0]
    if loss == MULTINOMIAL:
        top = _max(margins)
        total = 0.0
        dot = 0.0
        for k in range(n_outputs):
            total += np.exp(margins[k] - top)
            dot += targets[k] * margins[k]
        return top + np.log(total) - dot
    value = 0.0
    for k in range(n_outputs):
        value += output_loss(loss, margins[k], targets[k], loss_param)
    return value


@njit(**_jit)
def sample_dloss(loss, margins, targets, loss_param, out):
    """Gradient of ``sample_loss`` with respect to the margins, into ``out``."""
    if loss is None:  # binary logistic, compiled alone (see ``kernel_codes``)
        out[0] = _logistic_dloss(margins[0], targets[0])
        return
    n_outputs = margins.shape[0]
    if loss == MULTINOMIAL:
        top = _max(margins)
        total = 0.0
        for k in range(n_outputs):
            out[k] = np.exp(margins[k] - top)
            total += out[k]
        for k in range(n_outputs):
            out[k] = out[k] / total - targets[k]
        return
    for k in range(n_outputs):
        out[k] = _output_dloss(loss, margins[k], targets[k], loss_param)


@njit(**_scalar_py)
def party_gradient(theta, X, T, row_weights, start, stop, loss, loss_param, l2,
                   l1, n_penalized, margin_buf, dloss_buf, out):
    """Gradient of the weighted mean loss of rows ``start:stop`` plus the penalty.

    Row ``r``'s loss is multiplied by ``row_weights[r]`` (ones when
    unweighted); the penalty is ``l2/2 ||W||^2 + l1 ||W||_1`` on the
    penalised columns, its L1 part by the subgradient ``sign(W)`` (0 at 0).
    The penalty terms are part of the gradient the caller clips: they depend
    on theta alone, public within the walk, so the clipped release keeps
    sensitivity ``clip_norm`` either way; clipping them with the loss keeps
    every step's length at most ``learning_rate * clip_norm``.
    """
    n_outputs, n_columns = theta.shape
    for k in range(n_outputs):
        for c in range(n_columns):
            out[k, c] = 0.0
    for row in range(start, stop):
        x = X[row]
        for k in range(n_outputs):
            m = 0.0
            for c in range(n_columns):
                m += theta[k, c] * x[c]
            margin_buf[k] = m
        sample_dloss(loss, margin_buf, T[row], loss_param, dloss_buf)
        weight = row_weights[row]
        for k in range(n_outputs):
            dk = weight * dloss_buf[k]
            for c in range(n_columns):
                out[k, c] += dk * x[c]
    if stop - start > 1:
        inverse = 1.0 / (stop - start)
        for k in range(n_outputs):
            for c in range(n_columns):
                out[k, c] *= inverse
    for k in range(n_outputs):
        for c in range(n_penalized):
            out[k, c] += l2 * theta[k, c]
    if l1 != 0.0:
        for k in range(n_outputs):
            for c in range(n_penalized):
                out[k, c] += l1 * np.sign(theta[k, c])


@njit(**_scalar)
def party_clipped_sum(theta, X, T, row_weights, start, stop, loss, loss_param, l2,
                      l1, n_penalized, clip_norm, margin_buf, dloss_buf, record, out):
    """Sum over rows ``start:stop`` of each row's gradient (its weighted loss
    plus the penalty), each clipped to ``clip_norm``: record-level privacy.

    One row changes the sum by at most ``clip_norm`` (zero-out), whatever
    the party's size; ``record`` is a buffer shaped like ``theta``.
    """
    n_outputs, n_columns = theta.shape
    for k in range(n_outputs):
        for c in range(n_columns):
            out[k, c] = 0.0
    for row in range(start, stop):
        party_gradient(theta, X, T, row_weights, row, row + 1, loss, loss_param, l2,
                       l1, n_penalized, margin_buf, dloss_buf, record)
        clip_l2(record, clip_norm)
        for k in range(n_outputs):
            for c in range(n_columns):
                out[k, c] += record[k, c]


@njit(**_jit)
def losses_and_gradients(loss, margins, T, row_weights, loss_param, dloss_out):
    """``mean_r w_r loss(margins[r], T[r])``; ``dloss_out[r]`` <- ``w_r / n``
    times its gradient in the margins (rows first: the parameter-space
    objective of :func:`skdpval.kernels._subspace.mean_loss_and_gradient`)."""
    n_rows = margins.shape[0]
    total = 0.0
    for row in range(n_rows):
        total += row_weights[row] * sample_loss(loss, margins[row], T[row], loss_param)
        sample_dloss(loss, margins[row], T[row], loss_param, dloss_out[row])
        scale = row_weights[row] / n_rows
        for k in range(margins.shape[1]):
            dloss_out[row, k] *= scale
    return total / n_rows


# --- utility on the validation set --------------------------------------------

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


# Rows whose factors (1 + exp(-|z|)) <= 2 are multiplied before a log: 2^512
# cannot overflow.
_ROWS_PER_LOG = 512


@njit(**_scalar_py)
def logistic_loss_sum(margins, targets, n_val, scratch):
    """``sum(softplus(-targets[i] * margins[i]) for i < n_val)``, one log per 512 rows.

    softplus(z) = max(z, 0) + log(1 + e), e = exp(-|z|) in (0, 1]: the logs
    of a block add up to log(prod(1 + e)), kept in each of LANES lanes as
    ``q = prod - 1`` (``q += e (1 + q)``, which keeps tiny ``e`` exact) and
    taken once with log1p. Each row then costs one exp instead of an exp
    and a log1p; the result agrees with summing softplus row by row to a few
    ulps of the sum. ``scratch`` is ``validation_scratch(n_val)``.
    """
    n_rows = margins.shape[0]
    exps, hinges, lanes = scratch[0], scratch[1], scratch[2]
    for i in range(n_rows):
        z = -targets[i] * margins[i]
        exps[i] = _exp_neg(abs(z))
        hinges[i] = 0.0 if 0.0 > z else z
    for i in range(n_val, n_rows):  # the padding adds nothing
        exps[i] = 0.0
        hinges[i] = 0.0
    for lane in range(2 * LANES):
        lanes[lane] = 0.0
    logs = 0.0
    for block in range(0, n_rows, _ROWS_PER_LOG):
        end = block + _ROWS_PER_LOG
        for first in range(block, n_rows if n_rows < end else end, LANES):
            for lane in range(LANES):
                q = lanes[lane]
                lanes[lane] = q + exps[first + lane] * (1.0 + q)
                lanes[LANES + lane] += hinges[first + lane]
        q = 0.0
        for lane in range(LANES):
            q = q + lanes[lane] * (1.0 + q)
            lanes[lane] = 0.0
        logs += np.log1p(q)
    total = logs
    for lane in range(LANES):
        total += lanes[LANES + lane]
    return total


@njit(**_jit)
def _row_losses(loss, margins, T_val_t, loss_param, scratch):
    """``scratch[0, i]`` = the loss of validation row ``i``, for every column.

    Every loop runs over contiguous rows with no branch on the row, so that
    it vectorises; the multinomial loss uses ``scratch[1:3]`` for each row's
    top margin and its sum of exponentials.
    """
    n_outputs, n_rows = margins.shape
    out = scratch[0]
    if loss == MULTINOMIAL:
        top, total = scratch[1], scratch[2]
        for i in range(n_rows):
            top[i] = margins[0, i]
            total[i] = 0.0
            out[i] = 0.0
        for k in range(1, n_outputs):
            m = margins[k]
            for i in range(n_rows):
                top[i] = m[i] if m[i] > top[i] else top[i]
        for k in range(n_outputs):
            m, t = margins[k], T_val_t[k]
            for i in range(n_rows):
                total[i] += _exp_neg(top[i] - m[i])
                out[i] -= t[i] * m[i]
        for i in range(n_rows):
            out[i] += top[i] + _log_at_least_1(total[i])
    elif loss == TWEEDIE:
        # As output_loss, with the power's branch outside the loops and a
        # branch-free exp, so that they vectorise (3-5x faster than np.exp).
        p = loss_param
        m, t = margins[0], T_val_t[0]
        if p == 1.0:
            for i in range(n_rows):
                out[i] = _exp(m[i]) - t[i] * m[i]
        elif p == 2.0:
            for i in range(n_rows):
                out[i] = m[i] + t[i] * _exp(-m[i])
        else:
            # exp((2 - p) m) = exp(m) exp((1 - p) m): the second exp is
            # of the same argument as the term of t.
            b, over_a, over_b = 1.0 - p, 1.0 / (2.0 - p), 1.0 / (1.0 - p)
            for i in range(n_rows):
                e = _exp(b * m[i])
                out[i] = e * (_exp(m[i]) * over_a - t[i] * over_b)
    else:
        for i in range(n_rows):
            out[i] = 0.0
        for k in range(n_outputs):
            m, t = margins[k], T_val_t[k]
            for i in range(n_rows):
                out[i] += output_loss(loss, m[i], t[i], loss_param)


@njit(**_scalar)
def utility_of_margins(utility, loss, margins, T_val_t, labels, loss_param,
                       total_sum_squares, scratch):
    """Utility of the validation margins ``(n_outputs, n_columns)``.

    The validation set has ``n_val = len(labels)`` rows; ``margins`` and
    ``T_val_t`` may carry zero columns past them (padding to whole SIMD
    vectors, see ``padded_length``), which are computed and then ignored.
    ``scratch`` is ``validation_scratch(n_val)`` (or larger).
    """
    n_outputs, n_columns = margins.shape
    n_val = labels.shape[0]
    if utility is None:  # NEG_LOSS, compiled alone (see ``kernel_codes``)
        if loss is None:  # binary logistic, likewise
            return -logistic_loss_sum(margins[0], T_val_t[0], n_val, scratch) / n_val
        _row_losses(loss, margins, T_val_t, loss_param, scratch)
        return -_sum(scratch[0], n_val) / n_val
    if utility == ACCURACY:
        correct = 0
        for i in range(n_val):
            predicted = 0
            if n_outputs == 1:
                predicted = 1 if margins[0, i] > 0.0 else 0
            else:
                for k in range(1, n_outputs):
                    if margins[k, i] > margins[predicted, i]:
                        predicted = k
            correct += predicted == labels[i]
        return correct / n_val
    if utility == NEG_MSE or utility == R2:
        m, t, squares = margins[0], T_val_t[0], scratch[0]
        log_link = False
        if loss is not None:
            log_link = loss == TWEEDIE
        if log_link:  # the prediction is exp(margin)
            for i in range(n_columns):
                r = _exp(m[i]) - t[i]
                squares[i] = r * r
        else:
            for i in range(n_columns):
                r = m[i] - t[i]
                squares[i] = r * r
        total = _sum(squares, n_val)
        if utility == R2:
            return 1.0 - total / total_sum_squares
        return -total / n_val
    return np.nan  # no other utility code exists


@njit(**_scalar)
def _step_margins(X_val_t, update, learning_rate, margins):
    """``margins -= lr * update @ X_val``: exact, as margins are linear in theta.

    Four columns per pass over the rows (subtracted in column order, so the
    sum is the one-column-at-a-time sum): a quarter of the loads and stores.
    """
    n_outputs, n_columns = update.shape
    n_rows = margins.shape[1]
    for k in range(n_outputs):
        row = margins[k]
        c = 0
        while c + 4 <= n_columns:
            s0 = learning_rate * update[k, c]
            s1 = learning_rate * update[k, c + 1]
            s2 = learning_rate * update[k, c + 2]
            s3 = learning_rate * update[k, c + 3]
            x0, x1, x2, x3 = X_val_t[c], X_val_t[c + 1], X_val_t[c + 2], X_val_t[c + 3]
            for i in range(n_rows):
                row[i] = (((row[i] - s0 * x0[i]) - s1 * x1[i]) - s2 * x2[i]) - s3 * x3[i]
            c += 4
        while c < n_columns:
            step = learning_rate * update[k, c]
            column = X_val_t[c]
            for i in range(n_rows):
                row[i] -= step * column[i]
            c += 1


@njit(**_jit)
def _margins(X_val_t, theta, out):
    n_outputs, n_columns = theta.shape
    n_rows = X_val_t.shape[1]
    for k in range(n_outputs):
        row = out[k]
        for i in range(n_rows):
            row[i] = 0.0
        for c in range(n_columns):
            weight = theta[k, c]
            column = X_val_t[c]
            for i in range(n_rows):
                row[i] += weight * column[i]


# --- the walk -----------------------------------------------------------------

@njit(**_jit)
def _walk(X, T, row_weights, offsets, X_val_t, T_val_t, labels_val, loss, utility,
          loss_param, l2, l1, n_penalized, clip_norm, learning_rate,
          total_sum_squares, starts, permutations, stream, x_tt, use_rolling,
          rolling_mean, weights, record_level, marginals, end_utility, theta,
          update, update_flat, record, margin_buf, dloss_buf, margins, scratch):
    """Walk ``b`` starts from ``starts[b % len(starts)]`` and steps through the
    parties ``permutations[b]``; ``theta`` ends as the last walk's parameters.

    ``record_level``: a party's release is the sum of its rows' clipped
    gradients plus the noise, divided by its number of rows (the mean of
    its clipped records); otherwise its mean-loss gradient clipped once,
    plus the noise. The release is the privacy layer's
    (:func:`skdpval.privacy._release.release_step`, from ``stream``), on
    ``update_flat``, a flat view of ``update``; ``rolling_mean`` is
    ``(n_parties, n_outputs * n_columns)``."""
    n_outputs, n_columns = theta.shape
    n_walks, n_steps = permutations.shape

    for b in range(n_walks):
        start = starts[b % starts.shape[0]]
        for k in range(n_outputs):
            for c in range(n_columns):
                theta[k, c] = start[k, c]
        _margins(X_val_t, theta, margins)
        previous = utility_of_margins(utility, loss, margins, T_val_t,
                                      labels_val, loss_param,
                                      total_sum_squares, scratch)
        fresh = x_tt[b]
        for position in range(n_steps):
            j = permutations[b, position]
            if record_level:
                party_clipped_sum(theta, X, T, row_weights, offsets[j],
                                  offsets[j + 1], loss, loss_param, l2, l1,
                                  n_penalized, clip_norm, margin_buf, dloss_buf,
                                  record, update)
            else:
                party_gradient(theta, X, T, row_weights, offsets[j], offsets[j + 1],
                               loss, loss_param, l2, l1, n_penalized, margin_buf,
                               dloss_buf, update)
                clip_l2(update, clip_norm)
            # The release (with x_tt * release + (1 - x_tt) * the mean of
            # the party's past releases when rolling).
            release_step(update_flat, stream, b, j, record_level,
                         offsets[j + 1] - offsets[j], use_rolling, fresh,
                         rolling_mean)
            for k in range(n_outputs):
                for c in range(n_columns):
                    theta[k, c] -= learning_rate * update[k, c]
            _step_margins(X_val_t, update, learning_rate, margins)
            current = utility_of_margins(utility, loss, margins, T_val_t,
                                         labels_val, loss_param,
                                         total_sum_squares, scratch)
            marginals[b, j] = weights[position] * (current - previous)
            previous = current
        end_utility[b] = previous


# --- Python wrappers ------------------------------------------------------------

def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def unit_weights(n_rows):
    """Row weights of an unweighted loss: ones (one multiply a row, no branch)."""
    return np.ones(n_rows)


def one_row_each(offsets, block=2**20):
    """Whether ``offsets`` is ``0, 1, ..., n`` (one row a party), checked a
    block at a time: no temporary of n numbers (n = 1e7: 80 MB)."""
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


def kernel_codes(loss, utility, n_outputs):
    """The loss and utility arguments of the kernels: codes, or None for the defaults.

    numba compiles a kernel once per argument type and drops the branches a
    None argument rules out: the binary logistic loss (None) and the
    negative loss utility (None), the defaults, are compiled alone, which
    halves a first fit's compilation.
    """
    return (None if loss == LOGISTIC and n_outputs == 1 else int(loss),
            None if utility == NEG_LOSS else int(utility))


def _run_walk(X, T, offsets, X_val_t, T_val_t, labels_val, *, loss, utility,
              loss_param, l2, n_penalized, l1=0.0, row_weights=None, clip_norm,
              learning_rate, total_sum_squares, starts, permutations, weights,
              stream=None, x_tt=None, rolling_mean=None, record_level=False):
    """Call the walk kernel with its buffers; return (marginals, end_utility, theta).

    Every kernel entry point of a fit goes through here, so that a fit
    compiles one kernel (numba's first compilation is most of a first fit).
    """
    n_walks = permutations.shape[0]
    n_outputs, n_columns = starts.shape[1:]
    use_rolling = rolling_mean is not None
    stream = walk_stream(stream, use_rolling)
    marginals = np.empty((n_walks, offsets.shape[0] - 1))
    end_utility = np.empty(n_walks)
    theta = np.empty((n_outputs, n_columns))
    update = np.empty_like(theta)
    _walk(X, T, unit_weights(len(X)) if row_weights is None else _f64(row_weights),
          offsets, X_val_t, T_val_t, labels_val,
          *kernel_codes(loss, utility, n_outputs), loss_param, l2, float(l1),
          n_penalized,
          clip_norm, learning_rate, total_sum_squares, starts, _i64(permutations),
          stream, np.ones(n_walks) if x_tt is None else _f64(x_tt), use_rolling,
          np.empty((1, 1)) if rolling_mean is None
          else _f64(rolling_mean).reshape(len(rolling_mean), -1),
          weights, bool(record_level), marginals, end_utility, theta,
          update, update.reshape(-1), np.empty_like(theta),
          np.empty(n_outputs), np.empty(n_outputs),
          np.empty((n_outputs, X_val_t.shape[1])),
          validation_scratch(len(labels_val)))
    return marginals, end_utility, theta


def walk(problem, permutations, stream, x_tt, rolling_mean):
    """Run the G-Shapley walk along each permutation of a block, independently.

    Parameters
    ----------
    problem : WalkProblem
        The data and settings (see ``skdpval.walks._walk``), already contiguous.
    permutations : ndarray of shape (n_walks, n_parties)
    stream : tuple or None
        The release stream (:func:`skdpval.privacy._release.release_stream`):
        each party's integer noise, indexed by party (not position), and the
        grid; None: no noise. With ``rolling_mean`` its noise is overwritten
        with the raw releases.
    x_tt : ndarray of shape (n_walks,)
        Weight of the fresh release; the rest goes to ``rolling_mean``.
    rolling_mean : ndarray of shape (n_parties, n_outputs, n_columns) or None
        Each party's mean of its earlier raw releases (read only); ``None`` for
        i.i.d. releases.

    Returns
    -------
    marginals : ndarray of shape (n_walks, n_parties)
        Weighted marginal contribution of each party, indexed by party.
    end_utility : ndarray of shape (n_walks,)
        Utility after the last step of each walk.
    """
    p = problem
    marginals, end_utility, _ = _run_walk(
        p.X, p.T, p.offsets, p.X_val_t, p.T_val_t, p.labels_val, loss=p.loss,
        utility=p.utility, loss_param=p.loss_param, l2=p.l2, l1=p.l1,
        row_weights=p.row_weights, n_penalized=p.n_penalized, clip_norm=p.clip_norm,
        learning_rate=p.learning_rate, total_sum_squares=p.total_sum_squares,
        starts=p.theta_init[None], permutations=permutations, weights=p.weights,
        stream=stream, x_tt=x_tt, rolling_mean=rolling_mean,
        record_level=p.record_level)
    return marginals, end_utility


def sgd_pass(X, T, *, loss, loss_param, l2, n_penalized, clip_norm,
             learning_rate, theta_init, order, l1=0.0, row_weights=None):
    """Return theta after one clipped SGD pass over the rows ``order`` of X.

    The pass is a noiseless walk through the parties ``order`` (one row
    each, repeats allowed) with no validation rows; ``row_weights`` (one per
    row of X, default ones) weigh the rows' losses.
    """
    X = _f64(X)
    theta_init = _f64(theta_init)
    n_columns = theta_init.shape[1]
    _, _, theta = _run_walk(
        X, _f64(T), np.arange(X.shape[0] + 1), np.zeros((n_columns, 0)),
        np.zeros((theta_init.shape[0], 0)), np.empty(0, dtype=np.int64),
        loss=int(loss), utility=NEG_LOSS, loss_param=float(loss_param),
        l2=float(l2), n_penalized=int(n_penalized), clip_norm=float(clip_norm),
        learning_rate=float(learning_rate), total_sum_squares=1.0, l1=l1,
        row_weights=row_weights, starts=theta_init[None],
        permutations=_i64(order)[None],
        weights=np.zeros(len(order)))
    return theta


def utilities_of_thetas(thetas, X_val, T_val, labels_val, *, loss, utility,
                        loss_param, total_sum_squares):
    """Utility of each parameter matrix ``thetas[i]`` on the validation set (rows).

    Each is a walk of no steps from ``thetas[i]``.
    """
    thetas = _f64(thetas)
    n_outputs, n_columns = thetas.shape[1:]
    _, utilities, _ = _run_walk(
        np.zeros((0, n_columns)), np.zeros((0, n_outputs)), np.zeros(1, np.int64),
        pad_columns(X_val), pad_columns(T_val), _i64(labels_val), loss=int(loss),
        utility=int(utility), loss_param=float(loss_param), l2=0.0,
        n_penalized=0, clip_norm=1.0, learning_rate=0.0,
        total_sum_squares=float(total_sum_squares), starts=thetas,
        permutations=np.zeros((len(thetas), 0), np.int64), weights=np.zeros(0))
    return utilities


def utility_of_theta(theta, X_val, T_val, labels_val, **settings):
    """Utility of the parameters ``theta`` on the validation set (rows)."""
    return utilities_of_thetas(np.asarray(theta)[None], X_val, T_val, labels_val,
                               **settings)[0]


@njit(**_jit)
def _party_gradients(theta, X, T, row_weights, offsets, loss, loss_param, l2, l1,
                     n_penalized, margin_buf, dloss_buf, out):
    for j in range(offsets.shape[0] - 1):
        party_gradient(theta, X, T, row_weights, offsets[j], offsets[j + 1], loss,
                       loss_param, l2, l1, n_penalized, margin_buf, dloss_buf,
                       out[j])


def party_gradients(theta, X, T, offsets, *, loss, loss_param, l2, n_penalized,
                    l1=0.0, row_weights=None):
    """Unclipped gradient of every party at ``theta``: ``(n_parties, *theta.shape)``."""
    theta = _f64(theta)
    out = np.empty((len(offsets) - 1, *theta.shape))
    _party_gradients(theta, _f64(X), _f64(T),
                     unit_weights(len(X)) if row_weights is None else _f64(row_weights),
                     _i64(offsets), int(loss), float(loss_param), float(l2),
                     float(l1), int(n_penalized),
                     np.empty(theta.shape[0]), np.empty(theta.shape[0]), out)
    return out


# --- L2-regularised logistic regression on coalitions (Layered Shapley) ------

@njit(**_jit)
def _coalition_objective(X, y, rows, size, w, lam):
    total = 0.0
    for r in range(size):
        j = rows[r]
        m = 0.0
        for c in range(X.shape[1]):
            m += w[c] * X[j, c]
        total += softplus(-y[j] * m)
    sq = 0.0
    for c in range(w.shape[0]):
        sq += w[c] * w[c]
    return total / size + lam * sq


@njit(**_jit_alloc)
def fit_coalition(X, y, rows, size, lam, w, tol=1e-12, max_iter=100):
    """Newton's method for ``min_w mean_j softplus(-y_j w.x_j) + lam |w|^2``.

    ``rows[:size]`` are the coalition's rows; ``w`` (a warm start) is
    updated in place. Strongly convex: a halving line search keeps every
    step a descent.
    """
    d = X.shape[1]
    gradient = np.empty(d)
    hessian = np.empty((d, d))
    trial = np.empty(d)
    current = _coalition_objective(X, y, rows, size, w, lam)
    for _ in range(max_iter):
        for a in range(d):
            gradient[a] = 2.0 * lam * w[a]
            for b in range(d):
                hessian[a, b] = 2.0 * lam if a == b else 0.0
        for r in range(size):
            j = rows[r]
            m = 0.0
            for c in range(d):
                m += w[c] * X[j, c]
            z = y[j] * m
            p = 1.0 / (1.0 + np.exp(z))  # sigma(-z)
            g_scale = -y[j] * p / size
            h_scale = p * (1.0 - p) / size
            for a in range(d):
                gradient[a] += g_scale * X[j, a]
                for b in range(a + 1):
                    hessian[a, b] += h_scale * X[j, a] * X[j, b]
        norm = 0.0
        for a in range(d):
            norm += gradient[a] * gradient[a]
            for b in range(a):
                hessian[b, a] = hessian[a, b]
        if np.sqrt(norm) < tol:
            break
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while True:
            for a in range(d):
                trial[a] = w[a] - scale * step[a]
            value = _coalition_objective(X, y, rows, size, trial, lam)
            if value <= current or scale < 1e-10:
                break
            scale *= 0.5
        for a in range(d):
            w[a] = trial[a]
        current = value


@njit(**_jit_alloc)
def _coalition_values(X, y, X_val, y_val, members, sizes, lam, out):
    d = X.shape[1]
    w = np.empty(d)
    for b in range(members.shape[0]):
        w[:] = 0.0  # the empty coalition keeps the zero model
        if sizes[b] > 0:
            fit_coalition(X, y, members[b], sizes[b], lam, w)
        total = 0.0
        for i in range(X_val.shape[0]):
            m = 0.0
            for c in range(d):
                m += w[c] * X_val[i, c]
            total += softplus(-y_val[i] * m)
        out[b] = -total / X_val.shape[0]


def coalition_values(X, y, X_val, y_val, members, sizes, lam):
    """Negative validation log loss of the model fitted on each coalition.

    ``members[b, :sizes[b]]`` are coalition ``b``'s rows of ``X``; labels
    are in {-1, +1}; an empty coalition gives the zero model.
    """
    out = np.empty(len(sizes))
    _coalition_values(_f64(X), _f64(y), _f64(X_val), _f64(y_val), _i64(members),
                      _i64(sizes), float(lam), out)
    return out
