"""The network family: multilayer perceptrons, and where their walks live.

:class:`NetworkFamily` reads scikit-learn's ``MLPClassifier`` and
``MLPRegressor`` (their loss and ``alpha``), and :class:`NetworkSpace`
answers the valuator's questions of a space for them: every parameter, a
public basis, or one public line.

:class:`NetworkSpace` answers the valuator's questions of a space (party
gradients, a noiseless SGD pass, a utility, the margin scale, the walk
problem; :meth:`skdpval.families.Family.space`) for a multilayer perceptron
(:mod:`skdpval.kernels._network`), so that the estimators never branch on
the model.
Every walk starts from the public initialisation ``theta0``
(:func:`glorot_init`, scikit-learn's own), and ``z`` is the displacement
from it: ``theta = theta0 + z`` in the full space (the seed paper's
mechanism: the whole gradient clipped and noised), ``theta0 + B^T z`` in
the span of a basis ``B`` with orthonormal rows.

Along one direction ``b`` (``subspace="public"``: from ``theta0`` toward the
network fitted on the validation set alone, :func:`public_direction`) a
step need not touch the validation rows: the utility ``U(z)`` (the
negative loss, or the MSE and R^2, affine in it) is read from a piecewise
quintic Hermite table of its value and first two derivatives at the ends
of each interval (forward mode, exact sums over the rows). Each interval
is refined until the interpolant is within ``MIDPOINT_TOLERANCE`` of ``U`` at
its midpoint, where the error term ``U^(6)(xi) / 6! (t (t - 1))^3 h^6``
peaks: an a posteriori check of the interpolant against exact values, not
a proof (it assumes ``U^(6)`` varies little within an interval of the
final size). A relu network's ``U`` has a kink wherever a first-layer unit
of a validation row crosses 0, at ``z = -a / c``: those points are nodes,
and an interval's ends take the one-sided values from inside it. Past the
table, where refining would exceed the caller's cap on intervals, and for
relu networks of more than one hidden layer (whose kinks are not known in
advance), ``U`` is computed exactly from the rows (the first layer's
pre-activations ``a + z c`` precomputed, so O(width x outputs) a row).
"""

import copy
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
from scipy.optimize import minimize
from sklearn import neural_network as nn
from sklearn.utils import check_random_state

from ..kernels import _fit_sums as fit_sums
from ..kernels import _losses, _math, _network, _network_line
from ..kernels._linear import PartiesByOffsets
from ..kernels._math import (_f64, _i64, pad_columns, padded_length, unit_weights,
                             validation_scratch)
from ..privacy._release import clip_l2, release_stream, walk_stream
from ._network_table import NO_TABLE, _buffers, line_table
from ._base import (ALTERNATIVE, Family, FitDescent, Objective, one_blas_thread,
                    refuse, register_family)
from .linear import check_basis

# The private fit of a network: Adam on the released mean gradients from the
# validation network (see NetworkFamily.fit_descent). Measured:
# benchmarks/quality.py --suite regime on the non-linear tables
# (benchmarks/results/quality_regime_network.jsonl).
NETWORK_FIT_STEPS = 30
NETWORK_FIT_RATE = 0.01
# Fewer parties a thread than this and the private fit's sum runs in one.
MIN_CHUNK_PARTIES = 5000
ADAM_BETAS = (0.9, 0.999)
DASK_FIT_REFUSED = ("The private fit of a network reads whole rows at every "
                    "step and is not built for Dask input: pass numpy arrays, "
                    "or public_model='validation'.")

# The public direction's fit: L-BFGS iterations at most (scikit-learn's
# default max_iter for an MLP).
DIRECTION_MAX_ITER = 200

Network = namedtuple("Network", ["layout", "activation", "loss", "theta0"])
Network.__doc__ = """A network's shape (:func:`skdpval.kernels._network.network_layout`), hidden
activation and loss codes, and its public initialisation (packed)."""


