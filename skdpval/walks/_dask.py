"""Dask collections as input: the rows are read where their chunks live.

A valuator given ``X`` (or ``y``, ``sample_weight``) as a Dask array or data
frame never holds ``X``. What reads rows runs on the chunks, one task a
block of rows: the checks of the input domain (NaN, infinity, values that
are not numbers), the public standardisation and, for
:class:`~skdpval.DPDataValuator`, each row projected on the public line
(``m`` numbers a row, :func:`skdpval.kernels._subspace_problem.project_rows`), for
:class:`~skdpval.DPLabelQuality` each row's clipped score, and each step of
the private fit of the public model (``public_model="private"`` or
``"auto"``, :func:`skdpval.valuation._public_model.noisy_gradient_descent`): a block's
exact sum of its rows' clipped gradients (:meth:`DaskRows.sum_blocks`, 20
passes over the rows). The client then holds one number a party (or
``m``), ``y`` and ``sample_weight``; the walk runs on those. Every row is
computed by the very functions of the in-memory path, row by row, and the
fit's sums are integers (fixed point), added in any order to the same
total, so the values equal the numpy path's bit for bit for the same
``random_state`` and ``noise_seed``, however the rows are chunked (the
label score's model is applied to aligned blocks of ``SCORE_BLOCK_ROWS``
rows in both paths: a BLAS call may round a row differently in blocks of
another size). ``public_model="auto"`` decides from the same public
quantities as in memory.

The noise key is made in the client (fresh OS entropy, or ``noise_seed``).
The label score's noise and the private fit's are drawn there (the workers
send the fit's block sums, the client adds them, draws the step's noise and
takes the step); the walk's noise is drawn where its
waves run: with a distributed Client, on its workers, which then hold the
key (as with ``joblib.parallel_config(backend="dask")``) and must be as
trusted as the client. The key goes from the client straight to each
worker, never through the scheduler (:func:`skdpval.walks._cluster._scatter`).

Not supported on Dask input (a clear error before any work): ``groups``
(a group's rows are summed in an order read from their content; the
private fit would also need a group's rows, which may span blocks, summed
before its gradient is clipped: parties are single rows here),
``subspace=None`` (the full-space walk reads whole rows at every step), a
network's walk, a Pipeline's transformers, and no ``X_val`` (the held-out
rows would have to come from ``X``).

Dask is imported only when an input is a Dask collection (checked by the
module of its type); ``pip install "skdpval[dask]"`` installs it.
"""

from concurrent.futures import CancelledError

import numpy as np
from sklearn.utils.validation import (
    _assert_all_finite,
    _check_feature_names,
    _check_y,
    check_array,
    check_consistent_length,
)

from ..families._parties import (Parties, _first_line_without_value, _standardized,
    call_on_private_data, check_public_targets, check_validation_features,
    flush_subnormals, standardize_by_validation, standardize_targets)
from ._cluster import LOST_WORKER_RETRIES, _scatter_directly

# The label score's model scores rows in blocks of this many, aligned at
# row 0, on Dask and in memory alike (see the module docstring).
SCORE_BLOCK_ROWS = 4096


def is_dask_collection(obj):
    """Whether ``obj`` is a Dask collection, without importing dask."""
    module = type(obj).__module__.split(".", 1)[0]
    return module in ("dask", "dask_expr") and hasattr(obj, "__dask_graph__")


def any_dask(*inputs):
    return any(is_dask_collection(obj) for obj in inputs)


def _float_rows(block):
    """A block of rows as ``validate_data`` leaves them: float64, C order,
    subnormals flushed."""
    return flush_subnormals(np.ascontiguousarray(np.asarray(block, dtype=np.float64)))


def _block_report(block):
    """``(n_rows, has_nan, has_inf, error)`` of a block of rows: ``error`` is
    ``(kind, message without values)`` when its conversion to floats fails."""
    try:
        X = np.asarray(block, dtype=np.float64)
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        return len(block), False, False, (kind, _first_line_without_value(error))
    return len(X), bool(np.isnan(X).any()), bool(np.isinf(X).any()), None


