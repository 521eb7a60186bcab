"""The model registry: coverage of scikit-learn, and each mapping's objective.

A mapping is right when the walk, without noise or clipping, minimises the
estimator's own objective: many small-step passes of the walk's kernel reach
the objective value at the estimator's own fitted coefficients (to 1e-3
relative). The objective is evaluated with the plain-numpy reference losses.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn import linear_model as lm
from sklearn import svm
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import all_estimators
from sklearn.utils.class_weight import compute_class_weight

from reference import loss_and_dloss
from skdpval import DPDataValuator
from skdpval.kernels import _linear, _losses
from skdpval.families import Family, Refused, family_of, registered
from skdpval.families._base import row_weights

REFERENCE_NAMES = {
    _losses.LOGISTIC: "logistic", _losses.MULTINOMIAL: "multinomial",
    _losses.SQUARED: "squared", _losses.HINGE: "hinge",
    _losses.SQUARED_HINGE: "squared_hinge",
    _losses.MODIFIED_HUBER: "modified_huber", _losses.HUBER: "huber",
    _losses.PERCEPTRON: "perceptron",
    _losses.EPSILON_INSENSITIVE: "epsilon_insensitive",
    _losses.SQUARED_EPSILON_INSENSITIVE: "squared_epsilon_insensitive",
    _losses.PINBALL: "pinball", _losses.TWEEDIE: "tweedie",
}


def objective_of(estimator, n_parties):
    """The objective the valuators read from ``estimator`` for ``n_parties``."""
    return family_of(estimator).objective(estimator, n_parties=n_parties)


def linear_estimators():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated PA classes
        return [(name, cls) for name, cls in all_estimators()
                if cls.__module__.startswith(("sklearn.linear_model.", "sklearn.svm.",
                                              "sklearn.neural_network."))]


def test_every_linear_model_and_svm_is_supported_or_refused_with_a_reason():
    """Fails when scikit-learn adds an estimator the registry does not know."""
    found = linear_estimators()
    assert len(found) >= 40
    registry = registered()
    unknown = [name for name, cls in found if cls not in registry]
    assert unknown == [], ("register these with a family or refuse them "
                           f"(skdpval.families.linear, .network): {unknown}")
    for name, cls in found:
        entry = registry[cls]
        assert isinstance(entry, (Family, Refused)), name
        if isinstance(entry, Refused):
            assert entry.reason and entry.closest
            supported = {c.__name__ for c, e in registry.items()
                         if isinstance(e, Family)}
            assert any(s in entry.closest for s in supported), name
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                estimator = cls(lm.LinearRegression()) if name == "RANSACRegressor" \
                    else cls()
            with pytest.raises(TypeError, match=f"{name} is not supported.*closest"
                               ".*DPLabelQuality"):
                family_of(estimator).objective(estimator, n_parties=10)
        else:
            assert entry.describe(cls)


def test_the_issue_s_list_is_supported():
    names = {cls.__name__ for cls, e in registered().items() if isinstance(e, Family)}
    assert {"Lasso", "ElasticNet", "LogisticRegression", "SGDClassifier",
            "SGDRegressor", "Perceptron", "PassiveAggressiveClassifier",
            "PassiveAggressiveRegressor", "LinearSVC", "LinearSVR", "HuberRegressor",
            "QuantileRegressor", "PoissonRegressor", "GammaRegressor",
            "TweedieRegressor", "RidgeClassifier", "LassoCV", "ElasticNetCV",
            "RidgeCV", "RidgeClassifierCV", "LogisticRegressionCV"} <= names


# --- each mapping minimises the estimator's own objective ----------------------

def make_problem(estimator, n=40, d=3, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    if is_classifier(estimator):
        scores = X @ np.c_[w, rng.normal(size=(d, n_classes - 1))] if n_classes > 2 \
            else (X @ w)[:, None]
        if n_classes == 2:
            y = (scores[:, 0] + rng.normal(scale=1.0, size=n) > 0).astype(int)
        else:
            y = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1)
        return X, y
    z = 0.3 * X @ w
    if isinstance(estimator, (lm.PoissonRegressor,)) or (
            isinstance(estimator, lm.TweedieRegressor) and 1 <= estimator.power < 2):
        return X, rng.poisson(np.exp(z + 0.5)).astype(float)
    if isinstance(estimator, (lm.GammaRegressor, lm.TweedieRegressor)):
        return X, rng.gamma(2.0, np.exp(z) / 2.0)
    return X, 2.0 * X @ w + 1.0 + rng.standard_t(3, size=n)


def estimator_theta(fitted, spec, n_outputs):
    coef = np.reshape(fitted.coef_, (n_outputs, -1))
    if not spec.fit_intercept:
        return coef
    intercept = np.reshape(np.broadcast_to(fitted.intercept_, (n_outputs,)), (-1, 1))
    return np.hstack([coef, intercept / spec.intercept_scaling])


def walk_objective(theta, X, T, loss, spec, weights):
    """Mean weighted reference loss plus the spec's penalty (plain numpy)."""
    name = REFERENCE_NAMES[loss]
    total = sum(w * loss_and_dloss(name, theta @ x, t, spec.loss_param)[0]
                for x, t, w in zip(X, T, weights))
    n_pen = X.shape[1] - (spec.fit_intercept and not spec.penalize_intercept)
    W = theta[:, :n_pen]
    return (total / len(X) + 0.5 * spec.l2_per_sample * np.sum(W ** 2)
            + spec.l1_per_sample * np.sum(np.abs(W)))


