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

Everything else (other losses and utilities, one-vs-rest outputs, a basis
of more than one direction) takes the exact walk of :mod:`skdpval._subspace`.
The table depends on the validation set and the public direction only.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from . import _kernels as K
from ._kernels import _f64, _jit

# Largest error of the tabulated utility anywhere in the table (absolute).
LINE_TOLERANCE = 2.0**-45
# Intervals of the table at most (48 bytes each): the range it covers is
# this many steps h, centred on 0; past it the utility is computed exactly.
LINE_MAX_INTERVALS = 2**16

HERMITE = 0  # binary logistic
QUADRATIC = 1
HERMITE_MULTINOMIAL = 2

LineUtility = namedtuple("LineUtility", ["kind", "lo", "inv_h", "table", "quad",
                                         "s_val"])
LineUtility.__doc__ = """The validation utility along the line, as the kernel reads it.

``kind`` is HERMITE or HERMITE_MULTINOMIAL (``table[i]``: the six
coefficients in ``t`` of the quintic on ``z_i + t / inv_h``, ``0 <= t < 1``,
``z_i = lo + i / inv_h``, see :func:`_coefficients`; ``s_val`` the validation rows per unit
``z`` for exact values past the table: ``(n_val, 1)`` signed margins, or
``(n_val, K + 1)``, the K class margins and the true class's) or QUADRATIC
(``quad = (q2, q1, q0)``)."""


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
    (:func:`skdpval._kernels.softplus`), a loop that vectorises, and are
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
            e = K._exp_neg(abs(x))
            inverse = 1.0 / (1.0 + e)
            sigma = inverse if x >= 0.0 else e * inverse
            values[v] = max(x, 0.0) + K._log1p_unit(e)
            firsts[v] = s[v] * sigma
            seconds[v] = s[v] * s[v] * sigma * (1.0 - sigma)
        table[i, 0] = -K._sum(values, n_val) / n_val
        table[i, 1] = h * K._sum(firsts, n_val) / n_val
        table[i, 2] = -h * h * K._sum(seconds, n_val) / n_val


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
                top = max(top, z * rows[v, k])
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


def _hermite_table(kind, rows, tabulate, sixth, z_range, max_intervals):
    """The :data:`LineUtility` of a quintic Hermite table of step ``h`` from the
    bound ``sixth`` on ``|U^(6)|``, over ``z_range`` (at most ``max_intervals``)."""
    h = (46080.0 * LINE_TOLERANCE / max(sixth, 1e-300)) ** (1.0 / 6.0)
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
                 max_intervals=LINE_MAX_INTERVALS):
    """The :data:`LineUtility` of a walk along a line, or None.

    ``c_val`` ``(n_val, n_outputs)`` are the validation rows' margins per
    unit ``z``, ``t_val`` their targets (+-1 for the logistic loss, one-hot
    for the multinomial one); the table covers ``z_range`` ``(lo, hi)``
    (centred on it when that takes more than ``max_intervals`` steps). None
    where no table applies.
    """
    c_val, t_val = _f64(np.atleast_2d(c_val.T).T), _f64(np.atleast_2d(t_val.T).T)
    if loss == K.MULTINOMIAL and utility == K.NEG_LOSS:
        rows = _f64(np.column_stack([c_val, np.sum(c_val * t_val, axis=1)]))
        spread = c_val.max(axis=1) - c_val.min(axis=1)
        return _hermite_table(HERMITE_MULTINOMIAL, rows, _tabulate_multinomial,
                              _CUMULANT6_BOUND * float(np.mean(spread**6)), z_range,
                              max_intervals)
    if c_val.shape[1] != 1:
        return None
    c_val, t_val = c_val[:, 0], t_val[:, 0]
    n_val = len(c_val)
    if loss == K.SQUARED and utility in (K.NEG_LOSS, K.NEG_MSE, K.R2):
        # sum (z c - t)^2 = A z^2 - 2 B z + C
        A, B, C = np.dot(c_val, c_val), np.dot(c_val, t_val), np.dot(t_val, t_val)
        if utility == K.R2:  # (the exact walk refuses R^2 with a constant y_val)
            scale = -1.0 / total_sum_squares if total_sum_squares > 0 else np.nan
        else:
            scale = -0.5 / n_val if utility == K.NEG_LOSS else -1.0 / n_val
        offset = 1.0 if utility == K.R2 else 0.0
        quad = np.array([scale * A, -2.0 * scale * B, scale * C + offset])
        return LineUtility(QUADRATIC, 0.0, 0.0, np.zeros((1, 3)), quad,
                           c_val[:, None])
    if loss == K.LOGISTIC and utility == K.NEG_LOSS:
        s = _f64((t_val * c_val)[:, None])
        return _hermite_table(HERMITE, s, _tabulate_logistic,
                              _SIGMA5_BOUND * float(np.mean(s**6)), z_range,
                              max_intervals)
    return None


@njit(**_jit)
def _exact(kind, rows, z):
    """``U(z)`` from the validation rows (past the table)."""
    n_val = rows.shape[0]
    total = 0.0
    if kind == HERMITE:
        for v in range(n_val):
            total += K.softplus(-rows[v, 0] * z)
        return -total / n_val
    n_classes = rows.shape[1] - 1
    for v in range(n_val):
        top = z * rows[v, 0]
        for k in range(1, n_classes):
            top = max(top, z * rows[v, k])
        weights = 0.0
        for k in range(n_classes):
            weights += np.exp(z * rows[v, k] - top)
        total += top + np.log(weights) - z * rows[v, n_classes]
    return -total / n_val


@njit(**K._scalar)
def horner5(table, i, t):
    """``sum_k table[i, k] t^k``: interval ``i`` of a table of quintics."""
    return table[i, 0] + t * (table[i, 1] + t * (table[i, 2] + t * (
        table[i, 3] + t * (table[i, 4] + t * table[i, 5]))))


# The readers of the line (one call site each in the walk along a line) are
# inlined by numba itself, not LLVM: no standalone copy of each is optimised
# and emitted (0.3 s of a default first fit's compilation).
@njit(inline="always", **_jit)
def _hermite(kind, lo, inv_h, table, rows, z):
    """``U(z)`` from the table, or exactly past it."""
    x = (z - lo) * inv_h
    if not (x >= 0.0 and x < table.shape[0]):
        return _exact(kind, rows, z)
    i = int(x)
    return horner5(table, i, x - i)


@njit(inline="always", **_jit)
def line_value(kind, lo, inv_h, table, quad, s, z):
    if kind == QUADRATIC:
        return (quad[0] * z + quad[1]) * z + quad[2]
    return _hermite(kind, lo, inv_h, table, s, z)


@njit(inline="always", **_jit)
def line_change(kind, lo, inv_h, table, quad, s, z_old, z_new, previous):
    """``(U(z_new) - U(z_old), U(z_new))``; ``previous`` is ``U(z_old)``.

    A quadratic's change is computed from the step, without cancellation.
    """
    if kind == QUADRATIC:
        return ((z_new - z_old) * (quad[0] * (z_new + z_old) + quad[1]),
                (quad[0] * z_new + quad[1]) * z_new + quad[2])
    current = _hermite(kind, lo, inv_h, table, s, z_new)
    return current - previous, current
