"""Map a scikit-learn linear model to the per-sample objective the walk minimises.

Every supported model is read as the per-sample objective

    w_i loss(x_i W + b, y_i) + (l2 / 2) ||W||^2 + l1 ||W||_1

(``w_i`` the row's weight: ``class_weight`` times ``sample_weight``, both
public; the penalties on the coefficients ``W``, and on the intercept too
where liblinear penalises it), scaled as the estimator scales its own
objective, so that the walk's mean over parties has the estimator's
minimiser. ``REGISTRY`` maps every estimator of ``sklearn.linear_model``
and of ``sklearn.svm`` either to a :class:`Supported` entry (a builder of
the :class:`ModelSpec` and the objective it walks) or to a :class:`Refused`
one with the reason; the coverage test and the docs' coverage table read it.
The estimators never branch on the model.

The mappings (``n`` parties; ``C``, ``alpha``, ``l1_ratio`` the estimator's):

- SGDClassifier / SGDRegressor / Perceptron: ``mean loss + alpha R(W)``,
  ``R`` = ``||W||^2 / 2`` (l2), ``||W||_1`` (l1) or ``(1 - l1_ratio)
  ||W||^2 / 2 + l1_ratio ||W||_1`` (elasticnet): ``l2 = alpha`` or
  ``alpha (1 - l1_ratio)``, ``l1 = alpha`` or ``alpha l1_ratio``. Losses:
  log_loss, hinge, squared_hinge, modified_huber, perceptron,
  squared_error (``r^2 / 2``), huber, epsilon_insensitive,
  squared_epsilon_insensitive (``max(0, |r| - epsilon)^2``), with the
  model's ``epsilon``. Perceptron is SGD with the perceptron loss; as zero
  minimises that loss, its public direction (``subspace="public"``) is
  the hinge loss's minimiser on the validation set, the perceptron's
  margin-1 version.
- PassiveAggressiveClassifier / Regressor: scikit-learn's own replacement is
  SGD with the same loss, no penalty and the "pa1" step; the walk minimises
  that loss (hinge / squared_hinge, epsilon_insensitive /
  squared_epsilon_insensitive) with no penalty. ``C`` caps PA's
  closed-form step ``min(C, loss / ||x||^2)``, a step-size rule that plays
  no part in the objective: the walk's own step (``learning_rate``, the
  clipped gradient) replaces it.
- LogisticRegression: ``C sum_i loss_i + (1 - l1_ratio) ||W||^2 / 2 +
  l1_ratio ||W||_1`` divided by ``C n``: ``l2 = (1 - l1_ratio) / (C n)``,
  ``l1 = l1_ratio / (C n)``, none when ``C`` is infinite (``penalty`` as
  scikit-learn resolves it from ``l1_ratio``). Binary logistic, or for
  three or more classes the multinomial loss; ``solver="liblinear"``
  penalises the intercept (its column is ``intercept_scaling``) and, as in
  scikit-learn, takes two classes only.
- LinearSVC: ``C sum_i loss_i + ||W||^2 / 2`` (penalty l2) or ``+
  ||W||_1`` (l1), loss squared_hinge or hinge, divided by ``C n``;
  liblinear penalises the intercept (column ``intercept_scaling``);
  one-vs-rest for three or more classes.
- LinearSVR: ``C sum_i loss_i + ||W||^2 / 2``, epsilon_insensitive or
  squared_epsilon_insensitive, divided by ``C n``; intercept as LinearSVC.
- Ridge / RidgeClassifier: ``sum_i r_i^2 + alpha ||W||^2`` divided by ``2 n``:
  ``r^2 / 2`` and ``l2 = alpha / n``; RidgeClassifier regresses on targets in
  {-1, +1} (one-vs-rest for more classes). LinearRegression: ``l2 = 0``.
- Lasso / LassoLars: ``||r||^2 / (2 n) + alpha ||W||_1``: ``l1 = alpha``.
  ElasticNet: ``+ alpha l1_ratio ||W||_1 + alpha (1 - l1_ratio) ||W||^2 / 2``.
- HuberRegressor: ``sum_i (sigma + H_eps(r_i / sigma) sigma) + alpha ||W||^2``
  at a fixed scale ``sigma`` is ``(2 / sigma) sum_i huber_{eps sigma}(r_i) +
  alpha ||W||^2``; divided by ``2 n / sigma``: the huber loss with threshold
  ``eps sigma`` and ``l2 = alpha sigma / n``. The scale is the ``scale_`` of
  a HuberRegressor fitted on the public validation set (recorded in
  ``chosen_params_``); scikit-learn fits it jointly with the coefficients.
- QuantileRegressor: ``mean_i pinball_q(r_i) + alpha ||W||_1``: the pinball
  loss at ``quantile``, ``l1 = alpha``.
- PoissonRegressor / GammaRegressor / TweedieRegressor: ``mean_i half
  deviance + alpha ||W||^2 / 2``: ``l2 = alpha``; the half Tweedie deviance
  with the log link at ``power`` (1 Poisson, 2 Gamma), or ``r^2 / 2`` for
  power 0 with the identity link. **Input domain:** targets ``y >= 0``
  (Poisson, ``1 <= power < 2``) or ``y > 0`` (Gamma, ``power >= 2``); the
  check reads the private targets and raises before any release (an input
  outside the domain is outside the privacy model).
- The ``*CV`` variants (RidgeCV, RidgeClassifierCV, LassoCV, ElasticNetCV,
  LassoLarsCV, LassoLarsIC, LogisticRegressionCV): the estimator's own
  cross-validation (or criterion) runs **on the public validation set**; the
  hyper-parameters it chooses (``alpha_``, ``l1_ratio_``, ``C_``) are
  recorded in the valuator's ``chosen_params_`` and the plain model with
  them is walked.

Weights: ``class_weight`` (a dict, or "balanced" computed from the public
validation labels: balanced weights from the private labels would let one
label move every other party's weight) and ``sample_weight`` multiply each
row's loss before its gradient is clipped, so a weight above 1 saturates at
the clip norm. Both are public: they are parameters, not functions of the
private data, and must not be derived from it. Where scikit-learn rescales
the weights to sum to ``n`` (Lasso, ElasticNet, the GLMs, QuantileRegressor)
they are rescaled the same way (by public numbers).

Only the parameters above (and ``fit_intercept``) define the walk: solver
settings such as ``max_iter`` or ``tol`` play no part, since the walk is its
own optimiser. Parameters that would change the objective and that the walk
does not implement (positivity constraints, Crammer-Singer) are refused.
"""

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn import linear_model as lm
from sklearn import neural_network as nn
from sklearn import svm
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline
from sklearn.utils.class_weight import compute_class_weight

