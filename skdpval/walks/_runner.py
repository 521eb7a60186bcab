"""Running the walk: waves of permutations, in parallel, bit-reproducibly.

A *walk problem* is any picklable object with ``n_parties``,
``release_shape`` (the shape of one party's release, e.g. ``(n_outputs,
n_columns)`` for the full-space walk) and a method ``walk(permutations,
stream, x_tt, rolling_mean)`` returning ``(marginals, end_utility)`` (see
:func:`skdpval.kernels._linear.walk`; ``stream`` is the privacy layer's
release stream, :func:`skdpval.privacy._release.release_stream`): a model
family's (:mod:`skdpval.families`).

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
  costs more than a small wave's work);
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


import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import effective_n_jobs
from joblib.parallel import SequentialBackend, ThreadingBackend, get_active_backend
from numba.core import event as numba_event
from sklearn.utils.parallel import Parallel, delayed

from ..kernels._reduction import tree_nodes
from ._cluster import _run_on_dask
from ._waves import WalkResult, WalkState, end_wave, walk_node


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
    the client then frees its copy once it is sent.
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