def walked_theta(X, T, loss, spec, weights, *, passes, rate, seed=0):
    """Noiseless, unclipped passes of the walk's kernel, rate ``rate / sqrt(t)``;
    the mean of the second half's end points (for the non-smooth losses)."""
    rng = np.random.default_rng(seed)
    theta = np.zeros((T.shape[1], X.shape[1]))
    n_pen = X.shape[1] - (spec.fit_intercept and not spec.penalize_intercept)
    mean, counted = np.zeros_like(theta), 0
    for t in range(1, passes + 1):
        theta = _linear.sgd_pass(
            X, T, loss=loss, loss_param=spec.loss_param, l2=spec.l2_per_sample,
            l1=spec.l1_per_sample, n_penalized=n_pen, clip_norm=np.inf,
            learning_rate=rate / np.sqrt(t), theta_init=theta,
            order=rng.permutation(len(X)), row_weights=weights)
        if t > passes // 2:
            counted += 1
            mean += (theta - mean) / counted
    return mean


TIGHT = dict(tol=1e-12, max_iter=100_000)
# (estimator, exact: its solver reaches the optimum, so both objectives must agree;
# otherwise, SGD-fitted, the walk must do at least as well), extra options.
CASES = [
    (lm.LinearRegression(), True),
    (lm.Ridge(alpha=3.0), True),
    (lm.RidgeClassifier(alpha=2.0), True),
    (lm.RidgeClassifier(alpha=2.0, class_weight={0: 3.0, 1: 1.0}), True),
    (lm.Lasso(alpha=0.2, **TIGHT), True),
    (lm.ElasticNet(alpha=0.3, l1_ratio=0.4, **TIGHT), True),
    (lm.LassoLars(alpha=0.05), True),
    (lm.LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000), True),
    (lm.LogisticRegression(C=0.5, l1_ratio=1.0, solver="saga", **TIGHT), True),
    (lm.LogisticRegression(C=0.5, l1_ratio=0.5, solver="saga", **TIGHT), True),
    (lm.LogisticRegression(C=0.5, solver="liblinear", tol=1e-12, max_iter=10_000,
                           intercept_scaling=2.0), True),
    (lm.LogisticRegression(C=0.5, class_weight="balanced", tol=1e-12,
                           max_iter=10_000), True),
    (svm.LinearSVC(C=0.5, tol=1e-12, max_iter=1_000_000, random_state=0), True),
    (svm.LinearSVC(C=0.5, loss="hinge", tol=1e-12, max_iter=1_000_000, random_state=0), True),
    (svm.LinearSVC(C=0.5, penalty="l1", tol=1e-12, max_iter=1_000_000, random_state=0), True),
    (svm.LinearSVR(C=0.5, epsilon=0.5, tol=1e-12, max_iter=1_000_000), True),
    (svm.LinearSVR(C=0.5, epsilon=0.5, loss="squared_epsilon_insensitive",
                   tol=1e-12, max_iter=1_000_000), True),
    (lm.HuberRegressor(alpha=1.0, epsilon=1.35, tol=1e-12, max_iter=10_000), True),
    (lm.QuantileRegressor(quantile=0.3, alpha=0.05), True),
    (lm.PoissonRegressor(alpha=0.1, tol=1e-12, max_iter=10_000), True),
    (lm.GammaRegressor(alpha=0.1, tol=1e-12, max_iter=10_000), True),
    (lm.TweedieRegressor(power=1.5, alpha=0.1, tol=1e-12, max_iter=10_000), True),
    (lm.SGDClassifier(loss="hinge", penalty="elasticnet", alpha=0.05,
                      random_state=0), False),
    (lm.SGDClassifier(loss="modified_huber", penalty="l1", alpha=0.05,
                      random_state=0), False),
    (lm.SGDClassifier(loss="perceptron", penalty="l2", alpha=0.05,
                      random_state=0), False),
    (lm.SGDRegressor(loss="epsilon_insensitive", penalty="l1", alpha=0.05,
                     epsilon=0.3, random_state=0), False),
    (lm.SGDRegressor(loss="squared_epsilon_insensitive", alpha=0.05, epsilon=0.3,
                     random_state=0), False),
    (lm.SGDRegressor(loss="huber", penalty="elasticnet", alpha=0.05,
                     random_state=0), False),
    (lm.Perceptron(penalty="l1", alpha=0.05, random_state=0), False),
]


