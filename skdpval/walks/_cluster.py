"""The walk on a Dask cluster: data sent once, tasks pinned, each worker keeping
its own copy of the rolling means, and a walk started again when a worker
is lost."""

import math
import pickle
import sys
import threading
import time
from concurrent.futures import CancelledError

import numpy as np

from ..exceptions import DirectScatterError
from ..kernels._reduction import NodeSums, tree_nodes
from ._waves import (WalkState, _blocks, _diverged_walks_are_reported_later, _wave_sums,
                     advanced_mean, end_wave, walk_node)


def walk_node_of_mean(problem, draw, lo, hi, x_tt, counted, rolling_mean,
                      release_shape):
    """:func:`walk_node` with a worker's copy of the rolling means (None
    before the first wave; ``release_shape`` None: no rolling mean)."""
    return_reader_memory()
    if release_shape is not None and rolling_mean is None:
        rolling_mean = np.zeros((problem.n_parties, *release_shape))
    return walk_node(problem, draw, lo, hi, x_tt, counted, rolling_mean)


def raw_part(node):
    """A node's raw sums alone (what the rolling means read)."""
    return NodeSums(node.raw_sum, 0, None, None, np.empty(0))


def counted_part(node):
    """A node's sums without its raw sums (what the client merges)."""
    return node._replace(raw_sum=None)


def next_rolling_mean(rolling_mean, start, stop, depth, n_parties, release_shape,
                      *nodes):
    """A worker's copy of the rolling means after the wave of ``nodes``: the
    operations of :func:`end_wave` on the raw sums, in its order, written
    over ``rolling_mean`` (a new array before the first wave).

    In place, though Dask's tasks should leave their inputs alone: the old
    copy is read by no other task (this worker's walk of the wave is done:
    the raw sums come from it), the client holds no reference to it, and
    Dask never reads it again: a lost worker makes the walk start again
    from its first wave (:func:`_run_on_dask`). A new array would
    hold one more array of n at the worker's peak. Run on another worker,
    the task changes its own copy.
    """
    out = (np.empty((n_parties, *release_shape)) if rolling_mean is None
           else rolling_mean)
    with _diverged_walks_are_reported_later():
        for block in _blocks(n_parties):
            old = (np.zeros((len(out[block]), *release_shape)) if rolling_mean is None
                   else rolling_mean[block])
            out[block] = advanced_mean(old, _wave_sums(start, stop, depth, nodes,
                                                       block).raw_sum, start, stop)
    return out