from ..kernels import _kernels as K

ALTERNATIVE = ("To score labels with any model fitted on the public validation "
               "set, use DPLabelQuality.")


# Regression losses whose targets the walk standardises by the public y_val
# mean and std, with the degree of homogeneity of the loss: scaling the
# residual and the loss's own parameter (huber's epsilon) by s scales the
# loss by s**degree, so values in standardised units times s**degree are in
# the utility's own units. The L2 penalty keeps its alpha for degree 2.
TARGET_SCALE_DEGREE = {K.SQUARED: 2, K.HUBER: 2}


@dataclass(frozen=True)
class ModelSpec:
    """What the kernels need to know about the wrapped model."""

    loss: int
    is_classifier: bool
    fit_intercept: bool
    loss_param: float  # epsilon, quantile or Tweedie power (see _kernels)
    l2_per_sample: float  # already divided by n where the model sums losses
    multinomial: bool  # more than two classes: softmax (else one-vs-rest)
    l1_per_sample: float = 0.0
    penalize_intercept: bool = False  # liblinear: the intercept is a feature
    intercept_scaling: float = 1.0  # the intercept column's value
    binary_only: bool = False  # liblinear LogisticRegression
    class_weight: object = None  # None, a dict or "balanced" (from y_val)
    weights_sum_to_n: bool = False  # the model rescales sample weights
    target_domain: str = "real"  # "real", "nonnegative" or "positive"
    # The loss the public direction minimises on the validation set when the
    # model's own is minimised at zero (the perceptron's): None for the same.
    direction_loss: int = None
    # The rows get an intercept column (linear models); a network has its own.
    intercept_column: bool = True
    # A multilayer perceptron's shape and initialisation (NetworkSpec), else None.
    network: object = None


