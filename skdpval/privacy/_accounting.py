"""Exact privacy accounting for k Gaussian releases per party.

``k`` adaptive releases of a Gaussian mechanism with L2 sensitivity ``C`` and
noise std ``s`` are exactly ``mu``-GDP with ``mu = sqrt(k) C / s`` (Dong, Roth
and Su 2022, Corollary 3.3). Its (eps, delta) curve is (Balle and Wang 2018)::

    delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2)

computed here in log space (``log_ndtr``) so that eps in [0.01, 100] and
delta in [1e-12, 0.1] neither overflow nor underflow.

Adjacency is *zero-out* with ``n`` public: each party's releases are its
own, and a neighbouring data set replaces one party's data by nothing, so
that its slot releases pure noise (sensitivity ``C``). It is not literal
add/remove: removing a party would change ``n``, the shape of the output,
the L2 term and the semivalue weights. Under replace-one adjacency (one
party's data swapped for any other, e.g. a flipped label) the sensitivity is
``2 C``, so ``mu`` doubles. Every party is used in every permutation: there
is no amplification by subsampling.

Releases lie on a grid with rounded Gaussian noise
(:mod:`skdpval.privacy._secure_noise`): post-processing of the continuous Gaussian
mechanism on the rounded statistic, whose sensitivity (``C`` padded by the
rounding, exactly) is what the figures use; the sampler's total variation
bound (``(29 sigma + 4) 2^-574`` a draw) adds ``sampler_delta`` to delta.

The noisy-label limit: flipping a label is a replace-one change, so a
``mu``-GDP release is ``2 mu``-GDP for "is this label flipped", and every
test's ROC lies below ``Phi(Phi^-1(FPR) + 2 mu)``. With labels flipped
independently no mechanism finds them with an expected ROC AUC above
``Phi(sqrt(2) mu)`` (one run can exceed it by chance; with an exact count of flips the provable bound is
``Phi(2 mu)``).
"""

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_expit, log_ndtr, logsumexp, ndtr, ndtri_exp
from scipy.stats import binom

from ._secure_noise import sampler_delta

_MU_BRACKET = (1e-6, 1e3)

# The budget of an estimator left at epsilon="default". The default is a
# string, not this float, so that a user who writes epsilon=1.0 has chosen it
# (and is not warned): clone and get_params pass the string through __init__.
DEFAULT_EPSILON = 1.0


def chosen_epsilon(epsilon):
    """The budget an ``epsilon`` parameter stands for: ``"default"`` is
    ``DEFAULT_EPSILON``; a number or None is itself."""
    if isinstance(epsilon, str) and epsilon == "default":
        return DEFAULT_EPSILON
    return epsilon


def log_delta(epsilon, mu):
    """``log delta(eps)`` of mu-GDP."""
    log_a = log_ndtr(-epsilon / mu + mu / 2)
    log_b = log_ndtr(-epsilon / mu - mu / 2)
    ratio = epsilon + log_b - log_a  # log(exp(eps) Phi(b) / Phi(a)) < 0
    return log_a + np.log(-np.expm1(min(ratio, -1e-300)))


def gdp_mu(epsilon, delta):
    """The largest ``mu`` such that mu-GDP implies (epsilon, delta)-DP."""
    target = np.log(delta)

    def gap(log_mu):
        return log_delta(epsilon, np.exp(log_mu)) - target

    lo, hi = np.log(_MU_BRACKET[0]), np.log(_MU_BRACKET[1])
    with np.errstate(all="ignore"):  # a huge epsilon makes the gap NaN
        supported = gap(lo) <= 0 <= gap(hi)
    if not supported:
        low, high = (gdp_epsilon(mu, delta) for mu in _MU_BRACKET)
        raise ValueError(
            f"epsilon={epsilon!r} is outside the range the calibration supports "
            f"at delta={delta!r}: epsilon in [{low:.3g}, {high:.3g}] (mu-GDP with "
            f"mu in [{_MU_BRACKET[0]:g}, {_MU_BRACKET[1]:g}]).")
    return float(np.exp(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-14)))


def gdp_epsilon(mu, delta):
    """The smallest ``epsilon`` such that mu-GDP implies (epsilon, delta)-DP."""
    if mu == 0:  # nothing released (an empty billboard): 0-DP
        return 0.0
    target = np.log(delta)
    if log_delta(0.0, mu) <= target:
        return 0.0
    hi = 1.0
    while log_delta(hi, mu) > target:
        hi *= 2.0
    return float(brentq(lambda e: log_delta(e, mu) - target, 0.0, hi,
                        xtol=1e-14, rtol=1e-14))


