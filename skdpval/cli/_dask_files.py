"""``skdpval value`` on data that do not fit: a folder or glob of Parquet files.

TRAIN is read lazily with Dask (one block per input partition), on the
cluster of ``--scheduler ADDRESS``, a local one of ``--workers N`` processes
(one thread each, ``--memory-limit`` each) or, without either, Dask's threads
in this process. The features are laid out from public input only, as for
one file (:mod:`._table`): each block is encoded on the worker that reads it
by the very function of the one-file path, with the validation rows'
kinds and categories, so a block's rows are the rows one file would give.

One pass over the blocks checks them (the same checks and messages as for
one file; the first failing block in the input order is reported) and
brings the target to the client (one number or label a row, which the
valuator holds anyway); the valuator then reads the encoded blocks where
they live (:mod:`skdpval.walks._dask`), every check before any release.
The values are written from the client, one Parquet file per input
partition (``part-00000.parquet``, ... in the input order), each through
:func:`._files.write_atomically`; ``part-`` files of an earlier run on more
partitions are removed after the new ones are written.
"""

import contextlib
import math
import os
import sys
import time
import types
import warnings

import numpy as np

from ._files import (PART_NAME, parquet_files, read_table, stale_parts,
                     write_atomically)
from ._flag import auto_flag_fraction
from ._models import DEFAULT_MODELS, choice_line, make_model, parse_model_params
from ._parser import InputError
from ._table import choose_features, columns_line, encode, targets
from ._value import (NOT_PRIVATE, PROG, _import, _show_warning, _valuator,
                     _write_report, cli_words, privacy_summary)


# How long to wait for --scheduler to answer.
SCHEDULER_TIMEOUT_SECONDS = 30


class _Layout(types.SimpleNamespace):
    """What a block needs to be encoded as one file's rows are: the feature
    and target columns, the validation rows (public), ``--impute``, ``--task``."""


def _block_features(part, layout):
    """A block's features as the one-file path encodes them (floats)."""
    import pandas as pd

    X, _, _ = encode(part[layout.features], layout.val_X, layout.impute, pd,
                     typed=layout.typed)
    return X


def _block_target(part, layout):
    import pandas as pd

    y, _, _ = targets(part[layout.target], layout.val_y, layout, pd, lambda _: None)
    y = np.asarray(y)
    return y.astype(str) if y.dtype == object else y


def _check_block(part, layout):
    """``(n_rows, error, y)`` of one block: ``error`` the one-file path's
    message (it names a column, never a value), else None and its target."""
    if not len(part):
        return 0, None, None
    try:
        _block_features(part, layout)
        return len(part), None, _block_target(part, layout)
    except InputError as error:
        return len(part), str(error), None


@contextlib.contextmanager
def _cluster(args, note):
    """The distributed Client of ``--scheduler`` or ``--workers`` (None
    without either), closed on exit."""
    if args.scheduler is None and args.workers is None:
        yield None
        return
    distributed = _import("distributed", "dask")
    if args.workers is not None:
        limit = "auto" if args.memory_limit is None else args.memory_limit
        if args.memory_limit is not None:
            from dask.utils import parse_bytes
            try:
                parse_bytes(args.memory_limit)
            except (ValueError, TypeError):
                raise InputError(f"--memory-limit {args.memory_limit!r} is not a "
                                 "size (a number of bytes, or with a unit: kB, "
                                 "MB, GB, KiB, MiB, GiB)") from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the dashboard's port, if taken
            cluster = distributed.LocalCluster(
                n_workers=args.workers, threads_per_worker=1, processes=True,
                memory_limit=limit, dashboard_address=":0")
        with cluster, distributed.Client(cluster) as client:
            note(f"local Dask cluster: {args.workers} worker process(es), 1 thread "
                 f"each, memory limit {args.memory_limit or 'Dask default'}; "
                 f"dashboard {client.dashboard_link}")
            yield client
        return
    try:
        client = distributed.Client(args.scheduler, timeout=SCHEDULER_TIMEOUT_SECONDS)
    except (OSError, TimeoutError, ValueError) as error:
        raise InputError(f"cannot reach --scheduler {args.scheduler!r} "
                         f"({' '.join(str(error).split())})") from None
    with client:
        workers = len(client.scheduler_info()["workers"])
        note(f"Dask scheduler {args.scheduler}: {workers} worker(s); dashboard "
             f"{client.dashboard_link}")
        yield client


