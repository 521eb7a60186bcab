"""The walk in a public subspace: project each gradient, then clip, then noise.

The model's parameters are restricted to ``theta = B^T z`` for a basis ``B``
of shape ``(m, n_params)`` with orthonormal rows, spanning a subspace chosen
from public data only (e.g. the direction of a model fitted on the
validation set). The walk moves ``z``: a party's step releases the gradient
of its loss with respect to ``z`` (its full gradient projected on ``B``),
clipped to ``clip_norm`` and noised in ``m`` dimensions. This is the G-Shapley
walk of a well-defined learning process, the model restricted to the
subspace, with the privacy of ``k`` releases of ``m`` numbers of sensitivity
``clip_norm`` each.

Why: to first order a step moves the validation utility by the projection
of the released gradient on the utility's own gradient. Clipping the whole
gradient first spends most of the clip norm on directions the utility does
not read; projecting first keeps it where the signal is.

Layout (``n_outputs`` outputs, ``n_columns`` columns with the intercept's):

- ``F`` of shape ``(n_rows, m, n_outputs)``: ``F[r, i, k]`` is the margin of
  output ``k`` of row ``r`` per unit of ``z_i``, ``<B_i[k, :], x_r>``;
- ``F_val`` of shape ``(m, n_outputs, n_val)``: the same for the validation
  rows, stored so that the margin updates run over contiguous rows;
- ``penalty`` of shape ``(m, m)``: ``B D B^T`` with ``D`` the mask of the
  penalised parameters, so that the L2 term's gradient in ``z`` is
  ``l2 * penalty @ z``.

A permutation's walk starts from ``z = 0`` (``theta = 0``); the other
starting points (``starts``) serve the utilities and gradients a fit needs
around the walk.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ._kernels import (
    _f64,
    _jit,
    clip_l2,
    kernel_codes,
    pad_columns,
    padded_length,
    sample_dloss,
    utility_of_margins,
    validation_scratch,
)
from ._secure_noise import NO_GRID, release_on_grid
from ._walk import PartiesByOffsets


@njit(**_jit)
def _party_gradient(z, F, T, start, stop, loss, huber_epsilon, l2, penalty,
                    margin_buf, dloss_buf, out):
    """Gradient in ``z`` of the mean loss of rows ``start:stop`` plus the L2 term."""
    m = z.shape[0]
    n_outputs = F.shape[2]
    for i in range(m):
        out[i] = 0.0
    for row in range(start, stop):
        for k in range(n_outputs):
            margin = 0.0
            for i in range(m):
                margin += z[i] * F[row, i, k]
            margin_buf[k] = margin
        sample_dloss(loss, margin_buf, T[row], huber_epsilon, dloss_buf)
        for i in range(m):
            total = 0.0
            for k in range(n_outputs):
                total += dloss_buf[k] * F[row, i, k]
            out[i] += total
    if stop - start > 1:
        inverse = 1.0 / (stop - start)
        for i in range(m):
            out[i] *= inverse
    if l2 != 0.0:
        for i in range(m):
            total = 0.0
            for j in range(m):
                total += penalty[i, j] * z[j]
            out[i] += l2 * total


@njit(**_jit)
def _walk(F, T, offsets, F_val, T_val_t, labels_val, loss, utility,
          huber_epsilon, l2, penalty, clip_norm, learning_rate,
          total_sum_squares, starts, permutations, noise, x_tt, use_rolling,
          rolling_mean, weights, marginals, end_utility, ends, update, margin_buf,
          dloss_buf, margins, scratch, grid, grid_bound):
    """Walk ``b`` starts from ``z = starts[b % len(starts)]``, steps through the
    parties ``permutations[b]`` and leaves its parameters in ``ends[b]``.
    Buffers come from the caller."""
    m, n_outputs, n_rows = F_val.shape
    n_walks, n_steps = permutations.shape
    has_noise = noise.shape[0] == n_walks
    update_2d = update.reshape((1, m))  # a view, for clip_l2

    for b in range(n_walks):
        z = ends[b]
        start = starts[b % starts.shape[0]]
        for i in range(m):
            z[i] = start[i]
        for k in range(n_outputs):
            for v in range(n_rows):
                margins[k, v] = 0.0
            for i in range(m):
                column = F_val[i, k]
                for v in range(n_rows):
                    margins[k, v] += z[i] * column[v]
        previous = utility_of_margins(utility, loss, margins, T_val_t,
                                      labels_val, huber_epsilon,
                                      total_sum_squares, scratch)
        fresh = x_tt[b]
        for position in range(n_steps):
            j = permutations[b, position]
            _party_gradient(z, F, T, offsets[j], offsets[j + 1], loss,
                            huber_epsilon, l2, penalty, margin_buf, dloss_buf,
                            update)
            clip_l2(update_2d, clip_norm)
            if has_noise:
                # The release: the clipped projected gradient on the grid
                # plus the integer noise, times the grid.
                for i in range(m):
                    update[i] = release_on_grid(update[i], noise[b, j, i], grid,
                                                grid_bound)
            if use_rolling:
                # As in the full-space walk: x_tt * release + (1 - x_tt) *
                # the party's mean of its earlier releases; hand the raw
                # release back for the next mean.
                for i in range(m):
                    raw = update[i]
                    noise[b, j, i] = raw
                    update[i] = fresh * raw + (1.0 - fresh) * rolling_mean[j, i]
            for i in range(m):
                step = learning_rate * update[i]
                z[i] -= step
                for k in range(n_outputs):
                    row = margins[k]
                    column = F_val[i, k]
                    for v in range(n_rows):
                        row[v] -= step * column[v]
            current = utility_of_margins(utility, loss, margins, T_val_t,
                                         labels_val, huber_epsilon,
                                         total_sum_squares, scratch)
            marginals[b, j] = weights[position] * (current - previous)
            previous = current
        end_utility[b] = previous


# --- Python side ----------------------------------------------------------------

def project_rows(basis, X, n_outputs):
    """``F[r, i, k] = <basis_i[k, :], X[r]>``: ``(n_rows, m, n_outputs)``."""
    per_output = np.reshape(basis, (basis.shape[0], n_outputs, -1))
    return _f64(np.einsum("ikc,rc->rik", per_output, X))


def _validation_layout(F_rows):
    """``(m, n_outputs, padded n_val)``: validation rows last, zero-padded."""
    n_val, m, n_outputs = F_rows.shape
    out = np.zeros((m, n_outputs, padded_length(n_val)))
    out[:, :, :n_val] = np.transpose(F_rows, (1, 2, 0))
    return out


def penalty_matrix(basis, n_outputs, n_penalized):
    """``B D B^T``: the L2 term in ``z``, ``D`` masking the penalised parameters."""
    per_output = np.reshape(basis, (basis.shape[0], n_outputs, -1))
    penalised = per_output[:, :, :n_penalized].reshape(basis.shape[0], -1)
    return _f64(penalised @ penalised.T)


def _run_walk(F, T, offsets, F_val, T_val_t, labels_val, *, loss, utility,
              huber_epsilon, l2, penalty, clip_norm, learning_rate,
              total_sum_squares, permutations, weights, starts=None, noise=None,
              x_tt=None, rolling_mean=None, grid=NO_GRID):
    """Call the subspace walk with its buffers; return (marginals, end_utility, ends).

    Everything a fit in a subspace computes goes through here, so that it
    compiles one kernel: the walk, the noiseless SGD pass of the
    learning-rate search (no validation rows), utilities (walks of no
    steps) and gradients (one unclipped step of rate 1).
    """
    n_walks = permutations.shape[0]
    m, n_outputs = F_val.shape[:2]
    use_rolling = rolling_mean is not None
    if noise is None:
        if use_rolling:
            raise ValueError("a rolling mean needs noise to roll")
        noise = np.empty((0, 1, 1))
    marginals = np.empty((n_walks, offsets.shape[0] - 1))
    end_utility = np.empty(n_walks)
    ends = np.empty((n_walks, m))
    _walk(F, T, offsets, F_val, T_val_t, labels_val,
          *kernel_codes(loss, utility, n_outputs), huber_epsilon, l2, penalty,
          clip_norm, learning_rate, total_sum_squares,
          np.zeros((1, m)) if starts is None else _f64(starts),
          np.ascontiguousarray(permutations, np.int64), noise,
          np.ones(n_walks) if x_tt is None else _f64(x_tt), use_rolling,
          np.empty((1, 1)) if rolling_mean is None else _f64(rolling_mean),
          weights, marginals, end_utility, ends, np.empty(m), np.empty(n_outputs),
          np.empty(n_outputs), np.empty((n_outputs, F_val.shape[2])),
          validation_scratch(len(labels_val)), float(grid[0]), float(grid[1]))
    return marginals, end_utility, ends


class SubspaceProblem(PartiesByOffsets, namedtuple("SubspaceProblem", [
        "F", "T", "offsets", "F_val", "T_val_t", "labels_val", "loss", "utility",
        "huber_epsilon", "l2", "penalty", "clip_norm", "learning_rate",
        "total_sum_squares", "weights"])):
    """The walk's inputs in a subspace, contiguous (see the module docstring)."""

    __slots__ = ()

    @property
    def release_shape(self):
        return (self.F_val.shape[0],)

    @property
    def work_per_permutation(self):
        """Multiply-adds of a permutation's walk, about: margins and loss."""
        m, n_outputs, n_rows = self.F_val.shape
        return self.n_parties * (m + 1) * n_outputs * n_rows

    def walk(self, permutations, noise, x_tt, rolling_mean, grid=NO_GRID):
        """Run the walk along each permutation; see :func:`skdpval._kernels.walk`."""
        marginals, end_utility, _ = _run_walk(
            self.F, self.T, self.offsets, self.F_val, self.T_val_t,
            self.labels_val, loss=self.loss, utility=self.utility,
            huber_epsilon=self.huber_epsilon, l2=self.l2, penalty=self.penalty,
            clip_norm=self.clip_norm, learning_rate=self.learning_rate,
            total_sum_squares=self.total_sum_squares, permutations=permutations,
            weights=self.weights, noise=noise, x_tt=x_tt, rolling_mean=rolling_mean,
            grid=grid)
        return marginals, end_utility


