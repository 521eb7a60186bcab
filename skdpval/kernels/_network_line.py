"""A multilayer perceptron along a public line ``theta = theta0 + z b``.

The first layer's pre-activations of a row are ``a + z c`` (:func:`line_rows`,
once per fit), so that a forward pass costs O(width) in that layer, not
O(features x width); the other layers carry the value and the first two
derivatives in ``z`` (forward mode): a party's gradient in ``z``, the
validation utility's table (:mod:`skdpval.families.network`) and the walk
along the line come from them. The layout and the loss and activation codes
are those of :mod:`skdpval.kernels._network`.
"""

import numpy as np
from numba import njit

from ..privacy._release import clip_l2, release_step
from ._line import horner5
from ._losses import MULTINOMIAL
from ._math import _f64, _jit, _scalar, _scalar_py
from ._network import RELU, _activate, _derivatives, output_gradient, output_loss


def line_rows(theta0, direction, layout, X):
    """``(A, C)``, ``(n_rows, width)``: the first layer's pre-activations
    ``A + z C``, each row's sum over its inputs in their order (the first
    layer's intercept first). In numpy: once per fit, nothing to compile."""
    X, theta0, direction = _f64(X), _f64(theta0), _f64(direction)
    width, intercept = int(layout[0, 1]), int(layout[0, 3])
    A = np.empty((X.shape[0], width))
    C = np.empty_like(A)
    A[:] = theta0[intercept:intercept + width]
    C[:] = direction[intercept:intercept + width]
    for i in range(int(layout[0, 0])):
        v = X[:, i:i + 1]
        A += v * theta0[i * width:(i + 1) * width]
        C += v * direction[i * width:(i + 1) * width]
    return A, C


def sequential_sum(start, values):
    """``start + values[0] + values[1] + ...``, left to right, as a kernel's
    loop adds them (numpy's sum adds pairwise)."""
    return float(np.cumsum(np.concatenate(([start], values)))[-1])


@njit(**_scalar)
def _hidden_unit(z, zp, a, c, act):
    """A first-layer unit along the line: its value and first two derivatives
    in ``z`` (relu: active where it is at ``zp``), for :func:`line_forward`."""
    s1 = c
    if act is None or act == RELU:
        # Selects, not branches: a unit's sign is a coin flip to the predictor.
        on = a + zp * c > 0.0
        return (a + z * c if on else 0.0), (s1 if on else 0.0), 0.0
    h0 = _activate(act, a + z * c)
    d1, d2 = _derivatives(act, h0)
    return h0, d1 * s1, d2 * s1 * s1


@njit(**_scalar)
def _one_hidden_forward(z, zp, a, c, theta0, direction, layout, act, u0, u1, u2,
                        second):
    """:func:`line_forward` of a one-hidden-layer network (the same operations
    in the same order, so the same bits), the hidden units kept in registers
    (and one output's sums too): only the outputs are written."""
    width, n_out = layout[0, 1], layout[1, 1]
    coef, intercept, out = layout[1, 2], layout[1, 3], layout[1, 4]
    if n_out == 1:
        o0 = theta0[intercept] + z * direction[intercept]
        o1 = direction[intercept]
        o2 = 0.0
        for i in range(width):
            h0, h1, h2 = _hidden_unit(z, zp, a[i], c[i], act)
            w, b = theta0[coef + i], direction[coef + i]
            w_z = w + z * b
            o0 += w_z * h0
            o1 += b * h0 + w_z * h1
            if second:
                o2 += 2.0 * b * h1 + w_z * h2
        u0[out], u1[out], u2[out] = o0, o1, o2
        return
    for o in range(n_out):
        u0[out + o] = theta0[intercept + o] + z * direction[intercept + o]
        u1[out + o] = direction[intercept + o]
        u2[out + o] = 0.0
    for i in range(width):
        h0, h1, h2 = _hidden_unit(z, zp, a[i], c[i], act)
        base = coef + i * n_out
        for o in range(n_out):
            w, b = theta0[base + o], direction[base + o]
            w_z = w + z * b
            u0[out + o] += w_z * h0
            u1[out + o] += b * h0 + w_z * h1
            if second:
                u2[out + o] += 2.0 * b * h1 + w_z * h2


