"""Running the walk: waves of permutations, in parallel, bit-reproducibly.

A *walk problem* is any picklable object with ``n_parties``,
``release_shape`` (the shape of one party's release, e.g. ``(n_outputs,
n_columns)`` for the full-space walk) and a method ``walk(permutations,
stream, x_tt, rolling_mean)`` returning ``(marginals, end_utility)`` (see
:func:`skdpval.kernels._kernels.walk`; ``stream`` is the privacy layer's
release stream, :func:`skdpval.privacy._release.release_stream`).
:class:`WalkProblem` is the full-space one.

Permutations run in waves of ``batch_permutations``. The permutations of a
wave are independent and run in parallel; with a rolling mean all of them
read each party's mean of its releases as of the end of the previous wave,
which is updated once the wave is done. Every permutation draws its order
and its noise from its own random streams (:class:`SeededDraws`).

Each wave is reduced over a fixed binary tree of its permutations (halves,
the larger one first), whatever the number of workers: a task walks one node
of the tree and sends back only the node's sums (the raw releases summed,
and the count, mean and sum of squared deviations of its counted marginals,
merged pairwise as Chan, Golub and LeVeque do), and the nodes are merged up
the same tree. So the values are bit-identical for any ``n_jobs`` and any
backend at a fixed seed and wave size, a task returns O(n d) numbers however
many permutations it walked, and at most one wave of noise is alive.

Where the tasks run:

- one worker: in the calling thread;
- threads (the default, and joblib's threading backend): a thread pool kept
  for the whole fit (the kernels release the GIL; a joblib call per wave
  costs about 10 ms, more than a small wave's work);
- Dask (``joblib.parallel_config(backend="dask")``, or Dask input with a
  distributed Client, :mod:`skdpval.walks._dask`): the problem and the draws are
  sent to every worker once, each task is pinned to a worker, and every
  worker keeps its own copy of the rolling means, updated from the wave's
  nodes, so that per wave only the nodes' sums cross the network, once
  (without a rolling mean, i.i.d. noise, a node waits for no merge); the
  counted marginals are merged in the client (a worker holds the rows'
  summaries, its copy of the means and one node's walk);
- any other joblib backend (loky, multiprocessing): ``joblib.Parallel``.
"""

import copy
import math
import pickle
import sys
import threading
import time
from collections import namedtuple
from concurrent.futures import CancelledError, ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from joblib import effective_n_jobs
from joblib.parallel import SequentialBackend, ThreadingBackend, get_active_backend
from numba.core import event as numba_event
from sklearn.utils.parallel import Parallel, delayed
from threadpoolctl import ThreadpoolController

from ..kernels import _kernels, _orders
from ..privacy._release import release_stream
from ..kernels._reduction import (NodeSums, merge_sums, reduce_tree, reduce_walked,
    tree_nodes)

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
        return _kernels.walk(self, permutations, stream, x_tt, rolling_mean)


WalkResult = namedtuple("WalkResult", [
    "marginal_mean", "marginal_m2", "n_counted", "end_utility", "rolling_mean"])


def make_problem(X, T, offsets, X_val, T_val, labels_val, *, loss, utility,
                 loss_param, l2, n_penalized, clip_norm, learning_rate,
                 total_sum_squares, weights, l1=0.0, row_weights=None,
                 record_level=False):
    """Pack the walk's inputs as contiguous arrays and plain scalars.

    ``X`` holds the parties' rows, party ``j`` being
    ``X[offsets[j]:offsets[j + 1]]``; ``row_weights`` (default ones) weigh
    their losses; the validation set is given by rows (stored transposed and
    padded, see :mod:`skdpval.kernels._kernels`). ``record_level``: each row's
    gradient is clipped, a party releases their noisy sum divided by its
    size (see :func:`skdpval.kernels._kernels._walk`).
    """
    f64, i64 = _kernels._f64, _kernels._i64
    n_outputs = T.shape[1]
    return WalkProblem(
        f64(X), f64(T), i64(offsets),
        _kernels.pad_columns(X_val), _kernels.pad_columns(T_val),
        i64(labels_val), int(loss),
        int(utility), float(loss_param), float(l2), int(n_penalized),
        float(clip_norm), float(learning_rate), float(total_sum_squares),
        np.zeros((n_outputs, X.shape[1])), f64(weights), float(l1),
        _kernels.unit_weights(len(X)) if row_weights is None else f64(row_weights),
        bool(record_level))


