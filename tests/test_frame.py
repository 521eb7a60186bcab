"""to_frame() and to_pydvl() on every valuator."""

import sys
import types
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import MinMaxScaler

from skdpval import (DPDataValuator, DPFederatedValuator, DPLabelQuality,
                     LayeredShapleyValuator)

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=90, n_features=4, random_state=0)
    return MinMaxScaler().fit_transform(X), y


def _valuators():
    return {
        "DPDataValuator": DPDataValuator(epsilon=3.0, n_permutations=20,
                                         random_state=0),
        "DPLabelQuality": DPLabelQuality(epsilon=3.0, random_state=0),
        "DPFederatedValuator": DPFederatedValuator(
            n_rounds=4, n_permutations_per_round=5, epsilon=3.0, random_state=0),
        "LayeredShapleyValuator": LayeredShapleyValuator(alpha=0.3, random_state=0),
    }


def _fit(valuator, X, y, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # held-out rows, every sample a client
        return valuator.fit(X, y, **fit_params)


@pytest.fixture(scope="module")
def fitted(data):
    """Each valuator fitted with a validation share held out of X."""
    X, y = data
    return {name: _fit(valuator, X, y) for name, valuator in _valuators().items()}


NAMES = list(_valuators())


@pytest.mark.parametrize("name", NAMES)
def test_frame_has_one_row_per_party(fitted, name):
    valuator = fitted[name]
    frame = valuator.to_frame()
    assert frame.columns.tolist() == ["value", "stderr", "rank", "held_out"]
    n_parties = len(valuator.values_)
    assert len(frame) == n_parties
    held_out = np.isnan(valuator.values_)
    assert held_out.any() and not held_out.all()  # a validation share was held out
    np.testing.assert_array_equal(frame["held_out"].to_numpy(), held_out)
    assert frame["held_out"].dtype == bool
    np.testing.assert_array_equal(frame["value"].to_numpy(), valuator.values_)
    np.testing.assert_array_equal(frame["rank"].to_numpy(), valuator.rank_)
    assert set(frame.loc[frame["held_out"], "rank"]) == {0}
    assert sorted(frame.loc[~frame["held_out"], "rank"]) == list(
        range(1, int((~held_out).sum()) + 1))
    stderr = frame["stderr"].to_numpy()
    if hasattr(valuator, "values_stderr_"):
        np.testing.assert_array_equal(stderr, valuator.values_stderr_)
        assert np.all(np.isfinite(stderr[~held_out]))
    else:
        assert np.all(np.isnan(stderr))
    if name == "DPFederatedValuator":  # without groups every sample is a client
        assert frame.index.name == "client"
        np.testing.assert_array_equal(frame.index, np.arange(n_parties))
    else:
        assert isinstance(frame.index, pd.RangeIndex)
        assert frame.index.name is None


@pytest.mark.parametrize("name", ["DPDataValuator", "DPLabelQuality",
                                  "DPFederatedValuator"])
def test_frame_is_indexed_by_group_labels(data, name):
    X, y = data
    labels = np.array(["north", "south", "east", "west", "centre", "isle"])
    groups = labels[np.arange(len(X)) % 6]
    valuator = _fit(_valuators()[name], X[:60], y[:60], groups=groups[:60],
                    X_val=X[60:], y_val=y[60:])
    frame = valuator.to_frame()
    assert frame.index.name == ("client" if name == "DPFederatedValuator" else "group")
    assert sorted(frame.index) == sorted(labels)
    np.testing.assert_array_equal(frame.index, valuator.groups_)
    np.testing.assert_array_equal(frame["value"], valuator.values_)
    assert not frame["held_out"].any()
    # a group's value, looked up by its label
    first = valuator.groups_[0]
    assert frame.loc[first, "value"] == valuator.values_[0]


@pytest.mark.parametrize("name", ["DPDataValuator", "DPLabelQuality",
                                  "LayeredShapleyValuator"])
@pytest.mark.parametrize("held_out", [False, True])
def test_frame_keeps_the_index_of_a_data_frame(data, name, held_out):
    """A DataFrame X: to_frame() is indexed by X's own row labels (it was
    0..n-1), held-out rows included; a later fit on an array resets it."""
    X, y = data
    index = pd.Index(np.random.RandomState(0).permutation(1000)[:60] * 7 + 3,
                     name="row_id")
    frame_X = pd.DataFrame(X[:60], index=index, columns=list("abcd"))
    fit_params = {} if held_out else dict(X_val=X[60:], y_val=y[60:])
    valuator = _fit(_valuators()[name], frame_X, y[:60], **fit_params)
    frame = valuator.to_frame()
    assert frame.index.equals(index) and frame.index.name == "row_id"
    np.testing.assert_array_equal(frame["value"], valuator.values_)
    assert frame["held_out"].any() == held_out
    refit = _fit(valuator, X[:60], y[:60], **fit_params).to_frame()
    assert isinstance(refit.index, pd.RangeIndex)


@pytest.mark.parametrize("name", NAMES)
def test_unfitted_valuator_refuses(name):
    valuator = _valuators()[name]
    with pytest.raises(NotFittedError):
        valuator.to_frame()
    with pytest.raises(NotFittedError):
        valuator.to_pydvl()


def test_frame_without_pandas_names_the_extra(fitted, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import fails
    with pytest.raises(ImportError, match=r"pip install pandas.*skdpval\[pandas\]"):
        fitted["DPLabelQuality"].to_frame()


def test_pydvl_missing_is_a_clear_error(fitted, monkeypatch):
    for module in ("pydvl", "pydvl.valuation", "pydvl.valuation.result",
                   "pydvl.value", "pydvl.value.result"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match="to_pydvl needs pyDVL"):
        fitted["DPDataValuator"].to_pydvl()


@pytest.fixture
def fake_pydvl(monkeypatch):
    """A stand-in for pyDVL's ValuationResult that records its keywords
    (pyDVL itself pulls in cvxpy and pins an older numpy; see
    test_pydvl_export_round_trips for the real one)."""
    class ValuationResult:
        def __init__(self, *, values, variances=None, counts=None, indices=None,
                     data_names=None, algorithm="", **extra):
            self.kwargs = dict(values=values, variances=variances, counts=counts,
                               indices=indices, data_names=data_names,
                               algorithm=algorithm, **extra)

    result = types.ModuleType("pydvl.valuation.result")
    result.ValuationResult = ValuationResult
    monkeypatch.setitem(sys.modules, "pydvl", types.ModuleType("pydvl"))
    monkeypatch.setitem(sys.modules, "pydvl.valuation",
                        types.ModuleType("pydvl.valuation"))
    monkeypatch.setitem(sys.modules, "pydvl.valuation.result", result)


@pytest.mark.parametrize("name", NAMES)
def test_pydvl_export_keeps_the_valued_parties(fitted, fake_pydvl, name):
    valuator = fitted[name]
    kwargs = valuator.to_pydvl().kwargs
    valued = np.flatnonzero(~np.isnan(valuator.values_))
    np.testing.assert_array_equal(kwargs["indices"], valued)
    np.testing.assert_array_equal(kwargs["values"], valuator.values_[valued])
    np.testing.assert_array_equal(kwargs["data_names"], valued)
    assert kwargs["algorithm"] == f"skdpval.{name}"
    counts = np.asarray(kwargs["counts"])
    assert counts.shape == valued.shape and np.all(counts >= 1)
    if hasattr(valuator, "values_stderr_"):
        assert np.all(counts == getattr(valuator, "n_marginals_", 1))
        # pyDVL's stderr is sqrt(variances / counts)
        np.testing.assert_allclose(np.sqrt(kwargs["variances"] / counts),
                                   valuator.values_stderr_[valued], rtol=1e-12)
    else:
        assert np.all(np.isnan(kwargs["variances"]))
    if hasattr(valuator, "n_coalitions_"):
        np.testing.assert_array_equal(counts, valuator.n_coalitions_[valued])


def test_pydvl_export_names_groups(data, fake_pydvl):
    X, y = data
    groups = np.array(["a", "b", "c", "d"])[np.arange(60) % 4]
    valuator = _fit(DPLabelQuality(epsilon=3.0, random_state=0), X[:60], y[:60],
                    groups=groups, X_val=X[60:], y_val=y[60:])
    kwargs = valuator.to_pydvl().kwargs
    assert list(kwargs["data_names"]) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(kwargs["indices"], np.arange(4))


def test_pydvl_export_round_trips(fitted):
    pytest.importorskip("pydvl")
    valuator = fitted["DPDataValuator"]
    result = valuator.to_pydvl()
    valued = np.flatnonzero(~np.isnan(valuator.values_))
    np.testing.assert_allclose(result.values, valuator.values_[valued])
    np.testing.assert_allclose(result.stderr, valuator.values_stderr_[valued])
    np.testing.assert_array_equal(result.indices, valued)
