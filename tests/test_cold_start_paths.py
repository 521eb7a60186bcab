"""The kernels' compile-time flags, and set-up code that replaced a kernel (issue 35).

A first fit compiles only what its model family and path use: the kernels'
flags (None) compile a path alone, and the standardisation and a network's
set-up run in numpy or through the kernels the fit compiles anyway. Each is
checked here against the general code it stands for, bit for bit
(``atol=0``), on inputs that reach its edge cases.
"""

import math
import warnings

import numpy as np
import pytest

from skdpval.kernels import (_line, _losses, _math, _network, _network_line, _subspace,
                             _subspace_problem)
from skdpval.privacy._release import release_stream
from skdpval.families._parties import _standardized
from skdpval.families.network import NetworkSpace, make_network, run_walk


def _standardized_reference(X, mean, std):
    """The kernel it replaced, element by element (numba's min and max)."""
    largest, tiny = np.finfo(np.float64).max, np.finfo(np.float64).tiny
    out = np.empty(X.shape)
    for i in range(X.shape[0]):
        for c in range(X.shape[1]):
            with np.errstate(all="ignore"):
                v = (X[i, c] - mean[c]) / std[c]
            if v != v:
                v = 0.0
            else:
                v = -largest if -largest > v else v
                v = largest if largest < v else v
            out[i, c] = 0.0 if abs(v) < tiny else v
    return out


def test_standardized_rows_are_the_kernel_s_and_silent():
    rng = np.random.default_rng(1)
    with np.errstate(over="ignore"):
        X = rng.normal(size=(300, 6)) * 10.0 ** rng.integers(-310, 308, (300, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.05] = np.inf
    X[rng.random(X.shape) < 0.05] = -np.inf
    X[rng.random(X.shape) < 0.05] = -0.0
    mean = rng.normal(size=6)
    std = np.array([1e-300, 1e300, 1.0, 2.0, 1e-5, 1e200])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would tell the private rows
        got = _standardized(X, mean, std)
    expected = _standardized_reference(X, mean, std)
    np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))


def _line_problem(seed=0, n=40, n_val=30, l1=0.0):
    rng = np.random.default_rng(seed)
    d = 5
    X, X_val = rng.normal(size=(n, d)), rng.normal(size=(n_val, d))
    T = np.where(X[:, :1] > 0, 1.0, -1.0)
    T_val = np.where(X_val[:, :1] > 0, 1.0, -1.0)
    basis = rng.normal(size=(1, d))
    basis /= np.linalg.norm(basis)
    return X, T, X_val, T_val, basis, rng


def _reference_pass(c, t, w, l2, shrink, l1, penalised, clip, rate, order, z=0.0):
    """One clipped SGD pass of the binary logistic loss along a line, in
    Python floats (libm's exp, as numba's): the walk's step, operation for
    operation (:func:`_subspace._scalar_gradient`, ``clip_l2``); with a rate
    of 0, each party's clipped gradient at ``z`` instead."""
    gradients = []
    for j in order:
        signed = t[j] * (z * c[j])
        e = math.exp(-abs(signed))
        gradient = w[j] * ((-t[j] * (e if signed > 0.0 else 1.0) / (1.0 + e)) * c[j])
        if l2 != 0.0:
            gradient += l2 * (shrink * z)
        if l1 != 0.0:
            for b in penalised:
                gradient += l1 * np.sign(z * b) * b
        norm = math.sqrt(0.0 + gradient * gradient)
        gradient *= clip / norm if norm > clip else 1.0
        gradients.append(gradient)
        z -= rate * gradient
    return z if rate else np.array(gradients)