@dataclass(frozen=True)
class NetworkSpec:
    """A multilayer perceptron's hidden layers, activation and ``random_state``
    (its public initialisation; None: the valuator's public randomness)."""

    hidden_layer_sizes: tuple
    activation: str
    random_state: object = None


@dataclass(frozen=True)
class Supported:
    """A registry entry: ``build(params, n_samples, public) -> ModelSpec``.

    ``public_fit(estimator, X_val, y_val) -> dict`` returns the parameters
    the walk takes from the public validation set (CV choices, Huber's
    scale); ``None`` when it takes none.
    """

    build: Callable
    objective: str
    public_fit: Callable = None


@dataclass(frozen=True)
class Refused:
    """A registry entry for a model the walk cannot minimise."""

    reason: str
    closest: str


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
    "log_loss": K.LOGISTIC, "hinge": K.HINGE, "squared_hinge": K.SQUARED_HINGE,
    "modified_huber": K.MODIFIED_HUBER, "perceptron": K.PERCEPTRON,
    "squared_error": K.SQUARED, "huber": K.HUBER,
    "epsilon_insensitive": K.EPSILON_INSENSITIVE,
    "squared_epsilon_insensitive": K.SQUARED_EPSILON_INSENSITIVE,
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
        return ModelSpec(_SGD_LOSSES[loss], is_classifier,
                         bool(params["fit_intercept"]),
                         float(params.get("epsilon", 0.0)), l2, False, l1,
                         class_weight=params.get("class_weight"),
                         direction_loss=K.HINGE if loss == "perceptron" else None)
    return build


