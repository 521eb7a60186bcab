"""The linear family: scikit-learn's linear models, read as per-sample objectives.

Every supported model is read as the per-sample objective

    w_i loss(x_i W + b, y_i) + (l2 / 2) ||W||^2 + l1 ||W||_1

(``w_i`` the row's weight: ``class_weight`` times ``sample_weight``, both
public; the penalties on the coefficients ``W``, and on the intercept too
where liblinear penalises it), scaled as the estimator scales its own
objective, so that the walk's mean over parties has the estimator's
minimiser. :data:`_ESTIMATORS` maps each supported estimator of
``sklearn.linear_model`` and ``sklearn.svm`` to a builder of its
:class:`~skdpval.families.Objective`; :data:`_REFUSED` lists the others
with the reason (the coverage test and the docs' coverage table read both;
the user guide's "Models" page gives every mapping in full). Only the
parameters of the objective (and ``fit_intercept``) define the walk: solver
settings such as ``max_iter`` or ``tol`` play no part, since the walk is its
own optimiser. The ``*CV`` variants run their own cross-validation on the
public validation set only (:meth:`LinearFamily.public_params`); the plain
model with the chosen hyper-parameters is walked.

Where the walk lives (:meth:`LinearFamily.space`): every parameter
(:class:`FullSpace`, the seed paper's Algorithm 1), or the span of a public
basis (:class:`Subspace`; one direction is the public line, the default:
the direction of the model fitted on the validation set, or fitted
privately on the training rows).
"""

import copy
import warnings
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
from scipy.optimize import minimize
from sklearn import linear_model as lm
from sklearn import svm
from sklearn.base import clone

from ..exceptions import FIRST_FIT_SECONDS
from ..kernels import _fit_sums as fit_sums
from ..kernels import MarginLoss, _linear, _losses, _math, _subspace, _subspace_problem
from ._base import (ALTERNATIVE, Family, Objective, check_class_weight,
                    one_blas_thread, refuse, register_family)

# Regression losses whose targets the walk standardises by the public y_val
# mean and std, with the degree of homogeneity of the loss: scaling the
# residual and the loss's own parameter (huber's epsilon) by s scales the
# loss by s**degree. The L2 penalty keeps its alpha for degree 2.
TARGET_SCALE_DEGREE = {_losses.SQUARED: 2, _losses.HUBER: 2}

# Curvature bound of each loss in the margin (its second derivative's
# maximum), for the private fit's preconditioner.
_CURVATURE = {_losses.LOGISTIC: 0.25, _losses.MULTINOMIAL: 0.5, _losses.SQUARED: 1.0}


@dataclass(frozen=True)
class Supported:
    """An entry of :data:`_ESTIMATORS`: ``build(params, n_samples, public) ->
    Objective``, the objective in words, and ``public_fit(estimator, X_val,
    y_val) -> dict`` of what the walk takes from the validation set (None:
    nothing)."""

    build: Callable
    objective: str
    public_fit: Callable = None


def _refuse(name, what, closest=""):
    raise ValueError(
        f"{name} with {what} is not supported by the valuators"
        + (f"; {closest}" if closest else "") + f". {ALTERNATIVE}")


def _no_positive(name, params):
    if params.get("positive", False):
        _refuse(name, "positive=True", "the walk is unconstrained SGD, which "
                "keeps no sign constraint: use positive=False")


def _sgd_penalty(name, params):
    """``(l2, l1)`` of SGD's ``alpha R(W)``."""
    penalty, alpha = params["penalty"], float(params["alpha"])
    if penalty is None:
        return 0.0, 0.0
    if penalty == "l2":
        return alpha, 0.0
    if penalty == "l1":
        return 0.0, alpha
    if penalty == "elasticnet":
        ratio = float(params["l1_ratio"])
        return alpha * (1.0 - ratio), alpha * ratio
    _refuse(name, f"penalty={penalty!r}", "use 'l2', 'l1', 'elasticnet' or None")


