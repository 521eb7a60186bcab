"""End-to-end audits of the private paths as shipped (issue 22).

The audits of ``test_audit.py`` use one configuration per estimator
(``noise="iid"``, ``q=0``, raw features). These run the other paths with
their shipped defaults where the path has them: the default walk
(correlated noise, ``q=0.9``, waves of ``batch_permutations``,
standardisation, ``clip_norm="auto"``, the public subspace), the
multinomial and regression walks, DPLabelQuality's multiclass, regressor and
group paths, federated compression and moving average, and a cleaning step
against the spend :func:`skdpval.privacy_spent` reports for it.

Only public estimator APIs and ``noise_seed`` are used, so the audits hold
whatever draws the noise. Each compares a black-box lower bound (the same
machinery as ``test_audit.py``: two neighbours differing in one canary
party, a threshold test on a public output, Clopper-Pearson bounds) with
the replace-one figure the estimator reports. With the noise halved at the
draw site each audit finds more than that figure:
``benchmarks/results/audit_paths.jsonl`` records the run (and
``benchmarks/mutations.sh`` repeats it).
"""

import functools

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression, Ridge, RidgeClassifier
from sklearn.neural_network import MLPClassifier

from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPFilteredClassifier,
    DPLabelQuality,
    privacy_spent,
)
from skdpval.privacy._accounting import gdp_epsilon, gdp_mu
from test_audit import DELTA, EPSILON, audit

N_FITS = 300  # per neighbour
# Validation rows: mean 0 and std 1 per column, so standardising by them
# leaves the canaries where they are built.
X_VAL = np.array([[1.0], [1.0], [-1.0], [-1.0]])
Y_VAL = np.array([1, 1, 0, 0])


def default_walk_fit(canary, noise_seed):
    """The walk as shipped; only the budget, k and the public seed are set.

    k = 20 with waves of 16: the two counted permutations (q = 0.9) combine
    the 16 releases of the first wave with their own, so the canary's value
    carries nearly all of its 20 releases. Canary: x = 3, label 1 (along the
    public direction) or 0.
    """
    X = np.array([[3.0], [-0.5]])
    y = np.array([1 if canary else 0, 0])
    valuator = DPDataValuator(epsilon=EPSILON, n_permutations=20, random_state=0,
                              noise_seed=noise_seed)
    return valuator.fit(X, y, X_val=X_VAL, y_val=Y_VAL)


def multinomial_walk_fit(canary, noise_seed):
    """Three classes (the multinomial kernel); canary labelled 2 or 0."""
    X_val = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]] * 2)
    y_val = np.array([0, 1, 2] * 2)
    X = np.array([[0.0, 3.0], [-0.5, 0.0]])
    y = np.array([2 if canary else 0, 1])
    valuator = DPDataValuator(epsilon=EPSILON, n_permutations=4, noise="iid", q=0.0,
                              learning_rate=0.05, standardize=False,
                              random_state=0, noise_seed=noise_seed)
    return valuator.fit(X, y, X_val=X_val, y_val=y_val)


def regression_walk_fit(canary, noise_seed):
    """Ridge; the canary's target +3 or -3 (its gradient clipped either way)."""
    X = np.array([[3.0], [-0.5]])
    y = np.array([3.0 if canary else -3.0, -0.5])
    valuator = DPDataValuator(Ridge(), epsilon=EPSILON, n_permutations=4, noise="iid",
                              q=0.0, learning_rate=0.05, utility="neg_mse",
                              random_state=0, noise_seed=noise_seed)
    return valuator.fit(X, y, X_val=X_VAL, y_val=X_VAL[:, 0])


def mlp_walk_fit(canary, noise_seed, subspace="public"):
    """An MLP's walk (issue 24): along the public line with the shipped
    defaults, or the full-space walk (every parameter released, i.i.d.)."""
    X = np.array([[3.0], [-0.5]])
    y = np.array([1 if canary else 0, 0])
    extra = {} if subspace == "public" else dict(noise="iid", q=0.0,
                                                 learning_rate=0.05)
    valuator = DPDataValuator(MLPClassifier((2,), random_state=0), epsilon=EPSILON,
                              n_permutations=20, random_state=0,
                              noise_seed=noise_seed, subspace=subspace, **extra)
    return valuator.fit(X, y, X_val=X_VAL, y_val=Y_VAL)


