"""public_model="auto": the private fit it makes, and whether it keeps it (issue 44)."""

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from skdpval import DPDataValuator, DPLabelQuality, privacy_spent
from skdpval.privacy._accounting import gdp_mu
from skdpval.valuation._keep_rule import (AUTO_SHARE_SES, balanced_accuracy_difference,
                                          class_share_shift)

DELTA = 1e-5


def _data(flip_rates, n=20000, n_val=200, seed=0):
    """Balanced classes; class c's training labels flipped at flip_rates[c]."""
    rng = np.random.default_rng(seed)
    w = np.array([2.0, -1.0, 0.5, 0.0])
    X = rng.normal(size=(n, 4))
    y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)
    flipped = rng.random(n) < np.asarray(flip_rates)[y]
    X_val = rng.normal(size=(n_val, 4))
    y_val = (X_val @ w > 0).astype(int)
    return X, np.where(flipped, 1 - y, y), X_val, y_val


def _fit(valuator, data):
    X, y, X_val, y_val = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noise_seed's notice
        return valuator.fit(X, y, X_val=X_val, y_val=y_val)


def test_balanced_accuracy_difference_is_sklearns():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 90)
    a, b = rng.integers(0, 3, 90), rng.integers(0, 3, 90)
    difference, se = balanced_accuracy_difference(a, b, labels)
    assert difference == pytest.approx(balanced_accuracy_score(labels, a)
                                       - balanced_accuracy_score(labels, b))
    assert 0 < se < 0.2


def test_class_share_shift():
    labels = np.array([0] * 70 + [1] * 30)  # shares 0.7 / 0.3, se ~0.046
    inside = np.tile([0.6, 0.4], (100, 1))  # shrunk toward 1/2: symmetric noise
    assert class_share_shift(inside, labels) == 0.0
    crossed = np.tile([0.4, 0.6], (100, 1))  # past 1/2: the clean share 0.3 away
    assert class_share_shift(crossed, labels) == pytest.approx(
        0.3 / math.sqrt(0.21 / 100))
    away = np.tile([0.8, 0.2], (100, 1))  # away from 1/2: 0.1
    assert class_share_shift(away, labels) == pytest.approx(
        0.1 / math.sqrt(0.21 / 100))


@pytest.mark.parametrize("Valuator, extra", [
    (DPLabelQuality, {}),
    # the linear model pinned: the walk follows a privately fitted line of it
    (DPDataValuator, {"n_permutations": 20, "estimator": LogisticRegression()})])
def test_auto_drops_a_private_fit_biased_by_class_dependent_flips(Valuator, extra):
    """45% of class 1 and 15% of class 0 flipped: the private fit is made,
    not kept, and still counted (its share of mu^2 in the report and in
    privacy_spent)."""
    data = _data((0.15, 0.45))
    auto = _fit(Valuator(epsilon=3.0, delta=DELTA, random_state=0, noise_seed=5,
                         **extra), data)
    validation = _fit(Valuator(epsilon=3.0, delta=DELTA, random_state=0,
                               public_model="validation", noise_seed=5, **extra), data)
    assert not auto.public_model_fitted_privately_
    report = auto.privacy_report_
    reason = report["details"]["public_model"]
    assert "not kept" in reason and "share of mu^2 is spent" in reason
    rule = report["details"]["public_model_fit"]["rule"]
    assert report["details"]["public_model_fit"]["kept"] is False
    assert rule["limit"] == max(rule["margin"], 1.5 * rule["standard_error"])
    assert (rule["difference"] < -rule["limit"]
            or rule["class_share_shift"] > AUTO_SHARE_SES)
    parts = {part["name"]: part for part in report["parts"]}
    assert parts["public model fit"]["share"] == 0.05
    other = [name for name in parts if name != "public model fit"]
    assert len(other) == 1 and parts[other[0]]["share"] == pytest.approx(0.95)
    mu = gdp_mu(3.0, DELTA)
    assert math.hypot(parts["public model fit"]["mu"],
                      parts[other[0]]["mu"]) == pytest.approx(mu, rel=1e-5)
    assert privacy_spent(auto, delta=DELTA)["mu"] == pytest.approx(mu, rel=1e-5)
    # The release spends the rest: more noise than with the validation model.
    assert report["noise_std"] > validation.privacy_report_["noise_std"]
    if Valuator is DPLabelQuality:
        assert auto.public_model_ is auto.estimator_
        assert auto.margin_scale_ == 1.0
    else:
        np.testing.assert_allclose(auto.public_model_, validation.public_model_)


def test_auto_keeps_the_private_fit_under_symmetric_flips():
    auto = _fit(DPLabelQuality(epsilon=3.0, delta=DELTA, random_state=0,
                               noise_seed=5), _data((0.3, 0.3)))
    assert auto.public_model_fitted_privately_
    assert auto.public_model_ is not auto.estimator_
    assert "kept" in auto.public_model_reason_
    assert auto.privacy_report_["details"]["public_model_fit"]["kept"] is True


def test_private_option_keeps_the_fit_and_reports_the_statistics():
    scorer = _fit(DPLabelQuality(epsilon=3.0, delta=DELTA, random_state=0,
                                 public_model="private", noise_seed=5),
                  _data((0.15, 0.45)))
    assert scorer.public_model_fitted_privately_
    rule = scorer.privacy_report_["details"]["public_model_fit"]["rule"]
    assert {"difference", "standard_error", "class_share_shift"} <= set(rule)
