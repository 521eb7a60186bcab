"""The walk along one public line: the validation utility as a function of ``z``.

In the default walk the model moves along one public direction,
``theta = z b``, and for one output the validation utility is a public
function ``U(z)`` of one scalar. A step then need not touch the validation
rows: this module reads ``U`` from a table built once per fit, so that a
step costs O(1) in the validation set's size (its party's gradient, its
noise, a table look-up) instead of O(n_val).

- Squared error (``neg_loss``, ``neg_mse``, ``r2``): ``U`` is a quadratic
  ``q2 z^2 + q1 z + q0``, exact; a marginal is computed as
  ``(z' - z) (q2 (z' + z) + q1)``, which does not cancel.
- Binary logistic loss (``neg_loss``): ``U(z) = -mean softplus(-s_v z)`` with
  ``s_v = t_v c_v``. A piecewise quintic Hermite interpolant on a uniform
  grid of step ``h`` (value, first and second derivative at the nodes) is
  within ``h^6 / 46080 * max |U^(6)|`` of ``U`` (the remainder
  ``U^(6)(xi) / 6! * ((x - a)(x - a - h))^3``), and ``|U^(6)| <= 0.26
  mean(s_v^6)`` (``max |sigma^(5)| = 1/4``, at 0), so ``h`` is chosen for an
  error of at most ``LINE_TOLERANCE`` everywhere in the table. The table
  covers where the walks go (the caller says: the valuator takes 0 to the
  validation optimum, widened by its noise); past it ``U`` is computed
  exactly from the rows, so the range costs speed, never accuracy.
- Multinomial loss (``neg_loss``): the same table, with ``|U^(6)| <= 2.29
  mean(R_v^6)`` (the sixth cumulant of the class margins under the softmax,
  ``R_v`` their spread).

That bound is the interpolant's, in exact arithmetic. Reading it in
floating point adds rounding: the walk computes ``x = (z - lo) * inv_h``,
and the nodes sit at ``lo + i h`` rounded, so the point read is within
about ``5 u (|z - lo| + |z|)`` of ``z`` (``u = 2^-53``), which moves ``U``
by at most that times ``max |U'|`` (``<= mean |s_v|``), and the value
carries an ulp or two of ``|U|`` (tested against a long-double reference
on tables of up to 2^16 intervals, with ``8 u``). That is the order of the
exact walk's own rounding of its margins ``z s_v``: near ``z = 0`` it is
below ``1e-15``; on the widest tables (``|z|`` in the thousands) about
``1e-13``.

A value, a weighted mean of differences of two utilities, is then within
``2 * LINE_TOLERANCE * max |weight|`` of the exact walk's, plus that
rounding: 6e-14 absolute near ``z = 0``, against values of 1e-5 to 1e-3.

- Half Tweedie deviance with the log link (``neg_loss`` of the Poisson,
  Gamma and Tweedie regressors): ``U(z) = -mean f(c_v z)`` with ``f(m) =
  e^((2-p) m) / (2-p) - t e^((1-p) m) / (1-p)`` (``e^m - t m`` at ``p = 1``,
  ``m + t e^-m`` at ``p = 2``), a sum of exponentials: the same quintic
  table, with ``|U^(6)| <= mean c_v^6 (|2-p|^5 e^((2-p) c_v z) + |t_v|
  |1-p|^5 e^((1-p) c_v z))`` at its largest over the range (an exponential
  is largest at an end); no table where the range needs more than
  ``max_intervals`` steps.
- Piecewise-polynomial losses (``neg_loss`` with the hinge, squared hinge,
  modified Huber, perceptron, Huber, epsilon-insensitive and its square,
  pinball losses): each row's loss is a polynomial of degree at most 2 in
  ``z`` between its kinks (where ``t m`` or the residual crosses a
  threshold), so ``U`` is one quadratic between consecutive kinks of all
  rows: stored exactly (sorted kinks, each segment's coefficients summed
  in extended precision), read by a binary search, with no interpolation
  error. Each quadratic is expanded around ``z = 0``: evaluating it rounds
  to about ``u`` times its terms (``mean t^2`` for targets far from 0,
  where the exact walk's sum rounds to ``u |U|``: with diabetes' targets
  shifted by 1e4, a value differed from the exact walk's by 1e-8, 2e-15 of
  the largest value). ``neg_mse`` and ``r2`` of any loss without a log link are one
  quadratic, as for squared error.

Everything else (accuracy, one-vs-rest outputs, a basis of more than one
direction) takes the exact walk of
:mod:`skdpval.kernels._subspace`.
The table depends on the validation set and the public direction only.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from . import _losses, _math
from ._margin_loss import MarginLoss
from ._math import _f64, _jit

# Largest error of the tabulated utility anywhere in the table (absolute).
LINE_TOLERANCE = 2.0**-45
# Intervals of the table at most (six doubles each): the range it covers is
# this many steps h, centred on 0; past it the utility is computed exactly.
LINE_MAX_INTERVALS = 2**16

HERMITE = 0  # binary logistic
QUADRATIC = 1
HERMITE_MULTINOMIAL = 2
PIECEWISE = 3  # a quadratic between consecutive kinks, exact
HERMITE_TWEEDIE = 4  # half Tweedie deviance, log link
HERMITE_MARGIN = 5  # a family's own loss (MarginLoss), checked at midpoints


def kind_flag(kind):
    """The walk's ``kind`` argument: None for HERMITE (the binary logistic
    loss, the default model's), which numba then compiles alone, without the
    other kinds' readers (as :func:`skdpval.kernels._losses.kernel_codes`)."""
    return None if kind == HERMITE else int(kind)


