"""Metrics on hand-made inputs with known answers, and on real valuations."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression

from skdpval import DPDataValuator
from skdpval.datasets import flip_labels, load_noisy_classification
from skdpval.metrics import mean_adjusted_variance, noisy_label_auc, removal_curve


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
    import skdpval._walk as walk_module

    recorded = []
    original = walk_module._kernels.walk

    def recording(*args):
        marginals, end = original(*args)
        recorded.append(marginals.copy())
        return marginals, end

    monkeypatch.setattr(walk_module._kernels, "walk", recording)
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