@njit(**_jit)
def line_forward(z, zp, a, c, theta0, direction, layout, act, u0, u1, u2, second,
                 deep=True):
    """Every layer's outputs (``u0``) and their first (``u1``) and, if
    ``second``, second (``u2``) derivatives in ``z`` at ``theta0 + z
    direction``, for a row whose first layer's pre-activations are ``a + z
    c``. A first-layer relu unit is active where it is at ``zp`` (``zp = z``:
    where it is at ``z``; another point of the same piece between kinks: the
    one-sided limits at a kink). With one hidden layer only the outputs are
    written (:func:`_one_hidden_forward`); ``deep`` None: one hidden layer
    (:func:`depth_flag`)."""
    n_layers = layout.shape[0]
    if deep is None or n_layers == 2:
        _one_hidden_forward(z, zp, a, c, theta0, direction, layout, act, u0, u1, u2,
                            second)
        return
    for o in range(layout[0, 1]):  # layer 0 is a hidden layer
        u0[o], u1[o], u2[o] = _hidden_unit(z, zp, a[o], c[o], act)
    for layer in range(1, n_layers):
        fan_in, fan_out = layout[layer, 0], layout[layer, 1]
        coef, intercept, out = layout[layer, 2], layout[layer, 3], layout[layer, 4]
        source = layout[layer - 1, 4]
        for o in range(fan_out):
            u0[out + o] = theta0[intercept + o] + z * direction[intercept + o]
            u1[out + o] = direction[intercept + o]
            u2[out + o] = 0.0
        for i in range(fan_in):
            h0, h1 = u0[source + i], u1[source + i]
            base = coef + i * fan_out
            if second:  # separate loops, so that the first-order one vectorises
                h2 = u2[source + i]
                for o in range(fan_out):
                    w, b = theta0[base + o], direction[base + o]
                    w_z = w + z * b
                    u0[out + o] += w_z * h0
                    u1[out + o] += b * h0 + w_z * h1
                    u2[out + o] += 2.0 * b * h1 + w_z * h2
            else:
                for o in range(fan_out):
                    w, b = theta0[base + o], direction[base + o]
                    w_z = w + z * b
                    u0[out + o] += w_z * h0
                    u1[out + o] += b * h0 + w_z * h1
        if layer < n_layers - 1:
            for o in range(fan_out):
                h = _activate(act, u0[out + o])
                d1, d2 = _derivatives(act, h)
                s1 = u1[out + o]
                u0[out + o] = h
                u1[out + o] = d1 * s1
                if second:
                    u2[out + o] = d2 * s1 * s1 + d1 * u2[out + o]


@njit(**_scalar_py)
def line_loss(z, zp, a, c, t, theta0, direction, layout, act, loss, u0, u1, u2, d1,
              deep=True):
    """``(L, dL/dz, d2L/dz2)`` of one row at ``z`` (outputs by :func:`line_forward`)."""
    line_forward(z, zp, a, c, theta0, direction, layout, act, u0, u1, u2, True, deep)
    last = layout[layout.shape[0] - 1, 4]
    n_out = layout[layout.shape[0] - 1, 1]
    o0, o1, o2 = u0[last:last + n_out], u1[last:last + n_out], u2[last:last + n_out]
    value, curvature = output_loss(loss, o0, t, d1)
    first = second = 0.0
    for k in range(n_out):
        first += d1[k] * o1[k]
        second += d1[k] * o2[k]
    if loss is not None and loss == MULTINOMIAL:  # o1' (diag p - p p^T) o1, p = d1 + t
        mean = square = 0.0
        for k in range(n_out):
            p = d1[k] + t[k]
            mean += p * o1[k]
            square += p * o1[k] * o1[k]
        second += square - mean * mean
    else:
        for k in range(n_out):
            second += curvature * o1[k] * o1[k]
    return value, first, second


@njit(**_scalar_py)
def line_slope(z, a, c, t, theta0, direction, layout, act, loss, u0, u1, u2, d1,
               deep=True):
    """``dL/dz`` of one row at ``z``: :func:`line_loss`'s first derivative (the
    same operations) without the value and the second derivative."""
    line_forward(z, z, a, c, theta0, direction, layout, act, u0, u1, u2, False, deep)
    last = layout[layout.shape[0] - 1, 4]
    n_out = layout[layout.shape[0] - 1, 1]
    output_gradient(loss, u0[last:last + n_out], t, d1)
    first = 0.0
    for k in range(n_out):
        first += d1[k] * u1[last + k]
    return first


@njit(**_jit)
def line_party_gradient(z, A, C, T, row_weights, start, stop, theta0, direction,
                        layout, act, loss, l2, penalty0, penalty1, u0, u1, u2, d1,
                        deep=True):
    """d/dz of rows ``start:stop``'s weighted mean loss plus the L2 term at
    ``theta0 + z b``: ``l2 (penalty0 + z penalty1)``, ``penalty0 = <b_W,
    W0>``, ``penalty1 = ||b_W||^2`` over the coefficients."""
    total = 0.0
    for row in range(start, stop):
        total += row_weights[row] * line_slope(z, A[row], C[row], T[row], theta0,
                                               direction, layout, act, loss, u0, u1,
                                               u2, d1, deep)
    if stop - start > 1:
        total /= stop - start
    return total + l2 * (penalty0 + z * penalty1)


