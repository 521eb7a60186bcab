"""privacy_spent and the privacy_report_ of cleaning steps.

The expected figures are computed by hand here with the analytic formulas
(Balle and Wang's Gaussian curve, plain scipy) or by Google's PLD accountant,
never by skdpval's own accounting.
"""

import types

import imblearn.pipeline as imblearn_pipeline
import numpy as np
import pytest
import sklearn
from dp_accounting.pld import common, privacy_loss_distribution
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, is_classifier
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import (
    HuberRegressor,
    LogisticRegression,
    Ridge,
    SGDClassifier,
    SGDRegressor,
)
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    LeaveOneOut,
    RepeatedKFold,
    ShuffleSplit,
    StratifiedKFold,
    TimeSeriesSplit,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, StandardScaler
from sklearn.svm import SVR

import skdpval.privacy._accounting as accounting
from helpers import diffprivlib_models
from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPFilteredClassifier,
    DPFilteredRegressor,
    DPLabelQuality,
    DPValueFilter,
    LayeredShapleyValuator,
    privacy_spent,
)
from skdpval.privacy._accounting import composed_epsilon, pure_dp_mu
from skdpval.privacy._mechanism import PrivacyMechanism
from skdpval.privacy._secure_noise import LABEL_SCORE
from skdpval.privacy._spent import _training_folds_per_party, _valuator_spend

# diffprivlib's solver call uses an option scipy deprecates: not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:scipy.optimize:DeprecationWarning")
DELTA = 5e-5
FAST = dict(n_permutations=4, random_state=0)


# Hand computation: the analytic Gaussian curve in plain scipy.
def analytic_delta(epsilon, mu):
    return norm.cdf(-epsilon / mu + mu / 2) - np.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


def analytic_mu(epsilon, delta):
    return brentq(lambda mu: analytic_delta(epsilon, mu) - delta, 1e-3, 50,
                  xtol=1e-15, rtol=1e-15)


def analytic_epsilon(mu, delta):
    return brentq(lambda e: analytic_delta(e, mu) - delta, 0.0, 200.0,
                  xtol=1e-13, rtol=1e-13)


def pld_epsilon(mu, pure, delta):
    """Google's PLD accountant: mu-GDP (a Gaussian of std 1/mu) and eps-DP parts."""
    dist = privacy_loss_distribution.from_gaussian_mechanism(
        1.0 / mu, value_discretization_interval=1e-4)
    for epsilon, count in pure:
        part = privacy_loss_distribution.from_privacy_parameters(
            common.DifferentialPrivacyParameters(epsilon, 0.0),
            value_discretization_interval=1e-4)
        dist = dist.compose(part.self_compose(count) if count > 1 else part)
    return dist.get_epsilon_for_delta(delta)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=90, n_features=5, random_state=0)
    X_val, y_val = make_classification(n_samples=31, n_features=5, random_state=1)
    return X, y, dict(X_val=X_val, y_val=y_val)


@pytest.fixture(scope="module")
def dp_logistic():
    return diffprivlib_models().LogisticRegression


# --- the accounting --------------------------------------------------------

@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 3.0, 10.0, 40.0])
def test_pure_dp_mu_is_the_tightest_gdp_of_pure_dp(epsilon):
    """G_mu lies under the eps-DP tradeoff curve, and touches it at its fixed point."""
    mu = pure_dp_mu(epsilon)
    alpha = np.linspace(0, 1, 20001)
    f_eps = np.maximum.reduce([np.zeros_like(alpha), 1 - np.exp(epsilon) * alpha,
                               np.exp(-epsilon) * (1 - alpha)])
    g_mu = norm.cdf(norm.ppf(1 - alpha) - mu)
    assert np.all(g_mu <= f_eps + 1e-12)
    fixed = 1 / (1 + np.exp(epsilon))
    assert norm.cdf(-mu / 2) == pytest.approx(fixed, rel=1e-9)
    # Any smaller mu rises above f_eps at the fixed point.
    assert norm.cdf(norm.ppf(1 - fixed) - 0.999 * mu) > fixed