def stream_words(seed_sequence, n_streams):
    """The seeds of ``n_streams`` random streams: ``(n_streams, 4)`` uint64 words.

    One call to the SeedSequence for all of them: spawning a child
    SeedSequence and a PCG64 per permutation cost ~15 us each.
    """
    return seed_sequence.generate_state(4 * n_streams, np.uint64).reshape(n_streams, 4)


class SeededDraws:
    """The draws of permutations ``lo .. hi - 1`` from their own streams (picklable).

    The walk's draw protocol: ``has_noise`` and ``draw(lo, hi, releases)``
    returning the orders ``(hi - lo, n_parties)`` and the release stream of
    the walks (:func:`skdpval.privacy._release.release_stream`), whose noise
    it draws into ``releases`` ``(hi - lo, n_parties, ...)`` (None without
    noise; with a rolling mean the walk leaves the raw releases there).
    Permutation ``t`` has its own streams, so results do not depend on how
    permutations are grouped or scheduled: its order from the ``t``-th
    stream of ``order_seed`` (a SeedSequence, public: ``random_state``;
    :mod:`skdpval.kernels._orders`), its noise from ``noise``, the walk
    part's :class:`~skdpval.privacy._mechanism.NoiseStream` (the privacy
    mechanism's: the ChaCha20 stream ``(WALK, t)`` of the fit's secret key,
    which travels inside it, to Dask workers too), or None for no noise.
    """

    def __init__(self, order_seed, noise, n_permutations, n_parties):
        self.order_words = stream_words(order_seed, n_permutations)
        self.noise = noise
        self.n_parties = n_parties
        self.has_noise = noise is not None and noise.has_noise
        self.order_dtype = np.int64

    def with_orders(self, dtype):
        """A copy drawing its orders as ``dtype`` (the same permutations)."""
        draw = copy.copy(self)
        draw.order_dtype = dtype
        return draw

    def __call__(self, lo, hi, releases):
        orders = _orders.permutations(self.order_words[lo:hi], self.n_parties,
                                      self.order_dtype)
        if not self.has_noise:
            return orders, release_stream()
        return orders, self.noise.draw(lo, hi, releases)


# --- a node's walk ---------------------------------------------------------------

def _diverged_walks_are_reported_later():
    """Non-finite marginals or releases (a diverged walk) are reported by the
    caller, with a remedy: numpy's warnings here would only repeat it."""
    return np.errstate(invalid="ignore", over="ignore")


# A node walks its permutations in subtrees of at most this many bytes of
# noise (at least one permutation): with 100,000 parties and 21 parameters,
# one permutation at a time, and only the tree's pending partial sums stay.
CHUNK_BYTES = 16 * 2**20


