"""Tied values are ranked (and dropped) in a random public order, not the file's.

A label score lies on the noise's grid and, without noise, saturates at the
clip: many rows tie. Which of them rank last (and which a filter drops)
must not follow the rows' order, or a file sorted by date or by label
biases what is flagged (issue 43, item 5). The order of ties is drawn from
``random_state`` (a seed drawn after the others: the values do not change).
"""

import numpy as np
import pytest
from scipy.stats import chi2
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skdpval import DPDataValuator, DPFilteredClassifier, DPLabelQuality, DPValueFilter


@pytest.fixture(scope="module")
def tied():
    """Well separated classes, a third of the labels flipped: at epsilon inf
    the flipped rows' scores saturate at the clip's bottom, hundreds tied."""
    X, y = make_classification(400, n_features=4, n_informative=4, n_redundant=0,
                               class_sep=3.0, random_state=0)
    flip = np.random.default_rng(0).random(300) < 0.3
    y_train = np.where(flip, 1 - y[:300], y[:300])
    return X[:300], y_train, X[300:], y[300:]


def _scorer(seed):
    return DPLabelQuality(LogisticRegression(), epsilon=np.inf, public_model="validation",
                          random_state=seed)


def test_the_lowest_scores_tie_beyond_what_a_filter_drops(tied):
    X, y, X_val, y_val = tied
    values = _scorer(0).fit(X, y, X_val=X_val, y_val=y_val).values_
    n_lowest = int(np.sum(values == values.min()))
    assert n_lowest > 2 * int(0.1 * len(X))  # a tie straddles the cut


def test_two_files_in_another_row_order_drop_the_same_rows_in_distribution(tied):
    """The same rows in two orders (as read, and reversed), 40 random_states
    each: how often each tied row is dropped must not depend on the file.
    In the rows' order (a stable sort) the first tied rows of each file
    were dropped every time: the reversed file dropped the others."""
    X, y, X_val, y_val = tied
    reverse = np.arange(len(X))[::-1]
    dropped = np.zeros((2, len(X)))
    for seed in range(40):
        for file, rows in enumerate([np.arange(len(X)), reverse]):
            sampler = DPValueFilter(_scorer(seed), drop_fraction=0.1)
            sampler.fit(X[rows], y[rows], X_val=X_val, y_val=y_val)
            kept = np.zeros(len(X), bool)
            kept[rows[sampler.sample_indices_]] = True  # back to the first file's
            dropped[file] += ~kept
    values = _scorer(0).fit(X, y, X_val=X_val, y_val=y_val).values_
    tie = values == values.min()
    assert dropped[:, ~tie].sum() == 0  # only the lowest scores are dropped
    a, b = dropped[0, tie], dropped[1, tie]
    # Two-sample chi-square over the tied rows: each row is dropped about
    # 40 x 30 / (tied rows) times in both files; by position 40 or 0 times.
    both = a + b > 0
    statistic = np.sum((a[both] - b[both]) ** 2 / (a[both] + b[both]))
    assert chi2.sf(statistic, both.sum()) > 1e-4
    # Every tied row is dropped now and then, in either file.
    assert (a > 0).mean() > 0.95 and (b > 0).mean() > 0.95


def test_the_tie_break_is_reproducible_and_changes_no_value(tied):
    X, y, X_val, y_val = tied
    first, again, other = (_scorer(seed).fit(X, y, X_val=X_val, y_val=y_val)
                           for seed in (0, 0, 1))
    np.testing.assert_array_equal(first.rank_, again.rank_)
    np.testing.assert_array_equal(first.values_, other.values_)
    assert not np.array_equal(first.rank_, other.rank_)
    for fitted in (first, other):
        # An ordinal rank of the values: 1..n, larger values first.
        order = np.argsort(fitted.rank_)
        assert sorted(fitted.rank_) == list(range(1, len(X) + 1))
        assert np.all(np.diff(fitted.values_[order]) <= 0)
        assert np.array_equal(fitted.to_frame()["rank"].to_numpy(), fitted.rank_)
    same = DPValueFilter(_scorer(0)).fit(X, y, X_val=X_val, y_val=y_val)
    np.testing.assert_array_equal(
        same.sample_indices_,
        DPValueFilter(_scorer(0)).fit(X, y, X_val=X_val, y_val=y_val).sample_indices_)


def test_filters_drop_by_the_valuators_rank(tied):
    X, y, X_val, y_val = tied
    model = DPFilteredClassifier(_scorer(3), LogisticRegression(), drop_fraction=0.1)
    model.fit(X, y, X_val=X_val, y_val=y_val)
    rank = model.valuator_.rank_
    n_drop = int(0.1 * len(X))
    np.testing.assert_array_equal(~model.kept_mask_, rank > len(X) - n_drop)


def test_held_out_parties_keep_rank_zero_and_ties_are_broken_too(tied):
    X, y, _, _ = tied
    fitted = _scorer(0).fit(X, y)  # no X_val: a validation share is held out
    held_out = np.isnan(fitted.values_)
    assert held_out.any() and np.all(fitted.rank_[held_out] == 0)
    valued = ~held_out
    assert sorted(fitted.rank_[valued]) == list(range(1, valued.sum() + 1))
    scores, counts = np.unique(fitted.values_[valued], return_counts=True)
    tie = valued & (fitted.values_ == scores[np.argmax(counts)])
    # In the rows' order the tied ranks rose with the position.
    assert tie.sum() > 50
    assert not np.all(np.diff(fitted.rank_[tie]) > 0)