LineUtility = namedtuple("LineUtility", ["kind", "lo", "inv_h", "table", "quad",
                                         "s_val"])
LineUtility.__doc__ = """The validation utility along the line, as the kernel reads it.

``kind`` is HERMITE, HERMITE_MULTINOMIAL or HERMITE_TWEEDIE (``table[i]``: the six
coefficients in ``t`` of the quintic on ``z_i + t / inv_h``, ``0 <= t < 1``,
``z_i = lo + i / inv_h``, see :func:`_coefficients`; ``s_val`` the validation rows per unit
``z`` for exact values past the table: ``(n_val, 1)`` signed margins, or
``(n_val, K + 1)``, the K class margins and the true class's, or ``(n_val,
3)``: the margins, targets and the power ``p``), QUADRATIC
(``quad = (q2, q1, q0)``) or PIECEWISE (``s_val[:, 0]``: the sorted kinks;
``table[j] = (c0, c1, c2)``: ``U = c0 + c1 z + c2 z^2`` for ``z`` past
``j`` kinks)."""


# Piecewise-polynomial losses as pieces in a variable w of each row: the
# signed margin t m (classification) or the residual m - t (regression).
# (kinks of w, then each piece's (a0, a1, a2) in w from w = -inf), given
# loss_param.
def _loss_pieces(loss, loss_param):
    e = float(loss_param)
    if loss == _losses.HINGE:  # max(0, 1 - w)
        return [1.0], [(1.0, -1.0, 0.0), (0.0, 0.0, 0.0)]
    if loss == _losses.SQUARED_HINGE:  # max(0, 1 - w)^2
        return [1.0], [(1.0, -2.0, 1.0), (0.0, 0.0, 0.0)]
    if loss == _losses.MODIFIED_HUBER:  # -4 w; (1 - w)^2; 0
        return [-1.0, 1.0], [(0.0, -4.0, 0.0), (1.0, -2.0, 1.0), (0.0, 0.0, 0.0)]
    if loss == _losses.PERCEPTRON:  # max(0, -w)
        return [0.0], [(0.0, -1.0, 0.0), (0.0, 0.0, 0.0)]
    if loss == _losses.HUBER:  # -e w - e^2/2; w^2 / 2; e w - e^2/2
        return [-e, e], [(-0.5 * e * e, -e, 0.0), (0.0, 0.0, 0.5),
                         (-0.5 * e * e, e, 0.0)]
    if loss == _losses.EPSILON_INSENSITIVE:  # max(0, |w| - e)
        return [-e, e], [(-e, -1.0, 0.0), (0.0, 0.0, 0.0), (-e, 1.0, 0.0)]
    if loss == _losses.SQUARED_EPSILON_INSENSITIVE:  # max(0, |w| - e)^2
        return [-e, e], [(e * e, 2.0 * e, 1.0), (0.0, 0.0, 0.0),
                         (e * e, -2.0 * e, 1.0)]
    if loss == _losses.PINBALL:  # q (t - m) for t >= m, else (1 - q)(m - t); w = m - t
        return [0.0], [(0.0, -e, 0.0), (0.0, 1.0 - e, 0.0)]
    return None


