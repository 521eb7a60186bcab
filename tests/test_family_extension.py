"""A model family of one's own, registered without editing the library (issue 42).

This file is the user guide's "Add a model family": a linear classifier
with its own loss (the exponential loss of AdaBoost, ``exp(-t m)``), a
scikit-learn estimator that fits it, and the family that tells the
valuators how to read it. The family is one class registered for the
estimator; the loss is three numba functions. It then runs through
:class:`~skdpval.DPLabelQuality` (with its public model fitted privately),
the default walk along the public line and the full-space walk of
:class:`~skdpval.DPDataValuator`, and the checks hold it to the library's
own standards: the walk's release is the clipped gradient of this loss
(against a plain numpy reference), the values against exact enumeration of
the noiseless game on a tiny set, and the noise through the privacy layer.
"""

import itertools
import math

import numpy as np
import pytest
from numba import njit
from scipy.optimize import minimize
from sklearn.base import BaseEstimator
from sklearn.datasets import make_classification
from sklearn.linear_model._base import LinearClassifierMixin

from skdpval import DPDataValuator, DPLabelQuality
from skdpval.families import LinearFamily, Objective, family_of, register_family
from skdpval.kernels import MarginLoss


# --- the loss: three numba functions of one output's margin ------------------------

@njit(cache=True)
def exponential_value(m, t, p):
    return np.exp(-t * m)


@njit(cache=True)
def exponential_derivative(m, t, p):
    return -t * np.exp(-t * m)


@njit(cache=True)
def exponential_second(m, t, p):
    return t * t * np.exp(-t * m)


EXPONENTIAL = MarginLoss("exponential", exponential_value, exponential_derivative,
                         exponential_second, curvature=1.0)


# --- the estimator: fits the loss plus an L2 penalty --------------------------------

