"""The losses and the validation utility, dispatched on the loss's code.

Loss codes: margin losses (LOGISTIC, HINGE, SQUARED_HINGE, MODIFIED_HUBER,
PERCEPTRON) take targets in {-1, +1}, one output per class for one-vs-rest;
MULTINOMIAL takes one-hot targets; the others take real targets. One loss
parameter ``loss_param`` serves the losses that have one: the epsilon of
HUBER, EPSILON_INSENSITIVE and SQUARED_EPSILON_INSENSITIVE, the quantile of
PINBALL, the power p of TWEEDIE (others ignore it). A family's own loss is
a :class:`~skdpval.kernels.MarginLoss` instead of a code: the functions
below take it too (:mod:`skdpval.kernels._margin_loss`).
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

from ._margin_loss import MarginLoss, MarginLossType, loss_of
from ._math import (_exp, _exp_neg, _jit, _log_at_least_1, _max, _scalar,
                    _scalar_py, _sum, LANES, softplus)


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
    if loss != TWEEDIE:
        raise ValueError("unknown loss code")
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
    if loss != TWEEDIE:
        raise ValueError("unknown loss code")
    # d/dm, valid at p = 1 and p = 2 too
    return np.exp((2.0 - loss_param) * m) - t * np.exp((1.0 - loss_param) * m)


@njit(**_jit)
def _coded_sample_loss(loss, margins, targets, loss_param):
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
def _coded_sample_dloss(loss, margins, targets, loss_param, out):
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


@njit(**_jit)
def losses_and_gradients(loss, margins, T, row_weights, loss_param, dloss_out):
    """``mean_r w_r loss(margins[r], T[r])``; ``dloss_out[r]`` <- ``w_r / n``
    times its gradient in the margins (rows first: the parameter-space
    objective of :func:`skdpval.kernels._subspace_problem.mean_loss_and_gradient`)."""
    n_rows = margins.shape[0]
    total = 0.0
    for row in range(n_rows):
        total += row_weights[row] * sample_loss(loss, margins[row], T[row], loss_param)
        sample_dloss(loss, margins[row], T[row], loss_param, dloss_out[row])
        scale = row_weights[row] / n_rows
        for k in range(margins.shape[1]):
            dloss_out[row, k] *= scale
    return total / n_rows

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
def _coded_row_losses(loss, margins, T_val_t, loss_param, scratch):
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
        # branch-free exp, so that they vectorise (np.exp does not).
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

# --- the entry points: a loss code, or a family's own loss ---------------------------
#
# The kernels call these; numba picks, when it compiles a kernel, the coded
# functions above for a loss code (or None, the binary logistic loss) and a
# MarginLoss's own functions for one (inlined: the kernel runs them at a
# built-in loss's speed). Called from Python they run the same code.


def sample_loss(loss, margins, targets, loss_param):
    """Loss of one sample: summed over outputs (one-vs-rest) or multinomial."""
    if isinstance(loss, MarginLoss):
        return float(sum(loss.value(m, t, loss_param) for m, t in zip(margins, targets)))
    return _coded_sample_loss(loss, margins, targets, loss_param)


def sample_dloss(loss, margins, targets, loss_param, out):
    """Gradient of :func:`sample_loss` with respect to the margins, into ``out``."""
    if isinstance(loss, MarginLoss):
        for k in range(len(margins)):
            out[k] = loss.derivative(margins[k], targets[k], loss_param)
        return
    _coded_sample_dloss(loss, margins, targets, loss_param, out)


def output_dloss(loss, m, t, loss_param):
    """Derivative of one output's loss in its margin ``m``."""
    if isinstance(loss, MarginLoss):
        return loss.derivative(m, t, loss_param)
    return _output_dloss(loss, m, t, loss_param)


def _row_losses(loss, margins, T_val_t, loss_param, scratch):
    """``scratch[0, i]`` = the loss of validation row ``i``, for every column."""
    if isinstance(loss, MarginLoss):
        scratch[0, :margins.shape[1]] = [
            sum(loss.value(margins[k, i], T_val_t[k, i], loss_param)
                for k in range(margins.shape[0])) for i in range(margins.shape[1])]
        return
    _coded_row_losses(loss, margins, T_val_t, loss_param, scratch)


def log_link(loss):
    """Whether a prediction is ``exp(margin)`` (the Tweedie losses' log link)."""
    return loss is not None and not isinstance(loss, MarginLoss) and loss == TWEEDIE


