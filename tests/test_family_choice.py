"""The model family chosen on the validation rows (issue 44, part 2)."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neural_network import MLPClassifier

from skdpval import DPLabelQuality
from skdpval.valuation._family_choice import (CHOICE_MIN_ROWS, check_candidates,
                                              choose_candidate)
from skdpval.valuation._validation_folds import N_FOLDS, ValidationFolds


def _rows(n, seed, kind):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    if kind == "xor":
        return X, (3 * X[:, 0] * X[:, 1] + 0.2 * X[:, 2] > 0).astype(int)
    # Linear with overlapping classes (logistic labels), as real tables have.
    f = X[:, 0] - X[:, 1] + 0.2 * X[:, 2]
    return X, (rng.random(n) < 1 / (1 + np.exp(-2 * f))).astype(int)


def test_the_choice_is_the_one_standard_error_rule_on_cross_validated_log_loss():
    X, y = _rows(CHOICE_MIN_ROWS + 50, 0, "xor")
    candidates = [LogisticRegression(), MLPClassifier((16,), max_iter=2000)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen, details = choose_candidate(candidates, ValidationFolds(X, y, 3))
        folds = StratifiedKFold(N_FOLDS, shuffle=True, random_state=3)
        losses = []
        for model in (LogisticRegression(),
                      MLPClassifier((16,), max_iter=2000, random_state=3)):
            p = cross_val_predict(model, X, y, cv=folds, method="predict_proba")
            losses.append(-np.log(np.clip(p[np.arange(len(y)), y], 1e-15, 1)))
    np.testing.assert_allclose(details["mean_loss"], [l.mean() for l in losses],
                               rtol=1e-10)
    difference = losses[1] - losses[0]
    se = difference.std(ddof=1) / np.sqrt(len(y))
    assert details["paired_difference_and_se"][1] == pytest.approx(
        (difference.mean(), se))
    assert chosen == int(difference.mean() < -se) == 1
    assert details["chosen"] == "MLPClassifier"


@pytest.mark.parametrize("kind, n_val, expected", [
    ("xor", 300, "MLPClassifier"), ("linear", 300, "LogisticRegression"),
    ("linear", 30, "LogisticRegression")])
def test_the_default_estimator_picks_the_family_on_the_validation_rows(
        kind, n_val, expected):
    X, y = _rows(3000, 1, kind)
    X_val, y_val = _rows(n_val, 2, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = DPLabelQuality(epsilon=3.0, public_model="validation",
                                random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    assert scorer.model_choice_["chosen"] == expected
    assert ("mean_loss" in scorer.model_choice_) == (n_val >= CHOICE_MIN_ROWS)
    assert type(scorer.estimator_).__name__ == expected
    assert scorer.privacy_report_["details"]["model_choice"] == scorer.model_choice_
    # The choice reads the public rows only: the report's budget is unchanged.
    assert [p["name"] for p in scorer.privacy_report_["parts"]] == ["label score"]


def test_one_estimator_makes_no_choice():
    X, y = _rows(500, 1, "linear")
    X_val, y_val = _rows(60, 2, "linear")
    scorer = DPLabelQuality(LogisticRegression(), epsilon=3.0, random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert scorer.model_choice_ is None
    assert "model_choice" not in scorer.privacy_report_["details"]


@pytest.mark.parametrize("estimator, match", [
    ([], "at least one"), ([LogisticRegression(), Ridge()], "all classifiers")])
def test_bad_candidates_fail_before_any_work(estimator, match):
    with pytest.raises(ValueError, match=match):
        DPLabelQuality(estimator, epsilon=1.0).fit(np.array([[np.nan, 1.0]]), [0])
    with pytest.raises(ValueError, match="estimator"):
        check_candidates(estimator)


def test_the_choice_and_the_keep_rule_share_their_fold_fits(monkeypatch):
    """DPLabelQuality's family choice and "auto"'s keep rule read one set of
    out-of-fold fits: each candidate is cross-validated once."""
    made = []
    fit = ValidationFolds._fit

    def counted(self, model):
        made.append(type(model).__name__)
        return fit(self, model)

    monkeypatch.setattr(ValidationFolds, "_fit", counted)
    X, y = _rows(20000, 3, "linear")
    X_val, y_val = _rows(CHOICE_MIN_ROWS + 50, 4, "linear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = DPLabelQuality(epsilon=3.0, random_state=0).fit(
            X, y, X_val=X_val, y_val=y_val)
    rule = scorer.privacy_report_["details"]["public_model_fit"]["rule"]
    assert rule["n_folds"] == N_FOLDS and "difference" in rule
    assert made == ["LogisticRegression", "MLPClassifier"]


def test_the_default_networks_budget_does_not_warn_but_a_users_network_does():
    """The default candidate network ends at its budget of epochs on purpose:
    no ConvergenceWarning when it is chosen; the same network passed by the
    user keeps scikit-learn's warning."""
    from sklearn.exceptions import ConvergenceWarning

    from skdpval.valuation._family_choice import DEFAULT_NETWORK

    X, y = _rows(3000, 1, "xor")
    X_val, y_val = _rows(150, 2, "xor")
    caught = {}
    for name, estimator in (("default", None),
                            ("user's", MLPClassifier(**DEFAULT_NETWORK))):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            scorer = DPLabelQuality(estimator, epsilon=3.0, public_model="validation",
                                    random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
        assert type(scorer.estimator_) is MLPClassifier
        assert scorer.estimator_.n_iter_ == DEFAULT_NETWORK["max_iter"]  # its budget
        caught[name] = [w for w in record if issubclass(w.category, ConvergenceWarning)]
    assert caught["default"] == []
    assert len(caught["user's"]) == 1
