"""The walk along a public line reads the utility from a table: against the exact walk."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import is_regressor
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.linear_model import (HuberRegressor, LogisticRegression, PoissonRegressor,
                                  Ridge, SGDClassifier, SGDRegressor, TweedieRegressor)

from skdpval import DPDataValuator

from skdpval.kernels import _line, _losses, _subspace_problem
from skdpval.privacy._release import release_stream


def _softplus(x):
    return np.logaddexp(0.0, x)


def test_logistic_table_is_within_its_bound_everywhere():
    rng = np.random.default_rng(0)
    c, t = rng.normal(0, 2, 50), rng.choice([-1.0, 1.0], 50)
    line = _line.line_utility(c, t, _losses.LOGISTIC, _losses.NEG_LOSS, 1.0, (-3.0, 5.0))
    assert line.kind == _line.HERMITE
    z = np.linspace(-3.0, 5.0, 20001)
    exact = -np.mean(_softplus(-np.multiply.outer(z, t * c)), axis=1)
    tabulated = np.array([_line._hermite(line.kind, line.lo, line.inv_h, line.table, line.s_val, v, None, 0.0)
                          for v in z])
    assert np.max(np.abs(tabulated - exact)) <= _line.LINE_TOLERANCE + 1e-15
    # the interpolant is not the exact function: the table does the work
    far = _line._hermite(line.kind, line.lo, line.inv_h, line.table, line.s_val, 40.0, None, 0.0)
    assert far == pytest.approx(-np.mean(_softplus(-40.0 * t * c)), rel=1e-13)


@pytest.mark.parametrize("power", [1.0, 1.5, 2.0])
def test_tweedie_table_is_within_its_bound(power):
    """The half Tweedie deviance (log link) against a long-double reference,
    inside the table (within LINE_TOLERANCE plus rounding) and past it."""
    rng = np.random.default_rng(0)
    c, t = rng.normal(0.0, 0.5, 80), rng.gamma(2.0, 1.0, 80)
    line = _line.line_utility(c, t, _losses.TWEEDIE, _losses.NEG_LOSS, 1.0, (-2.0, 3.0),
                              loss_param=power)
    assert line.kind == _line.HERMITE_TWEEDIE and line.table.shape[0] > 10
    z = np.concatenate([np.linspace(-2.0, 3.0, 4001), [-9.0, 7.0]])
    m = np.multiply.outer(z.astype(np.longdouble), c.astype(np.longdouble))
    target = t.astype(np.longdouble)
    if power == 1.0:
        f = np.exp(m) - target * m
    elif power == 2.0:
        f = m + target * np.exp(-m)
    else:
        f = (np.exp((2 - power) * m) / (2 - power)
             - target * np.exp((1 - power) * m) / (1 - power))
    exact = -np.mean(f, axis=1).astype(np.float64)
    tabulated = np.array([_line.line_value(line.kind, line.lo, line.inv_h, line.table,
                                           line.quad, line.s_val, v, None, 0.0) for v in z])
    u = 2.0**-53
    bound = _line.LINE_TOLERANCE + 8 * u * (np.abs(exact) + (np.abs(z - line.lo) + np.abs(z))
                                            * np.mean(np.abs(c) * (np.exp(np.abs(c) * 9) + t)))
    assert np.all(np.abs(tabulated - exact) <= bound)


@pytest.mark.parametrize("z_range", [(-3.0, 5.0), (-50.0, 50.0), (-5000.0, 5000.0)])
def test_logistic_table_is_within_its_bound_with_its_rounding(z_range):
    """Against a long-double reference, over tables of up to 2^16 intervals:
    within LINE_TOLERANCE plus the documented rounding of reading z (the
    point read is within about 5 u (|z - lo| + |z|) of z, u = 2^-53; |U'| <=
    mean |s|) and of the value (ulps of |U|)."""
    rng = np.random.default_rng(0)
    c, t = rng.normal(0, 1, 150), rng.choice([-1.0, 1.0], 150)
    s = t * c
    line = _line.line_utility(c, t, _losses.LOGISTIC, _losses.NEG_LOSS, 1.0, z_range)
    width = line.table.shape[0] / line.inv_h
    z = line.lo + width * rng.uniform(0.0, 1.0, 2000)
    margins = -np.multiply.outer(z.astype(np.longdouble), s.astype(np.longdouble))
    exact = -np.mean(np.logaddexp(np.longdouble(0.0), margins), axis=1)
    tabulated = np.array([_line._hermite(line.kind, line.lo, line.inv_h, line.table,
                                         line.s_val, v, None, 0.0) for v in z])
    u = 2.0**-53
    rounding = 8 * u * ((np.abs(z - line.lo) + np.abs(z)) * np.mean(np.abs(s))
                        + np.abs(exact.astype(np.float64)))
    assert np.all(np.abs(tabulated - exact) <= _line.LINE_TOLERANCE + rounding)


@pytest.mark.parametrize("utility", [_losses.NEG_LOSS, _losses.NEG_MSE, _losses.R2])
def test_squared_error_is_an_exact_quadratic(utility):
    rng = np.random.default_rng(1)
    c, t = rng.normal(size=30), rng.normal(size=30)
    tss = float(np.sum((t - t.mean()) ** 2))
    line = _line.line_utility(c, t, _losses.SQUARED, utility, tss, (-1.0, 1.0))
    for z in (-3.0, 0.0, 0.7, 12.0):
        sse = np.sum((z * c - t) ** 2)
        expected = {_losses.NEG_LOSS: -0.5 * sse / 30, _losses.NEG_MSE: -sse / 30,
                    _losses.R2: 1 - sse / tss}[utility]
        value = _line.line_value(line.kind, line.lo, line.inv_h, line.table,
                                  line.quad, line.s_val, z, None, 0.0)
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_multinomial_table_is_within_its_bound_everywhere():
    rng = np.random.default_rng(2)
    c = rng.normal(0, 1.5, (40, 4))
    y = rng.integers(0, 4, 40)
    line = _line.line_utility(c, np.eye(4)[y], _losses.MULTINOMIAL, _losses.NEG_LOSS, 1.0,
                              (-2.0, 3.0))
    assert line.kind == _line.HERMITE_MULTINOMIAL
    z = np.linspace(-2.0, 3.0, 5001)
    margins = np.multiply.outer(z, c)  # (z, rows, classes)
    exact = -np.mean(np.logaddexp.reduce(margins, axis=2)
                     - margins[:, np.arange(40), y], axis=1)
    tabulated = np.array([_line._hermite(line.kind, line.lo, line.inv_h, line.table,
                                         line.s_val, v, None, 0.0) for v in z])
    assert np.max(np.abs(tabulated - exact)) <= _line.LINE_TOLERANCE + 1e-15
    far = _line._hermite(line.kind, line.lo, line.inv_h, line.table, line.s_val, 30.0, None, 0.0)
    margins = 30.0 * c
    assert far == pytest.approx(-np.mean(np.logaddexp.reduce(margins, axis=1)
                                         - margins[np.arange(40), y]), rel=1e-13)


def test_other_losses_and_utilities_have_no_table():
    c, t = np.ones(4), np.ones(4)
    assert _line.line_utility(c, t, _losses.LOGISTIC, _losses.ACCURACY, 1.0, (-1, 1)) is None
    # a Tweedie table whose derivative bound overflows over the range
    assert _line.line_utility(c, t, _losses.TWEEDIE, _losses.NEG_LOSS, 1.0, (-1e3, 1e3),
                              loss_param=1.5) is None
    # a log link's prediction exp(m) makes neg_mse no quadratic
    assert _line.line_utility(c, t, _losses.TWEEDIE, _losses.NEG_MSE, 1.0, (-1, 1), loss_param=1.5) is None


PIECEWISE_LOSSES = {"hinge": (_losses.HINGE, 0.0), "squared_hinge": (_losses.SQUARED_HINGE, 0.0),
                    "modified_huber": (_losses.MODIFIED_HUBER, 0.0),
                    "perceptron": (_losses.PERCEPTRON, 0.0), "huber": (_losses.HUBER, 0.7),
                    "epsilon_insensitive": (_losses.EPSILON_INSENSITIVE, 0.3),
                    "squared_epsilon_insensitive": (_losses.SQUARED_EPSILON_INSENSITIVE, 0.3),
                    "pinball": (_losses.PINBALL, 0.3)}


@pytest.mark.parametrize("name", sorted(PIECEWISE_LOSSES))
def test_a_piecewise_loss_is_tabulated_exactly(name):
    """Against tests/reference.py's losses at random z, at every kink and
    beside it, and far out: the sum of quadratics between kinks is exact up
    to rounding, everywhere (no range)."""
    from reference import loss_and_dloss

    loss, param = PIECEWISE_LOSSES[name]
    rng = np.random.default_rng(0)
    c = rng.normal(0.0, 1.0, 60)
    c[:3] = 0.0  # rows the line does not move
    classification = name in ("hinge", "squared_hinge", "modified_huber", "perceptron")
    t = rng.choice([-1.0, 1.0], 60) if classification else rng.normal(0.0, 1.0, 60)
    line = _line.line_utility(c, t, loss, _losses.NEG_LOSS, 1.0, (-1.0, 1.0), loss_param=param)
    assert line.kind == _line.PIECEWISE
    kinks = line.s_val[:, 0]
    z = np.concatenate([rng.normal(0.0, 3.0, 200), kinks, np.nextafter(kinks, np.inf),
                        np.nextafter(kinks, -np.inf), [-1e3, 1e3]])
    for v in z:
        exact = -loss_and_dloss(name, v * c, t, param)[0] / len(c)
        tabulated = _line.line_value(line.kind, line.lo, line.inv_h, line.table,
                                     line.quad, line.s_val, v, None, 0.0)
        assert tabulated == pytest.approx(exact, rel=1e-13, abs=1e-14 * (1 + v * v))
    # a change within one quadratic is computed from the step
    a, b = 0.5 * (kinks[10] + kinks[11]), 0.6 * kinks[10] + 0.4 * kinks[11]
    change, _ = _line.line_change(line.kind, line.lo, line.inv_h, line.table, line.quad,
                                  line.s_val, a, b, 0.0, None, 0.0)
    exact_change = -(loss_and_dloss(name, b * c, t, param)[0]
                     - loss_and_dloss(name, a * c, t, param)[0]) / len(c)
    assert change == pytest.approx(exact_change, rel=1e-9, abs=1e-16)


def _data(kind):
    if kind == "multinomial":
        X, y = load_digits(n_class=4, return_X_y=True)
        return LogisticRegression(), X[:150], y[:150], X[500:620], y[500:620]
    if kind == "logistic":
        X, y = load_breast_cancer(return_X_y=True)
        return LogisticRegression(), X[:120], y[:120], X[400:480], y[400:480]
    if kind == "hinge":
        X, y = load_breast_cancer(return_X_y=True)
        return SGDClassifier(loss="hinge"), X[:120], y[:120], X[400:480], y[400:480]
    X, y = load_diabetes(return_X_y=True)
    model = {"huber": HuberRegressor(), "poisson": PoissonRegressor(),
             "tweedie": TweedieRegressor(power=1.5)}.get(kind, Ridge())
    return model, X[:120], y[:120], X[300:380], y[300:380]


@pytest.mark.parametrize("kind", ["logistic", "squared", "multinomial", "hinge", "huber",
                                  "poisson", "tweedie"])
@pytest.mark.parametrize("settings", [
    dict(epsilon=3.0), dict(noise="none"), dict(noise="iid", epsilon=1.0),
    dict(noise="none", learning_rate=5.0)])  # far past the table: exact fallback
def test_line_walk_equals_the_exact_walk(kind, settings, monkeypatch):
    estimator, X, y, X_val, y_val = _data(kind)
    kw = dict(n_permutations=40, random_state=0, noise_seed=2, **settings)
    fast = DPDataValuator(estimator, **kw).fit(X, y, X_val=X_val, y_val=y_val)
    monkeypatch.setattr(_subspace_problem._line, "line_utility", lambda *a, **k: None)
    exact = DPDataValuator(estimator, **kw).fit(X, y, X_val=X_val, y_val=y_val)
    # the documented bound: 2 * LINE_TOLERANCE * max |weight|, plus rounding
    # (of the utilities, and of values that a diverged walk, learning_rate=5
    # on a log link, takes to 1e151)
    bound = (2 * _line.LINE_TOLERANCE + 1e-15 * np.max(np.abs(exact.final_utilities_))
             + 1e-13 * np.max(np.abs(exact.values_)))
    assert np.any(exact.values_ != 0)
    assert_allclose(fast.values_, exact.values_, rtol=0, atol=bound)
    assert_allclose(fast.final_utilities_, exact.final_utilities_, rtol=1e-12)


def test_the_table_is_used_only_where_it_applies(monkeypatch):
    estimator, X, y, X_val, y_val = _data("squared")
    calls = []
    run = _subspace_problem._run_line_walk
    monkeypatch.setattr(_subspace_problem, "_run_line_walk",
                        lambda *a: calls.append(1) or run(*a))
    kw = dict(n_permutations=3, noise="none", random_state=0)
    for model, subspace, expect, utility in [
            (Ridge(), "public", True, "neg_loss"),
            (LogisticRegression(), "public", True, "neg_loss"),
            (SGDRegressor(loss="huber"), "public", True, "neg_loss"),
            (LogisticRegression(), "public", False, "accuracy"),
            (Ridge(), None, False, "neg_loss")]:
        calls.clear()
        target = y if is_regressor(model) else (y > 140)
        target_val = y_val if is_regressor(model) else (y_val > 140)
        val = DPDataValuator(model, subspace=subspace, utility=utility, **kw)
        val.fit(X, target, X_val=X_val, y_val=target_val)
        assert bool(calls) == expect, (model, subspace)


@pytest.mark.parametrize("privacy_unit", ["record", "group"])
def test_line_walk_equals_the_exact_walk_with_groups(privacy_unit, monkeypatch):
    estimator, X, y, X_val, y_val = _data("logistic")
    groups = np.arange(len(X)) % 12
    kw = dict(n_permutations=30, random_state=0, noise_seed=4, epsilon=3.0,
              privacy_unit=privacy_unit)
    fast = DPDataValuator(estimator, **kw).fit(X, y, X_val=X_val, y_val=y_val,
                                               groups=groups)
    monkeypatch.setattr(_subspace_problem._line, "line_utility", lambda *a, **k: None)
    exact = DPDataValuator(estimator, **kw).fit(X, y, X_val=X_val, y_val=y_val,
                                                groups=groups)
    assert np.any(exact.values_ != 0)
    assert_allclose(fast.values_, exact.values_, rtol=0,
                    atol=2 * _line.LINE_TOLERANCE + 1e-15)


@pytest.mark.parametrize("l1", [0.0, 0.05])
@pytest.mark.parametrize("loss", ["logistic", "squared", "hinge"])
def test_scalar_step_equals_the_general_one(loss, l1):
    """One row a party along one direction, each step's gradient is computed
    in scalars; at record level (one record a party: the same releases) it
    takes the general loops. The two walks agree to the last bit."""
    from test_kernels import LOSS_CODES, make_data

    X, T, X_val, T_val, labels = make_data(loss, n=40, seed=5)
    n, k = len(X), 8
    rng = np.random.default_rng(6)
    basis = rng.normal(size=(1, X.shape[1]))
    basis /= np.linalg.norm(basis)
    permutations = np.array([rng.permutation(n) for _ in range(k)])
    noise = rng.integers(-40, 40, size=(k, n, 1)).astype(float)
    results = []
    for record_level in (False, True):
        problem = _subspace_problem.make_subspace_problem(
            basis, X, T, np.arange(n + 1), X_val, T_val, labels,
            loss=LOSS_CODES[loss], utility=_losses.NEG_LOSS, loss_param=0.0, l2=0.1,
            n_penalized=X.shape[1] - 1, clip_norm=0.3, learning_rate=0.2,
            total_sum_squares=1.0, weights=np.ones(n), record_level=record_level, l1=l1)
        results.append(problem.walk(permutations,
                                    release_stream(noise.copy(), (0.3 / 64, 64.0)),
                                    1.0 / np.arange(1, k + 1), np.zeros((n, 1))))
    (scalar, scalar_end), (general, general_end) = results
    assert np.any(scalar != 0)
    np.testing.assert_array_equal(scalar, general)
    np.testing.assert_array_equal(scalar_end, general_end)
