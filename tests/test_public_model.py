"""The public model fitted privately on the training rows (``public_model``)."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier, MLPRegressor

from skdpval import DPDataValuator, DPLabelQuality, DPValueFilter, privacy_spent
from skdpval.privacy._accounting import gdp_epsilon, gdp_mu

DELTA = 1e-5


def _data(n=3000, n_val=40, d=4, seed=0, flip=0.0):
    rng = np.random.default_rng(seed)
    w = np.array([2.0, -1.0, 0.5, 0.0][:d] + [0.0] * max(0, d - 4))
    X = rng.normal(size=(n, d))
    y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)
    flipped = rng.random(n) < flip
    y_noisy = np.where(flipped, 1 - y, y)
    X_val = rng.normal(size=(n_val, d))
    y_val = (X_val @ w > 0).astype(int)
    return X, y_noisy, X_val, y_val, flipped


def _recording_gaussian(monkeypatch, module, draws=None):
    stds = []
    original = module.gaussian_noise

    def recording(key, kind, lo, hi, std, out):
        stds.append((kind, hi - lo, out.shape, std, lo))
        result = original(key, kind, lo, hi, std, out)
        if draws is not None:
            draws.append((kind, result.copy()))
        return result

    monkeypatch.setattr(module, "gaussian_noise", recording)
    return stds


# --- calibration (white box) -------------------------------------------------------

def test_public_fit_draws_at_the_calibrated_scale(monkeypatch):
    """The fit's 20 steps of 5 coordinates (4 features, the intercept) draw
    at std sqrt(20) Delta / (sqrt(share) mu) in grid units, Delta = 2**10 +
    sqrt(5) + 2**-20 (any-two-apart rounding of 5 coordinates: j = 10, the
    first with 2**j >= 256 sqrt(5)); the release gets the rest of mu^2."""
    import skdpval.privacy._mechanism as module

    draws = _recording_gaussian(monkeypatch, module)
    X, y, X_val, y_val, _ = _data()
    share = 0.2
    scorer = DPLabelQuality(epsilon=2.0, delta=DELTA, public_model="private",
                            public_model_share=share, random_state=0)
    scorer.fit(X, y, X_val=X_val, y_val=y_val)
    # delta net of the sampler's share (100 + 1 draws a party) moves mu by < 1e-5
    mu = gdp_mu(2.0, DELTA)
    delta_grid = 2.0**10 + math.sqrt(5) + 2.0**-20
    # One release a step, from its own stream: (PUBLIC_FIT, t), t = 0 .. 19.
    fit_draws = [d for d in draws if d[0] == 5]
    assert [(n_streams, shape, lo) for _, n_streams, shape, _, lo in fit_draws] == [
        (1, (1, 5), t) for t in range(20)]
    assert all(std == pytest.approx(
        math.sqrt(20) * delta_grid / (math.sqrt(share) * mu), rel=1e-5)
        for _, _, _, std, _ in fit_draws)
    # The one score release: sensitivity 2**6 grid units, mu^2 (1 - share).
    assert [d[3] for d in draws if d[0] == 2] == [
        pytest.approx(64 / (math.sqrt(1 - share) * mu), rel=1e-5)]
    report = scorer.privacy_report_
    assert report["mu"] == pytest.approx(mu, rel=1e-5)
    assert scorer.epsilon_ == pytest.approx(2.0, rel=1e-5)
    fit_part, = [p for p in report["parts"] if p["name"] == "public model fit"]
    assert fit_part["mu"] == pytest.approx(math.sqrt(share) * mu, rel=1e-5)


def test_walk_after_a_private_fit_draws_at_the_rest_of_the_budget(monkeypatch):
    import skdpval.privacy._mechanism as module

    draws = _recording_gaussian(monkeypatch, module)
    X, y, X_val, y_val, _ = _data(n=1500)
    k = 8
    valuator = DPDataValuator(n_permutations=k, epsilon=2.0, delta=DELTA,
                              public_model="private", random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    mu = gdp_mu(2.0, DELTA)
    fit_draws = [d for d in draws if d[0] == 5]
    walk_draws = [d for d in draws if d[0] == 1]
    assert len(fit_draws) == 20 and len(fit_draws) + len(walk_draws) == len(draws)
    assert all(d[3] == pytest.approx(
        math.sqrt(20) * (2.0**10 + math.sqrt(5) + 2.0**-20) / (math.sqrt(0.05) * mu),
        rel=1e-5) for d in fit_draws)
    # One coordinate a release (the public line): Delta = 2**6.
    assert walk_draws and all(d[3] == pytest.approx(
        math.sqrt(k) * 64 / (math.sqrt(0.95) * mu), rel=1e-5) for d in walk_draws)
    assert valuator.privacy_report_["mu"] == pytest.approx(mu, rel=1e-5)
    assert valuator.public_model_fitted_privately_


def test_public_fit_noise_is_what_the_report_claims(monkeypatch):
    """The empirical std of the fit's drawn noise (20 steps x 64
    coordinates, in data units) against the report's noise_std for the
    part: the noise scaled by 0.8 fails (5 standard errors: 0.099)."""
    import skdpval.privacy._mechanism as module

    draws = []
    _recording_gaussian(monkeypatch, module, draws)
    X, y, X_val, y_val, _ = _data(n=6000, n_val=100, d=63)
    scorer = DPLabelQuality(epsilon=1.0, delta=DELTA, public_model="private",
                            random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    fit_part, = [p for p in scorer.privacy_report_["parts"]
                 if p["name"] == "public model fit"]
    noise = np.concatenate([d.ravel() for kind, d in draws if kind == 5])
    assert len(noise) == 20 * 64
    ratio = np.std(noise) * fit_part["grid"] / fit_part["noise_std"]
    assert ratio == pytest.approx(1.0, abs=5 / math.sqrt(2 * len(noise)))


# --- what the fit does -------------------------------------------------------------

def _objective(model, X, y, n):
    """Mean logistic loss plus LogisticRegression's L2 term over n (C = 1)."""
    margin = (X @ model.coef_.ravel() + model.intercept_[0]) * np.where(y == 1, 1, -1)
    return float(np.mean(np.logaddexp(0.0, -margin)) + 0.5 * model.coef_.ravel() @
                 model.coef_.ravel() / n)


