"""Map a scikit-learn linear model to the loss and L2 term the kernels use.

Every supported model is read as the per-sample objective
``loss(x_i w + b, y_i) + (l2 / 2) ||w||^2``, so that one gradient step per
party uses the model's own loss and regularisation:

- SGDClassifier / SGDRegressor: ``l2 = alpha`` (penalty "l2") or 0 (None);
  SGD's squared_error is ``0.5 r^2``, huber uses the model's ``epsilon``.
- LogisticRegression: ``C sum_i loss_i + 0.5 ||w||^2`` divided by ``C n``
  gives ``l2 = 1 / (C n)``; binary logistic or, for more than two classes,
  multinomial softmax.
- Ridge / RidgeClassifier: ``sum_i r_i^2 + alpha ||w||^2`` divided by ``2 n``
  gives ``0.5 r^2`` and ``l2 = alpha / n``; RidgeClassifier regresses on
  targets in {-1, +1} (one-vs-rest for more classes).
- LinearRegression: ``0.5 r^2``, ``l2 = 0``.

Only the parameters above (and ``fit_intercept``) define the walk: solver
settings such as ``max_iter`` or ``tol`` play no part, since the walk is its
own optimiser. Parameters that would change the objective and that the walk
does not implement (class weights, positivity, L1 terms) are refused.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import (
    LinearRegression,
    LogisticRegression,
    LogisticRegressionCV,
    Ridge,
    RidgeClassifier,
    SGDClassifier,
    SGDRegressor,
)

from . import _kernels as K

SUPPORTED_ESTIMATORS = (
    "SGDClassifier, SGDRegressor, LogisticRegression, LinearRegression, "
    "Ridge, RidgeClassifier")

_SGD_CLASSIFIER_LOSSES = {
    "log_loss": K.LOGISTIC,
    "hinge": K.HINGE,
    "squared_hinge": K.SQUARED_HINGE,
    "modified_huber": K.MODIFIED_HUBER,
    "squared_error": K.SQUARED,
    "huber": K.HUBER,
}
_SGD_REGRESSOR_LOSSES = {"squared_error": K.SQUARED, "huber": K.HUBER}


@dataclass(frozen=True)
class ModelSpec:
    """What the kernels need to know about the wrapped model."""

    loss: int
    is_classifier: bool
    fit_intercept: bool
    loss_param: float
    l2_per_sample: float  # already divided by n where the model sums losses
    multinomial: bool  # more than two classes: softmax (else one-vs-rest)


def _refuse(estimator, what):
    raise ValueError(
        f"{type(estimator).__name__} with {what} is not supported by "
        "DPDataValuator: the private walk implements only L2-regularised "
        f"losses of {SUPPORTED_ESTIMATORS}.")


def _check_common(estimator, params):
    if params.get("class_weight") is not None:
        _refuse(estimator, f"class_weight={params['class_weight']!r}")
    if params.get("positive", False):
        _refuse(estimator, "positive=True")


def model_spec(estimator, n_samples):
    """Return the :class:`ModelSpec` of ``estimator`` for ``n_samples`` parties.

    Raises a TypeError for an unsupported estimator class and a ValueError for
    an unsupported loss or penalty.
    """
    if isinstance(estimator, LogisticRegressionCV):
        raise TypeError(
            "LogisticRegressionCV chooses C by cross-validation on the data, "
            "which the private walk cannot do: use LogisticRegression(C=...).")
    params = estimator.get_params(deep=False)
    if isinstance(estimator, (SGDClassifier, SGDRegressor)):
        _check_common(estimator, params)
        is_classifier = isinstance(estimator, SGDClassifier)
        losses = _SGD_CLASSIFIER_LOSSES if is_classifier else _SGD_REGRESSOR_LOSSES
        if params["loss"] not in losses:
            _refuse(estimator, f"loss={params['loss']!r} (supported: "
                    f"{sorted(losses)})")
        if params["penalty"] not in ("l2", None):
            _refuse(estimator, f"penalty={params['penalty']!r} (use 'l2' or None)")
        l2 = params["alpha"] if params["penalty"] == "l2" else 0.0
        return ModelSpec(losses[params["loss"]], is_classifier,
                         bool(params["fit_intercept"]), float(params["epsilon"]),
                         float(l2), False)
    if isinstance(estimator, LogisticRegression):
        _check_common(estimator, params)
        penalty = params.get("penalty", "deprecated")
        l1_ratio = params.get("l1_ratio") or 0.0
        if penalty in ("l1", "elasticnet") or l1_ratio > 0:
            _refuse(estimator, f"penalty={penalty!r}, l1_ratio={l1_ratio!r} "
                    "(use the L2 penalty)")
        C = float(params["C"])
        no_penalty = penalty is None or np.isinf(C)
        l2 = 0.0 if no_penalty else 1.0 / (C * n_samples)
        return ModelSpec(K.LOGISTIC, True, bool(params["fit_intercept"]), 0.0,
                         l2, True)
    if isinstance(estimator, (Ridge, RidgeClassifier)):
        _check_common(estimator, params)
        alpha = np.asarray(params["alpha"], dtype=float)
        if alpha.ndim != 0:
            _refuse(estimator, "a per-target alpha array")
        return ModelSpec(K.SQUARED, isinstance(estimator, RidgeClassifier),
                         bool(params["fit_intercept"]), 0.0,
                         float(alpha) / n_samples, False)
    if isinstance(estimator, LinearRegression):
        _check_common(estimator, params)
        return ModelSpec(K.SQUARED, False, bool(params["fit_intercept"]), 0.0,
                         0.0, False)
    raise TypeError(
        f"DPDataValuator cannot value data for {type(estimator).__name__}: "
        f"supported estimators are {SUPPORTED_ESTIMATORS}.")


def classifier_targets(spec, y_index, n_classes):
    """Targets for class indices ``y_index``: +-1 (binary, one-vs-rest) or one-hot."""
    y_index = np.asarray(y_index)
    if n_classes == 2:
        return np.where(y_index == 1, 1.0, -1.0).reshape(-1, 1), spec.loss
    one_hot = (y_index[:, None] == np.arange(n_classes)[None, :]).astype(np.float64)
    if spec.multinomial:
        return one_hot, K.MULTINOMIAL
    return 2.0 * one_hot - 1.0, spec.loss


def fit_on_validation(estimator, X_val, y_val, seed, purpose):
    """A clone of ``estimator`` fitted on the (public) validation set only.

    An unset ``random_state`` of the clone is seeded from the public
    randomness, so that results repeat with the valuator's ``random_state``.
    """
    model = clone(estimator)
    if "random_state" in model.get_params() and model.random_state is None:
        model.set_params(random_state=seed)
    try:
        return model.fit(X_val, y_val)
    except ValueError as error:
        raise ValueError(
            f"{purpose} fits {type(model).__name__} on the validation set, and "
            f"that failed: {error}") from error
