"""The subspace walk's problem: the parties' rows projected on a public basis,
packed for the kernels of :mod:`skdpval.kernels._subspace`, and the fit's
set-up walks on those kernels (its SGD passes, its gradients, its
utilities).
"""

from collections import namedtuple

import numpy as np

from ..privacy._release import release_stream, walk_stream
from . import _line
from ._linear import PartiesByOffsets
from ._losses import NEG_LOSS, kernel_codes, loss_argument, losses_and_gradients
from ._math import (_f64, one_row_each, pad_columns, padded_length, unit_weights,
                    validation_scratch)
from ._math import level_flag
from ._subspace import (_line_walk, _utilities, _walk, joint_flag,
                        prefetch_flag, scalar_flag)


def project_rows(basis, X, n_outputs):
    """``F[r, i, k] = <basis_i[k, :], X[r]>``: ``(n_rows, m, n_outputs)``.

    Rows of a Dask collection (:class:`skdpval.walks._dask.DaskRows`) are
    projected on their blocks, by this function, and gathered.
    """
    if hasattr(X, "project_on"):
        return X.project_on(basis, n_outputs)
    per_output = np.reshape(basis, (basis.shape[0], n_outputs, -1))
    return _f64(np.einsum("ikc,rc->rik", per_output, X))


def _validation_layout(F_rows):
    """``(m, n_outputs, padded n_val)``: validation rows last, zero-padded."""
    n_val, m, n_outputs = F_rows.shape
    out = np.zeros((m, n_outputs, padded_length(n_val)))
    out[:, :, :n_val] = np.transpose(F_rows, (1, 2, 0))
    return out


def penalised_basis(basis, n_outputs, n_penalized):
    """The basis on the penalised parameters only: ``(m, n_outputs * n_penalized)``."""
    per_output = np.reshape(basis, (basis.shape[0], n_outputs, -1))
    return _f64(per_output[:, :, :n_penalized].reshape(basis.shape[0], -1))


def penalty_matrix(basis, n_outputs, n_penalized):
    """``B D B^T``: the L2 term in ``z``, ``D`` masking the penalised parameters."""
    penalised = penalised_basis(basis, n_outputs, n_penalized)
    return _f64(penalised @ penalised.T)


def _run_walk(F, T, offsets, F_val, T_val_t, labels_val, *, loss, utility,
              loss_param, l2, penalty, clip_norm, learning_rate,
              total_sum_squares, permutations, weights, starts=None, stream=None,
              x_tt=None, rolling_mean=None, record_level=False, l1=0.0,
              l1_basis=None, row_weights=None):
    """Call the subspace walk with its buffers; return (marginals, end_utility, ends).

    The fit's utilities run :func:`_utilities` instead: a default fit walks
    along a line (:func:`_line_walk`) and then never compiles this walk.
    """
    n_walks = permutations.shape[0]
    m, n_outputs = F_val.shape[:2]
    use_rolling = rolling_mean is not None
    stream = walk_stream(stream, use_rolling)
    marginals = np.empty((n_walks, offsets.shape[0] - 1))
    end_utility = np.empty(n_walks)
    ends = np.empty((n_walks, m))
    if l1_basis is None:
        if l1 != 0.0:
            raise ValueError("an L1 term needs the penalised basis")
        l1_basis = np.zeros((m, 0))
    call = (F, T, unit_weights(len(F)) if row_weights is None else _f64(row_weights),
            offsets, F_val, T_val_t, labels_val,
            *kernel_codes(loss, utility, n_outputs), loss_param, l2, penalty,
            float(l1), _f64(l1_basis), clip_norm, learning_rate, total_sum_squares,
            np.zeros((1, m)) if starts is None else _f64(starts),
            np.ascontiguousarray(permutations, np.int64), stream,
            np.ones(n_walks) if x_tt is None else _f64(x_tt), use_rolling,
            np.empty((1, 1)) if rolling_mean is None else _f64(rolling_mean),
            weights, level_flag(record_level), marginals, end_utility, ends,
            np.empty((1, m)), np.empty(m), np.empty(n_outputs),
            np.empty(n_outputs), np.empty((n_outputs, F_val.shape[2])),
            validation_scratch(len(labels_val)))
    _walk(*call)
    return marginals, end_utility, ends