_SGD_LOSSES = {
    "log_loss": _losses.LOGISTIC, "hinge": _losses.HINGE, "squared_hinge": _losses.SQUARED_HINGE,
    "modified_huber": _losses.MODIFIED_HUBER, "perceptron": _losses.PERCEPTRON,
    "squared_error": _losses.SQUARED, "huber": _losses.HUBER,
    "epsilon_insensitive": _losses.EPSILON_INSENSITIVE,
    "squared_epsilon_insensitive": _losses.SQUARED_EPSILON_INSENSITIVE,
}
_REGRESSION_LOSSES = ("squared_error", "huber", "epsilon_insensitive",
                      "squared_epsilon_insensitive")


def _sgd(is_classifier, name, fixed_loss=None):
    def build(params, n_samples, public):
        loss = fixed_loss or params["loss"]
        allowed = _SGD_LOSSES if is_classifier else _REGRESSION_LOSSES
        if loss not in allowed:
            _refuse(name, f"loss={loss!r}", f"supported: {sorted(allowed)}")
        l2, l1 = _sgd_penalty(name, params)
        return Objective(_SGD_LOSSES[loss], is_classifier,
                         bool(params["fit_intercept"]),
                         float(params.get("epsilon", 0.0)), l2, False, l1,
                         class_weight=params.get("class_weight"),
                         direction_loss=_losses.HINGE if loss == "perceptron" else None)
    return build


def _passive_aggressive(is_classifier):
    losses = ({"hinge": _losses.HINGE, "squared_hinge": _losses.SQUARED_HINGE} if is_classifier
              else {"epsilon_insensitive": _losses.EPSILON_INSENSITIVE,
                    "squared_epsilon_insensitive": _losses.SQUARED_EPSILON_INSENSITIVE})

    def build(params, n_samples, public):
        if params["loss"] not in losses:
            _refuse("PassiveAggressive", f"loss={params['loss']!r}",
                    f"supported: {sorted(losses)}")
        return Objective(losses[params["loss"]], is_classifier,
                         bool(params["fit_intercept"]),
                         float(params.get("epsilon", 0.0)), 0.0, False,
                         class_weight=params.get("class_weight"))
    return build


def _logistic_penalty(params):
    """``(penalty, l1_ratio)`` as LogisticRegression.fit resolves them."""
    penalty, ratio = params.get("penalty", "deprecated"), params.get("l1_ratio")
    if penalty == "deprecated":
        ratio = 0.0 if ratio is None else float(ratio)
        penalty = "l2" if ratio == 0 else "l1" if ratio == 1 else "elasticnet"
        if np.isinf(float(params["C"])):
            penalty = None
    return penalty, {"l2": 0.0, "l1": 1.0, None: 0.0}.get(
        penalty, 0.0 if ratio is None else float(ratio))


def _logistic(params, n_samples, public):
    penalty, ratio = _logistic_penalty(params)
    C = float(params["C"])
    if penalty not in ("l2", "l1", "elasticnet", None):
        _refuse("LogisticRegression", f"penalty={penalty!r}")
    scale = 0.0 if penalty is None or np.isinf(C) else 1.0 / (C * n_samples)
    liblinear = params.get("solver") == "liblinear"
    return Objective(_losses.LOGISTIC, True, bool(params["fit_intercept"]), 0.0,
                     scale * (1.0 - ratio), not liblinear, scale * ratio,
                     penalize_intercept=liblinear,
                     intercept_scaling=float(params["intercept_scaling"])
                     if liblinear else 1.0, binary_only=liblinear,
                     class_weight=params.get("class_weight"))


def _linear_svc(params, n_samples, public):
    if params.get("multi_class", "ovr") != "ovr":
        _refuse("LinearSVC", f"multi_class={params['multi_class']!r}",
                "use multi_class='ovr'")
    losses = {"hinge": _losses.HINGE, "squared_hinge": _losses.SQUARED_HINGE}
    scale = 1.0 / (float(params["C"]) * n_samples)
    l1 = params["penalty"] == "l1"
    return Objective(losses[params["loss"]], True, bool(params["fit_intercept"]),
                     0.0, 0.0 if l1 else scale, False, scale if l1 else 0.0,
                     penalize_intercept=True,
                     intercept_scaling=float(params["intercept_scaling"]),
                     class_weight=params.get("class_weight"))