@pytest.mark.parametrize("l1", [0.0, 0.01])
def test_the_set_up_walks_on_the_fit_s_kernel(l1):
    """The SGD pass and the gradients at the start run on the fit's walk
    (:func:`_subspace_problem.set_up_problem`): along the line, with its scalar step
    or the general one (another fit's parties of many rows, at record level,
    joint), and through the walk that reads the rows (a utility with no
    table): the same bits, those of the step in Python floats."""
    X, T, _, _, basis, rng = _line_problem()
    F = _subspace_problem.project_rows(basis, X, 1)
    offsets = np.arange(len(X) + 1)
    assert _subspace.scalar_flag(F, offsets) is None
    assert _subspace.scalar_flag(F, offsets, record_level=True) is True
    assert _subspace.scalar_flag(F, np.array([0, 2, 3])) is True
    weights = rng.uniform(0.5, 2.0, len(X))
    order = rng.choice(len(X), 3 * len(X))
    model = dict(loss=_losses.LOGISTIC, loss_param=0.0, l2=0.01, n_penalized=4, l1=l1,
                 row_weights=weights)
    walks = {"line": None,
             "general": dict(offsets=np.array([0, 2, 3]), record_level=True,
                             joint=True),
             "rows": dict(utility=_losses.ACCURACY)}
    penalty = _subspace_problem.penalty_matrix(basis, 1, 4)[0, 0]
    penalised = _subspace_problem.penalised_basis(basis, 1, 4)[0]
    expected_z = _reference_pass(F[:, 0, 0], T[:, 0], weights, 0.01, penalty, l1,
                                 penalised, 0.3, 0.5, order)
    expected_gradients = _reference_pass(F[:, 0, 0], T[:, 0], weights, 0.01, penalty,
                                         l1, penalised, np.inf, 0.0, range(len(X)))
    for name, walk in walks.items():
        problem, _ = _subspace_problem.set_up_problem(basis, X, T, offsets, clip_norm=0.3,
                                              learning_rate=0.5, walk=walk, **model)
        assert (problem.line is None) == (name == "rows")
        assert (problem.general is None) == (name != "general")
        theta = _subspace_problem.sgd_pass(basis, X, T, clip_norm=0.3, learning_rate=0.5,
                                   order=order, walk=walk, **model)
        assert theta.shape == (1, X.shape[1])
        np.testing.assert_array_equal(theta, expected_z * basis)
        gradients = _subspace_problem.party_gradients(basis, np.zeros((1, X.shape[1])), X, T,
                                              offsets, walk=walk, **model)
        np.testing.assert_array_equal(gradients[:, 0], expected_gradients)
    theta = 0.7 * basis  # elsewhere than z = 0: through the walk that starts there
    z = float(basis[0] @ theta[0])
    np.testing.assert_array_equal(
        _subspace_problem.party_gradients(basis, theta, X, T, offsets, **model)[:, 0],
        _reference_pass(F[:, 0, 0], T[:, 0], weights, 0.01, penalty, l1, penalised,
                        np.inf, 0.0, range(len(X)), z=z))


def test_the_line_walk_s_flags_compile_the_same_walk():
    """kind None (the logistic table) and the scalar step against the kind's
    code and the general step: the same marginals, bit for bit."""
    X, T, X_val, T_val, basis, rng = _line_problem(seed=3)
    problem = _subspace_problem.make_subspace_problem(
        basis, X, T, np.arange(len(X) + 1), X_val, T_val,
        (T_val[:, 0] > 0).astype(np.int64), loss=_losses.LOGISTIC, utility=_losses.NEG_LOSS,
        loss_param=0.0, l2=0.01, n_penalized=4, clip_norm=0.5, learning_rate=0.2,
        total_sum_squares=1.0, weights=np.ones(len(X)))
    assert problem.line.kind == _line.HERMITE and problem.general is None
    assert _line.kind_flag(problem.line.kind) is None
    permutations = rng.permuted(np.tile(np.arange(len(X)), (4, 1)), axis=1)
    noise = rng.normal(size=(4, len(X), 1))
    results = []
    for flags in ((None, None), (_line.HERMITE, True)):
        p = problem._replace(general=flags[1])
        line = p.line
        marginals, end_utility = np.empty((4, len(X))), np.empty(4)
        _subspace._line_walk(
            p.F, p.T, p.row_weights, p.offsets, None, 0.0, p.l2, p.penalty, 0.0,
            p.l1_basis, p.clip_norm, p.learning_rate, flags[0], line.lo, line.inv_h,
            line.table, line.quad, line.s_val, permutations,
            release_stream(noise.copy()), np.ones(4), False, np.empty((1, 1)),
            p.weights, None, marginals, end_utility, np.empty((4, 1)),
            np.empty((4, 1)), np.empty(1), np.empty(1), np.empty(1), None,
            np.empty((1, 1)), flags[1], None)
        results.append((marginals, end_utility))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("projected", [False, True])