def walk_node(problem, draw, lo, hi, x_tt, counted, rolling_mean):
    """Walk permutations ``lo .. hi - 1`` (a node of a wave's tree); return its sums.

    ``x_tt`` and ``counted`` are those of the node's permutations. Runs in a
    worker. The node's subtrees of at most ``CHUNK_BYTES`` of noise are
    drawn, walked and reduced (:mod:`skdpval.kernels._reduction`) one at a time, so
    that a subtree's noise is freed once summed.
    """
    n_parties, shape = problem.n_parties, problem.release_shape
    chunk = max(1, CHUNK_BYTES // (8 * n_parties * math.prod(shape)))
    keep_raw = rolling_mean is not None

    def walk_subtree(a, b):
        releases = np.empty((b - a, n_parties, *shape)) if draw.has_noise else None
        orders, stream = draw(a, b, releases)
        marginals, end_utility = problem.walk(orders, stream, x_tt[a - lo:b - lo],
                                              rolling_mean)
        return NodeSums(*reduce_walked(releases if keep_raw else None, marginals,
                                       counted[a - lo:b - lo]), end_utility)

    with _diverged_walks_are_reported_later():
        node = reduce_tree(lo, hi, math.inf, walk_subtree,
                           lambda left, right: merge_sums(left, right, in_place=True),
                           leaf_size=chunk)
    # Copies, so that the last subtree's noise and marginals are freed; not
    # of a view that spans its whole buffer (one permutation's: n = 1e7
    # parties, 80 MB each).
    return node._replace(raw_sum=_own(node.raw_sum), mean=_own(node.mean),
                         m2=_own(node.m2))


def _own(array):
    """``array`` or, if it views part of a larger buffer, a copy (None: None)."""
    if array is None or array.base is None or array.base.size == array.size:
        return array
    return array.copy()


# --- the state between waves ----------------------------------------------------

class WalkState(namedtuple("WalkState", ["rolling_mean", "counted", "end_utility"])):
    """Each party's mean of its raw releases (or None), the counted marginals
    so far (a NodeSums without raw releases) and every permutation's final
    utility (NaN until walked)."""

    __slots__ = ()

    @classmethod
    def start(cls, n_parties, release_shape, n_permutations):
        """Before the first wave (``release_shape`` None: no rolling mean)."""
        return cls(None if release_shape is None else np.zeros((n_parties, *release_shape)),
                   NodeSums(None, 0, None, None, np.empty(0)),
                   np.full(n_permutations, np.nan))


# Arrays of n parties are merged in blocks of this many: every operation is
# element by element, so the bits are those of whole arrays, and no
# temporary outgrows a block (a worker limited to 1 GiB holds n = 1e7
# parties: 80 MB an array).
MERGE_BLOCK = 2**16


def _blocks(n):
    return [slice(lo, lo + MERGE_BLOCK) for lo in range(0, max(n, 1), MERGE_BLOCK)]


def _node_slice(node, block):
    """A node's sums on the parties of ``block`` (views)."""
    return node._replace(
        raw_sum=None if node.raw_sum is None else node.raw_sum[block],
        mean=None if node.mean is None else node.mean[block],
        m2=None if node.m2 is None else node.m2[block])


def _wave_sums(start, stop, depth, nodes, block):
    """The wave's sums on ``block``: its nodes merged up the tree (new arrays)."""
    by_start = {a: _node_slice(node, block)
                for node, (a, _) in zip(nodes, tree_nodes(start, stop, depth))}
    return reduce_tree(start, stop, depth, lambda a, b: by_start[a], merge_sums)


def end_wave(state, start, stop, depth, *nodes, in_place=False):
    """Merge a wave's ``nodes`` (those of ``tree_nodes(start, stop, depth)``) into ``state``.

    Returns the new state; the nodes are left untouched (on Dask they live
    in a worker's memory), and so is ``state`` unless ``in_place`` (then its
    arrays hold the new state's). Merged block by block (``MERGE_BLOCK``).
    """
    n_counted = sum(node.n_counted for node in nodes)
    rolling_mean, counted = state.rolling_mean, state.counted
    n_parties = len(rolling_mean) if rolling_mean is not None else next(
        (len(node.mean) for node in nodes if node.mean is not None), 0)
    if rolling_mean is not None and not in_place:
        rolling_mean = np.empty_like(rolling_mean)
    mean, m2 = counted.mean, counted.m2
    if n_counted and (mean is None or m2 is None or not in_place):
        mean, m2 = np.empty(n_parties), np.empty(n_parties)
    with _diverged_walks_are_reported_later():
        for block in _blocks(n_parties):
            wave = _wave_sums(start, stop, depth, nodes, block)
            if rolling_mean is not None:
                rolling_mean[block] = advanced_mean(state.rolling_mean[block],
                                                    wave.raw_sum, start, stop)
            if n_counted:
                merged = merge_sums(_node_slice(counted, block),
                                    wave._replace(raw_sum=None))
                mean[block] = merged.mean
                m2[block] = 0.0 if merged.m2 is None else merged.m2
    if n_counted:
        counted = NodeSums(None, counted.n_counted + n_counted, mean, m2, np.empty(0))
    end_utility = state.end_utility if in_place else state.end_utility.copy()
    end_utility[start:stop] = np.concatenate(
        [node.end_utility for node in nodes]) if nodes else []
    return WalkState(rolling_mean, counted, end_utility)


# On Dask every worker keeps its own copy of the rolling means, updated from
# the wave's nodes by the same arithmetic as :func:`end_wave` (so the copies
# are bit-identical): a wave's nodes then wait for one exchange of the
# nodes' raw sums, not for a merge on one worker and a copy sent back. The
# counted marginals and the final utilities are merged in the client, off
# the waves' critical path. Before the first wave a copy is None (zeros).

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
    hold 8 bytes a party more at the worker's peak (n = 1e7: 80 MB of a 1
    GiB worker). Run on another worker, the task changes its own copy.
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
    (Parquet): a worker that read 10^6 rows of 20 features held 505 MiB,
    500 after a garbage collection and ``malloc_trim``, 358 after
    ``release_unused`` (0.73 us a call; ``benchmarks/dask_reader_memory.py``),
    which a walk of 10^7 parties on a worker limited to 1 GiB needs. Only
    if pyarrow is loaded."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None and hasattr(pyarrow, "default_memory_pool"):
        pyarrow.default_memory_pool().release_unused()


