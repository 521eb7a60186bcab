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
  ``l2 * penalty @ z``;
- ``penalised_basis`` of shape ``(m, n_penalised)``: the basis restricted to
  the penalised parameters, so that the L1 term's subgradient in ``z`` is
  ``l1 * P @ sign(P^T z)`` (computed only when ``l1`` is not zero).

As in the full-space walk, the penalty terms are added to the loss gradient
before clipping (they depend on ``z`` alone, public within the walk), and
``row_weights`` (ones when unweighted) multiply each row's loss.

A permutation's walk starts from ``z = 0`` (``theta = 0``). The fit's set-up
walks too, through the same kernel and with no validation rows: its SGD
passes and the gradients at the start (:func:`set_up_problem`).
"""

import numpy as np
from numba import njit

from ..privacy._release import clip_l2, release_step
from . import _line
from ._losses import sample_dloss, utility_of_margins
from ._math import _jit, _scalar, one_row_each, prefetch

# The walk along a line prefetches what its walks read this many steps on,
# from this many parties (their data then outgrow the caches; below it the
# prefetches only cost: benchmarks/speed.py).
PREFETCH_STEPS = 1
PREFETCH_MIN_PARTIES = 2**15


@njit(**_scalar)
def _party_gradient(z, F, T, row_weights, start, stop, loss, loss_param, l2,
                    penalty, l1, penalised_basis, margin_buf, dloss_buf, out):
    """Gradient in ``z`` of the weighted mean loss of rows ``start:stop`` plus
    the penalty (see the module docstring)."""
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
        sample_dloss(loss, margin_buf, T[row], loss_param, dloss_buf)
        weight = row_weights[row]
        for i in range(m):
            total = 0.0
            for k in range(n_outputs):
                total += dloss_buf[k] * F[row, i, k]
            out[i] += weight * total
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
    if l1 != 0.0:
        for p in range(penalised_basis.shape[1]):
            theta_p = 0.0
            for i in range(m):
                theta_p += z[i] * penalised_basis[i, p]
            sign = l1 * np.sign(theta_p)
            for i in range(m):
                out[i] += sign * penalised_basis[i, p]


@njit(**_jit)
def _party_clipped_sum(z, F, T, row_weights, start, stop, loss, loss_param, l2,
                       penalty, l1, penalised_basis, clip_norm, margin_buf, dloss_buf,
                       record, out):
    """Sum over rows ``start:stop`` of each row's gradient in ``z`` (its
    weighted loss plus the penalty), each clipped to ``clip_norm``:
    record-level privacy."""
    m = z.shape[0]
    record_2d = record.reshape((1, m))  # a view, for clip_l2
    for i in range(m):
        out[i] = 0.0
    for row in range(start, stop):
        _party_gradient(z, F, T, row_weights, row, row + 1, loss, loss_param, l2,
                        penalty, l1, penalised_basis, margin_buf, dloss_buf, record)
        clip_l2(record_2d, clip_norm)
        for i in range(m):
            out[i] += record[i]


# Inlined by numba (each caller compiles it in place, no copy of its own).
@njit(inline="always", **_jit)
def _scalar_gradient(zg, F, T, row_weights, j, loss, loss_param, l2, penalty, l1,
                     penalised_basis, margin_buf, dloss_buf):
    """:func:`_party_gradient` of party ``j`` at ``z = (zg,)`` for one
    direction, one output and one row a party: its operations in scalars, in
    its order (its loops, run once each, cost a third of a step of the walk
    along a line)."""
    c = F[j, 0, 0]
    margin_buf[0] = zg * c
    sample_dloss(loss, margin_buf, T[j], loss_param, dloss_buf)
    gradient = row_weights[j] * (dloss_buf[0] * c)
    if l2 != 0.0:
        gradient += l2 * (penalty[0, 0] * zg)
    if l1 != 0.0:
        for p in range(penalised_basis.shape[1]):
            gradient += (l1 * np.sign(zg * penalised_basis[0, p])
                         * penalised_basis[0, p])
    return gradient


def scalar_flag(F, offsets, record_level=False):
    """The ``general`` argument of the walks: None when every party's step is
    :func:`_scalar_gradient`'s (one direction, one output, one row a party,
    sample level), which numba then compiles alone, without
    :func:`_party_gradient` (as :func:`level_flag`); else True (decided at
    run time)."""
    one_row = one_row_each(offsets)
    if F.shape[1] == 1 and F.shape[2] == 1 and one_row and not record_level:
        return None
    return True


@njit(**_jit)
def _one_row_a_party(offsets):
    """Whether party ``j`` holds row ``j`` alone (``offsets`` 0, 1, .., n)."""
    for j in range(offsets.shape[0]):
        if offsets[j] != j:
            return False
    return True


# Inlined by numba itself, not LLVM (``_scalar``): its two walks' callers then
# compile it in place, with no copy of its own optimised and emitted.
@njit(inline="always", **_jit)
def _releases(z, F, T, row_weights, offsets, one_row, loss, loss_param, l2,
              penalty, l1, penalised_basis, clip_norm, record_level, stream, b0,
              parties, use_rolling, x_tt, rolling_mean, margin_buf,
              dloss_buf, record, update, joint, exact, general):
    """``update[g]`` <- the combination of party ``parties[g]``'s releases that
    moves walk ``b0 + g`` from ``z[g]``, for each of the walks ``g``.

    The release: the party's clipped projected gradient (at record level, the
    sum of its records' clipped gradients) released from ``stream`` by the
    privacy layer (:func:`skdpval.privacy._release.release_step`: on the grid
    with its noise; at record level then divided by the party's size; with
    ``use_rolling`` combined, ``x_tt[b] * release + (1 - x_tt[b]) *`` the
    party's mean of its earlier releases). Both walks of this module step here.

    ``general`` None: every step is :func:`_scalar_gradient`'s
    (:func:`scalar_flag`), and the general path is compiled out.

    With ``joint`` (True, or None: compiled out, see :func:`joint_flag`),
    ``exact[g]`` <- the party's step before its noise: its clipped statistic
    (at record level over its size), what the joint threat model reads its
    own marginal from.

    Stage by stage over the walks (gradients, clipping, releases): a
    release is a chain of dependent operations (an exp, a square root, two
    divisions), and the walks' chains overlap in the processor.
    """
    n_walks, m = z.shape
    # ``record_level`` is None at sample level: numba then compiles this
    # without the record-level path (see :func:`level_flag`).
    if record_level is not None:
        for g in range(n_walks):
            j = parties[g]
            _party_clipped_sum(z[g], F, T, row_weights, offsets[j], offsets[j + 1],
                               loss, loss_param, l2, penalty, l1, penalised_basis,
                               clip_norm, margin_buf, dloss_buf, record, update[g])
    else:
        # One direction, one output, one row a party (``one_row``: offsets 0,
        # 1, .., n): :func:`_scalar_gradient`. (One test of ``general`` on
        # None, which numba resolves when it compiles: one call site each.)
        if general is not None and not (m == 1 and F.shape[2] == 1 and one_row):
            for g in range(n_walks):
                j = parties[g]
                _party_gradient(z[g], F, T, row_weights, offsets[j], offsets[j + 1],
                                loss, loss_param, l2, penalty, l1, penalised_basis,
                                margin_buf, dloss_buf, update[g])
        else:
            for g in range(n_walks):
                update[g, 0] = _scalar_gradient(
                    z[g, 0], F, T, row_weights, parties[g], loss, loss_param, l2,
                    penalty, l1, penalised_basis, margin_buf, dloss_buf)
        for g in range(n_walks):
            clip_l2(update[g:g + 1], clip_norm)
    if joint is not None:
        for g in range(n_walks):
            j = parties[g]
            inverse = (1.0 / (offsets[j + 1] - offsets[j]) if record_level is not None
                       else 1.0)
            for i in range(m):
                exact[g, i] = update[g, i] * inverse
    for g in range(n_walks):
        b, j = b0 + g, parties[g]
        release_step(update[g], stream, b, j, record_level is not None,
                     offsets[j + 1] - offsets[j] if record_level is not None else 1,
                     use_rolling, x_tt[b] if use_rolling else 1.0, rolling_mean)


@njit(**_scalar)
def walk_start(ends, starts, b):
    """Sets ``ends[b]``, where walk ``b`` keeps its ``z``, to its start
    ``starts[b % len(starts)]`` (no array is returned: the kernels run
    without reference counting)."""
    row = b % starts.shape[0]
    for i in range(ends.shape[1]):
        ends[b, i] = starts[row, i]


@njit(**_scalar)
def margins_at(z, F_val, margins):
    """``margins[k, v]`` <- the margin of output ``k`` of validation row ``v`` at ``z``."""
    m, n_outputs, n_rows = F_val.shape
    for k in range(n_outputs):
        for v in range(n_rows):
            margins[k, v] = 0.0
        for i in range(m):
            column = F_val[i, k]
            for v in range(n_rows):
                margins[k, v] += z[i] * column[v]


@njit(**_jit)
def _utilities(starts, F_val, T_val_t, labels_val, loss, utility, loss_param,
               total_sum_squares, margins, scratch, out):
    """``out[b]`` <- the validation utility at ``z = starts[b]``: what a walk
    of no steps scores, without compiling the walk (a default fit walks along
    its line and then needs only this of the validation rows)."""
    for b in range(starts.shape[0]):
        margins_at(starts[b], F_val, margins)
        out[b] = utility_of_margins(utility, loss, margins, T_val_t, labels_val,
                                    loss_param, total_sum_squares, scratch)


@njit(**_jit)
def _walk(F, T, row_weights, offsets, F_val, T_val_t, labels_val, loss, utility,
          loss_param, l2, penalty, l1, penalised_basis, clip_norm, learning_rate,
          total_sum_squares, starts, permutations, stream, x_tt, use_rolling,
          rolling_mean, weights, record_level, marginals, end_utility, ends,
          update, record, margin_buf, dloss_buf, margins, scratch):
    """Walk ``b`` starts from ``z = starts[b % len(starts)]``, steps through the
    parties ``permutations[b]`` and leaves its parameters in ``ends[b]``.
    ``record_level`` as in :func:`skdpval.kernels._linear._walk`. Buffers come from
    the caller."""
    m, n_outputs, n_rows = F_val.shape
    n_walks, n_steps = permutations.shape
    one_row = _one_row_a_party(offsets)

    for b in range(n_walks):
        walk_start(ends, starts, b)
        z = ends[b]
        margins_at(z, F_val, margins)
        previous = utility_of_margins(utility, loss, margins, T_val_t,
                                      labels_val, loss_param,
                                      total_sum_squares, scratch)
        for position in range(n_steps):
            j = permutations[b, position]
            _releases(ends[b:b + 1], F, T, row_weights, offsets, one_row, loss,
                      loss_param,
                      l2, penalty, l1, penalised_basis, clip_norm, record_level,
                      stream, b, permutations[b, position:position + 1],
                      use_rolling, x_tt, rolling_mean, margin_buf, dloss_buf, record,
                      update, None, update, True)
            for i in range(m):
                step = learning_rate * update[0, i]
                z[i] -= step
                for k in range(n_outputs):
                    row = margins[k]
                    column = F_val[i, k]
                    for v in range(n_rows):
                        row[v] -= step * column[v]
            current = utility_of_margins(utility, loss, margins, T_val_t,
                                         labels_val, loss_param,
                                         total_sum_squares, scratch)
            marginals[b, j] = weights[position] * (current - previous)
            previous = current
        end_utility[b] = previous


@njit(**_jit)
def _line_walk(F, T, row_weights, offsets, loss, loss_param, l2, penalty, l1,
               penalised_basis, clip_norm, learning_rate, kind, lo, inv_h, table,
               quad, s_val, permutations,
               stream, x_tt, use_rolling, rolling_mean, weights, record_level,
               marginals, end_utility, ends, update, record, margin_buf,
               dloss_buf, joint, exact, general, prefetching):
    """:func:`_walk` for one direction and one output from ``z = 0``, with the
    utility read along the line (:mod:`skdpval.kernels._line`): the same releases and
    steps, O(1) a step in the validation set's size.

    The walks advance together, one step of each in turn: a walk's step
    waits on its previous one (a chain of an exp, a square root and two
    divisions), while the steps of different walks overlap in the processor.
    Each walk's arithmetic is that of a walk on its own. ``end_utility[b]``
    holds walk ``b``'s current utility.

    With ``joint`` (True; None compiles it out, :func:`joint_flag`) the walks
    move with the releases as without it, but a party's marginal is read
    from its own step before the noise: ``U(z + step) - U(z)``, ``z`` the
    walk's state before the step (a function of the other releases) and
    ``step`` ``-learning_rate`` times its clipped statistic (``exact``).

    ``kind`` is the line's (:mod:`skdpval.kernels._line`), None for its binary
    logistic table (then compiled alone, :func:`skdpval.kernels._line.kind_flag`);
    ``general`` as in :func:`_releases`. ``prefetching``: True past
    ``PREFETCH_MIN_PARTIES`` parties, else None (compiled out,
    :func:`prefetch_flag`).
    """
    n_walks, n_steps = permutations.shape
    # The stream's slots are prefetched (a cache hint: only the release step
    # reads them).
    slots = stream[0]
    has_noise = slots.shape[0] == n_walks
    start = _line.line_value(kind, lo, inv_h, table, quad, s_val, 0.0, loss,
                             loss_param)
    for b in range(n_walks):
        ends[b, 0] = 0.0
        end_utility[b] = start
    # One row a party is known when ``general`` is None (:func:`scalar_flag`).
    one_row = True if general is None else _one_row_a_party(offsets)
    for position in range(n_steps):
        if prefetching is not None and position + PREFETCH_STEPS < n_steps:
            # What the walks read a few steps on, at random parties: with
            # 100,000 parties a step waited on memory most of its time.
            ahead = position + PREFETCH_STEPS
            for b in range(n_walks):
                j = np.int64(permutations[b, ahead])
                if one_row:
                    prefetch(F, (j, 0, 0))
                    prefetch(T, (j, 0))
                    prefetch(row_weights, (j,))
                else:
                    prefetch(offsets, (j,))
                if has_noise:
                    prefetch(slots, (b, j, 0))
                if use_rolling:
                    prefetch(rolling_mean, (j, 0))
                prefetch(marginals, (b, j))
        _releases(ends, F, T, row_weights, offsets, one_row, loss, loss_param, l2,
                  penalty,
                  l1, penalised_basis, clip_norm, record_level, stream, 0,
                  permutations[:, position], use_rolling, x_tt,
                  rolling_mean, margin_buf, dloss_buf, record, update,
                  joint, exact, general)
        weight = weights[position]
        for b in range(n_walks):
            z_old = ends[b, 0]
            ends[b, 0] -= learning_rate * update[b, 0]
            if joint is not None:
                # The party's own step from the state, not its release's.
                z_own = z_old - learning_rate * exact[b, 0]
                change, _ = _line.line_change(
                    kind, lo, inv_h, table, quad, s_val, z_old, z_own,
                    end_utility[b], loss, loss_param)
                end_utility[b] = _line.line_value(kind, lo, inv_h, table, quad,
                                                  s_val, ends[b, 0], loss,
                                                  loss_param)
            else:
                change, end_utility[b] = _line.line_change(
                    kind, lo, inv_h, table, quad, s_val, z_old, ends[b, 0],
                    end_utility[b], loss, loss_param)
            marginals[b, permutations[b, position]] = weight * change


# --- the kernels' compile-time flags ----------------------------------------------


def prefetch_flag(offsets):
    """The line walk's ``prefetching`` argument: True past
    ``PREFETCH_MIN_PARTIES`` parties, else None, which numba compiles
    without the prefetches."""
    return True if offsets.shape[0] > PREFETCH_MIN_PARTIES else None



def joint_flag(joint):
    """The line walk's ``joint`` argument: True, or None under the central
    threat model, which numba then compiles without the joint path (as
    :func:`level_flag`): the central walk's speed and values are untouched."""
    return True if joint else None
