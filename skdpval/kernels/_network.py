"""Kernels of a multilayer perceptron: a party's gradient, and its walks in the
full space or a public basis (along a line: :mod:`skdpval.kernels._network_line`).

The parameters are one flat vector ``theta``, packed as scikit-learn packs
an MLP's (``_pack``): every layer's coefficients ``W_l`` of shape
``(fan_in, fan_out)`` row-major, then every layer's intercepts. ``layout``
(``(n_layers, 5)`` int64, :func:`network_layout`) holds each layer's
``fan_in``, ``fan_out``, the offsets of its coefficients and intercepts in
``theta`` and of its units in the ``units`` buffer (all layers' outputs, the
hidden ones after the activation, the last one before the output's).

Hidden activations (codes): identity, logistic, tanh, relu. The output and
the loss follow the loss code of :mod:`skdpval.kernels._linear`: ``LOGISTIC`` (one
logistic unit, targets +-1, scikit-learn's binary log loss), ``MULTINOMIAL``
(softmax, one-hot targets) or ``SQUARED`` (identity, ``r^2 / 2``). The
objective of a party is its rows' weighted mean loss plus ``l2 / 2`` times
the squared norm of the coefficients (not the intercepts), as scikit-learn
writes ``alpha / (2 n) ||W||^2`` for ``n`` rows.

Along a public line ``theta = theta0 + z b`` the first layer's
pre-activations of a row are ``a + z c`` (:func:`line_rows`, once per fit),
so that a forward pass costs O(width) in that layer, not O(features x
width); the other layers carry the value and the first two derivatives in
``z`` (forward mode): a party's gradient in ``z`` and the validation
utility's table (:mod:`skdpval.families.network`) come from them
(:mod:`skdpval.kernels._network_line`).
"""


import numpy as np
from numba import njit

from ..privacy._release import clip_l2, release_step
from ._losses import LOGISTIC, MULTINOMIAL, _logistic_dloss, utility_of_margins
from ._math import _jit, _scalar, softplus
from ._subspace import walk_start


IDENTITY, LOGISTIC_UNIT, TANH, RELU = 0, 1, 2, 3

ACTIVATIONS = {"identity": IDENTITY, "logistic": LOGISTIC_UNIT, "tanh": TANH,
               "relu": RELU}


def network_layout(sizes):
    """``(n_layers, 5)`` int64: fan_in, fan_out, coefficient, intercept and unit
    offsets of each layer for unit counts ``sizes`` (inputs, hidden..., outputs)."""
    sizes = [int(s) for s in sizes]
    n_layers = len(sizes) - 1
    n_coefs = sum(sizes[i] * sizes[i + 1] for i in range(n_layers))
    layout = np.zeros((n_layers, 5), dtype=np.int64)
    coef = intercept = unit = 0
    for i in range(n_layers):
        layout[i] = (sizes[i], sizes[i + 1], coef, n_coefs + intercept, unit)
        coef += sizes[i] * sizes[i + 1]
        intercept += sizes[i + 1]
        unit += sizes[i + 1]
    return layout


def loss_flag(loss):
    """The kernels' ``loss`` argument: None for the binary logistic loss
    (MLPClassifier on two classes), which numba then compiles alone, without
    the softmax's and the squared loss's code (as
    :func:`skdpval.kernels._losses.kernel_codes`); the code otherwise."""
    return None if loss == LOGISTIC else int(loss)


def act_flag(act):
    """The kernels' ``act`` argument: None for relu (the default network's),
    which numba then compiles alone, without the other activations' code
    (as :func:`loss_flag`); the code otherwise."""
    return None if act == RELU else int(act)


def depth_flag(layout):
    """The line kernels' ``deep`` argument: None for one hidden layer (the
    default network), which numba then compiles without the deeper
    networks' passes; True otherwise (decided from ``layout`` at run
    time)."""
    return None if layout.shape[0] == 2 else True


def n_parameters(layout):
    """Length of ``theta``."""
    return int(layout[-1, 3] + layout[-1, 1])


def n_coefficients(layout):
    """Coefficients (the penalised parameters) come first in ``theta``."""
    return int(layout[0, 3])


def n_units(layout):
    return int(layout[-1, 4] + layout[-1, 1])


@njit(**_scalar)
def _activate(act, u):
    """The hidden activation ``act`` (None is relu, :func:`act_flag`) at ``u``."""
    if act is None or act == RELU:
        return u if u > 0.0 else 0.0
    if act == TANH:
        return np.tanh(u)
    if act == LOGISTIC_UNIT:
        return _sigmoid(u)
    return u


@njit(**_scalar)
def _derivatives(act, h):
    """``(f'(u), f''(u))`` from the activation's value ``h = f(u)``
    (relu's derivative at 0 is 0, as in scikit-learn; ``act`` None is relu)."""
    if act is None or act == RELU:
        return (1.0 if h > 0.0 else 0.0), 0.0
    if act == TANH:
        d = 1.0 - h * h
        return d, -2.0 * h * d
    if act == LOGISTIC_UNIT:
        d = h * (1.0 - h)
        return d, d * (1.0 - 2.0 * h)
    return 1.0, 0.0


