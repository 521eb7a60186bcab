"""Warnings of the public model's fit on the validation set say where they come from."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from skdpval import DPLabelQuality
from skdpval.valuation._validation_folds import fit_on_validation


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=160, n_features=6, random_state=0)
    return X[:100], y[:100], X[100:], y[100:]


def test_convergence_warning_names_the_model_rows_and_remedy(data):
    X, y, X_val, y_val = data
    scorer = DPLabelQuality(MLPClassifier(hidden_layer_sizes=(8,), max_iter=3),
                            epsilon=3.0, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scorer.fit(X, y, X_val=X_val, y_val=y_val)
    convergence = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(convergence) == 1, [str(w.message) for w in caught]
    message = str(convergence[0].message)
    assert "DPLabelQuality" in message
    assert "MLPClassifier" in message
    assert f"on the {len(X_val)} validation rows (public)" in message
    assert "max_iter" in message and "Raise" in message
    # scikit-learn's own text is kept (the validation rows are public)
    assert "Maximum iterations (3)" in message
    # it points at the user's call of fit, here
    assert convergence[0].filename == __file__


def test_a_converged_fit_warns_nothing(data):
    X, y, X_val, y_val = data
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        DPLabelQuality(epsilon=3.0, random_state=0).fit(X, y, X_val=X_val, y_val=y_val)


def test_other_warnings_are_reworded_in_their_own_category():
    class Warns(MLPClassifier):
        def fit(self, X, y):
            warnings.warn("something odd", UserWarning)
            return super().fit(X, y)

    rng = np.random.default_rng(0)
    X_val = rng.normal(size=(30, 3))
    y_val = (X_val[:, 0] > 0).astype(int)
    with pytest.warns(UserWarning) as record:
        fit_on_validation(Warns(max_iter=500), X_val, y_val, 0, "Purpose")
    assert len(record) == 1
    message = str(record[0].message)
    for part in ("Purpose", "Warns", "30 validation rows (public)", "something odd"):
        assert part in message
    assert "max_iter" not in message  # that remedy is for convergence only


def test_an_error_filter_still_raises(data):
    """The caller's filters apply to the reworded warning."""
    X, y, X_val, y_val = data
    scorer = DPLabelQuality(MLPClassifier(hidden_layer_sizes=(8,), max_iter=3),
                            epsilon=3.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning, match="validation rows"):
            scorer.fit(X, y, X_val=X_val, y_val=y_val)
