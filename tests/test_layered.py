"""LayeredShapleyValuator: exact on exhaustive layers, the Laplace scale, bad input."""

import itertools
from math import comb

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV, Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdpval import LayeredShapleyValuator
from skdpval.valuation._layers import (
    inclusion_probability,
    appendix_d_sensitivity,
    layer_sizes,
    layered_estimate,
    sample_layers,
)


# validation_fraction=0.5: the class set comes from the held-out labels, and
# the checks' small data sets need both classes among them.
@parametrize_with_checks([LayeredShapleyValuator(alpha=0.9, beta=0.5,
                                                validation_fraction=0.5, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_exhaustive_layers_give_the_exact_shapley_value():
    rng = np.random.default_rng(0)
    n, d, lam = 5, 2, 0.5
    X = rng.random((n, d))
    y = np.array([0, 1, 0, 1, 1])
    X_val, y_val = rng.random((20, d)), rng.integers(2, size=20)
    valuator = LayeredShapleyValuator(LogisticRegression(C=1 / (2 * lam * n)), c=1e4,
                                      skip_below_baseline=False, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)

    # v(S), from an independent solver: mean log loss + lam |w|^2, intercept
    # as a penalised feature; v = negative validation log loss.
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    signs = lambda labels: np.where(labels == 1, 1.0, -1.0)

    def v(S):
        w = np.zeros(d + 1)
        if S:
            rows = list(S)
            objective = lambda w: (np.mean(np.logaddexp(0, -signs(y[rows]) * (ones(X[rows]) @ w)))
                                   + lam * w @ w)
            w = minimize(objective, w, method="BFGS", options=dict(gtol=1e-11)).x
        return -np.mean(np.logaddexp(0, -signs(y_val) * (ones(X_val) @ w)))

    exact = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            for S in itertools.combinations(others, size):
                exact[i] += (v(S + (i,)) - v(S)) / (n * comb(n - 1, size))
    assert_allclose(valuator.values_, exact, rtol=1e-6, atol=1e-9)
    assert np.ptp(exact) > 1e-3


def test_laplace_sensitivity_by_hand():
    # n = 10, L = 1, kappa = 2, lambda = 0.5: sensitivity =
    # 1 * 4 / (10 * 0.5) * H_9 = 0.8 * 2.828968 = 2.263175 (the mechanism's
    # Laplace scale is it over epsilon, on its grid).
    sensitivity = appendix_d_sensitivity(10, 1.0, 2.0, 0.5)
    assert sensitivity == pytest.approx(2.263175, rel=1e-6)


def test_inclusion_probability_is_the_samplers_own():
    """Theorem 3.4's ln(n)/n bound understates how often the sampler uses a point."""
    n, alpha, beta, c = 20, 0.5, 0.05, 0.3
    m, w = layer_sizes(n, alpha, beta, c)
    rng = np.random.default_rng(0)
    others = np.arange(1, n)
    draws = 4000
    hits = sum(any(1 in C for layer in sample_layers(others, m, w, rng) for C in layer)
               for _ in range(draws))
    p = inclusion_probability(n, m, w)
    assert abs(hits / draws - p) < 3 * np.sqrt(p * (1 - p) / draws)
    theorem_3_4 = c**2 * np.log(n) / (2 * alpha**2 * n) * np.log(2 * n / beta)
    assert theorem_3_4 < 0.92 * p
    # Exhaustive layers use every point.
    assert inclusion_probability(6, *layer_sizes(6, 0.05, 0.05, 1.0)) == 1.0


def test_appendix_d_bound_holds_for_every_draw():
    """Each layer is a mean over the coalitions drawn (item 8b).

    With every gain at its stability bound ``g_k`` (the most a changed point
    can move a coalition's gain), the estimate is at most ``sum_k g_k / n``
    for every draw. Dividing by the *expected* number of coalitions, as the
    paper does, exceeds it whenever more coalitions are drawn than expected.
    """
    n, alpha = 300, 0.05
    m, w = layer_sizes(n, alpha, 0.05, 1.0)
    bound = lambda C: 1.0 / max(len(C), 1)
    limit = sum(bound(range(k)) for k in range(n)) / n
    rng = np.random.default_rng(0)
    estimates, expected_normalised = [], []
    for _ in range(30):
        layers = sample_layers(np.arange(1, n), m, w, rng)
        estimates.append(layered_estimate(layers, bound, n))
        expected = np.r_[1.0, np.minimum(m, w)]
        expected_normalised.append(sum(len(layer) * bound(range(k)) / expected[k]
                                       for k, layer in enumerate(layers)) / n)
    assert max(estimates) <= limit * (1 + 1e-12)
    assert max(expected_normalised) > limit


@pytest.fixture(scope="module")
def unit_data():
    rng = np.random.default_rng(1)
    X = rng.random((40, 3))
    y = (X[:, 0] + 0.2 * rng.normal(size=40) > 0.5).astype(int)
    return X, y


def test_private_values_reproducible_and_parallel_invariant(unit_data):
    X, y = unit_data
    make = lambda n_jobs: LayeredShapleyValuator(alpha=0.3, epsilon=1.0, n_jobs=n_jobs,
                                                 random_state=0, noise_seed=0).fit(X, y)
    one, two = make(1), make(2)
    assert_allclose(one.values_, two.values_, rtol=0, atol=0)
    assert one.noise_scale_ == pytest.approx(one.privacy_report_["parts"][0]["noise_scale"])
    assert np.isnan(one.values_).sum() == 8
    assert np.all(one.n_coalitions_[~np.isnan(one.values_)] > 0)


def test_report_covers_the_others_values_zero_out_and_replace_one(unit_data):
    """(n-1) eps from the others' values; replace-one doubles the sensitivity."""
    X, y = unit_data
    valuator = LayeredShapleyValuator(alpha=0.3, epsilon=0.5, random_state=0).fit(X, y)
    report = valuator.privacy_report_
    assert valuator.epsilon_ == report["epsilon"] == pytest.approx(31 * 0.5)
    assert report["epsilon_replace_one"] == pytest.approx(31 * 1.0)
    assert report["delta"] == valuator.delta_ == 0.0
    (values,) = report["parts"]
    assert values["n_releases"] == 31 == valuator.n_releases_
    assert values["epsilon_replace_one"] == pytest.approx(1.0)
    assert "n-1 = 31" in report["details"]["composition"]
    assert any("own value" in leak for leak in report["leaks"])
    assert not report["private"]
    assert "zero-out" in report["details"]["adjacency"]
    assert "8 samples held out" in report["validation_set"]
    assert report["details"]["amplification"].startswith("none")
    # On the grid gamma = sensitivity / 2**8 a value's rounded sensitivity is
    # 2**8 + 1 steps: the discrete Laplace has scale 257 gamma / epsilon.
    assert valuator.noise_scale_ == pytest.approx(
        values["sensitivity"] / 256 * 257 / 0.5, rel=1e-12)
    assert valuator.noise_multiplier_ == pytest.approx(257 / 256 / 0.5, rel=1e-12)


def test_laplace_noise_is_secret_and_drawn_at_the_reported_scale(unit_data, monkeypatch):
    import skdpval.privacy._mechanism as layered_module  # the Laplace draws

    X, y = unit_data
    fit = lambda **params: LayeredShapleyValuator(
        alpha=0.3, epsilon=1.0, random_state=0, **params).fit(X, y).values_
    # A known random_state does not fix the noise: it comes from OS entropy.
    assert not np.array_equal(fit(), fit())
    assert_array_equal(fit(noise_seed=4), fit(noise_seed=4))
    drawn = []
    original = layered_module.laplace_noise
    monkeypatch.setattr(layered_module, "laplace_noise", lambda key, kind, scale, size:
                        drawn.append(original(key, kind, scale, size)) or drawn[-1])
    valuator = LayeredShapleyValuator(alpha=0.3, epsilon=1.0, random_state=0).fit(X, y)
    assert len(drawn) == 1 and drawn[0].shape == (32,)
    assert drawn[0].dtype == np.int64
    assert "entropy" in valuator.privacy_report_["noise_source"]
    # The release is gamma (rint(value / gamma) + x): within gamma / 2 of
    # value + gamma x, gamma = sensitivity / 2**8.
    gamma = valuator.privacy_report_["sensitivity"] / 256
    kept = ~np.isnan(valuator.values_)
    exact = LayeredShapleyValuator(alpha=0.3, random_state=0).fit(X, y).values_[kept]
    assert_allclose(valuator.values_[kept] - exact, gamma * drawn[0],
                    atol=gamma / 2 * (1 + 1e-9))


def test_classes_and_split_never_read_the_training_labels(unit_data):
    X, y = unit_data
    make = lambda labels, **params: LayeredShapleyValuator(
        alpha=0.3, random_state=0, **params).fit(X, labels)
    base = make(y)
    held_out = np.isnan(base.values_)
    # Flipping a training label moves no point in or out of the validation set.
    flipped = y.copy()
    flipped[np.flatnonzero(~held_out)[0]] ^= 1
    assert_array_equal(np.isnan(make(flipped).values_), held_out)
    # A training label outside the public class set is an error, not a class.
    relabelled = y.copy()
    relabelled[np.flatnonzero(~held_out)[0]] = 7
    with pytest.raises(ValueError, match="classes=\\[...\\]"):
        make(relabelled)
    assert_array_equal(base.classes_, [0, 1])
    assert_array_equal(make(np.where(y == 1, "b", "a"), classes=["a", "b"]).classes_,
                       ["a", "b"])


@pytest.mark.parametrize("given_validation", [True, False])
def test_private_values_outside_the_unit_box_are_clipped_silently(unit_data,
                                                                  given_validation):
    """With epsilon, the private X is clipped to [0, 1]: no error, no warning
    (either would tell a private value without noise), the values of the
    clipped data; held-out validation rows of X are clipped too."""
    import warnings

    X, y = unit_data
    X_out = X.copy()
    X_out[3] = [1.7, -0.4, 0.5]
    X_out[10, 2] = -3.0
    X_out[20, 0] = 25.0
    copy = X_out.copy()
    X_val, y_val = np.random.default_rng(2).random((30, 3)), np.tile([0, 1], 15)
    extra = dict(X_val=X_val, y_val=y_val) if given_validation else {}
    make = lambda **params: LayeredShapleyValuator(alpha=0.3, random_state=0,
                                                   noise_seed=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("error" if given_validation else "ignore")
        # (not the warning that the noise dwarfs the values: about epsilon)
        warnings.filterwarnings("ignore", message=".*(Laplace noise scale|noise_seed)")
        outside = make(epsilon=1.0).fit(X_out, y, **extra)
    clipped = make(epsilon=1.0).fit(np.clip(X_out, 0, 1), y, **extra)
    assert_allclose(outside.values_, clipped.values_, rtol=0, atol=1e-12)
    assert_array_equal(X_out, copy)  # the caller's array is left alone
    assert "clipped to [0, 1]" in outside.privacy_report_["details"]["assumptions"]
    # The clip matters: the unclipped rows give other values.
    unclipped = make().fit(X_out, y, **extra).values_ - make().fit(
        np.clip(X_out, 0, 1), y, **extra).values_
    assert np.nanmax(np.abs(unclipped)) > 1e-4


def test_kappa_is_enforced_by_scaling_rows_down(unit_data):
    """A small kappa gives the values of rows pre-projected to |(x, 1)| <= kappa,
    training and validation rows alike (the stability bound holds the
    validation loss to kappa too)."""
    X, y = unit_data
    X_val, y_val = np.random.default_rng(2).random((30, 3)), np.tile([0, 1], 15)
    kappa = 1.2

    def projected(A):
        norms = np.sqrt(np.sum(A**2, axis=1))
        return A * np.minimum(1.0, np.sqrt(kappa**2 - 1) / norms)[:, None]

    assert np.mean(np.linalg.norm(np.c_[X, np.ones(len(X))], axis=1) > kappa) > 0.9
    # epsilon so large that the noise is negligible: the private fit must be
    # the non-private one (which never projects) on the projected rows.
    private = LayeredShapleyValuator(alpha=0.3, epsilon=1e15, kappa=kappa,
                                     random_state=0, noise_seed=0).fit(
        X, y, X_val=X_val, y_val=y_val)
    assert private.noise_scale_ < 1e-12
    fit = lambda A, A_val: LayeredShapleyValuator(alpha=0.3, random_state=0).fit(
        A, y, X_val=A_val, y_val=y_val).values_
    # Equal up to the grid's rounding (gamma / 2, gamma = sensitivity / 2**40:
    # the grid is 2**8 times finer than the noise, down to 2**-40).
    step = private.privacy_report_["sensitivity"] / 2**40
    assert step < 1e-10
    assert_allclose(private.values_, fit(projected(X), projected(X_val)),
                    rtol=1e-9, atol=step / 2 * (1 + 1e-9))
    assert np.max(np.abs(fit(X, projected(X_val)) - fit(projected(X), projected(X_val)))) > 1e-4
    assert np.max(np.abs(fit(projected(X), X_val) - fit(projected(X), projected(X_val)))) > 1e-4
    # kappa="auto" = sqrt(d + 1) changes nothing for rows in [0, 1].
    auto = LayeredShapleyValuator(alpha=0.3, epsilon=1e15, random_state=0,
                                  noise_seed=0).fit(X, y, X_val=X_val, y_val=y_val)
    assert_allclose(auto.values_, fit(X, X_val), rtol=1e-9, atol=step / 2 * (1 + 1e-9))


@pytest.mark.parametrize("make, fit_args, match", [
    # X_val is public: outside [0, 1] it is an error (the private X is clipped).
    (lambda: LayeredShapleyValuator(epsilon=1.0), dict(X_val_shift=2.0),
     "X_val must lie in \\[0, 1\\]"),
    (lambda: LayeredShapleyValuator(epsilon=1.0), dict(X_val_shift=-0.5),
     "X_val must lie in \\[0, 1\\]"),
    # The log loss is 1-Lipschitz; (x, 1) has norm >= 1.
    (lambda: LayeredShapleyValuator(lipschitz=0.5), {},
     "'lipschitz' parameter .* range \\[1.0, inf\\)"),
    (lambda: LayeredShapleyValuator(kappa=1.0), {}, "'kappa' parameter .* range \\(1.0, inf\\)"),
    (lambda: LayeredShapleyValuator(kappa=0.001), {},
     "'kappa' parameter .* range \\(1.0, inf\\)"),
    (lambda: LayeredShapleyValuator(Ridge()), {}, "LogisticRegression only"),
    (lambda: LayeredShapleyValuator(LogisticRegression(l1_ratio=1.0)), {}, "L2 penalty"),
    (lambda: LayeredShapleyValuator(LogisticRegressionCV()), {}, "LogisticRegression only"),
    (lambda: LayeredShapleyValuator(LogisticRegression(class_weight="balanced")), {},
     "class_weight='balanced'"),
    (lambda: LayeredShapleyValuator(LogisticRegression(fit_intercept=False)), {},
     "fit_intercept=False"),
    (lambda: LayeredShapleyValuator(alpha=0.0), {}, "'alpha'"),
    (lambda: LayeredShapleyValuator(classes=[0, 1, 2]), {}, "binary"),
    (lambda: LayeredShapleyValuator(), dict(X_val_only=True), "together"),
])
def test_bad_input(unit_data, make, fit_args, match):
    X, y = unit_data
    extra = {"X_val": X[:5]} if fit_args.get("X_val_only") else {}
    if "X_val_shift" in fit_args:
        extra = {"X_val": X[:5] + fit_args["X_val_shift"], "y_val": y[:5]}
    with pytest.raises((ValueError, TypeError), match=match):
        make().fit(X, y, **extra)


def test_removing_high_layered_values_hurts_more_than_random():
    """breast_cancer, n = 100 (the paper's App. E), features min-max scaled."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import MinMaxScaler

    from skdpval.metrics import removal_curve

    X, y = load_breast_cancer(return_X_y=True)
    X = MinMaxScaler().fit_transform(X)
    gaps = []
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(y))
        train, val, test = order[:100], order[100:300], order[300:]
        valuator = LayeredShapleyValuator(alpha=0.15, n_jobs=2, random_state=0)
        valuator.fit(X[train], y[train], X_val=X[val], y_val=y[val])
        args = (X[train], y[train], X[test], y[test], valuator.values_,
                LogisticRegression(), [0.2])
        high = removal_curve(*args, order="high")[0]
        random = np.mean([removal_curve(*args, order="random", random_state=s)[0]
                          for s in range(20)])
        gaps.append(random - high)
    assert np.mean(gaps) > 0.02, gaps


def test_a_refit_without_noise_reports_no_noise(unit_data):
    X, y = unit_data
    valuator = LayeredShapleyValuator(alpha=0.5, beta=0.5, epsilon=1.0, random_state=0)
    valuator.fit(X, y)
    assert valuator.privacy_report_["parts"] and hasattr(valuator, "noise_scale_")
    valuator.set_params(epsilon=np.inf).fit(X, y)
    assert valuator.privacy_report_["parts"] == []
    assert valuator.epsilon_ == np.inf and not valuator.privacy_report_["private"]
    assert not hasattr(valuator, "noise_scale_")


@pytest.mark.parametrize("params, match", [
    (dict(c=1e300), "c=1e\\+300 .* overflow"),
    (dict(epsilon=1.0, kappa=1e300), "Laplace scale of inf"),
    (dict(epsilon=1.0, lipschitz=1e300), "Laplace scale of inf"),
])
def test_parameters_that_overflow_are_named(unit_data, params, match):
    X, y = unit_data
    with pytest.raises(ValueError, match=match):
        LayeredShapleyValuator(**params).fit(X, y)