def _linear_svr(params, n_samples, public):
    losses = {"epsilon_insensitive": _losses.EPSILON_INSENSITIVE,
              "squared_epsilon_insensitive": _losses.SQUARED_EPSILON_INSENSITIVE}
    return Objective(losses[params["loss"]], False, bool(params["fit_intercept"]),
                     float(params["epsilon"]), 1.0 / (float(params["C"]) * n_samples),
                     False, penalize_intercept=True,
                     intercept_scaling=float(params["intercept_scaling"]))


def _ridge(is_classifier):
    def build(params, n_samples, public):
        _no_positive("Ridge", params)
        alpha = np.asarray(params["alpha"], dtype=float)
        if alpha.ndim != 0:
            _refuse("Ridge", "a per-target alpha array", "give one alpha")
        return Objective(_losses.SQUARED, is_classifier, bool(params["fit_intercept"]),
                         0.0, float(alpha) / n_samples, False,
                         class_weight=params.get("class_weight"))
    return build


def _linear_regression(params, n_samples, public):
    _no_positive("LinearRegression", params)
    return Objective(_losses.SQUARED, False, bool(params["fit_intercept"]), 0.0, 0.0, False)


def _elastic_net(params, n_samples, public):
    _no_positive("ElasticNet", params)
    alpha, ratio = float(params["alpha"]), float(params.get("l1_ratio", 1.0))
    return Objective(_losses.SQUARED, False, bool(params["fit_intercept"]), 0.0,
                     alpha * (1.0 - ratio), False, alpha * ratio,
                     weights_sum_to_n=True)


def _huber(params, n_samples, public):
    scale = float((public or {}).get("scale", 1.0))
    return Objective(_losses.HUBER, False, bool(params["fit_intercept"]),
                     float(params["epsilon"]) * scale,
                     float(params["alpha"]) * scale / n_samples, False)


def _huber_scale(estimator, X_val, y_val):
    return {"scale": float(estimator.fit(X_val, y_val).scale_)}


def _quantile(params, n_samples, public):
    return Objective(_losses.PINBALL, False, bool(params["fit_intercept"]),
                     float(params["quantile"]), 0.0, False, float(params["alpha"]),
                     weights_sum_to_n=True)


def _tweedie(power=None):
    def build(params, n_samples, public):
        p = float(params["power"]) if power is None else power
        link = params.get("link", "auto")
        if link == "auto":
            link = "identity" if p <= 0 else "log"
        alpha = float(params["alpha"])
        if link == "identity":
            if p != 0:
                _refuse("TweedieRegressor", f"power={p:g}, link='identity'",
                        "the walk implements the identity link for power 0 "
                        "(squared error) and the log link for any power")
            return Objective(_losses.SQUARED, False, bool(params["fit_intercept"]), 0.0,
                             alpha, False, weights_sum_to_n=True)
        domain = "real" if p <= 0 else "nonnegative" if p < 2 else "positive"
        return Objective(_losses.TWEEDIE, False, bool(params["fit_intercept"]), p, alpha,
                         False, weights_sum_to_n=True, target_domain=domain)
    return build


def _cross_validated(plain, chosen):
    """A *CV variant: ``chosen(fitted) -> dict`` of the plain model's parameters
    chosen on the validation set; the plain model with them is walked (with
    the plain model's defaults before the public fit)."""
    def public_fit(estimator, X_val, y_val):
        with warnings.catch_warnings():
            # LogisticRegressionCV warns of changing defaults, not of the fit.
            warnings.simplefilter("ignore", FutureWarning)
            return chosen(estimator.fit(X_val, y_val))

    def build(params, n_samples, public):
        plain_params = plain().get_params()
        plain_params.update({k: v for k, v in params.items() if k in plain_params})
        plain_params.update(public or {})
        return _ESTIMATORS[plain].build(plain_params, n_samples, None)

    return Supported(build, f"that of {plain.__name__}, hyper-parameters chosen "
                     "by its cross-validation on the validation set", public_fit)