_CLASSIFICATION_PIECES = (_losses.HINGE, _losses.SQUARED_HINGE, _losses.MODIFIED_HUBER, _losses.PERCEPTRON)
_PIECEWISE_LOSSES = _CLASSIFICATION_PIECES + (
    _losses.HUBER, _losses.EPSILON_INSENSITIVE, _losses.SQUARED_EPSILON_INSENSITIVE, _losses.PINBALL)


def table_kind(loss, utility, n_outputs):
    """The kind of the table of :func:`line_utility` for ``loss``, ``utility``
    and ``n_outputs``, or None where no table applies (a half Tweedie
    deviance's and a family's own loss's table may still be refused for its
    range)."""
    if isinstance(loss, MarginLoss):
        if n_outputs != 1:
            return None
        if utility in (_losses.NEG_MSE, _losses.R2):
            return QUADRATIC
        return HERMITE_MARGIN if utility == _losses.NEG_LOSS else None
    if loss == _losses.MULTINOMIAL and utility == _losses.NEG_LOSS:
        return HERMITE_MULTINOMIAL
    if n_outputs != 1:
        return None
    if (loss == _losses.SQUARED and utility == _losses.NEG_LOSS) or (
            loss != _losses.TWEEDIE and utility in (_losses.NEG_MSE, _losses.R2)):
        return QUADRATIC
    if utility != _losses.NEG_LOSS:
        return None
    if loss == _losses.LOGISTIC:
        return HERMITE
    if loss == _losses.TWEEDIE:
        return HERMITE_TWEEDIE
    return PIECEWISE if loss in _PIECEWISE_LOSSES else None


def _piecewise(c_val, t_val, loss, loss_param):
    """The :data:`LineUtility` of ``U(z) = -mean loss(z c_v, t_v)`` for a
    piecewise-polynomial loss: exact, or None for other losses."""
    pieces = _loss_pieces(loss, loss_param)
    if pieces is None:
        return None
    kinks_w, polys = np.array(pieces[0]), np.array(pieces[1])
    # w = alpha z + beta for each row
    if loss in _CLASSIFICATION_PIECES:
        alpha, beta = t_val * c_val, np.zeros_like(c_val)
    else:
        alpha, beta = c_val, -t_val
    n_val = len(c_val)

    def in_z(poly, a, b):
        """(n, 3) coefficients in z of a0 + a1 w + a2 w^2 at w = a z + b."""
        a0, a1, a2 = poly[..., 0], poly[..., 1], poly[..., 2]
        return np.stack([a0 + b * (a1 + a2 * b), a * (a1 + 2.0 * a2 * b),
                         a2 * a * a], axis=-1)

    # From z = -inf: w = -inf on rising rows (the first piece), +inf on
    # falling ones (the last); a flat row keeps the piece of its w = beta.
    first = np.where(alpha > 0, 0, np.where(
        alpha < 0, len(kinks_w), np.searchsorted(kinks_w, beta, side="right")))
    start = in_z(polys[first], alpha, beta)
    # Crossing kink k: from piece k to k + 1 (rising) or k + 1 to k (falling).
    moving = alpha != 0
    a, b = alpha[moving], beta[moving]
    at = (kinks_w[None, :] - b[:, None]) / a[:, None]
    rising = (a > 0)[:, None]
    kink = np.arange(len(kinks_w))
    change = (in_z(polys[kink + rising], a[:, None], b[:, None])
              - in_z(polys[kink + ~rising], a[:, None], b[:, None]))
    order = np.argsort(at, axis=None, kind="stable")
    kinks = at.ravel()[order]
    # Each segment's sum in extended precision (sums of n_val terms).
    steps = np.concatenate([start.astype(np.longdouble).sum(axis=0)[None, :],
                            change.reshape(-1, 3)[order].astype(np.longdouble)])
    table = -np.cumsum(steps, axis=0) / n_val
    return LineUtility(PIECEWISE, 0.0, 0.0, _f64(table.astype(np.float64)),
                       np.zeros(3), _f64(kinks[:, None]))


