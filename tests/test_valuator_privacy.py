"""What DPDataValuator and DPLabelQuality output depends on private data only
through the noisy releases: a test per leak the privacy review found."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import Ridge
from sklearn.tree import DecisionTreeClassifier

from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPFilteredClassifier,
    DPLabelQuality,
    DPValueFilter,
)

PUBLIC = ("classes_", "learning_rate_", "clip_norm_", "subspace_", "q_")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3,
                               n_classes=3, n_clusters_per_class=1, random_state=0)
    return X[:90], y[:90], X[90:], y[90:]


def test_relabelling_one_sample_changes_no_public_choice(data):
    """Classes come from y_val: one training label cannot add an output."""
    X, y, X_val, y_val = data
    binary_val = y_val[y_val < 2], X_val[y_val < 2]
    y_binary = np.where(y == 2, 1, y)
    relabelled = y_binary.copy()
    relabelled[0] = 1 - relabelled[0]
    fit = lambda labels: DPDataValuator(n_permutations=3, random_state=0).fit(
        X, labels, X_val=binary_val[1], y_val=binary_val[0])
    before, after = fit(y_binary), fit(relabelled)
    for name in PUBLIC:
        assert_array_equal(getattr(before, name), getattr(after, name))
    assert list(before.classes_) == [0, 1]
    # A label outside the public class set is an error naming the remedy; it
    # never turns the model into a three-output softmax.
    outside = y_binary.copy()
    outside[0] = 2
    with pytest.raises(ValueError, match="classes="):
        fit(outside)


def test_held_out_rows_do_not_depend_on_training_labels(data):
    """Without X_val the split reads no label: flipping one leaves it as it was."""
    X, y, _, _ = data
    flipped = y.copy()
    flipped[np.flatnonzero(y == 0)[:5]] = 1
    held_out = lambda labels: np.isnan(DPDataValuator(
        noise="none", n_permutations=1, classes=[0, 1, 2],
        random_state=0).fit(X, labels).values_)
    assert_array_equal(held_out(y), held_out(flipped))
    report = DPDataValuator(n_permutations=1, classes=[0, 1, 2],
                            random_state=0).fit(X, y).privacy_report_
    assert "not protected" in report["validation_set"]


@pytest.mark.parametrize("make", [
    lambda: DPDataValuator(n_permutations=4, random_state=0),
    lambda: DPDataValuator(n_permutations=4, subspace=None, random_state=0),
    lambda: DPLabelQuality(random_state=0),
])
def test_known_random_state_does_not_fix_the_noise(data, make):
    """With random_state known, the noise is still fresh: two fits differ."""
    X, y, X_val, y_val = data
    first = make().fit(X, y, X_val=X_val, y_val=y_val)
    second = make().fit(X, y, X_val=X_val, y_val=y_val)
    assert not np.array_equal(first.values_, second.values_)
    assert "entropy" in first.privacy_report_["noise_source"]
    seeded = [make().set_params(noise_seed=7).fit(X, y, X_val=X_val,
                                                  y_val=y_val).values_
              for _ in range(2)]
    assert_array_equal(*seeded)


def test_report_names_zero_out_and_replace_one(data):
    X, y, X_val, y_val = data
    for estimator in (DPDataValuator(n_permutations=2), DPLabelQuality()):
        report = estimator.fit(X, y, X_val=X_val, y_val=y_val).privacy_report_
        assert report["adjacency"].startswith("zero-out one sample (n public")
        assert report["epsilon_replace_one"] > report["epsilon"]
        assert "add/remove" not in str(report)


def test_training_labels_are_not_checked_beyond_the_public_class_set():
    """sklearn's target check on y would warn on many distinct private labels
    and reject a float label, even one in the class set: neither may happen."""
    rng = np.random.default_rng(0)
    X, X_val = rng.normal(size=(40, 3)), rng.normal(size=(90, 3))
    classes = np.arange(30.0)
    # 30 distinct labels in 40 private rows (sklearn warns above half); the
    # public validation set has 3 rows a class.
    y, y_val = rng.permutation(np.arange(40) % 30).astype(float), np.arange(90) % 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPLabelQuality(classes=classes, random_state=0).fit(X, y, X_val=X_val,
                                                            y_val=y_val)
    halves = np.array([0.0, 0.5, 1.0])
    y_val = np.arange(90) % 3 / 2
    y = np.zeros(40)
    y[0] = 0.5  # in the public class set, but not an integer
    DPDataValuator(n_permutations=2, classes=halves, random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val)


@pytest.mark.parametrize("make", [
    lambda: DPDataValuator(Ridge(), n_permutations=4, q=0, random_state=0),
    lambda: DPDataValuator(Ridge(), n_permutations=4, q=0, subspace=None, random_state=0),
    lambda: DPFederatedValuator(Ridge(), n_rounds=3, n_permutations_per_round=4,
                                utility="r2", random_state=0),
    lambda: DPFederatedValuator(Ridge(), n_rounds=3, n_permutations_per_round=4,
                                utility="r2", clipping="coordinate", random_state=0),
])
def test_an_extreme_private_target_warns_nothing_and_values_stay_finite(make):
    """A target near the largest float overflows its gradient: that party
    releases pure noise; no warning, error or NaN tells it."""
    X, y = make_regression(n_samples=60, n_features=3, noise=1.0, random_state=0)
    X_val, y_val = X[40:], y[40:]
    X, y = X[:40], y[:40].copy()
    y[0] = 1.7e308
    groups = np.arange(40) // 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        valuator = make()
        if isinstance(valuator, DPFederatedValuator):
            valuator.fit(X, y, X_val=X_val, y_val=y_val, groups=groups)
        else:
            valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert np.all(np.isfinite(valuator.values_))


@pytest.mark.parametrize("make", [
    lambda: DPDataValuator(n_permutations=4, q=0, random_state=0),
    lambda: DPLabelQuality(random_state=0),
    # Trees compute in float32, past whose range sklearn raises an error.
    lambda: DPLabelQuality(DecisionTreeClassifier(random_state=0), random_state=0),
    lambda: DPLabelQuality(RandomForestClassifier(n_estimators=3, random_state=0),
                           random_state=0),
])
def test_an_extreme_private_feature_warns_nothing_and_values_stay_finite(data, make):
    """Scaling a finite feature near the largest float by the validation std
    overflows: no warning, no error, finite values."""
    X, y, X_val, y_val = data
    X = X.copy()
    X[0, 0] = 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        valuator = make().fit(X, y, X_val=X_val, y_val=y_val)
    assert np.all(np.isfinite(valuator.values_))


def test_the_noise_key_stays_out_of_the_fitted_valuator(data):
    # The walk's ChaCha20 key lives in its draw object for the fit only: no
    # attribute or pickle of the fitted valuator holds it.
    import pickle

    from skdpval.privacy._secure_noise import noise_key

    X, y, X_val, y_val = data
    valuator = DPDataValuator(n_permutations=4, epsilon=1.0, random_state=0,
                              noise_seed=3).fit(X, y, X_val=X_val, y_val=y_val)
    key = noise_key(3).astype("<u4").tobytes()
    assert key not in pickle.dumps(valuator)
    assert noise_key(3).astype("<u8").tobytes() not in pickle.dumps(valuator)


SECRET = "patient-HIV-positive"


@pytest.mark.parametrize("make", [
    lambda: DPDataValuator(n_permutations=2, random_state=0),
    lambda: DPLabelQuality(random_state=0),
    lambda: DPFilteredClassifier(DPDataValuator(n_permutations=2, random_state=0)),
    lambda: DPValueFilter(DPDataValuator(n_permutations=2, random_state=0)),
])
@pytest.mark.parametrize("corrupt", ["a string in X", "X one-dimensional"])
def test_errors_about_private_data_quote_no_value(data, make, corrupt):
    """scikit-learn's messages quote the data (the string that did not
    convert, a 1-D X printed whole); ours keep the first line only."""
    X, y, X_val, y_val = data
    binary = y < 2
    X, y = X[binary].astype(object), y[binary]
    if corrupt == "a string in X":
        X[3, 1] = SECRET
    else:
        X = X[:, 0]
    with pytest.raises(ValueError) as error:
        make().fit(X, y, X_val=X_val[y_val < 2], y_val=y_val[y_val < 2])
    message = str(error.value)
    assert "values of private data are not shown" in message
    assert SECRET not in message and repr(X[0])[:6] not in message
    assert error.value.__context__ is None  # the original is not kept either


def test_errors_about_a_private_regression_target_quote_no_value():
    X, y = make_regression(n_samples=30, n_features=3, random_state=0)
    y = y.astype(object)
    y[4] = "salary=183000"
    for valuator in (DPDataValuator(Ridge(), n_permutations=2, random_state=0),
                     DPFederatedValuator(Ridge(), n_rounds=2, utility="r2",
                                         n_permutations_per_round=2, random_state=0)):
        groups = np.arange(30) // 5 if isinstance(valuator, DPFederatedValuator) else None
        with pytest.raises(ValueError, match="could not convert") as error:
            valuator.fit(X, y, X_val=X[:10], y_val=np.zeros(10), groups=groups)
        assert "183000" not in str(error.value)


def test_a_foreign_model_failing_on_private_rows_quotes_no_value(data):
    """A one-hot encoder meets a private category it never saw in X_val."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.linear_model import LogisticRegression

    X, y, X_val, y_val = data
    binary, binary_val = y < 2, y_val < 2
    X, y = np.round(X[binary]), y[binary]
    X_val, y_val = np.round(X_val[binary_val]), y_val[binary_val]
    X[5, 1] = 424242.0
    model = make_pipeline(OneHotEncoder(), LogisticRegression())
    with pytest.raises(ValueError, match="failed to score the private rows") as error:
        DPLabelQuality(model, epsilon=2.0, standardize=False).fit(
            X, y, X_val=X_val, y_val=y_val)
    assert "424242" not in str(error.value) and error.value.__context__ is None


