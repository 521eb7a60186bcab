"""The networks' kernels and walks (skdpval.kernels._network, skdpval.families.network)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier, MLPRegressor

from skdpval.kernels import _losses, _network, _network_line
from skdpval.privacy._release import release_stream
import reference

ACTIVATIONS = ["identity", "logistic", "tanh", "relu"]
LOSSES = {"logistic": _losses.LOGISTIC, "multinomial": _losses.MULTINOMIAL, "squared": _losses.SQUARED}


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
    theta = rng.normal(scale=0.7, size=_network.n_parameters(_network.network_layout(sizes)))
    return X, T, sizes, theta


def _gradient(theta, sizes, activation, loss, X, T, l2, weights=None, rows=None):
    layout = _network.network_layout(sizes)
    start, stop = (0, len(X)) if rows is None else rows
    out = np.empty_like(theta)
    units = np.empty(_network.n_units(layout))
    value = _network.party_gradient(theta, layout, X, T,
                                np.ones(len(X)) if weights is None else weights,
                                start, stop, _network.ACTIVATIONS[activation],
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


@pytest.mark.parametrize("hidden", [(4, 3), (4,)])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("loss", list(LOSSES))
def test_line_loss_derivatives(activation, loss, hidden):
    """Forward mode along theta0 + z b: value, first and second derivatives (one
    hidden layer: the fused pass); the walk's slope is the same first derivative."""
    X, T, sizes, theta = _problem(loss, hidden=hidden, n=2)
    layout = _network.network_layout(sizes)
    direction = np.random.default_rng(2).normal(size=theta.shape)
    A, C = _network_line.line_rows(theta, direction, layout, X)
    units = _network.n_units(layout)
    bufs = [np.empty(units) for _ in range(3)] + [np.empty(T.shape[1])]

    def at(z, row):
        return _network_line.line_loss(z, z, A[row], C[row], T[row], theta, direction, layout,
                              _network.ACTIVATIONS[activation], LOSSES[loss], *bufs)

    for row in range(2):
        for z in (-0.3, 0.0, 0.45):
            value, first, second = at(z, row)
            ref, grad = reference.mlp_objective(theta + z * direction, sizes,
                                                activation, loss, X[row:row + 1],
                                                T[row:row + 1], 0.0)
            np.testing.assert_allclose(value, ref, rtol=1e-12)
            np.testing.assert_allclose(first, grad @ direction, rtol=1e-10,
                                       atol=1e-12)
            assert _network_line.line_slope(z, A[row], C[row], T[row], theta, direction,
                                   layout, _network.ACTIVATIONS[activation], LOSSES[loss],
                                   *bufs) == first
            h = 1e-4
            fd = (at(z + h, row)[1] - at(z - h, row)[1]) / (2 * h)
            if activation != "relu":
                np.testing.assert_allclose(second, fd, rtol=1e-5, atol=1e-7)


# --- the walks ---------------------------------------------------------------------

from skdpval import DPDataValuator, DPLabelQuality  # noqa: E402
from skdpval.families._network_table import MIDPOINT_TOLERANCE  # noqa: E402
from skdpval.families.network import (  # noqa: E402
    NetworkSpace, make_network, public_direction, run_walk)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    n, d = 30, 4
    X = rng.normal(size=(n, d))
    T = np.where(X[:, :1] + 0.3 * rng.normal(size=(n, 1)) > 0, 1.0, -1.0)
    X_val = rng.normal(size=(25, d))
    T_val = np.where(X_val[:, :1] > 0, 1.0, -1.0)
    labels = (T_val[:, 0] > 0).astype(np.int64)
    net = make_network([d, 5, 1], "tanh", _losses.LOGISTIC, np.random.RandomState(0))
    # line_range: how far n clipped steps reach (the full-space walks ignore it)
    settings = dict(utility=_losses.NEG_LOSS, l2=1e-3, clip_norm=0.5, learning_rate=0.05,
                    total_sum_squares=1.0, weights=np.ones(n),
                    line_range=(-0.05 * n * 0.5, 0.05 * n * 0.5))
    perms = np.array([rng.permutation(n) for _ in range(3)])
    return X, T, X_val, T_val, labels, net, settings, perms


