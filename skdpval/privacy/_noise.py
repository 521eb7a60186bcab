"""Noise policies: which combination of a party's releases updates the model.

At permutation ``t`` every party releases ``g~_t = clip(g) + N(0, s^2 I)``. The
model is updated with ``x_tt * g~_t + (1 - x_tt) * mean(g~_1 .. g~_{t-1})``,
a lower-triangular post-processing of the releases (the seed paper's X):

- ``"iid"``: ``x_tt = 1``, the release itself.
- ``"correlated"`` (the paper's X*, eq. 4): the running mean of the party's
  raw releases. With waves of ``B`` permutations (``skdpval.walks._runner``), a
  permutation of the wave starting after release ``t0`` uses the mean of the
  ``t0`` earlier releases and its own: ``x_tt = 1 / (t0 + 1)``, noise variance
  ``s^2 / (t0 + 1)``; with ``B = 1`` this is exactly X*, ``x_tt = 1/t``.
- ``"none"``: no noise at all (no privacy), ``x_tt = 1``.
- an array of length ``k`` or a callable ``f(t, k)`` (``t = 1 .. k`` as an
  integer array) giving ``x_tt`` in ``(0, 1]``.

The burn-in ``q`` (the paper's Y*) leaves the marginals of the first
``t <= q k`` permutations uncounted. Post-processing never changes privacy.

The noise itself must be secret: knowing it, anyone can subtract it. It is
drawn from ChaCha20 keyed with 32 bytes of fresh OS entropy
(:mod:`skdpval.privacy._secure_noise`), never from ``random_state``, which seeds
only the public randomness (permutations, splits). ``noise_seed`` opts in
to reproducible noise. Every release lies on a grid and its noise is an
integer (a rounded Gaussian, or a discrete Laplace), so floating point
leaks nothing (:mod:`skdpval.privacy._secure_noise`).
"""

import numpy as np

from ._discrete_laplace import discrete_laplace
from ._secure_noise import rounded_gaussian_table, stream_nonce, walk_noise


def noise_schedule(noise, n_permutations, batch_permutations=1):
    """Return ``(x_tt, use_rolling, add_noise)`` for ``t = 1 .. k``.

    ``use_rolling`` is False when every ``x_tt`` is 1 (the rolling means are
    then never read, so they are not kept).
    """
    k = n_permutations
    t = np.arange(1, k + 1)
    if isinstance(noise, str):
        if noise == "none":
            return np.ones(k), False, False
        if noise == "iid":
            return np.ones(k), False, True
        if noise == "correlated":
            releases_before_wave = (t - 1) // batch_permutations * batch_permutations
            return 1.0 / (releases_before_wave + 1), True, True
        raise ValueError(
            "noise must be 'correlated', 'iid', 'none', an array of x_tt or a "
            f"callable; got {noise!r}.")
    x_tt = noise(t, k) if callable(noise) else noise
    x_tt = np.asarray(x_tt, dtype=np.float64)
    if x_tt.shape != (k,):
        raise ValueError(
            f"noise must give one x_tt per permutation: shape ({k},) for "
            f"n_permutations={k}, got shape {x_tt.shape}.")
    if not np.all(np.isfinite(x_tt)) or np.any(x_tt <= 0) or np.any(x_tt > 1):
        raise ValueError("noise: every x_tt must lie in (0, 1].")
    return x_tt, bool(np.any(x_tt != 1.0)), True


def counted_permutations(q, n_permutations):
    """Boolean mask of the permutations past the burn-in: ``t > q k``."""
    t = np.arange(1, n_permutations + 1)
    return t > q * n_permutations


def released_noise_std(noise_std, x_tt, counted, batch_permutations=1):
    """Largest per-coordinate noise std of a released update in a counted walk.

    Permutation ``t`` (1-based) of a wave starting after release ``t0``
    releases ``x_tt g~_t + (1 - x_tt) mean(g~_1 .. g~_t0)``, whose noise
    variance is ``x_tt^2 s^2 + (1 - x_tt)^2 s^2 / t0`` (no mean when t0 = 0).
    """
    t = np.arange(1, len(x_tt) + 1)
    before = (t - 1) // batch_permutations * batch_permutations
    variance = x_tt**2 + (1 - x_tt) ** 2 / np.maximum(before, 1) * (before > 0)
    return float(noise_std * np.sqrt(variance[counted].max()))