def _apply_steps(X, steps):
    for function, args in steps:
        X = function(X, *args)
    return X


def _with_column(X, value):
    return np.hstack([X, np.full((len(X), 1), value)])


def _project_block(X, steps, basis, n_outputs):
    from ..kernels._subspace_problem import project_rows

    return project_rows(basis, _apply_steps(X, steps), n_outputs)


def _map_block(X, steps, function, *row_args):
    return function(_apply_steps(X, steps), *row_args)


def _sum_block(X, steps, function, row_args, args):
    return function(_apply_steps(X, steps), *row_args, *args)


class DaskRows:
    """The training rows of a Dask collection, transformed lazily block by block.

    ``array`` is a Dask array of the rows as floats (checked), ``steps`` the
    transformations applied to each block, ``(function, args)``. Stands in
    for the rows' array in :class:`~skdpval.families._parties.Parties`: it has the
    array's ``shape`` and ``len``; the steps of a fit that read rows ask it
    for their per-row results (:meth:`project_on`, :meth:`map_rows`),
    computed on the blocks.
    """

    def __init__(self, array, steps=(), n_columns=None):
        self.array, self.steps = array, tuple(steps)
        self.shape = (int(array.shape[0]),
                      int(array.shape[1] if n_columns is None else n_columns))

    def __len__(self):
        return self.shape[0]

    def then(self, function, *args, n_columns=None):
        """These rows with ``function(X, *args)`` applied to each block."""
        return DaskRows(self.array, self.steps + ((function, args),),
                        self.shape[1] if n_columns is None else n_columns)

    def with_column(self, value):
        """These rows with a constant column appended (the intercept's)."""
        return self.then(_with_column, value, n_columns=self.shape[1] + 1)

    def _over_blocks(self, array, function, *args, row_args=()):
        """``function(block, *args, *row_args_of_block)`` for each block of
        rows of ``array``, concatenated in the client."""
        import dask

        starts = np.r_[0, np.cumsum(array.chunks[0])]
        task = dask.delayed(function, pure=False)
        return gather_blocks(
            [task(block, *args, *(arg[lo:hi] for arg in row_args))
             for block, lo, hi in zip(array.to_delayed().ravel(), starts[:-1],
                                      starts[1:])],
            starts)

    def project_on(self, basis, n_outputs):
        """:func:`skdpval.kernels._subspace_problem.project_rows` of every row, on the blocks:
        ``(n_rows, m, n_outputs)`` in the client."""
        return self._over_blocks(self.array, _project_block, self.steps, basis,
                                 n_outputs)

    def map_rows(self, function, *row_args, block_rows=None):
        """``function(X, *row_args)`` over aligned blocks of ``block_rows``
        (default ``SCORE_BLOCK_ROWS``) rows (the last one shorter),
        concatenated in the client.

        ``row_args`` are in-memory arrays with one entry per row, cut into
        the same blocks.
        """
        aligned = self.array.rechunk({0: block_rows or SCORE_BLOCK_ROWS})
        return self._over_blocks(aligned, _map_block, self.steps, function,
                                 row_args=row_args)

    def sum_blocks(self, function, *row_args):
        """A function ``sums(*args)``: the sum over this array's blocks of
        ``function(X_block, *row_args_block, *args)``, added in the client.

        For sums that are exact (integers: the private fit's fixed-point
        gradient sums), so that any chunking gives the same total. The
        in-memory ``row_args`` (one entry a row) are cut into the blocks
        once and, with a distributed Client, sent to its workers once, so
        that each call sends only ``args``. Each call reads the blocks anew
        (one pass over the rows: from their source, e.g. Parquet), except
        with a distributed Client whose workers' memory limits hold the
        transformed rows several times over (:func:`_rows_fit_on_workers`):
        they are then kept on the workers for the calls (released with
        ``sums``). A call whose data went with a lost worker (its tasks
        cancelled) sends them again and recomputes its sum, at most
        ``LOST_WORKER_RETRIES`` times (data sent to several workers do not
        stay there: Dask's active memory manager drops the extra copies).
        Either way the sums are the same.
        """
        import dask

        starts = np.r_[0, np.cumsum(self.array.chunks[0])]
        source = self.array.to_delayed().ravel()
        cut = [tuple(arg[lo:hi] for arg in row_args)
               for lo, hi in zip(starts[:-1], starts[1:])]
        client = walk_client(self)
        keep = client is not None and _rows_fit_on_workers(client, self.shape)
        transform = dask.delayed(_apply_steps, pure=False)
        placed = {}

        def place():
            """The blocks and row arguments the tasks read, on the workers
            when there is a Client (again after a lost worker)."""
            if client is None:
                placed.update(blocks=source, steps=self.steps, pieces=cut)
                return
            from ._cluster import _scatter_directly

            placed["pieces"] = client.scatter(cut, hash=False,
                                              direct=_scatter_directly(client))
            placed.update(blocks=source, steps=self.steps)
            if keep:
                placed.update(blocks=client.compute([transform(block, self.steps)
                                                     for block in source]),
                              steps=())

        place()
        task = dask.delayed(_sum_block, pure=False)

        def sums(*args):
            for attempt in range(LOST_WORKER_RETRIES + 1):
                try:
                    parts = dask.compute(*[
                        task(block, placed["steps"], function, piece, args)
                        for block, piece in zip(placed["blocks"], placed["pieces"])])
                    break
                except CancelledError:
                    if client is None or attempt == LOST_WORKER_RETRIES:
                        raise
                    place()
            total = parts[0].copy()
            for part in parts[1:]:
                total += part
            return total

        return sums


