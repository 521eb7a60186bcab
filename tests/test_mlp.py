"""The networks' kernels and walks (skdpval._mlp, skdpval._mlp_space)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier, MLPRegressor

from skdpval import _kernels as K
from skdpval import _mlp
import reference

ACTIVATIONS = ["identity", "logistic", "tanh", "relu"]
LOSSES = {"logistic": K.LOGISTIC, "multinomial": K.MULTINOMIAL, "squared": K.SQUARED}


def _problem(loss, hidden=(5, 3), n=7, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if loss == "logistic":
        T = rng.choice([-1.0, 1.0], size=(n, 1))
    elif loss == "multinomial":
        T = np.eye(3)[rng.integers(0, 3, n)]
    else:
        T = rng.normal(size=(n, 1))
    sizes = [d, *hidden, T.shape[1]]
    theta = rng.normal(scale=0.7, size=_mlp.n_parameters(_mlp.network_layout(sizes)))
    return X, T, sizes, theta


def _gradient(theta, sizes, activation, loss, X, T, l2, weights=None, rows=None):
    layout = _mlp.network_layout(sizes)
    start, stop = (0, len(X)) if rows is None else rows
    out = np.empty_like(theta)
    units = np.empty(_mlp.n_units(layout))
    value = _mlp.party_gradient(theta, layout, X, T,
                                np.ones(len(X)) if weights is None else weights,
                                start, stop, _mlp.ACTIVATIONS[activation],
                                LOSSES[loss], l2, units, np.empty_like(units), out)
    return value, out


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("loss", list(LOSSES))
def test_party_gradient_matches_reference(activation, loss):
    X, T, sizes, theta = _problem(loss)
    weights = np.linspace(0.5, 2.0, len(X))
    value, grad = _gradient(theta, sizes, activation, loss, X, T, 0.3, weights)
    ref_value, ref_grad = reference.mlp_objective(theta, sizes, activation, loss, X,
                                                  T, 0.3, weights)
    np.testing.assert_allclose(value, ref_value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("loss", list(LOSSES))
def test_party_gradient_matches_finite_differences(activation, loss):
    X, T, sizes, theta = _problem(loss, n=3)
    _, grad = _gradient(theta, sizes, activation, loss, X, T, 0.3)
    rng = np.random.default_rng(1)
    for _ in range(5):
        v = rng.normal(size=theta.shape)
        step = 1e-5
        plus = _gradient(theta + step * v, sizes, activation, loss, X, T, 0.3)[0]
        minus = _gradient(theta - step * v, sizes, activation, loss, X, T, 0.3)[0]
        np.testing.assert_allclose((plus - minus) / (2 * step), grad @ v,
                                   rtol=1e-6, atol=1e-8)


def _sklearn_gradient(model, theta, X, y):
    """scikit-learn's own loss gradient (``_loss_grad_lbfgs``) at a packed theta."""
    n_layers = model.n_layers_
    activations = [X] + [None] * (n_layers - 1)
    deltas = [None] * (n_layers - 1)
    coef_grads = [np.empty_like(W) for W in model.coefs_]
    intercept_grads = [np.empty_like(b) for b in model.intercepts_]
    return model._loss_grad_lbfgs(theta, X, y, None, activations, deltas,
                                  coef_grads, intercept_grads)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("loss", list(LOSSES))
def test_party_gradient_matches_sklearn_on_a_batch_of_one(activation, loss):
    X, T, sizes, theta = _problem(loss, n=12)
    alpha = 0.7
    if loss == "squared":
        model, y, Y = MLPRegressor, T[:, 0], T
    else:
        model = MLPClassifier
        y = (T[:, 0] > 0).astype(int) if loss == "logistic" else T.argmax(axis=1)
        Y = (T > 0).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = model(hidden_layer_sizes=sizes[1:-1], activation=activation,
                       alpha=alpha, solver="lbfgs", max_iter=1,
                       random_state=0).fit(X, y)
    for row in range(3):
        value, grad = _sklearn_gradient(fitted, theta, X[row:row + 1], Y[row:row + 1])
        # scikit-learn's batch of one: alpha / (2 * 1) ||W||^2
        ours, our_grad = _gradient(theta, sizes, activation, loss, X, T, alpha,
                                   rows=(row, row + 1))
        np.testing.assert_allclose(our_grad, grad, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(ours, value, rtol=1e-10)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("loss", list(LOSSES))
def test_line_loss_derivatives(activation, loss):
    """Forward mode along theta0 + z b: value, first and second derivatives."""
    X, T, sizes, theta = _problem(loss, hidden=(4, 3), n=2)
    layout = _mlp.network_layout(sizes)
    direction = np.random.default_rng(2).normal(size=theta.shape)
    A, C = _mlp.line_rows(theta, direction, layout, X)
    units = _mlp.n_units(layout)
    bufs = [np.empty(units) for _ in range(3)] + [np.empty(T.shape[1])]

    def at(z, row):
        return _mlp.line_loss(z, A[row], C[row], T[row], theta, direction, layout,
                              _mlp.ACTIVATIONS[activation], LOSSES[loss], *bufs)

    for row in range(2):
        for z in (-0.3, 0.0, 0.45):
            value, first, second = at(z, row)
            ref, grad = reference.mlp_objective(theta + z * direction, sizes,
                                                activation, loss, X[row:row + 1],
                                                T[row:row + 1], 0.0)
            np.testing.assert_allclose(value, ref, rtol=1e-12)
            np.testing.assert_allclose(first, grad @ direction, rtol=1e-10,
                                       atol=1e-12)
            h = 1e-4
            fd = (at(z + h, row)[1] - at(z - h, row)[1]) / (2 * h)
            if activation != "relu":
                np.testing.assert_allclose(second, fd, rtol=1e-5, atol=1e-7)
