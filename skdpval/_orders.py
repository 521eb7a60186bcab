"""The walk's public orders: uniform random permutations, one stream each.

Permutation ``t`` is a Fisher-Yates shuffle driven by xoshiro256** (Blackman
and Vigna) whose 256-bit state is the ``t``-th row of ``stream_words`` from
the public ``random_state`` (a SeedSequence). Each permutation having its
own stream, the orders do not depend on how permutations are grouped or
scheduled. Drawn here rather than by numpy's ``Generator.permutation``:
setting a Generator's state and shuffling cost ~5.6 us a permutation of 300
parties, this kernel ~1 us for a whole chunk's call plus ~1.5 ns a swap.

Only public randomness is drawn here; the noise comes from numpy's
Generators (:mod:`skdpval._walk`).
"""

import numpy as np
from numba import njit

from ._kernels import _jit


@njit(**_jit)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(**_jit)
def _next(s):
    """xoshiro256**: the next 64-bit output of state ``s`` (4 uint64, updated)."""
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@njit(**_jit)
def _below(s, bound):
    """A uniform integer in ``[0, bound)`` (bound >= 1), by rejection: the
    top bits of an output, as many as ``bound - 1`` needs, until below."""
    top = bound - 1
    bits = 0
    while top > 0:
        bits += 1
        top >>= 1
    if bits == 0:
        return 0
    while True:
        x = np.int64(_next(s) >> np.uint64(64 - bits))
        if x < bound:
            return x


@njit(**_jit)
def permutations_from_words(words, state, out):
    """``out[t]``: a uniform permutation of ``0 .. n - 1`` from ``words[t]``.

    ``state`` is a 4-word buffer. Fisher-Yates, from the last position down:
    position ``i`` swaps with a uniform ``j <= i``.
    """
    n_walks, n = out.shape
    for t in range(n_walks):
        for w in range(4):
            state[w] = words[t, w]
        if state[0] == 0 and state[1] == 0 and state[2] == 0 and state[3] == 0:
            state[0] = 1  # xoshiro's one forbidden state (odds 2^-256)
        row = out[t]
        for i in range(n):
            row[i] = i
        for i in range(n - 1, 0, -1):
            j = _below(state, i + 1)
            swap = row[i]
            row[i] = row[j]
            row[j] = swap


def permutations(words, n):
    """The permutations of ``n`` parties of the streams ``words`` ``(c, 4)``."""
    out = np.empty((len(words), n), dtype=np.int64)
    permutations_from_words(np.ascontiguousarray(words, dtype=np.uint64),
                            np.empty(4, dtype=np.uint64), out)
    return out