@pytest.mark.parametrize("mu, pure, delta", [
    (0.5, [(1.0, 1)], 1e-5),
    (1.0, [(2.0, 1), (0.5, 3)], 5e-5),
    (2.0, [(4.0, 1)], 5e-5),
    (0.3, [(0.01, 200)], 1e-6),
    (0.8, [(0.5, 4), (1.0, 5)], 1e-3),
])
def test_composition_matches_the_pld_accountant(mu, pure, delta):
    ours = composed_epsilon(mu, pure, delta)
    assert ours == pytest.approx(pld_epsilon(mu, pure, delta), rel=1e-3)
    basic = analytic_epsilon(mu, delta) + sum(e * c for e, c in pure)
    assert analytic_epsilon(mu, delta) < ours <= basic


def test_composition_edge_cases():
    assert composed_epsilon(0.7, [], 1e-5) == pytest.approx(analytic_epsilon(0.7, 1e-5),
                                                            rel=1e-8)
    # Pure parts alone: at delta 0 the sum; above it, less (k-fold RR).
    assert composed_epsilon(0.0, [(1.0, 5)], 0.0) == 5.0
    assert composed_epsilon(0.0, [(1.0, 5)], 1e-5) == pytest.approx(4.999952, abs=1e-6)
    assert composed_epsilon(0.5, [(1.0, 1)], 0.0) == np.inf
    assert composed_epsilon(np.inf, [], 1e-5) == np.inf
    assert composed_epsilon(0.0, [], 1e-5) == 0.0


def test_too_many_pure_outcomes_fall_back_to_a_valid_looser_bound(monkeypatch):
    mu, pure, delta = 0.6, [(0.3, 3), (0.7, 2), (1.1, 2)], 1e-5
    exact = composed_epsilon(mu, pure, delta)
    monkeypatch.setattr(accounting, "_MAX_PURE_OUTCOMES", 10)
    fallback = composed_epsilon(mu, pure, delta)
    basic = analytic_epsilon(mu, delta) + sum(e * c for e, c in pure)
    via_gdp = analytic_epsilon(np.sqrt(mu**2 + sum(c * pure_dp_mu(e) ** 2
                                                   for e, c in pure)), delta)
    assert fallback == pytest.approx(min(basic, via_gdp), rel=1e-8)
    assert fallback > exact


# --- searches: the acceptance grid -------------------------------------------

@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_spend_equals_the_hand_computation(data, n_jobs):
    """eps {1, 3} x q {0.5, 0.9}, cv=3, refit: 4 x 2 training folds + 1 fits."""
    X, y, val = data
    model = DPFilteredClassifier(DPDataValuator(**FAST), LogisticRegression())
    search = GridSearchCV(model, {"valuator__epsilon": [1.0, 3.0],
                                  "valuator__q": [0.5, 0.9]},
                          cv=3, refit=True, n_jobs=n_jobs)
    search.fit(X, y, **val)
    best = search.best_params_["valuator__epsilon"]
    mu_sq = sum(2 * analytic_mu(params["valuator__epsilon"], DELTA) ** 2
                for params in search.cv_results_["params"])
    mu = np.sqrt(mu_sq + analytic_mu(best, DELTA) ** 2)

    spent = privacy_spent(search)
    assert spent["max_fits_per_party"] == 9
    assert spent["mu"] == pytest.approx(mu, rel=1e-6)
    assert spent["gaussian_mu"] == spent["mu"] and spent["pure_epsilons"] == []
    # Net of the samplers' share of delta (nine fits' draws): 1e-5 relative.
    assert spent["epsilon"] == pytest.approx(analytic_epsilon(mu, DELTA), rel=1e-4)
    assert spent["epsilon"] >= analytic_epsilon(mu, DELTA)
    # Replace-one (eps ~18 here): inf where the samplers' share of delta at
    # that epsilon exceeds half of delta, as here; never below the analytic
    # (up to the last bits: with n_jobs=2 the fits are recorded in the order
    # they end, so the nine mu^2 are summed in another order than here).
    assert spent["epsilon_replace_one"] >= analytic_epsilon(2 * mu, DELTA) * (1 - 1e-12)
    # The requested delta, the rounded Gaussian samplers' share over the 9
    # fits ((1 + e^eps) times their total variation, at the total epsilon)
    # included: at most half of it.
    assert spent["sampler_delta"] == pytest.approx(
        (1 + np.exp(spent["epsilon"])) * spent["sampler_tv"], rel=1e-9)
    assert 0 < spent["sampler_delta"] <= 0.5 * DELTA
    assert spent["delta"] == DELTA
    assert spent["private"] is False
    leaks = " ".join(spent["leaks"])
    assert ("LogisticRegression is fitted on the private data without a "
            "guarantee") in leaks
    assert "stratified on the private labels" in leaks  # cv=3 with a classifier
    assert "model selection" in leaks


