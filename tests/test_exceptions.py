"""Each warning fires when it should, names its remedy, and stays quiet otherwise."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer

import skdpval
from skdpval import DPDataValuator, DPFederatedValuator, exceptions
from skdpval.privacy import _mechanism, warn_if_default_epsilon
from skdpval.privacy._accounting import gdp_mu, noisy_label_auc_limit
from skdpval.exceptions import (
    DefaultEpsilonWarning,
    ManyClassesWarning,
    SkdpvalWarning,
    UnprotectedValidationWarning,
    UnscaledFeaturesWarning,
    warn_if_many_classes,
    warn_if_unscaled,
    warn_validation_from_training,
)


def quietly(check, *args, **kwargs):
    """Run ``check`` with every warning an error: the quiet path."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return check(*args, **kwargs)


def test_every_warning_is_a_user_warning_exported_by_the_package():
    for category in (UnprotectedValidationWarning, UnscaledFeaturesWarning,
                     ManyClassesWarning, DefaultEpsilonWarning):
        assert issubclass(category, SkdpvalWarning)
        assert issubclass(category, UserWarning)
    assert skdpval.exceptions is exceptions


def test_validation_from_training_says_how_many_and_how_to_pass_x_val():
    def fit():  # the check is called inside an estimator's fit
        warn_validation_from_training(114, 569, validation_fraction=0.2)

    with pytest.warns(UnprotectedValidationWarning) as caught:
        fit()
    message = str(caught[0].message)
    assert "114 of the 569 samples" in message
    assert "NOT protected" in message and "X_val=" in message
    assert caught[0].filename == __file__  # points at the call of fit


def test_unscaled_fires_on_raw_breast_cancer_and_names_the_remedy():
    X, _ = load_breast_cancer(return_X_y=True)
    with pytest.warns(UnscaledFeaturesWarning, match="standardize=True") as caught:
        off_scale = warn_if_unscaled(X[:100])
    assert off_scale.sum() >= 10
    assert "StandardScaler fitted on the private X" in str(caught[0].message)


@pytest.mark.parametrize("column, fires", [
    (np.linspace(-1, 1, 50), False),
    (np.linspace(-1, 1, 50) * 30, True),     # std too large
    (np.linspace(-1, 1, 50) * 0.01, True),   # std too small
    (np.linspace(-1, 1, 50) + 100, True),    # mean far from 0
    (np.full(50, 5.0), False),               # a constant column is an intercept
])
def test_unscaled_judges_each_column(column, fires):
    X_val = np.column_stack([np.random.default_rng(0).normal(size=50), column])
    if fires:
        with pytest.warns(UnscaledFeaturesWarning, match="1 of 2"):
            off_scale = warn_if_unscaled(X_val)
        assert off_scale.tolist() == [False, True]
    else:
        assert not quietly(warn_if_unscaled, X_val).any()


def test_unscaled_is_quiet_when_the_estimator_standardises():
    X, _ = load_breast_cancer(return_X_y=True)
    assert not quietly(warn_if_unscaled, X, standardize=True).any()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    assert not quietly(warn_if_unscaled, X).any()


def test_many_classes_fires_for_a_regression_target():
    y_val = np.arange(60) % 55 + 25            # like diabetes' integer target
    with pytest.warns(ManyClassesWarning, match="55 classes") as caught:
        assert warn_if_many_classes(y_val, np.unique(y_val))
    assert "Ridge()" in str(caught[0].message)
    y_val = np.array([0.5, 1.0, 1.5, 2.0])
    with pytest.warns(ManyClassesWarning, match="float labels with 4"):
        assert warn_if_many_classes(y_val, np.unique(y_val))


@pytest.mark.parametrize("y_val", [np.array([0, 1, 2] * 20),
                                   np.array([0.0, 1.0] * 20),
                                   np.array(["cat", "dog"] * 20),
                                   np.arange(50)])
def test_many_classes_is_quiet_for_class_labels(y_val):
    assert not quietly(warn_if_many_classes, y_val, np.unique(y_val))


@pytest.fixture
def fresh_process(monkeypatch):
    monkeypatch.setattr(_mechanism, "_default_epsilon_warned", False)


def test_default_epsilon_fires_once_with_the_auc_ceiling(fresh_process):
    limit = noisy_label_auc_limit(gdp_mu(1.0, 5e-5))
    assert round(limit, 3) == 0.663
    with pytest.warns(DefaultEpsilonWarning, match=f"above {limit:.3f}") as caught:
        assert warn_if_default_epsilon(DPDataValuator())
    assert "epsilon=3 allows 0.866" in str(caught[0].message)
    assert not quietly(warn_if_default_epsilon, DPDataValuator())  # once
    assert not quietly(warn_if_default_epsilon, DPFederatedValuator())