@njit(**_jit)
def _end(z, zp, h, A, C, T, theta0, direction, layout, act, loss, scale, offset, u0,
         u1, u2, d1, out, deep=True):
    """``out`` <- ``(U, h U', h^2 U'')`` at ``z`` on the piece holding ``zp``."""
    n = A.shape[0]
    value = first = second = 0.0
    for v in range(n):
        a, b, c = line_loss(z, zp, A[v], C[v], T[v], theta0, direction, layout, act,
                            loss, u0, u1, u2, d1, deep)
        value += a
        first += b
        second += c
    out[0] = offset - scale * value / n
    out[1] = -h * scale * first / n
    out[2] = -h * h * scale * second / n


@njit(**_jit)
def tabulate(left, right, A, C, T, theta0, direction, layout, act, loss, scale,
             offset, u0, u1, u2, d1, data, deep=True):
    """``data[i]``: ``(U, h U', h^2 U'')`` at both ends of the interval
    ``left[i], right[i]`` (``h`` its length), each the limit from inside it,
    ``U = offset - scale * mean loss`` over the rows ``A, C, T``."""
    for i in range(data.shape[0]):
        h = right[i] - left[i]
        middle = left[i] + 0.5 * h
        _end(left[i], middle, h, A, C, T, theta0, direction, layout, act, loss,
             scale, offset, u0, u1, u2, d1, data[i, 0:3], deep)
        _end(right[i], middle, h, A, C, T, theta0, direction, layout, act, loss,
             scale, offset, u0, u1, u2, d1, data[i, 3:6], deep)


@njit(**_scalar)
def _line_value(z, a, c, t, theta0, direction, layout, act, loss, u0, u1, u2, d1,
                deep=True):
    """One row's loss at ``z``: :func:`line_forward`'s values only (one hidden
    layer: its fused pass, the same bits)."""
    n_layers = layout.shape[0]
    if deep is None or n_layers == 2:
        _one_hidden_forward(z, z, a, c, theta0, direction, layout, act, u0, u1, u2,
                            False)
        last = layout[1, 4]
        return output_loss(loss, u0[last:last + layout[1, 1]], t, d1)[0]
    for o in range(layout[0, 1]):
        u0[o] = _activate(act, a[o] + z * c[o])  # layer 0 is a hidden layer
    for layer in range(1, n_layers):
        fan_in, fan_out = layout[layer, 0], layout[layer, 1]
        coef, intercept, out = layout[layer, 2], layout[layer, 3], layout[layer, 4]
        source = layout[layer - 1, 4]
        for o in range(fan_out):
            u0[out + o] = theta0[intercept + o] + z * direction[intercept + o]
        for i in range(fan_in):
            h = u0[source + i]
            base = coef + i * fan_out
            for o in range(fan_out):
                u0[out + o] += (theta0[base + o] + z * direction[base + o]) * h
        if layer < n_layers - 1:
            for o in range(fan_out):
                u0[out + o] = _activate(act, u0[out + o])
    last = layout[n_layers - 1, 4]
    return output_loss(loss, u0[last:last + layout[n_layers - 1, 1]], t, d1)[0]


@njit(**_jit)
def line_exact(z, A, C, T, theta0, direction, layout, act, loss, scale, offset,
               u0, u1, u2, d1, deep=True):
    """``U(z)`` from the rows."""
    total = 0.0
    for v in range(A.shape[0]):
        total += _line_value(z, A[v], C[v], T[v], theta0, direction, layout, act,
                             loss, u0, u1, u2, d1, deep)
    return offset - scale * total / A.shape[0]


@njit(**_scalar)
def _interval(z, nodes, first, inv_cell):
    """The interval of the table holding ``z`` (``nodes[0] <= z < nodes[-1]``):
    from the first interval of ``z``'s cell of a uniform grid, onwards."""
    i = first[int((z - nodes[0]) * inv_cell)]
    while nodes[i + 1] <= z:
        i += 1
    return i