def advanced_mean(rolling_mean, raw_sum, start, stop):
    """The means of releases ``0 .. stop - 1`` from those of ``0 .. start -
    1`` and the sum of the others: ``(start * rolling_mean + raw_sum) /
    stop``, computed on one new array; its arguments are left untouched."""
    mean = start * rolling_mean
    mean += raw_sum
    mean /= stop
    return mean


# --- where the tasks run --------------------------------------------------------

def _run_locally(map_nodes, problem, draw, waves, depth, x_tt, counted, initial,
                 progress):
    """Waves one after the other; ``map_nodes(tasks)`` runs ``fn(*args)`` tasks.

    ``initial`` are the arguments of :meth:`WalkState.start`.
    """
    state = WalkState.start(*initial)
    for start, stop in waves:
        tasks = [(walk_node, (problem, draw, lo, hi, x_tt[lo:hi], counted[lo:hi],
                              state.rolling_mean))
                 for lo, hi in tree_nodes(start, stop, depth)]
        state = end_wave(state, start, stop, depth, *map_nodes(tasks))
        progress.update(stop - start)
    return state


# Nodes of a wave per Dask worker, each pinned loosely to a worker in turn:
# more than one lets an idle worker take a busy one's node.
DASK_NODES_PER_WORKER = 1


def _scatter_directly(client):
    """True when the scheduler runs in this process (a LocalCluster's): data
    then go to a worker directly, which the others copy, not through the
    scheduler, which would hold another copy in the client's memory (n =
    1e7: 80 MB an array). Else None: Dask's default (the workers of a
    remote cluster may not be reachable from the client)."""
    cluster = getattr(client, "cluster", None)
    return True if getattr(cluster, "scheduler", None) is not None else None