def return_reader_memory():
    """Give back to the system the memory pyarrow's pool keeps after reading
    (Parquet), which a garbage collection and ``malloc_trim`` do not, and
    ``release_unused`` does, cheaply (``benchmarks/dask_reader_memory.py``):
    a walk of millions of parties on a worker with little memory needs it.
    Only if pyarrow is loaded."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None and hasattr(pyarrow, "default_memory_pool"):
        pyarrow.default_memory_pool().release_unused()

# Nodes of a wave per Dask worker, each pinned loosely to a worker in turn:
# more than one lets an idle worker take a busy one's node.
DASK_NODES_PER_WORKER = 1


def _scatter_directly(client):
    """True when the scheduler runs in this process (a LocalCluster's): data
    then go to a worker directly, which the others copy, not through the
    scheduler, which would hold another copy in the client's memory. Else
    None: Dask's default (the workers of a remote cluster may not be
    reachable from the client). For the rows' arguments of a Dask
    collection's blocks; the walk's draws always go directly
    (:func:`_scatter`)."""
    cluster = getattr(client, "cluster", None)
    return True if getattr(cluster, "scheduler", None) is not None else None


def _scatter(client, data, worker):
    """``data`` sent from this client straight to ``worker``, never through
    the scheduler: the draws hold the fit's secret noise key
    (:class:`~skdpval.privacy._mechanism.NoiseStream`), which the workers
    that walk need and the scheduler does not (the user guide's "Data held
    by Dask": whom the key trusts). Dask's default scatter from a client
    whose scheduler runs elsewhere sends the data through the scheduler; a
    client that cannot reach the worker is refused
    (:class:`~skdpval.exceptions.DirectScatterError`); a worker that left raises
    :class:`WorkerLeftError` (the walk starts again)."""
    try:
        return client.scatter(data, workers=[worker], hash=False, direct=True)
    except (OSError, TimeoutError) as error:
        # A worker lost while it receives its copy (a closed connection), or
        # before (Dask waits for it, then finds no valid worker).
        if _worker_left(client, worker):
            raise WorkerLeftError("a Dask worker of the walk left the cluster"
                                  ) from None
        raise DirectScatterError(
            f"This client cannot reach the Dask worker {worker} directly "
            f"({type(error).__name__}: {error}). The walk sends each worker its "
            "data and the fit's secret noise key directly from the client, "
            "never through the scheduler, which Dask would otherwise route "
            "them through: the key is shared with the workers that walk, not "
            "with the scheduler. Run the client where it reaches the workers' "
            "addresses (in the cluster's network), or walk in this process "
            "(without a Dask client and joblib's dask backend).") from None


def _run_on_dask(client, box, draw, waves, x_tt, counted, initial, progress):
    """Waves on a Dask cluster (see :func:`_walk_on_workers`), walked again
    from the first wave, with the same values, when a lost worker took data
    the walk cannot recompute, at most ``LOST_WORKER_RETRIES`` times.

    ``box``: a list holding the problem, emptied here: the client keeps the
    problem as the workers receive it (packed, a fraction of its size in
    memory), to send it again after a loss.
    """
    problem = pickle.loads(pickle.dumps(box.pop(), protocol=pickle.HIGHEST_PROTOCOL))
    for attempt in range(LOST_WORKER_RETRIES + 1):
        try:
            return _walk_on_workers(client, problem, draw, waves, x_tt, counted,
                                    initial, progress)
        except CancelledError as lost:
            # The cancelled future keeps this error, the error its traceback,
            # and the traceback the walk's frames: the attempt's futures
            # (the copies of the problem on the workers left) and its state
            # would live as long as the client.
            lost.__traceback__ = None
            if attempt == LOST_WORKER_RETRIES:
                raise RuntimeError(
                    f"A lost Dask worker cancelled each of the walk's {attempt + 1} "
                    "tries. A worker past its memory limit is killed and "
                    "restarted: with little memory a worker, lower "
                    "batch_permutations (on n workers, n walks one permutation a "
                    "worker: the user guide's 'Data held by Dask' gives the "
                    "memory a party needs) or give the workers more "
                    "memory.") from lost
            progress.restart()

# A walk whose data went with a lost worker is walked again from its first
# wave at most this many times (a worker killed again and again is a fault
# to report, not to retry).
LOST_WORKER_RETRIES = 3

# While it waits for the workers, the client checks every this many seconds
# that the workers its tasks are pinned to are still there.
WORKER_CHECK_SECONDS = 1.0


class WorkerLeftError(CancelledError):
    """A worker a walk's tasks are pinned to left the cluster with its data
    moved elsewhere (retired: adaptive scaling, a graceful shutdown): its
    tasks would wait for it forever, so the walk starts again."""


# A worker the walk could not send its copy to is waited for at most this
# many seconds to leave the scheduler's list (a killed worker's nanny tells
# the scheduler soon after; a walk started again before would pick it
# again), else it is taken for unreachable.
LOST_WORKER_WAIT_SECONDS = 5.0


def _worker_left(client, worker):
    """Whether ``worker`` is (or, within ``LOST_WORKER_WAIT_SECONDS``, comes
    to be) absent from the scheduler's workers."""
    deadline = time.monotonic() + LOST_WORKER_WAIT_SECONDS
    while worker in client.scheduler_info()["workers"]:
        if time.monotonic() > deadline:
            return False
        time.sleep(WORKER_CHECK_SECONDS / 10)
    return True


def _gather_from(client, futures, workers):
    """``client.gather(futures)``, raising :class:`WorkerLeftError` when
    one of ``workers`` leaves before the futures are done (a killed worker's
    tasks are cancelled, since they lose the data they were sent; a retired
    worker's are not, and wait in Dask's 'no-worker' state).

    It waits on the futures' callbacks, not on ``distributed.wait`` with a
    timeout: each timeout's error held the walk's frames in a reference
    cycle until a full garbage collection, a wave's gathered sums with them
    (the client's peak: benchmarks/results/dask_scale.jsonl).
    """
    all_done = threading.Event()

    def one_done(_):
        if all(future.done() for future in futures):
            all_done.set()

    for future in futures:
        future.add_done_callback(one_done)
    one_done(None)  # none to wait for, or all done already
    while not all_done.wait(WORKER_CHECK_SECONDS):
        present = client.scheduler_info()["workers"]
        if any(worker not in present for worker in workers):
            raise WorkerLeftError("a Dask worker of the walk left the cluster")
    return client.gather(futures)


def _walk_on_workers(client, problem, draw, waves, x_tt, counted, initial,
                     progress):
    """Waves on a Dask cluster: data sent once, tasks pinned, each worker
    keeping its copy of the rolling means (see :func:`next_rolling_mean`),
    the client the counted sums (a worker then holds the rows' summaries,
    its copy of the means and one node's walk).

    Each worker receives its own copy of the problem and the draws (its own
    keys, one replica each: Dask's active memory manager drops extra
    replicas of a key between waves, and the copy a worker then fetched
    again both cost memory and left the problem on one
    worker, so that losing it lost the walk's data). Tasks stay on their
    worker (a stolen node would fetch the problem and the means). A lost
    worker's data cannot be recomputed (they were sent, not computed): its
    tasks are cancelled, and :func:`_run_on_dask` walks again. A retired
    worker's tasks are not cancelled (its data moved) but would wait for it
    forever: the client checks that the workers are there while it waits
    (:func:`_gather_from`) and walks again too.
    """
    workers = sorted(client.scheduler_info()["workers"])
    # The values do not depend on the tree's depth (its merges are fixed).
    depth = math.ceil(math.log2(len(workers) * DASK_NODES_PER_WORKER))
    n_parties, release_shape, n_permutations = initial
    if getattr(problem, "reads_int32_orders", False) and n_parties < 2**31:
        draw = draw.with_orders(np.int32)  # a worker's walk: half its orders
    # Scattered in lists: a bare tuple (WalkProblem) would be split up.
    sent = [_scatter(client, [problem, draw], worker) for worker in workers]

    def on(i):
        return dict(workers=[workers[i % len(workers)]], allow_other_workers=False,
                    pure=False)

    means = [None] * len(workers)
    state = WalkState.start(n_parties, None, n_permutations)
    pending = []

    def merge_first_pending():
        start, stop, parts = pending.pop(0)
        # Gathered, then released: the workers free them before the merge.
        parts = _gather_from(client, parts, workers)
        return end_wave(state, start, stop, depth, *parts, in_place=True), stop - start

    for start, stop in waves:
        nodes = [client.submit(walk_node_of_mean, *sent[i % len(workers)], lo, hi,
                               x_tt[lo:hi], counted[lo:hi], means[i % len(workers)],
                               release_shape, **on(i))
                 for i, (lo, hi) in enumerate(tree_nodes(start, stop, depth))]
        pending.append((start, stop, [client.submit(counted_part, node, **on(i))
                                      for i, node in enumerate(nodes)]))
        if release_shape is not None and counted[start:stop].any():
            # The counted sums leave the workers before they update their
            # means (a worker would hold them, its raw sums, the other's and
            # two copies of the means at its peak).
            while pending:
                state, size = merge_first_pending()
                progress.update(size)
        if release_shape is not None:
            # Every worker's copy for the next wave; after the last, the first
            # worker's alone: each party's mean of all its releases, which
            # the caller reads (values_stderr_). The raw sums travel alone.
            raws = [client.submit(raw_part, node, **on(i))
                    for i, node in enumerate(nodes)]
            last = stop == waves[-1][1]
            means = [client.submit(next_rolling_mean, means[w], start, stop, depth,
                                   n_parties, release_shape, *raws, **on(w))
                     for w in range(1 if last else len(workers))]
            # Freed once read (held here, a wave's raw sums outlived the
            # next wave's walk).
            del raws
        del nodes
        # Keep a wave queued behind the running one; merge finished waves.
        if len(pending) == 2:
            state, size = merge_first_pending()
            progress.update(size)
    while pending:
        state, size = merge_first_pending()
        progress.update(size)
    rolling_mean = (None if release_shape is None
                    else _gather_from(client, means[:1], workers)[0])
    return state._replace(rolling_mean=rolling_mean)