def _first(value):
    return float(np.ravel(value)[0])


_ESTIMATORS = {
    lm.LinearRegression: Supported(_linear_regression, "r^2 / 2"),
    lm.Ridge: Supported(_ridge(False), "r^2 / 2, l2 = alpha / n"),
    lm.RidgeClassifier: Supported(
        _ridge(True), "r^2 / 2 on targets in {-1, +1}, l2 = alpha / n"),
    lm.Lasso: Supported(_elastic_net, "r^2 / 2, l1 = alpha"),
    lm.ElasticNet: Supported(
        _elastic_net, "r^2 / 2, l1 = alpha l1_ratio, l2 = alpha (1 - l1_ratio)"),
    lm.LassoLars: Supported(_elastic_net, "Lasso's: r^2 / 2, l1 = alpha"),
    lm.LogisticRegression: Supported(
        _logistic, "log loss (multinomial for 3+ classes), l2 = (1 - l1_ratio) "
        "/ (C n), l1 = l1_ratio / (C n); liblinear penalises the intercept"),
    lm.SGDClassifier: Supported(
        _sgd(True, "SGDClassifier"), "its loss, alpha R(W) (l2, l1, elasticnet)"),
    lm.SGDRegressor: Supported(
        _sgd(False, "SGDRegressor"), "its loss, alpha R(W) (l2, l1, elasticnet)"),
    lm.Perceptron: Supported(
        _sgd(True, "Perceptron", "perceptron"), "max(0, -y f(x)), alpha R(W)"),
    lm.PassiveAggressiveClassifier: Supported(
        _passive_aggressive(True), "hinge or squared hinge, no penalty (C is a "
        "step rule, replaced by the walk's step)"),
    lm.PassiveAggressiveRegressor: Supported(
        _passive_aggressive(False), "epsilon-insensitive or its square, no "
        "penalty (C is a step rule, replaced by the walk's step)"),
    lm.HuberRegressor: Supported(
        _huber, "huber at threshold epsilon scale, l2 = alpha scale / n; scale "
        "fitted on the validation set", _huber_scale),
    lm.QuantileRegressor: Supported(_quantile, "pinball at quantile, l1 = alpha"),
    lm.PoissonRegressor: Supported(_tweedie(1.0), "half Poisson deviance (log "
                                   "link), l2 = alpha; y >= 0"),
    lm.GammaRegressor: Supported(_tweedie(2.0), "half Gamma deviance (log link), "
                                 "l2 = alpha; y > 0"),
    lm.TweedieRegressor: Supported(_tweedie(), "half Tweedie deviance at power "
                                   "(log link; identity: power 0), l2 = alpha"),
    svm.LinearSVC: Supported(
        _linear_svc, "squared hinge or hinge, l2 (or l1) = 1 / (C n), intercept "
        "penalised (intercept_scaling); one-vs-rest"),
    svm.LinearSVR: Supported(
        _linear_svr, "epsilon-insensitive or its square, l2 = 1 / (C n), "
        "intercept penalised"),
    lm.RidgeCV: _cross_validated(lm.Ridge, lambda f: {"alpha": _first(f.alpha_)}),
    lm.RidgeClassifierCV: _cross_validated(
        lm.RidgeClassifier, lambda f: {"alpha": _first(f.alpha_)}),
    lm.LassoCV: _cross_validated(lm.Lasso, lambda f: {"alpha": float(f.alpha_)}),
    lm.ElasticNetCV: _cross_validated(
        lm.ElasticNet, lambda f: {"alpha": float(f.alpha_),
                                  "l1_ratio": float(f.l1_ratio_)}),
    lm.LassoLarsCV: _cross_validated(
        lm.LassoLars, lambda f: {"alpha": float(f.alpha_)}),
    lm.LassoLarsIC: _cross_validated(
        lm.LassoLars, lambda f: {"alpha": float(f.alpha_)}),
    lm.LogisticRegressionCV: _cross_validated(
        lm.LogisticRegression, lambda f: {
            "C": _first(f.C_),
            "l1_ratio": 0.0 if f.l1_ratio_ is None or np.all(
                np.isnan(np.ravel(np.asarray(f.l1_ratio_, dtype=float))))
            else _first(f.l1_ratio_)}),
}