def make_subspace_problem(basis, X, T, offsets, X_val, T_val, labels_val, *,
                          loss, utility, huber_epsilon, l2, n_penalized,
                          clip_norm, learning_rate, total_sum_squares, weights):
    """Project the parties' rows and the validation set on ``basis``; pack them."""
    n_outputs = T.shape[1]
    return SubspaceProblem(
        project_rows(basis, X, n_outputs), _f64(T),
        np.ascontiguousarray(offsets, dtype=np.int64),
        _validation_layout(project_rows(basis, X_val, n_outputs)), pad_columns(T_val),
        np.ascontiguousarray(labels_val, dtype=np.int64), int(loss),
        int(utility), float(huber_epsilon), float(l2),
        penalty_matrix(basis, n_outputs, n_penalized), float(clip_norm),
        float(learning_rate), float(total_sum_squares), _f64(weights))


def _no_validation(m, n_outputs):
    """The validation arguments of a walk that scores nothing."""
    return (np.zeros((m, n_outputs, 0)), np.zeros((n_outputs, 0)),
            np.empty(0, dtype=np.int64))


def sgd_pass(basis, X, T, *, loss, huber_epsilon, l2, n_penalized, clip_norm,
             learning_rate, order):
    """``theta = B^T z`` after one clipped SGD pass in ``z`` over the rows ``order``.

    A noiseless walk from ``z = 0`` through the parties ``order`` (one row
    each, repeats allowed) with no validation rows.
    """
    n_outputs, m = T.shape[1], basis.shape[0]
    _, _, ends = _run_walk(
        project_rows(basis, X, n_outputs), _f64(T),
        np.arange(X.shape[0] + 1, dtype=np.int64), *_no_validation(m, n_outputs),
        loss=int(loss), utility=0, huber_epsilon=float(huber_epsilon),
        l2=float(l2), penalty=penalty_matrix(basis, n_outputs, n_penalized),
        clip_norm=float(clip_norm), learning_rate=float(learning_rate),
        total_sum_squares=1.0,
        permutations=np.ascontiguousarray(order, np.int64)[None],
        weights=np.zeros(len(order)))
    return (ends[0] @ basis).reshape(n_outputs, -1)