@overload(sample_loss, inline="always")
def _sample_loss_of(loss, margins, targets, loss_param):
    if isinstance(loss, MarginLossType):
        value = loss_of(loss).value

        def margin_loss(loss, margins, targets, loss_param):
            total = 0.0
            for k in range(margins.shape[0]):
                total += value(margins[k], targets[k], loss_param)
            return total
        return margin_loss
    return lambda loss, margins, targets, loss_param: _coded_sample_loss(
        loss, margins, targets, loss_param)


@overload(sample_dloss, inline="always")
def _sample_dloss_of(loss, margins, targets, loss_param, out):
    if isinstance(loss, MarginLossType):
        derivative = loss_of(loss).derivative

        def margin_loss(loss, margins, targets, loss_param, out):
            for k in range(margins.shape[0]):
                out[k] = derivative(margins[k], targets[k], loss_param)
        return margin_loss

    def coded(loss, margins, targets, loss_param, out):
        _coded_sample_dloss(loss, margins, targets, loss_param, out)
    return coded


@overload(output_dloss, inline="always")
def _output_dloss_of(loss, m, t, loss_param):
    if isinstance(loss, MarginLossType):
        derivative = loss_of(loss).derivative
        return lambda loss, m, t, loss_param: derivative(m, t, loss_param)
    return lambda loss, m, t, loss_param: _output_dloss(loss, m, t, loss_param)


@overload(_row_losses, inline="always")
def _row_losses_of(loss, margins, T_val_t, loss_param, scratch):
    if isinstance(loss, MarginLossType):
        value = loss_of(loss).value

        def margin_loss(loss, margins, T_val_t, loss_param, scratch):
            out = scratch[0]
            for i in range(margins.shape[1]):
                out[i] = 0.0
            for k in range(margins.shape[0]):
                m, t = margins[k], T_val_t[k]
                for i in range(margins.shape[1]):
                    out[i] += value(m[i], t[i], loss_param)
        return margin_loss

    def coded(loss, margins, T_val_t, loss_param, scratch):
        _coded_row_losses(loss, margins, T_val_t, loss_param, scratch)
    return coded


@overload(log_link, inline="always")
def _log_link_of(loss):
    if isinstance(loss, (MarginLossType, types.NoneType)):
        return lambda loss: False
    return lambda loss: loss == TWEEDIE


def margin_value(loss, m, t, loss_param):
    """One output's loss at margin ``m`` (a code's, None the binary logistic
    loss's, or a :class:`~skdpval.kernels.MarginLoss`'s)."""
    if isinstance(loss, MarginLoss):
        return loss.value(m, t, loss_param)
    return softplus(-t * m) if loss is None else output_loss(loss, m, t, loss_param)


def margin_curvature(loss, m, t, loss_param):
    """A :class:`~skdpval.kernels.MarginLoss`'s second derivative in ``m``."""
    return loss.second(m, t, loss_param)


@overload(margin_value, inline="always")
def _margin_value_of(loss, m, t, loss_param):
    if isinstance(loss, MarginLossType):
        value = loss_of(loss).value
        return lambda loss, m, t, loss_param: value(m, t, loss_param)
    if isinstance(loss, types.NoneType):
        return lambda loss, m, t, loss_param: softplus(-t * m)
    return lambda loss, m, t, loss_param: output_loss(loss, m, t, loss_param)


@overload(margin_curvature, inline="always")
def _margin_curvature_of(loss, m, t, loss_param):
    if isinstance(loss, MarginLossType):
        second = loss_of(loss).second
        return lambda loss, m, t, loss_param: second(m, t, loss_param)


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
        if log_link(loss):  # the prediction is exp(margin)
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
    raise ValueError("unknown utility code")


def loss_argument(loss):
    """A loss as the kernels take it: its integer code, or a family's own
    :class:`~skdpval.kernels.MarginLoss` (a numba type of its own)."""
    return loss if isinstance(loss, MarginLoss) else int(loss)


def kernel_codes(loss, utility, n_outputs):
    """The loss and utility arguments of the kernels: codes, or None for the defaults.

    numba compiles a kernel once per argument type and drops the branches a
    None argument rules out: the binary logistic loss (None) and the
    negative loss utility (None), the defaults, are compiled alone, which
    halves a first fit's compilation. A :class:`~skdpval.kernels.MarginLoss`
    is a type of its own: a kernel is compiled for it alone too.
    """
    return (None if loss == LOGISTIC and n_outputs == 1 else loss_argument(loss),
            None if utility == NEG_LOSS else int(utility))
