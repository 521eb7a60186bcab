"""The walk's public orders: uniform random permutations, one stream each.

Permutation ``t`` is a Fisher-Yates shuffle driven by xoshiro256** (Blackman
and Vigna) whose 256-bit state is the ``t``-th row of ``stream_words`` from
the public ``random_state`` (a SeedSequence). Each permutation having its
own stream, the orders do not depend on how permutations are grouped or
scheduled. Drawn here rather than by numpy's ``Generator.permutation``,
whose state is costly to set for each permutation.

Only public randomness is drawn here; the noise comes from the privacy
layer's ChaCha20 streams (:mod:`skdpval.privacy._secure_noise`).
"""

import numpy as np
from numba import njit

from ._math import _jit


@njit(**_jit)
def permutations_from_words(words, out):
    """``out[t]``: a uniform permutation of ``0 .. n - 1`` from ``words[t]``.

    Fisher-Yates, from the last position down: position ``i`` swaps with a
    uniform ``j <= i``, the top bits of a xoshiro256** output (as many as
    ``i`` needs) drawn until at most ``i``. One function, the generator
    written out in it: each jitted helper would cost compile time.
    """
    n_walks, n = out.shape
    for t in range(n_walks):
        s0, s1, s2, s3 = words[t, 0], words[t, 1], words[t, 2], words[t, 3]
        if s0 == 0 and s1 == 0 and s2 == 0 and s3 == 0:
            s0 = np.uint64(1)  # xoshiro's one forbidden state (odds 2^-256)
        row = out[t]
        for i in range(n):
            row[i] = i
        bits = 0
        for i in range(n - 1, 0, -1):
            while (i >> bits) > 0:  # bits of i, at most (i only decreases)
                bits += 1
            while bits > 0 and (i >> (bits - 1)) == 0:
                bits -= 1
            while True:
                # xoshiro256**: result = rotl(s1 * 5, 7) * 9, then the update.
                x = s1 * np.uint64(5)
                result = ((x << np.uint64(7)) | (x >> np.uint64(57))) * np.uint64(9)
                shifted = s1 << np.uint64(17)
                s2 ^= s0
                s3 ^= s1
                s1 ^= s2
                s0 ^= s3
                s2 ^= shifted
                s3 = (s3 << np.uint64(45)) | (s3 >> np.uint64(19))
                j = np.int64(result >> np.uint64(64 - bits))
                if j <= i:
                    break
            swap = row[i]
            row[i] = row[j]
            row[j] = swap


def permutations(words, n, dtype=np.int64):
    """The permutations of ``n`` parties of the streams ``words`` ``(c, 4)``
    (as ``dtype``: int64, or int32 below 2^31 parties)."""
    out = np.empty((len(words), n), dtype=dtype)
    permutations_from_words(np.ascontiguousarray(words, dtype=np.uint64), out)
    return out
