"""A wave's tree, and the sums merged over it.

A wave of permutations is summed over a fixed binary tree (halves, the
larger first), whatever the number of workers, so that its sums are
bit-identical however it is split (:mod:`skdpval.walks._runner`). Nodes merge with
:func:`merge_sums`, and so do the permutations a node walks in one call
(:func:`reduce_walked`): the raw releases add up, and the counted marginals
merge with Chan, Golub and LeVeque's pairwise update. In numpy, or in place
by one kernel pass (:func:`_merge_in_place`, the same operations in the same
order) where a temporary would cost a worker's memory.
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ._math import _jit

NodeSums = namedtuple("NodeSums", ["raw_sum", "n_counted", "mean", "m2", "end_utility"])
NodeSums.__doc__ = """What a node of a wave's tree sends back.

``raw_sum``: its raw releases summed (None without a rolling mean);
``n_counted``, ``mean``, ``m2``: count, mean and sum of squared deviations
of its counted marginals (``mean`` None when none counts, ``m2`` None for
zeros); ``end_utility``: each permutation's final utility, in order.
"""


def _halves(lo, hi):
    return lo + (hi - lo + 1) // 2


def reduce_tree(lo, hi, depth, leaf, merge, leaf_size=1):
    """Merge ``leaf(a, b)`` over the tree of permutations ``lo .. hi - 1``.

    The tree halves a node (the larger half first) until ``depth`` levels
    or nodes of at most ``leaf_size`` permutations; ``merge(left, right)``
    combines two siblings.
    """
    if depth == 0 or hi - lo <= leaf_size:
        return leaf(lo, hi)
    mid = _halves(lo, hi)
    return merge(reduce_tree(lo, mid, depth - 1, leaf, merge, leaf_size),
                 reduce_tree(mid, hi, depth - 1, leaf, merge, leaf_size))


def tree_nodes(lo, hi, depth):
    """The nodes ``(a, b)`` of the tree of ``lo .. hi - 1`` at ``depth``, in order."""
    return reduce_tree(lo, hi, depth, lambda a, b: [(a, b)], lambda x, y: x + y)


def merge_sums(left, right, in_place=False):
    """Merge two sibling nodes (``left`` first), reusing their arrays if asked
    (``in_place``: both are consumed).

    Counted marginals merge with Chan, Golub and LeVeque's pairwise update;
    the raw releases add up. In place, one kernel pass with no temporary
    array (:func:`_merge_in_place`: the same operations, in the same order;
    numpy's way holds three temporaries of n on a worker).
    """
    if in_place and _contiguous(left) and _contiguous(right) and (
            (left.raw_sum is None) == (right.raw_sum is None)):
        return _merged_in_place(left, right)
    return _merged(left, right, in_place)


def _merged(left, right, in_place):
    """:func:`merge_sums` in numpy (``in_place``: into left's raw sum and
    mean); ``end_utility`` None stays None."""
    raw_sum = left.raw_sum
    if raw_sum is not None:
        raw_sum = (np.add(raw_sum, right.raw_sum, out=raw_sum) if in_place
                   else raw_sum + right.raw_sum)
    n_left, n_right = left.n_counted, right.n_counted
    n = n_left + n_right
    mean, m2 = (left.mean, left.m2) if n_right == 0 else (right.mean, right.m2)
    if n_left and n_right:
        delta = right.mean - left.mean
        mean = (np.add(left.mean, delta * (n_right / n), out=left.mean)
                if in_place else left.mean + delta * (n_right / n))
        m2 = delta * delta * (n_left * n_right / n)
        for part in (left.m2, right.m2):
            if part is not None:
                m2 += part
    end_utility = (None if left.end_utility is None
                   else np.concatenate([left.end_utility, right.end_utility]))
    return NodeSums(raw_sum, n, mean, m2, end_utility)


def _contiguous(node):
    return all(a is None or a.flags.c_contiguous
               for a in (node.raw_sum, node.mean, node.m2))


def _merged_in_place(left, right):
    """:func:`merge_sums` of ``left`` and ``right`` into left's arrays (and a
    new ``m2`` when left has none)."""
    n_left, n_right = left.n_counted, right.n_counted
    n = n_left + n_right
    both = bool(n_left and n_right)
    mean, m2 = (left.mean, left.m2) if n_right == 0 else (right.mean, right.m2)
    if both:
        # Chan's update reads right's mean at a party before it writes m2
        # there: without an m2 of its own, the merged m2 takes right's mean's
        # place (right is consumed: an array of n less).
        mean, m2 = left.mean, (left.m2 if left.m2 is not None
                               else right.m2 if right.m2 is not None
                               else right.mean)
    empty = np.empty(0)
    _merge_in_place(
        empty if left.raw_sum is None else left.raw_sum.reshape(-1),
        empty if right.raw_sum is None else right.raw_sum.reshape(-1),
        left.mean if both else empty, right.mean if both else empty,
        left.m2 if both and left.m2 is not None else empty,
        right.m2 if both and right.m2 is not None else empty,
        m2 if both else empty, n_left, n_right)
    end_utility = np.concatenate([left.end_utility, right.end_utility])
    return NodeSums(left.raw_sum, n, mean, m2, end_utility)


@njit(**_jit)
def _merge_in_place(raw_left, raw_right, mean_left, mean_right, m2_left, m2_right,
                    m2_out, n_left, n_right):
    """``raw_left += raw_right``; with means (both sides count), Chan's
    update of ``mean_left`` and ``m2_out`` (which may be ``m2_left``,
    ``m2_right`` or ``mean_right``: each party is read before written), an
    empty ``m2_left`` or ``m2_right`` standing for zeros: the operations of
    :func:`merge_sums`, element by element, in its order."""
    for i in range(raw_left.shape[0]):
        raw_left[i] += raw_right[i]
    if mean_left.shape[0] == 0:
        return
    n = n_left + n_right
    mean_weight = n_right / n
    m2_weight = n_left * n_right / n
    has_left, has_right = m2_left.shape[0] > 0, m2_right.shape[0] > 0
    for i in range(mean_left.shape[0]):
        delta = mean_right[i] - mean_left[i]
        m2 = delta * delta * m2_weight
        if has_left:
            m2 += m2_left[i]
        if has_right:
            m2 += m2_right[i]
        m2_out[i] = m2
        mean_left[i] = mean_left[i] + delta * mean_weight


def reduce_walked(raw, marginals, counted):
    """The tree sums of walked permutations (:func:`merge_sums` over their
    tree, in numpy, into their arrays).

    ``raw`` ``(c, ...)``: their raw releases (or None); ``marginals``
    ``(c, n_parties)``; ``counted`` ``(c,)``. Returns ``(raw_sum, n_counted,
    mean, m2)``: ``mean`` None when none counts, ``m2`` None for zeros.
    """
    def leaf(a, b):
        n_counted = int(counted[a])
        return NodeSums(None if raw is None else raw[a], n_counted,
                        marginals[a] if n_counted else None, None, None)

    # Silent, as the walk (a diverged walk is reported by the caller).
    with np.errstate(invalid="ignore", over="ignore"):
        node = reduce_tree(0, len(marginals), math.inf, leaf,
                           lambda left, right: _merged(left, right, in_place=True))
    return node.raw_sum, node.n_counted, node.mean, node.m2
