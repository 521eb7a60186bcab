"""Input handling shared by the estimators: budgets, labels, kernel targets."""

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array

from . import _kernels
from ._models import classifier_targets

UTILITY_CODES = {
    "neg_loss": _kernels.NEG_LOSS,
    "accuracy": _kernels.ACCURACY,
    "neg_mse": _kernels.NEG_MSE,
    "r2": _kernels.R2,
}
CLASSIFIER_UTILITIES = ("neg_loss", "accuracy")
REGRESSOR_UTILITIES = ("neg_loss", "neg_mse", "r2")


def check_budget(epsilon, noise_multiplier, noise):
    """Exactly one of epsilon and noise_multiplier, unless there is no noise."""
    if noise_multiplier is not None and epsilon is not None:
        raise ValueError("Give either epsilon or noise_multiplier, not both: set "
                         "epsilon=None to use noise_multiplier.")
    if (noise_multiplier is None and epsilon is None
            and not (isinstance(noise, str) and noise == "none")):
        raise ValueError("epsilon is None: give epsilon or noise_multiplier.")


def check_utility(utility, is_classifier):
    allowed = CLASSIFIER_UTILITIES if is_classifier else REGRESSOR_UTILITIES
    if utility not in allowed:
        kind = "classifier" if is_classifier else "regressor"
        raise ValueError(f"utility={utility!r} does not apply to a {kind}: use one "
                         f"of {allowed}.")


def encode_classes(y):
    """Sorted class labels and the class index of each sample (two or more classes)."""
    check_classification_targets(y)
    classes, index = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y has a single class ({classes[0]!r}); data valuation "
                         "of a classifier needs at least two classes.")
    return classes, index


def check_validation_targets(y_val, n_val, classes):
    """``y_val`` as class indices (classifiers) or floats, checked against X_val."""
    y_val = check_array(y_val, ensure_2d=False, dtype=None)
    if y_val.ndim != 1 or len(y_val) != n_val:
        raise ValueError(f"y_val must be 1-D with one target per row of X_val "
                         f"({n_val}), got shape {y_val.shape}.")
    if classes is None:
        return check_array(y_val, ensure_2d=False, dtype=np.float64)
    index = np.clip(np.searchsorted(classes, y_val), 0, len(classes) - 1)
    unseen = classes[index] != y_val
    if np.any(unseen):
        raise ValueError(f"y_val has labels not in y: {np.unique(y_val[unseen])!r}.")
    return index


def kernel_targets(spec, y, y_val, n_classes, utility):
    """``(T, T_val, loss, labels_val, total_sum_squares)`` for the kernels.

    ``y`` and ``y_val`` are class indices for a classifier (``n_classes``
    classes), real targets otherwise.
    """
    if spec.is_classifier:
        T, loss = classifier_targets(spec, y, n_classes)
        T_val, _ = classifier_targets(spec, y_val, n_classes)
        return T, T_val, loss, np.asarray(y_val, dtype=np.int64), 1.0
    total_sum_squares = float(np.sum((y_val - y_val.mean()) ** 2))
    if utility == "r2" and total_sum_squares == 0:
        raise ValueError("utility='r2' needs y_val that is not constant.")
    return (np.reshape(y, (-1, 1)), np.reshape(y_val, (-1, 1)), spec.loss,
            np.zeros(len(y_val), dtype=np.int64), total_sum_squares)


def with_intercept(spec, *arrays):
    """Append a column of ones to each array when the model fits an intercept."""
    if not spec.fit_intercept:
        return arrays
    return tuple(np.hstack([A, np.ones((len(A), 1))]) for A in arrays)


def check_groups(groups, n_samples):
    """Sorted group labels, and the group index of each sample."""
    groups = check_array(groups, ensure_2d=False, dtype=None,
                         ensure_all_finite=False, input_name="groups")
    if groups.ndim != 1 or len(groups) != n_samples:
        raise ValueError(f"groups must be 1-D with one label per sample "
                         f"({n_samples}), got shape {groups.shape}.")
    if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
        raise ValueError("groups contains NaN or infinity: every sample "
                         "needs a group label.")
    if groups.dtype == object and any(g is None or g != g for g in groups):
        raise ValueError("groups contains missing labels: every sample "
                         "needs a group label.")
    labels, index = np.unique(groups, return_inverse=True)
    if len(labels) < 2:
        raise ValueError("groups has a single group: valuing parties needs "
                         "at least 2.")
    return labels, index
