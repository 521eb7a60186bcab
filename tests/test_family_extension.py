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
from sklearn.metrics import roc_auc_score

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
    assert roc_auc_score(flipped, -scorer.values_) > 0.6


@pytest.mark.parametrize("subspace", ["public", None])
def test_data_valuator_walks_the_family(subspace):
    X, y, X_val, y_val, flipped = data()
    valuator = DPDataValuator(ExponentialLossClassifier(), subspace=subspace,
                              epsilon=np.inf, n_permutations=40, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert np.all(np.isfinite(valuator.values_))
    assert roc_auc_score(flipped, -valuator.values_) > 0.7
    # The walk ran the library's compiled kernel for this loss (along the
    # line, its tabulated walk), not a Python path.
    from skdpval.kernels import _linear, _subspace
    kernel = _subspace._line_walk if subspace == "public" else _linear._walk
    assert any("MarginLoss(exponential" in str(signature)
               for signature in kernel.signatures)


def _first_order(random_state, n_parties):
    """The first permutation of a fit's public orders: the walk's seed is the
    third drawn from ``random_state`` (the split, the search, the walks)."""
    from skdpval.kernels._orders import permutations
    from skdpval.walks._waves import stream_words
    seeds = np.random.RandomState(random_state).randint(np.iinfo(np.int32).max, size=3)
    return permutations(stream_words(np.random.SeedSequence(seeds[2]), 1),
                        n_parties)[0]


def _exponential_utility(theta, Z_val, t_val):
    return -np.mean(np.exp(-t_val * (Z_val @ theta)))


def _reference_walk(order, Z, t, Z_val, t_val, theta_shape, project, rate, clip,
                    alpha, penalised):
    """A noiseless walk in plain numpy: each party's gradient of the
    exponential loss (and the L2 term) in the walk's coordinates, clipped
    to ``clip``, one step of ``rate``; each marginal the change in the
    validation utility."""
    z = np.zeros(theta_shape)
    marginals = np.zeros(len(Z))
    for j in order:
        theta = project(z)
        m = Z[j] @ theta
        gradient = (-t[j] * math.exp(-t[j] * m)) * project.jacobian(Z[j]) + alpha * (
            penalised @ z)
        norm = np.linalg.norm(gradient)
        if norm > clip:
            gradient = gradient * (clip / norm)
        before = _exponential_utility(theta, Z_val, t_val)
        z = z - rate * gradient
        marginals[j] = _exponential_utility(project(z), Z_val, t_val) - before
    return marginals


class _Line:
    """``theta = z b`` along the public direction ``b``."""

    def __init__(self, direction):
        self.direction = direction

    def __call__(self, z):
        return z[0] * self.direction

    def jacobian(self, row):
        return np.array([row @ self.direction])


class _Full:
    """``theta = z``: every parameter."""

    def __call__(self, z):
        return z

    def jacobian(self, row):
        return row


def _tiny(n, n_val, seed=1):
    X, y, X_val, y_val, _ = data(n=n, n_val=n_val, seed=seed)
    Z = np.hstack([X, np.ones((n, 1))])
    Z_val = np.hstack([X_val, np.ones((n_val, 1))])
    return X, y, X_val, y_val, Z, Z_val, np.where(y == 1, 1.0, -1.0), np.where(
        y_val == 1, 1.0, -1.0)


def test_the_line_walk_releases_the_loss_own_clipped_gradient():
    """One noiseless permutation along the public line, step by step against
    plain numpy: the release is this loss's clipped gradient, the marginal
    its change of the validation utility (read from the line's table)."""
    X, y, X_val, y_val, Z, Z_val, t, t_val = _tiny(30, 40)
    estimator = ExponentialLossClassifier(alpha=0.01)
    valuator = DPDataValuator(estimator, epsilon=np.inf, n_permutations=1, q=0.0,
                              learning_rate=0.05, clip_norm=0.5, standardize=False,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    direction = valuator.subspace_[0]
    penalised = np.array([[direction[:-1] @ direction[:-1]]])
    expected = _reference_walk(_first_order(0, len(X)), Z, t, Z_val, t_val, (1,),
                               _Line(direction), 0.05, 0.5, 0.01, penalised)
    np.testing.assert_allclose(valuator.values_, expected, rtol=1e-9, atol=1e-12)


def test_tiny_game_against_exact_enumeration():
    """Noiseless full-space values of a five-party game: the walk's estimate
    over random permutations against the exact Shapley values of the same
    walk game over all 120 orders, within four of its reported standard
    errors."""
    X, y, X_val, y_val, Z, Z_val, t, t_val = _tiny(5, 30)
    rate, clip, alpha = 0.3, 1.0, 0.01
    valuator = DPDataValuator(ExponentialLossClassifier(alpha=alpha), subspace=None,
                              epsilon=np.inf, n_permutations=3000, q=0.0,
                              learning_rate=rate, clip_norm=clip, standardize=False,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    penalised = np.diag(np.r_[np.ones(X.shape[1]), 0.0])
    exact = np.mean([_reference_walk(order, Z, t, Z_val, t_val, (Z.shape[1],),
                                     _Full(), rate, clip, alpha, penalised)
                     for order in itertools.permutations(range(len(X)))], axis=0)
    assert np.all(valuator.values_stderr_ > 0)
    assert np.all(np.abs(valuator.values_ - exact) < 4 * valuator.values_stderr_)
    # The values add up to the walk's mean gain (Shapley, q = 0).
    assert valuator.values_.sum() == pytest.approx(
        np.mean(valuator.final_utilities_) - valuator.initial_utility_, abs=1e-12)


def test_the_noise_goes_through_the_privacy_layer():
    X, y, X_val, y_val, _ = data(n=120, n_val=40)
    kwargs = dict(epsilon=1.0, n_permutations=20, random_state=0)
    a = DPDataValuator(ExponentialLossClassifier(), noise_seed=1, **kwargs).fit(
        X, y, X_val=X_val, y_val=y_val)
    b = DPDataValuator(ExponentialLossClassifier(), noise_seed=2, **kwargs).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert a.privacy_report_["epsilon"] == pytest.approx(1.0)
    assert not np.array_equal(a.values_, b.values_)