def glorot_init(sizes, activation, random_state):
    """The packed initial parameters scikit-learn's MLP draws (``_init_coef``):
    per layer, coefficients then intercepts uniform in ``+-sqrt(f / (fan_in +
    fan_out))``, ``f = 2`` for the logistic activation, else 6."""
    factor = 2.0 if activation == "logistic" else 6.0
    coefs, intercepts = [], []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = np.sqrt(factor / (fan_in + fan_out))
        coefs.append(random_state.uniform(-bound, bound, (fan_in, fan_out)))
        intercepts.append(random_state.uniform(-bound, bound, fan_out))
    return np.hstack([a.ravel() for a in coefs + intercepts])


def make_network(sizes, activation, loss, random_state):
    return Network(_network.network_layout(sizes), _network.ACTIVATIONS[activation],
                   int(loss), glorot_init(sizes, activation, random_state))


def run_walk(network, basis, X, T, offsets, X_val, T_val, labels_val, *, utility,
             total_sum_squares, l2, clip_norm, learning_rate, permutations, weights,
             starts=None, stream=None, x_tt=None, rolling_mean=None,
             record_level=False, row_weights=None):
    """Call :func:`skdpval.kernels._network.walk` with its buffers: (marginals, end_utility, ends).

    ``basis`` None walks the full space. Every computation of a fit in the
    full space or a basis goes through here (one compiled kernel)."""
    layout, n_params = network.layout, len(network.theta0)
    projected = basis is not None
    dim = basis.shape[0] if projected else n_params
    n_walks = permutations.shape[0]
    stream = walk_stream(stream, rolling_mean is not None)
    marginals = np.zeros((n_walks, len(offsets) - 1))
    end_utility = np.empty(n_walks)
    ends = np.empty((n_walks, dim))
    n_out = int(layout[-1, 1])
    utility_loss, utility_code = _losses.kernel_codes(network.loss, utility, n_out)
    units = _network.n_units(layout)
    _network.walk(network.theta0, np.zeros((1, 1)) if basis is None else _f64(basis),
              projected, layout, _network.act_flag(network.activation), _network.loss_flag(network.loss),
              _f64(X), _f64(T),
              unit_weights(len(X)) if row_weights is None else _f64(row_weights),
              _i64(offsets), _f64(X_val), pad_columns(T_val), _i64(labels_val),
              utility_code, utility_loss, float(total_sum_squares), float(l2),
              float(clip_norm), float(learning_rate), bool(record_level),
              np.zeros((1, dim)) if starts is None else _f64(starts),
              _i64(permutations), stream,
              np.ones(n_walks) if x_tt is None else _f64(x_tt),
              rolling_mean is not None,
              np.empty((1, 1)) if rolling_mean is None else _f64(rolling_mean),
              _f64(weights), marginals, end_utility,
              ends, np.empty(n_params), np.empty(n_params), np.empty(dim),
              np.empty(dim), np.zeros(units), np.zeros(units),
              np.zeros((n_out, padded_length(len(X_val)))),
              validation_scratch(len(labels_val)))
    return marginals, end_utility, ends


def _no_validation(n_features, n_outputs):
    return (np.zeros((0, n_features)), np.zeros((0, n_outputs)),
            np.empty(0, dtype=np.int64))


def network_objective(network, X, T, l2, row_weights=None):
    """``f(theta) -> (weighted mean loss + l2 / 2 ||W||^2, gradient)`` over all rows."""
    X, T = _f64(X), _f64(T)
    weights = unit_weights(len(X)) if row_weights is None else _f64(row_weights)
    units = _network.n_units(network.layout)
    buffers = (np.zeros(units), np.zeros(units))

    def objective(theta):
        grad = np.empty(len(network.theta0))
        value = _network.party_gradient(_f64(theta), network.layout, X, T, weights, 0,
                                    len(X), _network.act_flag(network.activation),
                                    _network.loss_flag(network.loss),
                                    float(l2), *buffers, grad)
        return value, grad

    return objective


