"""Cleaning steps: DPValueFilter, DPFilteredClassifier, DPFilteredRegressor."""

import imblearn.pipeline as imblearn_pipeline
import numpy as np
import pandas as pd
import pytest
import sklearn
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdpval import (
    DPDataValuator,
    DPFilteredClassifier,
    DPFilteredRegressor,
    DPValueFilter,
)
from skdpval.datasets import load_noisy_classification
from skdpval.exceptions import UnprotectedValidationWarning

# noise_seed: the checks compare predictions of two fits, so the noise must
# repeat; validation_fraction=0.5: every class among the held-out labels.
FAST = dict(n_permutations=3, validation_fraction=0.5, random_state=0,
            noise_seed=0)


@parametrize_with_checks([
    DPFilteredClassifier(DPDataValuator(**FAST), drop_fraction=0.1),
    DPFilteredRegressor(DPDataValuator(Ridge(), **FAST), drop_fraction=0.1),
    DPValueFilter(DPDataValuator(**FAST)),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def noisy():
    return load_noisy_classification("breast_cancer", flip_fraction=0.3,
                                     random_state=0)


def test_fit_resample_drops_the_lowest_values_and_keeps_held_out():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X[:, 0] > 0).astype(int)
    sampler = DPValueFilter(DPDataValuator(**FAST), drop_fraction=0.25)
    X_kept, y_kept = sampler.fit_resample(X, y)
    values = sampler.valuator_.values_
    held_out = np.isnan(values)
    kept = np.zeros(50, bool)
    kept[sampler.sample_indices_] = True
    assert np.all(kept[held_out])  # the validation samples stay
    assert (~kept).sum() == int(0.25 * (~held_out).sum())
    assert values[~kept].max() <= np.nanmin(values[kept & ~held_out])
    assert_array_equal(X_kept, X[sampler.sample_indices_])
    assert_array_equal(y_kept, y[sampler.sample_indices_])


def test_threshold_rule():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    sampler = DPValueFilter(DPDataValuator(**FAST), drop_fraction=None, threshold=0.0)
    sampler.fit(X, y)
    values = sampler.valuator_.values_
    expected = np.flatnonzero(np.isnan(values) | (values >= 0.0))
    assert_array_equal(sampler.sample_indices_, expected)


def test_pandas_in_pandas_out_and_string_labels():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"],
                     index=[f"row{i}" for i in range(40)])
    y = pd.Series(np.where(X["a"] > 0, "good", "bad"), index=X.index, name="label")
    X_kept, y_kept = DPValueFilter(DPDataValuator(**FAST), drop_fraction=0.5).fit_resample(X, y)
    assert isinstance(X_kept, pd.DataFrame) and isinstance(y_kept, pd.Series)
    assert list(X_kept.columns) == ["a", "b", "c"] and y_kept.name == "label"
    assert list(X_kept.index) == list(y_kept.index)
    # 20 held out (kept) and half of the 20 valued.
    assert set(X_kept.index) <= set(X.index) and len(X_kept) == 30
    model = DPFilteredClassifier(DPDataValuator(**FAST)).fit(X, y)
    assert set(model.predict(X)) <= {"good", "bad"}
    assert list(model.feature_names_in_) == ["a", "b", "c"]


@pytest.mark.parametrize("make", [DPFilteredClassifier, DPValueFilter])
def test_x_val_columns_are_checked_against_x(make):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    y = (X["a"] > 0).astype(int)
    X_val = pd.DataFrame(rng.normal(size=(20, 3)), columns=["a", "b", "c"])
    y_val = (X_val["a"] > 0).astype(int)
    make(DPDataValuator(**FAST)).fit(X, y, X_val=X_val, y_val=y_val)
    with pytest.raises(ValueError, match="feature names should match"):
        make(DPDataValuator(**FAST)).fit(X, y, X_val=X_val[["c", "b", "a"]],
                                         y_val=y_val)


class NeverFitted(DPDataValuator):
    def fit(self, X, y, **fit_params):
        raise AssertionError("the valuation ran")


