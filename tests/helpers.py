"""Test helpers."""

from skdpval.privacy._release import release_stream


class FixedDraws:
    """Given permutations and noise, served as the walk draws them."""

    def __init__(self, permutations, noise=None):
        self.permutations, self.noise = permutations, noise
        self.has_noise = noise is not None

    def __call__(self, lo, hi, releases):
        if not self.has_noise:
            return self.permutations[lo:hi].copy(), release_stream()
        releases[...] = self.noise[lo:hi]
        return self.permutations[lo:hi].copy(), release_stream(releases)


def diffprivlib_models():
    """``diffprivlib.models``, importable on scikit-learn 1.9.

    diffprivlib 0.6 imports ``DOUBLE`` and ``DTYPE`` from ``sklearn.tree._tree``
    for its random forest; scikit-learn 1.9 dropped them. They were
    ``np.float64`` and ``np.float32``; nothing the tests use reads them.
    """
    import numpy as np
    import sklearn.tree._tree as tree

    tree.DOUBLE = getattr(tree, "DOUBLE", np.float64)
    tree.DTYPE = getattr(tree, "DTYPE", np.float32)
    import diffprivlib.models

    return diffprivlib.models
