"""Metrics on hand-made inputs with known answers, and on real valuations."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge

import skdpval.metrics as metrics_module
from skdpval import DPDataValuator
from skdpval.datasets import flip_labels, load_noisy_classification
from skdpval.metrics import (
    detection_auc_band,
    detection_auc_limit,
    mean_adjusted_variance,
    membership_inference_auc,
    noisy_label_auc,
    removal_curve,
    value_fidelity,
)


def test_value_fidelity_known_answers():
    reference = np.arange(20.0)
    assert value_fidelity(reference, reference) == (1.0, 1.0, 1.0)
    assert value_fidelity(-reference, reference) == pytest.approx((-1.0, 0.0, 0.0))
    # Two adjacent ranks swapped: rho = 1 - 6 * 2 / (20 * 399); the deciles
    # (2 parties each) are the same sets.
    swapped = reference.copy()
    swapped[[18, 19]] = swapped[[19, 18]]
    fidelity = value_fidelity(swapped, reference)
    assert fidelity.spearman == pytest.approx(1 - 12 / 7980, abs=1e-12)
    assert fidelity.top_decile_overlap == fidelity.bottom_decile_overlap == 1.0
    # The best party valued lowest: ranks move by 1 (19 parties) and 19 (one):
    # rho = 1 - 6 * (19 + 361) / 7980 = 5 / 7; top 2 {18, 19} against {17, 18},
    # bottom 2 {0, 1} against {19, 0}: half of each.
    demoted = reference.copy()
    demoted[19] = -1.0
    assert value_fidelity(demoted, reference) == pytest.approx((5 / 7, 0.5, 0.5))
    # 25 parties: deciles of ceil(2.5) = 3.
    values = np.r_[np.arange(22.0), 0.5, 30.0, 40.0]
    fidelity = value_fidelity(values, np.arange(25.0))
    # Top 3 {24, 23, 21} against {24, 23, 22}; bottom 3 {0, 22, 1} against {0, 1, 2}.
    assert fidelity.top_decile_overlap == pytest.approx(2 / 3)
    assert fidelity.bottom_decile_overlap == pytest.approx(2 / 3)


def test_value_fidelity_leaves_out_held_out_parties_and_checks_input():
    reference = np.r_[np.nan, np.arange(10.0)]
    values = np.r_[np.nan, np.arange(10.0)[::-1]]
    assert value_fidelity(values, reference) == pytest.approx((-1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="NaN for the same parties"):
        value_fidelity(np.arange(11.0), reference)
    with pytest.raises(ValueError, match="same length"):
        value_fidelity(np.arange(3.0), np.arange(4.0))
    with pytest.raises(ValueError, match="finite"):
        value_fidelity([0.0, np.inf, 1.0], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="at least 2"):
        value_fidelity([np.nan, 1.0], [np.nan, 2.0])


def test_noisy_label_auc_known_answers():
    assert noisy_label_auc([3, 2, 1, 0], [False, False, True, True]) == 1.0
    assert noisy_label_auc([0, 1, 2, 3], [False, False, True, True]) == 0.0
    # One of four (noisy, clean) pairs ordered wrongly: 3/4.
    assert noisy_label_auc([2.5, 3.0, 2.0, 0.0], [True, False, False, True]) == 0.75
    with pytest.raises(ValueError, match="finite"):
        noisy_label_auc([np.nan, 1.0], [True, False])
    with pytest.raises(ValueError, match="lengths"):
        noisy_label_auc([1.0, 2.0, 3.0], [True, False])


def test_mean_adjusted_variance_by_hand():
    # Party 1: marginals 1, 3: mean 2, s^2 = (1 + 1) / (2 * 1) = 1 -> 1/2.
    # Party 2: marginals -2, -4: mean -3, s^2 = 1 -> 1/3.
    assert_allclose(mean_adjusted_variance([[1.0, -2.0], [3.0, -4.0]]),
                    (1 / 2 + 1 / 3) / 2)
    # Constant marginals: no uncertainty.
    assert mean_adjusted_variance([[2.0, 1.0]] * 5) == 0.0
    with pytest.raises(ValueError, match="exactly 0"):
        mean_adjusted_variance([[1.0, 1.0], [-1.0, 1.0]])
    with pytest.raises(ValueError, match="at least 2"):
        mean_adjusted_variance([[1.0, 2.0]])


def test_valuator_running_statistics_match_the_marginals(monkeypatch):
    """marginal_mean_/var_ from running sums equal the statistics of the k x n marginals."""
    from skdpval.kernels import _linear

    recorded = []
    original = _linear.walk

    def recording(*args):
        marginals, end = original(*args)
        recorded.append(marginals.copy())
        return marginals, end

    monkeypatch.setattr(_linear, "walk", recording)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] + rng.normal(size=30) > 0).astype(int)
    valuator = DPDataValuator(n_permutations=20, q=0.5, batch_permutations=3,
                              subspace=None, random_state=0).fit(X[:20], y[:20], X_val=X[20:],
                                                  y_val=y[20:])
    marginals = np.concatenate(recorded)[10:]  # past the burn-in
    assert valuator.n_marginals_ == 10
    assert_allclose(valuator.marginal_mean_, marginals.mean(0), rtol=1e-12)
    assert_allclose(valuator.marginal_var_, marginals.var(0), rtol=1e-9)
    assert_allclose(mean_adjusted_variance(valuator=valuator),
                    mean_adjusted_variance(marginals), rtol=1e-9)


def test_removal_curve_by_hand():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [-1.0], [4.0]])
    y = np.array([0, 0, 1, 1, 1, 0])
    values = np.array([1.0, 1.0, 1.0, 1.0, -1.0, -2.0])
    # Removing the two mislabelled-looking points leaves a separable set
    # that gets the 4 others right and the 2 removed wrong.
    scores = removal_curve(X, y, X, y, values, LogisticRegression(), [1 / 3],
                           order="low")
    assert_allclose(scores, [4 / 6])
    # Removing all but one class: the constant predictor of what is left.
    scores = removal_curve(X, y, X, y, np.array([0, 0, 1, 1, 1, 0.0]),
                           LogisticRegression(), [0.5], order="high")
    assert_allclose(scores, [0.5])
    with pytest.raises(ValueError, match="order"):
        removal_curve(X, y, X, y, values, LogisticRegression(), [0.1], order="top")
    with pytest.raises(ValueError, match="fractions"):
        removal_curve(X, y, X, y, values, LogisticRegression(), [1.0])


def test_removing_high_noiseless_values_hurts_more_than_random():
    data = load_noisy_classification("breast_cancer", flip_fraction=0.3,
                                     random_state=0)
    valuator = DPDataValuator(noise="none", q=0.0, n_permutations=30,
                              random_state=0).fit(data.X_train, data.y_train,
                                                  X_val=data.X_val, y_val=data.y_val)
    fractions = [0.2, 0.4, 0.6]
    args = (data.X_train, data.y_train, data.X_test, data.y_test, valuator.values_,
            LogisticRegression())
    high = removal_curve(*args, fractions, order="high")
    random = np.mean([removal_curve(*args, fractions, order="random", random_state=s)
                      for s in range(5)], axis=0)
    assert np.mean(random - high) > 0.05, (high, random)


def test_flip_labels():
    y = np.array([0, 1, 2] * 10)
    y_noisy, flipped = flip_labels(y, 0.3, random_state=0)
    assert flipped.sum() == 9
    assert np.all(y_noisy[flipped] != y[flipped])
    assert np.all(y_noisy[~flipped] == y[~flipped])
    assert set(y_noisy) <= {0, 1, 2}
    strings, _ = flip_labels(np.array(["a", "b"] * 5), 0.5, random_state=0)
    assert set(strings) <= {"a", "b"}
    with pytest.raises(ValueError, match="fraction"):
        flip_labels(y, 1.5)


@pytest.mark.parametrize("name", ["breast_cancer", "diabetes", "wine", "iris"])
def test_load_noisy_classification(name):
    data = load_noisy_classification(name, n_train=60, flip_fraction=0.25,
                                     random_state=0)
    assert len(data.X_train) == 60 and data.is_noisy.sum() == 15
    # Scaled with the validation split's statistics (public), not the training's.
    assert_allclose(data.X_val.mean(0), 0, atol=1e-10)
    assert np.all(data.y_train[~data.is_noisy] == data.y_train_clean[~data.is_noisy])
    assert np.all(data.y_train[data.is_noisy] != data.y_train_clean[data.is_noisy])
    assert len(np.unique(data.y_val)) >= 2


def test_noisy_label_auc_validates_is_noisy():
    values = [0.3, -0.2, 0.1, -0.5]
    assert noisy_label_auc(values, [0, 1, 0, 1]) == 1.0
    assert noisy_label_auc(values, [0.0, 1.0, 0.0, 1.0]) == 1.0
    for is_noisy in (["False", "True", "False", "True"], [np.nan, 1, 0, 1],
                     [0, 2, 0, 1]):
        with pytest.raises(ValueError, match="is_noisy must be an array of bool"):
            noisy_label_auc(values, is_noisy)


@pytest.mark.parametrize("fraction", [0.95, 0.92, np.nan, np.inf])
@pytest.mark.parametrize("estimator", [LogisticRegression(), Ridge()])
def test_removal_curve_keeps_at_least_one_sample(fraction, estimator):
    X = np.array([[0.0], [1.0], [2.0], [3.0], [-1.0], [4.0]])
    y = np.array([0, 0, 1, 1, 1, 0])
    values = np.array([1.0, 1.0, 1.0, 1.0, -1.0, -2.0])
    # round(0.9 * 6) = 5 of 6 removed: one sample is left.
    assert np.isfinite(removal_curve(X, y, X, y, values, estimator, [0.9])).all()
    with pytest.raises(ValueError, match=r"fractions must be finite, lie in \[0, 1\)"):
        removal_curve(X, y, X, y, values, estimator, [0.5, fraction])


@pytest.mark.parametrize("n_members, n_nonmembers, n_shadow", [(5, 5, 3), (2, 10, 8)])
def test_membership_inference_checks_the_shadow_plan_before_any_valuation(
        monkeypatch, n_members, n_nonmembers, n_shadow):
    def no_valuation(*args, **kwargs):
        raise AssertionError("a valuation ran before n_shadow was checked")

    monkeypatch.setattr(metrics_module, "_query_values", no_valuation)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_members + n_nonmembers + 6, 3))
    y = (X[:, 0] > 0).astype(int)
    m, t = n_members, n_members + n_nonmembers
    with pytest.raises(ValueError, match=f"n_shadow={n_shadow} leaves a target"):
        membership_inference_auc(DPDataValuator(), X[:m], y[:m], X[m:t], y[m:t],
                                 X[t:t + 2], y[t:t + 2], X[t + 2:], y[t + 2:],
                                 n_shadow=n_shadow, random_state=0)


def test_mean_adjusted_variance_unfitted_valuator():
    with pytest.raises(NotFittedError):
        mean_adjusted_variance(valuator=DPDataValuator())


def test_scalar_arguments_of_the_wrong_type_are_named():
    with pytest.raises(ValueError, match=r"epsilon must be a real number > 0, got '1'"):
        detection_auc_limit("1", 5e-5)
    with pytest.raises(ValueError, match=r"delta must be a real number in \(0, 1\)"):
        detection_auc_limit(1.0, "5e-5")
    with pytest.raises(ValueError, match=r"fraction must be a real number in \[0, 1\]"):
        flip_labels([0, 1] * 5, "0.5")


def test_flip_labels_needs_finite_class_labels():
    with pytest.raises(ValueError, match="NaN"):
        flip_labels(np.array([0.0, 1.0, np.nan, 0.0, 1.0, 0.0]), 1.0, random_state=0)
    with pytest.raises(ValueError, match="'continuous'"):
        flip_labels(np.linspace(0, 1, 10) + 0.01, 0.5, random_state=0)
    with pytest.raises(ValueError, match="independent must be a bool"):
        flip_labels([0, 1] * 5, 0.5, independent="no")


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_train=-5), r"n_train must be an int >= 2 or None, got -5"),
    (dict(n_train=0), r"n_train must be an int >= 2"),
    (dict(n_train=2.5), r"n_train must be an int >= 2"),
    (dict(flip_fraction="0.3"), r"flip_fraction must be a real number in \[0, 1\]"),
    (dict(flip_fraction=np.nan), r"flip_fraction must be a real number in \[0, 1\]"),
    (dict(independent_flips="no"), "independent_flips must be a bool"),
    (dict(scale="no"), "scale must be a bool"),
    (dict(test_size=-0.1), r"test_size must be a real number in \[0, 1\), got -0.1"),
    (dict(validation_size=1.25), r"validation_size must be a real number in \(0, 1\)"),
    (dict(validation_size=0.0), r"validation_size must be a real number in \(0, 1\)"),
    (dict(validation_size=0.6, test_size=0.5), r"validation_size \+ test_size must"),
])
def test_load_noisy_classification_validates_arguments_first(kwargs, match,
                                                            monkeypatch):
    import skdpval.datasets as datasets_module

    def no_loading():
        raise AssertionError("the data set was loaded before the arguments "
                             "were checked")

    monkeypatch.setitem(datasets_module._LOADERS, "iris", no_loading)
    with pytest.raises(ValueError, match=match):
        load_noisy_classification("iris", random_state=0, **kwargs)


def test_load_noisy_classification_names_splits_too_small_for_the_classes():
    with pytest.raises(ValueError, match="validation_size=0.01 and test_size=0.2"):
        load_noisy_classification("iris", validation_size=0.01, random_state=0)
    # Two training samples of one class: flip_labels could not flip them.
    with pytest.raises(ValueError, match="n_train=2 keeps a single class"):
        load_noisy_classification("iris", n_train=2, random_state=3)


def test_noisy_label_auc_takes_object_arrays_of_bools():
    from skdpval.metrics import noisy_label_auc

    flags = np.array([True, False, True, False], dtype=object)
    assert noisy_label_auc([0.1, 0.5, 0.2, 0.9], flags) == 1.0


def _optimal_test_aucs(mu, n_flipped, n_clean, n_runs, rng):
    """Empirical AUCs of the test that meets the limit, simulated directly:
    flipped scores N(2 mu, 1), clean N(0, 1), AUC by counting ordered pairs."""
    aucs = np.empty(n_runs)
    for run in range(n_runs):
        flipped = rng.normal(2 * mu, 1.0, size=n_flipped)
        clean = rng.normal(0.0, 1.0, size=n_clean)
        aucs[run] = np.mean(flipped[:, None] > clean[None, :])
    return aucs


@pytest.mark.parametrize("epsilon, n_flipped, n_clean", [
    (1.0, 29, 61),      # iris at flip fraction 0.3
    (3.0, 98, 243),     # breast_cancer
    (3.0, 5, 200),      # few flips: a wide band
])
def test_detection_auc_band_holds_one_run_of_the_optimal_test(epsilon, n_flipped,
                                                             n_clean):
    from skdpval.privacy._accounting import gdp_mu
    rng = np.random.default_rng(0)
    aucs = _optimal_test_aucs(gdp_mu(epsilon, 5e-5), n_flipped, n_clean, 2000, rng)
    limit = detection_auc_limit(epsilon, 5e-5)
    # the limit is the mean of the runs, and single runs do exceed it
    assert np.mean(aucs) == pytest.approx(limit, abs=3 * aucs.std() / np.sqrt(2000))
    assert np.mean(aucs > limit) > 0.3
    low, high = detection_auc_band(epsilon, 5e-5, n_flipped, n_clean)
    assert low < limit < high
    inside = np.mean((aucs >= low) & (aucs <= high))
    assert 0.93 <= inside <= 0.97, inside
    assert np.mean(aucs > high) < 0.04
    # its width is the spread of the runs (a band from the A(1-A) term
    # alone, or from the wrong n, would be off by far more than 10%)
    assert (high - low) / (2 * 1.96 * aucs.std()) == pytest.approx(1.0, rel=0.1)


def test_detection_auc_band_narrows_with_more_labels_and_checks_arguments():
    small = detection_auc_band(3.0, 5e-5, 20, 50)
    large = detection_auc_band(3.0, 5e-5, 2000, 5000)
    assert small[0] < large[0] < large[1] < small[1]
    assert detection_auc_band(np.inf, 5e-5, 3, 4) == (1.0, 1.0)
    narrow = detection_auc_band(3.0, 5e-5, 20, 50, level=0.5)
    assert small[0] < narrow[0] < narrow[1] < small[1]
    for bad in (dict(n_flipped=0), dict(n_clean=2.5), dict(level=1.0)):
        kwargs = {"n_flipped": 3, "n_clean": 4, "level": 0.95, **bad}
        with pytest.raises(ValueError, match=next(iter(bad))):
            detection_auc_band(3.0, 5e-5, **kwargs)