_REFUSED = {
    lm.Lars: ("least-angle regression stops after n_nonzero_coefs "
                     "steps: a path, not a penalised objective",
                     "LinearRegression, or Lasso for sparsity"),
    lm.LarsCV: ("it chooses a point on the least-angle path, not a "
                       "penalised objective", "LassoCV"),
    lm.OrthogonalMatchingPursuit: (
        "it constrains the number of nonzero coefficients (an L0 constraint), "
        "which has no gradient", "Lasso"),
    lm.OrthogonalMatchingPursuitCV: (
        "it constrains the number of nonzero coefficients (an L0 constraint), "
        "which has no gradient", "LassoCV"),
    lm.ARDRegression: (
        "its per-feature priors are re-estimated from all the data at once "
        "(evidence maximisation), not a sum of per-sample losses", "RidgeCV"),
    lm.BayesianRidge: (
        "its regularisation is re-estimated from all the data at once "
        "(evidence maximisation), not a sum of per-sample losses", "RidgeCV"),
    lm.RANSACRegressor: (
        "it refits on consensus subsets chosen from all the data", "HuberRegressor"),
    lm.TheilSenRegressor: (
        "its estimate is a spatial median over subsets of the data",
        "HuberRegressor or QuantileRegressor"),
    lm.SGDOneClassSVM: (
        "it is an outlier detector without targets: there is no labelled "
        "utility to value data by", "SGDClassifier(loss='hinge')"),
    lm.MultiTaskLasso: ("its joint L2/L1 norm couples several targets",
                               "Lasso, one target at a time"),
    lm.MultiTaskLassoCV: ("its joint L2/L1 norm couples several targets",
                                 "LassoCV, one target at a time"),
    lm.MultiTaskElasticNet: ("its joint L2/L1 norm couples several targets",
                                    "ElasticNet, one target at a time"),
    lm.MultiTaskElasticNetCV: (
        "its joint L2/L1 norm couples several targets",
        "ElasticNetCV, one target at a time"),
    svm.SVC: ("a kernel machine's parameters are one weight per training "
                     "sample, not a shared linear model",
                     "LinearSVC(loss='hinge'), or LinearSVC in a Pipeline after "
                     "a kernel approximation (Nystroem, RBFSampler)"),
    svm.NuSVC: ("a kernel machine's parameters are one weight per training "
                       "sample, not a shared linear model", "LinearSVC"),
    svm.SVR: ("a kernel machine's parameters are one weight per training "
                     "sample, not a shared linear model", "LinearSVR"),
    svm.NuSVR: ("a kernel machine's parameters are one weight per training "
                       "sample, not a shared linear model", "LinearSVR"),
    svm.OneClassSVM: ("it is an outlier detector without targets: there "
                             "is no labelled utility to value data by",
                             "LinearSVC"),
}



def _entry(estimator):
    """The :class:`Supported` entry of ``estimator``'s class or nearest base
    class, or None (a subclass family's own estimator)."""
    for cls in type(estimator).__mro__:
        if cls in _ESTIMATORS:
            return _ESTIMATORS[cls]
    return None


