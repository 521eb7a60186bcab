"""Errors about the validation set name X_val, y_val or groups, not X."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.linear_model import Ridge

from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPFilteredClassifier,
    DPFilteredRegressor,
    DPLabelQuality,
    DPValueFilter,
    LayeredShapleyValuator,
)
from skdpval.families._parties import check_validation_features

rng = np.random.default_rng(0)
X = rng.uniform(size=(24, 4))
y = np.array([0, 1] * 12)
FAST = dict(n_permutations=2, random_state=0)

# Each public estimator and its fit call.
ESTIMATORS = {
    "DPDataValuator": (lambda: DPDataValuator(**FAST), "fit", ()),
    "DPLabelQuality": (lambda: DPLabelQuality(random_state=0), "fit", ()),
    "DPFederatedValuator": (lambda: DPFederatedValuator(
        n_rounds=2, n_permutations_per_round=2, random_state=0), "fit", ()),
    "LayeredShapleyValuator": (lambda: LayeredShapleyValuator(random_state=0),
                               "fit", ()),
    "DPValueFilter": (lambda: DPValueFilter(DPDataValuator(**FAST)),
                      "fit_resample", ()),
    "DPFilteredClassifier": (lambda: DPFilteredClassifier(DPDataValuator(**FAST)),
                             "fit", ()),
    "DPFilteredRegressor": (lambda: DPFilteredRegressor(DPDataValuator(Ridge(), **FAST)),
                            "fit", ()),
}


@pytest.mark.parametrize("make, method", [
    pytest.param(make, method, id=name, marks=mark)
    for name, (make, method, mark) in ESTIMATORS.items()])
def test_x_val_with_wrong_column_count_names_x_val(make, method):
    estimator = make()
    with pytest.raises(ValueError, match="X_val"):
        getattr(estimator, method)(X, y, X_val=X[:6, :3], y_val=y[:6])


@pytest.mark.parametrize("make, method", [
    pytest.param(make, method, id=name)
    for name, (make, method, _) in ESTIMATORS.items()])
def test_y_val_with_wrong_length_names_y_val(make, method):
    with pytest.raises(ValueError, match="y_val"):
        getattr(make(), method)(X, y, X_val=X[:6], y_val=y[:5])


@pytest.mark.parametrize("make", [lambda: DPDataValuator(**FAST),
                                  lambda: DPFederatedValuator(
                                      n_rounds=2, n_permutations_per_round=2)],
                         ids=["DPDataValuator", "DPFederatedValuator"])
def test_groups_with_wrong_length_names_groups(make):
    with pytest.raises(ValueError, match="groups"):
        make().fit(X, y, X_val=X[:6], y_val=y[:6], groups=np.arange(23))


class _Fitted(BaseEstimator):
    """Stands for an estimator whose fit has just validated X."""

    def __init__(self, n_features=4):
        self.n_features = n_features
        self.n_features_in_ = n_features


@pytest.mark.parametrize("X_val, error, message", [
    (np.ones((5, 3)), ValueError, "X_val has 3 features, but X has 4"),
    (np.ones(4), ValueError, "X_val: Expected 2D array"),
    (np.full((5, 4), np.nan), ValueError, "Input X_val contains NaN"),
    (np.empty((0, 4)), ValueError, "X_val: Found array with 0 sample"),
])
def test_check_validation_features_names_x_val(X_val, error, message):
    with pytest.raises(error, match=message):
        check_validation_features(_Fitted(), X_val, dtype=np.float64)


def test_check_validation_features_refuses_sparse_by_name():
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="X_val"):
        check_validation_features(_Fitted(), sparse.csr_matrix(np.ones((5, 4))))


def test_check_validation_features_passes_good_data_through():
    X_val = check_validation_features(_Fitted(), [[1, 2, 3, 4]] * 3,
                                      dtype=np.float64, order="C")
    assert X_val.dtype == np.float64 and X_val.flags.c_contiguous
    np.testing.assert_array_equal(X_val, [[1.0, 2.0, 3.0, 4.0]] * 3)


def test_check_validation_features_checks_column_names():
    pd = pytest.importorskip("pandas")
    fitted = _Fitted(2)
    fitted.feature_names_in_ = np.array(["a", "b"], dtype=object)
    with pytest.raises(ValueError, match="feature names"):
        check_validation_features(fitted, pd.DataFrame({"b": [1.0], "a": [2.0]}))


def test_refits_keep_no_attribute_of_an_earlier_fit():
    pd = pytest.importorskip("pandas")
    from skdpval import DPFederatedValuator, DPLabelQuality, DPValueFilter

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    for make, args in ((lambda e: DPDataValuator(e, n_permutations=2, epsilon=2.0,
                                                 random_state=0), {}),
                       (lambda e: DPLabelQuality(e, epsilon=2.0, random_state=0), {}),
                       (lambda e: DPFederatedValuator(e, n_rounds=2, epsilon=2.0,
                                                      utility="neg_loss",
                                                      random_state=0),
                        dict(groups=np.arange(40) % 4))):
        valuator = make(None).fit(X, y, **args)
        assert hasattr(valuator, "classes_")
        valuator.set_params(estimator=Ridge()).fit(X, X[:, 1], **args)
        assert not hasattr(valuator, "classes_")
    step = DPValueFilter(DPDataValuator(n_permutations=2, epsilon=2.0, random_state=0))
    step.fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    assert hasattr(step, "feature_names_in_")
    assert not hasattr(step.fit(X, y), "feature_names_in_")


def test_y_val_with_nan_names_y_val():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(float)
    y_val = y[:10].copy()
    y_val[0] = np.nan
    with pytest.raises(ValueError, match="y_val contains NaN"):
        DPDataValuator(n_permutations=2, epsilon=2.0).fit(X, y, X_val=X[:10], y_val=y_val)


def test_x_val_whose_statistics_overflow_is_an_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    X_val = X[:10].copy()
    X_val[:, 2] *= 1e160
    with pytest.raises(ValueError, match="validation set's columns \\[2\\] overflow"):
        DPDataValuator(n_permutations=2, epsilon=2.0).fit(X, y, X_val=X_val, y_val=y[:10])


def test_feature_name_warnings_about_the_validation_set_name_x_val():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    y = (X["a"] > 0).astype(int)
    with pytest.warns(UserWarning, match="^X_val does not have valid feature names"):
        DPDataValuator(n_permutations=2, epsilon=2.0).fit(
            X, y, X_val=X.to_numpy()[:10], y_val=y[:10])


def test_groups_of_mixed_label_types_are_named():
    X = np.random.default_rng(0).normal(size=(8, 2))
    groups = np.array([1, "a", 1, "a", 2, "b", 2, "b"], dtype=object)
    with pytest.raises(ValueError, match="groups must hold labels of one kind"):
        DPDataValuator(n_permutations=2, epsilon=2.0).fit(X, np.arange(8) % 2,
                                                          groups=groups)