def _run_line_walk(p, permutations, stream, x_tt, rolling_mean, prefetching=False):
    """:func:`_line_walk` with its buffers; returns (marginals, end_utility,
    ends). ``prefetching``: :func:`prefetch_flag` of the problem's parties,
    or as given."""
    n_walks = permutations.shape[0]
    line = p.line
    stream = walk_stream(stream, rolling_mean is not None)
    marginals = np.empty((n_walks, p.n_parties))
    end_utility = np.empty(n_walks)
    ends = np.empty((n_walks, 1))
    _line_walk(p.F, p.T, p.row_weights, p.offsets,
               kernel_codes(p.loss, p.utility, p.F.shape[2])[0], p.loss_param, p.l2,
               p.penalty,
               p.l1, p.l1_basis, p.clip_norm, p.learning_rate,
               _line.kind_flag(line.kind), line.lo, line.inv_h, line.table,
               line.quad, line.s_val,
               np.ascontiguousarray(permutations, np.int32 if
                                    permutations.dtype == np.int32 else np.int64),
               stream, np.ones(n_walks) if x_tt is None else _f64(x_tt),
               rolling_mean is not None,
               np.empty((1, 1)) if rolling_mean is None else _f64(rolling_mean),
               p.weights, level_flag(p.record_level), marginals, end_utility,
               ends, np.empty((n_walks, 1)), np.empty(1),
               np.empty(p.F.shape[2]), np.empty(p.F.shape[2]), joint_flag(p.joint),
               np.empty((n_walks, 1) if p.joint else (1, 1)), p.general,
               prefetch_flag(p.offsets) if prefetching is False else prefetching)
    return marginals, end_utility, ends


# A step along a tabulated line, in the multiply-adds of
# ``skdpval.walks._runner.MIN_PARALLEL_WORK``: it reads no validation row, so the rows must
# not count. Measured (k = 256, 142 validation rows, threads forced): two
# threads ran 1.06x one at 300 parties, 1.17x at 600, 1.40x at 1200, 1.55x
# at 2400; and 0.99x at 300 parties with 2,000 validation rows, which
# counting the rows had sent to two threads.
LINE_STEP_WORK = 500


class SubspaceProblem(PartiesByOffsets, namedtuple("SubspaceProblem", [
        "F", "T", "offsets", "F_val", "T_val_t", "labels_val", "loss", "utility",
        "loss_param", "l2", "penalty", "clip_norm", "learning_rate",
        "total_sum_squares", "weights", "l1", "l1_basis", "row_weights",
        "record_level", "line", "joint", "general"], defaults=(False, True))):
    """The walk's inputs in a subspace, contiguous (see the module docstring).

    ``line`` is the validation utility along the line
    (:mod:`skdpval.kernels._line`) when the subspace is one direction and the model
    has one output with a loss and utility it tabulates, else None: the walk
    then reads the utility there, O(1) a step, instead of from the rows.
    ``joint``: each party's marginal from its own step before the noise
    (the joint threat model, :func:`_line_walk`); only along a line.
    ``general``: :func:`scalar_flag`.
    """

    __slots__ = ()

    @property
    def release_shape(self):
        return (self.F_val.shape[0],)

    @property
    def work_per_permutation(self):
        """Multiply-adds of a permutation's walk, about: margins and loss
        (along a tabulated line, a step's cost whatever the rows)."""
        if self.line is not None:
            return self.n_parties * LINE_STEP_WORK
        m, n_outputs, n_rows = self.F_val.shape
        return self.n_parties * (m + 1) * n_outputs * n_rows

    @property
    def reads_int32_orders(self):
        """Whether its walk takes orders as int32 as they are (along a line)."""
        return self.line is not None

    def __reduce__(self):
        # Sent to workers (Dask, loky) in its compact form (:func:`packed`).
        return _unpacked_problem, (packed(self),)

    def walk(self, permutations, stream, x_tt, rolling_mean):
        """Run the walk along each permutation; see :func:`skdpval.kernels._linear.walk`."""
        if self.line is not None:
            return _run_line_walk(self, permutations, stream, x_tt,
                                  rolling_mean)[:2]
        marginals, end_utility, _ = _run_walk(
            self.F, self.T, self.offsets, self.F_val, self.T_val_t,
            self.labels_val, loss=self.loss, utility=self.utility,
            loss_param=self.loss_param, l2=self.l2, penalty=self.penalty,
            clip_norm=self.clip_norm, learning_rate=self.learning_rate,
            total_sum_squares=self.total_sum_squares, permutations=permutations,
            weights=self.weights, stream=stream, x_tt=x_tt, rolling_mean=rolling_mean,
            l1=self.l1, l1_basis=self.l1_basis, row_weights=self.row_weights,
            record_level=self.record_level)
        return marginals, end_utility