def test_private_fit_reduces_the_training_objective():
    X, y, X_val, y_val, _ = _data(n=20000, n_val=20)
    scorer = DPLabelQuality(epsilon=3.0, delta=DELTA, public_model="private",
                            random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    Xs = (X - mean) / std
    before = _objective(scorer.estimator_, Xs, y, len(y))
    after = _objective(scorer.public_model_, Xs, y, len(y))
    best = _objective(LogisticRegression().fit(Xs, y), Xs, y, len(y))
    assert after < before - 0.5 * (before - best)
    assert scorer.public_model_ is not scorer.estimator_


def test_private_fit_of_a_regressor_and_multiclass():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 3))
    y = X @ np.array([1.0, 2.0, -1.0]) * 10 + 5 + rng.normal(size=4000)
    X_val = rng.normal(size=(30, 3))
    y_val = X_val @ np.array([1.0, 2.0, -1.0]) * 10 + 5
    reg = DPLabelQuality(Ridge(), epsilon=3.0, delta=DELTA, public_model="private",
                         random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    assert reg.public_model_fitted_privately_
    assert np.all(np.isfinite(reg.values_))
    classes = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0).astype(int)
    classes_val = (X_val[:, 0] > 0.5).astype(int) + (X_val[:, 1] > 0).astype(int)
    multi = DPLabelQuality(epsilon=3.0, delta=DELTA, public_model="private",
                           random_state=0).fit(X, classes, X_val=X_val, y_val=classes_val)
    assert multi.public_model_.coef_.shape == (3, 3)
    Xs = (X - X_val.mean(0)) / X_val.std(0)
    private = (multi.public_model_.predict(Xs) == classes).mean()
    validation = (multi.estimator_.predict(Xs) == classes).mean()
    best = (LogisticRegression().fit(Xs, classes).predict(Xs) == classes).mean()
    assert private > validation + 0.5 * (best - validation)