def _run_on_dask(client, box, draw, waves, x_tt, counted, initial, progress):
    """Waves on a Dask cluster (see :func:`_walk_on_workers`), walked again
    from the first wave, with the same values, when a lost worker took data
    the walk cannot recompute, at most ``LOST_WORKER_RETRIES`` times.

    ``box``: a list holding the problem, emptied here: the client keeps the
    problem as the workers receive it (packed; n = 1e7: about 90 MB, not
    320), to send it again after a loss.
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
                    "worker, about 39 bytes a party) or give the workers more "
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


def _gather_from(client, futures, workers):
    """``client.gather(futures)``, raising :class:`WorkerLeftError` when
    one of ``workers`` leaves before the futures are done (a killed worker's
    tasks are cancelled, since they lose the data they were sent; a retired
    worker's are not, and wait in Dask's 'no-worker' state).

    It waits on the futures' callbacks, not on ``distributed.wait`` with a
    timeout: each timeout's error held the walk's frames in a reference
    cycle until a full garbage collection, a wave's gathered sums with them
    (n = 1e7: the client's peak 1,568 MiB against 1,270).
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
    again, 90 MB at n = 1e7, both cost memory and left the problem on one
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
        draw = draw.with_orders(np.int32)  # a worker's walk: 4 bytes a party less
    # Scattered in lists: a bare tuple (WalkProblem) would be split up.
    try:
        sent = [client.scatter([problem, draw], workers=[worker], hash=False,
                               direct=_scatter_directly(client))
                for worker in workers]
    except (OSError, TimeoutError):
        # A worker lost while it receives its copy (a closed connection), or
        # before (Dask waits for it, then finds no valid worker).
        raise WorkerLeftError("a Dask worker of the walk left the cluster") from None

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
            # two copies of the means: n = 1e7, 160 MB more at its peak).
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
            # next wave's walk: n = 1e7, 160 MB a worker).
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


class _CompileClock(numba_event.Listener):
    """Seconds numba spent compiling in this process (outermost compilations)."""

    def __init__(self):
        self.depth, self.seconds, self.reported = 0, 0.0, False

    def on_start(self, event):
        if self.depth == 0:
            self.started = time.perf_counter()
        self.depth += 1

    def on_end(self, event):
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.perf_counter() - self.started


# Installed at import: the first fit compiles before the walk starts (its
# learning-rate search runs the same kernel).
COMPILE_CLOCK = _CompileClock()
numba_event.register("numba:compile", COMPILE_CLOCK)


class _Progress:
    """Permutations done, per second and time left: tqdm if installed.

    The first time numba compiles in the process, one line says how long
    it took (the first fit after installing pays it; later ones load the
    kernels from numba's cache).
    """

    def __init__(self, total, verbose):
        self.total, self.done, self.bar = total, 0, None
        self.enabled = bool(verbose)
        self.started = self.last = time.perf_counter()
        if self.enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, unit="perm", desc="DPDataValuator")

    def _print(self, line):
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    def update(self, n):
        if not self.enabled:
            return
        if COMPILE_CLOCK.seconds and not COMPILE_CLOCK.reported:
            COMPILE_CLOCK.reported = True
            self._print(f"[DPDataValuator] numba compiled the kernels in "
                        f"{COMPILE_CLOCK.seconds:.1f} s (once per process; "
                        f"cached on disk for the next ones)")
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.perf_counter()
        if now - self.last >= 1.0 or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.started, 1e-9)
            self._print(f"[DPDataValuator] {self.done}/{self.total} permutations, "
                        f"{rate:.1f}/s, ETA {(self.total - self.done) / rate:.1f}s")

    def restart(self):
        """The walk starts again from its first permutation (a lost worker)."""
        if self.enabled:
            self._print("[DPDataValuator] a Dask worker was lost with the walk's "
                        "data: walking again from the first permutation")
        self.done = 0
        if self.bar is not None:
            self.bar.reset()

    def close(self):
        if self.bar is not None:
            self.bar.close()


# Below this many multiply-adds a permutation (``work_per_permutation``),
# a fit runs on one thread: the Python between kernels (it holds the GIL)
# and the hand-offs cost more than a second core gives. Measured: the
# default walk of the Table 8 job (about 9e4) ran at 0.96-0.99x on two
# threads, the full-space one (about 5e5) at 1.5x.
MIN_PARALLEL_WORK = 2.5e5