def _passive_aggressive(is_classifier):
    losses = ({"hinge": K.HINGE, "squared_hinge": K.SQUARED_HINGE} if is_classifier
              else {"epsilon_insensitive": K.EPSILON_INSENSITIVE,
                    "squared_epsilon_insensitive": K.SQUARED_EPSILON_INSENSITIVE})

    def build(params, n_samples, public):
        if params["loss"] not in losses:
            _refuse("PassiveAggressive", f"loss={params['loss']!r}",
                    f"supported: {sorted(losses)}")
        return ModelSpec(losses[params["loss"]], is_classifier,
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
    return ModelSpec(K.LOGISTIC, True, bool(params["fit_intercept"]), 0.0,
                     scale * (1.0 - ratio), not liblinear, scale * ratio,
                     penalize_intercept=liblinear,
                     intercept_scaling=float(params["intercept_scaling"])
                     if liblinear else 1.0, binary_only=liblinear,
                     class_weight=params.get("class_weight"))


def _linear_svc(params, n_samples, public):
    if params.get("multi_class", "ovr") != "ovr":
        _refuse("LinearSVC", f"multi_class={params['multi_class']!r}",
                "use multi_class='ovr'")
    losses = {"hinge": K.HINGE, "squared_hinge": K.SQUARED_HINGE}
    scale = 1.0 / (float(params["C"]) * n_samples)
    l1 = params["penalty"] == "l1"
    return ModelSpec(losses[params["loss"]], True, bool(params["fit_intercept"]),
                     0.0, 0.0 if l1 else scale, False, scale if l1 else 0.0,
                     penalize_intercept=True,
                     intercept_scaling=float(params["intercept_scaling"]),
                     class_weight=params.get("class_weight"))


def _linear_svr(params, n_samples, public):
    losses = {"epsilon_insensitive": K.EPSILON_INSENSITIVE,
              "squared_epsilon_insensitive": K.SQUARED_EPSILON_INSENSITIVE}
    return ModelSpec(losses[params["loss"]], False, bool(params["fit_intercept"]),
                     float(params["epsilon"]), 1.0 / (float(params["C"]) * n_samples),
                     False, penalize_intercept=True,
                     intercept_scaling=float(params["intercept_scaling"]))


def _ridge(is_classifier):
    def build(params, n_samples, public):
        _no_positive("Ridge", params)
        alpha = np.asarray(params["alpha"], dtype=float)
        if alpha.ndim != 0:
            _refuse("Ridge", "a per-target alpha array", "give one alpha")
        return ModelSpec(K.SQUARED, is_classifier, bool(params["fit_intercept"]),
                         0.0, float(alpha) / n_samples, False,
                         class_weight=params.get("class_weight"))
    return build


def _linear_regression(params, n_samples, public):
    _no_positive("LinearRegression", params)
    return ModelSpec(K.SQUARED, False, bool(params["fit_intercept"]), 0.0, 0.0, False)


def _elastic_net(params, n_samples, public):
    _no_positive("ElasticNet", params)
    alpha, ratio = float(params["alpha"]), float(params.get("l1_ratio", 1.0))
    return ModelSpec(K.SQUARED, False, bool(params["fit_intercept"]), 0.0,
                     alpha * (1.0 - ratio), False, alpha * ratio,
                     weights_sum_to_n=True)


def _huber(params, n_samples, public):
    scale = float((public or {}).get("scale", 1.0))
    return ModelSpec(K.HUBER, False, bool(params["fit_intercept"]),
                     float(params["epsilon"]) * scale,
                     float(params["alpha"]) * scale / n_samples, False)


def _huber_scale(estimator, X_val, y_val):
    return {"scale": float(estimator.fit(X_val, y_val).scale_)}


def _quantile(params, n_samples, public):
    return ModelSpec(K.PINBALL, False, bool(params["fit_intercept"]),
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
            return ModelSpec(K.SQUARED, False, bool(params["fit_intercept"]), 0.0,
                             alpha, False, weights_sum_to_n=True)
        domain = "real" if p <= 0 else "nonnegative" if p < 2 else "positive"
        return ModelSpec(K.TWEEDIE, False, bool(params["fit_intercept"]), p, alpha,
                         False, weights_sum_to_n=True, target_domain=domain)
    return build


def _mlp(is_classifier):
    name = "MLPClassifier" if is_classifier else "MLPRegressor"

    def build(params, n_samples, public):
        if not is_classifier and params.get("loss", "squared_error") != "squared_error":
            _refuse(name, f"loss={params['loss']!r}", "use loss='squared_error'")
        sizes = tuple(int(h) for h in np.atleast_1d(params["hidden_layer_sizes"]))
        if not sizes or min(sizes) < 1:
            _refuse(name, f"hidden_layer_sizes={params['hidden_layer_sizes']!r}",
                    "give one or more layer widths >= 1")
        if params["activation"] not in ("identity", "logistic", "tanh", "relu"):
            _refuse(name, f"activation={params['activation']!r}")
        # scikit-learn's objective: mean loss + alpha / (2 n) ||W||^2.
        return ModelSpec(K.LOGISTIC if is_classifier else K.SQUARED, is_classifier,
                         True, 0.0, float(params["alpha"]) / n_samples, True,
                         intercept_column=False, network=NetworkSpec(
                             sizes, params["activation"], params["random_state"]))
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
        return REGISTRY[plain].build(plain_params, n_samples, None)

    return Supported(build, f"that of {plain.__name__}, hyper-parameters chosen "
                     "by its cross-validation on the validation set", public_fit)


def _first(value):
    return float(np.ravel(value)[0])


REGISTRY = {
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
    nn.MLPClassifier: Supported(
        _mlp(True), "log loss (logistic output; softmax for three or more "
        "classes) of the network, l2 = alpha / n on the coefficients; from "
        "its Glorot initialisation (random_state, else the valuator's); solver "
        "and learning-rate parameters are step rules, replaced by the walk's"),
    nn.MLPRegressor: Supported(
        _mlp(False), "squared error r^2 / 2 of the network (identity output), "
        "l2 = alpha / n on the coefficients; initialisation and step rules as "
        "MLPClassifier"),
    # Refused: no per-sample objective the walk could take steps on.
    nn.BernoulliRBM: Refused(
        "it is an unsupervised feature learner without targets: there is no "
        "labelled utility to value data by", "MLPClassifier"),
    lm.Lars: Refused("least-angle regression stops after n_nonzero_coefs "
                     "steps: a path, not a penalised objective",
                     "LinearRegression, or Lasso for sparsity"),
    lm.LarsCV: Refused("it chooses a point on the least-angle path, not a "
                       "penalised objective", "LassoCV"),
    lm.OrthogonalMatchingPursuit: Refused(
        "it constrains the number of nonzero coefficients (an L0 constraint), "
        "which has no gradient", "Lasso"),
    lm.OrthogonalMatchingPursuitCV: Refused(
        "it constrains the number of nonzero coefficients (an L0 constraint), "
        "which has no gradient", "LassoCV"),
    lm.ARDRegression: Refused(
        "its per-feature priors are re-estimated from all the data at once "
        "(evidence maximisation), not a sum of per-sample losses", "RidgeCV"),
    lm.BayesianRidge: Refused(
        "its regularisation is re-estimated from all the data at once "
        "(evidence maximisation), not a sum of per-sample losses", "RidgeCV"),
    lm.RANSACRegressor: Refused(
        "it refits on consensus subsets chosen from all the data", "HuberRegressor"),
    lm.TheilSenRegressor: Refused(
        "its estimate is a spatial median over subsets of the data",
        "HuberRegressor or QuantileRegressor"),
    lm.SGDOneClassSVM: Refused(
        "it is an outlier detector without targets: there is no labelled "
        "utility to value data by", "SGDClassifier(loss='hinge')"),
    lm.MultiTaskLasso: Refused("its joint L2/L1 norm couples several targets",
                               "Lasso, one target at a time"),
    lm.MultiTaskLassoCV: Refused("its joint L2/L1 norm couples several targets",
                                 "LassoCV, one target at a time"),
    lm.MultiTaskElasticNet: Refused("its joint L2/L1 norm couples several targets",
                                    "ElasticNet, one target at a time"),
    lm.MultiTaskElasticNetCV: Refused(
        "its joint L2/L1 norm couples several targets",
        "ElasticNetCV, one target at a time"),
    svm.SVC: Refused("a kernel machine's parameters are one weight per training "
                     "sample, not a shared linear model",
                     "LinearSVC(loss='hinge'), or LinearSVC in a Pipeline after "
                     "a kernel approximation (Nystroem, RBFSampler)"),
    svm.NuSVC: Refused("a kernel machine's parameters are one weight per training "
                       "sample, not a shared linear model", "LinearSVC"),
    svm.SVR: Refused("a kernel machine's parameters are one weight per training "
                     "sample, not a shared linear model", "LinearSVR"),
    svm.NuSVR: Refused("a kernel machine's parameters are one weight per training "
                       "sample, not a shared linear model", "LinearSVR"),
    svm.OneClassSVM: Refused("it is an outlier detector without targets: there "
                             "is no labelled utility to value data by",
                             "LinearSVC"),
}

SUPPORTED_ESTIMATORS = ", ".join(sorted(
    cls.__name__ for cls, entry in REGISTRY.items() if isinstance(entry, Supported)))


def registry_entry(estimator):
    """The registry entry of ``estimator``'s class (or of its nearest registered
    base class); a TypeError naming what is supported otherwise."""
    for cls in type(estimator).__mro__:
        if cls in REGISTRY:
            return cls, REGISTRY[cls]
    raise TypeError(
        f"The valuators cannot value data for {type(estimator).__name__}: "
        f"supported estimators are {SUPPORTED_ESTIMATORS}. {ALTERNATIVE}")


def model_spec(estimator, n_samples, public=None):
    """Return the :class:`ModelSpec` of ``estimator`` for ``n_samples`` parties.

    ``public`` holds the parameters chosen on the validation set
    (:func:`public_params`); without it a model that needs them is read with
    placeholders (for the checks before the data are read). Raises a
    TypeError for a refused or unknown estimator class and a ValueError for
    an unsupported loss or parameter.
    """
    cls, entry = registry_entry(estimator)
    if isinstance(entry, Refused):
        raise TypeError(
            f"{type(estimator).__name__} is not supported by the valuators: "
            f"{entry.reason}. The closest supported model: {entry.closest}. "
            f"{ALTERNATIVE}")
    spec = entry.build(estimator.get_params(deep=False), n_samples, public)
    check_class_weight(type(estimator).__name__, spec.class_weight)
    return spec


def public_params(estimator, X_val, y_val, seed):
    """Parameters the walk takes from the public validation set: ``{}`` for
    most models; the *CV choices; HuberRegressor's ``scale``."""
    _, entry = registry_entry(estimator)
    if isinstance(entry, Refused) or entry.public_fit is None:
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


def check_sample_weight(sample_weight, n_samples):
    """``sample_weight`` as floats, or None: one finite weight >= 0 per sample,
    not all zero. The weights are public (the user's parameters)."""
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},), one "
                         f"weight per sample, got {weights.shape}.")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or not weights.any():
        raise ValueError("sample_weight must be finite and >= 0, and not all zero.")
    return weights