def test_auto_keeps_the_validation_model_on_small_sets_and_fits_on_large():
    X, y = load_breast_cancer(return_X_y=True)
    scorer = DPLabelQuality(epsilon=1.0, delta=DELTA, random_state=0).fit(
        X[:400], y[:400], X_val=X[400:], y_val=y[400:])
    assert not scorer.public_model_fitted_privately_
    assert scorer.public_model_ is scorer.estimator_
    assert "keeps the validation model" in scorer.privacy_report_["details"][
        "public_model"]
    X, y, X_val, y_val, _ = _data(n=20000, n_val=50)
    assert DPLabelQuality(epsilon=1.0, delta=DELTA, random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val).public_model_fitted_privately_


def test_auto_keeps_the_validation_model_for_models_it_cannot_fit():
    X, y, X_val, y_val, _ = _data(n=6000, n_val=50)
    forest = DPLabelQuality(RandomForestClassifier(n_estimators=5), epsilon=1.0,
                            delta=DELTA, random_state=0).fit(X, y, X_val=X_val,
                                                              y_val=y_val)
    assert not forest.public_model_fitted_privately_
    assert "RandomForestClassifier" in forest.public_model_reason_


def test_validation_public_model_is_todays_label_score():
    """public_model="validation": the clipped margins of a model fitted on
    the standardised validation rows (no noise), computed here by hand."""
    X, y, X_val, y_val, _ = _data(n=5000, n_val=60, flip=0.2)
    scorer = DPLabelQuality(epsilon=np.inf, public_model="validation", random_state=0)
    scorer.fit(X, y, X_val=X_val, y_val=y_val)
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    model = LogisticRegression(random_state=0).fit((X_val - mean) / std, y_val)
    margins = model.decision_function((X - mean) / std) * np.where(y == 1, 1, -1)
    np.testing.assert_allclose(scorer.values_, np.clip(margins, -1, 1), rtol=1e-6,
                               atol=1e-9)
    noisy = DPLabelQuality(epsilon=1.0, delta=DELTA, public_model="validation",
                           random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    assert "public_model_fit" not in noisy.privacy_report_["details"]
    assert [p["name"] for p in noisy.privacy_report_["parts"]] == ["label score"]
    assert noisy.privacy_report_["noise_std"] == pytest.approx(
        noisy.privacy_report_["sensitivity"] / gdp_mu(1.0, DELTA), rel=1e-5)


# --- bad input -------------------------------------------------------------------

@pytest.mark.parametrize("Valuator", [DPLabelQuality, DPDataValuator])
@pytest.mark.parametrize("params, match", [
    ({"public_model": "privat"}, "public_model"),
    ({"public_model": None}, "public_model"),
    ({"public_model_share": 0.0}, "public_model_share"),
    ({"public_model_share": 1.0}, "public_model_share"),
    ({"public_model_share": 1.5}, "public_model_share"),
])
def test_bad_public_model_parameters_fail_before_any_work(Valuator, params, match):
    X = np.array([[np.nan, 1.0]])  # would fail validation if read first
    with pytest.raises(ValueError, match=match):
        Valuator(epsilon=1.0, **params).fit(X, [0])


@pytest.mark.parametrize("valuator, match", [
    (DPLabelQuality(RandomForestClassifier(), public_model="private", epsilon=1.0),
     "RandomForestClassifier"),
    (DPLabelQuality(MLPRegressor(), public_model="private", epsilon=1.0),
     "network regressor"),
    (DPDataValuator(MLPClassifier(), public_model="private", epsilon=1.0), "network"),
    (DPDataValuator(public_model="private", subspace=None, epsilon=1.0),
     "subspace='public'"),
    (DPDataValuator(public_model="private", noise_multiplier=2.0), "noise_multiplier"),
])
def test_private_public_model_it_cannot_fit_is_refused_before_any_work(valuator, match):
    with pytest.raises(ValueError, match=match):
        valuator.fit(np.array([[np.nan, 1.0]]), [0])


# --- composition -------------------------------------------------------------------

def test_privacy_spent_of_a_filter_with_a_private_fit_is_the_hand_composition():
    X, y, X_val, y_val, _ = _data(n=4000, n_val=40, flip=0.2)
    filt = DPValueFilter(DPLabelQuality(epsilon=1.0, delta=DELTA,
                                        public_model="private", random_state=0))
    filt.fit_resample(X, y, X_val=X_val, y_val=y_val)
    report = filt.valuator_.privacy_report_
    parts = {p["name"]: p for p in report["parts"]}
    mu_fit, mu_release = parts["public model fit"]["mu"], parts["label score"]["mu"]
    assert parts["public model fit"]["share"] == 0.05
    spent = privacy_spent(filt, delta=DELTA)
    hand = math.sqrt(mu_fit**2 + mu_release**2)
    assert spent["mu"] == pytest.approx(hand, rel=1e-9)
    assert hand == pytest.approx(gdp_mu(1.0, DELTA), rel=1e-5)
    assert spent["epsilon"] == pytest.approx(gdp_epsilon(hand, DELTA), rel=1e-3)


@pytest.mark.parametrize("loss_name, l2", [("LOGISTIC", 0.0), ("LOGISTIC", 0.3),
                                           ("SQUARED", 0.1), ("HINGE", 0.05)])
def test_one_row_kernel_equals_the_general_clipped_sum(loss_name, l2):
    """The fast path (one-row parties, one output) against the general
    kernel: each row's gradient clipped, then summed."""
    import skdpval.kernels._losses as K
    from skdpval.kernels._fit_sums import clipped_gradient_sum, clipped_row_gradient_sum

    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=(300, 4)) * 3, np.ones(300)]
    T = np.where(rng.random((300, 1)) < 0.5, -1.0, 1.0)
    theta = rng.normal(size=(1, 5))
    weights = rng.uniform(0.5, 2.0, 300)
    loss = getattr(K, loss_name)
    unit = 2.0**-30
    general, fast = np.empty((1, 5), np.int64), np.empty((1, 5), np.int64)
    clipped_gradient_sum(theta, X, T, weights, np.arange(301), loss, 0.0, l2, 0.0, 4,
                         1.5, unit, np.empty(1), np.empty(1), np.empty((1, 5)),
                         general)
    clipped_row_gradient_sum(theta, X, T, weights, loss, 0.0, l2, 4, 1.5, unit, fast)
    # Rounded to the unit row by row: a row's two roundings may differ by one.
    np.testing.assert_allclose(fast * unit, general * unit, rtol=1e-10,
                               atol=300 * unit)