@lru_cache(maxsize=None)
def _blas_controller():
    """The process's BLAS libraries (finding them takes ~6 ms, once)."""
    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS (OpenBLAS, MKL) runs on one thread.

    For the small BLAS calls a fit makes before its walk (scipy's L-BFGS):
    OpenBLAS's threads spin for about 0.1 s after a threaded call, and on two
    cores they took a walk thread's core (n=8000, k=64: 1.54x on two
    threads with them, 1.86x without).
    """
    return _blas_controller().limit(limits=1, user_api="blas")


def _threads_map(pool):
    """``map_nodes`` for a thread pool: this thread walks a wave's first node
    itself (one hand-off less a wave), the pool the others."""
    def map_nodes(tasks):
        others = [pool.submit(fn, *a) for fn, a in tasks[1:]]
        (fn, a), = tasks[:1]
        return [fn(*a)] + [future.result() for future in others]

    return map_nodes


def run_walks(problem, draw, *, x_tt, use_rolling, counted, batch_permutations,
              n_jobs=None, verbose=0, client=None):
    """Walk all permutations in waves; return each party's marginal statistics.

    ``problem`` is a walk problem (see the module's docstring); ``draw``
    follows :class:`SeededDraws`' protocol; ``x_tt[t]`` is the weight of
    permutation ``t``'s fresh release; ``counted[t]`` whether its marginals
    count (past the burn-in). Returns the mean and the sum of squared
    deviations (``marginal_m2``) of each party's counted marginals, their
    number, every permutation's final utility and, with ``use_rolling``,
    each party's mean of all its raw releases (``rolling_mean``, else None).
    ``client``: a distributed
    Client to walk on (for Dask input, :func:`skdpval.walks._dask.walk_client`),
    whatever ``n_jobs`` and the joblib backend say.

    ``problem`` may come in a one-element list, which this empties: on Dask
    the client then frees its copy once it is sent (n = 1e7 parties: 320
    MB).
    """
    box = problem if isinstance(problem, list) else [problem]
    problem = box[0]
    n_permutations = len(x_tt)
    x_tt = np.asarray(x_tt, dtype=np.float64)
    counted = np.asarray(counted, dtype=bool)
    waves = [(start, min(start + batch_permutations, n_permutations))
             for start in range(0, n_permutations, batch_permutations)]
    initial = (problem.n_parties, problem.release_shape if use_rolling else None,
               n_permutations)
    n_workers = max(1, effective_n_jobs(n_jobs))
    backend, _ = get_active_backend(prefer="threads")
    if isinstance(backend, ThreadingBackend) and (
            problem.work_per_permutation < MIN_PARALLEL_WORK):
        n_workers = 1  # the values do not depend on it
    if client is not None:
        n_workers = len(client.scheduler_info()["workers"])
    depth = math.ceil(math.log2(max(n_workers, 1)))
    progress = _Progress(n_permutations, verbose)
    if client is None and type(backend).__name__ == "DaskDistributedBackend":
        client = backend.client
    if client is not None:
        del problem
        state = _run_on_dask(client, box, draw, waves, x_tt, counted, initial,
                             progress)
        progress.close()
        return _walk_result(state, initial[0])
    args = (problem, draw, waves, depth, x_tt, counted, initial, progress)
    if n_workers == 1 or isinstance(backend, SequentialBackend):
        state = _run_locally(lambda tasks: [fn(*a) for fn, a in tasks], *args)
    elif isinstance(backend, ThreadingBackend):
        with ThreadPoolExecutor(n_workers - 1, thread_name_prefix="skdpval") as pool:
            state = _run_locally(_threads_map(pool), *args)
    else:
        with Parallel(n_jobs=n_jobs) as parallel:
            state = _run_locally(
                lambda tasks: parallel(delayed(fn)(*a) for fn, a in tasks), *args)
    progress.close()
    return _walk_result(state, problem.n_parties)


def _walk_result(state, n_parties):
    counted_sums = state.counted
    mean = (np.full(n_parties, np.nan) if counted_sums.mean is None
            else counted_sums.mean)
    m2 = np.zeros(n_parties) if counted_sums.m2 is None else counted_sums.m2
    return WalkResult(mean, m2, counted_sums.n_counted, state.end_utility,
                      state.rolling_mean)