def noisy_label_auc_limit(mu):
    """``Phi(sqrt(2) mu)``: the best expected ROC AUC of any test for flipped labels.

    ``mu`` is the per-party GDP parameter under zero-out adjacency.
    """
    return float(ndtr(np.sqrt(2.0) * mu))


def gaussian_noise_std(n_releases, sensitivity, mu):
    """Per-release noise std ``s = sqrt(k) C / mu`` of ``k`` releases of L2
    sensitivity ``C`` that are ``mu``-GDP together: the one place a
    Gaussian noise scale is computed."""
    return float(np.sqrt(n_releases) * sensitivity / mu)


def mean_release_noise_std(noise_std, sizes=None):
    """The noise std of a party's mean release at record level: the noise std
    of its sum of clipped records over its size ``n_g`` (public; ``sizes``
    one a party, or a number), ``noise_std`` itself without ``sizes`` (a
    party's own release). The one place it is computed."""
    return noise_std / (1.0 if sizes is None else sizes)


def noise_std_for_budget(epsilon, delta, n_releases, clip_norm):
    """Per-release noise std ``s = sqrt(k) C / mu(epsilon, delta)`` (without
    the sampler's share of delta: the estimators calibrate through
    :class:`skdpval.privacy._mechanism.PrivacyMechanism`)."""
    return gaussian_noise_std(n_releases, clip_norm, gdp_mu(epsilon, delta))


def add_record_level(report, group_sizes, party):
    """Turn ``report`` (of unit "record") into the record-level guarantee.

    Each record's gradient (or score) is clipped to ``clip_norm``; a
    ``party``'s (group's, client's) release is the sum of its clipped
    records plus Gaussian noise of std ``noise_std`` (sensitivity
    ``clip_norm``: one record zeroed out changes the sum by at most that),
    divided by its size ``n_g``, which is public: its mean release has
    noise std ``noise_std / n_g`` and sensitivity ``clip_norm / n_g``. Every
    record sits in one party, so the per-record ``mu`` is exact. For
    completeness the guarantee of a whole party under party-level adjacency
    is stated too: sensitivity ``n_g clip_norm`` of the sum, so
    ``mu_party = n_g mu``, given for the largest party. The record-level
    statements go in ``report["details"]``.
    """
    sizes = np.asarray(group_sizes)
    largest, smallest = int(sizes.max()), int(sizes.min())
    mu = report["mu"]
    report.update(
        unit="record",
        adjacency=(f"zero-out one record (n, the {party}s and their sizes "
                   "public: the record's clipped gradient is replaced by zero); "
                   "epsilon_replace_one is for replacing one record's data"))
    group_mu = largest * mu
    report["details"].update(
        valuation_unit=party,
        release=(f"a {party}'s sum of its records' clipped gradients plus "
                 f"Gaussian noise of std noise_std, divided by its size n_g "
                 f"(public): the {party}'s mean release has sensitivity "
                 "clip_norm / n_g and noise std noise_std / n_g"),
        group_sizes=(f"public: {smallest} to {largest} records per {party}"),
        mean_release_noise_std=(
            float(mean_release_noise_std(report["noise_std"], largest)),
            float(mean_release_noise_std(report["noise_std"], smallest))),
        group_mu=float(group_mu),
        group_epsilon=(np.inf if not np.isfinite(group_mu)
                       else gdp_epsilon(group_mu, report["delta"])),
        group_guarantee=(
            f"a whole {party} of n_g records under {party}-level adjacency: "
            f"its sum has sensitivity n_g clip_norm, so mu_{party} = n_g mu; "
            f"group_mu and group_epsilon are for the largest {party} "
            f"(n_g = {largest})"),
    )
    return report


def validation_set_statement(n_unprotected):
    """What ``privacy_report_["validation_set"]`` says: it is not protected."""
    if n_unprotected:
        return (f"{n_unprotected} samples held out as the validation set are "
                "used without noise and are not protected")
    return ("the validation set passed to fit is used without noise and is not "
            "protected")