def test_search_with_a_private_final_model_sums_both_budgets(data, dp_logistic):
    X, y, val = data
    model = DPFilteredClassifier(DPDataValuator(**FAST),
                                 dp_logistic(data_norm=4.0, epsilon=1.0))
    search = GridSearchCV(model, {"valuator__epsilon": [1.0, 3.0],
                                  "estimator__epsilon": [0.5, 2.0]},
                          cv=KFold(3, shuffle=True, random_state=0))
    search.fit(X, y, **val)
    best = search.best_params_
    mu = np.sqrt(2 * 2 * (analytic_mu(1.0, DELTA) ** 2 + analytic_mu(3.0, DELTA) ** 2)
                 + analytic_mu(best["valuator__epsilon"], DELTA) ** 2)
    pure = {0.5: 2 * 2, 2.0: 2 * 2}
    pure[best["estimator__epsilon"]] += 1

    spent = privacy_spent(search)
    assert spent["max_fits_per_party"] == 9
    assert spent["gaussian_mu"] == pytest.approx(mu, rel=1e-6)
    assert sorted(spent["pure_epsilons"]) == sorted(pure.items())
    # The exact composition (without the samplers' share, which at eps ~17
    # exceeds half of delta: the statement at DELTA is then inf).
    assert composed_epsilon(spent["gaussian_mu"], spent["pure_epsilons"],
                            DELTA) == pytest.approx(
        pld_epsilon(mu, sorted(pure.items()), DELTA), rel=1e-3)
    assert spent["epsilon"] >= pld_epsilon(mu, sorted(pure.items()), DELTA) * (1 - 1e-3)
    assert spent["mu"] == pytest.approx(np.sqrt(mu**2 + sum(
        c * pure_dp_mu(e) ** 2 for e, c in pure.items())), rel=1e-6)
    # Unstratified folds and private parts: only the model selection leaks.
    assert len(spent["leaks"]) == 1 and spent["leaks"][0].startswith("model selection")


@pytest.mark.parametrize("cv, expected", [
    (KFold(4), 3), (StratifiedKFold(3), 2), (GroupKFold(3), 2), (LeaveOneOut(), None),
    (RepeatedKFold(n_splits=3, n_repeats=2, random_state=0), 4),
    (ShuffleSplit(n_splits=5, test_size=0.3, random_state=0), 5),
    (TimeSeriesSplit(3), 3),
])
def test_training_folds_bound_the_real_ones(cv, expected):
    """The count from the splitter's type is the true maximum (or above it)."""
    X = np.zeros((12, 1))
    y = np.arange(12) % 2
    groups = np.arange(12) // 2
    splits = list(cv.split(X, y, groups) if isinstance(cv, GroupKFold)
                  else cv.split(X, y))
    in_training = np.zeros(len(X), dtype=int)
    for train, _ in splits:
        in_training[train] += 1
    search = types.SimpleNamespace(n_splits_=len(splits), cv=cv)
    count = _training_folds_per_party(search)
    assert count >= in_training.max()
    assert count == (in_training.max() if expected is None else expected)


@pytest.mark.filterwarnings("ignore:The groups parameter is ignored:UserWarning")
@pytest.mark.parametrize("cv", [
    KFold(3, shuffle=True, random_state=0), KFold(3), GroupKFold(3),
    ShuffleSplit(n_splits=3, test_size=0.3, random_state=0)], ids=repr)