def unseen_noise_factor(x_tt, counted, batch_permutations=1):
    """The share of ``s^2`` in a value's variance that the spread of its marginals misses.

    Permutation ``t`` of a wave starting after ``t0`` releases uses the
    update ``u_t = x_tt g~_t + (1 - x_tt) mean(g~_1 .. g~_t0)`` (no mean
    when ``t0 = 0``), whose noise is ``W[t] . e`` for the releases' i.i.d.
    noise ``e``: two updates' noise has covariance ``s^2 C``, ``C[t, t'] =
    W[t] . W[t']``. To first order a party's marginal is ``a . u_t`` plus a
    term free of its noise. Over the ``K`` counted permutations the noise
    part of the mean of its marginals has variance ``|a|^2 s^2 1'C1 /
    K^2``, of which the spread of the marginals (``marginal_var_ / K``,
    ddof=0) sees ``|a|^2 s^2 (tr C / K - 1'C1 / K^2) / K``. Returns the
    rest over ``|a|^2 s^2``: ``1'C1 / K^2 (1 + 1 / K) - tr C / K^2``.
    Independent updates (``x_tt = 1``) give ``1 / K^2``: the spread sees
    all but the ddof. Running means give about ``1 / t0``: nearly one
    release's noise averaged once, the same in every counted permutation.
    """
    x_tt = np.asarray(x_tt, dtype=np.float64)
    counted = np.asarray(counted, dtype=bool)
    n_counted = int(counted.sum())
    if n_counted == 0:
        return np.nan
    k = len(x_tt)
    t = np.arange(k)
    before = t // batch_permutations * batch_permutations
    # mean_weight[i]: release i's weight in the mean counted update, whose
    # squared norm is 1'C1 / K^2: its fresh share, plus 1 / t0 of the rest
    # of every counted update whose mean holds it (i < t0).
    share = np.where(counted & (before > 0), (1 - x_tt) / np.maximum(before, 1), 0.0)
    held = np.zeros(k + 1)
    np.add.at(held, before, share)
    mean_weight = (np.where(counted, x_tt, 0.0)
                   + np.cumsum(held[::-1])[::-1][1:]) / n_counted
    between = float(mean_weight @ mean_weight)
    trace = float(np.sum(np.where(counted, x_tt**2 + share**2 * before, 0.0)))
    return between * (1 + 1 / n_counted) - trace / n_counted**2


def gaussian_noise(key, kind, lo, hi, std, out):
    """Fill ``out[i]`` (flat, ``i < hi - lo``) with rounded Gaussian integers
    ``round(N(0, std^2))`` (as doubles; ``std`` in grid units) from the
    ChaCha20 stream ``(kind, lo + i)`` of the secret ``key``; return ``out``.

    Every Gaussian release draws its noise here: one place to read, and one
    place for the audits to halve.
    """
    walk_noise(key, kind, lo, hi, rounded_gaussian_table(float(std)), out)
    return out


def laplace_noise(key, kind, scale, size):
    """``size`` exact draws of the discrete Laplace of rational ``scale``
    (grid units, a Fraction) from the stream ``(kind, 0)`` of ``key``, as int64.

    Every Laplace release draws its noise here (the audits halve it here).
    """
    return discrete_laplace(key, stream_nonce(kind), scale, size)


def noise_source(noise_seed, has_noise=True):
    """What ``privacy_report_["noise_source"]`` says about the noise."""
    if not has_noise:
        return "none: no noise is added"
    if noise_seed is None:
        return ("ChaCha20 keyed with 32 bytes of fresh OS entropy, independent "
                "of random_state")
    return ("noise_seed: reproducible noise; the guarantee holds only while "
            "that seed is secret and serves this one fit (another fit with the "
            "same seed draws the same noise, which cancels between the two)")
