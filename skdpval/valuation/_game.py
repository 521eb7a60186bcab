"""The game a walk values: the parties as the model's family reads them.

:func:`make_game` is the one place where a valuation's parties meet its
model: the family chooses what it takes from the validation set, reads the
estimator's objective, lays out the rows and targets for its kernels
(:meth:`~skdpval.families.Family.view`), and the semivalue gives each
position its weight. Every later step of a fit reads the :data:`Game`, not
the parties.
"""

from collections import namedtuple

import numpy as np

from ..exceptions import warn_if_first_compile
from ..families import View
from ._semivalues import semivalue_weights

UTILITY_CODES = {"neg_loss": 0, "accuracy": 1, "neg_mse": 2, "r2": 3}
CLASSIFIER_UTILITIES = ("neg_loss", "accuracy")
REGRESSOR_UTILITIES = ("neg_loss", "neg_mse", "r2")


def check_utility(utility, is_classifier):
    """A ValueError when ``utility`` does not apply to the model."""
    allowed = CLASSIFIER_UTILITIES if is_classifier else REGRESSOR_UTILITIES
    if utility not in allowed:
        kind = "classifier" if is_classifier else "regressor"
        raise ValueError(f"utility={utility!r} does not apply to a {kind}: use one "
                         f"of {allowed}.")

Game = namedtuple("Game", View._fields + (
    "weights", "utility", "record_level", "joint", "space", "validation_objective",
    "train_parties", "n_all_parties", "target_scale"))
Game.__doc__ = """A :class:`~skdpval.families.View` of the training parties and
the validation set, with what the walk adds: the semivalue's ``weights`` of
each position, the ``utility`` code, whether a party releases the sum of its
records (``record_level``), whether the joint threat model reads the walk
(``joint``), the walk's ``space`` (None until chosen), the
objective as the estimator weighs it on the validation rows alone
(``validation_objective``, for the public direction), and where the values go
(``train_parties`` of ``n_all_parties``; ``target_scale``, the public
``(mean, std)`` of standardised regression targets, or None)."""


def make_game(family, estimator, parties, *, utility, semivalue, sample_weight,
              record_level, joint, subspace, seed, stacklevel):
    """``(chosen_params, game)`` of a valuation of ``parties`` by ``estimator``.

    ``seed`` is the public randomness of the choices made on the validation
    set (a ``*CV`` variant's search); ``sample_weight`` (public, one per
    input sample, or None) multiplies each row's loss. On the first use of
    the walk's kernel (``subspace`` says which), a
    :class:`~skdpval.exceptions.FirstCompileWarning` says it compiles
    (``stacklevel`` counts from the caller): before the set-up, which runs
    on it.
    """
    n_parties = len(parties.train_parties)
    weights = semivalue_weights(semivalue, n_parties)
    chosen = family.public_params(estimator, parties.X_val, parties.y_val, seed)
    objective = family.objective(estimator, n_parties=n_parties, public=chosen)
    view = family.view(objective, parties, utility=utility,
                       sample_weight=sample_weight)
    if view.row_weights.shape == weights.shape and np.array_equal(view.row_weights,
                                                                  weights):
        # One array for both (ones: Shapley, unweighted rows), held and sent
        # to the walk's workers once. Read only.
        weights = view.row_weights
    validation_objective = family.objective(estimator, n_parties=len(view.X_val),
                                            public=chosen)
    kernel, what, seconds = family.walk_kernel(view, subspace, UTILITY_CODES[utility])
    warn_if_first_compile(kernel, what, seconds, stacklevel=stacklevel + 1)
    return chosen, Game(*view, weights, UTILITY_CODES[utility], bool(record_level),
                        bool(joint), None, validation_objective, parties.train_parties,
                        parties.n_all_parties, parties.target_scale)