def check_class_weight(name, class_weight):
    if class_weight is None or isinstance(class_weight, dict):
        return
    if isinstance(class_weight, str) and class_weight == "balanced":
        return
    raise ValueError(f"{name}: class_weight must be None, a dict or 'balanced', "
                     f"got {class_weight!r}.")


def row_weights(spec, y_index, y_val_index, classes, sample_weight):
    """Each row's loss weight, ``class_weight[y] * sample_weight``, public.

    ``class_weight="balanced"`` is computed from the validation labels
    (``y_val_index``, public): from the private labels it would make every
    party's weight depend on the others' labels. ``sample_weight`` is the
    user's, public; where the model rescales weights to sum to ``n``
    (``spec.weights_sum_to_n``) they are rescaled by their (public) sum.
    Returns ``(weights of y_index, weights of y_val_index)``; ones when
    unweighted.
    """
    n = len(y_index)
    weights = np.ones(n) if sample_weight is None else np.asarray(
        sample_weight, dtype=np.float64).copy()
    weights_val = np.ones(len(y_val_index))
    if spec.is_classifier and spec.class_weight is not None:
        per_class = class_weights(spec.class_weight, classes, y_val_index)
        weights *= per_class[np.asarray(y_index, dtype=np.int64)]
        weights_val *= per_class[np.asarray(y_val_index, dtype=np.int64)]
    if spec.weights_sum_to_n and sample_weight is not None:
        weights *= n / np.sum(sample_weight)
    return weights, weights_val


