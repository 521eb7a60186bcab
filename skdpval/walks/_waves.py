"""A walk's waves: the draws of each permutation, a node's walk and the state
between waves, merged over a fixed tree so that values are bit-identical
however the waves are split (:mod:`skdpval.walks._runner` says where the
nodes run)."""

import copy
import math
from collections import namedtuple

import numpy as np

from ..kernels import _orders
from ..privacy._release import release_stream
from ..kernels._reduction import (NodeSums, merge_sums, reduce_tree, reduce_walked,
                                  tree_nodes)

WalkResult = namedtuple("WalkResult", [
    "marginal_mean", "marginal_m2", "n_counted", "end_utility", "rolling_mean"])


def stream_words(seed_sequence, n_streams):
    """The seeds of ``n_streams`` random streams: ``(n_streams, 4)`` uint64 words.

    One call to the SeedSequence for all of them: spawning a child
    SeedSequence and a PCG64 per permutation costs more than the walk of a
    small permutation.
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
    # of a view that spans its whole buffer (one permutation's).
    return node._replace(raw_sum=_own(node.raw_sum), mean=_own(node.mean),
                         m2=_own(node.m2))


def _own(array):
    """``array`` or, if it views part of a larger buffer, a copy (None: None)."""
    if array is None or array.base is None or array.base.size == array.size:
        return array
    return array.copy()


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
# temporary outgrows a block (a worker with little memory holds millions of
# parties).
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


def advanced_mean(rolling_mean, raw_sum, start, stop):
    """The means of releases ``0 .. stop - 1`` from those of ``0 .. start -
    1`` and the sum of the others: ``(start * rolling_mean + raw_sum) /
    stop``, computed on one new array; its arguments are left untouched."""
    mean = start * rolling_mean
    mean += raw_sum
    mean /= stop
    return mean
