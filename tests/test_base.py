"""The valuators' one template fit: same signature, same parties, same split."""

import inspect
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPLabelQuality,
    LayeredShapleyValuator,
)
from skdpval.valuation._base import BaseValuator

GROUPED = [
    DPDataValuator(n_permutations=20, noise="none", random_state=0),
    DPLabelQuality(epsilon=np.inf, random_state=0),
    DPFederatedValuator(n_rounds=3, n_permutations_per_round=5, noise="none",
                        random_state=0),
]
ALL = [*GROUPED, LayeredShapleyValuator(alpha=0.5, beta=0.5, random_state=0)]


def _groups_data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(60, 3))
    y = (X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=60) > 0.25).astype(int)
    return X, y, np.arange(60) % 6


@pytest.mark.parametrize("valuator", ALL, ids=lambda v: type(v).__name__)
def test_every_valuator_fits_through_the_template(valuator):
    assert isinstance(valuator, BaseValuator)
    names = list(inspect.signature(type(valuator).fit).parameters)
    # X_val and y_val come third and fourth everywhere (DPFederatedValuator
    # used to take groups before them); groups, where there are any, next.
    assert names[:5] == ["self", "X", "y", "X_val", "y_val"]
    if "groups" in names:
        assert names[5] == "groups"


@pytest.mark.parametrize("valuator", GROUPED, ids=lambda v: type(v).__name__)
def test_a_groups_row_order_does_not_change_its_value(valuator):
    """prepare_parties orders a group's rows by content: a shuffled data set
    values every group the same, bit for bit (the federated copy used to
    keep the given order)."""
    X, y, groups = _groups_data()
    X_val, y_val = X[:20] + 0.01, y[:20]
    shuffle = np.random.default_rng(1).permutation(len(X))
    first = valuator.fit(X, y, X_val, y_val, groups=groups).values_
    again = valuator.fit(X[shuffle], y[shuffle], X_val, y_val,
                         groups=groups[shuffle]).values_
    assert_array_equal(first, again)


@pytest.mark.parametrize("valuator", GROUPED, ids=lambda v: type(v).__name__)
def test_the_same_random_state_holds_out_the_same_groups(valuator):
    """The split is the template's first public draw: every valuator holds
    out the same groups for one random_state."""
    X, y, groups = _groups_data()
    held_out = [np.isnan(v.fit(X, y, groups=groups).values_) for v in
                (DPDataValuator(n_permutations=20, noise="none", random_state=0),
                 valuator)]
    assert held_out[0].any() and not held_out[0].all()
    assert_array_equal(held_out[0], held_out[1])
    assert_array_equal(valuator.rank_[held_out[1]], 0)
    assert_array_equal(np.sort(valuator.rank_[~held_out[1]]),
                       np.arange(1, (~held_out[1]).sum() + 1))


def test_federated_values_follow_the_fit_intercept_of_the_model():
    """Shared party preparation: a model without intercept is scaled, not
    centred, in DPFederatedValuator as in DPDataValuator (it used to centre,
    adding an offset the model cannot fit)."""
    from sklearn.linear_model import LogisticRegression

    X, y, groups = _groups_data()
    X_val, y_val = X[:20], y[:20]
    fed = DPFederatedValuator(LogisticRegression(fit_intercept=False), n_rounds=2,
                              n_permutations_per_round=5, noise="none",
                              standardize=True, random_state=0)
    shifted = fed.fit(X + 5.0, y, X_val + 5.0, y_val, groups=groups).values_
    plain = fed.fit(X, y, X_val, y_val, groups=groups).values_
    # Scaling only: a shift of every row moves the uncentred features, so
    # the values change; centring would have made them equal.
    assert not np.allclose(shifted, plain)
    centred = DPFederatedValuator(n_rounds=2, n_permutations_per_round=5,
                                  noise="none", random_state=0)
    assert_allclose(centred.fit(X + 5.0, y, X_val + 5.0, y_val, groups=groups).values_,
                    centred.fit(X, y, X_val, y_val, groups=groups).values_,
                    atol=1e-12)


@pytest.mark.parametrize("valuator", ALL, ids=lambda v: type(v).__name__)
def test_warnings_about_the_data_point_at_the_users_line(valuator):
    """Validation rows held out of X warn (they are not protected); the
    warning names this file, whichever steps the valuator adds."""
    X, y, groups = _groups_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        valuator.fit(X, y)
    held_out = [w for w in caught if "held out" in str(w.message)
                or "validation" in str(w.message).lower()]
    assert held_out, [str(w.message) for w in caught]
    assert {w.filename for w in held_out} == {__file__}


def test_federated_groups_given_third_is_an_error_naming_the_new_order():
    X, y, groups = _groups_data()
    with pytest.raises(ValueError, match="pass groups=client_of_each_sample"):
        DPFederatedValuator(n_rounds=2, noise="none").fit(X, y, groups)


@pytest.mark.parametrize("n", [1, 7, 1000, 70_000])
def test_ranks_are_scipys_ordinal_ranks_written_in_blocks(n):
    """rank_ as scipy's rankdata(-values) up to ties (signed zeros tie),
    which take their ranks in the seed's order, over blocks of parties that
    split them unevenly; NaN ranks last."""
    from scipy.stats import rankdata

    from skdpval.valuation._base import ordinal_rank

    rng = np.random.default_rng(n)
    values = rng.integers(-3, 4, n) * 0.5 * rng.choice([-1.0, 1.0], n)
    values[rng.random(n) < 0.1] = -0.0
    train = np.sort(rng.choice(n + 9, n, replace=False)).astype(np.int32)
    rank = ordinal_rank(values, train, n + 9, 0)
    assert_array_equal(np.delete(rank, train), 0)
    assert_array_equal(np.sort(rank[train]), np.arange(1, n + 1))
    assert np.all(rankdata(-values, method="min") <= rank[train])
    assert np.all(rank[train] <= rankdata(-values, method="max"))
    assert_array_equal(ordinal_rank(values, train, n + 9, 0), rank)
    if n >= 1000:  # ties broken by the seed, not by the rows' order
        assert not np.array_equal(ordinal_rank(values, train, n + 9, 1), rank)
        expected = np.zeros(n + 9, dtype=np.int64)
        expected[train] = rankdata(-values, method="ordinal")
        assert not np.array_equal(rank, expected)
    values[0] = np.nan
    rank = ordinal_rank(values, train, n + 9, 0)
    assert rank[train[0]] == n
    assert_array_equal(np.sort(rank[train]), np.arange(1, n + 1))