@pytest.mark.parametrize("make", [DPFilteredClassifier, DPValueFilter])
def test_groups_are_refused_before_the_valuation(make):
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2
    with pytest.raises(ValueError, match="takes no groups"):
        make(NeverFitted()).fit(X, y, groups=np.arange(20) // 2)


class SeesValidation(DPDataValuator):
    """Records the X_val its fit got."""

    def fit(self, X, y, X_val=None, y_val=None, groups=None):
        self.X_val_seen_, self.y_val_seen_ = X_val, y_val
        return super().fit(X, y, X_val=X_val, y_val=y_val, groups=groups)


def _imblearn_pipe():
    return imblearn_pipeline.Pipeline([
        ("filter", DPValueFilter(SeesValidation(noise="none", q=0.0,
                                                n_permutations=10, random_state=0),
                                 drop_fraction=0.3)),
        ("model", LogisticRegression()),
    ])


def test_in_an_imblearn_pipeline_the_filter_receives_x_val(noisy):
    pipe = _imblearn_pipe()
    with sklearn.config_context(enable_metadata_routing=True):
        pipe.fit(noisy.X_train, noisy.y_train, X_val=noisy.X_val, y_val=noisy.y_val)
    valuator = pipe.named_steps["filter"].valuator_
    assert valuator.X_val_seen_ is noisy.X_val
    assert valuator.y_val_seen_ is noisy.y_val
    assert not np.isnan(valuator.values_).any()  # no private row held out
    # The sampler acted at fit time only: predict sees every test sample.
    assert pipe.predict(noisy.X_test).shape == (len(noisy.X_test),)
    n_fit = pipe.named_steps["filter"].sample_indices_.size
    assert n_fit == len(noisy.X_train) - int(0.3 * len(noisy.X_train))


def test_in_an_imblearn_pipeline_a_dropped_x_val_is_an_error(noisy):
    # Without routing imbalanced-learn drops filter__X_val: no silent
    # fallback to an unprotected split of the private rows.
    for params in ({"filter__X_val": noisy.X_val, "filter__y_val": noisy.y_val}, {}):
        with pytest.raises(ValueError, match="enable_metadata_routing=True"):
            _imblearn_pipe().fit(noisy.X_train, noisy.y_train, **params)
    # Outside a pipeline the filter still holds out rows, and warns.
    with pytest.warns(UnprotectedValidationWarning):
        DPValueFilter(DPDataValuator(noise="none", q=0.0, n_permutations=10,
                                     random_state=0)).fit(noisy.X_train, noisy.y_train)


def test_filtering_with_noiseless_values_raises_test_accuracy(noisy):
    """30% flipped labels: dropping 30% by no-DP values helps by >= 3 points."""
    valuator = DPDataValuator(noise="none", q=0.0, n_permutations=30, random_state=0)
    baseline = LogisticRegression().fit(noisy.X_train, noisy.y_train).score(
        noisy.X_test, noisy.y_test)
    model = DPFilteredClassifier(valuator, LogisticRegression(), drop_fraction=0.3)
    model.fit(noisy.X_train, noisy.y_train, X_val=noisy.X_val, y_val=noisy.y_val)
    filtered = model.score(noisy.X_test, noisy.y_test)
    assert filtered >= baseline + 0.03, (baseline, filtered)
    # What was dropped is mostly the flipped labels.
    assert noisy.is_noisy[~model.kept_mask_].mean() > 0.8


def test_pipeline_gridsearch_and_cross_val_score(noisy):
    pipe = make_pipeline(StandardScaler(), DPFilteredClassifier(
        DPDataValuator(n_permutations=20, random_state=0), drop_fraction=0.2))
    search = GridSearchCV(pipe, {
        "dpfilteredclassifier__valuator__q": [0.5, 0.9],
        "dpfilteredclassifier__valuator__epsilon": [1, 3],
    }, cv=3, n_jobs=2)
    search.fit(noisy.X_train, noisy.y_train)
    assert set(search.best_params_) == {"dpfilteredclassifier__valuator__q",
                                        "dpfilteredclassifier__valuator__epsilon"}
    assert len(search.cv_results_["mean_test_score"]) == 4
    fitted = search.best_estimator_[-1]
    assert fitted.valuator_.epsilon_ == pytest.approx(
        search.best_params_["dpfilteredclassifier__valuator__epsilon"])

    model = DPFilteredClassifier(DPDataValuator(LogisticRegression(), n_permutations=20,
                                                q=0.5),
                                 drop_fraction=0.2)
    model.set_params(valuator__epsilon=3, valuator__estimator__C=0.5)
    cloned = clone(model)
    assert cloned.get_params()["valuator__epsilon"] == 3
    assert cloned.get_params()["valuator__estimator__C"] == 0.5
    scores = cross_val_score(model, noisy.X_train, noisy.y_train, cv=3)
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))


def test_delegation_follows_the_estimator():
    from sklearn.svm import LinearSVC

    model = DPFilteredClassifier(DPDataValuator(**FAST), LinearSVC())
    assert not hasattr(model, "predict_proba")
    assert hasattr(model, "decision_function")
    assert hasattr(DPFilteredClassifier(DPDataValuator(**FAST)), "predict_proba")


@pytest.mark.parametrize("make, match", [
    (lambda: DPValueFilter(DPDataValuator(**FAST), drop_fraction=1.0), "drop_fraction"),
    (lambda: DPValueFilter(DPDataValuator(**FAST), drop_fraction=-0.1), "drop_fraction"),
    (lambda: DPValueFilter(DPDataValuator(**FAST), drop_fraction=0.1, threshold=0.0),
     "exactly one of drop_fraction and threshold"),
    (lambda: DPValueFilter(DPDataValuator(**FAST), drop_fraction=None),
     "exactly one of drop_fraction and threshold"),
    (lambda: DPValueFilter("not a valuator"), "valuator"),
    (lambda: DPFilteredClassifier(LogisticRegression()), "did not set values_"),
    (lambda: DPFilteredClassifier(DPDataValuator(**FAST), drop_fraction=1.5),
     "drop_fraction"),
    (lambda: DPFilteredRegressor(object()), "valuator"),
])
def test_bad_input(make, match):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)
    estimator = make()
    with pytest.raises((TypeError, ValueError), match=match):
        if hasattr(estimator, "fit_resample"):
            estimator.fit_resample(X, y)
        else:
            estimator.fit(X, y)


def test_a_threshold_that_keeps_no_valued_sample_warns():
    from skdpval.exceptions import SkdpvalWarning

    X, y = np.random.default_rng(0).normal(size=(40, 2)), np.arange(40) % 2
    step = DPValueFilter(DPDataValuator(**FAST), drop_fraction=None, threshold=1e9)
    with pytest.warns(SkdpvalWarning, match="keeps none of the 20 valued samples"):
        X_kept, _ = step.fit_resample(X, y)
    assert len(X_kept) == 20  # the held-out validation rows stay