# --- the problem as it travels to workers ------------------------------------------
#
# A worker with little memory walks millions of parties: each per-party array
# of doubles counts there. Pickled, the problem sends only what its values
# need; unpickled, what the kernels read as arrays is rebuilt without
# copies: targets of small integers (+-1: binary classification) as int8,
# which the kernels read as the same doubles; constant weights (Shapley's
# ones, unweighted rows) as one number viewed n times (stride 0); and the
# offsets of one row a party, which the scalar line walk never reads
# (``general`` None, sample level), as a stand-in of their length (stride 0,
# zeros). The walk's arithmetic is unchanged: the same values, bit for bit.
# Packed again as they came (a worker passes the problem on to the others).

_FILLED, _INT8, _UNREAD = "filled", "int8", "unread"


class _Packed(namedtuple("_Packed", ["kind", "payload", "length"])):
    """A packed per-party array (see the comment above)."""

    __slots__ = ()


# Compared in blocks of this many numbers: the client holds no full-size
# temporary.
_PACK_BLOCK = 2**16


def _same_bits(array, make):
    """Whether ``make(block)`` has the bits of each block of ``array``
    (float64, flattened)."""
    flat = array.reshape(-1)
    for lo in range(0, flat.shape[0], _PACK_BLOCK):
        block = flat[lo:lo + _PACK_BLOCK]
        if not np.array_equal(block.view(np.int64),
                              np.asarray(make(block), np.float64).view(np.int64)):
            return False
    return True


def _pack_array(array, offsets_unread=False):
    """``array`` or a small description of it (see the comment above)."""
    if not isinstance(array, np.ndarray) or array.size < 2:
        return array
    if offsets_unread:
        return _Packed(_UNREAD, None, array.shape[0])
    if array.ndim == 1 and array.strides == (0,):  # unpacked already
        return _Packed(_FILLED, array[:1].copy(), array.shape[0])
    if array.dtype != np.float64 or not array.flags.c_contiguous:
        return array
    if array.ndim == 1:
        first = array[0]
        if _same_bits(array, lambda block: np.full(block.shape, first)):
            return _Packed(_FILLED, array[:1].copy(), array.shape[0])
    if _same_bits(array, lambda block: block.astype(np.int8)):
        return _Packed(_INT8, array.astype(np.int8), array.shape[0])
    return array


def _unpack_array(packed):
    if not isinstance(packed, _Packed):
        return packed
    if packed.kind == _FILLED:
        return np.broadcast_to(packed.payload[0], (packed.length,))
    if packed.kind == _INT8:
        return packed.payload
    return np.broadcast_to(np.int64(0), (packed.length,))  # _UNREAD