@njit(**_jit)
def line_utility(z, nodes, data, first, inv_cell, A, C, T, theta0, direction,
                 layout, act, loss, scale, offset, u0, u1, u2, d1, deep=True):
    """``U(z)`` from the table, or from the rows past it."""
    if z >= nodes[0] and z < nodes[nodes.shape[0] - 1]:
        i = _interval(z, nodes, first, inv_cell)
        return horner5(data, i, (z - nodes[i]) / (nodes[i + 1] - nodes[i]))
    return line_exact(z, A, C, T, theta0, direction, layout, act, loss, scale,
                      offset, u0, u1, u2, d1, deep)


@njit(**_jit)
def table_errors(left, right, data, A, C, T, theta0, direction, layout, act, loss,
                 scale, offset, u0, u1, u2, d1, out, deep=True):
    """``out[i]``: ``|interpolant - U|`` at the midpoint of interval ``i``
    (``data[i]`` its coefficients, as the walk reads them),
    where a quintic Hermite interpolant's error term ``U^(6)(xi) / 6! (t (t
    - 1))^3 h^6`` peaks."""
    for i in range(data.shape[0]):
        exact = line_exact(0.5 * (left[i] + right[i]), A, C, T, theta0,
                           direction, layout, act, loss, scale, offset, u0, u1, u2,
                           d1, deep)
        out[i] = abs(horner5(data, i, 0.5) - exact)


@njit(**_jit)
def line_walk(theta0, direction, layout, act, loss, A, C, T, row_weights, offsets,
              l2, penalty0, penalty1, clip_norm, learning_rate, record_level, nodes,
              data, first, inv_cell, A_val, C_val, T_val, scale, offset, permutations,
              stream,
              x_tt, use_rolling, rolling_mean, weights, marginals,
              end_utility, ends, update_2d, record_2d, u0, u1, u2, d1, joint,
              deep=True):
    """The walk along ``theta0 + z b`` from ``z = 0``: the releases and steps of
    :func:`walk` with one direction, a party's gradient in ``z`` by forward
    mode (O(width) in the first layer) and the utility from the table; walk
    ``b`` ends at ``z = ends[b]``. With ``joint`` (True; None compiles it
    out) a party's marginal is read from its own clipped step before the
    noise, from the walk's state before its step (the joint threat model,
    as :func:`skdpval.kernels._subspace._line_walk`). ``deep`` None: one hidden
    layer (:func:`depth_flag`). ``record_level``: True, or
    None at sample level (:func:`level_flag`); ``update_2d`` and
    ``record_2d`` are ``(1, 1)`` buffers (a reshape in a kernel costs
    compilation)."""
    n_walks, n_steps = permutations.shape
    update, record = update_2d[0], record_2d[0]
    # Every walk starts at z = 0 (without a table this is a validation pass).
    start_utility = line_utility(0.0, nodes, data, first, inv_cell, A_val, C_val,
                                 T_val, theta0, direction, layout, act, loss, scale,
                                 offset, u0, u1, u2, d1, deep)
    for b in range(n_walks):
        z = 0.0
        previous = start_utility
        fresh = x_tt[b]
        for position in range(n_steps):
            j = permutations[b, position]
            start, stop = offsets[j], offsets[j + 1]
            if record_level is not None:
                update[0] = 0.0
                for row in range(start, stop):
                    record[0] = line_party_gradient(
                        z, A, C, T, row_weights, row, row + 1, theta0, direction,
                        layout, act, loss, l2, penalty0, penalty1, u0, u1, u2, d1,
                        deep)
                    clip_l2(record_2d, clip_norm)
                    update[0] += record[0]
            else:
                update[0] = line_party_gradient(
                    z, A, C, T, row_weights, start, stop, theta0, direction, layout,
                    act, loss, l2, penalty0, penalty1, u0, u1, u2, d1, deep)
                clip_l2(update_2d, clip_norm)
            own = 0.0
            if joint is not None:
                own = (update[0] / (stop - start) if record_level is not None
                       else update[0])
            release_step(update, stream, b, j, record_level is not None,
                         stop - start, use_rolling, fresh, rolling_mean)
            z_old = z
            z -= learning_rate * update[0]
            current = line_utility(z, nodes, data, first, inv_cell, A_val, C_val,
                                   T_val, theta0, direction, layout, act, loss,
                                   scale, offset, u0, u1, u2, d1, deep)
            if joint is not None:
                # The party's own step from the state, not its release's.
                own_utility = line_utility(
                    z_old - learning_rate * own, nodes, data, first, inv_cell,
                    A_val, C_val, T_val, theta0, direction, layout, act, loss,
                    scale, offset, u0, u1, u2, d1, deep)
                marginals[b, j] = weights[position] * (own_utility - previous)
            else:
                marginals[b, j] = weights[position] * (current - previous)
            previous = current
        end_utility[b] = previous
        ends[b] = z