@njit(**_jit)
def forward(theta, layout, x, act, units):
    """Fill ``units`` with every layer's outputs for the input row ``x``."""
    n_layers = layout.shape[0]
    for layer in range(n_layers):
        fan_in, fan_out = layout[layer, 0], layout[layer, 1]
        coef, intercept, out = layout[layer, 2], layout[layer, 3], layout[layer, 4]
        source = layout[layer - 1, 4] if layer > 0 else 0
        for o in range(fan_out):
            units[out + o] = theta[intercept + o]
        for i in range(fan_in):
            v = x[i] if layer == 0 else units[source + i]
            base = coef + i * fan_out
            for o in range(fan_out):
                units[out + o] += v * theta[base + o]
        if layer < n_layers - 1:
            for o in range(fan_out):
                units[out + o] = _activate(act, units[out + o])


@njit(**_scalar)
def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


@njit(**_scalar)
def output_gradient(loss, o, t, d1):
    """``d1`` <- the loss's gradient in the outputs ``o`` at targets ``t``;
    returns the softmax's log-sum-exp (0 for the other losses), which its
    value needs. ``loss`` None is LOGISTIC (:func:`loss_flag`)."""
    if loss is None or loss == LOGISTIC:
        d1[0] = _logistic_dloss(o[0], t[0])
        return 0.0
    if loss == MULTINOMIAL:
        top = o[0]
        for k in range(1, o.shape[0]):
            top = o[k] if o[k] > top else top
        total = 0.0
        for k in range(o.shape[0]):
            total += np.exp(o[k] - top)
        lse = top + np.log(total)
        for k in range(o.shape[0]):
            d1[k] = np.exp(o[k] - lse) - t[k]
        return lse
    for k in range(o.shape[0]):
        d1[k] = o[k] - t[k]
    return 0.0


@njit(**_jit)
def output_loss(loss, o, t, d1):
    """``(loss, curvature)`` of the outputs ``o`` at targets ``t``, ``d1`` <- the
    loss's gradient in ``o`` (:func:`output_gradient`). The curvature is the
    second derivative of a one-output loss (logistic, squared; per output
    for the squared loss), 0 for the softmax (its Hessian ``diag p - p
    p^T``, ``p = d1 + t``, is applied by :func:`line_loss`)."""
    lse = output_gradient(loss, o, t, d1)
    if loss is None or loss == LOGISTIC:
        s = _sigmoid(o[0])
        return softplus(-t[0] * o[0]), s * (1.0 - s)
    if loss == MULTINOMIAL:
        value = lse
        for k in range(o.shape[0]):
            value -= t[k] * o[k]
        return value, 0.0
    value = 0.0
    for k in range(o.shape[0]):
        r = o[k] - t[k]
        value += 0.5 * r * r
    return value, 1.0


@njit(**_jit)
def backward(theta, layout, x, act, units, deltas, grad):
    """Add the gradient to ``grad``: ``deltas`` holds d(objective)/d(outputs)
    in the last layer's units (the others are overwritten)."""
    n_layers = layout.shape[0]
    for layer in range(n_layers - 1, -1, -1):
        fan_in, fan_out = layout[layer, 0], layout[layer, 1]
        coef, intercept, out = layout[layer, 2], layout[layer, 3], layout[layer, 4]
        source = layout[layer - 1, 4] if layer > 0 else 0
        for o in range(fan_out):
            grad[intercept + o] += deltas[out + o]
        for i in range(fan_in):
            v = x[i] if layer == 0 else units[source + i]
            base = coef + i * fan_out
            back = 0.0
            for o in range(fan_out):
                grad[base + o] += v * deltas[out + o]
                back += theta[base + o] * deltas[out + o]
            if layer > 0:
                deltas[source + i] = back * _derivatives(act, units[source + i])[0]


@njit(**_jit)
def party_gradient(theta, layout, X, T, row_weights, start, stop, act, loss, l2,
                   units, deltas, out):
    """``out`` <- the gradient of rows ``start:stop``'s weighted mean loss plus
    ``l2 / 2 ||W||^2``; returns that objective."""
    last = layout[layout.shape[0] - 1, 4]
    n_out = layout[layout.shape[0] - 1, 1]
    for p in range(out.shape[0]):
        out[p] = 0.0
    total = 0.0
    for row in range(start, stop):
        forward(theta, layout, X[row], act, units)
        value, _ = output_loss(loss, units[last:last + n_out], T[row],
                               deltas[last:last + n_out])
        weight = row_weights[row]
        total += weight * value
        for k in range(n_out):
            deltas[last + k] *= weight
        backward(theta, layout, X[row], act, units, deltas, out)
    if stop - start > 1:
        inverse = 1.0 / (stop - start)
        total *= inverse
        for p in range(out.shape[0]):
            out[p] *= inverse
    penalty = 0.0
    for p in range(layout[0, 3]):  # the coefficients
        out[p] += l2 * theta[p]
        penalty += theta[p] * theta[p]
    return total + 0.5 * l2 * penalty