# max |sigma^(5)| over the reals is 1/4 (at 0); a margin for the bound.
_SIGMA5_BOUND = 0.26
# The 6th derivative of log-sum-exp(z c) is the 6th cumulant of c under the
# softmax weights, mu6 - 15 mu4 mu2 - 10 mu3^2 + 30 mu2^3 in central moments.
# With a spread R = max c - min c: |c - mean| <= R, so |mu_j| <= R^(j-2) mu2,
# and mu2 <= R^2 / 4 (Popoviciu): |kappa6| <= (1/4 + 15/16 + 10/16 + 30/64)
# R^6 < 2.29 R^6.
_CUMULANT6_BOUND = 2.29


@njit(**_jit)
def _tabulate_logistic(rows, lo, h, table, scratch):
    """``table[i] = (U, h U', h^2 U'')`` at ``z_i = lo + i h`` for the binary
    logistic loss, ``rows[:, 0]`` the signed margins; ``scratch`` ``(4,
    n_val)``. The rows' terms come from the walk's branch-free exp and log
    (:func:`skdpval.kernels._math.softplus`), a loop that vectorises, and are
    summed in a fixed order."""
    n_val = rows.shape[0]
    values, firsts, seconds, s = scratch[0], scratch[1], scratch[2], scratch[3]
    for v in range(n_val):
        s[v] = rows[v, 0]
    for i in range(table.shape[0]):
        z = lo + i * h
        for v in range(n_val):
            # softplus(x) = max(x, 0) + log1p(e) and sigma(x) from one e = exp(-|x|)
            x = -s[v] * z
            e = _math._exp_neg(abs(x))
            inverse = 1.0 / (1.0 + e)
            sigma = inverse if x >= 0.0 else e * inverse
            values[v] = (0.0 if 0.0 > x else x) + _math._log1p_unit(e)
            firsts[v] = s[v] * sigma
            seconds[v] = s[v] * s[v] * sigma * (1.0 - sigma)
        table[i, 0] = -_math._sum(values, n_val) / n_val
        table[i, 1] = h * _math._sum(firsts, n_val) / n_val
        table[i, 2] = -h * h * _math._sum(seconds, n_val) / n_val


@njit(**_jit)
def _tabulate_multinomial(rows, lo, h, table, scratch):
    """``table[i] = (U, h U', h^2 U'')`` at ``z_i = lo + i h`` for the
    multinomial loss: ``rows[v, :K]`` a row's class margins per unit ``z``,
    ``rows[v, K]`` its true class's (exact sums over rows; ``scratch``
    unused)."""
    n_val, n_classes = rows.shape[0], rows.shape[1] - 1
    for i in range(table.shape[0]):
        z = lo + i * h
        value = first = second = 0.0
        for v in range(n_val):
            top = z * rows[v, 0]
            for k in range(1, n_classes):
                m = z * rows[v, k]
                top = m if m > top else top
            total = mean = square = 0.0
            for k in range(n_classes):
                weight = np.exp(z * rows[v, k] - top)
                total += weight
                mean += weight * rows[v, k]
                square += weight * rows[v, k] * rows[v, k]
            mean /= total
            value -= top + np.log(total) - z * rows[v, n_classes]
            first -= mean - rows[v, n_classes]
            second -= square / total - mean * mean
        table[i, 0] = value / n_val
        table[i, 1] = h * first / n_val
        table[i, 2] = h * h * second / n_val