@contextlib.contextmanager
def _warnings_on_stderr():
    """Each warning once, on stderr in the command line's words; Dask's own
    deprecation warnings (its use of pandas) not at all."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        for category in (DeprecationWarning, FutureWarning):
            warnings.filterwarnings("ignore", category=category, module="dask")
        warnings.showwarning = _show_warning
        yield


def _compute_with_progress(tasks, client, quiet):
    """``dask.compute(*tasks)`` with Dask's progress bar on stderr."""
    import dask

    if quiet:
        return dask.compute(*tasks)
    with contextlib.redirect_stdout(sys.stderr):
        if client is None:
            from dask.diagnostics import ProgressBar
            with ProgressBar(out=sys.stderr):
                return dask.compute(*tasks)
        from distributed import progress
        futures = client.compute(list(tasks))
        progress(futures)
        print(file=sys.stderr)
        return client.gather(futures)


def _write_parts(valuator, starts, folder, flag_fraction, pd):
    """One Parquet file per input partition, from the client's values."""
    values = np.asarray(valuator.values_, dtype=np.float64)
    stderr = getattr(valuator, "values_stderr_", None)
    rank = np.asarray(valuator.rank_)
    n = len(values)
    n_flagged = math.ceil(flag_fraction * n - 1e-9)
    os.makedirs(folder, exist_ok=True)
    for i, (lo, hi) in enumerate(zip(starts[:-1], starts[1:])):
        part = pd.DataFrame({
            "value": values[lo:hi],
            "stderr": (np.full(hi - lo, np.nan) if stderr is None
                       else np.asarray(stderr[lo:hi], dtype=np.float64)),
            "rank": rank[lo:hi].astype(np.int64),
            "flagged": rank[lo:hi] > n - n_flagged,
            "held_out": np.zeros(hi - lo, dtype=bool)})
        write_atomically(os.path.join(folder, PART_NAME.format(i)),
                         lambda temporary: part.to_parquet(temporary, index=False))
    for path in stale_parts(folder, len(starts) - 1):
        os.remove(path)
    return n_flagged


