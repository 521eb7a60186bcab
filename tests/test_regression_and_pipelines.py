"""Regression walks on standardised targets, and Pipelines as the wrapped model."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import make_regression
from sklearn.linear_model import LogisticRegression, Ridge, SGDRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skdpval import DPDataValuator, DPLabelQuality
from skdpval.families._parties import standardize_by_validation


def _regression(seed=0):
    X, y = make_regression(60, 4, noise=5.0, random_state=seed)
    y = 150 + 40 * y / y.std()  # targets far from 0, as in diabetes
    return X[:40], y[:40], X[40:], y[40:]


@pytest.mark.parametrize("utility, degree", [("neg_loss", 2), ("neg_mse", 2), ("r2", 0)])
@pytest.mark.parametrize("noise", ["none", "iid"])
def test_values_are_in_the_utilitys_units(utility, degree, noise):
    """Targets a + c y give the same walk: values scale by c**degree, shift-free."""
    X, y, X_val, y_val = _regression()
    kw = dict(n_permutations=20, noise=noise, utility=utility, random_state=0,
              noise_seed=3, epsilon=None if noise == "none" else 3.0)
    base = DPDataValuator(Ridge(), **kw).fit(X, y, X_val=X_val, y_val=y_val)
    moved = DPDataValuator(Ridge(), **kw).fit(X, -7 + 10 * y, X_val=X_val,
                                              y_val=-7 + 10 * y_val)
    assert np.any(base.values_ != 0)
    assert_allclose(moved.values_, 10.0**degree * base.values_, rtol=1e-9,
                    atol=1e-12 * np.abs(moved.values_).max())
    assert_allclose(moved.initial_utility_, 10.0**degree * base.initial_utility_,
                    rtol=1e-9, atol=1e-12)


def test_huber_epsilon_follows_the_target_scale():
    """SGDRegressor(loss='huber') walks the same objective at any target scale."""
    X, y, X_val, y_val = _regression()
    kw = dict(n_permutations=10, noise="none", random_state=0)
    base = DPDataValuator(SGDRegressor(loss="huber", epsilon=20.0), **kw).fit(
        X, y, X_val=X_val, y_val=y_val)
    scaled = DPDataValuator(SGDRegressor(loss="huber", epsilon=200.0), **kw).fit(
        X, 10 * y, X_val=X_val, y_val=10 * y_val)
    assert_allclose(scaled.values_, 100 * base.values_, rtol=1e-9,
                    atol=1e-12 * np.abs(scaled.values_).max())


def test_walk_starts_at_the_validation_mean():
    """Centred targets: the initial model predicts mean(y_val), not 0."""
    X, y, X_val, y_val = _regression()
    val = DPDataValuator(Ridge(), n_permutations=5, noise="none", utility="neg_mse",
                         random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    assert val.initial_utility_ == pytest.approx(-np.var(y_val), rel=1e-12)


def test_without_intercept_features_are_scaled_not_centred():
    rng = np.random.default_rng(0)
    X, X_val = rng.normal(3, 2, (10, 3)), rng.normal(3, 2, (8, 3))
    Xs, Xs_val, (mean, std) = standardize_by_validation(X.copy(), X_val.copy(),
                                                        center=False)
    assert_array_equal(mean, 0)
    assert_allclose(Xs, X / X_val.std(0))
    assert_allclose(Xs_val, X_val / X_val.std(0))


class _Spy(TransformerMixin, BaseEstimator):
    """Records the rows it is fitted on and transforms by a fixed map."""

    def fit(self, X, y=None):
        self.fitted_on_ = np.array(X, copy=True)
        return self

    def transform(self, X):
        return np.hstack([X, X[:, :1] ** 2])


def test_pipeline_transformers_see_only_validation_rows():
    X, y, X_val, y_val = _regression()
    y, y_val = (y > 150).astype(int), (y_val > 150).astype(int)
    kw = dict(n_permutations=10, epsilon=3.0, noise_seed=1, random_state=0)
    val = DPDataValuator(make_pipeline(_Spy(), LogisticRegression()), **kw).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert_array_equal(val.preprocessor_[0].fitted_on_, X_val)
    assert val.n_features_in_ == X.shape[1]
    by_hand = DPDataValuator(LogisticRegression(), **kw).fit(
        _Spy().transform(X), y, X_val=_Spy().transform(X_val), y_val=y_val)
    assert_array_equal(val.values_, by_hand.values_)


def test_pipeline_scaler_is_fitted_on_validation_and_nonlinear_maps_work():
    X, y, X_val, y_val = _regression()
    pipe = make_pipeline(StandardScaler(), PolynomialFeatures(2), Ridge())
    val = DPDataValuator(pipe, n_permutations=10, noise="none", random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val)
    scaler = val.preprocessor_[0]
    assert_allclose(scaler.mean_, X_val.mean(0))
    assert np.all(np.isfinite(val.values_))
    scores = DPLabelQuality(pipe, epsilon=np.inf).fit(X, y, X_val=X_val, y_val=y_val)
    assert_allclose(scores.estimator_[0].mean_,
                    ((X_val - X_val.mean(0)) / X_val.std(0)).mean(0), atol=1e-12)


def test_pipeline_needs_validation_set_and_refuses_samplers():
    X, y, X_val, y_val = _regression()
    with pytest.raises(ValueError, match="X_val and y_val"):
        DPDataValuator(make_pipeline(StandardScaler(), Ridge())).fit(X, y)

    class Sampler(BaseEstimator):
        def fit_resample(self, X, y):
            return X, y

        def fit(self, X, y=None):
            return self

        def transform(self, X):
            return X

    with pytest.raises(TypeError, match="resamples the training rows"):
        DPDataValuator(make_pipeline(Sampler(), Ridge())).fit(
            X, y, X_val=X_val, y_val=y_val)


def test_pipeline_errors_on_private_rows_quote_no_value():
    X, y, X_val, y_val = _regression()

    class Fails(_Spy):
        def transform(self, X):
            if len(X) == 40:
                raise ValueError(f"bad value {X[0, 0]!r}")
            return X

    with pytest.raises(ValueError) as error:
        DPDataValuator(make_pipeline(Fails(), Ridge())).fit(
            X, y, X_val=X_val, y_val=y_val)
    assert repr(X[0, 0]) not in str(error.value)
    assert "not shown" in str(error.value)


def test_l1_term_follows_the_target_scale():
    """Lasso on targets c y with alpha c walks the same objective (times c^2),
    the public direction included (an L1 term over the targets' scale)."""
    from sklearn.linear_model import Lasso

    X, y, X_val, y_val = _regression()
    kw = dict(n_permutations=10, noise="none", random_state=0)
    base = DPDataValuator(Lasso(alpha=2.0), **kw).fit(X, y, X_val=X_val, y_val=y_val)
    scaled = DPDataValuator(Lasso(alpha=20.0), **kw).fit(
        X, 10 * y, X_val=X_val, y_val=10 * y_val)
    assert np.any(base.values_ != 0)
    assert_allclose(scaled.subspace_, base.subspace_, rtol=1e-6, atol=1e-9)
    assert_allclose(scaled.values_, 100 * base.values_, rtol=1e-6,
                    atol=1e-9 * np.abs(scaled.values_).max())


def test_walk_reads_a_corrupted_target_through_its_sign():
    """The documented limit on corrupted targets: the walk's value is first
    order in a party's projected gradient at the zero model, ``(x . b) t``
    (standardised), so it finds a replaced target whose sign along the
    public direction flipped and misses one that kept it; the label score,
    which releases the residual's size, finds both."""
    from skdpval.datasets import load_noisy_regression
    from skdpval.metrics import noisy_label_auc

    d = load_noisy_regression("regression", random_state=0)
    walk = DPDataValuator(Ridge(), noise="none", n_permutations=50,
                          random_state=0).fit(d.X_train, d.y_train, X_val=d.X_val,
                                              y_val=d.y_val)
    scores = DPLabelQuality(Ridge(), epsilon=np.inf).fit(
        d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val).values_
    X = (d.X_train - d.X_val.mean(0)) / d.X_val.std(0)
    t = (d.y_train - d.y_val.mean()) / d.y_val.std()
    first_order = np.append(X, np.ones((len(X), 1)), axis=1) @ walk.subspace_[0] * t
    assert np.mean(np.sign(walk.values_) == np.sign(first_order)) > 0.9
    flipped = d.is_noisy & (first_order < 0)
    kept = d.is_noisy & (first_order > 0)
    assert min(flipped.sum(), kept.sum()) > 30

    def auc(values, corrupted):
        rows = corrupted | ~d.is_noisy
        return noisy_label_auc(values[rows], corrupted[rows])

    assert auc(walk.values_, flipped) > 0.95
    assert abs(auc(walk.values_, kept) - 0.5) < 0.1  # chance (measured 0.52)
    assert auc(scores, flipped) > 0.95 and auc(scores, kept) > 0.9