# Rows read at every step of a fit (the private fit's 20 passes) are kept on
# the workers when they take at most this share of the workers' summed
# memory limits (a worker without a limit: not kept): a pass that reads the
# Parquet blocks anew costs more than the walk's step (benchmarks/dask_fit.py).
KEEP_ROWS_MEMORY_SHARE = 0.25


def _rows_fit_on_workers(client, shape):
    """Whether rows of ``shape`` (float64) fit the workers' memory limits
    by the share ``KEEP_ROWS_MEMORY_SHARE`` (public: sizes only)."""
    limits = [worker.get("memory_limit") or 0
              for worker in client.scheduler_info()["workers"].values()]
    if not limits or min(limits) <= 0:
        return False
    return shape[0] * shape[1] * 8 <= KEEP_ROWS_MEMORY_SHARE * sum(limits)


def map_row_blocks(function, X, *row_args, block_rows=None):
    """``function(X_block, *row_args_block)`` over aligned blocks of
    ``block_rows`` (default ``SCORE_BLOCK_ROWS``) rows of ``X`` (in memory or
    :class:`DaskRows`), concatenated."""
    block_rows = block_rows or SCORE_BLOCK_ROWS
    if isinstance(X, DaskRows):
        return X.map_rows(function, *row_args, block_rows=block_rows)
    return np.concatenate(
        [function(X[lo:lo + block_rows], *(arg[lo:lo + block_rows] for arg in row_args))
         for lo in range(0, max(len(X), 1), block_rows)], axis=0)


# The client computes the blocks of a per-row result in groups of about
# this many rows, each copied into the result as it comes: it then holds the
# result and one group, not every block and their concatenation (three
# arrays of n).
GATHER_ROWS = 2**20


