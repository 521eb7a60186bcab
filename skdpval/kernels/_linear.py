"""The linear family's kernels: a party's gradient, and the full-space walk.

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
- the validation margins ``(n_outputs, n_pad)`` are updated in place
  (exactly, as they are linear in theta).

Clipping and the release are the privacy layer's
(:mod:`skdpval.privacy._release`); the Python wrappers at the bottom
allocate every buffer (kernels allocate nothing).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ..privacy._release import clip_l2, release_step, walk_stream
from ._losses import (NEG_LOSS, kernel_codes, loss_argument, sample_dloss,
                      utility_of_margins)
from ._math import (_f64, _i64, _jit, _scalar, _scalar_py, pad_columns,
                    unit_weights, validation_scratch)


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
        The data and settings (see ``skdpval.walks._runner``), already contiguous.
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
        loss=loss_argument(loss), utility=NEG_LOSS, loss_param=float(loss_param),
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
        pad_columns(X_val), pad_columns(T_val), _i64(labels_val), loss=loss_argument(loss),
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
                     _i64(offsets), loss_argument(loss), float(loss_param), float(l2),
                     float(l1), int(n_penalized),
                     np.empty(theta.shape[0]), np.empty(theta.shape[0]), out)
    return out


# --- the full-space walk's problem ----------------------------------------------

_WalkProblemFields = namedtuple("WalkProblem", [
    "X", "T", "offsets", "X_val_t", "T_val_t", "labels_val", "loss", "utility",
    "loss_param", "l2", "n_penalized", "clip_norm", "learning_rate",
    "total_sum_squares", "theta_init", "weights", "l1", "row_weights",
    "record_level"])


class PartiesByOffsets:
    """A walk problem's ``n_parties``: party ``j`` owns rows
    ``offsets[j]:offsets[j + 1]`` (a base for its namedtuple)."""

    __slots__ = ()

    @property
    def n_parties(self):
        return self.offsets.shape[0] - 1


class WalkProblem(PartiesByOffsets, _WalkProblemFields):
    """The full-space walk: parameters ``(n_outputs, n_columns)``, released whole."""

    __slots__ = ()

    @property
    def release_shape(self):
        return self.theta_init.shape

    @property
    def work_per_permutation(self):
        """Multiply-adds of a permutation's walk, about: margins and loss."""
        n_outputs, n_columns = self.theta_init.shape
        return self.n_parties * (n_columns + 1) * n_outputs * self.X_val_t.shape[1]

    def walk(self, permutations, stream, x_tt, rolling_mean):
        return walk(self, permutations, stream, x_tt, rolling_mean)


def make_problem(X, T, offsets, X_val, T_val, labels_val, *, loss, utility,
                 loss_param, l2, n_penalized, clip_norm, learning_rate,
                 total_sum_squares, weights, l1=0.0, row_weights=None,
                 record_level=False):
    """Pack the walk's inputs as contiguous arrays and plain scalars.

    ``X`` holds the parties' rows, party ``j`` being
    ``X[offsets[j]:offsets[j + 1]]``; ``row_weights`` (default ones) weigh
    their losses; the validation set is given by rows (stored transposed and
    padded, see :mod:`skdpval.kernels._math`). ``record_level``: each row's
    gradient is clipped, a party releases their noisy sum divided by its
    size (see :func:`_walk`).
    """
    f64, i64 = _f64, _i64
    n_outputs = T.shape[1]
    return WalkProblem(
        f64(X), f64(T), i64(offsets),
        pad_columns(X_val), pad_columns(T_val),
        i64(labels_val), loss_argument(loss),
        int(utility), float(loss_param), float(l2), int(n_penalized),
        float(clip_norm), float(learning_rate), float(total_sum_squares),
        np.zeros((n_outputs, X.shape[1])), f64(weights), float(l1),
        unit_weights(len(X)) if row_weights is None else f64(row_weights),
        bool(record_level))