def case_id(case):
    return repr(case[0]).replace(" ", "").replace("\n", "")[:90]


@pytest.mark.parametrize("estimator, exact", CASES, ids=[case_id(c) for c in CASES])
def test_the_walk_minimises_the_estimator_s_objective(estimator, exact):
    X, y = make_problem(estimator, n_classes=2)
    n = len(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = clone(estimator).fit(X, y)
        family = family_of(estimator)
        public = family.public_params(estimator, X, y, 0)  # Huber's scale: its own here
    spec = family.objective(estimator, n_parties=n, public=public)
    if spec.is_classifier:
        T, loss = family.encode_targets(spec, np.searchsorted(fitted.classes_, y), 2)
    else:
        T, loss = y[:, None], spec.loss
    weights, _ = row_weights(spec, np.searchsorted(fitted.classes_, y)
                             if spec.is_classifier else y, np.asarray(y), [0, 1]
                             if spec.is_classifier else None, None)
    Xa = np.hstack([X, np.full((n, 1), spec.intercept_scaling)]) \
        if spec.fit_intercept else X
    theta_estimator = estimator_theta(fitted, spec, T.shape[1])
    theta_walk = walked_theta(Xa, T, loss, spec, weights, passes=3000, rate=0.05)
    at_estimator = walk_objective(theta_estimator, Xa, T, loss, spec, weights)
    at_walk = walk_objective(theta_walk, Xa, T, loss, spec, weights)
    if exact:
        assert_allclose(at_walk, at_estimator, rtol=1e-3)
    else:
        assert at_walk <= at_estimator * (1 + 1e-3)


def test_multinomial_and_one_vs_rest_reach_the_estimator_s_objective():
    for estimator in (lm.LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000),
                      lm.RidgeClassifier(alpha=2.0)):
        X, y = make_problem(estimator, n_classes=3)
        fitted = clone(estimator).fit(X, y)
        spec = objective_of(estimator, len(X))
        T, loss = spec.family.encode_targets(spec, y, 3)
        Xa = np.hstack([X, np.ones((len(X), 1))])
        ones = np.ones(len(X))
        theta_walk = walked_theta(Xa, T, loss, spec, ones, passes=2000, rate=0.05)
        assert_allclose(
            walk_objective(theta_walk, Xa, T, loss, spec, ones),
            walk_objective(estimator_theta(fitted, spec, 3), Xa, T, loss, spec, ones),
            rtol=1e-3)