class LinearFamily(Family):
    """Linear models: margins ``x . theta``, the objective's loss on them."""

    name = "linear"
    multinomial_loss = _losses.MULTINOMIAL
    supports = frozenset({"federated", "dask", "private fit"})

    def objective(self, estimator, *, n_parties, public=None):
        entry = _entry(estimator)
        if entry is None:
            raise TypeError(f"{type(estimator).__name__} is not a linear model the "
                            f"valuators map. {ALTERNATIVE}")
        objective = entry.build(estimator.get_params(deep=False), n_parties, public)
        check_class_weight(type(estimator).__name__, objective.class_weight)
        degree = (None if objective.is_classifier
                  else TARGET_SCALE_DEGREE.get(objective.loss))
        return replace(objective, target_scale_degree=degree, family=self)

    def describe(self, estimator_class):
        """The objective of ``estimator_class`` in words (the docs' table)."""
        return _ESTIMATORS[estimator_class].objective

    def public_params(self, estimator, X_val, y_val, seed):
        """The ``*CV`` variants' choices and HuberRegressor's scale, fitted on
        the validation set only; ``{}`` for other models."""
        entry = _entry(estimator)
        if entry is None or entry.public_fit is None:
            return {}
        model = clone(estimator)
        if "random_state" in model.get_params() and model.random_state is None:
            model.set_params(random_state=seed)
        try:
            return entry.public_fit(model, X_val, y_val)
        except ValueError as error:
            raise ValueError(
                f"Choosing the parameters of {type(estimator).__name__} fits it on "
                f"the validation set, and that failed: {error}") from error

    def intercept_column(self, objective):
        return objective.fit_intercept

    def encode_targets(self, objective, y_index, n_classes):
        if objective.binary_only and n_classes > 2:
            raise ValueError(
                f"LogisticRegression(solver='liblinear') takes two classes only, as "
                f"in scikit-learn, and there are {n_classes}: use another solver "
                "(multinomial), or LinearSVC / SGDClassifier (one-vs-rest).")
        return super().encode_targets(objective, y_index, n_classes)

    # --- where the walk lives ----------------------------------------------------------

    def space(self, view, subspace, *, validation_objective, seed=None, refine=None):
        n_outputs, n_columns = view.T.shape[1], view.X.shape[1]
        if subspace is None:
            return FullSpace()
        if isinstance(subspace, str):  # "public"
            direction, norm = self.public_direction(view, validation_objective)
            if refine is not None:
                direction, norm = refine(direction * norm)
            return Subspace(direction.reshape(1, -1), norm,
                            (direction * norm).reshape(n_outputs, -1))
        return Subspace(check_basis(subspace, n_outputs * n_columns,
                                    f"{n_outputs} output(s) x {n_columns} "
                                    "columns, intercept last"))

    def walk_kernel(self, view, subspace, utility):
        if subspace is None:
            return _linear._walk, "the full-space walk", None
        if not isinstance(subspace, str):
            return _subspace._walk, "the walk in a subspace", None
        default = _losses.kernel_codes(view.loss, utility, view.T.shape[1]) == (None,
                                                                              None)
        return (_subspace._line_walk, "the default walk along a public line",
                FIRST_FIT_SECONDS if default else None)

    def public_direction(self, view, validation_objective):
        """The model's objective minimised on the validation set: a unit vector
        and its norm.

        The model's own loss and penalty (as it weighs them on the ``n_val``
        validation rows; an L1 term over the targets' scale, as in the walk),
        minimised from zero by L-BFGS. Only the validation set is read.
        """
        n_params = view.T.shape[1] * view.X.shape[1]
        loss = (view.loss if validation_objective.direction_loss is None
                else validation_objective.direction_loss)
        objective = _subspace_problem.mean_loss_and_gradient(
            None, view.X_val, view.T_val, loss=loss, loss_param=view.loss_param,
            l2=validation_objective.l2_per_sample,
            l1=validation_objective.l1_per_sample / view.target_std,
            row_weights=view.val_weights, n_penalized=view.n_penalized)
        with one_blas_thread():
            theta = minimize(objective, np.zeros(n_params), jac=True,
                             method="L-BFGS-B", options=dict(maxiter=500)).x
        norm = np.linalg.norm(theta)
        if not np.isfinite(norm) or norm == 0:
            raise ValueError(
                "subspace='public': the model fitted on the validation set has "
                "all-zero or non-finite parameters, which define no direction. "
                "Pass a basis array, or subspace=None.")
        return theta / norm, float(norm)

    # --- the private fit of the public model -------------------------------------------

    refines_line = True

    def private_fit_unsupported(self, estimator):
        try:
            self.objective(estimator, n_parties=1)
        except (TypeError, ValueError) as error:
            return (f"{type(estimator).__name__} is not a linear model the "
                    f"valuators map to an objective ({str(error).split('. ')[0]})")
        return None

    def curvature(self, loss):
        if isinstance(loss, MarginLoss):
            return loss.curvature
        return _CURVATURE.get(loss, 1.0)

    def gradient_sum(self, problem, *, clip, unit):
        """The clipped sums of :mod:`skdpval.kernels._fit_sums`: on the rows
        in memory, or on the blocks of rows held by Dask (one row a party)."""
        T, X, offsets = _math._f64(problem.T), problem.X, problem.offsets
        one_row = len(offsets) - 1 == len(X) and _math.one_row_each(offsets)
        args = (None if one_row else _math._i64(offsets),
                _losses.loss_argument(problem.loss),
                float(problem.loss_param), float(problem.l2), float(problem.l1),
                int(problem.n_penalized), float(clip), float(unit))
        if hasattr(X, "sum_blocks"):  # Dask rows
            if not one_row:
                raise ValueError("The private fit on Dask input needs one row a "
                                 "party.")
            total = (X.sum_blocks(fit_sums.unweighted_rows_gradient_sum, T)
                     if problem.row_weights is None else
                     X.sum_blocks(fit_sums.rows_gradient_sum, T,
                                  _math._f64(problem.row_weights)))
            return lambda theta: total(theta, *args)
        X = _math._f64(X)
        weights = (_math.unit_weights(len(X)) if problem.row_weights is None
                   else _math._f64(problem.row_weights))
        return lambda theta: fit_sums.rows_gradient_sum(X, T, weights, theta, *args)

    def parameters_of(self, model, n_outputs, n_columns, has_intercept,
                      intercept_scaling):
        """A fitted linear model's parameters in the kernels' layout, or zeros
        when its shape differs (e.g. a class missing from the validation set)."""
        coef = np.atleast_2d(np.asarray(model.coef_, dtype=np.float64))
        n_features = n_columns - bool(has_intercept)
        if coef.shape != (n_outputs, n_features):
            return np.zeros((n_outputs, n_columns))
        theta = np.zeros((n_outputs, n_columns))
        theta[:, :n_features] = coef
        if has_intercept:
            intercept = np.asarray(model.intercept_, dtype=np.float64)
            theta[:, -1] = np.broadcast_to(intercept, (n_outputs,)) / intercept_scaling
        return theta

    def with_parameters(self, model, theta, has_intercept, intercept_scaling):
        """A copy of ``model`` whose coefficients (and intercept) are ``theta``."""
        fitted = copy.deepcopy(model)
        n_features = theta.shape[1] - bool(has_intercept)
        fitted.coef_ = theta[:, :n_features].reshape(np.shape(model.coef_)).copy()
        if has_intercept:
            intercept = theta[:, -1] * intercept_scaling
            fitted.intercept_ = (float(intercept[0]) if np.ndim(model.intercept_) == 0
                                 else intercept.reshape(np.shape(model.intercept_)))
        return fitted


