"""Bad input for every public estimator and function: a clear error, before any work."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.linear_model import LinearRegression, LogisticRegressionCV, Ridge
from sklearn.svm import SVC

import skdpval.kernels._subspace_problem as subspace_module
from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPFilteredClassifier,
    DPFilteredRegressor,
    DPLabelQuality,
    DPValueFilter,
    LayeredShapleyValuator,
)
from skdpval.datasets import flip_labels, load_noisy_classification
from skdpval.kernels import _linear
from skdpval.metrics import (
    mean_adjusted_variance,
    membership_inference_auc,
    noisy_label_auc,
    removal_curve,
)

rng = np.random.default_rng(0)
X = rng.normal(size=(20, 3))
y = np.array([0, 1] * 10)
FAST = dict(n_permutations=3, random_state=0)


def fit(estimator=None, **fit_args):
    def run():
        args = dict(X=X, y=y)
        args.update(fit_args)
        target = estimator if estimator is not None else DPDataValuator(**FAST)
        if hasattr(target, "fit_resample"):
            return target.fit_resample(args.pop("X"), args.pop("y"), **args)
        return target.fit(args.pop("X"), args.pop("y"), **args)
    return run


CASES = {
    # DPDataValuator: the data
    "empty X": (fit(X=np.empty((0, 3)), y=np.empty(0)), ValueError, "0 sample"),
    "1-D X": (fit(X=X[:, 0]), ValueError, "Expected 2D array"),
    "ragged X": (fit(X=[[1.0, 2.0], [3.0]] * 10), ValueError, "inhomogeneous|sequence"),
    "object X": (fit(X=np.array([["a", "b", "c"]] * 20, dtype=object)), ValueError,
                 "could not convert|float"),
    "NaN in X": (fit(X=np.where(np.eye(20, 3) > 0, np.nan, X)), ValueError, "NaN"),
    "inf in y": (fit(estimator=DPDataValuator(Ridge(), **FAST),
                     y=np.r_[np.inf, np.zeros(19)]), ValueError, "infinity"),
    "single class": (fit(y=np.ones(20)), ValueError, "single class"),
    "one sample": (fit(X=X[:1], y=y[:1]), ValueError, "minimum of 2"),
    "X_val features": (fit(X_val=X[:4, :2], y_val=y[:4]), ValueError, "features"),
    "X_val rows vs y_val": (fit(X_val=X[:4], y_val=y[:3]), ValueError, "y_val"),
    "sparse X": (fit(X=sparse.csr_matrix(X)), TypeError, "[Ss]parse"),
    "groups of the wrong length": (fit(groups=np.arange(19)), ValueError, "groups"),
    # DPDataValuator: the parameters
    "epsilon negative": (fit(DPDataValuator(epsilon=-1.0, **FAST)), ValueError, "'epsilon'"),
    "epsilon zero": (fit(DPDataValuator(epsilon=0.0, **FAST)), ValueError, "'epsilon'"),
    "epsilon NaN": (fit(DPDataValuator(epsilon=np.nan, **FAST)), ValueError, "'epsilon'"),
    "epsilon huge": (fit(DPDataValuator(epsilon=1e300, **FAST)), ValueError,
                     "epsilon=1e\\+300 is outside .* epsilon in \\[0, 5.04e\\+05\\]"),
    "delta 0": (fit(DPDataValuator(delta=0.0, **FAST)), ValueError, "'delta'"),
    "delta 1": (fit(DPDataValuator(delta=1.0, **FAST)), ValueError, "'delta'"),
    "delta 2": (fit(DPDataValuator(delta=2.0, **FAST)), ValueError, "'delta'"),
    "q = 1": (fit(DPDataValuator(q=1.0, **FAST)), ValueError, "'q'"),
    "negative learning rate": (fit(DPDataValuator(learning_rate=-0.1, **FAST)),
                               ValueError, "'learning_rate'"),
    "clip_norm zero": (fit(DPDataValuator(clip_norm=0.0, **FAST)), ValueError,
                       "'clip_norm'"),
    "clip_norm negative": (fit(DPDataValuator(clip_norm=-1.0, **FAST)), ValueError,
                           "'clip_norm'"),
    "batch_permutations 0": (fit(DPDataValuator(batch_permutations=0, **FAST)),
                             ValueError, "'batch_permutations'"),
    "unsupported estimator": (fit(DPDataValuator(SVC(), **FAST)), TypeError,
                              "closest supported model: LinearSVC"),
    "C chosen by cross-validation on too few validation rows": (
        fit(DPDataValuator(LogisticRegressionCV(), **FAST)), ValueError,
        "fits it on the validation set, and that failed"),
    "classifier utility on regressor": (
        fit(DPDataValuator(LinearRegression(), utility="accuracy", **FAST),
            y=X[:, 0]), ValueError, "utility='accuracy'"),
    # Cleaning steps
    "filter drop_fraction 1": (fit(DPValueFilter(DPDataValuator(**FAST),
                                                 drop_fraction=1.0)),
                               ValueError, "'drop_fraction'"),
    "filter both rules": (fit(DPValueFilter(DPDataValuator(**FAST), threshold=0.0)),
                          ValueError, "drop_fraction and threshold"),
    "filter valuator not a valuator": (fit(DPValueFilter(valuator=3)), ValueError,
                                       "'valuator'"),
    "filtered classifier NaN X": (fit(DPFilteredClassifier(DPDataValuator(**FAST)),
                                      X=np.where(np.eye(20, 3) > 0, np.nan, X)),
                                  ValueError, "NaN"),
    "filtered regressor drop_fraction": (
        fit(DPFilteredRegressor(DPDataValuator(Ridge(), **FAST), drop_fraction=-1),
            y=X[:, 0]), ValueError, "'drop_fraction'"),
    # Functions
    "noisy_label_auc NaN": (lambda: noisy_label_auc([np.nan, 1], [True, False]),
                            ValueError, "values must be finite"),
    "removal_curve order": (lambda: removal_curve(X, y, X, y, np.zeros(20),
                                                  Ridge(), [0.1], order="top"),
                            ValueError, "order"),
    "mean_adjusted_variance both": (lambda: mean_adjusted_variance(
        [[1.0]], valuator=DPDataValuator()), ValueError, "exactly one"),
    "membership n_shadow": (lambda: membership_inference_auc(
        DPDataValuator(**FAST), X, y, X, y, X, y, X, y, n_shadow=1),
        ValueError, "n_shadow"),
    "flip_labels fraction": (lambda: flip_labels(y, -0.5), ValueError, "fraction"),
    "flip_labels one class": (lambda: flip_labels(np.ones(5), 0.5), ValueError,
                              "two classes"),
    "load unknown data set": (lambda: load_noisy_classification("mnist"),
                              ValueError, "name must be one of"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_raises_a_clear_error_before_any_work(case, monkeypatch):
    def no_kernel(*args, **kwargs):
        raise AssertionError("a kernel ran on bad input")

    monkeypatch.setattr(_linear, "walk", no_kernel)
    monkeypatch.setattr(_linear, "sgd_pass", no_kernel)
    # The default walk's public direction is fitted before the walk.
    monkeypatch.setattr(subspace_module, "sgd_pass", no_kernel)
    monkeypatch.setattr(subspace_module, "mean_loss_and_gradient", no_kernel)
    run, error, match = CASES[case]
    with pytest.raises(error, match=match):
        run()


def test_string_labels_work():
    labels = np.where(y == 1, "yes", "no")
    valuator = DPDataValuator(**FAST).fit(X, labels)
    assert list(valuator.classes_) == ["no", "yes"]
    assert np.isfinite(valuator.values_).sum() == 16


@pytest.mark.parametrize("make", [
    lambda: DPDataValuator(Ridge(), classes=[0, 1], n_permutations=2, epsilon=2.0),
    lambda: DPLabelQuality(Ridge(), classes=[0, 1], epsilon=2.0),
])
def test_classes_with_a_regressor_is_an_error(make):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="classes=\\[0, 1\\] applies to classifiers"):
        make().fit(X, X[:, 0])


def test_federated_classes_with_a_regressor_is_an_error():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="applies to classifiers: the estimator is a"):
        DPFederatedValuator(Ridge(), classes=[0, 1], utility="r2", epsilon=2.0).fit(
            X, X[:, 0], groups=np.arange(20) % 4)


@pytest.mark.parametrize("make", [
    lambda: DPDataValuator(n_jobs=0),
    lambda: LayeredShapleyValuator(n_jobs=0),
])
def test_n_jobs_zero_is_refused_up_front(make):
    X = np.random.default_rng(0).uniform(size=(20, 2))
    with pytest.raises(ValueError, match="'n_jobs' parameter"):
        make().fit(X, (X[:, 0] > 0.5).astype(int))


def test_label_quality_needs_a_classifier_or_a_regressor():
    from sklearn.cluster import KMeans

    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(TypeError, match="KMeans is neither"):
        DPLabelQuality(KMeans(2), epsilon=2.0).fit(X, (X[:, 0] > 0).astype(int))