def test_default_epsilon_quotes_the_fits_own_delta_and_limit(fresh_process):
    """delta="auto" is min(5e-5, 1 / (10 n)): the warning quotes the fit's
    (4e-05 for 2500 samples), not the cap, and the limit at it."""
    from sklearn.datasets import make_classification

    X, y = make_classification(2600, n_features=4, random_state=0)
    with pytest.warns(DefaultEpsilonWarning) as caught:
        fitted = skdpval.DPLabelQuality(random_state=0).fit(
            X[:2500], y[:2500], X_val=X[2500:], y_val=y[2500:])
    message = str(caught[0].message)
    assert fitted.delta_ == pytest.approx(4e-5)
    assert "(delta=4e-05)" in message
    limit = fitted.privacy_report_["max_noisy_label_auc"]
    assert f"above {limit:.3f}." in message
    assert f"{noisy_label_auc_limit(gdp_mu(1.0, 4e-5)):.3f}" == f"{limit:.3f}"


@pytest.mark.parametrize("params", [dict(epsilon=3.0), dict(epsilon=1.0),
                                    dict(epsilon=1), dict(noise="none"),
                                    dict(epsilon=None, noise_multiplier=2.0)])
def test_default_epsilon_is_quiet_when_the_budget_is_chosen(fresh_process, params):
    assert not quietly(warn_if_default_epsilon, DPDataValuator(**params))
    with pytest.warns(DefaultEpsilonWarning):  # still armed
        warn_if_default_epsilon(DPDataValuator())


def test_default_epsilon_survives_clone_and_set_params(fresh_process):
    # clone passes every parameter through __init__: "default" must stay the
    # sentinel, and a chosen 1.0 must stay chosen.
    assert clone(DPDataValuator()).get_params()["epsilon"] == "default"
    assert not quietly(warn_if_default_epsilon, clone(DPDataValuator(epsilon=1.0)))
    assert not quietly(warn_if_default_epsilon,
                       DPDataValuator().set_params(epsilon=1.0))
    with pytest.warns(DefaultEpsilonWarning):
        warn_if_default_epsilon(clone(DPDataValuator(epsilon=1.0)).set_params(
            epsilon="default"))


# --- wired into the estimators' fit ----------------------------------------------

def _raw_breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:100], y[:100], X[100:160], y[100:160]


ESTIMATORS = [
    lambda **p: DPDataValuator(n_permutations=2, q=0, random_state=0, **p),
    lambda **p: skdpval.DPLabelQuality(random_state=0, **p),
    lambda **p: DPFederatedValuator(n_rounds=2, n_permutations_per_round=2,
                                    random_state=0, **p),
]


def _fit(make, X, y, X_val=None, y_val=None, **params):
    estimator = make(**params)
    groups = ({"groups": np.arange(len(X)) % 10}
              if isinstance(estimator, DPFederatedValuator) else {})
    return estimator.fit(X, y, X_val=X_val, y_val=y_val, **groups)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_fit_warns_where_it_should(make, fresh_process):
    X, y, X_val, y_val = _raw_breast_cancer()
    with pytest.warns(UnprotectedValidationWarning, match="X_val="):
        _fit(make, X, y, epsilon=2.0)
    with pytest.warns(UnscaledFeaturesWarning, match="standardize=True"):
        _fit(make, X, y, X_val, y_val, epsilon=2.0, standardize=False)
    with pytest.warns(DefaultEpsilonWarning, match="0.66"):
        _fit(make, X, y, X_val, y_val)
    y_codes = (np.arange(160) % 60).astype(float)  # 60 classes, float labels
    with pytest.warns(ManyClassesWarning, match="regression"):
        _fit(make, X, y_codes[:100], X_val, y_codes[100:], epsilon=2.0)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_fit_is_quiet_on_the_quiet_path(make, fresh_process):
    """X_val given, features standardised by the estimator, epsilon chosen."""
    X, y, X_val, y_val = _raw_breast_cancer()
    quietly(_fit, make, X, y, X_val, y_val, epsilon=2.0)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_fit_warns_for_the_default_epsilon_only(make, fresh_process):
    # epsilon=1.0 written out is the same budget as the default (same noise),
    # but it is the user's choice: no DefaultEpsilonWarning.
    X, y, X_val, y_val = _raw_breast_cancer()
    X, X_val = X / X.std(axis=0), X_val / X.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DefaultEpsilonWarning)
        chosen = _fit(make, X, y, X_val, y_val, epsilon=1.0)
    with pytest.warns(DefaultEpsilonWarning, match="epsilon=1 keeps this budget"):
        default = _fit(make, X, y, X_val, y_val)
    assert default.privacy_report_["noise_std"] == chosen.privacy_report_["noise_std"]
    assert default.epsilon_ == pytest.approx(1.0)