def utilities_of_thetas(basis, thetas, X_val, T_val, labels_val, *, loss,
                        utility, huber_epsilon, total_sum_squares):
    """Utility of each ``thetas[i]`` (in the subspace) on the validation rows.

    Each is a walk of no steps from ``z = B theta``.
    """
    n_outputs, m = T_val.shape[1], basis.shape[0]
    starts = np.reshape(thetas, (len(thetas), -1)) @ basis.T
    _, utilities, _ = _run_walk(
        np.zeros((0, m, n_outputs)), np.zeros((0, n_outputs)), np.zeros(1, np.int64),
        _validation_layout(project_rows(basis, X_val, n_outputs)), pad_columns(T_val),
        np.ascontiguousarray(labels_val, np.int64), loss=int(loss),
        utility=int(utility), huber_epsilon=float(huber_epsilon), l2=0.0,
        penalty=np.zeros((m, m)), clip_norm=1.0, learning_rate=0.0,
        total_sum_squares=float(total_sum_squares), starts=starts,
        permutations=np.zeros((len(starts), 0), np.int64), weights=np.zeros(0))
    return utilities


def party_gradients(basis, theta, X, T, offsets, *, loss, huber_epsilon, l2,
                    n_penalized):
    """Gradient in ``z`` of every party at ``theta = B^T z``: ``(n_parties, m)``.

    Party ``j``'s walk takes one unclipped step of rate 1 from ``z``: the
    gradient is ``z`` minus where it ends (exact from ``z = 0``, to the
    rounding of ``z`` elsewhere).
    """
    n_outputs, m = T.shape[1], basis.shape[0]
    n_parties = len(offsets) - 1
    z = basis @ np.ravel(theta)
    _, _, ends = _run_walk(
        project_rows(basis, X, n_outputs), _f64(T),
        np.ascontiguousarray(offsets, np.int64), *_no_validation(m, n_outputs),
        loss=int(loss), utility=0, huber_epsilon=float(huber_epsilon),
        l2=float(l2), penalty=penalty_matrix(basis, n_outputs, n_penalized),
        clip_norm=np.inf, learning_rate=1.0, total_sum_squares=1.0,
        starts=z[None], permutations=np.arange(n_parties)[:, None],
        weights=np.zeros(1))
    return z - ends