def gather_blocks(tasks, starts):
    """The results of ``tasks`` (delayed, one a block of rows; block ``i``
    holds rows ``starts[i]:starts[i + 1]``) concatenated along their first
    axis, computed in groups of about ``GATHER_ROWS`` rows."""
    import dask

    out = None
    first = 0
    while first < len(tasks):
        last = first + 1
        while last < len(tasks) and starts[last + 1] - starts[first] <= GATHER_ROWS:
            last += 1
        for i, block in enumerate(dask.compute(*tasks[first:last]), first):
            block = np.asarray(block)
            if out is None:
                out = np.empty((starts[-1], *block.shape[1:]), dtype=block.dtype)
            elif np.result_type(out, block) != out.dtype:  # blocks of mixed types
                out = out.astype(np.result_type(out, block))
            out[starts[i]:starts[i + 1]] = block
        first = last
    return np.empty(0) if out is None else out


def _in_memory(values):
    """A per-row input (``y``, ``sample_weight``) in the client's memory:
    gathered block by block (a data frame's ``compute`` concatenates its
    partitions on one worker first, which can kill a worker with little
    memory)."""
    if not is_dask_collection(values):
        return np.asarray(values)
    import dask

    blocks = list(values.to_delayed())
    if hasattr(values, "chunks") and values.ndim > 1:  # a 2-D Dask array
        return np.asarray(values.compute())
    lengths = (values.chunks[0] if hasattr(values, "chunks")
               and not np.any(np.isnan(values.chunks[0]))
               else dask.compute(*[dask.delayed(len)(block) for block in blocks]))
    as_array = dask.delayed(np.asarray, pure=True)
    return gather_blocks([as_array(block) for block in blocks],
                         np.r_[0, np.cumsum(lengths)])


def check_supported(valuator, groups, X_val, preprocessor=None):
    """Refuse, before any work, what Dask input does not support."""
    refused = None
    if groups is not None:
        refused = ("groups (a group's rows are summed in an order read from "
                   "their content)")
    elif X_val is None:
        refused = ("fitting without X_val (the validation set stays in memory: "
                   "pass X_val and y_val as numpy arrays)")
    elif preprocessor is not None:
        refused = ("a Pipeline's transformers (apply them to the Dask collection "
                   "first, or pass numpy arrays)")
    elif getattr(valuator, "subspace", "public") is None:
        refused = ("subspace=None (the full-space walk reads whole rows at every "
                   "step: use subspace='public' or a basis array)")
    if refused is not None:
        raise ValueError(f"{type(valuator).__name__} on Dask input does not "
                         f"support {refused}.")


def _raise_as_in_memory(estimator, reports, n_rows, n_columns):
    """The error ``validate_data`` raises on the whole ``X``, if any, from the
    blocks' reports: the first block that fails to convert, else NaN (in
    any block) before infinity, then the shape."""
    name = type(estimator).__name__
    for *_, error in reports:
        if error is not None:
            kind, message = error
            raise kind(message)
    for flag, value in ((1, np.nan), (2, np.inf)):
        if any(report[flag] for report in reports):
            call_on_private_data(
                lambda: _assert_all_finite(np.array([value]), input_name="X",
                                           estimator_name=name),
                _first_line_without_value)
    # The shape checks on a stand-in of the same shape (no values).
    call_on_private_data(
        lambda: check_array(np.zeros((min(n_rows, 2), n_columns)), input_name="X",
                            ensure_min_samples=2, estimator=estimator),
        _first_line_without_value)


