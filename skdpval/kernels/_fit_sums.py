"""The private fit's sums: each party's gradient clipped, rounded, summed exactly.

Each party's clipped gradient is rounded to a fixed-point grid of step
``unit`` and the integers are summed in int64. Integer addition is
associative, so the sum does not depend on how the rows are split (in
memory, or over Dask blocks in any order): both paths release the same bits.
The caller chooses ``unit`` and shrinks the clip so that a rounded gradient
stays within the fit's clip bound (:mod:`skdpval.valuation._public_model`).
"""

import numpy as np
from numba import njit

from ..privacy._release import clip_l2
from . import _linear, _losses, _math, _network


@njit(cache=True, nogil=True)
def clipped_gradient_sum(theta, X, T, row_weights, offsets, loss, loss_param, l2, l1,
                         n_penalized, clip, unit, margin_buf, dloss_buf, party, out):
    """``out`` (int64) <- sum over parties of each party's gradient (mean
    loss of its rows plus the penalty) clipped to L2 norm ``clip``, in
    units of ``unit`` rounded to integers (exact, in any order)."""
    n_outputs, n_columns = theta.shape
    inverse_unit = 1.0 / unit
    for k in range(n_outputs):
        for c in range(n_columns):
            out[k, c] = 0
    for j in range(offsets.shape[0] - 1):
        _linear.party_gradient(theta, X, T, row_weights, offsets[j], offsets[j + 1], loss,
                         loss_param, l2, l1, n_penalized, margin_buf, dloss_buf,
                         party)
        clip_l2(party, clip)
        for k in range(n_outputs):
            for c in range(n_columns):
                out[k, c] += np.int64(np.rint(party[k, c] * inverse_unit))


# Reassociation and contraction only (no finite-math flags: a gradient that
# is not finite must still be caught): the row's dot product vectorises.
_ROW_FASTMATH = {"reassoc", "contract", "nsz"}


@njit(cache=True, nogil=True, fastmath=_ROW_FASTMATH)
def clipped_row_gradient_sum(theta, X, T, row_weights, loss, loss_param, l2,
                             n_penalized, clip, unit, out):
    """:func:`clipped_gradient_sum` for one-row parties, one output and no
    L1 term, in one pass over the rows: a row's gradient is ``a x + l2
    theta_pen`` (``a`` its weighted loss derivative), whose norm follows from
    ``|x|^2``, ``x . theta_pen`` and ``|theta_pen|^2`` (summed in the pass
    that forms the margin). A gradient that is not finite counts as zero (as
    :func:`skdpval.privacy._release.clip_l2` sets it)."""
    n_columns = theta.shape[1]
    coef = theta[0]
    pen_sq = 0.0
    for c in range(n_penalized):
        pen_sq += coef[c] * coef[c]
    for c in range(n_columns):
        out[0, c] = 0
    inverse_unit = 1.0 / unit
    clip_sq = clip * clip
    for row in range(X.shape[0]):
        x = X[row]
        dot_pen = 0.0
        row_sq = 0.0
        for c in range(n_penalized):
            dot_pen += coef[c] * x[c]
            row_sq += x[c] * x[c]
        m = dot_pen
        for c in range(n_penalized, n_columns):
            m += coef[c] * x[c]
            row_sq += x[c] * x[c]
        a = row_weights[row] * _losses.output_dloss(loss, m, T[row, 0], loss_param)
        norm_sq = a * a * row_sq + 2.0 * a * l2 * dot_pen + l2 * l2 * pen_sq
        scale = inverse_unit  # the root only for the rows clipped
        if norm_sq > clip_sq:
            if not norm_sq < np.inf:
                continue
            scale = clip / np.sqrt(norm_sq) * inverse_unit
        elif not norm_sq >= -np.inf:  # NaN
            continue
        a *= scale
        penalty = l2 * scale
        for c in range(n_penalized):
            out[0, c] += np.int64(np.rint(a * x[c] + penalty * coef[c]))
        for c in range(n_penalized, n_columns):
            out[0, c] += np.int64(np.rint(a * x[c]))


def rows_gradient_sum(X, T, row_weights, theta, offsets, loss, loss_param, l2, l1,
                      n_penalized, clip, unit):
    """The clipped sum of rows ``X`` (in memory) at ``theta``, in int64 units
    of ``unit``; ``offsets`` None: one row a party. The kernel is chosen from
    the parties' shape alone (one-row parties, one output, no L1 term: the
    one-pass kernel), so any block of rows is summed as the whole is (C
    order: one compiled kernel for every block)."""
    X, T, row_weights = _math._f64(X), _math._f64(T), _math._f64(row_weights)
    out = np.empty(theta.shape, dtype=np.int64)
    if offsets is None and theta.shape[0] == 1 and l1 == 0:
        clipped_row_gradient_sum(theta, X, T, row_weights, loss, loss_param, l2,
                                 n_penalized, clip, unit, out)
        return out
    if offsets is None:
        offsets = np.arange(len(X) + 1, dtype=np.int64)
    n_outputs = theta.shape[0]
    clipped_gradient_sum(theta, X, T, row_weights, offsets, loss, loss_param, l2, l1,
                         n_penalized, clip, unit, np.empty(n_outputs),
                         np.empty(n_outputs), np.empty_like(theta), out)
    return out


def unweighted_rows_gradient_sum(X, T, theta, *args):
    """:func:`rows_gradient_sum` with unit row weights (made per block)."""
    return rows_gradient_sum(X, T, _math.unit_weights(len(X)), theta, *args)


@njit(cache=True, nogil=True)
def network_gradient_sum(theta, layout, act, loss, X, T, row_weights, offsets, l2,
                         clip, unit, units, deltas, party, out):
    """``out`` (int64, one per packed parameter) <- sum over parties of each
    party's network gradient (:func:`skdpval.kernels._network.party_gradient`:
    the mean loss of its rows plus the L2 term) clipped to L2 norm ``clip``,
    in units of ``unit`` rounded to integers (exact, in any order)."""
    inverse_unit = 1.0 / unit
    for p in range(out.shape[0]):
        out[p] = 0
    flat = party.reshape((1, party.shape[0]))
    for j in range(offsets.shape[0] - 1):
        _network.party_gradient(theta, layout, X, T, row_weights, offsets[j],
                                offsets[j + 1], act, loss, l2, units, deltas, party)
        clip_l2(flat, clip)
        for p in range(out.shape[0]):
            out[p] += np.int64(np.rint(party[p] * inverse_unit))