def test_group_units_count_every_fold_holding_any_of_their_rows(data, cv):
    """Issue 22: groups routed to the valuator, a splitter over rows.

    A group takes part in a fit when any of its rows is in the training set.
    KFold(3) with groups of 4 puts some group in all 3 training sets: 2
    candidates x 3 + refit = 7 fits (mu 0.788, eps 3.02), not 5. (When
    every fold boundary falls between groups the count overstates: safe.)
    """
    X, y, val = data
    groups = np.arange(len(X)) // 4
    with sklearn.config_context(enable_metadata_routing=True):
        valuator = DPDataValuator(epsilon=1.0, **FAST).set_fit_request(
            groups=True, X_val=True, y_val=True)
        search = GridSearchCV(valuator, {"q": [0.5, 0.9]}, cv=cv,
                              scoring=lambda estimator, X, y: 0.0)
        search.fit(X, y, groups=groups, **val)
    in_training = np.zeros(groups.max() + 1, dtype=int)
    for train, _ in cv.split(X, y, groups):
        in_training[np.unique(groups[train])] += 1
    spent = privacy_spent(search)
    assert spent["max_fits_per_party"] >= 2 * in_training.max() + 1
    expected = 2 if isinstance(cv, GroupKFold) else 3
    assert in_training.max() == expected  # the bound is reached
    assert spent["max_fits_per_party"] == 2 * expected + 1
    mu = np.sqrt(2 * expected + 1) * analytic_mu(1.0, DELTA)
    assert spent["mu"] == pytest.approx(mu, rel=1e-6)
    if expected == 3:
        assert (round(spent["mu"], 3), round(spent["epsilon"], 2)) == (0.788, 3.02)


def test_a_refit_that_disagrees_with_its_parameters_is_an_error(data):
    X, y, val = data
    search = GridSearchCV(DPFilteredClassifier(DPDataValuator(**FAST)),
                          {"valuator__epsilon": [1.0, 3.0]}, cv=KFold(2))
    search.fit(X, y, **val)
    search.best_estimator_.valuator_.privacy_report_["parts"][0]["mu"] *= 0.5
    with pytest.raises(RuntimeError, match="plan"):
        privacy_spent(search)


# --- single fits, pipelines, lists ----------------------------------------------

def test_filter_with_a_private_final_model(data, dp_logistic):
    X, y, val = data
    model = DPFilteredClassifier(DPDataValuator(epsilon=1.0, **FAST),
                                 dp_logistic(epsilon=2.0, data_norm=4.0))
    model.fit(X, y, **val)
    report = model.privacy_report_
    assert report["valuation_private"] and report["final_model_private"]
    assert "epsilon=2" in report["final_model"]
    mu = analytic_mu(1.0, DELTA)
    assert report["epsilon"] == pytest.approx(pld_epsilon(mu, [(2.0, 1)], DELTA),
                                              rel=1e-3)
    assert report["epsilon"] < 1.0 + 2.0  # tighter than basic composition
    assert report["private"] is True and report["leaks"] == []
    assert report["valuation"]["epsilon"] == pytest.approx(1.0)
    assert privacy_spent(model)["epsilon"] == report["epsilon"]


class EpsilonClassifier(ClassifierMixin, BaseEstimator):
    """A stand-in for a DP classifier declaring its guarantee: classes_ from y."""

    def __init__(self, epsilon=1.0):
        self.epsilon = epsilon

    def __dp_guarantee__(self):
        return {"epsilon": self.epsilon}

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


class GaussianClassifier(EpsilonClassifier):
    """Declares a mu-GDP fit (replace-one) instead."""

    def __dp_guarantee__(self):
        return {"mu": self.epsilon}


class UndeclaredClassifier(EpsilonClassifier):
    """Has an epsilon parameter and no declaration: not private."""

    __dp_guarantee__ = None


@pytest.mark.parametrize("final", [
    SGDClassifier(), SGDRegressor(), SVR(), HuberRegressor(),
    UndeclaredClassifier(2.0)],
    ids=lambda est: type(est).__name__)
