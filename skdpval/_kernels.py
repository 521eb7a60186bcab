"""Numba kernels: losses, gradients, clipping, utilities and the permutation walk.

Everything here takes contiguous float64 / int64 arrays and plain scalars; the
estimator classes turn strings into the integer codes below once, before any
kernel runs. The thin wrappers at the bottom of the module are the only entry
points used by the rest of the package.

Parameters are a matrix ``theta`` of shape ``(n_outputs, n_columns)``; when the
model fits an intercept, ``X`` carries a trailing column of ones and the last
column of ``theta`` is the intercept, which the L2 term does not touch
(``n_penalized = n_columns - 1``).
"""

import numpy as np
from numba import njit

# Loss codes. Margin losses (LOGISTIC, HINGE, SQUARED_HINGE, MODIFIED_HUBER)
# take targets in {-1, +1}, one output per class for one-vs-rest; MULTINOMIAL
# takes one-hot targets; SQUARED and HUBER take real targets.
LOGISTIC = 0
MULTINOMIAL = 1
SQUARED = 2
HINGE = 3
SQUARED_HINGE = 4
MODIFIED_HUBER = 5
HUBER = 6

# Utility codes.
NEG_LOSS = 0
ACCURACY = 1
NEG_MSE = 2
R2 = 3


@njit(cache=True, nogil=True)
def _softplus(z):
    """log(1 + exp(z)) without overflow."""
    if z > 0.0:
        return z + np.log1p(np.exp(-z))
    return np.log1p(np.exp(z))


@njit(cache=True, nogil=True)
def _output_loss(loss, m, t, huber_epsilon):
    """Loss of one output with margin ``m`` and target ``t`` (not MULTINOMIAL)."""
    if loss == LOGISTIC:
        return _softplus(-t * m)
    if loss == SQUARED:
        r = m - t
        return 0.5 * r * r
    if loss == HINGE:
        return max(0.0, 1.0 - t * m)
    if loss == SQUARED_HINGE:
        h = max(0.0, 1.0 - t * m)
        return h * h
    if loss == MODIFIED_HUBER:
        z = t * m
        if z >= 1.0:
            return 0.0
        if z >= -1.0:
            return (1.0 - z) * (1.0 - z)
        return -4.0 * z
    # HUBER
    a = abs(m - t)
    if a <= huber_epsilon:
        return 0.5 * a * a
    return huber_epsilon * a - 0.5 * huber_epsilon * huber_epsilon


@njit(cache=True, nogil=True)
def _output_dloss(loss, m, t, huber_epsilon):
    """Derivative of ``_output_loss`` with respect to the margin ``m``."""
    if loss == LOGISTIC:
        z = t * m
        if z > 0.0:
            e = np.exp(-z)
            return -t * e / (1.0 + e)
        return -t / (1.0 + np.exp(z))
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
    # HUBER
    r = m - t
    if r > huber_epsilon:
        return huber_epsilon
    if r < -huber_epsilon:
        return -huber_epsilon
    return r


@njit(cache=True, nogil=True)
def sample_loss(loss, margins, targets, huber_epsilon):
    """Loss of one sample: summed over outputs (one-vs-rest) or multinomial."""
    n_outputs = margins.shape[0]
    if loss == MULTINOMIAL:
        top = margins[0]
        for k in range(1, n_outputs):
            top = max(top, margins[k])
        total = 0.0
        dot = 0.0
        for k in range(n_outputs):
            total += np.exp(margins[k] - top)
            dot += targets[k] * margins[k]
        return top + np.log(total) - dot
    value = 0.0
    for k in range(n_outputs):
        value += _output_loss(loss, margins[k], targets[k], huber_epsilon)
    return value


@njit(cache=True, nogil=True)
def sample_dloss(loss, margins, targets, huber_epsilon, out):
    """Gradient of ``sample_loss`` with respect to the margins, into ``out``."""
    n_outputs = margins.shape[0]
    if loss == MULTINOMIAL:
        top = margins[0]
        for k in range(1, n_outputs):
            top = max(top, margins[k])
        total = 0.0
        for k in range(n_outputs):
            out[k] = np.exp(margins[k] - top)
            total += out[k]
        for k in range(n_outputs):
            out[k] = out[k] / total - targets[k]
        return
    for k in range(n_outputs):
        out[k] = _output_dloss(loss, margins[k], targets[k], huber_epsilon)


@njit(cache=True, nogil=True)
def party_gradient(theta, x, targets, loss, huber_epsilon, l2, n_penalized,
                   margin_buf, dloss_buf, out):
    """Gradient of one party's loss plus the L2 term ``l2/2 ||W||^2``, into ``out``."""
    n_outputs, n_columns = theta.shape
    for k in range(n_outputs):
        m = 0.0
        for c in range(n_columns):
            m += theta[k, c] * x[c]
        margin_buf[k] = m
    sample_dloss(loss, margin_buf, targets, huber_epsilon, dloss_buf)
    for k in range(n_outputs):
        dk = dloss_buf[k]
        for c in range(n_penalized):
            out[k, c] = dk * x[c] + l2 * theta[k, c]
        for c in range(n_penalized, n_columns):
            out[k, c] = dk * x[c]