def test_label_quality_refuses_an_unreachable_epsilon_before_any_work(data, monkeypatch):
    import skdpval.valuation._label_quality as label_quality

    def no_work(*args, **kwargs):
        raise AssertionError("work ran")

    monkeypatch.setattr(label_quality, "fit_on_validation", no_work)
    X, y, X_val, y_val = data
    with pytest.raises(ValueError, match="outside the range the calibration supports"):
        DPLabelQuality(epsilon=1e300).fit(X, y, X_val=X_val, y_val=y_val)


def test_a_noise_std_that_underflows_is_refused_before_the_walk():
    """noise_multiplier * clip_norm can round to 0 (both accepted alone): the
    fit must refuse it, not release un-noised gradients (or write releases
    into a missing noise array)."""
    from sklearn.linear_model import LogisticRegression

    X, y = make_classification(n_samples=160, n_features=4, random_state=0)
    valuator = DPDataValuator(LogisticRegression(), epsilon=None, noise_multiplier=1e-30,
                              clip_norm=1e-300, n_permutations=4, random_state=0)
    with pytest.raises(ValueError, match="noise std 0.0 .from noise_multiplier"):
        valuator.fit(X[:120], y[:120], X_val=X[120:], y_val=y[120:])


@pytest.mark.parametrize("subspace", ["public", None])
@pytest.mark.parametrize("network", [False, True])
def test_every_walk_refuses_a_rolling_mean_without_noise(monkeypatch, subspace, network):
    """Each walk's wrapper (line, basis, full space, network line and full
    space) raises if asked to roll a mean of releases it was given no noise
    array for: its kernel writes each release there."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    from skdpval.privacy._mechanism import PrivacyMechanism

    def no_noise(mechanism):
        for part in mechanism.parts:
            part.noise_std = 0.0
        return mechanism

    monkeypatch.setattr(PrivacyMechanism, "calibrate", no_noise)
    X, y = make_classification(n_samples=160, n_features=4, random_state=0)
    model = MLPClassifier((3,), random_state=0) if network else LogisticRegression()
    valuator = DPDataValuator(model, epsilon=1.0, noise="correlated", subspace=subspace,
                              n_permutations=4, random_state=0)
    with pytest.raises(ValueError, match="a rolling mean needs noise"):
        valuator.fit(X[:120], y[:120], X_val=X[120:], y_val=y[120:])


def test_federated_refuses_a_noise_std_that_underflows():
    X, y = make_classification(n_samples=160, n_features=4, random_state=0)
    valuator = DPFederatedValuator(epsilon=None, noise_multiplier=1e-300, clip_norm=1e-10,
                                   n_rounds=2, random_state=0)
    with pytest.raises(ValueError, match="noise std .* .from noise_multiplier"):
        valuator.fit(X[:120], y[:120], X_val=X[120:], y_val=y[120:],
                     groups=np.arange(120) % 4)
