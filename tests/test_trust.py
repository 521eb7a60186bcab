"""Trust: membership inference, numerical safety (the privacy audits: test_audit.py)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, Ridge

from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPLabelQuality,
    LayeredShapleyValuator,
)
from skdpval.metrics import membership_inference_auc


def attack(seed, **params):
    """The documented setting of membership_inference_auc: 25 members, 25
    non-members, isotropic Gaussian features (d = 50), k = 50, a public
    random_state known to the attacker, the full-space walk (the seed
    paper's mechanism, clip norm 1). The default walk in a public direction
    releases one number per step; without noise the attack reaches only
    about 0.49 on it (the end-to-end audits guard that walk)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(350, 50))
    y = (X @ rng.normal(size=50) + 3.5 * rng.normal(size=350) > 0).astype(int)
    members, nonmembers, val = np.arange(25), np.arange(25, 50), np.arange(50, 350)
    valuator = DPDataValuator(n_permutations=50, learning_rate=0.1, subspace=None,
                              clip_norm=1.0, random_state=seed, noise_seed=seed,
                              **params)
    auc = membership_inference_auc(
        valuator, X[members], y[members], X[nonmembers], y[nonmembers],
        X[:0], y[:0], X[val], y[val], n_shadow=16, random_state=seed)
    return auc, valuator.fit(X[:50], y[:50], X_val=X[val], y_val=y[val])


def test_membership_attack_beats_chance_without_noise():
    aucs = [attack(seed, noise="none", q=0.0)[0] for seed in range(2)]
    assert np.mean(aucs) >= 0.7, aucs


def test_membership_attack_stays_below_the_limit_at_epsilon_1():
    runs = [attack(seed, epsilon=1.0) for seed in range(3)]
    limit = runs[0][1].privacy_report_["max_noisy_label_auc"]  # Phi(sqrt(2) mu)
    assert limit == pytest.approx(0.663, abs=1e-3)
    assert np.mean([auc for auc, _ in runs]) <= limit + 0.05, runs


def test_divergence_is_an_error_or_a_warning_naming_the_remedy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * 1e3
    y = X @ [1.0, 2.0, 3.0]
    valuator = DPDataValuator(LinearRegression(), noise="none", q=0.0,
                              subspace=None, standardize=False,
                              learning_rate=1e150, clip_norm=1e150,
                              n_permutations=3, random_state=0)
    with pytest.raises(FloatingPointError, match="learning_rate"):
        valuator.fit(X, y)
    valuator.set_params(learning_rate=1e3, clip_norm=1.0)
    with pytest.warns(ConvergenceWarning, match="smaller learning_rate"):
        valuator.fit(X, y)
    assert np.all(np.isfinite(valuator.values_[~np.isnan(valuator.values_)]))


def test_a_walk_that_diverges_and_comes_back_still_warns():
    """A huge step on separable data: every final utility is back near 0,
    but the marginals show the utility fell far on the way."""
    rng = np.random.default_rng(0)
    X, X_val = rng.normal(size=(30, 4)), rng.normal(size=(20, 4))
    y, y_val = (X[:, 0] > 0).astype(int), (X_val[:, 0] > 0).astype(int)
    # A noise draw whose walks mostly come back (with others they end far down).
    valuator = DPDataValuator(learning_rate=1e3, n_permutations=5, epsilon=2.0,
                              random_state=0, noise_seed=3)
    with pytest.warns(ConvergenceWarning, match="fell to .* or lower"):
        valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert np.median(valuator.final_utilities_) > valuator.initial_utility_ - 100


