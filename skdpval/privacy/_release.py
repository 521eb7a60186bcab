"""The release arithmetic: clipping, the grid, and a walk's release step.

Every noisy release of skdpval is computed here, in numba, and nowhere else:

- :func:`clip_l2`: a statistic scaled to L2 norm at most the clip (what
  bounds its sensitivity);
- :func:`release_on_grid` (:func:`releases_on_grid` for an array): the
  clipped statistic on the grid plus its integer noise, times the grid
  (:mod:`skdpval.privacy._secure_noise`);
- :func:`release_step`: a party's release inside a walk, from its clipped
  statistic, in place: on the grid with its noise, at record level divided
  by its size, and combined with its mean of earlier releases (the noise
  policy: post-processing).

A walk kernel releases from an opaque *release stream*
(:func:`release_stream`): the tuple ``(noise, gamma, bound)`` of the integer
noise of its walks' parties, ``(n_walks, n_parties, dimension)`` (as
doubles; an empty array: no noise), and the grid's step and clamp. The
privacy layer builds it (the mechanism's draws,
:meth:`skdpval.privacy._mechanism.NoiseStream.draw`); a kernel hands it, with
the walk and the party, to :func:`release_step` and never reads it. With a
rolling mean the release step writes each raw release back into the
stream's slot, where the walk runner reads them (they are public).

The kernels' conventions hold here (:mod:`skdpval.kernels._linear`): no
reference counting, no allocation, the walk's helpers inlined by LLVM.
"""

import math

import numpy as np
from numba import njit

from ._grid import NO_GRID

# The kernels' compilation options (see skdpval/kernels/_math.py).
_jit = dict(cache=True, nogil=True, error_model="numpy", no_cfunc_wrapper=True,
            _nrt=False)
_scalar = dict(_jit, forceinline=True, no_cpython_wrapper=True)
_scalar_py = dict(_jit, forceinline=True)


@njit(**_scalar_py)
def clip_l2(g, clip_norm):
    """Scale ``g`` (2-D) in place to L2 norm at most ``clip_norm``; return the old norm.

    A gradient that is not finite (an overflow in a private row) is set to
    zero: its release is then pure noise, the zero-out slot, and no infinity
    or NaN from a private row reaches the walk.
    """
    n_outputs, n_columns = g.shape
    sq = 0.0
    for k in range(n_outputs):
        for c in range(n_columns):
            sq += g[k, c] * g[k, c]
    norm = np.sqrt(sq)
    if norm == np.inf:  # the squares overflowed: measure in units of the largest
        largest = 0.0
        for k in range(n_outputs):
            for c in range(n_columns):
                size = abs(g[k, c])
                largest = size if size > largest else largest
        if largest < np.inf:
            sq = 0.0
            for k in range(n_outputs):
                for c in range(n_columns):
                    ratio = g[k, c] / largest
                    sq += ratio * ratio
            norm = largest * np.sqrt(sq)
    if not norm < np.inf:  # NaN or infinite
        for k in range(n_outputs):
            for c in range(n_columns):
                g[k, c] = 0.0
    else:
        # Scaled by 1 when within the norm (g * 1.0 is g): whether a release
        # is clipped is the data's, and a mispredicted branch stalls the walks
        # that step together.
        scale = clip_norm / norm if norm > clip_norm else 1.0
        for k in range(n_outputs):
            for c in range(n_columns):
                g[k, c] *= scale
    return norm


# Compiled on its own, not inlined into the walks (inlined, they ran no faster).
@njit(cache=True, nogil=True)
def release_on_grid(value, m, gamma, bound):
    """``gamma * (a + m)``, ``a = rint(value / gamma)`` clamped to ``[-bound, bound]``.

    The integer ``a + m`` is formed first, so the double depends on it alone;
    adding ``0.0`` turns a zero release's ``-0.0`` (the sign of a small
    negative statistic, rounded to ``a = -0.0``, with ``m = -0.0``) into
    ``+0.0``. ``gamma = 0`` is no grid: ``value + m`` (for tests that pass
    their own noise; the estimators always release on a grid).
    """
    if gamma == 0.0:
        return value + m
    a = np.rint(value / gamma)
    if a > bound:
        a = bound
    elif a < -bound:
        a = -bound
    return gamma * (a + m) + 0.0


@njit(cache=True, nogil=True)
def releases_on_grid(values, m, gamma, bound, out):
    """``out[i]`` <- :func:`release_on_grid` of ``values[i]`` with noise ``m[i]``."""
    for i in range(values.shape[0]):
        out[i] = release_on_grid(values[i], m[i], gamma, bound)
    return out


@njit(**_scalar)
def release_step(update, stream, b, j, record_level, size, use_rolling, fresh,
                 rolling_mean):
    """Party ``j``'s release in walk ``b`` from its clipped statistic ``update``
    (1-D), in place: on the grid plus its noise from ``stream``
    (:func:`release_on_grid`; no noise when the stream has none); with
    ``record_level`` divided by the party's ``size`` (the mean of its
    records: post-processing); with ``use_rolling`` ``fresh * release + (1 -
    fresh) *`` its mean of earlier releases ``rolling_mean[j]``, the raw
    release handed back in the stream's slot for the next mean. Every walk
    releases here."""
    noise, gamma, bound = stream
    m = update.shape[0]
    if noise.shape[0] > 0:
        for i in range(m):
            update[i] = release_on_grid(update[i], noise[b, j, i], gamma, bound)
    if record_level:
        # The mean of the party's records (post-processing).
        inverse = 1.0 / size
        for i in range(m):
            update[i] *= inverse
    if use_rolling:
        for i in range(m):
            raw = update[i]
            noise[b, j, i] = raw
            update[i] = fresh * raw + (1.0 - fresh) * rolling_mean[j, i]


def release_stream(noise=None, grid=NO_GRID):
    """The release stream of a walk (see the module docstring) from ``noise``
    ``(n_walks, n_parties, ...)`` (float64, C-contiguous, writeable: with a
    rolling mean the release step writes raw releases into it), viewed as
    ``(n_walks, n_parties, dimension)``, and ``grid`` (a
    :class:`~skdpval.privacy._grid.Grid`, or ``(gamma, bound)``:
    ``NO_GRID`` releases ``value + noise``, for tests that pass their own
    noise). ``noise`` None: no noise."""
    gamma, bound = (grid.gamma, grid.bound) if hasattr(grid, "gamma") else grid
    if noise is None:
        return np.empty((0, 1, 1)), float(gamma), float(bound)
    flags = noise.flags
    if not (noise.dtype == np.float64 and flags.c_contiguous and flags.writeable):
        raise ValueError("noise must be a writeable C-contiguous float64 array")
    if noise.ndim != 3:  # viewed as (n_walks, n_parties, dimension)
        shape = noise.shape
        noise = noise.reshape(shape[0], shape[1], math.prod(shape[2:]))
    return noise, float(gamma), float(bound)


def walk_stream(stream, use_rolling):
    """``stream`` as a walk kernel takes it (None: no noise). A rolling mean
    needs noise: the release step writes each raw release into the stream."""
    if stream is None:
        stream = release_stream()
    if use_rolling and stream[0].shape[0] == 0:
        raise ValueError("a rolling mean needs noise to roll")
    return stream