def packed(problem):
    """The fields of a :class:`SubspaceProblem` to pickle: its per-party
    arrays packed (see the comment above)."""
    offsets_unread = (problem.line is not None and problem.general is None
                      and not problem.record_level
                      and one_row_each(problem.offsets))
    fields = problem._asdict()
    for name in ("T", "weights", "row_weights"):
        fields[name] = _pack_array(fields[name])
    fields["offsets"] = _pack_array(fields["offsets"], offsets_unread)
    return tuple(fields.values())


def _unpacked_problem(fields):
    return SubspaceProblem(*(_unpack_array(field) for field in fields))


def make_subspace_problem(basis, X, T, offsets, X_val, T_val, labels_val, *,
                          loss, utility, loss_param, l2, n_penalized,
                          clip_norm, learning_rate, total_sum_squares, weights,
                          l1=0.0, row_weights=None, record_level=False,
                          line_range=None, line_intervals=_line.LINE_MAX_INTERVALS,
                          exact_utility=False, joint=False):
    """Project the parties' rows and the validation set on ``basis``; pack them.

    For one direction, the utility along the line is tabulated over
    ``line_range`` (default: ``|z|`` up to the noiseless bound ``lr n C``) in
    at most ``line_intervals`` steps (:mod:`skdpval.kernels._line`).
    ``exact_utility=True`` keeps the exact walk (the utility from the
    validation rows at every step) where the line's table would apply.
    ``joint=True`` reads each party's marginal from its own noiseless step
    (:func:`_line_walk`): it needs the line's table, and raises without it.
    """
    n_outputs = T.shape[1]
    F_val = project_rows(basis, X_val, n_outputs)
    line = None
    if basis.shape[0] == 1 and not exact_utility:
        if line_range is None:
            reach = float(learning_rate) * (len(offsets) - 1) * float(clip_norm)
            line_range = (-reach, reach)
        line = _line.line_utility(F_val[:, 0, :], np.asarray(T_val), loss, utility,
                                  total_sum_squares, line_range, line_intervals,
                                  loss_param)
    if joint and line is None:
        raise ValueError(
            "threat_model='joint' reads each party's marginal along a tabulated "
            "public line: it needs subspace='public' with one output and a "
            "utility the line tabulates (utility='neg_loss' with the model's "
            "own loss, or 'neg_mse' / 'r2' for a regressor), not this model and "
            "utility. Use threat_model='central'.")
    F, offsets = project_rows(basis, X, n_outputs), np.ascontiguousarray(offsets,
                                                                         np.int64)
    return SubspaceProblem(
        F, _f64(T), offsets,
        _validation_layout(F_val), pad_columns(T_val),
        np.ascontiguousarray(labels_val, dtype=np.int64), loss_argument(loss),
        int(utility), float(loss_param), float(l2),
        penalty_matrix(basis, n_outputs, n_penalized), float(clip_norm),
        float(learning_rate), float(total_sum_squares), _f64(weights), float(l1),
        penalised_basis(basis, n_outputs, n_penalized),
        unit_weights(len(X)) if row_weights is None else _f64(row_weights),
        bool(record_level), line, bool(joint), scalar_flag(F, offsets, record_level))


def _no_validation(m, n_outputs):
    """The validation arguments of a walk that scores nothing."""
    return (np.zeros((m, n_outputs, 0)), np.zeros((n_outputs, 0)),
            np.empty(0, dtype=np.int64))


# --- the fit's set-up: walks with no validation rows --------------------------------


