"""The walk's public orders (skdpval.kernels._orders) against a plain-Python reference."""

import itertools

import numpy as np
from reference import xoshiro_permutation
from scipy.stats import chisquare

from skdpval.kernels._orders import permutations
from skdpval.walks._waves import stream_words


def test_orders_match_the_reference_generator():
    words = stream_words(np.random.SeedSequence(7), 20)
    words[0] = 0  # xoshiro's forbidden all-zero state is mended the same way
    for n in (1, 2, 3, 17, 300):
        got = permutations(words, n)
        expected = [xoshiro_permutation(w, n) for w in words]
        np.testing.assert_array_equal(got, expected)
        assert all(sorted(row) == list(range(n)) for row in got)


def test_orders_are_uniform():
    """All 24 orders of 4 parties equally often over 24,000 streams."""
    orders = permutations(stream_words(np.random.SeedSequence(3), 24_000), 4)
    index = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.bincount([index[tuple(row)] for row in orders], minlength=24)
    assert chisquare(counts).pvalue > 1e-4
    # Position of party 0 is uniform too, over a larger n.
    where = np.argmax(permutations(stream_words(np.random.SeedSequence(4), 20_000),
                                   10) == 0, axis=1)
    assert chisquare(np.bincount(where, minlength=10)).pvalue > 1e-4


def test_orders_depend_only_on_their_own_stream():
    words = stream_words(np.random.SeedSequence(5), 8)
    np.testing.assert_array_equal(permutations(words, 50)[3:5],
                                  permutations(words[3:5], 50))
