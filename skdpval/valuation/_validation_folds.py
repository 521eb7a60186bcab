"""Fits on the validation rows: the public model's (:func:`fit_on_validation`)
and the out-of-fold fits (:class:`ValidationFolds`), made once per model.

The family choice (:mod:`._family_choice`: each candidate's out-of-fold
loss) and ``"auto"``'s keep rule (:mod:`._keep_rule`: the kept candidate's
out-of-fold labels) read the same fold fits: the same folds of the
validation rows, shuffled by the fit's public seed, and the same clones
(an unset ``random_state`` seeded from it). Everything here reads public
rows only.
"""
import warnings

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, StratifiedKFold

N_FOLDS = 5


def seeded_clone(estimator, seed):
    """A clone of ``estimator`` whose unset ``random_state`` is ``seed`` (the
    public randomness: its fits on the validation rows repeat)."""
    model = clone(estimator)
    if "random_state" in model.get_params() and model.random_state is None:
        model.set_params(random_state=seed)
    return model


class ValidationFolds:
    """The folds of ``(X_val, y_val)`` (class indices for a classifier) and
    each model's out-of-fold predictions, computed on first use."""

    def __init__(self, X_val, y_val, seed):
        self.X_val, self.y_val, self.seed = X_val, y_val, seed
        self._made = {}

    def n_folds(self, classifier):
        """How many folds (0: none): ``N_FOLDS``, fewer when a class has
        fewer rows (a classifier's folds are stratified)."""
        if not classifier:
            return min(N_FOLDS, len(self.y_val)) if len(self.y_val) >= 2 else 0
        counts = np.bincount(self.y_val)
        present = counts[counts > 0]
        if len(present) < 2:
            return 0
        n_folds = min(N_FOLDS, int(present.min()))
        return n_folds if n_folds >= 2 else 0

    def predictions(self, model):
        """``(out_of_fold, n_warned)``: a classifier's out-of-fold class
        probabilities (a column per class index; a model without
        ``predict_proba`` puts 1 on its predicted class) or a regressor's
        predictions, and how many fold fits warned; ``(None, 0)`` without
        folds."""
        out, _, n_warned = self._fits(model)
        return out, n_warned

    def labels(self, model):
        """``(out-of-fold class indices, n_warned)`` of a classifier (its
        ``predict``), or ``(None, 0)`` without folds."""
        _, labels, n_warned = self._fits(model)
        return labels, n_warned

    def _fits(self, model):
        # The model is kept with its result so that its id stays its own.
        key = id(model)
        if key not in self._made:
            self._made[key] = (model, self._fit(model))
        return self._made[key][1]

    def _fit(self, model):
        classifier = bool(is_classifier(model))
        n_folds = self.n_folds(classifier)
        if n_folds == 0:
            return None, None, 0
        splitter = (StratifiedKFold if classifier else KFold)(
            n_folds, shuffle=True, random_state=self.seed)
        X_val, y_val = self.X_val, self.y_val
        out = (np.zeros((len(y_val), int(y_val.max()) + 1)) if classifier
               else np.empty(len(y_val)))
        labels = np.empty(len(y_val), dtype=np.int64) if classifier else None
        n_warned = 0
        for train, test in splitter.split(X_val, y_val):
            fold_model = seeded_clone(model, self.seed)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fold_model.fit(X_val[train], y_val[train])
            n_warned += bool(caught)
            if not classifier:
                out[test] = fold_model.predict(X_val[test])
                continue
            known = np.asarray(fold_model.classes_, dtype=np.int64)
            labels[test] = np.asarray(fold_model.predict(X_val[test]), np.int64)
            if hasattr(fold_model, "predict_proba"):
                out[np.ix_(test, known)] = fold_model.predict_proba(X_val[test])
            else:  # no probabilities: the predicted class has probability 1
                out[test, labels[test]] = 1.0
        return out, labels, n_warned


def fit_on_validation(estimator, X_val, y_val, seed, purpose, stacklevel=2,
                      budgeted=False):
    """A clone of ``estimator`` fitted on the (public) validation set only.

    An unset ``random_state`` of the clone is seeded from the public
    randomness, so that results repeat with the valuator's ``random_state``.
    A warning of the model's ``fit`` (e.g. scikit-learn's
    ``ConvergenceWarning``) is issued again, in its own category, saying
    that it comes from fitting this model on the ``len(X_val)`` validation
    rows (public) and what to change, except a ConvergenceWarning when
    ``budgeted`` (a model that ends at its budget of iterations by design:
    the default candidate network); ``stacklevel`` counts from the caller
    of this function. Those rows are public, so the message may quote
    scikit-learn's own text.
    """
    model = seeded_clone(estimator, seed)
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
        if budgeted and issubclass(warning.category, ConvergenceWarning):
            continue
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