def test_auto_keeps_the_validation_model_for_a_network_and_says_why():
    X, y, X_val, y_val, _ = _data(n=3000, n_val=40)
    valuator = DPDataValuator(MLPClassifier((4,), random_state=0), n_permutations=2,
                              epsilon=3.0, delta=DELTA, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert not valuator.public_model_fitted_privately_
    assert "network" in valuator.public_model_reason_
    assert "network" in valuator.privacy_report_["details"]["public_model"]


def test_data_valuator_private_line_of_a_multiclass_model():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0).astype(int)
    X_val = rng.normal(size=(40, 3))
    y_val = (X_val[:, 0] > 0.5).astype(int) + (X_val[:, 1] > 0).astype(int)
    valuator = DPDataValuator(n_permutations=4, epsilon=3.0, delta=DELTA,
                              public_model="private", random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert valuator.public_model_.shape == (3, 4)
    assert np.all(np.isfinite(valuator.values_))
    parts = [p["name"] for p in valuator.privacy_report_["parts"]]
    assert parts == ["public model fit", "walk"]
    # Net of the sampler's share of delta (240 draws a party for the fit).
    assert valuator.privacy_report_["mu"] == pytest.approx(gdp_mu(3.0, DELTA), rel=1e-4)


@pytest.mark.parametrize("loss_name", ["logistic", "squared", "hinge", "huber"])
@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_fit_kernels_equal_a_plain_numpy_clipped_sum(loss_name, l2):
    """Both kernels of the fit against tests/reference.py's clipped sum
    (plain numpy, row by row): one-row parties on the fast path, parties
    of 1-4 rows with an L1 term and three outputs on the general one; some
    gradients clipped and some not, the intercept column unpenalised."""
    import skdpval.kernels._losses as K
    from skdpval.kernels._fit_sums import clipped_gradient_sum, clipped_row_gradient_sum

    from reference import clipped_gradient_sum as reference_sum
    from reference import loss_and_dloss

    rng = np.random.default_rng(3)
    n = 400
    X = np.c_[rng.normal(size=(n, 6)) * rng.uniform(0.05, 3.0, (n, 1)), np.ones(n)]
    weights = rng.uniform(0.5, 2.0, n)
    loss = getattr(K, loss_name.upper())
    T = (np.where(rng.random((n, 1)) < 0.5, -1.0, 1.0) if loss_name in
         ("logistic", "hinge") else rng.normal(size=(n, 1)) * 2)
    theta = rng.normal(size=(1, 7)) * 0.3
    norms = [np.linalg.norm(w * loss_and_dloss(loss_name, theta @ x, t, 0.1)[1] * x)
             for x, t, w in zip(X, T, weights)]
    clip = float(np.median(norms))  # half the rows clipped, half not
    expected = reference_sum(theta, X, T, np.arange(n + 1), loss=loss_name, l2=l2,
                             n_penalized=6, clip=clip, row_weights=weights)
    unit = 2.0**-32 * clip  # each party's coordinates rounded to it: n units at most
    fast = np.empty((1, 7), np.int64)
    clipped_row_gradient_sum(theta, X, T, weights, loss, 0.1, l2, 6, clip, unit, fast)
    np.testing.assert_allclose(fast * unit, expected, rtol=1e-10, atol=n * unit)

    offsets = np.r_[0, np.cumsum(rng.integers(1, 5, n))]
    offsets = offsets[offsets <= n]
    offsets[-1] = n
    theta3 = rng.normal(size=(3, 7))
    T3 = rng.normal(size=(n, 3)) if loss_name != "logistic" else T.repeat(3, 1)
    general = np.empty((3, 7), np.int64)
    clipped_gradient_sum(theta3, X, T3, weights, offsets, loss, 0.1, l2, 0.05, 6, clip,
                         unit, np.empty(3), np.empty(3), np.empty((3, 7)), general)
    expected = reference_sum(theta3, X, T3, offsets, loss=loss_name, l2=l2,
                             n_penalized=6, clip=clip, row_weights=weights, l1=0.05)
    np.testing.assert_allclose(general * unit, expected, rtol=1e-10, atol=n * unit)


def test_fit_kernels_drop_a_row_whose_gradient_overflows():
    """A squared-loss row at 1e200 (its gradient infinite) adds nothing to
    either kernel's sum, as in the plain-numpy reference; the other rows
    are summed as usual."""
    import skdpval.kernels._losses as K
    from skdpval.kernels._fit_sums import clipped_gradient_sum, clipped_row_gradient_sum

    from reference import clipped_gradient_sum as reference_sum

    rng = np.random.default_rng(4)
    X = np.c_[rng.normal(size=(50, 3)), np.ones(50)]
    X[7, :3] = 1e200
    T = rng.normal(size=(50, 1))
    theta = rng.normal(size=(1, 4))
    expected = reference_sum(theta, X, T, np.arange(51), loss="squared", l2=0.1,
                             n_penalized=3, clip=1.0)
    without = reference_sum(theta, np.delete(X, 7, 0), np.delete(T, 7, 0),
                            np.arange(50), loss="squared", l2=0.1, n_penalized=3,
                            clip=1.0)
    np.testing.assert_allclose(expected, without, rtol=1e-12)
    unit = 2.0**-32
    fast, general = np.empty((1, 4), np.int64), np.empty((1, 4), np.int64)
    clipped_row_gradient_sum(theta, X, T, np.ones(50), K.SQUARED, 0.0, 0.1, 3, 1.0,
                             unit, fast)
    clipped_gradient_sum(theta, X, T, np.ones(50), np.arange(51), K.SQUARED, 0.0, 0.1,
                         0.0, 3, 1.0, unit, np.empty(1), np.empty(1), np.empty((1, 4)),
                         general)
    np.testing.assert_allclose(fast * unit, expected, rtol=1e-10, atol=50 * unit)
    np.testing.assert_allclose(general * unit, expected, rtol=1e-10, atol=50 * unit)


# --- exact sums: the same bits however the rows are split ---------------------------

def _fit_rows(n, d, seed, scale=3.0):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(n, d)) * rng.uniform(0.05, scale, (n, 1)), np.ones(n)]
    T = np.where(rng.random((n, 1)) < 0.5, -1.0, 1.0)
    return rng, X, T, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("n_outputs, l1", [(1, 0.0), (1, 0.05), (3, 0.0)])
