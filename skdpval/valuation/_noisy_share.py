"""What a clean and a flipped label score, from the validation rows (public).

:class:`~skdpval.DPLabelQuality` releases each training party's clipped
score. Its mean over the parties is the mix ``(1 - share) E[clean] + share
E[flipped]`` of the scores a clean and a flipped label get (the noise has
mean zero), so the share of flipped labels is a ratio of means once those
two are known (:func:`skdpval.metrics.estimate_noisy_share`). The
validation rows stand for them: each row's score with its own (clean)
label, and its mean score over the other classes (a flipped label, drawn
uniformly among them; for two classes the negated score). The rows must be
scored by a model not fitted on them, as the training rows are:

- a public model fitted privately on the training rows scores the
  validation rows as it is (``public_model_``, with its margin scale);
- a public model fitted on the validation rows would score them higher than
  it scores new rows (it has seen their labels), so each row is scored by a
  clone fitted on the other folds (``N_FOLDS``, stratified, from the public
  seed; their warnings are those of the model fitted on all the rows, which
  ``fit`` already issued, and are not repeated).

The scores are clipped as the releases are and put on the release's grid
(``gamma``), so that their means are what the releases' means estimate.
Everything here reads the validation rows and public models only.
"""

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

__all__ = ["reference_scores"]

# Folds of the validation rows for the out-of-fold scores: a model fitted on
# four fifths of them stands for the one fitted on all (on breast_cancer and
# sep_0.8, 5 and 10 folds and leave-one-out gave mean clean scores within the
# validation rows' own sampling spread of each other; the model fitted on all
# the rows scored them 0.05-0.25 higher than the training rows' clean labels).
N_FOLDS = 5


def reference_scores(scorer, X_val, y_val, estimator, seed, gamma):
    """``(clean, flipped)``: each validation row's clipped score on the grid
    with its label, and its mean one with another label.

    ``scorer`` is the fitted :class:`~skdpval.DPLabelQuality` (its
    ``public_model_``, ``clip`` and ``classes_``), ``X_val`` and ``y_val``
    the validation rows as the model sees them (standardised, encoded),
    ``seed`` the public seed of the folds, ``gamma`` the release's grid (0:
    none, no noise).
    """
    if scorer.public_model_fitted_privately_:
        return _scores(scorer, scorer.public_model_, X_val, y_val, gamma)
    n_folds = min(N_FOLDS, int(np.bincount(y_val).max()))
    clean, flipped = np.empty(len(y_val)), np.empty(len(y_val))
    if n_folds < 2:  # one row a class: no fold to leave out
        return _scores(scorer, scorer.public_model_, X_val, y_val, gamma)
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed % 2**32)
    with warnings.catch_warnings():
        # The folds' warnings repeat those of the fit on all the rows (issued);
        # a class with fewer rows than folds is left out of some folds.
        warnings.simplefilter("ignore")
        for fit_rows, score_rows in folds.split(X_val, y_val):
            model = clone(estimator)
            if "random_state" in model.get_params() and model.random_state is None:
                model.set_params(random_state=seed)
            model.fit(X_val[fit_rows], y_val[fit_rows])
            clean[score_rows], flipped[score_rows] = _scores(
                scorer, model, X_val[score_rows], y_val[score_rows], gamma)
    return clean, flipped


def _scores(scorer, model, X, y, gamma):
    """Each row's clipped score on the grid under ``model`` with its label,
    and its mean over the other labels."""
    n_classes = len(scorer.classes_)
    per_class = np.empty((len(X), n_classes))
    with np.errstate(all="ignore"):
        for label in range(n_classes):
            scores = scorer._row_scores(X, np.full(len(X), label), model=model)
            per_class[:, label] = np.clip(np.nan_to_num(scores, nan=0.0),
                                          -scorer.clip, scorer.clip)
    if gamma > 0:  # the release's rounding (skdpval.privacy._release)
        per_class = gamma * np.rint(per_class / gamma)
    rows = np.arange(len(X))
    clean = per_class[rows, y]
    flipped = (per_class.sum(axis=1) - clean) / (n_classes - 1)
    return clean, flipped
