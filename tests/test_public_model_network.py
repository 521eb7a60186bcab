"""The private fit of a network public model (issue 44, part 3)."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.neural_network import MLPClassifier

from skdpval import DPDataValuator, DPFilteredClassifier, DPLabelQuality, privacy_spent
from skdpval.families.network import (NETWORK_FIT_STEPS, NetworkFamily, make_network,
                                      network_objective)
from skdpval.kernels import _network
from skdpval.kernels._fit_sums import network_gradient_sum
from skdpval.privacy._accounting import gdp_mu

DELTA = 1e-5


def _xor_data(n=4000, n_val=200, seed=0, flip=0.2):
    """A label no linear model reads: the sign of x0 x1 (plus x2)."""
    rng = np.random.default_rng(seed)

    def rows(m):
        X = rng.normal(size=(m, 3))
        return X, (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(int)

    X, y = rows(n)
    X_val, y_val = rows(n_val)
    flipped = rng.random(n) < flip
    return X, np.where(flipped, 1 - y, y), X_val, y_val, flipped, y


def _recording_gaussian(monkeypatch):
    import skdpval.privacy._mechanism as module
    draws = []
    original = module.gaussian_noise

    def recording(key, kind, lo, hi, std, out):
        draws.append((kind, hi - lo, out.shape, std, lo))
        return original(key, kind, lo, hi, std, out)

    monkeypatch.setattr(module, "gaussian_noise", recording)
    return draws


def test_network_fit_draws_at_the_calibrated_scale(monkeypatch):
    """MLPClassifier((3,)) on 3 features: 16 parameters ((3 + 1) 3 + (3 + 1)
    1). Its NETWORK_FIT_STEPS steps draw at std sqrt(steps) Delta /
    (sqrt(share) mu) in grid units, Delta = 2**10 + sqrt(16) + 2**-20 (j = 10,
    the first with 2**j >= 256 sqrt(16)); the score gets the rest of mu^2."""
    draws = _recording_gaussian(monkeypatch)
    X, y, X_val, y_val, _, _ = _xor_data(n=2000)
    share = 0.2
    scorer = DPLabelQuality(MLPClassifier((3,), max_iter=500, random_state=0),
                            epsilon=2.0, delta=DELTA, public_model="private",
                            public_model_share=share, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer.fit(X, y, X_val=X_val, y_val=y_val)
    mu = gdp_mu(2.0, DELTA)
    fit_draws = [d for d in draws if d[0] == 5]
    assert [(n_streams, shape, lo) for _, n_streams, shape, _, lo in fit_draws] == [
        (1, (1, 16), t) for t in range(NETWORK_FIT_STEPS)]
    delta_grid = 2.0**10 + 4.0 + 2.0**-20
    assert all(std == pytest.approx(
        math.sqrt(NETWORK_FIT_STEPS) * delta_grid / (math.sqrt(share) * mu), rel=1e-5)
        for _, _, _, std, _ in fit_draws)
    assert [d[3] for d in draws if d[0] == 2] == [
        pytest.approx(64 / (math.sqrt(1 - share) * mu), rel=1e-5)]
    fit_part, = [p for p in scorer.privacy_report_["parts"]
                 if p["name"] == "public model fit"]
    assert fit_part["n_releases"] == NETWORK_FIT_STEPS
    assert fit_part["dimension"] == 16
    assert fit_part["mu"] == pytest.approx(math.sqrt(share) * mu, rel=1e-5)
    assert scorer.privacy_report_["mu"] == pytest.approx(mu, rel=1e-5)
    assert privacy_spent(scorer, delta=DELTA)["mu"] == pytest.approx(mu, rel=1e-5)


def test_network_gradient_sum_is_a_plain_numpy_clipped_sum():
    """The kernel's sum against each party's gradient (the network's own
    objective on its rows), clipped and rounded by hand; groups of rows."""
    rng = np.random.default_rng(3)
    sizes = [3, 4, 1]
    network = make_network(sizes, "relu", 0, rng)
    X = rng.normal(size=(60, 3)) * 2
    T = np.where(rng.random((60, 1)) < 0.5, 1.0, -1.0)
    offsets = np.r_[0, np.sort(rng.choice(np.arange(1, 60), 19, replace=False)), 60]
    theta = network.theta0 + rng.normal(size=network.theta0.size)
    l2, clip, unit = 0.01, 0.7, 2.0**-20
    expected = np.zeros(theta.size, dtype=np.int64)
    for a, b in zip(offsets[:-1], offsets[1:]):
        _, gradient = network_objective(network, X[a:b], T[a:b], l2)(theta)
        gradient = gradient * min(1.0, clip / np.linalg.norm(gradient))
        expected += np.rint(gradient / unit).astype(np.int64)
    out = np.empty(theta.size, dtype=np.int64)
    units = _network.n_units(network.layout)
    network_gradient_sum(theta, network.layout, _network.act_flag(network.activation),
                         _network.loss_flag(network.loss), X, T, np.ones(60),
                         offsets.astype(np.int64), l2, clip, unit, np.zeros(units),
                         np.zeros(units), np.empty(theta.size), out)
    np.testing.assert_array_equal(out, expected)


def test_private_network_fit_learns_what_the_validation_network_misses():
    """On a non-linear label, the network fitted privately on 20,000 noisy
    rows classifies the clean labels better than the one fitted on the 100
    validation rows, and finds the flipped labels better."""
    X, y, X_val, y_val, flipped, clean = _xor_data(n=20000, n_val=60)
    model = MLPClassifier((16,), max_iter=1000, random_state=0)
    fits = {}
    for option in ("validation", "private"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[option] = DPLabelQuality(model, epsilon=3.0, delta=DELTA,
                                          public_model=option, random_state=0,
                                          noise_seed=1).fit(X, y, X_val=X_val,
                                                            y_val=y_val)
    Xs = (X - X_val.mean(axis=0)) / X_val.std(axis=0)
    accuracy = {k: np.mean(f.public_model_.predict(Xs) == clean) for k, f in fits.items()}
    assert accuracy["private"] > accuracy["validation"] + 0.01, accuracy
    from skdpval.metrics import noisy_label_auc
    auc = {k: noisy_label_auc(f.values_, flipped) for k, f in fits.items()}
    assert auc["private"] > auc["validation"], auc
    fit = fits["private"].privacy_report_["details"]["public_model_fit"]
    assert fit["step_rule"] == "adam" and fit["n_steps"] == NETWORK_FIT_STEPS


def test_auto_fits_a_network_on_a_large_training_set_and_checks_it():
    X, y, X_val, y_val, _, _ = _xor_data(n=6000, n_val=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = DPLabelQuality(MLPClassifier((8,), max_iter=1000, random_state=0),
                                epsilon=3.0, delta=DELTA, random_state=0).fit(
            X, y, X_val=X_val, y_val=y_val)
    names = [part["name"] for part in scorer.privacy_report_["parts"]]
    assert names == ["public model fit", "label score"]
    assert "rule" in scorer.privacy_report_["details"]["public_model_fit"]
    assert scorer.privacy_report_["details"]["public_model"].startswith(
        "public_model='auto'")


def test_data_valuator_keeps_the_validation_network_and_says_why():
    assert NetworkFamily().private_fit_unsupported(MLPClassifier()) is None
    X, y, X_val, y_val, _, _ = _xor_data(n=3000, n_val=50)
    with pytest.raises(ValueError, match="privately fitted line"):
        DPDataValuator(MLPClassifier((4,)), public_model="private", epsilon=1.0,
                       delta=DELTA).fit(X, y, X_val=X_val, y_val=y_val)


def test_a_search_over_a_network_scorer_plans_the_network_fit():
    """privacy_spent of a search plans each candidate's private network fit
    (NETWORK_FIT_STEPS releases of its parameters) as the fits report it."""
    X, y, X_val, y_val, _, _ = _xor_data(n=3000, n_val=100)
    search = GridSearchCV(
        DPFilteredClassifier(DPLabelQuality(
            MLPClassifier((4,), max_iter=500, random_state=0), public_model="private",
            random_state=0), LogisticRegression()),
        {"valuator__epsilon": [1, 3]}, cv=KFold(2), refit=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y, X_val=X_val, y_val=y_val)
        spent = privacy_spent(search)
        mu_sq = np.zeros(len(X))
        for params in search.cv_results_["params"]:
            for train, _ in search.cv.split(X, y):
                fit = clone(search.estimator).set_params(**params).fit(
                    X[train], y[train], X_val=X_val, y_val=y_val)
                parts = fit.valuator_.privacy_report_["parts"]
                assert parts[0]["n_releases"] == NETWORK_FIT_STEPS
                mu_sq[train] += fit.valuator_.privacy_report_["mu"] ** 2
    hand = float(np.sqrt(mu_sq.max()))
    assert hand * (1 - 1e-12) <= spent["gaussian_mu"] <= hand * (1 + 1e-5)


def test_on_dask_input_the_network_fit_is_refused_and_auto_keeps_what_it_can():
    da = pytest.importorskip("dask.array")
    X, y, X_val, y_val, _, _ = _xor_data(n=4000, n_val=200)
    rows = da.from_array(X, chunks=(1000, 3))
    network = MLPClassifier((8,), max_iter=1000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="on Dask input"):
            DPLabelQuality(network, epsilon=3.0, delta=DELTA, public_model="private",
                           random_state=0).fit(rows, y, X_val=X_val, y_val=y_val)
        auto = DPLabelQuality(network, epsilon=3.0, delta=DELTA, random_state=0).fit(
            rows, y, X_val=X_val, y_val=y_val)
        # The default candidates choose the network here (in memory too); a
        # private fit on Dask input falls back on the linear model.
        default = DPLabelQuality(epsilon=3.0, delta=DELTA, public_model="private",
                                 random_state=0).fit(rows, y, X_val=X_val, y_val=y_val)
    assert not auto.public_model_fitted_privately_
    assert "Dask" in auto.public_model_reason_
    assert [p["name"] for p in auto.privacy_report_["parts"]] == ["label score"]
    assert default.model_choice_["chosen"] == "LogisticRegression"
    assert "Dask" in default.model_choice_["why"]
    assert default.public_model_fitted_privately_
