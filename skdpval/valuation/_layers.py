"""Layered Shapley's sampling, its estimate and the bound of its sensitivity
(:class:`~skdpval.LayeredShapleyValuator`)."""

from itertools import combinations

import numpy as np
from scipy.special import gammaln

from ..kernels import _coalitions


# Layers up to this many coalitions are enumerated when sampling would
# draw them all anyway.
_MAX_ENUMERATED = 20000


def layer_sizes(n, alpha, beta, c):
    """``m_k`` and ``w_k = C(n-1, k)`` for the layers ``k = 1 .. n-1``."""
    k = np.arange(1, n)
    m = c**2 / (2 * alpha**2 * k**2) * np.log(2 * n / beta)
    w = np.exp(gammaln(n) - gammaln(k + 1) - gammaln(n - k))
    return m, w


def _layer_draw(m_k, w_k):
    """How layer ``k`` is drawn: ``("all", w_k)``, ``("binomial", (W, pi))``
    coalitions or ``("poisson", lam)`` coalitions, each uniform over the layer."""
    if m_k >= w_k and w_k <= _MAX_ENUMERATED:
        return "all", w_k
    expected = min(m_k, w_k)
    if w_k < 2**62:
        return "binomial", (int(w_k), expected / w_k)
    return "poisson", expected


def sample_layers(others, m, w, rng):
    """The coalitions of one value, layer by layer (``k = 0 .. n-1``).

    ``others`` are the ``n - 1`` other points; the empty coalition is layer 0.
    """
    layers = [[()]]
    for k in range(1, len(others) + 1):
        how, amount = _layer_draw(m[k - 1], w[k - 1])
        if how == "all":
            layers.append(list(combinations(others, k)))
            continue
        count = rng.binomial(*amount) if how == "binomial" else rng.poisson(amount)
        layers.append([tuple(np.sort(rng.choice(others, size=k, replace=False)))
                       for _ in range(count)])
    return layers


def inclusion_probability(n, m, w):
    """Chance that :func:`sample_layers` puts a given other point in a coalition.

    A uniform ``k``-subset of the ``n - 1`` others holds the point with
    chance ``k / (n - 1)``; layers are independent. This is exact for the
    code's sampler (Theorem 3.4's ``ln n / n`` bound is not: the union
    bound over this sampler gives ``H(n-1) / (n-1)``).
    """
    log_missed = 0.0
    for k in range(1, n):
        how, amount = _layer_draw(m[k - 1], w[k - 1])
        if how == "all":
            return 1.0
        hit = k / (n - 1)
        if how == "binomial":
            count, pi = amount
            log_missed += count * np.log1p(-pi * hit)
        else:
            log_missed -= amount * hit
    return float(-np.expm1(log_missed))


def shrink_rows_to_kappa(X, kappa):
    """Rows of ``X`` scaled down so that the norm of ``(x, 1)`` is at most ``kappa``.

    A per-row map (``kappa > 1``): a row with ``|x|^2 + 1 <= kappa^2`` is
    left as it is, any other is multiplied by ``sqrt(kappa^2 - 1) / |x|``.
    Features in [0, 1] stay in [0, 1]. It is applied silently, as
    diffprivlib applies ``data_norm``: a warning about it would tell the
    private rows without noise.
    """
    with np.errstate(over="ignore"):  # a huge kappa: no row is shrunk
        limit = np.sqrt(np.float64(kappa) ** 2 - 1.0)
    norms = np.linalg.norm(X, axis=1)
    over = norms > limit
    factor = np.where(over, limit / np.where(over, norms, 1.0), 1.0)
    return X * factor[:, None]


def appendix_d_sensitivity(n, lipschitz, kappa, lam):
    """Appendix D: ``L^2 kappa^2 / (n lambda) H_{n-1}``.

    The sensitivity uses removal stability (zero-out: the point's loss taken
    out of every coalition it is in); it holds for every draw of coalitions
    (:func:`layered_estimate`), so the Laplace scale is it over epsilon,
    without amplification (set by the privacy mechanism).
    """
    harmonic = np.sum(1.0 / np.arange(1, n))
    with np.errstate(over="ignore"):
        return lipschitz**2 * kappa**2 / (n * lam) * harmonic


def _value_point(i, n, m, w, data, cache, seed):
    """Layered Shapley estimate of point ``i``: ``(value, coalitions evaluated)``."""
    layers = sample_layers(np.delete(np.arange(n), i), m, w,
                           np.random.default_rng(seed))
    needed = {C for coalitions in layers for C in coalitions}
    needed |= {tuple(sorted(C + (i,))) for C in needed}
    missing = [C for C in needed if C not in cache]
    if missing:
        members = np.zeros((len(missing), max(len(C) for C in missing)),
                           dtype=np.int64)
        for row, C in enumerate(missing):
            members[row, :len(C)] = C
        sizes = np.array([len(C) for C in missing])
        values = _coalitions.coalition_values(data["X"], data["y"], data["X_val"],
                                           data["y_val"], members, sizes, data["lam"])
        cache.update(zip(missing, values))
    gain = lambda C: (cache[tuple(sorted(C + (i,)))] - cache[C]
                      if cache[C] >= data["baseline"] else 0.0)
    return layered_estimate(layers, gain, n), len(needed)


def layered_estimate(layers, gain, n):
    """``(1/n) sum_k`` of the mean gain over the coalitions drawn in layer ``k``.

    The mean over the coalitions actually drawn (an empty layer adds 0)
    changes by at most the bound of one coalition when one point changes,
    whatever the draw: the Appendix D sensitivity then holds for every draw.
    Coalitions worse than random guessing (ln 2 log loss) may be skipped, as
    in the paper, by a ``gain`` of 0; the empty coalition is exactly at that
    baseline.
    """
    return sum(np.mean([gain(C) for C in coalitions])
               for coalitions in layers if coalitions) / n
