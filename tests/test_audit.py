"""End-to-end privacy audits: black-box lower bounds on epsilon from public outputs.

Each audit fits a private estimator many times, with fresh noise, on two
neighbouring data sets that differ in one canary party built to be as
distinguishable as the claim allows: its clipped gradient points along the
validation utility's gradient, against the same party with its label
flipped (replace-one: the clipped gradients are ``+C`` and ``-C``, the full
sensitivity ``2 C``). A scalar statistic of the public output (the canary's
``values_``, or another party's) is thresholded; the threshold is chosen on
a quarter of the fits, and its error rates on the rest are bounded with
Clopper-Pearson intervals (95% jointly). For a ``mu``-GDP release every test
has ``TPR <= Phi(Phi^-1(FPR) + mu)``, so ``Phi^-1(TPR_low) - Phi^-1(FPR_high)``
is a lower bound on ``mu``, and ``gdp_epsilon`` of it a lower bound on the
epsilon the estimator claims at its delta. For the Laplace release (pure
epsilon-DP) the bound is ``ln(TPR_low / FPR_high)``.

An audit must pass at the claimed noise and fail when the noise is halved
where it is drawn: the mutation tests below halve it at each draw site and
assert that the audit then finds more than the claim. The public randomness
(``random_state``) is fixed, the noise seeded per fit (``noise_seed``), so
the audits are deterministic; the guarantee holds for every fixed public
randomness, so fixing it only makes the audit stronger.
"""

import functools
from fractions import Fraction
from typing import Callable, NamedTuple

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import beta as beta_distribution
from sklearn.linear_model import LogisticRegression

import skdpval.privacy._mechanism as mechanism_module
from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPLabelQuality,
    LayeredShapleyValuator,
)
from skdpval.privacy._accounting import gdp_epsilon

DELTA = 5e-5
EPSILON = 2.0  # replace-one mu 1.10: the audit separates it from twice that
N_FITS = 400  # per neighbour
CALIBRATION = 0.25  # fraction of the fits that choose the threshold


class Bounds(NamedTuple):
    mu: float  # lower bound on the GDP mu of the pair
    epsilon: float  # lower bound on pure / (epsilon, delta) epsilon


def clopper_pearson_upper(successes, trials, alpha):
    if successes >= trials:  # Beta(trials + 1, 0) is degenerate: the bound is 1
        return 1.0
    return float(beta_distribution.ppf(1 - alpha, successes + 1, trials - successes))


def lower_bounds(with_canary, without_canary, delta, pure=False):
    """Lower bounds from the best one-sided threshold test of the two samples.

    The threshold and its direction are chosen on the first ``CALIBRATION``
    of each sample, for the best ``mu`` (or ``epsilon`` when ``pure``); the
    bounds use the rest (95%: 2.5% for each error rate).
    """
    with_canary, without_canary = np.asarray(with_canary), np.asarray(without_canary)
    n_calibration = int(CALIBRATION * len(with_canary))

    def bounds(positive, negative, threshold, sign):
        misses = int(np.sum(sign * positive <= sign * threshold))
        false_alarms = int(np.sum(sign * negative > sign * threshold))
        tpr = 1 - clopper_pearson_upper(misses, len(positive), 0.025)
        fpr = clopper_pearson_upper(false_alarms, len(negative), 0.025)
        return Bounds(mu=float(ndtri(tpr) - ndtri(fpr)),
                      epsilon=float(np.log(max(tpr - delta, 1e-300) / fpr)))

    calibration = (with_canary[:n_calibration], without_canary[:n_calibration])
    candidates = np.quantile(np.concatenate(calibration), np.linspace(0.02, 0.98, 49))
    threshold, sign = max(((t, s) for t in candidates for s in (1, -1)),
                          key=lambda ts: bounds(*calibration, *ts)[int(pure)])
    return bounds(with_canary[n_calibration:], without_canary[n_calibration:],
                  threshold, sign)


def audit(fit_statistic, n_fits=N_FITS, delta=DELTA, pure=False):
    """Fit ``n_fits`` times on each neighbour; lower bounds on its privacy.

    ``fit_statistic(canary, noise_seed)`` fits the estimator on the data set
    with the canary (True) or on its neighbour (False), with the noise seeded
    by ``noise_seed``, and returns a scalar statistic of the public output.
    ``pure`` picks the threshold for pure epsilon-DP (Laplace) rather than mu.
    """
    seeds = np.random.SeedSequence(0).generate_state(2 * n_fits)
    with_canary = [fit_statistic(True, int(seed)) for seed in seeds[:n_fits]]
    without_canary = [fit_statistic(False, int(seed)) for seed in seeds[n_fits:]]
    return lower_bounds(with_canary, without_canary, delta, pure)


