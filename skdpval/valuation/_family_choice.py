"""The model family chosen on the public validation rows (``estimator=None``
or a list of candidates).

Each candidate is cross-validated on the validation rows only (public: the
choice spends no privacy): its out-of-fold log loss (a classifier's) or
squared error (a regressor's) on every row. The candidates are taken in
order, the first (the default list's linear model) the reference: a later
one replaces the current choice only when its mean loss is lower by more
than one standard error of the rows' paired differences (the
one-standard-error rule), and only with at least ``CHOICE_MIN_ROWS``
validation rows, so that a flexible model does not win by chance on few
rows (the rule alone let a network beat logistic regression on 30 rows of
a linear task: tests/test_family_choice.py).
"""
import warnings

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.neural_network import MLPClassifier

from ..families import family_of

CHOICE_FOLDS = 5
CHOICE_MIN_ROWS = 100
# The default candidates: a linear model and a small network. The network
# trains for a fixed budget of epochs at a larger step than scikit-learn's
# default: on a few hundred validation rows longer training overfits (its
# cross-validated log loss rises), and the budget keeps the choice cheap
# (benchmarks/results/quality_regime_network.jsonl).
DEFAULT_NETWORK = dict(hidden_layer_sizes=(64,), learning_rate_init=0.01,
                       max_iter=50)


def default_candidates():
    """``[LogisticRegression(), MLPClassifier((64,), learning_rate_init=0.01,
    max_iter=50)]`` (fresh instances)."""
    return [LogisticRegression(), MLPClassifier(**DEFAULT_NETWORK)]


def is_default_network(estimator):
    """Whether ``estimator`` is the default candidate network, whose epochs
    end at its budget on purpose (its ConvergenceWarning says nothing)."""
    return (type(estimator) is MLPClassifier and estimator.get_params()
            == MLPClassifier(**DEFAULT_NETWORK).set_params(
                random_state=estimator.random_state).get_params())


def check_candidates(estimator, name="estimator"):
    """``estimator`` as a list of candidates (None: the default ones), or a
    ValueError naming what is wrong: an empty list, or classifiers and
    regressors mixed."""
    if estimator is None:
        return default_candidates()
    if not isinstance(estimator, (list, tuple)):
        return [estimator]
    if len(estimator) == 0:
        raise ValueError(f"{name}: a list of candidates must hold at least one "
                         "estimator.")
    kinds = {bool(is_classifier(candidate)) for candidate in estimator}
    if len(kinds) > 1:
        raise ValueError(f"{name}: the candidates must be all classifiers or all "
                         "regressors.")
    return list(estimator)


def _row_losses(model, X, y, classifier):
    if not classifier:
        return (y - model.predict(X)) ** 2
    proba = np.zeros((len(X), int(y.max()) + 1 if len(y) else 1))
    known = np.asarray(model.classes_, dtype=np.int64)
    if hasattr(model, "predict_proba"):
        proba_known = model.predict_proba(X)
    else:  # no probabilities: the predicted class has probability 1
        proba_known = (model.predict(X)[:, None] == known[None, :]).astype(float)
    proba[:, known[known < proba.shape[1]]] = proba_known[:, known < proba.shape[1]]
    picked = proba[np.arange(len(y)), y]
    return -np.log(np.clip(picked, 1e-15, 1.0))


def cross_validated_losses(candidate, X_val, y_val, seed, classifier):
    """Each validation row's out-of-fold loss under ``candidate`` (public),
    and how many fold fits warned."""
    if classifier:
        n_folds = min(CHOICE_FOLDS, int(np.bincount(y_val).min()))
        folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed) \
            if n_folds >= 2 else None
    else:
        n_folds = min(CHOICE_FOLDS, len(y_val))
        folds = KFold(n_folds, shuffle=True, random_state=seed) if n_folds >= 2 else None
    if folds is None:
        return None, 0
    losses, n_warned = np.empty(len(y_val)), 0
    for train, test in folds.split(X_val, y_val):
        model = clone(candidate)
        if "random_state" in model.get_params() and model.random_state is None:
            model.set_params(random_state=seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X_val[train], y_val[train])
        n_warned += bool(caught)
        losses[test] = _row_losses(model, X_val[test], y_val[test], classifier)
    return losses, n_warned