def test_a_network_s_set_up_is_its_walk_s(activation, projected):
    """Party gradients and validation utilities of :class:`NetworkSpace` (two
    small kernels, and numpy) against the walk they stand for
    (:func:`run_walk`: a step of rate 1 at an infinite clip; a walk of no
    steps), bit for bit."""
    rng = np.random.default_rng(4)
    n, d = 20, 4
    X, X_val = rng.normal(size=(n, d)), rng.normal(size=(15, d))
    T = np.where(X[:, :1] > 0, 1.0, -1.0)
    T_val = np.where(X_val[:, :1] > 0, 1.0, -1.0)
    labels = (T_val[:, 0] > 0).astype(np.int64)
    net = make_network([d, 6, 1], activation, _losses.LOGISTIC, np.random.RandomState(0))
    n_params = len(net.theta0)
    basis = None
    if projected:
        basis = np.linalg.qr(rng.normal(size=(n_params, 2)))[0].T.copy()
    space = NetworkSpace(net, basis)
    theta = net.theta0 + 0.3 * rng.normal(size=n_params)
    z = space._z(theta)
    offsets = np.array([0, 1, 3, 4, 8, 20])
    _, _, ends = run_walk(
        net, basis, X, T, offsets, np.zeros((0, d)), np.zeros((0, 1)),
        np.empty(0, np.int64), utility=_losses.NEG_LOSS, total_sum_squares=1.0, l2=0.01,
        clip_norm=np.inf, learning_rate=1.0,
        permutations=np.arange(len(offsets) - 1)[:, None], weights=np.zeros(1),
        starts=z[None])
    np.testing.assert_array_equal(
        space.party_gradients(theta, X, T, offsets, l2=0.01), z - ends)
    thetas = [theta, net.theta0, theta + 0.1]
    walked = [run_walk(net, basis, np.zeros((0, d)), np.zeros((0, 1)), np.zeros(1),
                       X_val, T_val, labels, utility=_losses.NEG_LOSS,
                       total_sum_squares=1.0, l2=0.0, clip_norm=1.0,
                       learning_rate=0.0, permutations=np.zeros((1, 0)),
                       weights=np.zeros(0), starts=space._z(t)[None])[1][0]
              for t in thetas]
    settings = dict(utility=_losses.NEG_LOSS, total_sum_squares=1.0)
    np.testing.assert_array_equal(
        space.utilities(thetas, X_val, T_val, labels, **settings), walked)
    np.testing.assert_array_equal(
        [space.utility(t, X_val, T_val, labels, **settings) for t in thetas], walked)


def _line_rows_reference(theta0, direction, layout, X):
    """The first layer's pre-activations ``A + z C``, element by element (a
    row's sum over its inputs in their order, from the intercept)."""
    fan_in, fan_out, intercept = layout[0, 0], layout[0, 1], layout[0, 3]
    A, C = np.empty((len(X), fan_out)), np.empty((len(X), fan_out))
    for r in range(len(X)):
        for o in range(fan_out):
            A[r, o], C[r, o] = theta0[intercept + o], direction[intercept + o]
        for i in range(fan_in):
            for o in range(fan_out):
                A[r, o] += X[r, i] * theta0[i * fan_out + o]
                C[r, o] += X[r, i] * direction[i * fan_out + o]
    return A, C