# The audited estimators. Each entry fits one estimator on a tiny problem
# (one feature, two parties) so that a fit takes milliseconds, and names the
# draw site the mutation test halves. The canary is party 0: ``x = 3`` with
# label 1 (its clipped gradient, -C, raises the validation utility, whose
# validation rows are all ``x = 1, y = 1``) against the same row labelled 0.
X_VAL, Y_VAL = np.ones((4, 1)), np.ones(4, dtype=int)


def canary_rows(canary, rows=1, flipped=None):
    """The canary party's ``rows`` rows (label 1 or flipped) and one other party.

    Several rows make a group whose mean gradient is clipped once
    (group-level privacy); ``flipped`` rows of it (all by default) change
    label in the neighbour. Record-level privacy protects one record: there
    one row flips, whose clipped gradient turns from ``-C`` to ``+C``.
    """
    flipped = rows if flipped is None else flipped
    X = np.r_[np.linspace(3.0, 2.0, rows), 0.5][:, None]
    y = np.array([1 if canary else 0] * flipped + [1] * (rows - flipped) + [1])
    return X, y


def data_valuator_statistic(canary, noise_seed, rows=1, subspace=None,
                            privacy_unit="group"):
    """Canary's value from DPDataValuator's walk (i.i.d. releases).

    ``subspace=None`` is the full-space walk (clip norm 1); ``"public"`` the
    default walk in the direction fitted on the validation set (here the one
    feature), with ``clip_norm="auto"``: 0.5, the validation gradients'
    norm at zero. Either way the canary's clipped (projected) gradient is
    ``-C`` and its neighbour's ``+C``. Raw features: the canary is built on
    them. ``privacy_unit="record"``: one record of the canary group differs.
    """
    X, y = canary_rows(canary, rows, 1 if privacy_unit == "record" else None)
    groups = None if rows == 1 else np.r_[np.zeros(rows), 1]
    valuator = DPDataValuator(
        LogisticRegression(fit_intercept=False), noise="iid", q=0.0, epsilon=EPSILON,
        privacy_unit=privacy_unit,
        n_permutations=4, learning_rate=0.01, subspace=subspace,
        clip_norm=1.0 if subspace is None else "auto", standardize=False,
        classes=[0, 1], random_state=0, noise_seed=noise_seed)
    return valuator.fit(X, y, X_val=X_VAL, y_val=Y_VAL, groups=groups).values_[0]


def label_quality_statistic(canary, noise_seed, rows=1):
    """Canary's score from DPLabelQuality: +clip, or -clip with its label flipped.

    The model fitted on the validation rows (x = +-1, labels 1 / 0) has a
    positive slope: the canary ``x = 3`` scores beyond the clip either way.
    With ``rows`` > 1 the canary is a group under record-level privacy, one
    record of which flips.
    """
    X, y = canary_rows(canary, rows, 1)
    groups = None if rows == 1 else np.r_[np.zeros(rows), 1]
    scorer = DPLabelQuality(LogisticRegression(fit_intercept=False), epsilon=EPSILON,
                            standardize=False, random_state=0, noise_seed=noise_seed)
    X_val = np.array([[1.0], [1.0], [-1.0], [-1.0]])
    return scorer.fit(X, y, X_val=X_val, y_val=np.array([1, 1, 0, 0]),
                      groups=groups).values_[0]


def federated_statistic(canary, noise_seed, compression=None, rows=1,
                        privacy_unit="group"):
    """Canary client's value from DPFederatedValuator (two rounds, i.i.d.);
    ``rows`` and ``privacy_unit`` as for :func:`data_valuator_statistic`."""
    X, y = canary_rows(canary, rows, 1 if privacy_unit == "record" else None)
    groups = np.r_[np.zeros(rows), 1]
    X_val = X_VAL
    if compression is not None:
        # Top-1 of two coordinates: the canary's gradient lies on the first
        # (the only one the utility reads) or, in the neighbour, the second.
        X = np.array([[3.0, 0.0] if canary else [0.0, 3.0], [0.0, 0.5]])
        y, X_val = np.ones(2, dtype=int), np.hstack([X_VAL, np.zeros((4, 1))])
    valuator = DPFederatedValuator(
        LogisticRegression(fit_intercept=False), n_rounds=2,
        n_permutations_per_round="all", noise="iid", q=0.0, epsilon=EPSILON,
        learning_rate=0.01, utility="neg_loss", compression=compression,
        privacy_unit=privacy_unit, standardize=False, classes=[0, 1], random_state=0,
        noise_seed=noise_seed)
    return valuator.fit(X, y, groups=groups, X_val=X_val, y_val=Y_VAL).values_[0]