@njit(cache=True, nogil=True)
def clip_l2(g, clip_norm):
    """Scale ``g`` in place to L2 norm at most ``clip_norm``; return the old norm."""
    n_outputs, n_columns = g.shape
    sq = 0.0
    for k in range(n_outputs):
        for c in range(n_columns):
            sq += g[k, c] * g[k, c]
    norm = np.sqrt(sq)
    if norm > clip_norm:
        scale = clip_norm / norm
        for k in range(n_outputs):
            for c in range(n_columns):
                g[k, c] *= scale
    return norm


@njit(cache=True, nogil=True)
def _row_score(utility, loss, margins, targets, label, huber_epsilon):
    """One validation row's contribution to the utility (before normalising)."""
    if utility == NEG_LOSS:
        return -sample_loss(loss, margins, targets, huber_epsilon)
    if utility == ACCURACY:
        n_outputs = margins.shape[0]
        if n_outputs == 1:
            predicted = 1 if margins[0] > 0.0 else 0
        else:
            predicted = 0
            for k in range(1, n_outputs):
                if margins[k] > margins[predicted]:
                    predicted = k
        return 1.0 if predicted == label else 0.0
    # NEG_MSE and R2 (single output regression): squared error
    r = margins[0] - targets[0]
    return r * r


@njit(cache=True, nogil=True)
def _finish_utility(utility, total, n_rows, total_sum_squares):
    if utility == NEG_MSE:
        return -total / n_rows
    if utility == R2:
        return 1.0 - total / total_sum_squares
    return total / n_rows


@njit(cache=True, nogil=True)
def utility_of_margins(utility, loss, margins, targets, labels, huber_epsilon,
                       total_sum_squares):
    """Utility on the validation set given its margins ``(n_rows, n_outputs)``."""
    total = 0.0
    for i in range(margins.shape[0]):
        total += _row_score(utility, loss, margins[i], targets[i], labels[i],
                            huber_epsilon)
    return _finish_utility(utility, total, margins.shape[0], total_sum_squares)


@njit(cache=True, nogil=True)
def _step_margins_and_utility(utility, loss, X_val, margins, targets, labels,
                              update, learning_rate, huber_epsilon,
                              total_sum_squares):
    """Apply ``theta -= lr * update`` to the validation margins and score them.

    The margins are linear in theta, so the update is exact:
    ``margins[i, k] -= lr * X_val[i] @ update[k]``. Fused with the utility so
    that each row is read once.
    """
    n_rows, n_columns = X_val.shape
    n_outputs = margins.shape[1]
    total = 0.0
    for i in range(n_rows):
        for k in range(n_outputs):
            s = 0.0
            for c in range(n_columns):
                s += X_val[i, c] * update[k, c]
            margins[i, k] -= learning_rate * s
        total += _row_score(utility, loss, margins[i], targets[i], labels[i],
                            huber_epsilon)
    return _finish_utility(utility, total, n_rows, total_sum_squares)


@njit(cache=True, nogil=True)
def _margins(X, theta, out):
    n_rows, n_columns = X.shape
    for i in range(n_rows):
        for k in range(theta.shape[0]):
            s = 0.0
            for c in range(n_columns):
                s += X[i, c] * theta[k, c]
            out[i, k] = s


@njit(cache=True, nogil=True)
def _walk(X, T, X_val, T_val, labels_val, loss, utility, huber_epsilon, l2,
          n_penalized, clip_norm, learning_rate, total_sum_squares, theta_init,
          permutations, noise, x_tt, counted, releases_before, use_rolling,
          rolling_mean, weights, marginal_sum, marginal_sq_sum, end_utility):
    n_parties, n_columns = X.shape
    n_outputs = T.shape[1]
    n_walks = permutations.shape[0]
    has_noise = noise.shape[0] == n_walks

    theta = np.empty((n_outputs, n_columns))
    update = np.empty((n_outputs, n_columns))
    margin_buf = np.empty(n_outputs)
    dloss_buf = np.empty(n_outputs)
    margins_init = np.empty((X_val.shape[0], n_outputs))
    _margins(X_val, theta_init, margins_init)
    utility_init = utility_of_margins(utility, loss, margins_init, T_val,
                                      labels_val, huber_epsilon,
                                      total_sum_squares)
    margins = np.empty_like(margins_init)

    for b in range(n_walks):
        theta[:, :] = theta_init
        margins[:, :] = margins_init
        previous = utility_init
        # Every party releases once per permutation: this is its t-th release.
        t = releases_before + b + 1
        keep = (1.0 - x_tt[b]) if use_rolling else 0.0
        for position in range(n_parties):
            j = permutations[b, position]
            party_gradient(theta, X[j], T[j], loss, huber_epsilon, l2,
                           n_penalized, margin_buf, dloss_buf, update)
            clip_l2(update, clip_norm)
            if has_noise:
                # The release: clipped gradient plus the party's own noise.
                for k in range(n_outputs):
                    for c in range(n_columns):
                        update[k, c] += noise[b, j, k, c]
            if use_rolling:
                # Released value: x_tt * this release + (1 - x_tt) * mean of
                # the party's earlier releases; then fold this release in.
                for k in range(n_outputs):
                    for c in range(n_columns):
                        raw = update[k, c]
                        past = rolling_mean[j, k, c]
                        update[k, c] = x_tt[b] * raw + keep * past
                        rolling_mean[j, k, c] = past + (raw - past) / t
            for k in range(n_outputs):
                for c in range(n_columns):
                    theta[k, c] -= learning_rate * update[k, c]
            current = _step_margins_and_utility(
                utility, loss, X_val, margins, T_val, labels_val, update,
                learning_rate, huber_epsilon, total_sum_squares)
            if counted[b]:
                marginal = weights[position] * (current - previous)
                marginal_sum[j] += marginal
                marginal_sq_sum[j] += marginal * marginal
            previous = current
        end_utility[b] = previous