def label_quality_fit(canary, noise_seed, kind):
    """DPLabelQuality's canary score: +clip or -clip (-clip or 0 for a
    regressor), on its multiclass, regressor and group paths."""
    # RidgeClassifier: a fast public model (the path is the same for any).
    X_val, y_val, estimator, groups = X_VAL, Y_VAL, RidgeClassifier(), None
    if kind == "multiclass":
        X_val = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0], [0.0, -2.0]] * 2)
        y_val = np.array([0, 1, 2, 2, 0, 1, 2, 2])
        X, y = np.array([[0.0, 3.0], [-0.5, 0.0]]), np.array([2 if canary else 0, 1])
    elif kind == "regressor":
        estimator, y_val = Ridge(), X_VAL[:, 0]
        X, y = np.array([[1.0], [-0.5]]), np.array([0.8 if canary else 9.0, -0.4])
    elif kind == "private network":
        # The private fit of a network public model (its own part, 5% of
        # mu^2, NETWORK_FIT_STEPS releases of its packed parameters), then
        # the canary's score under it: the network fit's draw site.
        others = np.tile([1.0, -1.0], 1000)
        X = np.r_[3.0, others][:, None]
        y = np.r_[1 if canary else 0, (others > 0).astype(int)]
        scorer = DPLabelQuality(MLPClassifier((2,), random_state=0), epsilon=EPSILON,
                                clip=0.5, public_model="private", random_state=0,
                                noise_seed=noise_seed)
        return scorer.fit(X, y, X_val=X_val, y_val=y_val)
    elif kind == "private public model":
        # The public model fitted privately on the training rows (a part of
        # its own, 5% of mu^2), then the canary's score under it (the rest).
        # 2,000 clean rows besides the canary keep the fitted model's sign
        # (with two rows the fit's noise would pick it at random, and the
        # canary's score would not depend on its label).
        others = np.tile([1.0, -1.0], 1000)
        X = np.r_[3.0, others][:, None]
        y = np.r_[1 if canary else 0, (others > 0).astype(int)]
        scorer = DPLabelQuality(estimator, epsilon=EPSILON, clip=0.5,
                                public_model="private", random_state=0,
                                noise_seed=noise_seed)
        return scorer.fit(X, y, X_val=X_val, y_val=y_val)
    else:  # a group of three rows, the unit (all its labels change)
        X = np.array([[3.0], [2.5], [2.0], [-0.5]])
        y = np.array([1, 1, 1, 0]) if canary else np.array([0, 0, 0, 0])
        groups = np.array([0, 0, 0, 1])
    scorer = DPLabelQuality(estimator, epsilon=EPSILON, clip=0.5, random_state=0,
                            noise_seed=noise_seed,
                            privacy_unit="group" if kind == "groups" else "record")
    return scorer.fit(X, y, X_val=X_val, y_val=y_val, groups=groups)


def federated_fit(canary, noise_seed, n_features=1, **params):
    """Canary client's value from DPFederatedValuator (two clients).

    The canary's row repeats one value over ``n_features`` columns, as the
    validation rows do: with quantisation (sensitivity ``c sqrt(p)``) its
    clipped gradient then reaches ``c`` on every coordinate.
    """
    X = np.repeat([[3.0], [0.5]], n_features, axis=1)
    y = np.array([1 if canary else 0, 1])
    X_val = np.repeat(X_VAL, n_features, axis=1)
    valuator = DPFederatedValuator(
        LogisticRegression(fit_intercept=False), n_rounds=4,
        n_permutations_per_round="all", epsilon=EPSILON, learning_rate=0.01,
        utility="neg_loss", standardize=False, classes=[0, 1], random_state=0,
        noise_seed=noise_seed, privacy_unit="group", **params)
    return valuator.fit(X, y, groups=[0, 1], X_val=X_val, y_val=Y_VAL)