def test_fit_sums_of_any_split_of_the_rows_equal_the_whole(n_outputs, l1):
    """Blocks of rows cut anywhere and added in any order give the sum of
    the whole, bit for bit (the one-pass kernel and the general one)."""
    import skdpval.kernels._losses as K
    from skdpval.kernels._fit_sums import rows_gradient_sum
    from skdpval.valuation._public_model import fixed_point_unit

    rng, X, T, weights = _fit_rows(1000, 6, 5)
    T = T.repeat(n_outputs, 1)
    theta = rng.normal(size=(n_outputs, 7))
    unit = fixed_point_unit(1.0, len(X))
    args = (None, K.LOGISTIC, 0.0, 0.2, l1, 6, 1.0, unit)
    whole = rows_gradient_sum(X, T, weights, theta, *args)
    assert whole.dtype == np.int64
    for _ in range(5):
        cuts = np.r_[0, np.sort(rng.choice(np.arange(1, 1000), rng.integers(1, 40),
                                           replace=False)), 1000]
        blocks = list(zip(cuts[:-1], cuts[1:]))
        rng.shuffle(blocks)
        total = np.zeros_like(whole)
        for lo, hi in blocks:
            total += rows_gradient_sum(X[lo:hi], T[lo:hi], weights[lo:hi], theta,
                                       *args)
        np.testing.assert_array_equal(total, whole)
    # Float sums of the same rows differ with the split: what the integers fix.
    rows = rng.normal(size=(1000, 7)) * 1e3
    assert any(not np.array_equal(rows.sum(axis=0), rows[:k].sum(axis=0)
                                  + rows[k:].sum(axis=0)) for k in range(1, 1000, 37))