register_family(*_ESTIMATORS)(LinearFamily)
for _cls, (_reason, _closest) in _REFUSED.items():
    refuse(_cls, _reason, _closest)


# --- where the walk lives ------------------------------------------------------------


class FullSpace:
    """Releases of every parameter: ``(n_outputs, n_columns)`` a step."""

    basis = public_model = None
    line_center = 0.0
    release_dimension = "all parameters"

    def coordinates(self, n_params):
        """Numbers in one release: every parameter."""
        return int(n_params)

    def initial_theta(self, n_outputs, n_columns):
        """Where every walk starts: zero."""
        return np.zeros((n_outputs, n_columns))

    def party_gradients(self, theta, X, T, offsets, walk=None, **settings):
        """Unclipped gradient of each party at ``theta``: ``(n_parties, n_params)``."""
        gradients = _linear.party_gradients(theta, X, T, offsets, **settings)
        return gradients.reshape(len(offsets) - 1, -1)

    def sgd_pass(self, X, T, walk=None, **model):
        """Parameters after one clipped, noiseless SGD pass from zero."""
        return _linear.sgd_pass(X, T, theta_init=np.zeros((T.shape[1], X.shape[1])), **model)

    def utilities(self, thetas, X_val, T_val, labels_val, **settings):
        """The validation utility of each of ``thetas``, in one call."""
        return _linear.utilities_of_thetas(np.asarray(thetas), X_val, T_val, labels_val,
                                     **settings)

    def margin_scale(self, X_val, n_outputs):
        """RMS over validation rows of the norm of d(margins) / d(release)."""
        return float(np.sqrt(np.mean(n_outputs * np.sum(X_val**2, axis=1))))

    def problem(self, X, T, offsets, X_val, T_val, labels_val, *, line_range,
                line_intervals, **settings):
        """The full-space walk's problem (no line to tabulate)."""
        return _linear.make_problem(X, T, offsets, X_val, T_val, labels_val, **settings)