class NoisyLabelSum(ClassifierMixin, BaseEstimator):
    """A declared mu-GDP final model: the kept labels' sum plus N(0, 1/mu^2).

    Replace-one of a kept row moves the sum by at most 1; the rows a
    cleaning step keeps are chosen by its private release, and given that
    choice neighbours differ in one row, so the step composes.
    """

    def __init__(self, mu=0.3, noise_seed=None):
        self.mu = mu
        self.noise_seed = noise_seed

    def __dp_guarantee__(self):
        return {"mu": self.mu}

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        noise = np.random.default_rng(self.noise_seed).normal(scale=1 / self.mu)
        self.label_sum_ = float(np.sum(y == 1) + noise)
        return self

    def predict(self, X):
        return np.full(len(X), int(self.label_sum_ > 0))


def filter_fit(canary, noise_seed):
    X = np.array([[3.0], [-0.5]])
    y = np.array([1 if canary else 0, 0])
    step = DPFilteredClassifier(
        DPLabelQuality(RidgeClassifier(), epsilon=EPSILON, clip=0.5, random_state=0,
                       noise_seed=noise_seed),
        NoisyLabelSum(noise_seed=noise_seed + 1), drop_fraction=0.5)
    return step.fit(X, y, X_val=X_VAL, y_val=Y_VAL)


def filter_statistic(canary, noise_seed):
    """A cleaning step's public outputs, the canary's score and the final
    model's noisy label sum, combined by their noise stds (each one's
    likelihood-ratio direction)."""
    step = filter_fit(canary, noise_seed)
    report = step.valuator_.privacy_report_
    return (step.valuator_.values_[0] / report["noise_std"] ** 2
            + step.estimator_.label_sum_ * step.estimator.mu**2)


@functools.cache
def filter_claim():
    """The replace-one mu of the step's spend, read off privacy_spent."""
    spent = privacy_spent(filter_fit(True, 0))
    # The audit's fits fix noise_seed (reproducible audits), so their only
    # leak is that seed.
    assert all("noise_seed" in leak for leak in spent["leaks"]), spent["leaks"]
    return gdp_mu(spent["epsilon_replace_one"], DELTA)


# Each audited path: a fit on the canary's data set (True) or its neighbour.
REPLACE_ONE_MU = 2 * gdp_mu(EPSILON, DELTA)
FITS = {
    "default walk": default_walk_fit,
    "multinomial walk": multinomial_walk_fit,
    "regression walk": regression_walk_fit,
    "MLP line walk": mlp_walk_fit,
    "MLP full-space walk": functools.partial(mlp_walk_fit, subspace=None),
    "DPLabelQuality multiclass": functools.partial(label_quality_fit,
                                                   kind="multiclass"),
    "DPLabelQuality regressor": functools.partial(label_quality_fit, kind="regressor"),
    "DPLabelQuality groups": functools.partial(label_quality_fit, kind="groups"),
    "DPLabelQuality private public model": functools.partial(
        label_quality_fit, kind="private public model"),
    "DPLabelQuality private network": functools.partial(
        label_quality_fit, kind="private network"),
    "federated randk": functools.partial(federated_fit, noise="iid", q=0.0,
                                         compression=("randk", 1)),
    "federated quantize": functools.partial(federated_fit, n_features=2, noise="iid",
                                            q=0.0, clipping="coordinate",
                                            compression=("quantize", 16)),
    "federated moving average": functools.partial(federated_fit, noise="correlated",
                                                  q=0.0),
}
AUDITS = {name: (lambda fit: lambda canary, seed: fit(canary, seed).values_[0])(fit)
          for name, fit in FITS.items()}
AUDITS["filter and privacy_spent"] = filter_statistic


def claim(name):
    """The replace-one mu the path reports (checked in the test below)."""
    return filter_claim() if name == "filter and privacy_spent" else REPLACE_ONE_MU


@pytest.mark.parametrize("name", sorted(FITS))
def test_each_path_reports_the_audited_claim(name):
    report = FITS[name](True, 0).privacy_report_
    # Net of the sampler's share of delta, which moves it by under 1e-5.
    assert report["epsilon_replace_one"] == pytest.approx(
        gdp_epsilon(REPLACE_ONE_MU, DELTA), rel=1e-5)


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_audit_passes_at_the_claimed_noise(name):
    bounds = audit(AUDITS[name], n_fits=N_FITS)
    assert bounds.mu <= claim(name), (bounds, claim(name))
    assert bounds.epsilon <= gdp_epsilon(claim(name), DELTA), bounds
