"""Group (data set) valuation: each group is one party."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skdpval import DPDataValuator

from skdpval.kernels import _linear, _losses
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import noisy_label_auc


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    return X[:40], y[:40], X[40:], y[40:]


def test_singleton_groups_equal_plain_valuation_bit_for_bit(data):
    """At group level (at record level a group's sum is released on a grid
    padded for a neighbour one record away, so its noise differs)."""
    X, y, X_val, y_val = data
    valuator = DPDataValuator(n_permutations=12, batch_permutations=4, random_state=0,
                              noise_seed=0, privacy_unit="group")
    plain = valuator.fit(X, y, X_val=X_val, y_val=y_val).values_.copy()
    grouped = valuator.fit(X, y, X_val=X_val, y_val=y_val,
                           groups=np.arange(len(X))).values_
    assert_array_equal(grouped, plain)


@pytest.mark.parametrize("privacy_unit", ["group", "record"])
def test_group_values_ignore_the_order_inside_groups(data, privacy_unit):
    X, y, X_val, y_val = data
    groups = np.repeat(["a", "b", "c", "d", "e"], [2, 5, 8, 10, 15])
    valuator = DPDataValuator(n_permutations=10, privacy_unit=privacy_unit,
                              random_state=0, noise_seed=0)
    first = valuator.fit(X, y, X_val=X_val, y_val=y_val, groups=groups).values_.copy()
    shuffled = np.random.default_rng(1).permutation(len(X))
    second = valuator.fit(X[shuffled], y[shuffled], X_val=X_val, y_val=y_val,
                          groups=groups[shuffled]).values_
    assert_array_equal(second, first)  # bit for bit: rows are put in one order
    assert list(valuator.groups_) == ["a", "b", "c", "d", "e"]
    assert valuator.values_.shape == (5,)
    assert_array_equal(valuator.sample_values_,
                       valuator.values_[np.searchsorted(valuator.groups_,
                                                        groups[shuffled])])
    assert valuator.privacy_report_["unit"] == privacy_unit
    assert valuator.privacy_unit_ == privacy_unit
    assert privacy_unit in valuator.privacy_report_["adjacency"]


def test_group_gradient_is_the_mean_loss_gradient_clipped_once():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(7, 3))
    T = rng.choice([-1.0, 1.0], size=(7, 1))
    theta = rng.normal(size=(1, 3))
    out = np.empty((1, 3))
    _linear.party_gradient(theta, X, T, np.ones(7), 2, 6, _losses.LOGISTIC, 0.0,
                            0.3, 0.0, 2, np.empty(1), np.empty(1), out)
    rows = slice(2, 6)
    margins = X[rows] @ theta[0]
    dloss = -T[rows, 0] / (1 + np.exp(T[rows, 0] * margins))
    expected = (dloss[:, None] * X[rows]).mean(axis=0)
    expected[:2] += 0.3 * theta[0, :2]
    assert_allclose(out[0], expected, rtol=1e-12)


def test_bad_groups_are_found_and_held_out_groups_get_nan():
    data = load_noisy_classification("breast_cancer", flip_fraction=0.0,
                                     random_state=0)
    n_groups = 34
    groups = np.arange(len(data.y_train)) % n_groups
    bad = np.arange(n_groups) < 10
    y = np.where(bad[groups], 1 - data.y_train, data.y_train)
    valuator = DPDataValuator(noise="none", q=0.0, n_permutations=40,
                              random_state=0)
    valuator.fit(data.X_train, y, X_val=data.X_val, y_val=data.y_val, groups=groups)
    assert noisy_label_auc(valuator.values_, bad) > 0.95
    held_out = DPDataValuator(n_permutations=4, validation_fraction=0.25,
                              random_state=0).fit(data.X_train, y, groups=groups)
    assert np.isnan(held_out.values_).sum() == 9  # ceil(0.25 * 34) groups
    assert np.all(held_out.rank_[np.isnan(held_out.values_)] == 0)
    assert np.isnan(held_out.sample_values_).sum() == np.isin(
        groups, np.flatnonzero(np.isnan(held_out.values_))).sum()


@pytest.mark.parametrize("groups, match", [
    (np.arange(39), "one label per sample"),
    (np.zeros(40), "single group"),
    (np.r_[np.nan, np.arange(39.0)], "NaN"),
    (np.array([None] + list(range(39)), dtype=object), "missing"),
])
def test_bad_groups(data, groups, match):
    X, y, X_val, y_val = data
    with pytest.raises(ValueError, match=match):
        DPDataValuator(n_permutations=2).fit(X, y, X_val=X_val, y_val=y_val,
                                             groups=groups)