@pytest.mark.parametrize("rolling", [False, True])
def test_identity_basis_walk_equals_full_space_walk(small, rolling):
    X, T, X_val, T_val, labels, net, settings, perms = small
    P = len(net.theta0)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(3, len(X), P))
    rolling_mean = rng.normal(size=(len(X), P)) if rolling else None
    runs = []
    for space in (NetworkSpace(net), NetworkSpace(net, np.eye(P))):
        problem = space.problem(X, T, np.arange(len(X) + 1), X_val, T_val, labels,
                                **settings)
        runs.append(problem.walk(perms, release_stream(noise.copy()), np.full(3, 0.5),
                                 rolling_mean))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_line_walk_equals_exact_walk_within_the_table_bound(small, activation):
    """The relu network's utility has kinks: they are nodes of its table."""
    X, T, X_val, T_val, labels, _, settings, perms = small
    net = make_network([X.shape[1], 5, 1], activation, _losses.LOGISTIC,
                       np.random.RandomState(0))
    direction, distance = public_direction(net, X_val, T_val, 1e-3)
    space = NetworkSpace(net, direction[None])
    args = (X, T, np.arange(len(X) + 1), X_val, T_val, labels)
    line = space.problem(*args, **{**settings,
                                   "line_range": (-2 * distance, 2 * distance)})
    exact = space.problem(*args, **settings, exact_utility=True)
    assert len(line.table.nodes) > 2  # a table, not the exact fallback
    noise = np.random.default_rng(2).normal(size=(3, len(X), 1))
    a, end_a = line.walk(perms, release_stream(noise.copy()), np.ones(3), None)
    b, end_b = exact.walk(perms, release_stream(noise.copy()), np.ones(3), None)
    assert np.max(np.abs(a - b)) <= 2 * MIDPOINT_TOLERANCE + 1e-14
    assert np.max(np.abs(end_a - end_b)) <= MIDPOINT_TOLERANCE + 1e-14
    assert np.max(np.abs(b)) > 1e-4  # the walk moved


def test_a_deeper_relu_network_walks_its_line_on_the_exact_utility(small):
    """Two hidden relu layers: the utility's kinks are not known in advance,
    so there is no table and the line walk reads the rows, as the exact walk."""
    X, T, X_val, T_val, labels, _, settings, perms = small
    net = make_network([X.shape[1], 4, 3, 1], "relu", _losses.LOGISTIC,
                       np.random.RandomState(0))
    direction, _ = public_direction(net, X_val, T_val, 1e-3)
    space = NetworkSpace(net, direction[None])
    args = (X, T, np.arange(len(X) + 1), X_val, T_val, labels)
    line = space.problem(*args, **settings)
    exact = space.problem(*args, **settings, exact_utility=True)
    assert len(line.table.nodes) == 2  # NO_TABLE
    noise = np.random.default_rng(2).normal(size=(3, len(X), 1))
    a, end_a = line.walk(perms, release_stream(noise.copy()), np.ones(3), None)
    b, end_b = exact.walk(perms, release_stream(noise.copy()), np.ones(3), None)
    assert np.max(np.abs(b)) > 1e-4  # the walk moved
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
    np.testing.assert_allclose(end_a, end_b, rtol=0, atol=1e-13)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_record_level_line_walk_equals_its_exact_walk(small, activation):
    """Parties of three records: each record's gradient clipped, the sum
    released and divided by the party's size, in both line kernels."""
    X, T, X_val, T_val, labels, _, settings, _ = small
    net = make_network([X.shape[1], 5, 1], activation, _losses.LOGISTIC,
                       np.random.RandomState(0))
    direction, distance = public_direction(net, X_val, T_val, 1e-3)
    space = NetworkSpace(net, direction[None])
    offsets = np.arange(0, len(X) + 1, 3)
    n_parties = len(offsets) - 1
    settings = {**settings, "weights": np.ones(n_parties), "record_level": True,
                "line_range": (-2 * distance, 2 * distance)}
    args = (X, T, offsets, X_val, T_val, labels)
    line = space.problem(*args, **settings)
    exact = space.problem(*args, **settings, exact_utility=True)
    rng = np.random.default_rng(3)
    perms = np.array([rng.permutation(n_parties) for _ in range(3)])
    noise = rng.normal(size=(3, n_parties, 1))
    rolling_mean = rng.normal(size=(n_parties, 1))
    a, end_a = line.walk(perms, release_stream(noise.copy()), np.full(3, 0.5),
                         rolling_mean)
    b, end_b = exact.walk(perms, release_stream(noise.copy()), np.full(3, 0.5),
                          rolling_mean)
    assert np.max(np.abs(b)) > 1e-4  # the walk moved
    assert np.max(np.abs(a - b)) <= 2 * MIDPOINT_TOLERANCE + 1e-14
    assert np.max(np.abs(end_a - end_b)) <= MIDPOINT_TOLERANCE + 1e-14