def test_an_epsilon_parameter_alone_is_not_a_guarantee(data, final):
    """SGD's, SVR's and Huber's epsilon are loss widths: the fit leaks (issue 22)."""
    X, y, val = data
    if is_classifier(final):
        model = DPFilteredClassifier(DPDataValuator(epsilon=1.0, **FAST), final)
    else:
        y, val = y.astype(float), dict(val, y_val=val["y_val"].astype(float))
        model = DPFilteredRegressor(DPDataValuator(Ridge(), epsilon=1.0, **FAST), final)
    spent = privacy_spent(model.fit(X, y, **val))
    name = type(final).__name__
    assert spent["private"] is False and spent["pure_epsilons"] == []
    assert [leak for leak in spent["leaks"] if leak.startswith(name)] == [
        f"{name} is fitted on the private data without a guarantee privacy_spent "
        "knows (neither a diffprivlib model nor one declaring __dp_guarantee__), "
        "so what it learns is not private"]
    # Only the valuation is counted: one Gaussian fit at epsilon 1.
    assert spent["mu"] == pytest.approx(analytic_mu(1.0, DELTA), rel=1e-6)
    assert model.privacy_report_["final_model_private"] is False


def test_a_declared_gdp_final_model_composes_under_both_adjacencies(data):
    """mu declared under replace-one: not doubled in epsilon_replace_one."""
    X, y, val = data
    model = DPFilteredClassifier(DPDataValuator(epsilon=1.0, **FAST),
                                 GaussianClassifier(0.5))
    spent = privacy_spent(model.fit(X, y, **val))
    valuation_mu = analytic_mu(1.0, DELTA)
    assert spent["private"] is True
    assert spent["mu"] == pytest.approx(np.hypot(valuation_mu, 0.5), rel=1e-6)
    assert spent["epsilon_replace_one"] == pytest.approx(
        analytic_epsilon(np.hypot(2 * valuation_mu, 0.5), DELTA), rel=1e-6)


@pytest.mark.parametrize("declared", [{"epsilon": 1.0, "mu": 1.0}, {"eps": 1.0}, 1.0])
def test_a_malformed_guarantee_is_refused(data, declared):
    X, y, val = data
    final = EpsilonClassifier()
    final.__dp_guarantee__ = lambda: declared
    with pytest.raises(TypeError, match="__dp_guarantee__"):
        privacy_spent(DPFilteredClassifier(DPDataValuator(**FAST), final).fit(
            X, y, **val))


def test_a_private_final_classifier_states_its_class_set_assumption(data):
    """Its classes_ come from the kept private labels: the report says so."""
    X, y, val = data
    model = DPFilteredClassifier(DPDataValuator(**FAST), EpsilonClassifier(2.0))
    report = model.fit(X, y, **val).privacy_report_
    assert report["final_model_private"] and report["private"]
    assert "classes_" in report["final_model"] and "assumed public" in report["final_model"]


def test_filter_with_a_non_private_final_model_says_so(data):
    X, y, val = data
    model = DPFilteredClassifier(DPDataValuator(**FAST), LogisticRegression())
    report = model.fit(X, y, **val).privacy_report_
    assert report["valuation_private"] and not report["final_model_private"]
    assert ("LogisticRegression is fitted on the private data without a "
            "guarantee") in report["final_model"]
    assert "not private" in report["final_model"]
    assert report["private"] is False
    # The valuation alone is still counted.
    assert report["mu"] == pytest.approx(analytic_mu(1.0, DELTA), rel=1e-6)


def test_diffprivlib_reading_its_bounds_from_the_data_leaks(data, dp_logistic):
    X, y, val = data
    model = DPFilteredClassifier(DPDataValuator(**FAST), dp_logistic(epsilon=1.0))
    with pytest.warns(Warning):  # diffprivlib's PrivacyLeakWarning
        model.fit(X, y, **val)
    report = model.privacy_report_
    assert not report["final_model_private"]
    assert "data_norm=None" in report["final_model"]


def test_regressor_and_diffprivlib_linear_regression():
    X, y = make_regression(n_samples=60, n_features=3, noise=1.0, random_state=0)
    X_val, y_val = make_regression(n_samples=20, n_features=3, random_state=1)
    linear = diffprivlib_models().LinearRegression
    model = DPFilteredRegressor(DPDataValuator(Ridge(), **FAST),
                                linear(epsilon=1.0, bounds_X=(-3, 3),
                                       bounds_y=(-300, 300)))
    report = model.fit(X, y, X_val=X_val, y_val=y_val).privacy_report_
    assert report["final_model_private"] and report["private"]
    assert report["pure_epsilons"] == [(1.0, 1)]
    ridge = DPFilteredRegressor(DPDataValuator(Ridge(), **FAST), Ridge())
    assert not ridge.fit(X, y, X_val=X_val, y_val=y_val).privacy_report_[
        "final_model_private"]