# Composition of Gaussian and pure-DP parts (skdpval.privacy_spent).
#
# An epsilon-DP mechanism is f_eps-DP with f_eps(a) = max(0, 1 - e^eps a,
# e^-eps (1 - a)), the tradeoff curve of randomized response (Kairouz, Oh and
# Viswanath 2015; Dong, Roth and Su 2022, Prop. 2.5). Composing with mu-GDP
# gives exactly G_mu (x) f_eps (Dong, Roth and Su, Thm. 3.2), whose privacy
# loss is that of the Gaussian plus +-eps (randomized response: +eps with
# probability e^eps / (1 + e^eps)). Hence the exact curve
#
#     delta(eps) = sum_s P(S = s) delta_mu(eps - s),  S = sum_j (+-eps_j),
#
# with delta_mu the curve of mu-GDP (valid for negative arguments too).
_MAX_PURE_OUTCOMES = 1 << 16
_LOG_DELTA_FLOOR = -1e4  # log 0, for the root finder


def composed_mu(gaussian=(), pure_epsilons=()):
    """The ``mu`` of a party's parts composed in Gaussian DP: ``gaussian``
    lists ``(mu, count)`` (``count`` parts each ``mu``-GDP), ``pure_epsilons``
    ``(epsilon, count)`` (each ``epsilon``-DP, counted as
    :func:`pure_dp_mu`-GDP: valid, looser than epsilon):
    ``sqrt(sum count mu^2 + sum count pure_dp_mu(epsilon)^2)`` (Dong, Roth and
    Su 2022, Corollary 3.3). The one place a composed ``mu`` is computed."""
    return float(np.sqrt(sum(count * mu**2 for mu, count in gaussian)
                         + sum(count * pure_dp_mu(epsilon) ** 2
                               for epsilon, count in pure_epsilons)))


def pure_dp_mu(epsilon):
    """The smallest ``mu`` such that every ``epsilon``-DP mechanism is mu-GDP.

    ``f_eps`` is the chord of any convex tradeoff curve through ``(0, 1)``,
    its fixed point ``a* = 1 / (1 + e^eps)`` and ``(1, 0)``; ``G_mu`` is convex
    with fixed point ``Phi(-mu/2)``. So ``G_mu <= f_eps`` exactly when
    ``Phi(-mu/2) <= a*``: ``mu = -2 Phi^-1(1 / (1 + e^eps))``.
    """
    return float(-2.0 * ndtri_exp(log_expit(-epsilon)))


def _pure_loss_outcomes(pure_epsilons):
    """Outcomes ``s`` of ``S = sum (+-eps_j)`` and their log probabilities.

    ``pure_epsilons`` lists ``(epsilon, count)`` pairs. Returns None when
    the support exceeds ``_MAX_PURE_OUTCOMES``.
    """
    outcomes, log_p = np.zeros(1), np.zeros(1)
    for epsilon, count in pure_epsilons:
        plus = np.arange(count + 1)  # how many of the count releases lose +eps
        step = (2 * plus - count) * epsilon
        step_log_p = binom.logpmf(plus, count, expit(epsilon))
        if len(outcomes) * len(step) > _MAX_PURE_OUTCOMES:
            return None
        outcomes = (outcomes[:, None] + step[None, :]).ravel()
        log_p = (log_p[:, None] + step_log_p[None, :]).ravel()
        outcomes, index = np.unique(np.round(outcomes, 12), return_inverse=True)
        merged = np.full(len(outcomes), -np.inf)
        np.logaddexp.at(merged, index, log_p)
        log_p = merged
    return outcomes, log_p


def _log_delta_at(epsilon, mu, outcomes, log_p):
    if mu > 0:
        log_terms = [log_delta(epsilon - s, mu) for s in outcomes]
    else:  # no Gaussian part: delta_0(x) = (1 - e^x)_+
        log_terms = [np.log(-np.expm1(epsilon - s)) if s > epsilon else -np.inf
                     for s in outcomes]
    return max(float(logsumexp(log_p + np.array(log_terms))), _LOG_DELTA_FLOOR)