class GaussianAudit(NamedTuple):
    fit_statistic: Callable
    draw_site: tuple  # (module, name) of the Gaussian draw to halve, or None


GAUSSIAN_AUDITS = {
    "DPDataValuator full-space": GaussianAudit(
        data_valuator_statistic, (mechanism_module, "gaussian_noise")),
    "DPDataValuator groups": GaussianAudit(
        lambda canary, seed: data_valuator_statistic(canary, seed, rows=3),
        (mechanism_module, "gaussian_noise")),
    # Record-level: a group of 3, one record flipped; the noise is calibrated
    # for the sum of the clipped records, the release is its mean.
    "DPDataValuator record-level": GaussianAudit(
        lambda canary, seed: data_valuator_statistic(canary, seed, rows=3,
                                                     privacy_unit="record"),
        (mechanism_module, "gaussian_noise")),
    "DPDataValuator record-level subspace='public'": GaussianAudit(
        lambda canary, seed: data_valuator_statistic(
            canary, seed, rows=3, subspace="public", privacy_unit="record"),
        (mechanism_module, "gaussian_noise")),
    # (a client of two records: with three, the canary's one record is too
    # weak a signal for the audit to see the noise halved: bound 0.95)
    "DPFederatedValuator record-level": GaussianAudit(
        lambda canary, seed: federated_statistic(canary, seed, rows=2,
                                                 privacy_unit="record"),
        (mechanism_module, "gaussian_noise")),
    "DPLabelQuality record-level": GaussianAudit(
        lambda canary, seed: label_quality_statistic(canary, seed, rows=3),
        (mechanism_module, "gaussian_noise")),
    "DPFederatedValuator": GaussianAudit(
        federated_statistic, (mechanism_module, "gaussian_noise")),
    # Top-k chose its released coordinates from private data and released
    # the others as exact zeros: the neighbour's value was exactly 0.
    "DPFederatedValuator top-k": GaussianAudit(
        lambda canary, seed: federated_statistic(canary, seed, ("topk", 1)), None),
    "DPDataValuator subspace='public'": GaussianAudit(
        lambda canary, seed: data_valuator_statistic(canary, seed,
                                                     subspace="public"),
        (mechanism_module, "gaussian_noise")),
    "DPLabelQuality": GaussianAudit(
        label_quality_statistic, (mechanism_module, "gaussian_noise")),
}



@functools.cache
def claimed_mu():
    """The replace-one mu that DPDataValuator's report claims at ``EPSILON``."""
    valuator = DPDataValuator(epsilon=EPSILON, n_permutations=4, subspace=None,
                              classes=[0, 1])
    report = valuator.fit(*canary_rows(True), X_val=X_VAL, y_val=Y_VAL).privacy_report_
    return 2 * report["mu"]


def scaled_draw(original, factor):
    """A draw site's function with its scale times ``factor``: the std
    (grid units) of ``gaussian_noise(key, kind, lo, hi, std, out)``, the
    scale of ``laplace_noise(key, kind, scale, size)``."""
    if original.__name__ == "laplace_noise":
        return lambda key, kind, scale, size: original(
            key, kind, scale * Fraction(factor), size)
    return lambda key, kind, lo, hi, std, out: original(key, kind, lo, hi,
                                                        factor * std, out)


def halve(monkeypatch, draw_site):
    module, name = draw_site
    monkeypatch.setattr(module, name, scaled_draw(getattr(module, name), 0.5))


@pytest.mark.parametrize("name", sorted(GAUSSIAN_AUDITS))
def test_audit_passes_at_the_claimed_noise(name):
    bounds = audit(GAUSSIAN_AUDITS[name].fit_statistic)
    claimed_epsilon = gdp_epsilon(claimed_mu(), DELTA)
    assert bounds.mu <= claimed_mu(), (bounds, claimed_mu())
    assert gdp_epsilon(max(bounds.mu, 0.0), DELTA) <= claimed_epsilon
    assert bounds.epsilon <= claimed_epsilon


