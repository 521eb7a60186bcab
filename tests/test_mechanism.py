"""The one privacy mechanism: schema, calibration, delta net of the sampler,
noise_multiplier, seeded fits, epsilon=np.inf, delta="auto" (issues on trust
and on honest outputs)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.linear_model import PoissonRegressor
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.preprocessing import MinMaxScaler

from skdpval import (
    DPDataValuator,
    DPFederatedValuator,
    DPFilteredClassifier,
    DPLabelQuality,
    LayeredShapleyValuator,
    privacy_spent,
)
from skdpval.privacy._accounting import log_delta
from skdpval.privacy._mechanism import REPORT_KEYS, PrivacyMechanism
from skdpval.privacy._release import release_on_grid, releases_on_grid
from skdpval.privacy._secure_noise import (
    LABEL_SCORE,
    sampler_delta,
)
from skdpval.exceptions import NoiseSeedWarning


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:120], y[:120], X[400:], y[400:]


def _fits(data, **params):
    X, y, X_val, y_val = data
    Xs = MinMaxScaler().fit(X_val).transform(X[:40]).clip(0, 1)
    return [
        DPDataValuator(n_permutations=10, random_state=0, **params).fit(
            X, y, X_val=X_val, y_val=y_val),
        DPLabelQuality(random_state=0, **params).fit(X, y, X_val=X_val, y_val=y_val),
        DPFederatedValuator(n_rounds=3, n_permutations_per_round=3, random_state=0,
                            **params).fit(X, y, X_val=X_val, y_val=y_val,
                                          groups=np.arange(len(X)) % 4),
        LayeredShapleyValuator(alpha=0.5, random_state=0,
                               epsilon=params.get("epsilon", 1.0)).fit(
            Xs, y[:40], X_val=MinMaxScaler().fit_transform(X_val), y_val=y_val),
    ]


def test_every_valuator_reports_one_schema_and_the_same_attributes(data):
    for fitted in _fits(data, epsilon=2.0):
        assert tuple(sorted(fitted.privacy_report_)) == tuple(sorted(REPORT_KEYS))
        for name in ("epsilon_", "delta_", "noise_multiplier_", "n_releases_",
                     "privacy_unit_"):
            assert hasattr(fitted, name), (type(fitted).__name__, name)
        report = fitted.privacy_report_
        assert fitted.epsilon_ == report["epsilon"]
        assert fitted.noise_multiplier_ == report["noise_multiplier"]


def test_privacy_spent_equals_every_fits_own_report(data):
    for fitted in _fits(data, epsilon=2.0):
        spent = privacy_spent(fitted)
        assert spent["epsilon"] == pytest.approx(fitted.epsilon_, rel=1e-12)
        assert spent["delta"] == pytest.approx(fitted.delta_, rel=1e-12)


def test_a_fit_without_noise_is_reported_as_not_private(data):
    """epsilon=np.inf: no privacy noise in all four valuators (issue 35)."""
    for fitted in _fits(data, epsilon=np.inf):
        assert fitted.epsilon_ == np.inf
        assert fitted.privacy_report_["private"] is False
        spent = privacy_spent(fitted)
        assert spent["private"] is False and spent["epsilon"] == np.inf


def test_epsilon_inf_equals_noise_none(data):
    X, y, X_val, y_val = data
    a = DPDataValuator(epsilon=np.inf, n_permutations=8, random_state=1).fit(
        X, y, X_val=X_val, y_val=y_val)
    b = DPDataValuator(noise="none", n_permutations=8, random_state=1).fit(
        X, y, X_val=X_val, y_val=y_val)
    np.testing.assert_array_equal(a.values_, b.values_)


def test_a_budget_error_names_the_no_noise_switch(data):
    X, y, X_val, y_val = data
    with pytest.raises(ValueError, match="np.inf"):
        DPLabelQuality(epsilon=None).fit(X, y, X_val=X_val, y_val=y_val)


def test_a_seeded_fit_is_reported_as_not_private(data):
    """Defect 1: noise_seed is public (repr, get_params, pickles)."""
    X, y, X_val, y_val = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scorer = DPLabelQuality(epsilon=3.0, noise_seed=7).fit(
            X, y, X_val=X_val, y_val=y_val)
    assert any(issubclass(w.category, NoiseSeedWarning) for w in caught)
    assert scorer.privacy_report_["private"] is False
    assert any("noise_seed" in leak for leak in scorer.privacy_report_["leaks"])
    spent = privacy_spent(scorer)
    assert spent["private"] is False
    assert any("noise_seed" in leak for leak in spent["leaks"])
    fresh = DPLabelQuality(epsilon=3.0).fit(X, y, X_val=X_val, y_val=y_val)
    assert fresh.privacy_report_["private"] is True and privacy_spent(fresh)["private"]


def _guarantee_holds(report):
    """delta_mechanism(eps) + (1 + e^eps) tv <= delta, from the report."""
    mu, epsilon, tv = report["mu"], report["epsilon"], report["sampler_tv"]
    total = np.exp(log_delta(epsilon, mu)) + sampler_delta(tv, 1, epsilon)
    return total <= report["delta"] * (1 + 1e-9)


@pytest.mark.parametrize("k", [1, 1000, 10_000])
@pytest.mark.parametrize("epsilon", [1.0, 3.0, 10.0, 12.0, 15.0, 20.0])
def test_the_requested_delta_holds_or_the_fit_is_refused(k, epsilon):
    """Defect 2: every reported delta is the requested one and holds with the
    sampler's share; past the sampler's reach a clear refusal."""
    X, y = make_classification(n_samples=30, n_features=3, n_informative=2,
                               n_redundant=0, random_state=0)
    valuator = DPDataValuator(epsilon=epsilon, delta=5e-5, n_permutations=k,
                              random_state=0)
    try:
        valuator.fit(X[:20], y[:20], X_val=X[20:], y_val=y[20:])
    except ValueError as error:
        assert "sampler supports epsilon up to" in str(error)
        assert "n_permutations" in str(error)
        assert epsilon > 10
        return
    report = valuator.privacy_report_
    assert valuator.delta_ == 5e-5
    assert 0 <= report["sampler_delta"] <= 0.5 * 5e-5
    assert _guarantee_holds(report)
    # At most the requested epsilon, below it by what the sampler's share
    # of delta costs (4e-6 relative at epsilon 10 with 10,000 releases).
    assert epsilon * (1 - 1e-5) <= valuator.epsilon_ <= epsilon * (1 + 1e-9)
    assert 0 <= report["epsilon_replace_one"]


def test_reported_delta_holds_for_the_label_score_at_large_epsilon(data):
    X, y, X_val, y_val = data
    scorer = DPLabelQuality(epsilon=18.0, delta=5e-5).fit(X, y, X_val=X_val,
                                                          y_val=y_val)
    assert scorer.delta_ == 5e-5 and _guarantee_holds(scorer.privacy_report_)


@pytest.mark.parametrize("params", [
    dict(subspace=None, clip_norm=1.0),
    dict(privacy_unit="record"),
    dict(),
])
def test_privacy_spent_of_a_search_with_noise_multiplier(data, params):
    """Defect 3: planned and fitted agree, the noise multiplier is the
    report's, and every fit's sampler term counts."""
    X, y, X_val, y_val = data
    valuator = DPDataValuator(epsilon=None, noise_multiplier=2.0,
                              n_permutations=5, random_state=0, **params)
    search = GridSearchCV(DPFilteredClassifier(valuator),
                          {"valuator__q": [0.0, 0.5]}, cv=KFold(3))
    search.fit(X, y, X_val=X_val, y_val=y_val)
    refit = search.best_estimator_.valuator_
    assert refit.noise_multiplier_ == 2.0
    assert refit.privacy_report_["noise_multiplier"] == 2.0
    assert refit.privacy_report_["mu"] == pytest.approx(np.sqrt(5) / 2.0, rel=1e-12)
    spent = privacy_spent(search)
    fits = spent["max_fits_per_party"]
    assert fits == 2 * 2 + 1
    assert spent["gaussian_mu"] == pytest.approx(np.sqrt(fits * 5) / 2.0, rel=1e-12)
    assert spent["sampler_tv"] == pytest.approx(
        fits * refit.privacy_report_["sampler_tv"], rel=1e-9)
    assert spent["sampler_tv"] > 0


def test_privacy_spent_of_a_search_counts_delta_auto_per_fold(data):
    X, y, X_val, y_val = data
    search = GridSearchCV(DPFilteredClassifier(DPDataValuator(
        epsilon=1.0, n_permutations=5, random_state=0)),
        {"valuator__q": [0.0, 0.5]}, cv=KFold(3)).fit(X, y, X_val=X_val, y_val=y_val)
    spent = privacy_spent(search)
    assert spent["epsilon"] > 1.0 and np.isfinite(spent["epsilon"])


def test_no_error_quotes_a_private_target():
    """Defect 4: the domain check names no value of y."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.abs(rng.normal(size=30))
    y[4] = -3.25
    with pytest.raises(ValueError) as error:
        DPDataValuator(PoissonRegressor(), n_permutations=2, epsilon=1.0).fit(
            X[:20], y[:20], X_val=X[20:], y_val=np.abs(y[20:]))
    assert "3.25" not in str(error.value) and "y must be >= 0" in str(error.value)