def test_a_scaler_fitted_on_private_rows_leaks_one_fitted_on_public_rows_not(data):
    X, y, val = data
    step = DPFilteredClassifier(DPDataValuator(**FAST), LogisticRegression())
    leaky = make_pipeline(StandardScaler(), step).fit(
        X, y, dpfilteredclassifier__X_val=val["X_val"],
        dpfilteredclassifier__y_val=val["y_val"])
    assert any(leak.startswith("StandardScaler") for leak in privacy_spent(leaky)["leaks"])

    public = FrozenEstimator(StandardScaler().fit(val["X_val"]))
    clean = make_pipeline(public, FunctionTransformer(np.tanh), step).fit(
        X, y, dpfilteredclassifier__X_val=val["X_val"],
        dpfilteredclassifier__y_val=val["y_val"])
    leaks = privacy_spent(clean)["leaks"]
    assert len(leaks) == 1 and leaks[0].startswith("LogisticRegression")


def test_sampler_in_an_imblearn_pipeline(data, dp_logistic):
    X, y, validation = data
    pipe = imblearn_pipeline.Pipeline([
        ("filter", DPValueFilter(DPDataValuator(**FAST), drop_fraction=0.2)),
        ("model", dp_logistic(epsilon=1.0, data_norm=4.0)),
    ])
    # imbalanced-learn routes X_val to a sampler only with metadata routing
    # (without it, the filter refuses to hold out private rows).
    with sklearn.config_context(enable_metadata_routing=True):
        pipe.fit(X, y, **validation)
    spent = privacy_spent(pipe)
    assert spent["pure_epsilons"] == [(1.0, 1)]
    assert spent["gaussian_mu"] == pytest.approx(analytic_mu(1.0, DELTA), rel=1e-6)
    assert not any("held out" in leak for leak in spent["leaks"])
    report = pipe.named_steps["filter"].privacy_report_
    assert "private data themselves" in report["output"]
    # Alone, the sampler's output is the private rows.
    assert any("kept rows, which are the private data" in leak
               for leak in report["leaks"])


def test_a_list_of_fits_composes(data):
    X, y, val = data
    fits = [DPDataValuator(epsilon=eps, **FAST).fit(X, y, **val) for eps in (1.0, 2.0)]
    spent = privacy_spent(fits)
    mu = np.hypot(analytic_mu(1.0, DELTA), analytic_mu(2.0, DELTA))
    assert spent["max_fits_per_party"] == 2
    assert spent["mu"] == pytest.approx(mu, rel=1e-6)
    assert spent["private"] is True
    assert privacy_spent(fits, delta=1e-3)["epsilon"] == pytest.approx(
        analytic_epsilon(mu, 1e-3), rel=1e-6)


@pytest.mark.parametrize("make", [
    lambda: DPDataValuator(epsilon=2.0, **FAST),
    lambda: DPLabelQuality(epsilon=2.0, random_state=0),
    lambda: DPDataValuator(epsilon=None, noise_multiplier=3.0, **FAST),
    lambda: DPFederatedValuator(n_rounds=3, n_permutations_per_round=2, epsilon=2.0,
                                random_state=0),
    lambda: DPFederatedValuator(n_rounds=3, n_permutations_per_round=2, epsilon=None,
                                noise_multiplier=3.0, random_state=0),
])
def test_planned_guarantee_equals_the_fitted_one(data, make):
    """What a search counts from parameters is what the fit reports."""
    X, y, val = data
    fitted = make().fit(X, y, **val)
    report = fitted.privacy_report_
    n_units = report["details"]["n_units"]
    structure = {type(fitted).__name__: (report["parts"], (n_units, n_units),
                                         getattr(fitted, "_layout_inputs_", None))}
    planned = _valuator_spend(make(), structure)
    # Part by part, as the fit reports them.
    assert [count for _, count in planned.gaussian] == [1] * len(report["parts"])
    assert [mu for mu, _ in planned.gaussian] == pytest.approx(
        [part["mu"] for part in report["parts"]], rel=1e-12)
    assert planned.gaussian_mu() == pytest.approx(report["mu"], rel=1e-12)
    assert planned.sampler_tv[0][0] == pytest.approx(report["sampler_tv"], rel=1e-12)
    # Without a fitted sibling: the fewest draws the fit may have, delta at
    # its cap: the largest mu.
    alone = _valuator_spend(make())
    assert alone.gaussian_mu() == pytest.approx(report["mu"], rel=1e-6)
    assert alone.gaussian_mu() >= report["mu"] * (1 - 1e-12)