@pytest.mark.parametrize("d", [4, 63])
def test_a_rounded_party_gradient_stays_within_the_clip(d):
    """Each party's clipped gradient, rounded to the fixed-point unit, has
    norm at most the fit's clip (the sum's sensitivity), thanks to the
    shrunk clip: rounded after a clip to the clip itself, some rows exceed
    it (the check can fail). A coarse unit makes the rounding visible."""
    import skdpval.kernels._losses as K
    from skdpval.kernels._fit_sums import rows_gradient_sum
    from skdpval.valuation._public_model import rounded_clip

    rng, X, T, weights = _fit_rows(400, d, 6, scale=30.0)  # most rows clipped
    theta = rng.normal(size=(1, d + 1))
    clip, unit = 2.0, 2.0**-12
    norms = {}
    for name, inner in (("shrunk", rounded_clip(clip, unit, d + 1)), ("plain", clip)):
        args = (None, K.LOGISTIC, 0.0, 0.2, 0.0, d, inner, unit)
        norms[name] = np.array([
            np.linalg.norm(rows_gradient_sum(X[r:r + 1], T[r:r + 1], weights[r:r + 1],
                                             theta, *args) * unit)
            for r in range(len(X))])
    assert np.mean(norms["shrunk"] > 0.99 * clip) > 0.5
    assert np.all(norms["shrunk"] <= clip)
    assert np.any(norms["plain"] > clip)


def test_the_fixed_point_sum_cannot_overflow():
    """``n`` parties each adding at most ``clip / unit`` a coordinate stay
    within int64 (public bound), and the unit is fine where that allows."""
    from skdpval.valuation._public_model import FIT_SUM_BITS, fixed_point_unit

    for n in (2, 1000, 2**21 - 1, 10**7, 2**31, 10**10):
        unit = fixed_point_unit(2.0, n)
        # below 2**53 units: exact in int64 and as a float64
        assert n * (2.0 / unit) < 2.0**53
        if n < 2**21:
            assert unit == 2.0 * 2.0**-FIT_SUM_BITS
    with pytest.raises(ValueError, match="parties"):
        fixed_point_unit(2.0, 2**38)