def composed_epsilon(mu, pure_epsilons, delta):
    """Epsilon at ``delta`` of mu-GDP composed with pure-DP mechanisms.

    ``pure_epsilons`` lists ``(epsilon, count)``: ``count`` mechanisms that
    are each ``epsilon``-DP. Exact for the worst case of each part (the
    formula above). When the pure parts have too many combined outcomes,
    the smaller of two looser bounds: basic composition
    (``gdp_epsilon(mu, delta) + sum eps``) and the conversion of every pure
    part to GDP (:func:`pure_dp_mu`).
    """
    pure_epsilons = [(float(e), int(c)) for e, c in pure_epsilons if c > 0]
    total_pure = sum(e * c for e, c in pure_epsilons)
    if not np.isfinite(mu) or not np.isfinite(total_pure):
        return np.inf
    if delta == 0:
        return np.inf if mu > 0 else total_pure
    if not pure_epsilons:
        return gdp_epsilon(mu, delta) if mu > 0 else 0.0
    support = _pure_loss_outcomes(pure_epsilons)
    if support is None:
        basic = (gdp_epsilon(mu, delta) if mu > 0 else 0.0) + total_pure
        via_gdp = gdp_epsilon(composed_mu([(mu, 1)], pure_epsilons), delta)
        return min(basic, via_gdp)
    target = np.log(delta)

    def gap(epsilon):
        return _log_delta_at(epsilon, mu, *support) - target

    if gap(0.0) <= 0:
        return 0.0
    hi = max(1.0, total_pure)
    while gap(hi) > 0:
        hi *= 2.0
    return float(brentq(gap, 0.0, hi, xtol=1e-12, rtol=1e-12))


# The sampler's share of delta (skdpval.privacy._secure_noise): a party's draws are
# within total variation ``tv`` of the exact noise, which adds (1 + e^eps) tv
# to delta at every eps. A guarantee is stated at the requested delta *net*
# of that share: (eps, delta) holds when delta_mechanism(eps) + (1 + e^eps)
# tv <= delta. The share may use at most this much of the requested delta;
# past it a fit is refused (the message names what to change). With the
# sampler's eta = (29 sigma + 4) 2^-574 a draw, tv is below 1e-150 per
# draw, so the share is negligible (the calibration's delta net of it is
# delta itself, to the double) and the refusal comes only past epsilon
# ~350 (doc/user_guide/privacy_model.rst).
MAX_SAMPLER_SHARE = 0.5


def composed_log_delta(epsilon, mu, pure_epsilons):
    """``log delta(eps)`` of mu-GDP composed with pure parts (exact), or None
    when the pure parts have too many combined outcomes."""
    pure_epsilons = [(float(e), int(c)) for e, c in pure_epsilons if c > 0]
    if not pure_epsilons:
        return float(log_delta(epsilon, mu)) if mu > 0 else -np.inf
    support = _pure_loss_outcomes(pure_epsilons)
    if support is None:
        return None
    return _log_delta_at(epsilon, mu, *support)


def epsilon_net_of_sampler(mu, pure_epsilons, tv, delta):
    """The smallest ``epsilon`` (found by a root search) at which mu-GDP
    composed with ``pure_epsilons`` and a sampler within total variation
    ``tv`` of the exact noise is ``(epsilon, delta)``-DP:
    ``delta_mechanism(eps) + (1 + e^eps) tv <= delta``.

    ``inf`` when no ``epsilon`` reaches it with the sampler's share at most
    ``MAX_SAMPLER_SHARE`` of ``delta`` (or the mechanism adds no noise).
    """
    if tv == 0:
        return composed_epsilon(mu, pure_epsilons, delta)
    if delta <= 0:
        return np.inf
    # An epsilon at which the mechanism alone needs half of delta bounds the
    # answer from above when the sampler's share there is within the other half.
    high = composed_epsilon(mu, pure_epsilons, (1 - MAX_SAMPLER_SHARE) * delta)
    if not np.isfinite(high) or sampler_delta(tv, 1, high) > MAX_SAMPLER_SHARE * delta:
        return np.inf
    if composed_log_delta(high, mu, pure_epsilons) is None:
        # Too many pure outcomes for the exact curve: the looser bound with
        # the sampler's share at ``high`` taken out of delta.
        return composed_epsilon(mu, pure_epsilons, delta - sampler_delta(tv, 1, high))
    target = np.log(delta)

    def gap(epsilon):
        mechanism = composed_log_delta(epsilon, mu, pure_epsilons)
        return float(np.logaddexp(mechanism, np.log(sampler_delta(tv, 1, epsilon))
                                  if tv > 0 else -np.inf)) - target

    if gap(0.0) <= 0:
        return 0.0
    if gap(high) > 0:  # only rounding: the sum at ``high`` is within delta
        return float(high)
    return float(brentq(gap, 0.0, high, xtol=1e-14, rtol=1e-14))


def largest_supported_epsilon(tv, delta):
    """The largest ``epsilon`` whose sampler share ``(1 + e^eps) tv`` is at
    most ``MAX_SAMPLER_SHARE * delta`` (inf without a sampler)."""
    if tv == 0:
        return np.inf
    ratio = MAX_SAMPLER_SHARE * delta / tv - 1.0
    return float(np.log(ratio)) if ratio > 0 else 0.0
