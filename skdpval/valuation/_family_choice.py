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
import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from ..families import family_of
from ._validation_folds import ValidationFolds

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
    """Whether ``estimator`` has the default candidate network's parameters
    (from ``estimator=None``, its epochs end at its budget on purpose: its
    ConvergenceWarning says nothing)."""
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


def _row_losses(folds, candidate, classifier):
    """Each validation row's out-of-fold loss under ``candidate`` (public),
    and how many fold fits warned."""
    out, n_warned = folds.predictions(candidate)
    if out is None:
        return None, 0
    y_val = folds.y_val
    if not classifier:
        return (y_val - out) ** 2, n_warned
    picked = out[np.arange(len(y_val)), y_val]
    return -np.log(np.clip(picked, 1e-15, 1.0)), n_warned


def choose_candidate(candidates, folds):
    """``(index, details)``: the candidate the one-standard-error rule picks
    from their cross-validated losses on the validation rows (public;
    ``folds`` a :class:`~._validation_folds.ValidationFolds`)."""
    if len(candidates) == 1:
        return 0, None
    classifier = bool(is_classifier(candidates[0]))
    names = [type(c).__name__ for c in candidates]
    if len(folds.y_val) < CHOICE_MIN_ROWS:
        return 0, dict(candidates=names, chosen=names[0],
                       why=f"fewer than {CHOICE_MIN_ROWS} validation rows: the "
                           "first candidate (no cross-validation)")
    losses, warned = zip(*(_row_losses(folds, c, classifier) for c in candidates))
    details = dict(candidates=names, loss="log loss" if classifier else
                   "squared error", n_folds=folds.n_folds(classifier),
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


def is_dask_rows(parties):
    """Whether the training rows are held by Dask."""
    return hasattr(parties.X, "project_on") or hasattr(parties.X, "sum_blocks")


def fall_back_on_dask(candidates, chosen, details, parties, usable, what):
    """``chosen``, or on Dask input where its family is not ``usable`` there
    the first candidate whose family is (``details`` say so): the choice
    itself is the same as in memory."""
    if not is_dask_rows(parties):
        return chosen
    usable_ones = [i for i, c in enumerate(candidates) if usable(family_of(c))]
    if chosen in usable_ones or not usable_ones:  # none: the family refuses
        return chosen
    chosen = usable_ones[0]
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
    validation rows (``model.candidates``; on Dask input those whose family
    has no walk there are left out before the choice, and said so); sets
    ``model_choice_`` and the report's ``details["model_choice"]``."""
    valuator.model_choice_ = None
    if model.candidates is None:
        return model
    candidates = model.candidates
    folds = ValidationFolds(parties.X_val, parties.y_val, seed)
    walking = [i for i, c in enumerate(candidates)
               if family_of(c).walks_on_dask or not is_dask_rows(parties)]
    if (len(walking) in (0, len(candidates))
            or len(parties.y_val) < CHOICE_MIN_ROWS):
        chosen, details = choose_candidate(candidates, folds)  # as in memory
        chosen = fall_back_on_dask(candidates, chosen, details, parties,
                                   lambda family: family.walks_on_dask, "walk")
    else:
        # On Dask input a candidate without a walk there is not
        # cross-validated: it could not be kept.
        among, details = choose_candidate([candidates[i] for i in walking], folds)
        chosen = walking[among]
        left_out = [type(c).__name__ for i, c in enumerate(candidates)
                    if i not in walking]
        details = dict(details or {}, candidates=[type(c).__name__
                                                  for c in candidates],
                       chosen=type(candidates[chosen]).__name__)
        details.setdefault("why", "the only candidate with a walk on Dask input")
        details["why"] += (f" ({', '.join(left_out)} left out: no walk on Dask "
                           "input)")
    valuator.model_choice_ = details
    if valuator.model_choice_ is not None:
        mechanism.details["model_choice"] = valuator.model_choice_
    estimator = candidates[chosen]
    family = family_of(estimator)
    return model._replace(estimator=estimator, family=family,
                          objective=family.objective(estimator, n_parties=1))