@pytest.mark.parametrize("basis", ["full", "line"])
def test_a_noiseless_walk_with_small_steps_lowers_the_validation_loss(small, basis):
    X, T, X_val, T_val, labels, net, settings, perms = small
    if basis == "line":
        direction, _ = public_direction(net, X_val, T_val, 1e-3)
        space = NetworkSpace(net, direction[None])
    else:
        space = NetworkSpace(net)
    problem = space.problem(X, T, np.arange(len(X) + 1), X_val, T_val, labels,
                            **{**settings, "learning_rate": 0.02})
    marginals, end = problem.walk(perms, None, np.ones(3), None)
    start = space.utility(net.theta0, X_val, T_val, labels, utility=_losses.NEG_LOSS,
                          total_sum_squares=1.0)
    assert np.all(end > start + 1e-3)
    np.testing.assert_allclose(marginals.sum(axis=1), end - start, atol=1e-12)


@pytest.mark.parametrize("basis", ["full", "line"])
def test_a_release_has_sensitivity_clip_norm_on_a_worst_case_pair(small, basis):
    """Two neighbours differing in one party: one huge row labelled +1 or -1.
    Without noise the party's step (rate 1) is its release: each within C,
    and together 2C apart (replace-one), C from the zero-out slot's 0.

    "line" runs the default walk's own kernel, :func:`_network_line.line_walk`
    (through ``sgd_pass``: one party's step from ``z = 0``), and checks that
    the valuator's line problem ends where that step does."""
    _, _, X_val, T_val, labels, net, _, _ = small
    C = 0.02
    space = NetworkSpace(net) if basis == "full" else NetworkSpace(
        net, public_direction(net, X_val, T_val, 1e-3)[0][None])
    releases = []
    for label in (1.0, -1.0):
        X, T = np.full((1, X_val.shape[1]), 3.0), np.array([[label]])
        if basis == "full":
            _, _, (end,) = run_walk(net, None, X, T, np.array([0, 1]),
                                    np.zeros((0, X.shape[1])), np.zeros((0, 1)),
                                    np.zeros(0), utility=_losses.NEG_LOSS,
                                    total_sum_squares=1.0, l2=1e-3, clip_norm=C,
                                    learning_rate=1.0, permutations=np.zeros((1, 1)),
                                    weights=np.zeros(1))
            releases.append(-end)
            continue
        settings = dict(l2=1e-3, clip_norm=C, learning_rate=1.0)
        theta = space.sgd_pass(X, T, order=np.array([0]), **settings)
        releases.append(-space.basis @ (theta - net.theta0))
        problem = space.problem(X, T, np.array([0, 1]), X_val, T_val, labels,
                                utility=_losses.NEG_LOSS, total_sum_squares=1.0,
                                weights=np.ones(1), line_range=(-1.0, 1.0), **settings)
        assert type(problem).__name__ == "NetworkLineProblem"
        _, (end_utility,) = problem.walk(np.zeros((1, 1)), None, np.ones(1), None)
        assert end_utility == pytest.approx(
            space.utility(theta, X_val, T_val, labels, utility=_losses.NEG_LOSS,
                          total_sum_squares=1.0), abs=1e-10)
    for release in releases:
        assert np.linalg.norm(release) == pytest.approx(C, rel=1e-12)
    assert np.linalg.norm(releases[0] - releases[1]) <= 2 * C + 1e-12
    assert np.linalg.norm(releases[0] - releases[1]) > C  # the pair is worst-case


def _digits(n_classes=2, n=120):
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, [3, 8]) if n_classes == 2 else np.ones(len(y), bool)
    X, y = X[keep], y[keep]
    return X[:n], y[:n], X[n:n + 80], y[n:n + 80]