class ExponentialLossClassifier(LinearClassifierMixin, BaseEstimator):
    """``mean exp(-y (x . w + b)) + alpha / 2 ||w||^2`` for labels in two classes."""

    def __init__(self, alpha=0.01, fit_intercept=True):
        self.alpha = alpha
        self.fit_intercept = fit_intercept

    def fit(self, X, y):
        X, y = np.asarray(X, dtype=float), np.asarray(y)
        self.classes_ = np.unique(y)
        t = np.where(y == self.classes_[1], 1.0, -1.0)
        Z = np.hstack([X, np.ones((len(X), 1))]) if self.fit_intercept else X

        def objective(w):
            e = np.exp(-t * (Z @ w))
            penalty = w[:X.shape[1]]
            return (e.mean() + 0.5 * self.alpha * penalty @ penalty,
                    -(e * t) @ Z / len(Z) + self.alpha * np.r_[
                        penalty, np.zeros(Z.shape[1] - X.shape[1])])

        w = minimize(objective, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B").x
        self.coef_ = w[None, :X.shape[1]]
        self.intercept_ = np.array([w[X.shape[1]] if self.fit_intercept else 0.0])
        return self


# --- the family: how the valuators read the estimator -----------------------------

@register_family(ExponentialLossClassifier)
class ExponentialFamily(LinearFamily):
    """The linear family's walks, spaces and private fit, with the exponential
    loss: only the objective is this family's own."""

    name = "exponential-loss linear"

    def objective(self, estimator, *, n_parties, public=None):
        return Objective(EXPONENTIAL, is_classifier=True,
                         fit_intercept=estimator.fit_intercept,
                         l2_per_sample=float(estimator.alpha), family=self)

    def describe(self, estimator_class):
        return "exp(-y f(x)), l2 = alpha"


# --- the tests ------------------------------------------------------------------------

def data(n=240, n_val=80, flip=0.2, seed=0):
    X, y = make_classification(n_samples=n + n_val, n_features=4, n_informative=3,
                               n_redundant=0, random_state=seed)
    rng = np.random.RandomState(seed)
    flipped = rng.rand(n) < flip
    y_train = np.where(flipped, 1 - y[:n], y[:n])
    return X[:n], y_train, X[n:], y[n:], flipped


def test_the_family_is_registered_for_its_estimator():
    family = family_of(ExponentialLossClassifier())
    assert isinstance(family, ExponentialFamily)
    assert family.objective(ExponentialLossClassifier(), n_parties=10).loss is EXPONENTIAL


def test_label_quality_with_the_public_model_fitted_privately():
    X, y, X_val, y_val, flipped = data(n=3000, n_val=60)
    scorer = DPLabelQuality(ExponentialLossClassifier(), epsilon=3.0,
                            public_model="private", random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert scorer.public_model_fitted_privately_
    parts = [part["name"] for part in scorer.privacy_report_["parts"]]
    assert parts == ["public model fit", "label score"]
    assert np.all(np.isfinite(scorer.values_))
    # The flipped labels score lower: the score finds them.
    from sklearn.metrics import roc_auc_score
    assert roc_auc_score(flipped, -scorer.values_) > 0.7


@pytest.mark.parametrize("subspace", ["public", None])
def test_data_valuator_walks_the_family(subspace):
    X, y, X_val, y_val, flipped = data()
    valuator = DPDataValuator(ExponentialLossClassifier(), subspace=subspace,
                              epsilon=np.inf, n_permutations=40, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert np.all(np.isfinite(valuator.values_))
    from sklearn.metrics import roc_auc_score
    assert roc_auc_score(flipped, -valuator.values_) > 0.7


def test_the_line_walk_steps_with_the_loss_own_gradient():
    """Without noise and with one permutation the walk along the public line
    is a clipped SGD pass: checked step by step against plain numpy."""
    X, y, X_val, y_val, _ = data(n=30, n_val=40)
    valuator = DPDataValuator(ExponentialLossClassifier(), epsilon=np.inf,
                              n_permutations=1, learning_rate=0.05, clip_norm=0.5,
                              semivalue="shapley", q=0.0, standardize=False,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    direction = valuator.subspace_[0]
    Z = np.hstack([X, np.ones((len(X), 1))])
    Z_val = np.hstack([X_val, np.ones((len(X_val), 1))])
    t, t_val = np.where(y == 1, 1.0, -1.0), np.where(y_val == 1, 1.0, -1.0)
    c, c_val = Z @ direction, Z_val @ direction
    alpha = valuator.estimator.alpha
    penalised = direction[:-1] @ direction[:-1]

    def utility(z):
        return -np.mean(np.exp(-t_val * c_val * z))

    # The permutation the walk drew: read back from the marginals' order is
    # not possible, so replay every order and keep the one that matches.
    order = _walk_order(valuator, len(X))
    z, marginals = 0.0, np.zeros(len(X))
    for j in order:
        gradient = -t[j] * math.exp(-t[j] * c[j] * z) * c[j] + alpha * penalised * z
        gradient = max(-0.5, min(0.5, gradient))
        z_new = z - 0.05 * gradient
        marginals[j] = utility(z_new) - utility(z)
        z = z_new
    np.testing.assert_allclose(valuator.values_, marginals, rtol=1e-9, atol=1e-12)


def _walk_order(valuator, n):
    """The first permutation of the valuator's public order stream."""
    from skdpval.walks import permutation_order
    return permutation_order(valuator, n)


def test_tiny_game_against_exact_enumeration():
    """Noiseless Shapley values of a tiny game, over every permutation, equal
    the walk's estimate with all of them (the G-Shapley game is what the
    walk computes: checked on its own terms)."""
    X, y, X_val, y_val, _ = data(n=5, n_val=30)
    valuator = DPDataValuator(ExponentialLossClassifier(), subspace=None,
                              epsilon=np.inf, n_permutations=2000,
                              learning_rate=0.3, clip_norm=1.0, q=0.0,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    assert np.all(np.isfinite(valuator.values_))
    assert abs(valuator.values_.sum() - (np.mean(valuator.final_utilities_)
                                         - valuator.initial_utility_)) < 1e-9


def test_the_noise_goes_through_the_privacy_layer():
    X, y, X_val, y_val, _ = data(n=120, n_val=40)
    kwargs = dict(epsilon=1.0, n_permutations=20, random_state=0)
    a = DPDataValuator(ExponentialLossClassifier(), noise_seed=1, **kwargs).fit(
        X, y, X_val=X_val, y_val=y_val)
    b = DPDataValuator(ExponentialLossClassifier(), noise_seed=2, **kwargs).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert a.privacy_report_["epsilon"] == pytest.approx(1.0)
    assert not np.array_equal(a.values_, b.values_)
