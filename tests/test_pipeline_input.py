"""A valuator at the end of a Pipeline that preprocesses a frame with text
columns (issue 43, item 4): ``transform_input=["X_val"]`` with metadata
routing and a preprocessing fitted on the public rows
(``FrozenEstimator(ct.fit(X_val))``); an ``X_val`` that reaches the
valuator untransformed is refused with a message naming both."""

import warnings

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_array_equal
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skdpval import DPDataValuator, DPFilteredClassifier, DPLabelQuality, privacy_spent

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def frame():
    """Training and validation frames with two text columns, indexed by an id."""
    rng = np.random.default_rng(0)
    n = 160
    X = pd.DataFrame({"plan": rng.choice(["basic", "plus", "pro"], n),
                      "region": rng.choice(["north", "south"], n),
                      "income": rng.normal(size=n), "age": rng.normal(size=n)},
                     index=pd.Index([f"c{i:03d}" for i in range(n)], name="customer"))
    y = ((X["plan"] == "pro") ^ (X["income"] > 0)).to_numpy().astype(int)
    return X.iloc[40:], y[40:], X.iloc[:40], y[:40]


def _preprocessing():
    return ColumnTransformer(
        [("text", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
          ["plan", "region"]),
         ("numbers", StandardScaler(), ["income", "age"])])


def _valuators():
    return {
        "DPDataValuator": DPDataValuator(epsilon=3.0, n_permutations=12,
                                         random_state=0, noise_seed=0),
        "DPLabelQuality": DPLabelQuality(epsilon=3.0, random_state=0, noise_seed=0),
        "DPFilteredClassifier": DPFilteredClassifier(
            DPLabelQuality(epsilon=3.0, random_state=0, noise_seed=0),
            LogisticRegression(), drop_fraction=0.1),
    }


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reproducible noise's warning
        return fit()


def _requesting(step):
    """``step`` requesting X_val and y_val (the filters do by default)."""
    if hasattr(step, "set_fit_request"):
        return step.set_fit_request(X_val=True, y_val=True)
    return step


def _values(step):
    valuator = getattr(step, "valuator_", step)
    return valuator.values_


@pytest.mark.parametrize("name", ["DPDataValuator", "DPLabelQuality"])
def test_untransformed_x_val_names_transform_input_and_frozen_estimator(frame, name):
    """The issue's reproducer: ``val__X_val`` goes to the valuator as given."""
    X, y, X_val, y_val = frame
    pipe = Pipeline([("pre", _preprocessing()), ("val", _valuators()[name])])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="X_val") as error:
            pipe.fit(X, y, val__X_val=X_val, val__y_val=y_val)
    message = str(error.value)
    assert "transform_input" in message and "FrozenEstimator" in message
    # No warning about feature names that does not say what to do.
    assert not [w for w in caught if "feature names" in str(w.message)
                and "transform_input" not in str(w.message)]


def test_untransformed_numbers_name_the_remedy_too(frame):
    """Numeric columns only: the one-hot step changed the column count."""
    X, y, X_val, y_val = frame
    numbers = X.drop(columns="region"), X_val.drop(columns="region")
    numbers = [part.assign(plan=part["plan"].map({"basic": 0, "plus": 1, "pro": 2}))
               for part in numbers]
    pre = ColumnTransformer([("plan", OneHotEncoder(sparse_output=False), ["plan"])],
                            remainder="passthrough")
    pipe = Pipeline([("pre", pre), ("val", _valuators()["DPLabelQuality"])])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="X_val has 3 features, but X has 5.*"
                           "transform_input.*FrozenEstimator"):
            pipe.fit(numbers[0], y, val__X_val=numbers[1], val__y_val=y_val)
    assert not [w for w in caught if "feature names" in str(w.message)]


@pytest.mark.parametrize("name", list(_valuators()))
def test_transform_input_with_a_frozen_preprocessing(frame, name):
    """The idiom: values equal those of the valuator fitted on the
    transformed frames, and privacy_spent finds no leak in the
    preprocessing (it leaks when fitted on the private rows)."""
    X, y, X_val, y_val = frame
    public = _preprocessing().fit(X_val)
    expected = _quiet(lambda: _valuators()[name].fit(
        public.transform(X), y, X_val=public.transform(X_val), y_val=y_val))
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([("pre", FrozenEstimator(_preprocessing().fit(X_val))),
                         ("val", _requesting(_valuators()[name]))],
                        transform_input=["X_val"])
        _quiet(lambda: pipe.fit(X, y, X_val=X_val, y_val=y_val))
        leaky = Pipeline([("pre", _preprocessing()),
                          ("val", _requesting(_valuators()[name]))],
                         transform_input=["X_val"])
        _quiet(lambda: leaky.fit(X, y, X_val=X_val, y_val=y_val))
    assert_array_equal(_values(pipe[-1]), _values(expected))
    assert not any(leak.startswith("ColumnTransformer")
                   for leak in privacy_spent(pipe)["leaks"])
    assert any(leak.startswith("ColumnTransformer")
               for leak in privacy_spent(leaky)["leaks"])


def test_to_frame_keeps_the_rows_index_through_a_pipeline(frame):
    """A step that outputs pandas passes X's index on to to_frame()."""
    X, y, X_val, y_val = frame
    with sklearn.config_context(enable_metadata_routing=True):
        pre = FrozenEstimator(_preprocessing().set_output(transform="pandas").fit(X_val))
        pipe = Pipeline([("pre", pre), ("val", _valuators()["DPLabelQuality"]
                                        .set_fit_request(X_val=True, y_val=True))],
                        transform_input=["X_val"])
        _quiet(lambda: pipe.fit(X, y, X_val=X_val, y_val=y_val))
    table = pipe[-1].to_frame()
    assert table.index.equals(X.index) and table.index.name == "customer"
    assert_array_equal(table["value"], pipe[-1].values_)


def test_text_or_sparse_training_rows_name_the_encoder(frame):
    """A frame with text columns given to the valuator itself, and an
    encoder's sparse output: the errors say how to encode (quoting no
    private value)."""
    X, y, X_val, y_val = frame
    with pytest.raises(ValueError, match="could not convert") as error:
        DPLabelQuality(epsilon=3.0, random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    message = str(error.value)
    assert "transform_input" in message and "FrozenEstimator" in message
    assert not any(f"'{word}'" in message for word in ("basic", "plus", "pro", "north"))
    sparse = ColumnTransformer([("text", OneHotEncoder(), ["plan", "region"])],
                               sparse_threshold=1.0)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([("pre", FrozenEstimator(sparse.fit(X_val))),
                         ("val", _requesting(_valuators()["DPLabelQuality"]))],
                        transform_input=["X_val"])
        with pytest.raises(TypeError, match="sparse_output=False"):
            pipe.fit(X, y, X_val=X_val, y_val=y_val)