@pytest.mark.parametrize("subspace", ["public", None])
def test_valuator_fits_an_mlp_classifier(subspace):
    X, y, X_val, y_val = _digits()
    rng = np.random.default_rng(0)
    flipped = rng.random(len(y)) < 0.3
    y = np.where(flipped, np.where(y == 3, 8, 3), y)
    valuator = DPDataValuator(MLPClassifier((8,), random_state=0), noise="none",
                              n_permutations=20, subspace=subspace, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    from sklearn.metrics import roc_auc_score
    assert roc_auc_score(flipped, -valuator.values_) > 0.8
    assert valuator.privacy_report_["details"]["release_dimension"] == (
        1 if subspace else "all parameters")


def test_valuator_mlp_multiclass_regressor_groups_and_bases():
    X, y, X_val, y_val = _digits(n_classes=10)
    for estimator, target, target_val, extra in [
            (MLPClassifier((6,), activation="logistic", random_state=0), y, y_val, {}),
            (MLPRegressor(hidden_layer_sizes=(4,), random_state=0), X[:, 20],
             X_val[:, 20],
             dict(utility="r2")),
            (MLPClassifier((6,), random_state=0), y, y_val,
             dict(utility="accuracy"))]:
        valuator = DPDataValuator(estimator, epsilon=3.0, n_permutations=8,
                                  random_state=0, noise_seed=0, **extra)
        valuator.fit(X, target, X_val=X_val, y_val=target_val,
                     groups=np.arange(len(X)) // 4)
        assert np.all(np.isfinite(valuator.values_))
    # a user basis: two orthonormal directions over the packed parameters
    n_params = 64 * 6 + 6 + 6 * 10 + 10
    basis = np.linalg.qr(np.random.default_rng(0).normal(size=(n_params, 2)))[0].T
    valuator = DPDataValuator(MLPClassifier((6,), random_state=0), subspace=basis,
                              epsilon=3.0, n_permutations=4, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    assert valuator.privacy_report_["details"]["release_dimension"] == 2
    with pytest.raises(ValueError, match="one column per parameter"):
        DPDataValuator(MLPClassifier((6,)), subspace=basis[:, 1:], epsilon=3.0,
                       n_permutations=4).fit(X, y, X_val=X_val, y_val=y_val)


def test_the_public_initialisation_is_sklearn_s():
    X, y, X_val, y_val = _digits()
    model = MLPClassifier((7,), activation="logistic", random_state=3)
    valuator = DPDataValuator(model, noise="none", n_permutations=2, random_state=0)
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = MLPClassifier((7,), activation="logistic", random_state=3,
                               max_iter=1, solver="lbfgs")
        fitted._random_state = np.random.RandomState(3)
        fitted._label_binarizer = type("B", (), {"y_type_": "binary"})()
        fitted._initialize(np.zeros((1, 1)), [64, 7, 1], np.float64)
    from sklearn.neural_network._multilayer_perceptron import _pack
    # the valuator's walk starts there: its initial utility is that network's
    init = _pack(fitted.coefs_, fitted.intercepts_)
    from skdpval.families.network import glorot_init
    np.testing.assert_array_equal(
        glorot_init([64, 7, 1], "logistic", np.random.RandomState(3)), init)
    # the validation log loss of sklearn's initial network, on the features
    # standardised as the valuator does (validation mean and std)
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    features = (X_val - mean) / np.where(std > 0, std, 1.0)
    hidden = 1 / (1 + np.exp(-(features @ fitted.coefs_[0] + fitted.intercepts_[0])))
    margin = (hidden @ fitted.coefs_[1] + fitted.intercepts_[1])[:, 0]
    signs = np.where(y_val == valuator.classes_[1], 1.0, -1.0)
    np.testing.assert_allclose(valuator.initial_utility_,
                               -np.mean(np.logaddexp(0, -signs * margin)), rtol=1e-12)


def test_label_quality_with_an_mlp_as_public_model():
    X, y, X_val, y_val = _digits()
    scorer = DPLabelQuality(MLPClassifier((8,), random_state=0, max_iter=500),
                            epsilon=3.0, random_state=0)
    scorer.fit(X, y, X_val=X_val, y_val=y_val)
    assert np.all(np.isfinite(scorer.values_))


from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


@parametrize_with_checks([
    DPDataValuator(MLPClassifier((3,), random_state=0), n_permutations=3,
                   validation_fraction=0.5, random_state=0),
    DPDataValuator(MLPRegressor(hidden_layer_sizes=(3,), activation="tanh",
                                random_state=0), n_permutations=3, noise="iid",
                   random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_federated_valuator_refuses_a_network():
    from skdpval import DPFederatedValuator
    X, y, X_val, y_val = _digits()
    with pytest.raises(TypeError, match="linear models only.*MLPClassifier"):
        DPFederatedValuator(MLPClassifier((3,)), epsilon=1.0).fit(
            X, y, groups=np.arange(len(X)) // 10, X_val=X_val, y_val=y_val)


@pytest.mark.parametrize("params", [
    dict(semivalue="banzhaf"), dict(semivalue=("beta", 16, 1)), dict(semivalue="loo"),
    dict(noise="iid"), dict(noise=lambda t, k: 1.0 / np.sqrt(t)),
    dict(privacy_unit="group"),
])
def test_semivalues_noise_policies_and_units_with_a_network(params):
    X, y, X_val, y_val = _digits(n=60)
    valuator = DPDataValuator(MLPClassifier((4,), random_state=0), epsilon=3.0,
                              n_permutations=8, q=0.0, random_state=0, noise_seed=0,
                              **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LOO's unvalued parties
        valuator.fit(X, y, X_val=X_val, y_val=y_val, groups=np.arange(len(X)) // 3)
    assert np.all(np.isfinite(valuator.values_))
    assert valuator.privacy_unit_ == params.get("privacy_unit", "record")