@njit(cache=True, nogil=True)
def _sgd_pass(X, T, loss, huber_epsilon, l2, n_penalized, clip_norm,
              learning_rate, theta, order):
    """One clipped, noiseless SGD pass over ``X[order]``, updating ``theta``."""
    n_outputs, n_columns = theta.shape
    update = np.empty((n_outputs, n_columns))
    margin_buf = np.empty(n_outputs)
    dloss_buf = np.empty(n_outputs)
    for j in order:
        party_gradient(theta, X[j], T[j], loss, huber_epsilon, l2,
                       n_penalized, margin_buf, dloss_buf, update)
        clip_l2(update, clip_norm)
        for k in range(n_outputs):
            for c in range(n_columns):
                theta[k, c] -= learning_rate * update[k, c]


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def walk(X, T, X_val, T_val, labels_val, *, loss, utility, huber_epsilon, l2,
         n_penalized, clip_norm, learning_rate, total_sum_squares, theta_init,
         permutations, noise, x_tt, counted, releases_before, rolling_mean,
         weights, marginal_sum, marginal_sq_sum):
    """Run the G-Shapley walk over a block of permutations, in order.

    ``permutations`` is ``(n_walks, n_parties)``; ``noise`` is
    ``(n_walks, n_parties, n_outputs, n_columns)`` indexed by party (not by
    position), or ``None`` for no noise. ``x_tt[b]`` is the weight of the
    fresh release in walk ``b``; ``rolling_mean`` (updated in place) holds each
    party's mean of its raw releases, or is ``None`` for i.i.d. releases.
    ``marginal_sum`` and ``marginal_sq_sum`` accumulate, in place, the weighted
    marginals of the walks flagged in ``counted``. Returns the utility at the
    end of each walk.
    """
    n_walks = permutations.shape[0]
    n_outputs, n_columns = np.shape(theta_init)
    use_rolling = rolling_mean is not None
    if noise is None:
        noise = np.empty((0, 1, 1, 1))
    if rolling_mean is None:
        rolling_mean = np.empty((1, 1, 1))
    for name, arr in (("rolling_mean", rolling_mean), ("marginal_sum", marginal_sum),
                      ("marginal_sq_sum", marginal_sq_sum)):
        if not (arr.dtype == np.float64 and arr.flags.c_contiguous):
            raise ValueError(f"{name} must be a C-contiguous float64 array "
                             "(it is updated in place)")
    end_utility = np.empty(n_walks)
    _walk(_f64(X), _f64(T), _f64(X_val), _f64(T_val), _i64(labels_val),
          int(loss), int(utility), float(huber_epsilon), float(l2),
          int(n_penalized), float(clip_norm), float(learning_rate),
          float(total_sum_squares), _f64(theta_init), _i64(permutations),
          _f64(noise), _f64(x_tt), np.ascontiguousarray(counted, dtype=np.bool_),
          int(releases_before), use_rolling, rolling_mean, _f64(weights),
          marginal_sum, marginal_sq_sum, end_utility)
    return end_utility


def sgd_pass(X, T, *, loss, huber_epsilon, l2, n_penalized, clip_norm,
             learning_rate, theta_init, order):
    """Return theta after one clipped SGD pass over the rows ``order`` of X."""
    theta = np.array(theta_init, dtype=np.float64, order="C", copy=True)
    _sgd_pass(_f64(X), _f64(T), int(loss), float(huber_epsilon), float(l2),
              int(n_penalized), float(clip_norm), float(learning_rate), theta,
              _i64(order))
    return theta


def utility_of_theta(theta, X_val, T_val, labels_val, *, loss, utility,
                     huber_epsilon, total_sum_squares):
    """Utility of the parameters ``theta`` on the validation set."""
    theta = _f64(theta)
    X_val = _f64(X_val)
    margins = np.empty((X_val.shape[0], theta.shape[0]))
    _margins(X_val, theta, margins)
    return utility_of_margins(int(utility), int(loss), margins, _f64(T_val),
                              _i64(labels_val), float(huber_epsilon),
                              float(total_sum_squares))
