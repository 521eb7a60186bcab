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

The noisy-label limit: flipping a label is a replace-one change, so a
``mu``-GDP release is ``2 mu``-GDP for "is this label flipped", and every
test's ROC lies below ``Phi(Phi^-1(FPR) + 2 mu)``. With labels flipped
independently no mechanism finds them with ROC AUC above
``Phi(sqrt(2) mu)`` (with an exact count of flips the provable bound is
``Phi(2 mu)``).
"""

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

_MU_BRACKET = (1e-6, 1e3)


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
    if gap(lo) > 0 or gap(hi) < 0:
        raise ValueError(
            f"epsilon={epsilon} and delta={delta} are outside the range the "
            "calibration supports.")
    return float(np.exp(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-14)))


def gdp_epsilon(mu, delta):
    """The smallest ``epsilon`` such that mu-GDP implies (epsilon, delta)-DP."""
    target = np.log(delta)
    if log_delta(0.0, mu) <= target:
        return 0.0
    hi = 1.0
    while log_delta(hi, mu) > target:
        hi *= 2.0
    return float(brentq(lambda e: log_delta(e, mu) - target, 0.0, hi,
                        xtol=1e-14, rtol=1e-14))


def noisy_label_auc_limit(mu):
    """``Phi(sqrt(2) mu)``: the best ROC AUC of any test for flipped labels.

    ``mu`` is the per-party GDP parameter under zero-out adjacency.
    """
    return float(ndtr(np.sqrt(2.0) * mu))


def noise_std_for_budget(epsilon, delta, n_releases, clip_norm):
    """Per-release noise std ``s = sqrt(k) C / mu(epsilon, delta)``."""
    return float(np.sqrt(n_releases) * clip_norm / gdp_mu(epsilon, delta))


def privacy_report(*, noise_std, delta, n_releases, clip_norm, unit,
                   n_unprotected, noise_source, sensitivity=None):
    """The guarantee of ``n_releases`` Gaussian releases per party, as a dict.

    ``sensitivity`` is the L2 sensitivity of one release when it is not
    ``clip_norm`` (e.g. coordinate clipping or compression);
    ``noise_source`` says where the noise came from
    (:func:`skdpval._noise.noise_source`).
    """
    sensitivity = clip_norm if sensitivity is None else sensitivity
    report = {
        "unit": unit,
        "adjacency": (f"zero-out one {unit} (n public: the {unit}'s slot "
                      "releases pure noise); epsilon_replace_one is for "
                      f"replacing one {unit}'s data"),
        "n_releases": int(n_releases),
        "clip_norm": float(clip_norm),
        "sensitivity": float(sensitivity),
        "noise_std": float(noise_std),
        "noise_multiplier": float(noise_std / sensitivity),
        "delta": float(delta),
        "amplification": "none: every party releases every time (no subsampling)",
    }
    if noise_std == 0:
        report.update(mu=np.inf, epsilon=np.inf, epsilon_replace_one=np.inf,
                      max_noisy_label_auc=1.0,
                      method="none: noise='none' gives no privacy")
    else:
        mu = np.sqrt(n_releases) * sensitivity / noise_std
        report.update(
            mu=float(mu),
            epsilon=gdp_epsilon(mu, delta),
            epsilon_replace_one=gdp_epsilon(2 * mu, delta),
            max_noisy_label_auc=noisy_label_auc_limit(mu),
            method="exact Gaussian DP of k adaptive Gaussian releases "
                   "(Dong, Roth and Su 2022; Balle and Wang 2018)")
    report["noise_source"] = noise_source
    report["validation_set"] = validation_set_statement(n_unprotected)
    return report


def validation_set_statement(n_unprotected):
    """What ``privacy_report_["validation_set"]`` says: it is not protected."""
    if n_unprotected:
        return (f"{n_unprotected} samples held out as the validation set are "
                "used without noise and are not protected")
    return ("the validation set passed to fit is used without noise and is not "
            "protected")
