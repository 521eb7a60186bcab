"""The noise in a value that the spread of its marginals does not see.

A value is the mean of a party's marginals over the ``K`` counted
permutations, and ``marginal_var_ / K`` is its Monte Carlo variance when the
marginals are independent. With running means (``noise="correlated"``, or
any ``x_tt < 1``) they are not: every counted permutation updates the model
with nearly the same mean of the party's releases, so nearly the same noise,
which the spread over permutations cannot see. To first order a party's
marginal is ``a . u`` (``u`` the update it uses, ``a`` the marginal's
gradient in it: ``-lr`` times the utility's gradient, weighted by the
semivalue) plus a term free of its noise. The noise part of the value then
has the variance ``|a|^2 s_j^2`` times the factor
:func:`skdpval.privacy._noise.unseen_noise_factor` of the schedule, beyond what the
spread sees (``s_j``: the party's per-release noise std). ``a`` is read
from the values and the parties' mean releases (the walk's final rolling
means): only post-processing of the releases and public quantities.
"""

import numpy as np


def noise_slope_squared_norm(values, value_variance, mean_releases):
    """Squared norm of the slope of the values on the parties' mean releases.

    Across parties, ``value_j = c + a . r_j + e_j`` to first order, ``r_j``
    the party's mean release, mostly isotropic noise, and ``e_j`` its Monte
    Carlo error of variance ``value_variance[j]``. The least-squares slope
    over-reads ``|a|^2`` by the error it fits, ``sum_j value_variance[j]
    |R^+[:, j]|^2`` (``R`` the centred releases), which is subtracted. With
    fewer parties than release coordinates the slope is the least-norm one,
    which sees ``rank / dim`` of ``|a|^2`` (the span of isotropic rows is a
    random subspace): it is scaled back up.
    """
    n = len(values)
    releases = mean_releases.reshape(n, -1)
    if releases.shape[1] == 1:
        return _slope_squared_on_one_release(values, value_variance, releases[:, 0])
    releases = releases - releases.mean(axis=0)
    u, singular, _ = np.linalg.svd(releases, full_matrices=False)
    keep = singular > singular[0] * max(releases.shape) * np.finfo(float).eps
    if not np.any(keep):
        return 0.0
    u, singular = u[:, keep], singular[keep]
    # The slope in the right singular vectors, and the fitted error's share of it.
    slope = (u.T @ (values - values.mean())) / singular
    fitted_error = float(np.sum(value_variance @ (u / singular) ** 2))
    squared_norm = max(0.0, float(slope @ slope) - fitted_error)
    return squared_norm * releases.shape[1] / len(singular)


# One release a party (the public line) is read in blocks of this many
# parties: the SVD's way held several arrays of n at the client's peak
# (benchmarks/dask_memory.py).
SLOPE_BLOCK = 2**16


def _slope_squared_on_one_release(values, value_variance, releases):
    """:func:`noise_slope_squared_norm` of one release a party: the SVD of
    the centred column ``r`` is ``r / |r|`` and ``|r|``, so the slope is
    ``r . (v - mean v) / |r|^2`` and the fitted error ``sum_j var_j r_j^2 /
    |r|^4``; sums over blocks of parties."""
    release_mean, value_mean = releases.mean(), values.mean()
    squares = cross = error = largest = 0.0
    for lo in range(0, len(values), SLOPE_BLOCK):
        block = releases[lo:lo + SLOPE_BLOCK]
        largest = max(largest, float(np.max(block)), -float(np.min(block)))
        r = block - release_mean
        squares += float(r @ r)
        cross += float(r @ (values[lo:lo + SLOPE_BLOCK] - value_mean))
        error += float(value_variance[lo:lo + SLOPE_BLOCK] @ (r * r))
    # Releases equal up to rounding have no slope (the SVD would read one
    # from their rounding errors).
    if np.sqrt(squares) <= largest * len(values) * np.finfo(float).eps:
        return 0.0
    return max(0.0, cross * cross / squares / squares - error / squares / squares)


def shared_noise_variance(values, value_variance, mean_releases, noise_std,
                          unseen_factor):
    """Per party, the variance its noise adds to its value beyond ``value_variance``.

    ``values`` and ``value_variance`` (``marginal_var_ / K``) are those of
    the training parties, ``mean_releases`` their mean releases
    ``(n_parties, ...)``, ``noise_std`` a release's noise std (a scalar, or
    one per party: a record-level group's over its size), ``unseen_factor``
    the schedule's :func:`~skdpval.privacy._noise.unseen_noise_factor`.
    """
    slope = noise_slope_squared_norm(values, value_variance, mean_releases)
    return slope * np.broadcast_to(np.asarray(noise_std, float) ** 2,
                                   values.shape) * unseen_factor