def choose_candidate(candidates, X_val, y_val, seed):
    """``(index, details)``: the candidate the one-standard-error rule picks
    from their cross-validated losses on the validation rows (public)."""
    if len(candidates) == 1:
        return 0, None
    classifier = bool(is_classifier(candidates[0]))
    names = [type(c).__name__ for c in candidates]
    if len(y_val) < CHOICE_MIN_ROWS:
        return 0, dict(candidates=names, chosen=names[0],
                       why=f"fewer than {CHOICE_MIN_ROWS} validation rows: the "
                           "first candidate (no cross-validation)")
    losses, warned = zip(*(cross_validated_losses(c, X_val, y_val, seed, classifier)
                           for c in candidates))
    details = dict(candidates=names, loss="log loss" if classifier else
                   "squared error", n_folds=CHOICE_FOLDS,
                   n_fold_fits_warned=list(warned),
                   rule="the first candidate unless a later one's mean "
                        "cross-validated loss on the validation rows is lower by "
                        "more than one standard error of the rows' paired "
                        "differences (taken in order)")
    if losses[0] is None:  # a class has one validation row: no folds
        details.update(chosen=names[0], why="too few validation rows a class "
                       "to cross-validate: the first candidate")
        return 0, details
    details["mean_loss"] = [float(np.mean(loss)) for loss in losses]
    best, margins = 0, [None] * len(candidates)
    for index in range(1, len(candidates)):
        difference = losses[index] - losses[best]
        se = float(np.std(difference, ddof=1) / np.sqrt(len(difference)))
        margins[index] = (float(np.mean(difference)), se)
        if np.mean(difference) < -se:
            best = index
    details.update(chosen=names[best], paired_difference_and_se=margins)
    return best, details


def fall_back_on_dask(candidates, chosen, details, parties, usable, what):
    """``chosen``, or on Dask input where its family is not ``usable`` there
    the first candidate whose family is (``details`` say so): the choice
    itself is the same as in memory."""
    if not (hasattr(parties.X, "project_on") or hasattr(parties.X, "sum_blocks")):
        return chosen
    if usable(family_of(candidates[chosen])):
        return chosen
    chosen = next(i for i, c in enumerate(candidates) if usable(family_of(c)))
    details.update(chosen=type(candidates[chosen]).__name__,
                   why=f"the choice's family has no {what} on Dask input: the "
                       "first candidate that has one")
    return chosen


def data_candidates(estimator, public_model):
    """DPDataValuator's candidates for ``estimator`` None or a list: the
    default two (the linear model alone with ``public_model="private"``:
    its walk follows no privately fitted network line)."""
    candidates = [clone(c) for c in check_candidates(estimator)]
    if estimator is None and public_model == "private":
        return candidates[:1]
    return candidates


def choose_model(valuator, model, parties, seed, mechanism):
    """DPDataValuator's wrapped model with the candidate chosen on the
    validation rows (``model.candidates``; networks left out on Dask input,
    whose walk they do not have); sets ``model_choice_`` and the report's
    ``details["model_choice"]``."""
    valuator.model_choice_ = None
    if model.candidates is None:
        return model
    candidates = model.candidates
    chosen, valuator.model_choice_ = choose_candidate(candidates, parties.X_val,
                                                      parties.y_val, seed)
    chosen = fall_back_on_dask(candidates, chosen, valuator.model_choice_, parties,
                               lambda family: family.walks_on_dask, "walk")
    if valuator.model_choice_ is not None:
        mechanism.details["model_choice"] = valuator.model_choice_
    estimator = candidates[chosen]
    family = family_of(estimator)
    return model._replace(estimator=estimator, family=family,
                          objective=family.objective(estimator, n_parties=1))