def test_a_wrong_mapping_would_fail():
    """Mutation: doubling the L2 term moves the walk's optimum off the estimator's."""
    estimator = lm.LogisticRegression(C=0.05, tol=1e-12, max_iter=10_000)
    X, y = make_problem(estimator)
    fitted = clone(estimator).fit(X, y)
    spec = objective_of(estimator, len(X))
    wrong = type(spec)(**{**spec.__dict__, "l2_per_sample": 2 * spec.l2_per_sample})
    T, loss = spec.family.encode_targets(spec, y, 2)
    Xa = np.hstack([X, np.ones((len(X), 1))])
    ones = np.ones(len(X))
    theta_walk = walked_theta(Xa, T, loss, wrong, ones, passes=1000, rate=0.05)
    at_walk = walk_objective(theta_walk, Xa, T, loss, spec, ones)
    at_estimator = walk_objective(estimator_theta(fitted, spec, 1), Xa, T, loss, spec,
                                  ones)
    assert at_walk > at_estimator * (1 + 1e-3)


# --- weights --------------------------------------------------------------------

def test_sample_weight_reaches_the_weighted_estimator():
    estimator = lm.LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000)
    X, y = make_problem(estimator)
    sample_weight = np.random.default_rng(1).uniform(0.2, 3.0, size=len(X))
    fitted = clone(estimator).fit(X, y, sample_weight=sample_weight)
    spec = objective_of(estimator, len(X))
    weights, _ = row_weights(spec, y, y, [0, 1], sample_weight)
    T, loss = spec.family.encode_targets(spec, y, 2)
    Xa = np.hstack([X, np.ones((len(X), 1))])
    theta_walk = walked_theta(Xa, T, loss, spec, weights, passes=2000, rate=0.05)
    assert_allclose(walk_objective(theta_walk, Xa, T, loss, spec, weights),
                    walk_objective(estimator_theta(fitted, spec, 1), Xa, T, loss,
                                   spec, weights), rtol=1e-3)


def test_balanced_class_weight_comes_from_the_public_labels():
    spec = objective_of(lm.LogisticRegression(class_weight="balanced"), 10)
    y_val = np.array([0, 0, 0, 1])
    expected = compute_class_weight("balanced", classes=np.array([0, 1]), y=y_val)
    for y in (np.array([0, 1, 1, 1, 1]), np.array([0, 0, 0, 0, 1])):
        weights, weights_val = row_weights(spec, y, y_val, np.array(["a", "b"]), None)
        assert_allclose(weights, expected[y])  # whatever the private label mix
        assert_allclose(weights_val, expected[y_val])


def test_weights_rescale_to_n_where_the_estimator_does():
    sample_weight = np.array([1.0, 2.0, 3.0, 2.0])
    lasso = objective_of(lm.Lasso(), 4)
    logistic = objective_of(lm.LogisticRegression(), 4)
    assert_allclose(row_weights(lasso, np.zeros(4), np.zeros(2), None,
                                sample_weight)[0], sample_weight * 4 / 8)
    assert_allclose(row_weights(logistic, np.array([0, 1, 0, 1]), np.array([0, 1]),
                                [0, 1], sample_weight)[0], sample_weight)


def test_valuator_sample_weight_follows_the_samples():
    """Weights reach the walk in the order of the samples, groups or not: a
    weight of 0 makes a sample's value exactly 0 without noise (and without a
    penalty, which is not weighted)."""
    X, y = make_problem(lm.LogisticRegression(), n=30)
    sample_weight = np.ones(30)
    sample_weight[[3, 17]] = 0.0
    valuator = DPDataValuator(lm.LogisticRegression(C=np.inf), noise="none",
                              epsilon=None,
                              n_permutations=3, random_state=0, subspace=None)
    values = valuator.fit(X[:20], y[:20], X[20:], y[20:],
                          sample_weight=sample_weight[:20]).values_
    assert values[3] == 0 and values[17] == 0
    assert np.count_nonzero(values) >= 15
    grouped = valuator.fit(X[:20], y[:20], X[20:], y[20:], groups=np.arange(20)[::-1],
                           sample_weight=sample_weight[:20]).values_
    assert grouped[19 - 3] == 0 and grouped[19 - 17] == 0


