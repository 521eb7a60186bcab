"""The model family chosen on the validation rows (issue 44, part 2)."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neural_network import MLPClassifier

from skdpval import DPLabelQuality
from skdpval.valuation._family_choice import (CHOICE_FOLDS, CHOICE_MIN_ROWS,
                                              check_candidates, choose_candidate)


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
        chosen, details = choose_candidate(candidates, X, y, seed=3)
        folds = StratifiedKFold(CHOICE_FOLDS, shuffle=True, random_state=3)
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