def test_no_noise_and_held_out_rows_are_leaks(data):
    X, y, _ = data
    spent = privacy_spent(DPDataValuator(noise="none", **FAST).fit(X, y))
    assert spent["mu"] == np.inf and spent["epsilon"] == np.inf
    assert not spent["private"]
    assert any("noise='none'" in leak for leak in spent["leaks"])
    assert any("held out" in leak for leak in spent["leaks"])


def test_layered_shapley_counts_its_laplace_values(data):
    X, y, val = data
    scaler = MinMaxScaler().fit(val["X_val"])
    X01 = np.clip(scaler.transform(X[:12]), 0, 1)
    X_val01 = np.clip(scaler.transform(val["X_val"]), 0, 1)
    valuator = LayeredShapleyValuator(alpha=0.5, beta=0.5, epsilon=0.1, random_state=0)
    valuator.fit(X01, y[:12], X_val=X_val01, y_val=val["y_val"])
    spent = privacy_spent(valuator)
    assert spent["pure_epsilons"] == [(0.1, 11)]  # the 11 other values
    assert spent["epsilon"] == pytest.approx(composed_epsilon(0.0, [(0.1, 11)], 0.0))
    assert any("own value" in leak for leak in spent["leaks"])
    # Replacing a point doubles each Laplace value's sensitivity: 2 epsilon.
    assert spent["epsilon_replace_one"] == pytest.approx(
        valuator.privacy_report_["epsilon_replace_one"])
    assert spent["epsilon_replace_one"] == pytest.approx(
        composed_epsilon(0.0, [(0.2, 11)], 0.0))
    search = GridSearchCV(DPFilteredClassifier(valuator), {"drop_fraction": [0.1]},
                          cv=KFold(2)).fit(X01, y[:12], X_val=X_val01,
                                           y_val=val["y_val"])
    with pytest.raises(ValueError, match="inside a search"):
        privacy_spent(search)


class OneReleaseLabelScore(BaseEstimator):
    """A test valuator like DPLabelQuality: one Gaussian release per sample.

    Each sample's clipped margin under a model fitted on the validation set,
    plus N(0, (clip / mu)^2) noise: ``mu``-GDP per sample.
    """

    def __init__(self, *, epsilon=1.0, delta=5e-5, clip=1.0):
        self.epsilon, self.delta, self.clip = epsilon, delta, clip

    def fit(self, X, y, X_val, y_val):
        model = LogisticRegression().fit(X_val, y_val)
        margin = np.clip(np.where(y == 1, 1, -1) * model.decision_function(X),
                         -self.clip, self.clip)
        # Through the library's mechanism, which writes the report schema.
        mechanism = PrivacyMechanism(epsilon=self.epsilon, delta=self.delta)
        mechanism.protect("sample", len(X))
        score = mechanism.gaussian("score", LABEL_SCORE, n_releases=1,
                                   clip=self.clip, dimension=1)
        mechanism.calibrate()
        self.values_ = mechanism.release(score, margin)
        mechanism.write(self, n_unprotected=0)
        self.n_features_in_ = X.shape[1]
        return self