def set_up_problem(basis, X, T, offsets, *, loss, loss_param, l2, n_penalized,
                   clip_norm, learning_rate, l1=0.0, row_weights=None, walk=None):
    """A walk's problem on the rows of ``X`` (parties ``offsets``) with no
    validation rows, and its ``prefetching`` flag: for the fit's set-up, whose
    walks then run on the kernel the fit walks with (compiled once).

    ``walk`` describes the fit's walk, as a dict of ``utility``, ``offsets``
    (its parties), ``record_level`` and ``joint`` (default: the binary
    ``neg_loss``, sample level, central, these parties). The problem takes its
    compile-time flags (:mod:`skdpval.kernels._line`'s kind, :func:`scalar_flag`,
    :func:`level_flag`, :func:`joint_flag`, :func:`prefetch_flag`) where they
    walk these parties the same (record level and the scalar step, bit for
    bit, for parties of one row). Along a line its table is a stand-in (the
    utilities it reads are not used).
    """
    walk = {} if walk is None else walk
    n_outputs, m = T.shape[1], basis.shape[0]
    F = project_rows(basis, X, n_outputs)
    offsets = np.ascontiguousarray(offsets, np.int64)
    one_row = one_row_each(offsets)
    walk_offsets = walk.get("offsets", offsets)
    record_level = bool(walk.get("record_level", False)) and one_row
    general = True
    if one_row and scalar_flag(F, walk_offsets,
                               walk.get("record_level", False)) is None:
        general = None
    utility = walk.get("utility", NEG_LOSS)
    kind = _line.table_kind(loss, utility, n_outputs) if m == 1 else None
    line = None if kind is None else _line.LineUtility(
        kind, 0.0, 0.0, np.zeros((1, 6)), np.zeros(3), np.zeros((0, 1)))
    problem = SubspaceProblem(
        F, _f64(T), offsets, *_no_validation(m, n_outputs), loss_argument(loss),
        int(utility),
        float(loss_param), float(l2), penalty_matrix(basis, n_outputs, n_penalized),
        float(clip_norm), float(learning_rate), 1.0, np.zeros(0), float(l1),
        penalised_basis(basis, n_outputs, n_penalized),
        unit_weights(len(X)) if row_weights is None else _f64(row_weights),
        record_level, line, bool(walk.get("joint", False)) and line is not None,
        general)
    return problem, prefetch_flag(walk_offsets)


def _walk_set_up(problem, prefetching, permutations, starts=None, readback=False):
    """The noiseless walks of a :func:`set_up_problem` through ``permutations``
    from ``starts`` (default: ``z = 0``; along a line, only that): where they
    end, ``(n_walks, m)``, and with ``readback`` each party's release in each
    walk, ``(n_walks, n_parties, m)`` (written back into a noiseless
    stream as a rolling mean's raw releases: the gradients of public rows)."""
    n_walks, m = len(permutations), problem.F.shape[1]
    p = problem._replace(weights=np.zeros(permutations.shape[1]))
    noise = stream = rolling_mean = None
    if readback:
        noise = np.zeros((n_walks, p.n_parties, m))
        stream, rolling_mean = release_stream(noise), np.zeros((p.n_parties, m))
    if p.line is not None and starts is None:
        # int64 orders, as a fit's (int32 only on Dask workers)
        _, _, ends = _run_line_walk(
            p, np.ascontiguousarray(permutations, np.int64), stream, None,
            rolling_mean, prefetching)
    else:
        _, _, ends = _run_walk(
            p.F, p.T, p.offsets, p.F_val, p.T_val_t, p.labels_val, loss=p.loss,
            utility=p.utility, loss_param=p.loss_param, l2=p.l2, penalty=p.penalty,
            clip_norm=p.clip_norm, learning_rate=p.learning_rate,
            total_sum_squares=1.0, permutations=permutations, weights=p.weights,
            starts=starts, stream=stream, rolling_mean=rolling_mean,
            record_level=p.record_level, l1=p.l1, l1_basis=p.l1_basis,
            row_weights=p.row_weights)
    return ends, noise


def sgd_pass(basis, X, T, *, loss, loss_param, l2, n_penalized, clip_norm,
             learning_rate, order, l1=0.0, row_weights=None, walk=None):
    """``theta = B^T z`` after one clipped SGD pass in ``z`` over the rows ``order``.

    A noiseless walk from ``z = 0`` through the parties ``order`` (one row
    each, repeats allowed) with no validation rows, on the kernel of the
    fit's walk (``walk``: :func:`set_up_problem`).
    """
    problem, prefetching = set_up_problem(
        basis, X, T, np.arange(X.shape[0] + 1), loss=loss, loss_param=loss_param,
        l2=l2, n_penalized=n_penalized, clip_norm=clip_norm,
        learning_rate=learning_rate, l1=l1, row_weights=row_weights, walk=walk)
    ends, _ = _walk_set_up(problem, prefetching, np.asarray(order)[None])
    return (ends[0] @ basis).reshape(T.shape[1], -1)