@pytest.mark.parametrize("name", sorted(name for name, entry in GAUSSIAN_AUDITS.items()
                                        if entry.draw_site))
def test_audit_fails_when_the_noise_is_halved(name, monkeypatch):
    halve(monkeypatch, GAUSSIAN_AUDITS[name].draw_site)
    bounds = audit(GAUSSIAN_AUDITS[name].fit_statistic)
    assert bounds.mu > claimed_mu(), (bounds, claimed_mu())
    assert gdp_epsilon(bounds.mu, DELTA) > gdp_epsilon(claimed_mu(), DELTA)


def test_claimed_mu_is_the_replace_one_mu_of_the_budget():
    report = DPFederatedValuator(epsilon=EPSILON, n_rounds=2, classes=[0, 1]).fit(
        *canary_rows(True), groups=[0, 1], X_val=X_VAL, y_val=Y_VAL).privacy_report_
    assert 2 * report["mu"] == pytest.approx(claimed_mu())
    assert gdp_epsilon(claimed_mu(), DELTA) == pytest.approx(report["epsilon_replace_one"])


# LayeredShapleyValuator: Laplace noise on each value. The canary is point 0
# with its label flipped; the statistic is point 1's value (a point's own
# value is not covered). All layers are enumerated, so the values without
# noise are fixed and the audit sees the noise alone.
X_LAYERED = np.array([[1.0], [0.2], [0.6]])
X_VAL_LAYERED, Y_VAL_LAYERED = np.array([[1.0], [0.0], [1.0], [0.0]]), np.array([1, 0, 1, 0])


def layered_fit(canary, noise_seed, epsilon=1.0):
    y = np.array([1 if canary else 0, 1, 0])
    return LayeredShapleyValuator(
        LogisticRegression(C=1.0), alpha=0.01, epsilon=epsilon,
        skip_below_baseline=False, random_state=0, noise_seed=noise_seed).fit(
        X_LAYERED, y, X_val=X_VAL_LAYERED, y_val=Y_VAL_LAYERED)


def layered_statistic(canary, noise_seed):
    return layered_fit(canary, noise_seed).values_[1]


def test_layered_audit_passes_at_the_claimed_noise():
    bounds = audit(layered_statistic, n_fits=N_FITS // 2, delta=0.0, pure=True)
    claimed = layered_fit(True, 0).privacy_report_["parts"][0]["epsilon_replace_one"]
    assert bounds.epsilon <= claimed, bounds


def test_layered_sensitivity_bound_is_far_above_the_change_of_a_value():
    """Why the black-box audit cannot see the Laplace noise halved.

    The Appendix D bound is a worst case over learners and data; on the
    audit's canary the other point's value moves by well under a hundredth
    of the replace-one sensitivity, so even half the noise hides it. The
    calibration audit below guards the Laplace draw site instead.
    """
    without_noise = [LayeredShapleyValuator(
        LogisticRegression(C=1.0), alpha=0.01, skip_below_baseline=False,
        random_state=0).fit(X_LAYERED, np.array([label, 1, 0]), X_val=X_VAL_LAYERED,
                            y_val=Y_VAL_LAYERED).values_[1] for label in (1, 0)]
    sensitivity = layered_fit(True, 0).privacy_report_["sensitivity"]
    assert 0 < abs(without_noise[0] - without_noise[1]) < 0.01 * 2 * sensitivity


def layered_noise_scale(n_fits=100):
    """Mean |released - noiseless| over ``n_fits`` fits: the Laplace scale's estimate."""
    noiseless = LayeredShapleyValuator(
        LogisticRegression(C=1.0), alpha=0.01, skip_below_baseline=False,
        random_state=0).fit(X_LAYERED, np.array([1, 1, 0]), X_val=X_VAL_LAYERED,
                            y_val=Y_VAL_LAYERED).values_
    released = np.array([layered_fit(True, seed).values_ for seed in range(n_fits)])
    return np.mean(np.abs(released - noiseless)), layered_fit(True, 0).noise_scale_


def test_layered_release_has_the_claimed_laplace_scale():
    measured, claimed = layered_noise_scale()
    assert 0.8 < measured / claimed < 1.25, (measured, claimed)


def test_layered_calibration_audit_fails_when_the_noise_is_halved(monkeypatch):
    halve(monkeypatch, (mechanism_module, "laplace_noise"))
    measured, claimed = layered_noise_scale()
    assert measured / claimed < 0.8, (measured, claimed)
