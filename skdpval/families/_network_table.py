"""A network's utility along its public line, tabulated (piecewise quintic
Hermite): see :mod:`skdpval.families.network`."""

from collections import namedtuple

import numpy as np

from ..kernels import _network, _network_line
from ..kernels._line import quintic_coefficients

# Largest error of the tabulated utility at the midpoints of its intervals.
MIDPOINT_TOLERANCE = 1e-12


def _buffers(layout):
    units = _network.n_units(layout)
    return (np.zeros(units), np.zeros(units), np.zeros(units),
            np.zeros(int(layout[-1, 1])))


LineTable = namedtuple("LineTable", ["nodes", "data", "first", "inv_cell"])
LineTable.__doc__ = """The utility along the line, piecewise: interval ``i`` is
``nodes[i], nodes[i + 1]`` with ``data[i]`` the six coefficients of its
quintic Hermite interpolant in the local ``t`` in ``[0, 1]``
(:func:`skdpval.kernels._line.quintic_coefficients` of its ends' ``(U, h U', h^2
U'')``, read by :func:`skdpval.kernels._line.horner5`); ``first[b]`` the interval of the left edge of cell ``b`` of the
uniform grid of step ``1 / inv_cell`` from ``nodes[0]`` (the look-up)."""

# No table: ``U`` from the rows everywhere.
NO_TABLE = LineTable(np.zeros(2), np.zeros((1, 6)), np.zeros(2, np.int64), 0.0)


def _kinks(A_val, C_val, lo, hi):
    """Where a relu unit of the first layer crosses 0 along the line (``a + z c
    = 0``) within ``(lo, hi)``: the kinks of ``U``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = -A_val / C_val
    return z[np.isfinite(z) & (z > lo) & (z < hi)]


def line_table(network, direction, A_val, C_val, T_val, scale, offset, z_range,
               max_intervals, tolerance=MIDPOINT_TOLERANCE):
    """The :data:`LineTable` of ``U`` over ``z_range``, each interval refined
    until the interpolant is within ``tolerance`` of ``U`` at its midpoint;
    :data:`NO_TABLE` when that takes more than ``max_intervals``.

    With relu units (one hidden layer) ``U`` has a kink where a validation
    row's unit crosses 0 (:func:`_kinks`): every kink is a node, and each
    interval's ends take the one-sided values from inside it, so that ``U``
    is smooth on every interval. A deeper relu network's kinks are not known
    in advance: no table.
    """
    lo, hi = float(z_range[0]), float(z_range[1])
    relu = network.activation == _network.RELU
    if relu and len(network.layout) > 2:
        return NO_TABLE
    args = (A_val, C_val, T_val, network.theta0, direction, network.layout,
            _network.act_flag(network.activation), _network.loss_flag(network.loss), scale, offset,
            *_buffers(network.layout))
    nodes = np.linspace(lo, hi, 65)
    if relu:
        nodes = np.unique(np.concatenate([nodes, _kinks(A_val, C_val, lo, hi)]))
    done_left, done_right, done_data = [], [], []
    left, right = nodes[:-1], nodes[1:]
    while len(left):
        if sum(map(len, done_left)) + len(left) > max_intervals:
            return NO_TABLE
        ends, errors = np.empty((len(left), 6)), np.empty(len(left))
        _network_line.tabulate(left, right, *args, ends, _network.depth_flag(network.layout))
        data = quintic_coefficients(ends[:, :3], ends[:, 3:])
        _network_line.table_errors(left, right, data, *args, errors,
                          _network.depth_flag(network.layout))
        good = errors <= tolerance
        done_left.append(left[good])
        done_right.append(right[good])
        done_data.append(data[good])
        # The error scales as h^6: split 20% finer than that predicts.
        pieces = np.maximum(2, np.ceil(1.2 * (errors[~good] / tolerance) ** (1 / 6)))
        pieces = np.minimum(pieces, max_intervals).astype(np.int64)
        splits = [np.linspace(a, b, k + 1)
                  for a, b, k in zip(left[~good], right[~good], pieces)]
        left = np.concatenate([s[:-1] for s in splits]) if splits else np.empty(0)
        right = np.concatenate([s[1:] for s in splits]) if splits else np.empty(0)
    left, right = np.concatenate(done_left), np.concatenate(done_right)
    order = np.argsort(left)
    nodes = np.append(left[order], right[order][-1])
    data = np.ascontiguousarray(np.concatenate(done_data)[order])
    cells = len(order)
    edges = lo + np.arange(cells + 1) * ((hi - lo) / cells)
    first = np.clip(np.searchsorted(nodes, edges, side="right") - 1, 0, cells - 1)
    return LineTable(nodes, data, first.astype(np.int64), cells / (hi - lo))