def utilities_of_thetas(basis, thetas, X_val, T_val, labels_val, *, loss,
                        utility, loss_param, total_sum_squares):
    """Utility of each ``thetas[i]`` (in the subspace) on the validation rows,
    at ``z = B theta``."""
    n_outputs = T_val.shape[1]
    starts = np.reshape(thetas, (len(thetas), -1)) @ basis.T
    F_val = _validation_layout(project_rows(basis, X_val, n_outputs))
    utilities = np.empty(len(starts))
    _utilities(_f64(starts), F_val, pad_columns(T_val),
               np.ascontiguousarray(labels_val, np.int64),
               *kernel_codes(loss, utility, n_outputs), float(loss_param),
               float(total_sum_squares), np.empty((n_outputs, F_val.shape[2])),
               validation_scratch(len(labels_val)), utilities)
    return utilities


def party_gradients(basis, theta, X, T, offsets, *, loss, loss_param, l2,
                    n_penalized, l1=0.0, row_weights=None, walk=None):
    """Gradient in ``z`` of every party at ``theta = B^T z``: ``(n_parties, m)``.

    Each party's release in a noiseless walk through all of them at rate 0
    (so that it stays at ``z``) with an infinite clip norm, on the kernel of
    the fit's walk (``walk``: :func:`set_up_problem`).
    """
    z = basis @ np.ravel(theta)
    problem, prefetching = set_up_problem(
        basis, X, T, offsets, loss=loss, loss_param=loss_param, l2=l2,
        n_penalized=n_penalized, clip_norm=np.inf, learning_rate=0.0, l1=l1,
        row_weights=row_weights, walk=walk)
    _, releases = _walk_set_up(problem, prefetching,
                               np.arange(len(offsets) - 1)[None],
                               None if not np.any(z) else z[None], readback=True)
    return releases[0]


def mean_loss_and_gradient(basis, X, T, *, loss, loss_param, l2, n_penalized,
                           l1=0.0, row_weights=None):
    """``f(z) -> (mean weighted loss + penalty, its (sub)gradient in z)`` over all rows of X.

    For minimisers (the public direction's fit). ``theta = z @ basis``
    (``basis`` None: ``z`` is ``theta``), laid out ``(n_outputs,
    n_columns)``; computed in the parameters, ``O(n_rows n_columns
    n_outputs)`` a call, and carried to ``z`` by the chain rule (an identity
    basis of ``n_params`` directions would cost ``n_params`` times more,
    and ``n_params^2`` memory for its penalty).
    """
    X, T = _f64(X), _f64(T)
    n_outputs = T.shape[1]
    row_weights = unit_weights(len(X)) if row_weights is None else _f64(row_weights)
    penalised = np.zeros((n_outputs, X.shape[1]))
    penalised[:, :n_penalized] = 1.0
    margins, dloss = np.empty((len(X), n_outputs)), np.empty((len(X), n_outputs))

    code = kernel_codes(loss, 0, n_outputs)[0]

    def objective(z):
        z = _f64(z)
        theta = (z if basis is None else z @ basis).reshape(n_outputs, -1)
        np.dot(X, theta.T, out=margins)
        mean_loss = losses_and_gradients(code, margins, T, row_weights,
                                         float(loss_param), dloss)
        masked = theta * penalised
        value = (mean_loss + 0.5 * l2 * np.sum(masked * masked)
                 + l1 * np.sum(np.abs(masked)))
        gradient = (dloss.T @ X + l2 * masked + l1 * np.sign(masked)).ravel()
        return value, gradient if basis is None else basis @ gradient

    return objective