class Subspace:
    """Releases of ``z`` in ``theta = B^T z``: ``m`` numbers a step."""

    def __init__(self, basis, line_center=0.0, public_model=None):
        self.basis, self.line_center, self.public_model = basis, line_center, public_model
        self.release_dimension = int(basis.shape[0])

    def coordinates(self, n_params):
        """Numbers in one release: one per direction of the basis."""
        return self.release_dimension

    initial_theta = FullSpace.initial_theta

    def party_gradients(self, theta, X, T, offsets, **settings):
        """Unclipped gradient in ``z`` of each party at ``theta``: ``(n, m)``."""
        return _subspace_problem.party_gradients(self.basis, theta, X, T, offsets, **settings)

    def sgd_pass(self, X, T, **model):
        """``theta = B^T z`` after one clipped, noiseless SGD pass from zero."""
        return _subspace_problem.sgd_pass(self.basis, X, T, **model)

    def utilities(self, thetas, X_val, T_val, labels_val, **settings):
        """The validation utility of each of ``thetas``, in one call."""
        return _subspace_problem.utilities_of_thetas(self.basis, np.asarray(thetas), X_val,
                                             T_val, labels_val, **settings)

    def margin_scale(self, X_val, n_outputs):
        """RMS over validation rows of the norm of d(margins) / d(release)."""
        F = _subspace_problem.project_rows(self.basis, X_val, n_outputs)
        return float(np.sqrt(np.mean(np.sum(F**2, axis=(1, 2)))))

    def problem(self, X, T, offsets, X_val, T_val, labels_val, *, line_range,
                line_intervals, **settings):
        """The subspace walk's problem; along one direction the utility is
        tabulated over ``line_range`` (:mod:`skdpval.kernels._line`)."""
        return _subspace_problem.make_subspace_problem(
            self.basis, X, T, offsets, X_val, T_val, labels_val, **settings,
            line_range=line_range, line_intervals=line_intervals)


def check_basis(subspace, n_params, layout):
    """``subspace`` as an ``(m, n_params)`` array with finite orthonormal rows;
    ``layout`` says how the parameters are laid out (for the message)."""
    basis = np.asarray(subspace, dtype=np.float64)
    if basis.ndim != 2 or basis.shape[1] != n_params or len(basis) < 1:
        raise ValueError(
            f"subspace must be 'public', None or an array of shape (m, "
            f"{n_params}) (m >= 1, one column per parameter: {layout}), got "
            f"shape {basis.shape}.")
    if not np.all(np.isfinite(basis)) or not np.allclose(
            basis @ basis.T, np.eye(len(basis)), atol=1e-8):
        raise ValueError("subspace must have finite, orthonormal rows "
                         "(basis @ basis.T equal to the identity).")
    return basis