def _output_gradient_norms_reference(theta, layout, X, act, basis):
    """Sum over rows and outputs of ``||d output / d theta||^2`` (projected on
    the rows of ``basis`` unless None), element by element in Python."""
    units, deltas = np.zeros(_network.n_units(layout)), np.zeros(_network.n_units(layout))
    last, n_out = layout[-1, 4], layout[-1, 1]
    row = np.empty(len(theta))
    total = 0.0
    for v in range(len(X)):
        _network.forward(theta, layout, X[v], act, units)
        for k in range(n_out):
            row[:] = 0.0
            for o in range(n_out):
                deltas[last + o] = 1.0 if o == k else 0.0
            _network.backward(theta, layout, X[v], act, units, deltas, row)
            if basis is None:
                for p in range(len(row)):
                    total += row[p] * row[p]
            else:
                for i in range(len(basis)):
                    s = 0.0
                    for p in range(len(row)):
                        s += basis[i, p] * row[p]
                    total += s * s
    return total


@pytest.mark.parametrize("projected", [False, True])
def test_a_network_s_line_rows_and_margin_scale_are_the_references(projected):
    """The first layer along a line (numpy) and the margin scale (Python over
    the compiled passes) against their element-by-element references, bit
    for bit."""
    rng = np.random.default_rng(7)
    d = 5
    X_val = rng.normal(size=(12, d))
    net = make_network([d, 6, 3, 2], "tanh", _losses.MULTINOMIAL, np.random.RandomState(1))
    n_params = len(net.theta0)
    basis = np.linalg.qr(rng.normal(size=(n_params, 2)))[0].T.copy()
    A, C = _network_line.line_rows(net.theta0, basis[0], net.layout, X_val)
    A_reference, C_reference = _line_rows_reference(net.theta0, basis[0], net.layout,
                                                    X_val)
    np.testing.assert_array_equal(A, A_reference)
    np.testing.assert_array_equal(C, C_reference)
    space = NetworkSpace(net, basis if projected else None)
    total = _output_gradient_norms_reference(
        net.theta0, net.layout, X_val, _network.act_flag(net.activation),
        basis if projected else None)
    assert space.margin_scale(X_val) == float(np.sqrt(total / len(X_val)))


def test_one_hidden_layer_s_line_passes_are_the_general_ones():
    """``deep=None`` (one hidden layer, :func:`_network.depth_flag`) against the
    run-time choice: the same slope, loss derivatives and exact utility."""
    rng = np.random.default_rng(8)
    d = 4
    net = make_network([d, 5, 1], "relu", _losses.LOGISTIC, np.random.RandomState(2))
    assert _network.depth_flag(net.layout) is None
    assert _network.depth_flag(_network.network_layout([d, 5, 3, 1])) is True
    direction = rng.normal(size=len(net.theta0))
    X = rng.normal(size=(6, d))
    T = np.where(X[:, :1] > 0, 1.0, -1.0)
    A, C = _network_line.line_rows(net.theta0, direction, net.layout, X)
    buffers = [np.zeros(_network.n_units(net.layout)) for _ in range(3)] + [np.zeros(1)]
    for z in (-0.7, 0.0, 0.3):
        for row in range(len(X)):
            args = (A[row], C[row], T[row], net.theta0, direction, net.layout, None,
                    None, *buffers)
            assert (_network_line.line_slope(z, *args, None) == _network_line.line_slope(z, *args))
            assert (_network_line.line_loss(z, z, *args, None) == _network_line.line_loss(z, z, *args))
        exact = (A, C, T, net.theta0, direction, net.layout, None, None, 1.0, 0.0,
                 *buffers)
        assert _network_line.line_exact(z, *exact, None) == _network_line.line_exact(z, *exact)


def test_the_flags_are_none_only_for_the_defaults():
    assert _network.loss_flag(_losses.LOGISTIC) is None
    assert _network.loss_flag(_losses.MULTINOMIAL) == _losses.MULTINOMIAL
    assert _network.act_flag(_network.RELU) is None
    assert _network.act_flag(_network.TANH) == _network.TANH
    assert _math.level_flag(False) is None and _math.level_flag(True) is True
    assert _line.kind_flag(_line.QUADRATIC) == _line.QUADRATIC
    assert _subspace.prefetch_flag(np.arange(10)) is None
    assert _subspace.prefetch_flag(np.arange(_subspace.PREFETCH_MIN_PARTIES + 2))