def class_weights(class_weight, classes, y_val_index):
    """One weight per class index; "balanced" from the validation labels."""
    n_classes = len(classes)
    if isinstance(class_weight, str):  # "balanced", from the public labels
        present = np.unique(y_val_index)
        if len(present) < n_classes:
            missing = [classes[k] for k in range(n_classes) if k not in present]
            raise ValueError(
                "class_weight='balanced' is computed from the validation labels "
                f"(public), and classes {missing} have none there: pass a dict.")
        return compute_class_weight("balanced", classes=np.arange(n_classes),
                                    y=np.asarray(y_val_index))
    weights = np.ones(n_classes)
    for k, label in enumerate(classes):
        if label in class_weight:
            weights[k] = float(class_weight[label])
    unknown = set(class_weight) - set(np.asarray(classes).tolist())
    if unknown:
        raise ValueError(f"class_weight has labels {sorted(unknown, key=str)} "
                         f"that are not classes ({list(classes)}).")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("class_weight values must be finite and >= 0.")
    return weights


def check_target_domain(spec, y, name):
    """Raise when targets leave the model's domain (Poisson y >= 0, Gamma y > 0).

    Reads the targets themselves (for ``y``, private): it runs before any
    release, and an input outside the domain is outside the privacy model
    (whether the error is raised depends on the data; what it says does
    not: it quotes no value, not even for the public ``y_val``, so that
    both messages read alike).
    """
    y = np.asarray(y, dtype=np.float64)
    if spec.target_domain == "nonnegative" and np.any(y < 0):
        raise ValueError(f"{name} must be >= 0 for this model (Poisson or Tweedie "
                         "with 1 <= power < 2): it has negative targets (their "
                         "values are not shown, since they may be private).")
    if spec.target_domain == "positive" and np.any(y <= 0):
        raise ValueError(f"{name} must be > 0 for this model (Gamma or Tweedie "
                         "with power >= 2): it has targets <= 0 (their values "
                         "are not shown, since they may be private).")