def test_a_zero_release_has_no_sign():
    """Defect 5: a small negative statistic rounded to 0 with noise -0.0."""
    out = release_on_grid(-1e-300, -0.0, 0.125, 64.0)
    assert out == 0 and not np.signbit(out)
    many = releases_on_grid(np.array([-1e-300, -0.01]), np.array([-0.0, -0.0]),
                            0.125, 64.0, np.empty(2))
    assert not np.any(np.signbit(many))


def test_delta_auto_never_exceeds_a_tenth_of_one_over_n():
    X, y = make_classification(n_samples=30_100, n_features=4, random_state=0)
    scorer = DPLabelQuality(epsilon=1.0).fit(X[:30_000], y[:30_000],
                                             X_val=X[30_000:], y_val=y[30_000:])
    assert scorer.delta_ == pytest.approx(1 / (10 * 30_000))
    small = DPLabelQuality(epsilon=1.0).fit(X[:400], y[:400], X_val=X[30_000:],
                                            y_val=y[30_000:])
    assert small.delta_ == 5e-5
    given = DPLabelQuality(epsilon=1.0, delta=1e-3).fit(
        X[:30_000], y[:30_000], X_val=X[30_000:], y_val=y[30_000:])
    assert given.delta_ == 1e-3


def test_parts_compose_exactly_in_mu_squared():
    mechanism = PrivacyMechanism(epsilon=2.0, delta=1e-5)
    mechanism.protect("sample", 1000)
    fit = mechanism.gaussian("fit", LABEL_SCORE, n_releases=100, clip=2.0,
                             dimension=5, share=0.05)
    release = mechanism.gaussian("release", LABEL_SCORE, n_releases=1, clip=1.0,
                                 dimension=1, share=0.95)
    mechanism.calibrate()
    mu, epsilon, _, tv = mechanism.guarantee()
    assert fit.mu**2 == pytest.approx(0.05 * mu**2, rel=1e-12)
    assert release.mu**2 == pytest.approx(0.95 * mu**2, rel=1e-12)
    assert epsilon == pytest.approx(2.0, rel=1e-6) and epsilon <= 2.0 * (1 + 1e-12)
    assert tv > 0


def test_a_fitted_valuator_keeps_no_noise_key(data):
    """The key is secret: nothing of it stays on the fitted estimator."""
    for fitted in _fits(data, epsilon=2.0):
        for value in vars(fitted).values():
            assert not isinstance(value, PrivacyMechanism)