def test_federated_divergence_is_an_error_or_a_warning_naming_the_remedy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    y = X @ [1.0, 2.0, 3.0, 4.0]
    groups = np.arange(60) % 5
    valuator = DPFederatedValuator(Ridge(), utility="neg_mse", learning_rate=1e300,
                                   n_rounds=3, n_permutations_per_round=4,
                                   epsilon=2.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings included
        with pytest.raises(FloatingPointError, match="smaller learning_rate"):
            valuator.fit(X[:60], y[:60], X_val=X[60:], y_val=y[60:], groups=groups)
    # 1000: at record level a client's release carries a twelfth of the
    # noise that a whole client's does, and 100 no longer diverges.
    valuator.set_params(learning_rate=1000.0)
    with pytest.warns(ConvergenceWarning, match="smaller learning_rate"):
        valuator.fit(X[:60], y[:60], X_val=X[60:], y_val=y[60:], groups=groups)


def test_a_sane_walk_does_not_warn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The quiet path: a public validation set and an explicit budget.
        DPDataValuator(n_permutations=5, q=0, epsilon=2.0, random_state=0).fit(
            X[:30], y[:30], X_val=X[30:], y_val=y[30:])


@pytest.mark.parametrize("params", [dict(clip_norm=1e-300), dict(learning_rate=1e-300)])
def test_values_that_are_all_zero_warn(params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(ConvergenceWarning, match="Every value is 0"):
        DPDataValuator(n_permutations=4, epsilon=2.0, random_state=0, **params).fit(
            X[:30], y[:30], X_val=X[30:], y_val=y[30:])


# --- the input domain (issue 22) ---------------------------------------------
def _domain_data():
    rng = np.random.default_rng(0)
    X, X_val = rng.uniform(size=(16, 3)), rng.uniform(size=(12, 3))
    return X, np.arange(16) % 2, X_val, np.arange(12) % 2


def _out_of_domain(case, X, y):
    """One private value moved outside the domain; the rest unchanged."""
    X, y = X.copy(), y.astype(object if case == "string y" else float)
    if case == "label outside the class set":
        y[3] = 7
    elif case == "NaN in X":
        X[3, 1] = np.nan
    elif case == "inf in X":
        X[3, 1] = np.inf
    elif case == "string y":
        y[3] = "seven"
    return X, y


DOMAIN_ESTIMATORS = {
    "DPDataValuator": lambda: DPDataValuator(n_permutations=2, random_state=0,
                                             noise_seed=0),
    "DPLabelQuality": lambda: DPLabelQuality(epsilon=1.0, noise_seed=0),
    "DPFederatedValuator": lambda: DPFederatedValuator(n_rounds=2, epsilon=1.0,
                                                       random_state=0, noise_seed=0),
    "LayeredShapleyValuator": lambda: LayeredShapleyValuator(epsilon=1.0,
                                                             random_state=0,
                                                             noise_seed=0),
}


@pytest.mark.parametrize("case", ["label outside the class set", "NaN in X",
                                  "inf in X"])
@pytest.mark.parametrize("name", DOMAIN_ESTIMATORS)
def test_out_of_domain_private_data_is_refused_and_says_the_check_is_outside(
        name, case):
    """The neighbour (row 3 in the domain) fits; the data set outside raises,
    before any release, with a message that states the policy."""
    X, y, X_val, y_val = _domain_data()
    make = DOMAIN_ESTIMATORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().fit(X, y, X_val=X_val, y_val=y_val)  # the neighbour
        with pytest.raises(ValueError) as error:
            make().fit(*_out_of_domain(case, X, y), X_val=X_val, y_val=y_val)
    message = str(error.value)
    assert "checked before any release" in message
    assert "not covered by the privacy guarantee" in message


def test_a_non_numeric_regression_target_is_outside_the_domain():
    X, y, X_val, y_val = _domain_data()
    X_bad, y_bad = _out_of_domain("string y", X, y)
    valuator = DPDataValuator(Ridge(), n_permutations=2, random_state=0, noise_seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        valuator.fit(X, y.astype(float), X_val=X_val, y_val=y_val.astype(float))
        with pytest.raises(ValueError, match="checked before any release") as error:
            valuator.fit(X_bad, y_bad, X_val=X_val, y_val=y_val.astype(float))
    assert "seven" not in str(error.value)  # the private value is not quoted


# --- subnormal private inputs (issue 22) --------------------------------------
TINY = np.finfo(float).tiny


def _subnormal_data(zeros):
    """Rows 0-5 of X, and targets 0-3, subnormal (or exactly zero)."""
    rng = np.random.default_rng(1)
    X, X_val = rng.normal(size=(24, 3)), rng.normal(size=(16, 3))
    y = rng.normal(size=24)
    small = (rng.uniform(1e-3, 0.9, size=(6, 3)) * TINY
             * np.sign(rng.normal(size=(6, 3))))
    X[:6] = 0.0 if zeros else small
    y[:4] = 0.0 if zeros else small[:4, 0]
    X_val[0, 0] = 0.0 if zeros else TINY / 3  # public data flushed alike
    return X, y, X_val, rng.normal(size=16)


@pytest.mark.parametrize("standardize", [False, True])
def test_the_kernels_get_no_subnormal_input(standardize):
    from skdpval.families._parties import prepare_parties

    X, y, X_val, y_val = _subnormal_data(zeros=False)
    assert np.any((X != 0) & (np.abs(X) < TINY))
    parties = prepare_parties(
        DPDataValuator(Ridge()), X, y, X_val, y_val, np.arange(24) // 3,
        is_classifier=False, classes=None, validation_fraction=0.2, split_seed=0,
        standardize=standardize)
    for array in (parties.X, parties.y, parties.X_val, parties.y_val):
        assert not np.any((array != 0) & (np.abs(array) < TINY))
    assert np.any((X != 0) & (np.abs(X) < TINY))  # the user's array untouched


SUBNORMAL_ESTIMATORS = {
    "walk, regression, groups, full space": (
        lambda: DPDataValuator(Ridge(), n_permutations=3, standardize=False,
                               subspace=None, learning_rate=0.05, random_state=0,
                               noise_seed=0), True, True),
    "walk, classifier, public line": (
        lambda: DPDataValuator(n_permutations=3, standardize=False, random_state=0,
                               noise_seed=0), False, False),
    "label quality, regression": (
        lambda: DPLabelQuality(Ridge(), epsilon=1.0, standardize=False,
                               noise_seed=0), True, False),
    "federated, regression": (
        lambda: DPFederatedValuator(Ridge(), n_rounds=2, epsilon=1.0, utility="r2",
                                    standardize=False, random_state=0,
                                    noise_seed=0), True, True),
}


@pytest.mark.parametrize("name", SUBNORMAL_ESTIMATORS)
def test_a_fit_on_subnormal_rows_equals_the_fit_on_zeros(name):
    make, regression, grouped = SUBNORMAL_ESTIMATORS[name]
    fits = []
    for zeros in (False, True):
        X, y, X_val, y_val = _subnormal_data(zeros)
        if not regression:
            y, y_val = np.arange(24) % 2, np.arange(16) % 2
        groups = np.arange(24) // 3 if grouped else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(make().fit(X, y, X_val=X_val, y_val=y_val, groups=groups))
    np.testing.assert_array_equal(fits[0].values_, fits[1].values_)