@njit(**_jit)
def output_margins(theta, layout, X, act, units, margins):
    """``margins[k, v]``: output ``k`` (before the output's activation) of row ``v``."""
    last = layout[layout.shape[0] - 1, 4]
    for v in range(X.shape[0]):
        forward(theta, layout, X[v], act, units)
        for k in range(margins.shape[0]):
            margins[k, v] = units[last + k]


@njit(**_scalar)
def _project(grad, basis, projected, out):
    """``out`` <- ``basis @ grad`` when ``projected``, else ``grad``."""
    if projected:
        for i in range(out.shape[0]):
            s = 0.0
            for p in range(grad.shape[0]):
                s += basis[i, p] * grad[p]
            out[i] = s
    else:
        for p in range(out.shape[0]):
            out[p] = grad[p]


@njit(**_jit)
def _clipped_statistic(theta, basis, projected, layout, X, T, row_weights, start,
                       stop, act, loss, l2, clip_norm, record_level, units, deltas,
                       grad, record, update):
    """``update`` <- party ``start:stop``'s gradient (projected), clipped; at
    record level the sum of its rows' clipped gradients."""
    dim = update.shape[0]
    if record_level:
        for i in range(dim):
            update[i] = 0.0
        for row in range(start, stop):
            party_gradient(theta, layout, X, T, row_weights, row, row + 1, act, loss,
                           l2, units, deltas, grad)
            _project(grad, basis, projected, record)
            clip_l2(record.reshape((1, dim)), clip_norm)
            for i in range(dim):
                update[i] += record[i]
    else:
        party_gradient(theta, layout, X, T, row_weights, start, stop, act, loss, l2,
                       units, deltas, grad)
        _project(grad, basis, projected, update)
        clip_l2(update.reshape((1, dim)), clip_norm)


@njit(**_jit)
def validation_utility(theta, layout, X_val, act, units, margins, T_val_t,
                       labels_val, utility, utility_loss, total_sum_squares, scratch):
    """The validation utility at ``theta``: what :func:`walk` scores before
    its first step (``margins`` zero-padded as there)."""
    output_margins(theta, layout, X_val, act, units, margins)
    return utility_of_margins(utility, utility_loss, margins, T_val_t, labels_val,
                              0.0, total_sum_squares, scratch)


@njit(**_jit)
def walk(theta0, basis, projected, layout, act, loss, X, T, row_weights, offsets,
         X_val, T_val_t, labels_val, utility, utility_loss, total_sum_squares, l2,
         clip_norm, learning_rate, record_level, starts, permutations, stream, x_tt,
         use_rolling, rolling_mean, weights, marginals,
         end_utility, ends, theta, grad, record, update, units, deltas, margins,
         scratch):
    """The network's walk in the full space (``projected`` False: the released
    statistic is the whole gradient, ``z = theta - theta0``) or in the span of
    ``basis`` (``theta = theta0 + basis^T z``). Walk ``b`` starts from ``z =
    starts[b % len(starts)]`` and steps through ``permutations[b]``, leaving
    its ``z`` in ``ends[b]``; the validation utility is computed from the rows
    at every step (``utility``, ``utility_loss`` as
    :func:`skdpval.kernels._losses.kernel_codes` gives them)."""
    n_walks, n_steps = permutations.shape
    dim = update.shape[0]
    n_params = theta.shape[0]
    n_val = labels_val.shape[0]
    for b in range(n_walks):
        walk_start(ends, starts, b)
        z = ends[b]
        for p in range(n_params):
            theta[p] = theta0[p]
        if projected:
            for i in range(dim):
                for p in range(n_params):
                    theta[p] += z[i] * basis[i, p]
        else:
            for p in range(n_params):
                theta[p] += z[p]
        output_margins(theta, layout, X_val, act, units, margins)
        previous = utility_of_margins(utility, utility_loss, margins, T_val_t,
                                      labels_val, 0.0, total_sum_squares, scratch)
        fresh = x_tt[b]
        for position in range(n_steps):
            j = permutations[b, position]
            _clipped_statistic(theta, basis, projected, layout, X, T, row_weights,
                               offsets[j], offsets[j + 1], act, loss, l2, clip_norm,
                               record_level, units, deltas, grad, record, update)
            release_step(update, stream, b, j, record_level,
                         offsets[j + 1] - offsets[j], use_rolling, fresh,
                         rolling_mean)
            for i in range(dim):
                z[i] -= learning_rate * update[i]
            if projected:
                for p in range(n_params):
                    s = 0.0
                    for i in range(dim):
                        s += update[i] * basis[i, p]
                    theta[p] -= learning_rate * s
            else:
                for p in range(n_params):
                    theta[p] -= learning_rate * update[p]
            if n_val > 0:
                output_margins(theta, layout, X_val, act, units, margins)
                current = utility_of_margins(utility, utility_loss, margins, T_val_t,
                                             labels_val, 0.0, total_sum_squares,
                                             scratch)
                marginals[b, j] = weights[position] * (current - previous)
                previous = current
        end_utility[b] = previous
