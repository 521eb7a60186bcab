"""The discrete Laplace, drawn exactly (Canonne, Kamath and Steinke 2020).

Algorithms 1-2 of C. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian
for differential privacy", NeurIPS 2020, in integer arithmetic on the words
of one ChaCha20 stream (:mod:`skdpval.privacy._secure_noise`): with an integer
L1 sensitivity ``Delta`` and scale ``t`` a release is exactly
``(Delta / t)``-DP.
"""

from fractions import Fraction

import numpy as np

from ._secure_noise import chacha20_block


class WordStream:
    """32-bit words of one ChaCha20 stream, for the exact samplers below."""

    def __init__(self, key, nonce):
        self.key, self.nonce = key, nonce
        self.counter, self.buffer = 0, []
        self._block = np.empty(16, np.uint64)

    def word(self):
        if not self.buffer:
            chacha20_block(self.key, self.counter, self.nonce, self._block)
            self.counter += 1
            self.buffer = [int(w) for w in self._block[::-1]]
        return self.buffer.pop()

    def uniform_below(self, n):
        """Uniform integer in ``[0, n)``, exactly (rejection on whole words)."""
        n_words = max(1, (int(n - 1).bit_length() + 31) // 32)
        span = 1 << (32 * n_words)
        limit = span - span % n
        while True:
            x = 0
            for _ in range(n_words):
                x = (x << 32) | self.word()
            if x < limit:
                return x % n


def _bernoulli(stream, numerator, denominator):
    return stream.uniform_below(denominator) < numerator


def _bernoulli_exp(stream, gamma):
    """Bernoulli(exp(-gamma)) for a rational ``gamma >= 0`` (CKS Algorithm 1)."""
    while gamma > 1:
        if not _bernoulli_exp(stream, Fraction(1)):
            return False
        gamma -= 1
    k = 1
    while _bernoulli(stream, gamma.numerator, gamma.denominator * k):
        k += 1
    return k % 2 == 1


def _discrete_laplace_one(stream, s, t):
    """One draw of P(x) proportional to exp(-|x| s / t): scale ``t / s``,
    integers ``s, t > 0`` (CKS Algorithm 2)."""
    while True:
        u = stream.uniform_below(t)
        if not _bernoulli_exp(stream, Fraction(u, t)):
            continue
        v = 0
        while _bernoulli_exp(stream, Fraction(1)):
            v += 1
        y = (u + t * v) // s
        negative = stream.uniform_below(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_laplace(key, nonce, scale, size):
    """``size`` exact draws of the discrete Laplace of rational ``scale`` (a Fraction):
    ``P(x) proportional to exp(-|x| / scale)``, as int64."""
    scale = Fraction(scale)
    stream = WordStream(key, nonce)
    return np.array([_discrete_laplace_one(stream, scale.denominator, scale.numerator)
                     for _ in range(size)], dtype=np.int64)