def public_direction(network, X_val, T_val, l2, row_weights=None):
    """``(unit direction, distance)`` from ``theta0`` to the network fitted on the
    validation set alone (its own objective, L-BFGS from ``theta0``)."""
    objective = network_objective(network, X_val, T_val, l2, row_weights)
    theta = minimize(objective, network.theta0, jac=True, method="L-BFGS-B",
                     options=dict(maxiter=DIRECTION_MAX_ITER)).x
    step = theta - network.theta0
    norm = float(np.linalg.norm(step))
    if not np.isfinite(norm) or norm == 0:
        raise ValueError(
            "subspace='public': the network fitted on the validation set did not "
            "move from its initialisation, which defines no direction. Pass a "
            "basis array, or subspace=None.")
    return step / norm, norm


def _utility_affine(utility, n_val, total_sum_squares):
    """``(scale, offset)`` with ``U = offset - scale * mean loss``, or None:
    the negative loss, and for ``r^2 / 2`` the MSE and R^2 too."""
    if utility == _losses.NEG_LOSS:
        return 1.0, 0.0
    if utility == _losses.NEG_MSE:
        return 2.0, 0.0
    if utility == _losses.R2 and total_sum_squares > 0:
        return 2.0 * n_val / total_sum_squares, 1.0
    return None


class NetworkProblem(PartiesByOffsets, namedtuple("NetworkProblem", [
        "network", "basis", "X", "T", "offsets", "X_val", "T_val", "labels_val",
        "utility", "total_sum_squares", "l2", "clip_norm", "learning_rate",
        "weights", "row_weights", "record_level"])):
    """A network's walk in the full space (``basis`` None) or in a basis."""

    __slots__ = ()

    @property
    def release_shape(self):
        return ((len(self.network.theta0),) if self.basis is None
                else (self.basis.shape[0],))

    @property
    def work_per_permutation(self):
        """Multiply-adds of a permutation's walk, about: the validation pass."""
        return self.n_parties * (len(self.X_val) + 2) * len(self.network.theta0)

    def walk(self, permutations, stream, x_tt, rolling_mean):
        marginals, end_utility, _ = run_walk(
            self.network, self.basis, self.X, self.T, self.offsets, self.X_val,
            self.T_val, self.labels_val, utility=self.utility,
            total_sum_squares=self.total_sum_squares, l2=self.l2,
            clip_norm=self.clip_norm, learning_rate=self.learning_rate,
            permutations=permutations, weights=self.weights, stream=stream,
            x_tt=x_tt, rolling_mean=rolling_mean, record_level=self.record_level,
            row_weights=self.row_weights)
        return marginals, end_utility


class NetworkLineProblem(PartiesByOffsets, namedtuple("NetworkLineProblem", [
        "network", "direction", "A", "C", "T", "offsets", "row_weights", "l2",
        "penalty", "clip_norm", "learning_rate", "record_level", "table", "A_val",
        "C_val", "T_val", "scale", "offset", "weights", "joint"], defaults=(False,))):
    """A network's walk along ``theta0 + z b``, the utility from a table;
    ``joint``: each party's marginal from its own step before the noise."""

    __slots__ = ()

    release_shape = (1,)

    @property
    def work_per_permutation(self):
        """Multiply-adds of a permutation's walk, about: a party's forward mode."""
        return self.n_parties * 6 * len(self.network.theta0) // max(
            1, int(self.network.layout[0, 0]))

    def walk(self, permutations, stream, x_tt, rolling_mean):
        n_walks = permutations.shape[0]
        marginals = np.zeros((n_walks, self.n_parties))
        end_utility = np.empty(n_walks)
        net = self.network
        _network_line.line_walk(
            net.theta0, self.direction, net.layout, _network.act_flag(net.activation),
            _network.loss_flag(net.loss), self.A, self.C, self.T, self.row_weights,
            self.offsets, self.l2, self.penalty[0], self.penalty[1], self.clip_norm,
            self.learning_rate, _math.level_flag(self.record_level), *self.table,
            self.A_val,
            self.C_val, self.T_val, self.scale, self.offset, _i64(permutations),
            walk_stream(stream, rolling_mean is not None),
            np.ones(n_walks) if x_tt is None else _f64(x_tt),
            rolling_mean is not None,
            np.empty((1, 1)) if rolling_mean is None else _f64(rolling_mean),
            self.weights, marginals, end_utility,
            np.empty(n_walks), np.empty((1, 1)), np.empty((1, 1)),
            *_buffers(net.layout), True if self.joint else None,
            _network.depth_flag(net.layout))
        return marginals, end_utility


