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

The walk starts every permutation from ``z = 0`` (``theta = 0``).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from ._kernels import _jit, clip_l2, sample_dloss, utility_of_margins


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
          total_sum_squares, permutations, noise, x_tt, use_rolling,
          rolling_mean, weights, marginals, end_utility):
    n_parties = offsets.shape[0] - 1
    m, n_outputs, n_val = F_val.shape
    n_walks = permutations.shape[0]
    has_noise = noise.shape[0] == n_walks

    z = np.empty(m)
    update = np.empty(m)
    update_2d = update.reshape((1, m))  # a view, for clip_l2
    margin_buf = np.empty(n_outputs)
    dloss_buf = np.empty(n_outputs)
    buf = np.empty(n_val)
    margins = np.zeros((n_outputs, n_val))
    utility_init = utility_of_margins(utility, loss, margins, T_val_t,
                                      labels_val, huber_epsilon,
                                      total_sum_squares, buf)

    for b in range(n_walks):
        for i in range(m):
            z[i] = 0.0
        for k in range(n_outputs):
            for v in range(n_val):
                margins[k, v] = 0.0
        previous = utility_init
        fresh = x_tt[b]
        for position in range(n_parties):
            j = permutations[b, position]
            _party_gradient(z, F, T, offsets[j], offsets[j + 1], loss,
                            huber_epsilon, l2, penalty, margin_buf, dloss_buf,
                            update)
            clip_l2(update_2d, clip_norm)
            if has_noise:
                # The release: the clipped projected gradient plus the noise.
                for i in range(m):
                    update[i] += noise[b, j, i]
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
                    for v in range(n_val):
                        row[v] -= step * column[v]
            current = utility_of_margins(utility, loss, margins, T_val_t,
                                         labels_val, huber_epsilon,
                                         total_sum_squares, buf)
            marginals[b, j] = weights[position] * (current - previous)
            previous = current
        end_utility[b] = previous


@njit(**_jit)
def _sgd_pass(F, T, offsets, loss, huber_epsilon, l2, penalty, clip_norm,
              learning_rate, z, order):
    """One clipped, noiseless SGD pass in ``z`` over the parties ``order``."""
    m = z.shape[0]
    update = np.empty(m)
    update_2d = update.reshape((1, m))
    margin_buf = np.empty(F.shape[2])
    dloss_buf = np.empty(F.shape[2])
    for j in order:
        _party_gradient(z, F, T, offsets[j], offsets[j + 1], loss,
                        huber_epsilon, l2, penalty, margin_buf, dloss_buf,
                        update)
        clip_l2(update_2d, clip_norm)
        for i in range(m):
            z[i] -= learning_rate * update[i]


# --- Python side ----------------------------------------------------------------

def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def project_rows(basis, X, n_outputs):
    """``F[r, i, k] = <basis_i[k, :], X[r]>``: ``(n_rows, m, n_outputs)``."""
    per_output = np.reshape(basis, (basis.shape[0], n_outputs, -1))
    return _f64(np.einsum("ikc,rc->rik", per_output, X))


def penalty_matrix(basis, n_outputs, n_penalized):
    """``B D B^T``: the L2 term in ``z``, ``D`` masking the penalised parameters."""
    per_output = np.reshape(basis, (basis.shape[0], n_outputs, -1))
    penalised = per_output[:, :, :n_penalized].reshape(basis.shape[0], -1)
    return _f64(penalised @ penalised.T)


class SubspaceProblem(namedtuple("SubspaceProblem", [
        "F", "T", "offsets", "F_val", "T_val_t", "labels_val", "loss", "utility",
        "huber_epsilon", "l2", "penalty", "clip_norm", "learning_rate",
        "total_sum_squares", "weights"])):
    """The walk's inputs in a subspace, contiguous (see the module docstring)."""

    __slots__ = ()

    @property
    def release_shape(self):
        return (self.F_val.shape[0],)

    def walk(self, permutations, noise, x_tt, rolling_mean):
        """Run the walk along each permutation; see :func:`skdpval._kernels.walk`."""
        n_walks, n_parties = permutations.shape
        if noise is None:
            if rolling_mean is not None:
                raise ValueError("a rolling mean needs noise to roll")
            noise = np.empty((0, 1, 1))
        use_rolling = rolling_mean is not None
        if rolling_mean is None:
            rolling_mean = np.empty((1, 1))
        marginals = np.empty((n_walks, n_parties))
        end_utility = np.empty(n_walks)
        _walk(self.F, self.T, self.offsets, self.F_val, self.T_val_t,
              self.labels_val, self.loss, self.utility, self.huber_epsilon,
              self.l2, self.penalty, self.clip_norm, self.learning_rate,
              self.total_sum_squares, np.ascontiguousarray(permutations, np.int64),
              noise, _f64(x_tt), use_rolling, _f64(rolling_mean), self.weights,
              marginals, end_utility)
        return marginals, end_utility


def make_subspace_problem(basis, X, T, offsets, X_val, T_val, labels_val, *,
                          loss, utility, huber_epsilon, l2, n_penalized,
                          clip_norm, learning_rate, total_sum_squares, weights):
    """Project the parties' rows and the validation set on ``basis``; pack them."""
    n_outputs = T.shape[1]
    F_val_rows = project_rows(basis, X_val, n_outputs)
    return SubspaceProblem(
        project_rows(basis, X, n_outputs), _f64(T),
        np.ascontiguousarray(offsets, dtype=np.int64),
        _f64(np.transpose(F_val_rows, (1, 2, 0))), _f64(np.transpose(T_val)),
        np.ascontiguousarray(labels_val, dtype=np.int64), int(loss),
        int(utility), float(huber_epsilon), float(l2),
        penalty_matrix(basis, n_outputs, n_penalized), float(clip_norm),
        float(learning_rate), float(total_sum_squares), _f64(weights))


def sgd_pass(basis, X, T, *, loss, huber_epsilon, l2, n_penalized, clip_norm,
             learning_rate, order):
    """``theta = B^T z`` after one clipped SGD pass in ``z`` over the rows ``order``."""
    n_outputs = T.shape[1]
    z = np.zeros(basis.shape[0])
    _sgd_pass(project_rows(basis, X, n_outputs), _f64(T),
              np.arange(X.shape[0] + 1, dtype=np.int64), int(loss),
              float(huber_epsilon), float(l2),
              penalty_matrix(basis, n_outputs, n_penalized), float(clip_norm),
              float(learning_rate), z, np.ascontiguousarray(order, np.int64))
    return (z @ basis).reshape(n_outputs, -1)
