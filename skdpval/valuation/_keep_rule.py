"""Whether ``public_model="auto"`` keeps the private fit it made.

The private fit of the public model learns from the noisy training labels.
Where their noise depends on the class it inherits that bias, and the model
fitted on the (clean) validation rows alone finds the bad labels better.
The fit's own released parameters and the public validation rows tell the
two apart without spending privacy: :func:`keep_private_fit` compares the
private fit's balanced accuracy on the validation rows with the validation
model's cross-validated one. A fit that is made and then not kept has still
spent its share of ``mu^2`` (its part of the mechanism stays declared).
"""

import numpy as np
from scipy.special import expit, softmax

from ..kernels import _losses

# A private fit that "auto" made is kept only when it classifies the
# validation rows (public) not clearly worse than the validation model does
# out of fold: the difference of their balanced accuracies (private model
# minus the validation model's cross-validated one, paired on the rows) must
# reach minus AUTO_KEEP_MARGIN (below). Under class-dependent label noise the private
# fit inherits the training labels' bias and loses balanced accuracy; under
# symmetric noise it gains. Measured: benchmarks/quality.py --suite
# regime_bias (benchmarks/results/quality_regime_bias.jsonl).
AUTO_KEEP_MARGIN = 0.05
# ... or AUTO_KEEP_SES standard errors of that difference, whichever is
# larger (on 50 validation rows the difference's standard error is near
# 0.08: under symmetric flips a margin of 0.05 alone dropped good fits;
# benchmarks/results/quality_regime_bias.jsonl).
AUTO_KEEP_SES = 1.5
# Second check, where the private fit gives probabilities: their mean on the
# validation rows estimates the training labels' class shares. Symmetric
# label noise (every label flipped to a uniformly drawn other class) only
# moves the shares from the clean ones toward 1 / K; noise that depends on
# the class can move them past or away from 1 / K. The fit is not kept when
# a share lies more than AUTO_SHARE_SES standard errors (of the validation
# rows' share p, sqrt(p (1 - p) / n_val)) from any clean share that
# symmetric noise could have moved to it (:func:`class_share_shift`; the
# same measurement: symmetric 30% flips at most 1.1, class-dependent
# 45% / 15% flips at least 1.7).
AUTO_SHARE_SES = 1.5


def balanced_accuracy_difference(private_labels, validation_labels, labels):
    """``(difference, standard error)`` of the balanced accuracies of two
    predictions of the same rows (class indices ``labels``): the mean over
    classes of the mean within the class of ``correct_private -
    correct_validation``, and its standard error (paired within each class)."""
    differences = ((private_labels == labels).astype(np.float64)
                   - (validation_labels == labels))
    classes = np.unique(labels)
    means = np.array([differences[labels == c].mean() for c in classes])
    variances = np.array([differences[labels == c].var(ddof=1) / np.sum(labels == c)
                          if np.sum(labels == c) > 1 else 0.0 for c in classes])
    return float(means.mean()), float(np.sqrt(variances.sum()) / len(classes))


def class_share_shift(private_proba, labels):
    """How far (in standard errors of the validation rows' class shares
    ``p``) the clean shares would have to lie from ``p`` for the mean ``q``
    of the private fit's class probabilities on the validation rows to be
    symmetric noise's shares (between the clean ones and ``1 / K``): 0 where
    ``q`` lies between ``p`` and ``1 / K``, else ``|q - p|`` (a share moved
    away from ``1 / K``, or past it); the largest over the classes."""
    n_classes = private_proba.shape[1]
    shares = np.bincount(labels, minlength=n_classes) / len(labels)
    implied = private_proba.mean(axis=0)
    low = np.minimum(shares, 1.0 / n_classes)
    high = np.maximum(shares, 1.0 / n_classes)
    inside = (implied >= low) & (implied <= high)
    outside = np.where(inside, 0.0, np.abs(implied - shares))
    se = np.sqrt(np.maximum(shares * (1 - shares), 1.0 / len(labels)) / len(labels))
    return float(np.max(outside / se))


def keep_private_fit(valuator, estimator, private_labels, folds, private_proba=None):
    """``(keep, why, details)``: whether ``"auto"`` keeps the private fit whose
    class indices on the validation rows are ``private_labels`` and class
    probabilities ``private_proba`` (None: the model gives none) (public:
    the fit is released, the rows are public), against ``estimator``'s
    out-of-fold labels from ``folds`` (a
    :class:`~._validation_folds.ValidationFolds` of the validation rows).
    The statistics are computed (and reported) for ``"private"`` too, which
    always keeps the fit. Regressors (``private_labels`` None) and
    validation sets without two rows of every class keep it (no
    comparison)."""
    auto = valuator.public_model == "auto"
    large = "public_model='auto': the training set is large enough"
    if private_labels is None:
        return True, (large + " (a regressor: no classification check)"
                      if auto else "public_model='private'"), {}
    labels = folds.y_val
    validation_labels, n_warned = folds.labels(estimator)
    if validation_labels is None:
        return True, (large + " (a class has one validation row: no "
                      "cross-validated check)" if auto
                      else "public_model='private'"), {}
    difference, se = balanced_accuracy_difference(private_labels, validation_labels,
                                                  labels)
    shift = None if private_proba is None else class_share_shift(private_proba,
                                                                 labels)
    details = dict(statistic="balanced accuracy of the private fit on the "
                             "validation rows minus the validation model's "
                             "cross-validated one",
                   difference=difference, standard_error=se, margin=AUTO_KEEP_MARGIN,
                   n_folds=folds.n_folds(classifier=True),
                   n_fold_fits_warned=n_warned,
                   class_share_shift=shift, class_share_limit=AUTO_SHARE_SES)
    if not auto:
        return True, "public_model='private'", details
    limit = max(AUTO_KEEP_MARGIN, AUTO_KEEP_SES * se)
    details["limit"] = limit
    compared = (f"its balanced accuracy on the validation rows is {difference:+.3f} "
                "from the validation model's cross-validated one (the limit: "
                f"-{limit:.3f}, the larger of {AUTO_KEEP_MARGIN} and "
                f"{AUTO_KEEP_SES} standard errors)")
    if shift is not None:
        compared += (f"; its mean class probabilities lie {shift:.2f} standard "
                     "errors outside the range that symmetric label noise "
                     f"leaves the validation rows' class shares (the limit: "
                     f"{AUTO_SHARE_SES})")
    if difference >= -limit and (shift is None or shift <= AUTO_SHARE_SES):
        return True, f"public_model='auto': the private fit, kept ({compared})", details
    return False, ("public_model='auto': the validation model; the private fit was "
                   "made (its share of mu^2 is spent) and not kept, since "
                   f"{compared}: the training labels' noise may depend on the "
                   "class"), details


def design_labels(X, theta, loss):
    """``(class indices, probabilities or None)`` that the parameters
    ``theta`` (kernel layout, one row an output) predict for the design rows
    ``X``: the sign of a binary margin, else the largest output; the
    probabilities of a logistic or multinomial loss."""
    margins = X @ theta.T
    if theta.shape[0] == 1:
        labels = (margins[:, 0] > 0).astype(np.int64)
        proba = expit(margins[:, 0]) if loss == _losses.LOGISTIC else None
        return labels, None if proba is None else np.column_stack([1 - proba, proba])
    proba = softmax(margins, axis=1) if loss == _losses.MULTINOMIAL else None
    return np.argmax(margins, axis=1).astype(np.int64), proba
