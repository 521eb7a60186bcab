"""The walk in a public subspace, DPLabelQuality and the noisy-label limit."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import norm
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.linear_model import (
    LogisticRegression,
    Ridge,
    RidgeClassifier,
    SGDClassifier,
    SGDRegressor,
)
from sklearn.metrics import roc_auc_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import skdpval.privacy._mechanism as mechanism_module
from helpers import FixedDraws
from reference import algorithm1, loss_and_dloss
from skdpval import DPDataValuator, DPLabelQuality
from skdpval.kernels import _subspace_problem
from skdpval.privacy._release import release_stream
from skdpval.privacy._accounting import gdp_mu
from skdpval.valuation._semivalues import semivalue_weights
from skdpval.walks._runner import run_walks
from skdpval.datasets import flip_labels
from skdpval.metrics import detection_auc_limit, noisy_label_auc
from test_kernels import (
    LOSS_CODES,
    UTILITY_CODES,
    loss_param_of,
    make_data,
)


def orthonormal_rows(m, n_params, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(n_params, m)))
    return q.T


def run_both(loss, noise_mode, q, semivalue, *, m, n_outputs=None, k=5,
             utility_name="neg_loss", seed=0, n_jobs=None, l1=0.0, weighted=False):
    """The subspace kernel (through run_walks) and the reference, same draws."""
    X, T, X_val, T_val, labels = make_data(loss, n_outputs=n_outputs, seed=seed)
    n, n_columns = X.shape
    basis = orthonormal_rows(m, T.shape[1] * n_columns, seed + 2)
    rng = np.random.default_rng(seed + 1)
    permutations = np.array([rng.permutation(n) for _ in range(k)])
    noise = 0.7 * rng.normal(size=(k, n, m))
    t = np.arange(1, k + 1)
    x_tt = {"none": np.ones(k), "iid": np.ones(k), "correlated": 1.0 / t}[noise_mode]
    if noise_mode == "none":
        noise = np.zeros_like(noise)
    weights = semivalue_weights(semivalue, n)
    row_weights = rng.uniform(0.2, 3.0, size=n) if weighted else None
    common = dict(learning_rate=0.4, l2=0.1, n_penalized=n_columns - 1, clip_norm=0.8,
                  l1=l1, row_weights=row_weights)
    psi, end_ref = algorithm1(
        X, T, X_val, T_val, labels, loss=loss, utility_name=utility_name,
        permutations=permutations, noise=noise, x_tt=x_tt, q=q, weights=weights,
        loss_param=loss_param_of(loss), basis=basis, **common)
    tss = float(np.sum((T_val[:, 0] - T_val[:, 0].mean()) ** 2))
    problem = _subspace_problem.make_subspace_problem(
        basis, X, T, np.arange(n + 1), X_val, T_val, labels, loss=LOSS_CODES[loss],
        utility=UTILITY_CODES[utility_name], loss_param=loss_param_of(loss),
        total_sum_squares=tss, weights=weights, **common)
    result = run_walks(problem, FixedDraws(permutations,
                                           None if noise_mode == "none" else noise),
                       x_tt=x_tt, use_rolling=noise_mode == "correlated",
                       counted=t > q * k, batch_permutations=1, n_jobs=n_jobs)
    return psi, result.marginal_mean, end_ref, result.end_utility


@pytest.mark.parametrize("semivalue", ["shapley", ("beta", 4, 1)], ids=str)
@pytest.mark.parametrize("noise_mode, q", [("none", 0.0), ("iid", 0.0),
                                           ("correlated", 0.5)])
@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("loss", list(LOSS_CODES)[:7])
def test_projected_walk_matches_reference(loss, m, noise_mode, q, semivalue):
    psi, values, end_ref, end_kernel = run_both(loss, noise_mode, q, semivalue, m=m,
                                                n_jobs=2)
    assert np.any(psi != 0)
    assert_allclose(values, psi, rtol=1e-10, atol=1e-12)
    assert_allclose(end_kernel, end_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("weighted, l1", [(False, 0.05), (True, 0.0), (True, 0.05)])
@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("loss", list(LOSS_CODES))
def test_projected_walk_with_l1_and_row_weights_matches_reference(loss, m, l1,
                                                                  weighted):
    psi, values, end_ref, end_kernel = run_both(loss, "correlated", 0.0, "shapley",
                                                m=m, l1=l1, weighted=weighted)
    assert np.any(psi != 0)
    assert_allclose(values, psi, rtol=1e-10, atol=1e-12)
    assert_allclose(end_kernel, end_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss, utility_name, n_outputs", [
    ("logistic", "accuracy", 1), ("hinge", "neg_loss", 3),
    ("multinomial", "accuracy", 3), ("huber", "r2", 1),
])
def test_projected_walk_matches_reference_other_utilities(loss, utility_name,
                                                           n_outputs):
    psi, values, end_ref, end_kernel = run_both(
        loss, "correlated", 0.0, "shapley", m=2, n_outputs=n_outputs, k=6,
        utility_name=utility_name)
    assert_allclose(values, psi, rtol=1e-10, atol=1e-12)
    assert_allclose(end_kernel, end_ref, rtol=1e-10, atol=1e-12)


def _estimator_data(kind, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 3)) * [1.0, 5.0, 0.2] + [0.0, 3.0, -1.0]
    if kind == "regression":
        y = X @ [1.0, -0.5, 2.0] + rng.normal(size=50)
    elif kind == "multiclass":
        y = np.argmax(X @ rng.normal(size=(3, 3)) + rng.normal(size=(50, 3)), 1)
    else:
        y = (X[:, 0] + 0.3 * rng.normal(size=50) > 0).astype(int)
    return X[:35], y[:35], X[35:], y[35:]


@pytest.mark.parametrize("estimator, kind", [
    (LogisticRegression(C=0.5), "binary"),
    (LogisticRegression(), "multiclass"),
    (SGDClassifier(loss="hinge", alpha=0.01), "multiclass"),
    (RidgeClassifier(), "binary"),
    (Ridge(alpha=2.0), "regression"),
    (SGDRegressor(loss="huber"), "regression"),
])
@pytest.mark.parametrize("noise", ["none", "correlated"])
@pytest.mark.parametrize("grouped", [False, True])
def test_identity_basis_is_the_full_space_walk(estimator, kind, noise, grouped):
    """subspace=eye(n_params) runs the subspace kernel; it equals subspace=None."""
    X, y, X_val, y_val = _estimator_data(kind)
    groups = np.arange(len(X)) // 3 if grouped else None
    common = dict(noise=noise, n_permutations=6, batch_permutations=2,
                  epsilon=None if noise == "none" else 2.0,
                  classes=[0, 1, 2] if kind == "multiclass" else None,
                  random_state=0, noise_seed=1)
    full = DPDataValuator(estimator, subspace=None, **common).fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups)
    n_outputs = 3 if kind == "multiclass" else 1
    identity = np.eye(n_outputs * (X.shape[1] + 1))
    projected = DPDataValuator(estimator, subspace=identity, **common).fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups)
    assert np.any(full.values_ != 0)
    assert_allclose(projected.values_, full.values_, rtol=1e-12, atol=1e-12)
    assert_allclose(projected.final_utilities_, full.final_utilities_,
                    rtol=1e-12, atol=1e-12)
    assert projected.clip_norm_ == pytest.approx(full.clip_norm_, rel=1e-12)
    assert projected.learning_rate_ == pytest.approx(full.learning_rate_, rel=1e-12)


def test_projected_release_has_sensitivity_clip_norm():
    """Every release is at most C from a zeroed slot, and 2C from a replaced one.

    The worst case: a party whose projected gradient is far beyond the clip
    norm, against the same point with its label flipped (replace-one) or its
    slot releasing pure noise (zero-out).
    """
    rng = np.random.default_rng(0)
    n, d, C = 40, 4, 0.3
    X = np.hstack([rng.normal(size=(n, d)) * 10, np.ones((n, 1))])
    X[-1] = np.r_[50 * np.ones(d), 1.0]  # a huge row: its gradient is clipped
    y = rng.integers(2, size=n)
    T = np.where(y == 1, 1.0, -1.0)[:, None]
    basis = orthonormal_rows(2, d + 1, 3)

    def raw_releases(targets):
        problem = _subspace_problem.make_subspace_problem(
            basis, X, targets, np.arange(n + 1), X[:5], T[:5], y[:5],
            loss=LOSS_CODES["logistic"], utility=UTILITY_CODES["neg_loss"],
            loss_param=0.0, l2=0.0, n_penalized=d, clip_norm=C,
            learning_rate=0.0, total_sum_squares=1.0, weights=np.ones(n))
        releases = np.zeros((1, n, 2))  # zero noise: raw release = clipped g
        problem.walk(np.arange(n)[None], release_stream(releases), np.ones(1),
                     np.zeros((n, 2)))
        return releases[0]

    releases = raw_releases(T)
    norms = np.linalg.norm(releases, axis=1)
    assert np.all(norms <= C * (1 + 1e-12))
    assert norms[-1] == pytest.approx(C, rel=1e-12)  # the clip binds
    # Zero-out: the slot releases pure noise, 0 before noise: distance <= C.
    # Replace-one: the flipped label's release sits at distance 2C.
    flipped = raw_releases(-T)
    assert np.all(np.linalg.norm(releases - flipped, axis=1) <= 2 * C * (1 + 1e-12))
    assert np.linalg.norm(releases[-1] - flipped[-1]) == pytest.approx(2 * C, rel=1e-9)


def test_clip_norm_auto_is_a_percentile_of_projected_validation_gradients():
    X, y, X_val, y_val = _estimator_data("binary", seed=3)
    valuator = DPDataValuator(LogisticRegression(), n_permutations=2,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    Z = np.hstack([(X_val - mean) / std, np.ones((len(X_val), 1))])
    signs = np.where(y_val == 1, 1.0, -1.0)
    # At theta = 0: grad = dloss(0) x, projected on the unit direction.
    gradients = np.array([loss_and_dloss("logistic", [0.0], [t])[1][0] * z
                          for t, z in zip(signs, Z)])
    expected = np.percentile(np.abs(gradients @ valuator.subspace_[0]), 10)
    assert valuator.clip_norm_ == pytest.approx(expected, rel=1e-12)
    assert_allclose(np.linalg.norm(valuator.subspace_), 1.0)
    assert valuator.privacy_report_["clip_norm"] == valuator.clip_norm_


def test_public_direction_is_the_validation_fit():
    """The direction is the (normalised) minimiser of the model's validation objective."""
    X, y, X_val, y_val = _estimator_data("binary", seed=4)
    valuator = DPDataValuator(LogisticRegression(C=2.0), n_permutations=2,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    model = LogisticRegression(C=2.0, tol=1e-12, max_iter=10000).fit(
        (X_val - mean) / std, y_val)
    theta = np.r_[model.coef_[0], model.intercept_]
    assert_allclose(valuator.subspace_[0], theta / np.linalg.norm(theta), atol=1e-5)


@pytest.mark.parametrize("subspace, match", [
    (np.eye(3), "shape"), (np.ones((1, 4)), "orthonormal"),
    (np.full((1, 4), np.nan), "orthonormal"),
])
def test_bad_subspace_is_refused_before_the_walk(subspace, match, monkeypatch):
    def no_walk(*args, **kwargs):
        raise AssertionError("the walk ran on bad input")

    monkeypatch.setattr("skdpval.valuation._data_valuator.run_walks", no_walk)
    X, y, X_val, y_val = _estimator_data("binary")
    with pytest.raises(ValueError, match=match):
        DPDataValuator(subspace=subspace).fit(X, y, X_val=X_val, y_val=y_val)


def test_unscaled_features_still_find_flipped_labels():
    """Raw breast_cancer (features up to ~4000): standardize=True fixes the scale."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train, val = order[:400], order[400:]
    y_noisy, is_noisy = flip_labels(y[train], 0.3, random_state=0)
    valuator = DPDataValuator(noise="none", n_permutations=50, random_state=0)
    valuator.fit(X[train], y_noisy, X_val=X[val], y_val=y[val])
    assert noisy_label_auc(valuator.values_, is_noisy) >= 0.9


# --- the limit -------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, expected", [(1.0, 0.663), (3.0, 0.866),
                                               (10.0, 0.999)])
def test_detection_limit_is_phi_sqrt2_mu(epsilon, expected):
    limit = detection_auc_limit(epsilon, 5e-5)
    assert limit == pytest.approx(norm.cdf(np.sqrt(2) * gdp_mu(epsilon, 5e-5)),
                                  rel=1e-12)
    assert round(limit, 3) == expected


def test_ideal_mechanism_reaches_the_limit_and_no_further():
    """The ideal release (+C if clean, -C if flipped, N(0, (C/mu)^2) noise) has
    AUC Phi(sqrt(2) mu): a simulation, independent of the formula's code."""
    rng = np.random.default_rng(0)
    mu = gdp_mu(3.0, 5e-5)
    flipped = rng.random(400000) < 0.3
    release = np.where(flipped, -1.0, 1.0) + rng.normal(size=flipped.size) / mu
    auc = roc_auc_score(flipped, -release)
    assert auc == pytest.approx(detection_auc_limit(3.0, 5e-5), abs=3e-3)


def test_privacy_reports_give_the_limit():
    X, y, X_val, y_val = _estimator_data("binary")
    for estimator in (DPDataValuator(epsilon=3.0, n_permutations=3),
                      DPLabelQuality(epsilon=3.0)):
        estimator.fit(X, y, X_val=X_val, y_val=y_val)
        assert estimator.privacy_report_["max_noisy_label_auc"] == pytest.approx(
            detection_auc_limit(3.0, 5e-5), rel=1e-6)


# --- DPLabelQuality -------------------------------------------------------------

@parametrize_with_checks([
    # validation_fraction=0.5: the class set comes from the held-out labels.
    DPLabelQuality(validation_fraction=0.5, random_state=0),
    DPLabelQuality(Ridge(), epsilon=np.inf, validation_fraction=0.5, random_state=0),
])
def test_label_quality_sklearn_compatible(estimator, check):
    check(estimator)


def test_label_quality_noise_std_is_exactly_clip_over_mu(monkeypatch):
    X, y, X_val, y_val = _estimator_data("binary")
    stds = []
    original = mechanism_module.gaussian_noise

    def recording(key, kind, lo, hi, std, out):
        stds.append(std)
        return original(key, kind, lo, hi, std, out)

    monkeypatch.setattr(mechanism_module, "gaussian_noise", recording)
    scorer = DPLabelQuality(epsilon=2.0, delta=1e-5, clip=0.7).fit(
        X, y, X_val=X_val, y_val=y_val)
    # In grid units (gamma = clip / 64; one coordinate: no padding), mu at
    # delta net of the sampler's share (which moves it by under 1e-6).
    assert stds == [pytest.approx(64 / gdp_mu(2.0, 1e-5), rel=1e-6)]
    assert scorer.noise_multiplier_ == pytest.approx(1 / gdp_mu(2.0, 1e-5), rel=1e-6)


def test_label_quality_releases_the_clipped_margin_plus_calibrated_noise():
    """Over many fits, values_ minus the noiseless score has std clip / mu."""
    X, y, X_val, y_val = _estimator_data("binary")
    exact = DPLabelQuality(epsilon=np.inf, clip=0.5).fit(X, y, X_val=X_val,
                                                       y_val=y_val).values_
    model = LogisticRegression().fit((X_val - X_val.mean(0)) / X_val.std(0), y_val)
    margins = np.where(y == 1, 1, -1) * model.decision_function(
        (X - X_val.mean(0)) / X_val.std(0))
    assert_allclose(exact, np.clip(margins, -0.5, 0.5), rtol=1e-12)
    noise = np.array([DPLabelQuality(epsilon=1.0, clip=0.5, noise_seed=seed).fit(
        X, y, X_val=X_val, y_val=y_val).values_ - exact for seed in range(50)])
    std = 0.5 / gdp_mu(1.0, 5e-5)
    assert np.std(noise) == pytest.approx(std, rel=0.06)
    assert abs(np.mean(noise)) < 4 * std / np.sqrt(noise.size)  # unbiased


def test_label_quality_multiclass_regression_and_groups():
    X, y, _, _ = _estimator_data("multiclass")
    X_val, y_val = X[20:], y[20:]  # every class is among them
    assert set(y_val) == {0, 1, 2}
    scorer = DPLabelQuality(epsilon=np.inf, clip=2.0, classes=[0, 1, 2]).fit(
        X, y, X_val=X_val, y_val=y_val)
    scores = scorer.estimator_.decision_function((X - X_val.mean(0)) / X_val.std(0))
    own = scores[np.arange(len(y)), y]
    others = np.where(np.eye(3, dtype=bool)[y], -np.inf, scores).max(axis=1)
    assert_allclose(scorer.values_, np.clip(own - others, -2, 2), rtol=1e-12)

    X, y, X_val, y_val = _estimator_data("regression")
    groups = np.arange(len(X)) % 5
    scorer = DPLabelQuality(Ridge(), epsilon=np.inf, clip=1.5).fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups)
    scaled = (X - X_val.mean(0)) / X_val.std(0), (X_val - X_val.mean(0)) / X_val.std(0)
    residual = np.abs(y - scorer.estimator_.predict(scaled[0]))
    # in units of 3 root-mean-square residuals of the public model on X_val
    unit = 3 * np.sqrt(np.mean((y_val - scorer.estimator_.predict(scaled[1])) ** 2))
    expected = [-np.minimum(1.5 * residual[groups == g] / unit, 1.5).mean()
                for g in range(5)]
    assert_allclose(scorer.values_, expected, rtol=1e-12)
    assert_array_equal(scorer.sample_values_, scorer.values_[groups])
    assert scorer.privacy_report_["unit"] == "record"  # the default with groups


