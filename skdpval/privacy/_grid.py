"""The grid every release lies on, and the noise stds its sampler can draw.

A release is ``gamma * (a + m)``: ``a = rint(stat / gamma)`` is the clipped
statistic on the grid ``gamma = sensitivity * 2**-j`` and ``m`` integer noise
(:mod:`skdpval.privacy._secure_noise`); the double released is ``fl(gamma *
n)`` for the integer ``n = a + m``, an injective function of ``n`` that does
not depend on the data.
"""

import math

import numpy as np


# ``(gamma, bound)`` of no grid: releases ``value + noise`` (tests' own noise).
NO_GRID = (0.0, np.inf)


def grid_sensitivity(dimension, zero_neighbour=True, finer=0):
    """``(j, Delta)``: the grid exponent and the L2 sensitivity of the rounded
    statistic ``a = rint(v / gamma)`` in grid units, ``gamma = S 2**-j``, for
    statistics whose neighbours differ by at most ``S`` in L2.

    ``zero_neighbour`` (zero-out adjacency, ``||v|| <= S`` and the
    neighbour's ``v' = 0``): ``||a|| <= ||v|| / gamma + sqrt(d) / 2``; with
    one coordinate ``a`` is clamped to ``[-2**j, 2**j]`` and ``Delta = 2**j``
    exactly, and ``j = 6`` keeps the rounding (std ``gamma / sqrt(12)``) far
    below any noise. Otherwise (any two statistics ``S`` apart) each
    coordinate's rounding moves the difference by up to 1: ``Delta = 2**j +
    sqrt(d)``. ``j`` keeps the padding below ``2**-8`` of ``2**j``; ``2**-20``
    covers a clipped norm's overshoot of ``S`` by a few ulps (relative 1e-15).
    ``finer`` more bits make the grid finer (when the noise is small
    against ``S``).
    """
    if dimension <= 1 and zero_neighbour:
        return 6 + finer, float(2**(6 + finer))
    pad = math.sqrt(dimension) * (0.5 if zero_neighbour else 1.0)
    j = max(6, int(math.ceil(math.log2(256.0 * pad)))) + finer
    return j, 2.0**j + pad + 2.0**-20


class Grid:
    """The grid of a release: ``gamma``, the clamp ``2**j`` and the padded
    sensitivity in grid units (:func:`grid_sensitivity`), for statistics of
    sensitivity ``clip`` in ``dimension`` coordinates."""

    def __init__(self, clip, dimension, zero_neighbour=True, finer=0):
        self.j, self.sensitivity = grid_sensitivity(dimension, zero_neighbour, finer)
        self.gamma = math.ldexp(float(clip), -self.j)
        self.bound = float(2**self.j) if zero_neighbour else np.inf
        self.dimension = int(dimension)

    @property
    def padding(self):
        """Sensitivity / ``2**j``: the factor the rounding adds to ``clip``."""
        return self.sensitivity / 2.0**self.j


def check_noise_std(noise_std, grid, parameters):
    """Refuse a requested noise std the sampler cannot draw on ``grid``.

    It draws integers of ``noise_std / gamma``: both must be positive normal
    floats, or a release would carry no noise (``noise_multiplier`` and a
    clip norm, each accepted alone, can have a product that underflows).
    ``parameters`` names what set the std, for the message.
    """
    tiny = np.finfo(np.float64).tiny
    with np.errstate(over="ignore", under="ignore"):
        ratio = noise_std / grid.gamma if grid.gamma > 0 else np.inf
    if not (noise_std >= tiny and grid.gamma >= tiny and tiny <= ratio < np.inf):
        raise ValueError(
            f"The noise std {float(noise_std)!r} (from {parameters}; grid step "
            f"{float(grid.gamma)!r}) is outside the floats the sampler draws on "
            f"its grid: both, and their ratio, must be finite and at least "
            f"{float(tiny)!r}. Give a larger noise_multiplier or clip norm.")
    return noise_std