def test_class_weight_changes_the_walk_and_cv_choices_are_recorded():
    X, y = make_problem(lm.LogisticRegression(), n=60)
    base = dict(noise="none", epsilon=None, n_permutations=2, random_state=0,
                standardize=False)  # the CV then sees X_val as given
    plain = DPDataValuator(lm.LogisticRegression(), **base).fit(X[:40], y[:40],
                                                                 X[40:], y[40:])
    weighted = DPDataValuator(lm.LogisticRegression(class_weight={0: 5.0}),
                              **base).fit(X[:40], y[:40], X[40:], y[40:])
    assert not np.allclose(plain.values_, weighted.values_)
    cv = DPDataValuator(lm.RidgeClassifierCV(alphas=[0.1, 1.0, 10.0]), **base).fit(
        X[:40], y[:40], X[40:], y[40:])
    chosen = lm.RidgeClassifierCV(alphas=[0.1, 1.0, 10.0]).fit(X[40:], y[40:]).alpha_
    assert cv.chosen_params_ == {"alpha": chosen}
    fixed = DPDataValuator(lm.RidgeClassifier(alpha=chosen), **base).fit(
        X[:40], y[:40], X[40:], y[40:])
    assert_allclose(cv.values_, fixed.values_, rtol=1e-12)


def test_public_direction_objective_with_l1_and_weights_matches_finite_differences():
    """The public direction's objective (weighted mean loss plus L2 and L1 terms
    in a basis) and its gradient agree with central differences away from kinks."""
    from scipy.optimize import check_grad
    from skdpval.kernels import _subspace_problem

    rng = np.random.default_rng(5)
    X = np.hstack([rng.normal(size=(12, 3)), np.ones((12, 1))])
    T = np.exp(0.3 * rng.normal(size=(12, 1)))
    basis = np.linalg.qr(rng.normal(size=(4, 2)))[0].T
    weights = rng.uniform(0.5, 2.0, size=12)
    objective = _subspace_problem.mean_loss_and_gradient(
        basis, X, T, loss=_losses.TWEEDIE, loss_param=1.5, l2=0.2, n_penalized=3,
        l1=0.1, row_weights=weights)
    z = np.array([0.4, -0.7])
    value, _ = objective(z)
    theta = z @ basis
    margins = X @ theta
    expected = (np.mean(weights * np.array([
        loss_and_dloss("tweedie", margins[i:i + 1], T[i], 1.5)[0] for i in range(12)]))
        + 0.1 * np.sum(np.abs(theta[:3])) + 0.1 * np.sum(theta[:3] ** 2))
    assert_allclose(value, expected, rtol=1e-12)
    assert check_grad(lambda v: objective(v)[0], lambda v: objective(v)[1], z) < 1e-6


def test_public_direction_objective_in_the_parameters_equals_an_identity_basis():
    """basis=None (the valuator's public direction) computes in the
    parameters: the same value and gradient as an identity basis, for a
    multinomial model with weights, L2 and L1, and central differences agree."""
    from scipy.optimize import check_grad
    from skdpval.kernels import _subspace_problem

    rng = np.random.default_rng(6)
    X = np.hstack([rng.normal(size=(20, 4)), np.ones((20, 1))])
    T = np.eye(3)[rng.integers(0, 3, 20)]
    settings = dict(loss=_losses.MULTINOMIAL, loss_param=0.0, l2=0.3, n_penalized=4,
                    l1=0.05, row_weights=rng.uniform(0.5, 2.0, size=20))
    direct = _subspace_problem.mean_loss_and_gradient(None, X, T, **settings)
    through = _subspace_problem.mean_loss_and_gradient(np.eye(15), X, T, **settings)
    z = rng.normal(size=15)
    (value, gradient), (value_eye, gradient_eye) = direct(z), through(z)
    assert value == pytest.approx(value_eye, rel=1e-13)
    assert_allclose(gradient, gradient_eye, rtol=1e-12, atol=1e-15)
    assert check_grad(lambda v: direct(v)[0], lambda v: direct(v)[1], z) < 1e-6