def test_label_quality_regressor_is_centred_with_sensitivity_half_clip():
    """Issue 22: a regressor's score lies in [-clip, 0]. Released centred, its
    zero-out sensitivity is clip / 2 and its replace-one sensitivity clip,
    shown by a worst-case pair (residual 0 against a residual past clip);
    the noise and both epsilons follow from them (analytic curve, here)."""
    from test_workflow import analytic_epsilon, analytic_mu

    X, y, X_val, y_val = _estimator_data("regression")
    clip, delta = 0.8, 1e-5
    scaled = (X - X_val.mean(0)) / X_val.std(0)
    prediction = DPLabelQuality(Ridge(), epsilon=np.inf, clip=clip).fit(
        X, y, X_val=X_val, y_val=y_val).estimator_.predict(scaled)
    good, bad = y.copy(), y.copy()
    good[0], bad[0] = prediction[0], prediction[0] + 10 * clip
    exact = [DPLabelQuality(Ridge(), epsilon=np.inf, clip=clip).fit(
        X, target, X_val=X_val, y_val=y_val).values_ for target in (good, bad)]
    released = [DPLabelQuality(Ridge(), epsilon=1.0, delta=delta, clip=clip,
                               noise_seed=3).fit(X, target, X_val=X_val, y_val=y_val)
                for target in (good, bad)]
    # The centred scores reach both ends of [-clip/2, clip/2]...
    assert exact[0][0] + clip / 2 == pytest.approx(clip / 2, abs=1e-9)
    assert exact[1][0] + clip / 2 == pytest.approx(-clip / 2, abs=1e-12)
    assert np.all(np.abs(np.concatenate(exact) + clip / 2) <= clip / 2)
    # ...so the pair's releases (same noise) differ by clip at party 0 only.
    difference = released[0].values_ - released[1].values_
    assert difference[0] == pytest.approx(clip, rel=1e-9)
    assert_array_equal(difference[1:], 0.0)
    report = released[0].privacy_report_
    noise_std = clip / 2 / analytic_mu(1.0, delta)
    assert report["sensitivity"] == clip / 2
    assert report["noise_std"] == pytest.approx(noise_std, rel=1e-6)
    assert report["epsilon"] == pytest.approx(1.0, rel=1e-6)
    assert report["epsilon_replace_one"] == pytest.approx(
        analytic_epsilon(difference[0] / noise_std, delta), rel=1e-6)
    assert released[0].noise_multiplier_ == pytest.approx(noise_std / (clip / 2))


def test_label_quality_finds_flipped_labels_and_works_in_a_filter():
    from skdpval import DPValueFilter

    X, y = make_classification(n_samples=400, n_features=8, random_state=0)
    y_noisy, is_noisy = flip_labels(y[:300], 0.2, random_state=0)
    scorer = DPLabelQuality(epsilon=np.inf).fit(X[:300], y_noisy, X_val=X[300:],
                                              y_val=y[300:])
    assert noisy_label_auc(scorer.values_, is_noisy) > 0.85
    sampler = DPValueFilter(DPLabelQuality(epsilon=3.0), drop_fraction=0.2)
    X_kept, _ = sampler.fit_resample(X[:300], y_noisy, X_val=X[300:], y_val=y[300:])
    assert len(X_kept) == 240