def test_filters_take_any_valuator_with_values_and_a_report(data):
    X, y, val = data
    model = DPFilteredClassifier(OneReleaseLabelScore(epsilon=2.0), LogisticRegression(),
                                 drop_fraction=0.2).fit(X, y, **val)
    report = model.privacy_report_
    assert report["valuation_private"]
    assert report["gaussian_mu"] == pytest.approx(analytic_mu(2.0, DELTA), rel=1e-6)
    assert not report["final_model_private"]
    sampler = DPValueFilter(OneReleaseLabelScore(epsilon=2.0))
    sampler.fit_resample(X, y, **val)
    assert sampler.privacy_report_["mu"] == pytest.approx(analytic_mu(2.0, DELTA),
                                                          rel=1e-6)
    # In a search, its guarantee is planned from its epsilon and delta.
    search = GridSearchCV(model, {"valuator__epsilon": [1.0, 2.0]}, cv=KFold(2))
    spent = privacy_spent(search.fit(X, y, **val))
    mu = np.sqrt(analytic_mu(1.0, DELTA) ** 2 + analytic_mu(2.0, DELTA) ** 2
                 + analytic_mu(search.best_params_["valuator__epsilon"], DELTA) ** 2)
    assert spent["mu"] == pytest.approx(mu, rel=1e-6)


@pytest.mark.parametrize("obj, kwargs, error, match", [
    ([], {}, ValueError, "empty list"),
    ("model", {}, TypeError, "fitted estimator, search or Pipeline"),
    (DPDataValuator(), {}, NotFittedError, "call fit first"),
    (None, {"delta": 1.0}, ValueError, r"delta must be a float in \[0, 1\)"),
    (None, {"delta": -1e-5}, ValueError, "delta"),
])
def test_bad_input(data, obj, kwargs, error, match):
    if obj is None:
        X, y, val = data
        obj = DPDataValuator(**FAST).fit(X, y, **val)
    with pytest.raises(error, match=match):
        privacy_spent(obj, **kwargs)


def test_a_noise_seed_fixed_in_two_fits_leaks(data):
    """The same seed draws the same uniforms: two fits at different budgets
    give the noiseless scores up to rounding, (s1 v2 - s2 v1) / (s1 - s2)."""
    X, y, val = data
    fit = lambda epsilon, seed: DPLabelQuality(epsilon=epsilon, noise_seed=seed).fit(
        X, y, **val)
    a, b = fit(1.0, 7), fit(2.0, 7)
    s1, s2 = (m.privacy_report_["noise_std"] for m in (a, b))
    clean = (s1 * b.values_ - s2 * a.values_) / (s1 - s2)
    # The clipped scores in [-1, 1], recovered: the noise of one uniform at
    # two scales is the same quantile, up to the grid (1 / 64) and the
    # rounding of m (1 step each).
    assert np.all(np.abs(clean) <= 1.1)
    exact = DPLabelQuality(epsilon=np.inf).fit(X, y, **val).values_
    assert np.median(np.abs(clean - exact)) < 0.05
    spent = privacy_spent([a, b])
    assert not spent["private"]
    assert any("noise_seed=7 is fixed in 2 fits" in leak for leak in spent["leaks"])
    # Any fixed seed is public (repr, get_params): not private either way.
    assert not privacy_spent([fit(1.0, 7), fit(2.0, 8)])["private"]
    assert privacy_spent([fit(1.0, None), fit(2.0, None)])["private"]
    # Every fit draws the seed's noise: both folds of KFold(2) and the refit,
    # although a party is in one training fold only (fits on disjoint halves
    # with the same noise give the noiseless difference).
    search = GridSearchCV(DPFilteredClassifier(DPDataValuator(**FAST)),
                          {"valuator__noise_seed": [1, 2]}, cv=KFold(2)).fit(X, y, **val)
    leaks = " ".join(privacy_spent(search)["leaks"])
    best = search.best_params_["valuator__noise_seed"]
    assert f"noise_seed={best} is fixed in 3 fits" in leaks
    assert f"noise_seed={3 - best} is fixed in 2 fits" in leaks


@pytest.mark.parametrize("refit", [True, False])
def test_a_search_without_x_val_holds_out_rows_in_every_fit(data, refit):
    X, y, val = data
    search = GridSearchCV(DPFilteredClassifier(DPDataValuator(**FAST)),
                          {"drop_fraction": [0.1]}, cv=KFold(2), refit=refit)
    leaks = " ".join(privacy_spent(search.fit(X, y))["leaks"])
    assert ("each of its fits held out its own" in leaks if refit
            else "without it each fit held out its own" in leaks)
    if refit:
        leaks = " ".join(privacy_spent(search.fit(X, y, **val))["leaks"])
        assert "held out" not in leaks