def split_pipeline(estimator):
    """``(preprocessor, model)``: a Pipeline's transformers and its last step.

    ``preprocessor`` is None for a plain estimator; a nested Pipeline as the
    last step is split too. The transformers are fitted on the public
    validation set only (:func:`skdpval.families._data.apply_public_preprocessor`), so
    a step that must see the private rows to do its work is refused: a
    sampler (``fit_resample``: it would drop or add private rows) or a step
    without ``transform``.
    """
    if not isinstance(estimator, Pipeline):
        return None, estimator
    steps = []
    while isinstance(estimator, Pipeline):
        steps.extend(estimator.steps[:-1])
        estimator = estimator.steps[-1][1]
    for name, step in steps:
        if step is None or step == "passthrough":
            continue
        if hasattr(step, "fit_resample"):
            raise TypeError(
                f"Pipeline step {name!r} ({type(step).__name__}) resamples the "
                "training rows, which a valuator cannot do on private data: put "
                "the valuator (or DPValueFilter) in the pipeline instead.")
        if not hasattr(step, "transform"):
            raise TypeError(
                f"Pipeline step {name!r} ({type(step).__name__}) has no "
                "transform: every step but the last must be a transformer.")
    if estimator is None or estimator == "passthrough":
        raise TypeError("The wrapped Pipeline must end with a model, not "
                        f"{estimator!r}.")
    steps = [(name, step) for name, step in steps
             if not (step is None or step == "passthrough")]
    return (Pipeline(steps) if steps else None), estimator


def classifier_targets(spec, y_index, n_classes):
    """Targets for class indices ``y_index``: +-1 (binary, one-vs-rest) or one-hot."""
    y_index = np.asarray(y_index)
    if spec.binary_only and n_classes > 2:
        raise ValueError(
            f"LogisticRegression(solver='liblinear') takes two classes only, as "
            f"in scikit-learn, and there are {n_classes}: use another solver "
            "(multinomial), or LinearSVC / SGDClassifier (one-vs-rest).")
    if n_classes == 2:
        return np.where(y_index == 1, 1.0, -1.0).reshape(-1, 1), spec.loss
    one_hot = (y_index[:, None] == np.arange(n_classes)[None, :]).astype(np.float64)
    if spec.multinomial:
        return one_hot, K.MULTINOMIAL
    return 2.0 * one_hot - 1.0, spec.loss


def fit_on_validation(estimator, X_val, y_val, seed, purpose, stacklevel=2):
    """A clone of ``estimator`` fitted on the (public) validation set only.

    An unset ``random_state`` of the clone is seeded from the public
    randomness, so that results repeat with the valuator's ``random_state``.
    A warning of the model's ``fit`` (e.g. scikit-learn's
    ``ConvergenceWarning``) is issued again, in its own category, saying
    that it comes from fitting this model on the ``len(X_val)`` validation
    rows (public) and what to change; ``stacklevel`` counts from the caller
    of this function. Those rows are public, so the message may quote
    scikit-learn's own text.
    """
    model = clone(estimator)
    if "random_state" in model.get_params() and model.random_state is None:
        model.set_params(random_state=seed)
    name = type(model).__name__
    with warnings.catch_warnings(record=True) as caught:
        # Every warning is caught here and goes through the caller's filters
        # once, reworded, below.
        warnings.simplefilter("always")
        try:
            model.fit(X_val, y_val)
        except ValueError as error:
            raise ValueError(
                f"{purpose} fits {name} on the validation set, and that failed: "
                f"{error}") from error
    for warning in caught:
        warnings.warn(_validation_fit_message(purpose, name, len(X_val), warning),
                      warning.category, stacklevel=stacklevel + 1)
    return model


def _validation_fit_message(purpose, name, n_val, warning):
    """The text of a warning raised by ``name``'s fit on the validation set."""
    if issubclass(warning.category, ConvergenceWarning):
        remedy = ("Raise its max_iter (or its tol), or scale the features "
                  "(standardize=True scales them by the validation set's "
                  "statistics)")
    else:
        remedy = ("Change the model's parameters or the validation set (the "
                  "only rows it is fitted on)")
    return (f"{purpose} fits the public model {name} on the {n_val} validation "
            f"rows (public), and that fit warned: {warning.message} {remedy}.")