@njit(**_math._scalar)
def _tweedie(m, t, p):
    """``(f, f', f'')`` of the half Tweedie deviance in the margin ``m``, as
    :func:`skdpval.kernels._losses.output_loss` computes ``f``."""
    if p == 1.0:
        e = np.exp(m)
        return e - t * m, e - t, e
    if p == 2.0:
        e = t * np.exp(-m)
        return m + e, 1.0 - e, e
    a, b = np.exp((2.0 - p) * m), t * np.exp((1.0 - p) * m)
    return a / (2.0 - p) - b / (1.0 - p), a - b, (2.0 - p) * a - (1.0 - p) * b


@njit(**_jit)
def _tabulate_tweedie(rows, lo, h, table, scratch):
    """``table[i] = (U, h U', h^2 U'')`` at ``z_i = lo + i h`` for the half
    Tweedie deviance; ``rows``: margins per unit ``z``, targets, power."""
    n_val = rows.shape[0]
    p = rows[0, 2]
    for i in range(table.shape[0]):
        z = lo + i * h
        value, first, second = 0.0, 0.0, 0.0
        for v in range(n_val):
            c = rows[v, 0]
            f, f1, f2 = _tweedie(z * c, rows[v, 1], p)
            value -= f
            first -= c * f1
            second -= c * c * f2
        table[i, 0] = value / n_val
        table[i, 1] = h * first / n_val
        table[i, 2] = h * h * second / n_val


@njit(**_jit)
def _tabulate_margin(rows, lo, h, table, loss, loss_param):
    """``table[i] = (U, h U', h^2 U'')`` at ``z_i = lo + i h`` for a family's own
    loss: ``rows[:, 0]`` the margins per unit ``z``, ``rows[:, 1]`` the
    targets (sums over the rows in their order)."""
    n_val = rows.shape[0]
    for i in range(table.shape[0]):
        z = lo + i * h
        value, first, second = 0.0, 0.0, 0.0
        for v in range(n_val):
            c, t = rows[v, 0], rows[v, 1]
            value -= _losses.margin_value(loss, z * c, t, loss_param)
            first -= c * _losses.output_dloss(loss, z * c, t, loss_param)
            second -= c * c * _losses.margin_curvature(loss, z * c, t, loss_param)
        table[i, 0] = value / n_val
        table[i, 1] = h * first / n_val
        table[i, 2] = h * h * second / n_val


@njit(**_jit)
def _midpoint_errors(rows, lo, h, coefficients, loss, loss_param, out):
    """``out[i]``: how far interval ``i``'s quintic is from ``U`` at its midpoint."""
    for i in range(coefficients.shape[0]):
        out[i] = abs(horner5(coefficients, i, 0.5)
                     - _exact(HERMITE_MARGIN, rows, lo + (i + 0.5) * h, loss,
                              loss_param))


