"""Property tests over random small problems (hypothesis)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression, Ridge, SGDClassifier, SGDRegressor

from skdpval import DPDataValuator

from hypothesis import given, settings
from hypothesis import strategies as st

ESTIMATORS = {
    "logistic": (LogisticRegression, "classification"),
    "ridge": (Ridge, "regression"),
    "hinge": (lambda: SGDClassifier(loss="hinge"), "classification"),
    "huber": (lambda: SGDRegressor(loss="huber", epsilon=0.5), "regression"),
    "multinomial": (LogisticRegression, "multiclass"),
}

problems = st.fixed_dictionaries({
    "seed": st.integers(0, 2**31 - 1),
    "n": st.integers(2, 12),
    "n_val": st.integers(3, 8),
    "d": st.integers(1, 4),
    "model": st.sampled_from(sorted(ESTIMATORS)),
    "noise": st.sampled_from(["none", "iid", "correlated"]),
    "k": st.integers(1, 6),
    "batch": st.integers(1, 4),
    "learning_rate": st.sampled_from([0.01, 0.3, 2.0]),
    "scale": st.sampled_from([1e-3, 1.0, 1e3]),
})


def make(problem):
    rng = np.random.default_rng(problem["seed"])
    make_model, kind = ESTIMATORS[problem["model"]]
    n_classes = 3 if kind == "multiclass" else 2
    n, n_val, d = max(problem["n"], n_classes), problem["n_val"], problem["d"]
    X = problem["scale"] * rng.normal(size=(n + n_val, d))
    if kind == "regression":
        y = X @ rng.normal(size=d) + rng.normal(size=n + n_val)
    else:
        y = np.r_[np.arange(n) % n_classes, np.arange(n_val) % n_classes]
        rng.shuffle(y[:n])
        rng.shuffle(y[n:])
    # The full-space walk with a fixed clip and no scaling: public choices
    # fitted on the validation set (scale, direction, clip) would change with
    # duplicated validation rows; the walk's utility does not.
    valuator = DPDataValuator(make_model(), noise=problem["noise"], q=0.0,
                              subspace=None, clip_norm=1.0, standardize=False,
                              epsilon=2.0, n_permutations=problem["k"],
                              batch_permutations=problem["batch"],
                              learning_rate=problem["learning_rate"],
                              random_state=problem["seed"],
                              noise_seed=problem["seed"])
    return valuator, X[:n], y[:n], X[n:], y[n:]


# Large steps on large features may diverge and say so: that is allowed here.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@settings(max_examples=40, deadline=None)
@given(problems)
def test_values_are_finite_and_shapley_marginals_telescope(problem):
    valuator, X, y, X_val, y_val = make(problem)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert np.all(np.isfinite(valuator.values_))
    # With Shapley (p = 1) and q = 0, each walk's marginals sum to its change
    # in utility, whatever the noise.
    assert_allclose(valuator.values_.sum(),
                    valuator.final_utilities_.mean() - valuator.initial_utility_,
                    rtol=1e-9, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(problems)
def test_duplicating_validation_rows_leaves_neg_loss_values_unchanged(problem):
    valuator, X, y, X_val, y_val = make(problem)
    once = valuator.fit(X, y, X_val=X_val, y_val=y_val).values_.copy()
    twice = valuator.fit(X, y, X_val=np.vstack([X_val, X_val]),
                         y_val=np.concatenate([y_val, y_val])).values_
    assert_allclose(twice, once, rtol=1e-9, atol=1e-12)