class NetworkSpace:
    """A network's releases: every parameter (``basis`` None) or ``m`` numbers
    ``z`` in ``theta = theta0 + B^T z``; one direction walks the line."""

    public_model = None

    def __init__(self, network, basis=None, line_center=0.0):
        self.network, self.line_center = network, line_center
        self.basis = None if basis is None else _f64(basis)
        self.release_dimension = ("all parameters" if basis is None
                                  else int(self.basis.shape[0]))

    @property
    def n_params(self):
        return len(self.network.theta0)

    def coordinates(self, n_params=None):
        """Numbers in one release."""
        return self.n_params if self.basis is None else self.release_dimension

    def initial_theta(self, n_outputs=None, n_columns=None):
        """Where every walk starts: the public initialisation."""
        return self.network.theta0

    def _z(self, theta):
        step = np.ravel(theta) - self.network.theta0
        return step if self.basis is None else self.basis @ step

    def _theta(self, z):
        return self.network.theta0 + (z if self.basis is None else z @ self.basis)

    def _walk_theta(self, z):
        """``theta0 + B^T z`` as :func:`skdpval.kernels._network.walk` forms it (the same
        operations in the same order: the same bits)."""
        theta = self.network.theta0.copy()
        if self.basis is None:
            return theta + z
        for i in range(len(z)):
            theta += z[i] * self.basis[i]
        return theta

    def party_gradients(self, theta, X, T, offsets, *, l2, row_weights=None,
                        **ignored):
        """Unclipped gradient (in ``z``) of each party at ``theta``: one step of
        rate 1 from there, as the walk would take it (:func:`skdpval.kernels._network.walk`
        from ``z``, its step ``z - g`` and back: ``z - (z - g)``), with the
        walk's operations: a party's gradient by
        :func:`skdpval.kernels._network.party_gradient` (compiled for the fit's objective
        anyway), projected with the walk's sums in their order and clipped at
        an infinite norm (zero where not finite) by
        :func:`skdpval.privacy._release.clip_l2` (the walk's), one party a call (the
        validation rows: a few ms), nothing else to compile."""
        net = self.network
        z = _f64(self._z(theta))
        units = _network.n_units(net.layout)
        theta, X, T = _f64(self._walk_theta(z)), _f64(X), _f64(T)
        weights = unit_weights(len(X)) if row_weights is None else _f64(row_weights)
        offsets = _i64(offsets)
        buffers = (np.zeros(units), np.zeros(units))
        act, loss = _network.act_flag(net.activation), _network.loss_flag(net.loss)
        gradients = np.empty((len(offsets) - 1, len(z)))
        grad = np.empty(self.n_params)
        for j in range(len(offsets) - 1):
            _network.party_gradient(theta, net.layout, X, T, weights, offsets[j],
                                offsets[j + 1], act, loss, float(l2), *buffers, grad)
            if self.basis is None:
                gradients[j] = grad
            else:
                for i in range(len(z)):
                    gradients[j, i] = _network_line.sequential_sum(0.0, self.basis[i] * grad)
            clip_l2(gradients[j:j + 1], np.inf)
        return z - (z - gradients)

    def _line_rows(self, X):
        """:func:`skdpval.kernels._network_line.line_rows` of ``X`` along the one direction, kept
        for the last ``X`` (the learning-rate search passes the same rows 26 times)."""
        cached = getattr(self, "_rows_cache", None)
        if cached is None or cached[0] is not X:
            net = self.network
            cached = (X, *_network_line.line_rows(net.theta0, self.basis[0], net.layout, X))
            self._rows_cache = cached
        return cached[1:]

    def _line_penalty(self):
        """``(<b_W, W0>, ||b_W||^2)`` over the coefficients: the L2 term along the line."""
        net, direction = self.network, self.basis[0]
        n_coefs = _network.n_coefficients(net.layout)
        return (float(direction[:n_coefs] @ net.theta0[:n_coefs]),
                float(direction[:n_coefs] @ direction[:n_coefs]))

    def sgd_pass(self, X, T, *, l2, clip_norm, learning_rate, order,
                 row_weights=None, **ignored):
        """Parameters after one clipped, noiseless SGD pass from ``theta0``; along
        one direction by forward mode from the rows' first-layer projections
        (O(width) a step, not O(parameters))."""
        if self.basis is not None and len(self.basis) == 1:
            # The line walk's own kernel (compiled for the walk anyway): no
            # noise, no table and no validation rows, its utilities unused.
            net, n_rows = self.network, len(X)
            A, C = self._line_rows(X)
            no_rows = np.zeros((0, A.shape[1]))
            ends = np.empty(1)
            _network_line.line_walk(
                net.theta0, self.basis[0], net.layout, _network.act_flag(net.activation),
                _network.loss_flag(net.loss), A, C,
                _f64(T), unit_weights(n_rows) if row_weights is None
                else _f64(row_weights), np.arange(n_rows + 1), float(l2),
                *self._line_penalty(), float(clip_norm), float(learning_rate), None,
                *NO_TABLE, no_rows, no_rows, np.zeros((0, T.shape[1])), 1.0, 0.0,
                _i64(order)[None], release_stream(), np.ones(1), False,
                np.empty((1, 1)), np.zeros(len(order)),
                np.zeros((1, n_rows)), np.empty(1), ends, np.empty((1, 1)),
                np.empty((1, 1)), *_buffers(net.layout), None,
                _network.depth_flag(net.layout))
            return self._theta(ends)
        _, _, ends = run_walk(
            self.network, self.basis, X, T, np.arange(len(X) + 1),
            *_no_validation(X.shape[1], T.shape[1]), utility=_losses.NEG_LOSS,
            total_sum_squares=1.0, l2=l2, clip_norm=clip_norm,
            learning_rate=learning_rate, permutations=_i64(order)[None],
            weights=np.zeros(len(order)), row_weights=row_weights)
        return self._theta(ends[0])

    def utility(self, theta, X_val, T_val, labels_val, *, utility,
                total_sum_squares, **ignored):
        """Utility of ``theta`` (in the space) on the validation rows, at
        ``theta0 + B^T z`` as the walk forms it."""
        net = self.network
        n_out = int(net.layout[-1, 1])
        loss, utility = _losses.kernel_codes(net.loss, utility, n_out)
        units = _network.n_units(net.layout)
        return _network.validation_utility(
            _f64(self._walk_theta(_f64(self._z(theta)))), net.layout, _f64(X_val),
            _network.act_flag(net.activation), np.zeros(units),
            np.zeros((n_out, padded_length(len(X_val)))), pad_columns(T_val),
            _i64(labels_val), utility, loss, float(total_sum_squares),
            validation_scratch(len(labels_val)))

    def utilities(self, thetas, X_val, T_val, labels_val, *, utility,
                  total_sum_squares, **ignored):
        """:meth:`utility` of each of ``thetas``."""
        return np.array([self.utility(theta, X_val, T_val, labels_val, utility=utility,
                                      total_sum_squares=total_sum_squares)
                         for theta in thetas])

    def margin_scale(self, X_val, n_outputs=None):
        """RMS over validation rows of the norm of d(outputs) / d(release) at
        ``theta0``."""
        net, layout = self.network, self.network.layout
        units, deltas = np.zeros(_network.n_units(layout)), np.zeros(_network.n_units(layout))
        X_val, act = _f64(X_val), _network.act_flag(net.activation)
        last, n_out = int(layout[-1, 4]), int(layout[-1, 1])
        row = np.empty(self.n_params)
        # Sum over rows and outputs of ||d output / d theta||^2 (projected on
        # the basis), by the forward and backward passes compiled for the
        # fit's objective: nothing else to compile.
        total = 0.0
        for v in range(len(X_val)):
            x = X_val[v]
            _network.forward(net.theta0, layout, x, act, units)
            for k in range(n_out):
                row[:] = 0.0
                deltas[last:last + n_out] = 0.0
                deltas[last + k] = 1.0
                _network.backward(net.theta0, layout, x, act, units, deltas, row)
                if self.basis is None:
                    total = _network_line.sequential_sum(total, row * row)
                else:
                    for i in range(len(self.basis)):
                        projection = _network_line.sequential_sum(0.0, self.basis[i] * row)
                        total += projection * projection
        return float(np.sqrt(total / len(X_val)))

    def problem(self, X, T, offsets, X_val, T_val, labels_val, *, utility, l2,
                clip_norm, learning_rate, total_sum_squares, weights,
                row_weights=None, record_level=False, line_range,
                line_intervals=2**16, exact_utility=False, joint=False, **ignored):
        """The walk's problem: along one direction with a tabulable utility, the
        line walk; else the walk that reads the validation rows every step
        (``joint`` needs the line walk)."""
        row_weights = unit_weights(len(X)) if row_weights is None else _f64(row_weights)
        affine = _utility_affine(utility, len(X_val), total_sum_squares)
        if self.basis is None or len(self.basis) > 1 or affine is None or exact_utility:
            if joint:
                raise ValueError(
                    "threat_model='joint' reads each party's marginal along the "
                    "network's public line: it needs subspace='public' and a "
                    "utility the line tabulates. Use threat_model='central'.")
            return NetworkProblem(
                self.network, self.basis, _f64(X), _f64(T), _i64(offsets),
                _f64(X_val), _f64(T_val), _i64(labels_val), int(utility),
                float(total_sum_squares), float(l2), float(clip_norm),
                float(learning_rate), _f64(weights), row_weights, bool(record_level))
        net = self.network
        direction = self.basis[0]
        A, C = _network_line.line_rows(net.theta0, direction, net.layout, X)
        A_val, C_val = self._line_rows(X_val)
        penalty = self._line_penalty()
        T_val = _f64(T_val)
        table = line_table(net, direction, A_val, C_val, T_val, *affine, line_range,
                           line_intervals)
        return NetworkLineProblem(
            net, direction, A, C, _f64(T), _i64(offsets), row_weights, float(l2),
            penalty, float(clip_norm), float(learning_rate), bool(record_level),
            table, A_val, C_val, T_val, *affine, _f64(weights), bool(joint))


