"""From a walk's sums to values and their standard errors, in the utility's units.

Everything here is post-processing of the noisy releases: the walk's
marginal statistics, its final utilities and the parties' mean releases.
"""

import warnings
from collections import namedtuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..exceptions import SkdpvalWarning
from ._uncertainty import shared_noise_variance
from ._walk_settings import initial_utility

WalkStatistics = namedtuple("WalkStatistics", [
    "values", "marginal_mean", "marginal_var", "values_stderr", "n_marginals",
    "initial_utility", "final_utilities"])
WalkStatistics.__doc__ = """A walk's values and what the valuator reports of them:
``values`` of the training parties; the other arrays over all parties (NaN
for held-out ones), in the utility's units."""

_UNITLESS = (1, 3)  # accuracy, R^2
_NEG_MSE = 2


def check_converged(values, utilities, initial_utility, learning_rate, utility,
                    process, step, stacklevel, auto_learning_rate=True,
                    lowest_utility=np.inf):
    """Raise when ``values`` or ``utilities`` are not finite; warn when every
    value is 0, when the median utility after a ``step`` fell far below
    ``initial_utility``, or when the utility fell to ``lowest_utility`` (or
    lower) on the way.

    All are computed from the noisy releases only (post-processing).
    """
    auto = " (or 'auto')" if auto_learning_rate else ""
    remedy = (f"Use a smaller learning_rate{auto}, or scale the features "
              "(standardize=True).")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(utilities))):
        raise FloatingPointError(
            f"The {process} diverged with learning_rate={learning_rate:g}: "
            f"utilities or values are not finite. {remedy}")
    if np.size(values) and not np.any(values):
        warnings.warn(
            f"Every value is 0: the {process} never moved the validation utility "
            f"(learning_rate={learning_rate:g}). Use a larger learning_rate, "
            "clip_norm or number of permutations.", ConvergenceWarning,
            stacklevel=stacklevel + 1)
    scale = max(1.0, abs(initial_utility))
    if utility != "accuracy" and lowest_utility < initial_utility - 100 * scale:
        warnings.warn(
            f"The {process} diverges with learning_rate={learning_rate:g}: along "
            f"{step} the validation utility fell to {lowest_utility:.3g} or lower, "
            f"against {initial_utility:.3g} before it. {remedy}",
            ConvergenceWarning, stacklevel=stacklevel + 1)
    elif utility != "accuracy" and np.median(utilities) < initial_utility - 100 * scale:
        warnings.warn(
            f"The {process} diverges with learning_rate={learning_rate:g}: the "
            f"median validation utility after {step} is "
            f"{np.median(utilities):.3g}, against {initial_utility:.3g} before "
            f"it. {remedy}", ConvergenceWarning, stacklevel=stacklevel + 1)


def lowest_utility_bound(values, weights, utility):
    """A utility that some walk's validation utility fell to, or below.

    A marginal is ``w (v' - v)`` with ``|w| <= max |weights|``; the
    utilities are at most ``top`` (0 for a loss or an MSE, 1 for R^2), so
    ``|v' - v| <= top - min(v, v')``; a value is a mean of marginals.
    """
    top = 1.0 if utility == "r2" else 0.0
    largest = np.max(np.abs(weights), initial=0.0)
    if largest == 0:
        return top
    return top - float(np.max(np.abs(values), initial=0.0) / largest)


def utility_unit(game):
    """Factor from the walk's standardised targets to the utility's own units.

    A loss or MSE on targets divided by ``s`` is the original one divided
    by ``s ** degree`` (2 for the squared error and huber); R^2 and
    accuracy have no unit.
    """
    if game.target_scale is None or game.utility in _UNITLESS:
        return 1.0
    degree = 2 if game.utility == _NEG_MSE else game.objective.target_scale_degree
    return game.target_scale[1] ** degree


def _over_all_parties(per_train, train, n_all):
    """NaN for held-out parties; the array itself when none is (no copy of
    an array of n)."""
    if len(train) == n_all:
        return per_train
    out = np.full(n_all, np.nan)
    out[train] = per_train
    return out


def _standard_errors(marginal_var, n_marginals, shared_noise, train, q,
                     n_permutations, stacklevel):
    """``sqrt(marginal_var / n_marginals + shared_noise)``: the Monte Carlo
    variance and that of the noise the counted permutations share
    (:mod:`skdpval.valuation._uncertainty`; ``shared_noise`` of the ``train``
    parties, None for none); NaN, with a warning, below two counted
    permutations (one marginal has no spread: 0 would claim an exact
    value)."""
    if n_marginals >= 2:
        # In place, one array of n (the sum's operations, in its order).
        variance = marginal_var / n_marginals
        if shared_noise is not None:
            if len(train) == len(variance):
                variance += shared_noise
            else:
                variance[train] += shared_noise
        return np.sqrt(variance, out=variance)
    remedy = "raise n_permutations" + (" or lower q" if q > 0 else "")
    warnings.warn(
        f"values_stderr_ is NaN: {n_marginals} permutation was counted past "
        f"the burn-in (q_={q:g} of n_permutations={n_permutations}) "
        f"and a standard error needs two; {remedy}.",
        SkdpvalWarning, stacklevel=stacklevel + 1)
    return np.full_like(marginal_var, np.nan)


def walk_statistics(result, game, *, party_noise_std, unseen_factor, learning_rate,
                    utility, q, n_permutations, stacklevel):
    """The values and the walk's statistics in the utility's units; checks the
    walk stayed finite (``stacklevel`` counts from the caller).

    ``party_noise_std``: each party's noise std (a record-level group's over
    its size), 0 without noise.
    """
    values = result.marginal_mean
    initial = initial_utility(game)
    final_utilities = result.end_utility
    check_converged(values, final_utilities, initial, learning_rate,
                    utility, "walk", "a permutation", stacklevel=stacklevel + 1,
                    lowest_utility=lowest_utility_bound(values, game.weights,
                                                        utility))
    unit = utility_unit(game)
    train, n_all = game.train_parties, game.n_all_parties
    # With running means, the noise the counted permutations share (from the
    # values and the mean releases: post-processing only). Not under the
    # joint threat model: a joint value does not read its own noisy releases,
    # and the term regresses across every owner's value (a pooled, central
    # release); each owner's standard error is then its own Monte Carlo one.
    shared_noise = None
    if (result.rolling_mean is not None and np.any(party_noise_std > 0)
            and result.n_counted >= 2 and not game.joint):
        shared_noise = shared_noise_variance(
            result.marginal_mean, result.marginal_m2 / result.n_counted**2,
            result.rolling_mean, party_noise_std, unseen_factor)
        shared_noise *= unit**2
    result = result._replace(rolling_mean=None)
    values = values * unit if unit != 1.0 else values
    # In place: the walk's array (m2 / n * unit**2, in that order).
    variance = result.marginal_m2
    variance /= result.n_counted
    variance *= unit**2
    marginal_var = _over_all_parties(variance, train, n_all)
    return WalkStatistics(
        values, _over_all_parties(values, train, n_all), marginal_var,
        _standard_errors(marginal_var, result.n_counted, shared_noise, train, q,
                         n_permutations, stacklevel + 1),
        result.n_counted, initial * unit, final_utilities * unit)