def prepare_parties(estimator, X, y, X_val, y_val, groups, *, is_classifier,
                    classes, validation_fraction, split_seed, standardize,
                    center=True, scale_targets=False, preprocessor=None,
                    warn_unscaled=True, party_unit="group", stacklevel=2):
    """:func:`skdpval.families._parties.prepare_parties` for Dask input.

    The same checks, in the same order and with the same messages, read on
    the blocks in one pass: ``Parties.X`` is :class:`DaskRows` (standardised
    lazily), ``y`` is in memory.
    """
    import dask
    import dask.array as da

    check_supported(estimator, groups, X_val, preprocessor)
    if (X_val is None) != (y_val is None):
        raise ValueError("X_val and y_val must be given together.")
    if not is_dask_collection(X):
        X = da.from_array(np.asarray(X))  # y, say, came as a Dask collection
    if hasattr(X, "columns"):  # a data frame: its partitions
        # Its names from its empty pandas frame (scikit-learn reads pandas).
        _check_feature_names(estimator, X._meta, reset=True)
        blocks, n_columns = list(X.to_delayed()), len(X.columns)
    else:
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        if X.ndim != 2:  # the in-memory message (its first line: no values)
            call_on_private_data(
                lambda: check_array(np.zeros([min(size, 2) for size in X.shape]),
                                    input_name="X", estimator=estimator),
                _first_line_without_value)
        X = X.rechunk({1: -1})
        blocks, n_columns = list(X.to_delayed().ravel()), X.shape[1]
    report = dask.delayed(_block_report, pure=False)
    reports = dask.compute(*[report(block) for block in blocks])
    y = _in_memory(y)
    lengths = [r[0] for r in reports]
    n_rows = int(sum(lengths))
    _raise_as_in_memory(estimator, reports, n_rows, n_columns)
    y = call_on_private_data(
        lambda: _check_y(np.asarray(y), y_numeric=not is_classifier,
                         estimator=estimator),
        _first_line_without_value)
    call_on_private_data(lambda: check_consistent_length(np.empty((n_rows, 0)), y),
                         _first_line_without_value)
    if not is_classifier:
        y = flush_subnormals(y)
    estimator.n_features_in_ = int(n_columns)
    to_floats = dask.delayed(_float_rows, pure=False)
    rows = da.concatenate([da.from_delayed(to_floats(block), (int(length), n_columns),
                                           dtype=np.float64)
                           for block, length in zip(blocks, lengths)])
    X_val = check_validation_features(estimator, X_val, stacklevel + 1,
                                      dtype=np.float64, order="C")
    y, y_val, classes = check_public_targets(
        y, X_val, y_val, is_classifier=is_classifier, classes=classes,
        standardize=standardize, warn_unscaled=warn_unscaled,
        stacklevel=stacklevel + 1)
    if n_rows < 2:
        raise ValueError(f"Data valuation needs at least 2 training parties, got "
                         f"{n_rows}.")
    if is_classifier:
        # Class indices in the smallest integer type.
        y = y.astype(np.min_scalar_type(max(len(classes) - 1, 0)), copy=False)
    X = DaskRows(rows)
    scale = target_scale = None
    if standardize:
        _, X_val, scale = standardize_by_validation(np.empty((0, n_columns)), X_val,
                                                    center=center)
        X = X.then(_standardized, *scale)
        if scale_targets and np.ptp(y_val) > 0:
            y, y_val, target_scale = standardize_targets(y, y_val, center=center)
    # Indices in 32 bits where they fit: the client holds them through the
    # fit (the walk's problem has its own 64-bit offsets, freed with it).
    index = np.int32 if n_rows < np.iinfo(np.int32).max else np.int64
    train = np.arange(n_rows, dtype=index)
    return Parties(X, y, np.arange(n_rows + 1, dtype=index),
                   np.ascontiguousarray(X_val), y_val, classes, train, n_rows,
                   train, 0, scale, target_scale, train)


def walk_client(X):
    """The distributed Client the walk runs on: the default one when the rows
    came as a Dask collection and one exists, else None."""
    if not isinstance(X, DaskRows):
        return None
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def map_on_workers(client, function, calls, *shared):
    """``[function(*shared, *call) for call in calls]``: on the workers of
    ``client`` (the ``shared`` arguments sent to every worker once) or,
    without one, here in order. Only where the calls run changes, not their
    results; with a worker lost on the way they run here."""
    if client is None or len(calls) < 2:
        return [function(*shared, *call) for call in calls]
    try:
        sent = client.scatter(list(shared), broadcast=True, hash=False,
                              direct=_scatter_directly(client))
        futures = [client.submit(function, *sent, *call, pure=False)
                   for call in calls]
        return client.gather(futures)
    except (CancelledError, OSError, TimeoutError):
        return [function(*shared, *call) for call in calls]