# --- the family ----------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkSpec:
    """A multilayer perceptron's hidden layers, activation and ``random_state``
    (its public initialisation; None: the valuator's public randomness)."""

    hidden_layer_sizes: tuple
    activation: str
    random_state: object = None


_OBJECTIVES = {
    nn.MLPClassifier: (
        "log loss (logistic output; softmax for three or more classes) of the "
        "network, l2 = alpha / n on the coefficients; from its Glorot "
        "initialisation (random_state, else the valuator's); solver and "
        "learning-rate parameters are step rules, replaced by the walk's"),
    nn.MLPRegressor: (
        "squared error r^2 / 2 of the network (identity output), l2 = alpha / n "
        "on the coefficients; initialisation and step rules as MLPClassifier"),
}


class NetworkFamily(Family):
    """Multilayer perceptrons: scikit-learn's packed parameters, walked from
    the network's public initialisation."""

    name = "network"
    multinomial_loss = _losses.MULTINOMIAL
    unsupported = {
        "federated": ("DPFederatedValuator walks linear models only, not "
                      "{estimator}: value clients with a network by "
                      "DPDataValuator(..., privacy_unit='group').fit(X, y, "
                      "groups=...)."),
    }

    def objective(self, estimator, *, n_parties, public=None):
        name = type(estimator).__name__
        params = estimator.get_params(deep=False)
        is_classifier = isinstance(estimator, nn.MLPClassifier)
        if not is_classifier and params.get("loss", "squared_error") != "squared_error":
            raise ValueError(
                f"{name} with loss={params['loss']!r} is not supported by the "
                f"valuators; use loss='squared_error'. {ALTERNATIVE}")
        sizes = tuple(int(h) for h in np.atleast_1d(params["hidden_layer_sizes"]))
        if not sizes or min(sizes) < 1:
            raise ValueError(
                f"{name} with hidden_layer_sizes={params['hidden_layer_sizes']!r} is "
                "not supported by the valuators; give one or more layer widths "
                f">= 1. {ALTERNATIVE}")
        if params["activation"] not in _network.ACTIVATIONS:
            raise ValueError(
                f"{name} with activation={params['activation']!r} is not supported "
                f"by the valuators. {ALTERNATIVE}")
        # scikit-learn's objective: mean loss + alpha / (2 n) ||W||^2.
        return Objective(
            _losses.LOGISTIC if is_classifier else _losses.SQUARED, is_classifier, True, 0.0,
            float(params["alpha"]) / n_parties, True,
            target_scale_degree=None if is_classifier else 2, family=self,
            details=NetworkSpec(sizes, params["activation"], params["random_state"]))

    def describe(self, estimator_class):
        return _OBJECTIVES[estimator_class]

    def space(self, view, subspace, *, validation_objective, seed, refine=None):
        """The network's space: every parameter, a basis, or the public line
        toward the network fitted on the validation set (``line_center`` the
        distance to it). ``theta0`` is drawn from the network's
        ``random_state`` or, when unset, from ``seed``."""
        if hasattr(view.X, "project_on"):
            raise ValueError("DPDataValuator on Dask input does not support a "
                             "neural network's walk (it reads whole rows at "
                             "every step): pass numpy arrays.")
        spec = view.objective.details
        sizes = [view.X.shape[1], *spec.hidden_layer_sizes, view.T.shape[1]]
        random_state = check_random_state(
            seed if spec.random_state is None else spec.random_state)
        network = make_network(sizes, spec.activation, view.loss, random_state)
        if subspace is None:
            return NetworkSpace(network)
        if isinstance(subspace, str):  # "public"
            with one_blas_thread():
                direction, distance = public_direction(
                    network, view.X_val, view.T_val,
                    validation_objective.l2_per_sample, view.val_weights)
            return NetworkSpace(network, direction[None], distance)
        return NetworkSpace(network, check_basis(
            subspace, len(network.theta0), "the network's coefficients, then its "
            "intercepts, packed as scikit-learn packs them"))

    def walk_kernel(self, view, subspace, utility):
        if isinstance(subspace, str):
            return (_network_line.line_walk, "a network's walk along its public line",
                    None)
        return _network.walk, "a network's full-space walk", None

    # --- the private fit of the public model -------------------------------------------

    private_fit_on_dask = False
    walks_on_dask = False

    def private_fit_unsupported(self, estimator):
        if not isinstance(estimator, nn.MLPClassifier):
            return (f"{type(estimator).__name__} is a network regressor: its "
                    "private fit is not built (its targets' standardisation "
                    "moves the output layer only); MLPClassifier's is")
        try:
            self.objective(estimator, n_parties=1)
        except ValueError as error:
            return str(error).split(". ")[0]
        return None

    def n_fit_params(self, estimator, n_features, n_outputs):
        sizes = [n_features, *np.atleast_1d(estimator.hidden_layer_sizes), n_outputs]
        return int(sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:])))

    def fit_descent(self, problem):
        """Adam on the released mean gradients (post-processing), from the
        validation network: ``NETWORK_FIT_STEPS`` steps of rate
        ``NETWORK_FIT_RATE``, scikit-learn's moment decays."""
        def step():
            moments = {}

            def update(t, gradient):
                first = moments.get("first", np.zeros_like(gradient))
                second = moments.get("second", np.zeros_like(gradient))
                first = ADAM_BETAS[0] * first + (1 - ADAM_BETAS[0]) * gradient
                second = ADAM_BETAS[1] * second + (1 - ADAM_BETAS[1]) * gradient**2
                moments.update(first=first, second=second)
                corrected = first / (1 - ADAM_BETAS[0] ** (t + 1))
                scale = np.sqrt(second / (1 - ADAM_BETAS[1] ** (t + 1))) + 1e-8
                return NETWORK_FIT_RATE * corrected / scale

            return update

        return FitDescent(NETWORK_FIT_STEPS, step, dict(
            n_steps=NETWORK_FIT_STEPS, step_rule="adam", rate=NETWORK_FIT_RATE,
            betas=ADAM_BETAS))

    def gradient_sum(self, problem, *, clip, unit):
        """The clipped sums of :func:`skdpval.kernels._fit_sums.network_gradient_sum`
        on the rows in memory (a network's fit on Dask input is refused)."""
        if hasattr(problem.X, "sum_blocks"):
            raise ValueError(DASK_FIT_REFUSED)
        sizes = [problem.X.shape[1], *problem.details.hidden_layer_sizes,
                 problem.T.shape[1]]
        layout = _network.network_layout(sizes)
        act = _network.act_flag(_network.ACTIVATIONS[problem.details.activation])
        loss = _network.loss_flag(problem.loss)
        X, T = _f64(problem.X), _f64(problem.T)
        weights = (unit_weights(len(X)) if problem.row_weights is None
                   else _f64(problem.row_weights))
        offsets = _i64(problem.offsets)
        units = _network.n_units(layout)

        # The parties in contiguous chunks, one a thread (the kernel releases
        # the GIL): integer sums, so the total's bits do not depend on the split.
        n_parties = len(offsets) - 1
        n_chunks = max(1, min(numba.get_num_threads(), n_parties // MIN_CHUNK_PARTIES))
        edges = np.linspace(0, n_parties, n_chunks + 1).astype(np.int64)

        def chunk_sum(theta, lo, hi):
            out = np.empty(theta.size, dtype=np.int64)
            fit_sums.network_gradient_sum(
                theta, layout, act, loss, X, T, weights, offsets[lo:hi + 1],
                float(problem.l2), float(clip), float(unit), np.zeros(units),
                np.zeros(units), np.empty(theta.size), out)
            return out

        def total(theta):
            flat = _f64(theta.ravel())
            if n_chunks == 1:
                return chunk_sum(flat, 0, n_parties).reshape(theta.shape)
            with ThreadPoolExecutor(n_chunks) as pool:
                parts = list(pool.map(lambda lo, hi: chunk_sum(flat, lo, hi),
                                      edges[:-1], edges[1:]))
            return np.sum(parts, axis=0).reshape(theta.shape)

        return total

    def parameters_of(self, model, n_outputs, n_columns, has_intercept,
                      intercept_scaling):
        """A fitted network's packed parameters (scikit-learn's packing)."""
        return np.hstack([a.ravel() for a in model.coefs_ + model.intercepts_])

    def with_parameters(self, model, theta, has_intercept, intercept_scaling):
        """A copy of ``model`` whose packed parameters are ``theta``."""
        fitted = copy.deepcopy(model)
        theta, start = np.ravel(theta), 0
        for name in ("coefs_", "intercepts_"):
            arrays = []
            for a in getattr(model, name):
                arrays.append(theta[start:start + a.size].reshape(a.shape).copy())
                start += a.size
            setattr(fitted, name, arrays)
        return fitted


register_family(nn.MLPClassifier, nn.MLPRegressor)(NetworkFamily)
refuse(nn.BernoulliRBM,
       "it is an unsupervised feature learner without targets: there is no "
       "labelled utility to value data by", "MLPClassifier")