def run(args, parser=None):
    """Run ``skdpval value`` on a folder or glob of Parquet files (or one,
    with ``--scheduler``/``--workers``): returns 0 (1 when an output cannot
    be written); bad input raises :class:`InputError`."""
    started = time.perf_counter()

    def progress(line):
        if not args.quiet:
            print(f"[{time.perf_counter() - started:5.1f} s] {line}", file=sys.stderr)

    pd = _import("pandas", "pandas")
    _import("pyarrow", "parquet")
    _import("dask", "dask")
    import dask
    import dask.array as da
    import dask.dataframe as dd

    params = parse_model_params(args.model_params)
    if args.model not in (None, "auto"):
        make_model(args.model, params, args.method)
    files = parquet_files(args.train)
    try:
        train = dd.read_parquet(files)
    except Exception as error:  # noqa: BLE001 (the schema is public: no values)
        raise InputError(f"cannot read {args.train!r} ({type(error).__name__}: "
                         f"{' '.join(str(error).split())})") from None
    val, _ = read_table(args.validation, public=True, sep=None, pd=pd)
    if len(val) == 0:
        raise InputError(f"the validation file {args.validation!r} has no rows")
    features = choose_features(train, val, args, train_sep=None, val_sep=None,
                               note=progress)
    layout = _Layout(features=features, val_X=val[features], impute=args.impute,
                     typed=args.validation.lower().endswith((".parquet", ".pq")),
                     target=args.target, val_y=val[args.target], task=args.task)
    _, X_val, encoded = encode(val[features], val[features], args.impute, pd,
                               typed=layout.typed)
    _, y_val, task = targets(val[args.target].iloc[:0], val[args.target], args, pd,
                             progress)
    name = DEFAULT_MODELS[task] if args.model in (None, "auto") else args.model
    model = make_model(name, params, args.method, task)
    if args.model in (None, "auto") and not params and task == "classification":
        # The library's default, as in the Python API: the family chosen on the
        # validation rows (on Dask rows, among the families that walk there).
        name, model = "a linear model or a network, chosen on the validation rows", None
    if args.method == "shapley" and model is not None:
        from ..families import family_of
        try:  # a family whose walk reads rows at every step: refused here
            family_of(model).require("dask", model)
        except TypeError:
            raise InputError(f"--model {name} with --method shapley is not supported "
                             f"on {args.train!r} read with Dask: its walk reads "
                             "whole rows at every step (--method label-quality, "
                             "or one file without --scheduler and --workers)") from None
    valuator = _valuator(args, model)

    with _cluster(args, progress) as client:
        parts = train[[*features, args.target]].to_delayed()
        progress(f"{args.train}: {len(files)} Parquet file(s), {len(parts)} "
                 f"partition(s); checking the rows ...")
        check = dask.delayed(_check_block, pure=False)
        with _warnings_on_stderr():
            reports = _compute_with_progress([check(p, layout) for p in parts],
                                             client, args.quiet)
        for _, error, _ in reports:  # the first failing block, in input order
            if error is not None:
                raise InputError(error)
        lengths = [length for length, _, _ in reports]
        starts = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        n_rows = int(starts[-1])
        y = np.concatenate([block for _, _, block in reports if block is not None]
                           or [np.empty(0)])
        del reports
        if args.method == "shapley" and model is not None:
            from ..families import family_of
            try:
                family_of(model).objective(model, n_parties=n_rows)
            except (ValueError, TypeError) as error:
                raise InputError(f"--model {name}: {cli_words(error)}") from None
        block = dask.delayed(_block_features, pure=False)
        X = da.concatenate([
            da.from_delayed(block(p, layout), (length, X_val.shape[1]),
                            dtype=np.float64)
            for p, length in zip(parts, lengths) if length] or
            [da.zeros((0, X_val.shape[1]))])
        progress(f"{args.train}: {n_rows} rows; "
                 + columns_line(len(X_val), features, encoded, args.impute, task))
        if args.epsilon == math.inf:  # every input checked; before any release
            print(NOT_PRIVATE, file=sys.stderr)
        progress(f"valuing with {type(valuator).__name__}({name}) on Dask ...")
        with _warnings_on_stderr():
            try:
                valuator.fit(X, y, X_val=X_val, y_val=y_val)
            except (ValueError, TypeError, FloatingPointError) as error:
                raise InputError(cli_words(error)) from None
    if choice_line(valuator) is not None:
        progress(choice_line(valuator))
    report = dict(valuator.privacy_report_)
    fraction, estimate = args.flag_fraction, None
    if fraction == "auto":
        fraction, line, estimate = auto_flag_fraction(valuator)
        progress(line)
        report["bad_labels"] = estimate
    unprotected = f"the validation rows ({args.validation}), used without noise"
    try:
        n_flagged = _write_parts(valuator, starts, args.output, fraction, pd)
        progress(f"done: {n_flagged} rows flagged (the lowest {fraction:.3g} of the "
                 f"values{'; --flag-fraction auto' if estimate is not None else ''}); "
                 f"wrote {len(lengths)} file(s) to {args.output}")
        if args.report is not None:
            _write_report(report, args.report)
            progress(f"wrote {args.report}")
    except OSError as error:
        print(f"{PROG}: error: cannot write {error.filename or args.output!r} "
              f"({error.strerror or error}); an old file there is left as it was",
              file=sys.stderr)
        return 1
    print(privacy_summary(report, args, unprotected), file=sys.stderr)
    return 0
