"""privacy_spent of a search whose fits may fit the public model privately.

A search keeps its refit only: privacy_spent plans every candidate's fit on
every training fold from its parameters (skdpval.privacy._plan). Here the
same fits are made by hand (each candidate on each training fold, and the
refit) and their reports composed row by row: the plan must give that
composition, for every ``public_model`` setting, with a refit (the layout
is known: exact) and without (the layout is bounded: never below).
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold

from skdpval import DPDataValuator, DPFilteredClassifier, DPLabelQuality, privacy_spent

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _hand_mu(search, X, y, X_val, y_val):
    """The largest per-row mu over the fits the search made, each made again
    by hand (the same seeds: the same layout and the same noise)."""
    mu_sq = np.zeros(len(X))
    for params in search.cv_results_["params"]:
        for train, _ in search.cv.split(X, y):
            fit = clone(search.estimator).set_params(**params).fit(
                X[train], y[train], X_val=X_val, y_val=y_val)
            mu_sq[train] += fit.valuator_.privacy_report_["mu"] ** 2
    if hasattr(search, "best_estimator_"):
        mu_sq += search.best_estimator_.valuator_.privacy_report_["mu"] ** 2
    return float(np.sqrt(mu_sq.max()))


@pytest.fixture(scope="module")
def issue_data():
    X, y = make_classification(5000, n_features=5, random_state=0)
    return X[100:], y[100:], X[:100], y[:100]


def test_the_issue_search_with_a_private_public_model_is_counted(issue_data):
    """Issue 43, item 1: the refit reports two parts (the private fit and the
    label score), which its parameters must plan as two parts too."""
    X, y, X_val, y_val = issue_data
    search = GridSearchCV(
        DPFilteredClassifier(DPLabelQuality(random_state=0), LogisticRegression()),
        {"valuator__epsilon": [1, 3]}, cv=KFold(3))
    search.fit(X, y, X_val=X_val, y_val=y_val)
    assert search.best_estimator_.valuator_.public_model_fitted_privately_
    spent = privacy_spent(search)
    assert spent["max_fits_per_party"] == 5
    # delta="auto" is 1 / (10 n) here: each fold's own; the plan takes the
    # smallest training fold's (the largest delta) for every fold.
    hand = _hand_mu(search, X, y, X_val, y_val)
    assert hand * (1 - 1e-12) <= spent["gaussian_mu"] <= hand * (1 + 1e-5)


@pytest.fixture(scope="module")
def rule_data():
    """1,900 training rows, 100 validation rows, 5 features: in a training fold
    of KFold(3) ``public_model="auto"`` keeps the validation model at epsilon
    1 and 1.5 and fits privately at 3; on all 1,900 rows it fits privately at
    1.5 too (its noise index crosses the rule's threshold)."""
    X, y = make_classification(2000, n_features=5, random_state=1)
    return X[100:], y[100:], X[:100], y[:100]


@pytest.mark.parametrize("refit", [True, False])
@pytest.mark.parametrize("public_model", ["auto", "validation", "private"])
def test_every_public_model_setting_in_a_search_is_the_hand_composition(
        rule_data, public_model, refit):
    X, y, X_val, y_val = rule_data
    valuator = DPLabelQuality(public_model=public_model, delta=1e-5, random_state=0)
    epsilons = [1.0, 1.5, 3.0]
    # The refit's epsilon: 1.5, whose layout under "auto" differs between a
    # training fold and the refit.
    search = GridSearchCV(DPFilteredClassifier(valuator, LogisticRegression()),
                          {"valuator__epsilon": epsilons}, cv=KFold(3), refit=refit,
                          scoring=lambda fitted, X_, y_: -abs(
                              fitted.valuator_.epsilon - 1.5))
    search.fit(X, y, X_val=X_val, y_val=y_val)
    hand = _hand_mu(search, X, y, X_val, y_val)
    spent = privacy_spent(search)
    assert spent["max_fits_per_party"] == 3 * 2 + refit
    if refit:
        assert search.best_params_ == {"valuator__epsilon": 1.5}
        fitted = search.best_estimator_.valuator_
        assert fitted.public_model_fitted_privately_ == (public_model != "validation")
        assert spent["gaussian_mu"] == pytest.approx(hand, rel=1e-9)
    else:
        # No sibling shows the layout: the largest mu of those the fit may
        # have, a hair above the hand composition (the fewest noise draws).
        assert hand * (1 - 1e-12) <= spent["gaussian_mu"] <= hand * (1 + 1e-5)
        if public_model == "validation":
            assert spent["gaussian_mu"] == pytest.approx(hand, rel=1e-9)


def test_the_rule_decides_per_candidate_and_fold(rule_data):
    """The layouts the hand fits had: what the plan must know."""
    X, y, X_val, y_val = rule_data
    chosen = {}
    for epsilon in (1.0, 1.5, 3.0):
        for n in (len(X) * 2 // 3, len(X)):
            fit = DPLabelQuality(epsilon=epsilon, delta=1e-5, random_state=0).fit(
                X[:n], y[:n], X_val=X_val, y_val=y_val)
            chosen[epsilon, n] = fit.public_model_fitted_privately_
    assert chosen == {(1.0, 1266): False, (1.0, 1900): False, (1.5, 1266): False,
                      (1.5, 1900): True, (3.0, 1266): True, (3.0, 1900): True}


def test_a_data_valuator_search_with_a_private_public_model(rule_data):
    X, y, X_val, y_val = rule_data
    valuator = DPDataValuator(public_model="private", n_permutations=4,
                              random_state=0)
    search = GridSearchCV(DPFilteredClassifier(valuator, LogisticRegression()),
                          {"valuator__epsilon": [1.0, 3.0],
                           "valuator__public_model_share": [0.05, 0.2]}, cv=KFold(2))
    search.fit(X, y, X_val=X_val, y_val=y_val)
    assert search.best_estimator_.valuator_.public_model_fitted_privately_
    spent = privacy_spent(search)
    assert spent["gaussian_mu"] == pytest.approx(
        _hand_mu(search, X, y, X_val, y_val), rel=1e-9)