def _margin_table(rows, loss, loss_param, z_range, max_intervals):
    """The :data:`LineUtility` of a family's own loss: a uniform table whose step
    is refined until every interval's quintic is within ``LINE_TOLERANCE`` of
    ``U`` at its midpoint, where the interpolation error ``U^(6)(xi) / 6! (t
    (t - 1))^3 h^6`` peaks (an a posteriori check against exact values, not
    a proof: it assumes ``U^(6)`` varies little within an interval); None
    when that takes more than ``max_intervals`` intervals (the walk then
    reads the rows)."""
    lo, hi = float(z_range[0]), float(z_range[1])
    intervals = 64
    while intervals <= max_intervals:
        h = (hi - lo) / intervals if hi > lo else 1.0
        nodes = np.empty((intervals + 1, 3))
        _tabulate_margin(rows, lo, h, nodes, loss, loss_param)
        coefficients = _coefficients(nodes)
        errors = np.empty(intervals)
        _midpoint_errors(rows, lo, h, coefficients, loss, loss_param, errors)
        worst = float(errors.max())
        if worst <= LINE_TOLERANCE:
            return LineUtility(HERMITE_MARGIN, lo, 1.0 / h, coefficients,
                               np.zeros(3), rows)
        if not np.isfinite(worst):
            return None
        # The error scales as h^6: 20% finer than that predicts.
        intervals = int(np.ceil(1.2 * intervals * (worst / LINE_TOLERANCE) ** (1 / 6)))
    return None


def _tweedie_sixth(c, t, p, z_range):
    """A bound on ``|U^(6)|`` over ``z_range`` (inf where it overflows)."""
    ends = np.multiply.outer(c, np.asarray(z_range, dtype=np.float64))
    with np.errstate(over="ignore"):
        first = abs(2.0 - p) ** 5 * np.exp(np.max((2.0 - p) * ends, axis=1))
        second = np.abs(t) * abs(1.0 - p) ** 5 * np.exp(np.max((1.0 - p) * ends, axis=1))
        return float(np.mean(c**6 * (first + second)))


def _step(sixth):
    """The step ``h`` of a quintic Hermite table within LINE_TOLERANCE, given
    a bound ``sixth`` on ``|U^(6)|``."""
    return (46080.0 * LINE_TOLERANCE / max(sixth, 1e-300)) ** (1.0 / 6.0)


def _hermite_table(kind, rows, tabulate, sixth, z_range, max_intervals):
    """The :data:`LineUtility` of a quintic Hermite table of step ``h`` from the
    bound ``sixth`` on ``|U^(6)|``, over ``z_range`` (at most ``max_intervals``)."""
    h = _step(sixth)
    lo, hi = z_range
    intervals = int(min(max(np.ceil((hi - lo) / h), 1), max_intervals))
    lo = 0.5 * (lo + hi) - 0.5 * intervals * h
    nodes = np.empty((intervals + 1, 3))
    tabulate(rows, lo, h, nodes, np.empty((4, len(rows))))
    return LineUtility(kind, lo, 1.0 / h, _coefficients(nodes), np.zeros(3), rows)


def _coefficients(nodes):
    """The quintic Hermite interpolant of ``nodes[i] = (U, h U', h^2 U'')`` on
    each interval as ``sum_k a_k t^k`` in its local ``t`` in ``[0, 1)``:
    ``(n_nodes - 1, 6)``, read by :func:`horner5`."""
    return quintic_coefficients(nodes[:-1], nodes[1:])


def quintic_coefficients(left, right):
    """The quintic on ``[0, 1]`` with ``(p, d, e)`` = value, first and second
    derivative at ``t = 0`` (``left``) and ``t = 1`` (``right``), as its six
    coefficients in ``t``: ``(n_intervals, 6)``. Read by Horner's rule, five
    multiply-adds a step (the Hermite basis in ``t`` took half of a step of
    the walk)."""
    p0, d0, e0 = left.T
    p1, d1, e1 = right.T
    dp = p1 - p0
    return np.ascontiguousarray(np.column_stack([
        p0, d0, 0.5 * e0,
        10.0 * dp - 6.0 * d0 - 4.0 * d1 - 1.5 * e0 + 0.5 * e1,
        -15.0 * dp + 8.0 * d0 + 7.0 * d1 + 1.5 * e0 - e1,
        6.0 * dp - 3.0 * d0 - 3.0 * d1 - 0.5 * e0 + 0.5 * e1]))


