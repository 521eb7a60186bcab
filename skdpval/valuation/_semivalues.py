"""Importance weights of the semivalues for permutation sampling.

A semivalue is ``phi_i = sum_{S subset of N minus i} w(|S|) [v(S + i) - v(S)]``.
In a uniformly random permutation a party has ``s`` predecessors with
probability ``1/n`` for each ``s``, and a given predecessor set of size ``s``
with probability ``1 / (n C(n-1, s))``, so the marginal seen at position ``s``
is weighted by ``p(s) = n C(n-1, s) w(s)``. Computed in log space.
"""

import math
import numbers
import warnings

import numpy as np
from scipy.special import betaln, gammaln

from ..exceptions import SkdpvalWarning

SEMIVALUE_NAMES = ("shapley", "banzhaf", "loo")
# Leave-one-out warns when more than this share of the parties is expected
# never to come last in the counted permutations.
LOO_MISSED_SHARE = 0.05


def check_semivalue(semivalue):
    """Return ``semivalue`` as ``(name, a, b)``, or raise a ValueError."""
    if isinstance(semivalue, str) and semivalue in SEMIVALUE_NAMES:
        return (semivalue, None, None)
    if (isinstance(semivalue, tuple) and len(semivalue) == 3
            and semivalue[0] == "beta"):
        _, a, b = semivalue
        for value in (a, b):
            if (not isinstance(value, numbers.Real) or isinstance(value, bool)
                    or not np.isfinite(value) or value <= 0):
                raise ValueError(
                    "semivalue=('beta', a, b) needs finite a > 0 and b > 0, "
                    f"got {semivalue!r}.")
        return ("beta", float(a), float(b))
    raise ValueError(
        "semivalue must be one of 'shapley', 'banzhaf', 'loo' or a tuple "
        f"('beta', a, b) with a, b > 0; got {semivalue!r}.")


def _log_binomial(n, k):
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def semivalue_weights(semivalue, n_parties):
    """Weight ``p(s)`` of a marginal seen at position ``s = 0 .. n-1``.

    Parameters
    ----------
    semivalue : {"shapley", "banzhaf", "loo"} or ("beta", a, b)
        Beta(a, b) follows Kwon & Zou: a large ``a`` favours small coalitions
        (Beta(16, 1) has ``p(0)`` close to 16); Beta(1, 1) is Shapley.
    n_parties : int
        Number of parties ``n``.

    Returns
    -------
    weights : ndarray of shape (n_parties,)
    """
    name, a, b = check_semivalue(semivalue)
    n = n_parties
    s = np.arange(n, dtype=np.float64)
    if name == "shapley":
        return np.ones(n)
    if name == "banzhaf":
        return np.exp(np.log(n) + _log_binomial(n - 1, s) - (n - 1) * np.log(2.0))
    if name == "loo":
        weights = np.zeros(n)
        weights[-1] = n
        return weights
    return np.exp(betaln(s + b, n - 1 - s + a) - betaln(s + 1, n - s) - betaln(a, b))


def warn_if_loo_misses_parties(semivalue, n_counted, n_parties, q, stacklevel):
    """Leave-one-out reads a party only in the permutations that put it last:
    each counted permutation does so with probability ``1 / n``, so about
    ``(1 - 1/n) ** n_counted`` of the parties are never last and get the
    value 0. Warn when that share is over ``LOO_MISSED_SHARE`` (public
    inputs only: the semivalue, ``n`` and the number of permutations)."""
    missed = (1 - 1 / n_parties) ** n_counted
    if semivalue != "loo" or missed <= LOO_MISSED_SHARE:
        return
    needed = math.ceil(math.log(LOO_MISSED_SHARE) / math.log1p(-1 / n_parties))
    warnings.warn(
        f"semivalue='loo' values a party only from the permutations that put it "
        f"last: with {n_counted} counted permutations of {n_parties} parties, "
        f"about {missed:.0%} of the parties are never last and get the value 0. "
        f"Count at least {needed} permutations (n_permutations >= "
        f"{math.ceil(needed / (1 - q))} at q={q:g}) for 95% of them.",
        SkdpvalWarning, stacklevel=stacklevel + 1)
