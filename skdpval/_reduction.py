"""A walked chunk's reduction over its tree, in place, in one kernel call.

The permutations a node walks in one call are summed over the wave's tree
(halves, the larger first; :func:`skdpval._walk.reduce_tree`) with the very
operations of :func:`skdpval._walk.merge_sums`, in the same order, so that
the sums are bit-identical to merging them one by one in Python (which cost
~4 us a permutation): the raw releases add up, and the counted marginals
merge with Chan, Golub and LeVeque's pairwise update.
"""

from functools import lru_cache

import numpy as np
from numba import njit

from ._kernels import _jit


@njit(**_jit)
def _merge_rows(raw, means, m2, counts, merges):
    """For each ``(lo, mid)`` of ``merges`` in turn, merge row ``mid`` into row ``lo``."""
    for k in range(merges.shape[0]):
        lo, mid = merges[k, 0], merges[k, 1]
        for i in range(raw.shape[1]):
            raw[lo, i] += raw[mid, i]
        n_left, n_right = counts[lo], counts[mid]
        n = n_left + n_right
        counts[lo] = n
        if n_left == 0 and n_right > 0:
            for i in range(means.shape[1]):
                means[lo, i] = means[mid, i]
                m2[lo, i] = m2[mid, i]
        elif n_left > 0 and n_right > 0:
            mean_weight = n_right / n
            m2_weight = (n_left * n_right) / n
            for i in range(means.shape[1]):
                delta = means[mid, i] - means[lo, i]
                means[lo, i] = means[lo, i] + delta * mean_weight
                m2[lo, i] = delta * delta * m2_weight + m2[lo, i] + m2[mid, i]


@lru_cache(maxsize=64)
def tree_merges(size):
    """The merges ``(lo, mid)`` of the tree of ``0 .. size - 1``, children first."""
    from ._walk import reduce_tree

    merges = reduce_tree(0, size, np.inf, lambda a, b: (a, []),
                         lambda left, right: (left[0], left[1] + right[1]
                                              + [(left[0], right[0])]))[1]
    return np.array(merges, dtype=np.int64).reshape(-1, 2)


def reduce_walked(raw, marginals, counted):
    """The tree sums of walked permutations, left in their first rows.

    ``raw`` ``(c, ...)``: their raw releases (or None); ``marginals``
    ``(c, n_parties)``; ``counted`` ``(c,)``. Returns ``(raw_sum, n_counted,
    mean, m2)``, views of the first rows (``mean`` None when none counts).
    """
    n_walks = len(marginals)
    raw_rows = (np.empty((n_walks, 0)) if raw is None
                else raw.reshape(n_walks, -1))
    m2 = np.zeros_like(marginals)
    counts = np.asarray(counted, dtype=np.int64).copy()
    _merge_rows(raw_rows, marginals, m2, counts, tree_merges(n_walks))
    n_counted = int(counts[0])
    return (None if raw is None else raw[0], n_counted,
            marginals[0] if n_counted else None, m2[0] if n_counted else None)