def line_utility(c_val, t_val, loss, utility, total_sum_squares, z_range,
                 max_intervals=LINE_MAX_INTERVALS, loss_param=0.0):
    """The :data:`LineUtility` of a walk along a line, or None.

    ``c_val`` ``(n_val, n_outputs)`` are the validation rows' margins per
    unit ``z``, ``t_val`` their targets (+-1 for the logistic loss, one-hot
    for the multinomial one); the table covers ``z_range`` ``(lo, hi)``
    (centred on it when that takes more than ``max_intervals`` steps). None
    where no table applies.
    """
    c_val, t_val = _f64(np.atleast_2d(c_val.T).T), _f64(np.atleast_2d(t_val.T).T)
    kind = table_kind(loss, utility, c_val.shape[1])
    if kind == HERMITE_MULTINOMIAL:
        rows = _f64(np.column_stack([c_val, np.sum(c_val * t_val, axis=1)]))
        spread = c_val.max(axis=1) - c_val.min(axis=1)
        return _hermite_table(HERMITE_MULTINOMIAL, rows, _tabulate_multinomial,
                              _CUMULANT6_BOUND * float(np.mean(spread**6)), z_range,
                              max_intervals)
    if kind is None:
        return None
    c_val, t_val = c_val[:, 0], t_val[:, 0]
    n_val = len(c_val)
    if kind == QUADRATIC:
        # sum (z c - t)^2 = A z^2 - 2 B z + C
        A, B, C = np.dot(c_val, c_val), np.dot(c_val, t_val), np.dot(t_val, t_val)
        if utility == _losses.R2:  # (the exact walk refuses R^2 with a constant y_val)
            scale = -1.0 / total_sum_squares if total_sum_squares > 0 else np.nan
        else:
            scale = -0.5 / n_val if utility == _losses.NEG_LOSS else -1.0 / n_val
        offset = 1.0 if utility == _losses.R2 else 0.0
        quad = np.array([scale * A, -2.0 * scale * B, scale * C + offset])
        return LineUtility(QUADRATIC, 0.0, 0.0, np.zeros((1, 3)), quad,
                           c_val[:, None])
    if kind == HERMITE:
        s = _f64((t_val * c_val)[:, None])
        return _hermite_table(HERMITE, s, _tabulate_logistic,
                              _SIGMA5_BOUND * float(np.mean(s**6)), z_range,
                              max_intervals)
    if kind == HERMITE_MARGIN:
        return _margin_table(_f64(np.column_stack([c_val, t_val])), loss,
                             float(loss_param), z_range, max_intervals)
    if kind == HERMITE_TWEEDIE:
        # The table may reach a step past z_range's ends: bound U^(6) there too.
        lo, hi = z_range
        reach = _step(_tweedie_sixth(c_val, t_val, float(loss_param), z_range))
        sixth = _tweedie_sixth(c_val, t_val, float(loss_param), (lo - reach, hi + reach))
        # Exponentials grow: where the range needs more steps than a table
        # holds, the walk reads the rows (a partial table would cost its
        # build and serve few steps).
        if not (np.isfinite(sixth) and _step(sixth) * max_intervals >= hi - lo):
            return None
        rows = _f64(np.column_stack([c_val, t_val, np.full(n_val, float(loss_param))]))
        return _hermite_table(HERMITE_TWEEDIE, rows, _tabulate_tweedie, sixth, z_range,
                              max_intervals)
    return _piecewise(c_val, t_val, loss, loss_param)


