"""A walked chunk's reduction over its tree, in place, in one kernel call.

The permutations a node walks in one call are summed over the wave's tree
(halves, the larger first; :func:`skdpval._walk.reduce_tree`) with the very
operations of :func:`skdpval._walk.merge_sums`, in the same order, so that
the sums are bit-identical to merging them one by one in Python (which cost
~4 us a permutation): the raw releases add up, and the counted marginals
merge with Chan, Golub and LeVeque's pairwise update.
"""

import numpy as np
from numba import njit

from ._kernels import _jit


@njit(**_jit)
def _merge_rows(raw, means, m2, counts, lo, hi):
    """Reduce rows ``lo .. hi - 1`` into row ``lo``; return their count."""
    if hi - lo == 1:
        return counts[lo]
    mid = lo + (hi - lo + 1) // 2
    n_left = _merge_rows(raw, means, m2, counts, lo, mid)
    n_right = _merge_rows(raw, means, m2, counts, mid, hi)
    for i in range(raw.shape[1]):
        raw[lo, i] += raw[mid, i]
    n = n_left + n_right
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
    return n


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
    n_counted = _merge_rows(raw_rows, marginals, m2,
                            np.asarray(counted, dtype=np.int64), 0, n_walks)
    return (None if raw is None else raw[0], int(n_counted),
            marginals[0] if n_counted else None, m2[0] if n_counted else None)