def mean_loss_and_gradient(basis, X, T, *, loss, huber_epsilon, l2, n_penalized):
    """``f(z) -> (mean loss + l2 term, its gradient in z)`` over all rows of X.

    For minimisers (the public direction's fit): the rows are projected
    once; each call is a walk of no steps (the loss) and a walk of one
    unclipped step of rate 1 by one party holding every row (the gradient).
    """
    n_outputs, m = T.shape[1], basis.shape[0]
    F = project_rows(basis, X, n_outputs)
    F_val = _validation_layout(F)
    T, T_val_t = _f64(T), pad_columns(T)
    labels = np.zeros(len(X), dtype=np.int64)
    penalty = penalty_matrix(basis, n_outputs, n_penalized)
    settings = dict(loss=int(loss), huber_epsilon=float(huber_epsilon),
                    penalty=penalty, total_sum_squares=1.0, weights=np.zeros(1))

    def objective(z):
        z = _f64(z)
        _, (utility,), _ = _run_walk(
            F, T, np.array([0, len(X)]), F_val, T_val_t, labels, utility=0, l2=0.0,
            clip_norm=1.0, learning_rate=0.0, starts=z[None],
            permutations=np.zeros((1, 0), np.int64), **settings)
        _, _, (end,) = _run_walk(
            F, T, np.array([0, len(X)]), *_no_validation(m, n_outputs), utility=0,
            l2=float(l2), clip_norm=np.inf, learning_rate=1.0, starts=z[None],
            permutations=np.zeros((1, 1), np.int64), **settings)
        return -utility + 0.5 * l2 * z @ penalty @ z, z - end

    return objective