@njit(**_jit)
def _exact(kind, rows, z, loss, loss_param):
    """``U(z)`` from the validation rows (past the table); ``kind`` None is
    HERMITE (:func:`kind_flag`); ``loss`` the walk's (read by HERMITE_MARGIN
    only)."""
    n_val = rows.shape[0]
    total = 0.0
    if kind is None:
        for v in range(n_val):
            total += _math.softplus(-rows[v, 0] * z)
        return -total / n_val
    if kind == HERMITE:
        for v in range(n_val):
            total += _math.softplus(-rows[v, 0] * z)
        return -total / n_val
    if kind == HERMITE_TWEEDIE:
        for v in range(n_val):
            total += _losses.output_loss(_losses.TWEEDIE, z * rows[v, 0], rows[v, 1], rows[v, 2])
        return -total / n_val
    if kind == HERMITE_MARGIN:
        for v in range(n_val):
            total += _losses.margin_value(loss, z * rows[v, 0], rows[v, 1], loss_param)
        return -total / n_val
    if kind != HERMITE_MULTINOMIAL:
        raise ValueError("unknown line kind")
    n_classes = rows.shape[1] - 1
    for v in range(n_val):
        top = z * rows[v, 0]
        for k in range(1, n_classes):
            m = z * rows[v, k]
            top = m if m > top else top
        weights = 0.0
        for k in range(n_classes):
            weights += np.exp(z * rows[v, k] - top)
        total += top + np.log(weights) - z * rows[v, n_classes]
    return -total / n_val


@njit(**_math._scalar)
def horner5(table, i, t):
    """``sum_k table[i, k] t^k``: interval ``i`` of a table of quintics."""
    return table[i, 0] + t * (table[i, 1] + t * (table[i, 2] + t * (
        table[i, 3] + t * (table[i, 4] + t * table[i, 5]))))


# The readers of the line (one call site each in the walk along a line) are
# inlined by numba itself, not LLVM: no standalone copy of each is optimised
# and emitted.
@njit(inline="always", **_jit)
def _hermite(kind, lo, inv_h, table, rows, z, loss, loss_param):
    """``U(z)`` from the table, or exactly past it."""
    x = (z - lo) * inv_h
    if not (x >= 0.0 and x < table.shape[0]):
        return _exact(kind, rows, z, loss, loss_param)
    i = int(x)
    return horner5(table, i, x - i)


@njit(**_math._scalar)
def _segment(kinks, z):
    """How many of the sorted ``kinks[:, 0]`` are at most ``z`` (binary search)."""
    lo, hi = 0, kinks.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if kinks[mid, 0] <= z:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(inline="always", **_jit)
def line_value(kind, lo, inv_h, table, quad, s, z, loss, loss_param):
    """``U(z)``; ``kind`` None is HERMITE (:func:`kind_flag`); ``loss`` and
    ``loss_param`` the walk's (a table's kind that reads the rows past it
    may need them)."""
    if kind is None:
        return _hermite(kind, lo, inv_h, table, s, z, loss, loss_param)
    if kind == QUADRATIC:
        return (quad[0] * z + quad[1]) * z + quad[2]
    if kind == PIECEWISE:
        j = _segment(s, z)
        return (table[j, 2] * z + table[j, 1]) * z + table[j, 0]
    return _hermite(kind, lo, inv_h, table, s, z, loss, loss_param)


@njit(inline="always", **_jit)
def line_change(kind, lo, inv_h, table, quad, s, z_old, z_new, previous, loss,
                loss_param):
    """``(U(z_new) - U(z_old), U(z_new))``; ``previous`` is ``U(z_old)``.

    A quadratic's change is computed from the step, without cancellation.
    ``kind`` None is HERMITE (:func:`kind_flag`).
    """
    if kind is None:
        current = _hermite(kind, lo, inv_h, table, s, z_new, loss, loss_param)
        return current - previous, current
    if kind == QUADRATIC:
        return ((z_new - z_old) * (quad[0] * (z_new + z_old) + quad[1]),
                (quad[0] * z_new + quad[1]) * z_new + quad[2])
    if kind == PIECEWISE:
        j = _segment(s, z_new)
        current = (table[j, 2] * z_new + table[j, 1]) * z_new + table[j, 0]
        if j == _segment(s, z_old):  # one quadratic: the change from the step
            return ((z_new - z_old) * (table[j, 2] * (z_new + z_old) + table[j, 1]),
                    current)
        return current - previous, current
    current = _hermite(kind, lo, inv_h, table, s, z_new, loss, loss_param)
    return current - previous, current
