"""The valuators' shared template: one ``fit``, one way to lay out the parties.

Every valuator (:class:`~skdpval.DPDataValuator`,
:class:`~skdpval.DPLabelQuality`, :class:`~skdpval.DPFederatedValuator`,
:class:`~skdpval.LayeredShapleyValuator`) fits in the same named steps:

1. ``_check_parameters``: the parameters that need more than
   ``_parameter_constraints`` (the budget, the wrapped model), before any
   data is read; returns the wrapped model as the valuator reads it;
2. the public randomness: ``_n_seeds`` seeds drawn from ``random_state``
   before any work (the first splits off the validation set);
3. ``_parties``: :func:`~skdpval._data.prepare_parties` with the options
   of ``_party_options`` (validation, the split, the public
   standardisation, the rows laid out party by party), then
   ``_finish_parties``, the valuator's own checks and changes of them;
4. ``_value``: the valuator's own mechanism, returning one value per
   training party;
5. ``_set_values``: ``values_``, ``rank_`` and ``sample_values_``, with
   NaN and rank 0 for parties held out as the validation set.

A subclass documents its ``fit`` (decorated with ``_fit_context``) and
calls :meth:`BaseValuator._fit`.
"""

import warnings

import numpy as np
from scipy.stats import rankdata
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from . import _dask
from ._data import check_classes_parameter, prepare_parties
from .exceptions import warn_if_default_epsilon

MAX_INT = np.iinfo(np.int32).max

# Warnings about the user's data point at the user's call of fit: from a
# step of ``_fit``, past the step, _fit, fit and _fit_context's wrapper.
STEP_TO_USER = 5


def check_converged(values, utilities, initial_utility, learning_rate, utility,
                    process, step, stacklevel, auto_learning_rate=True,
                    lowest_utility=np.inf):
    """Raise when ``values`` or ``utilities`` are not finite; warn when every
    value is 0, when the median utility after a ``step`` fell far below
    ``initial_utility``, or when the utility fell to ``lowest_utility`` (or
    lower) on the way.

    All are computed from the noisy releases only (post-processing).
    """
    auto = " (or 'auto')" if auto_learning_rate else ""
    remedy = (f"Use a smaller learning_rate{auto}, or scale the features "
              "(standardize=True).")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(utilities))):
        raise FloatingPointError(
            f"The {process} diverged with learning_rate={learning_rate:g}: "
            f"utilities or values are not finite. {remedy}")
    if np.size(values) and not np.any(values):
        warnings.warn(
            f"Every value is 0: the {process} never moved the validation utility "
            f"(learning_rate={learning_rate:g}). Use a larger learning_rate, "
            "clip_norm or number of permutations.", ConvergenceWarning,
            stacklevel=stacklevel + 1)
    scale = max(1.0, abs(initial_utility))
    if utility != "accuracy" and lowest_utility < initial_utility - 100 * scale:
        warnings.warn(
            f"The {process} diverges with learning_rate={learning_rate:g}: along "
            f"{step} the validation utility fell to {lowest_utility:.3g} or lower, "
            f"against {initial_utility:.3g} before it. {remedy}",
            ConvergenceWarning, stacklevel=stacklevel + 1)
    elif utility != "accuracy" and np.median(utilities) < initial_utility - 100 * scale:
        warnings.warn(
            f"The {process} diverges with learning_rate={learning_rate:g}: the "
            f"median validation utility after {step} is "
            f"{np.median(utilities):.3g}, against {initial_utility:.3g} before "
            f"it. {remedy}", ConvergenceWarning, stacklevel=stacklevel + 1)


class BaseValuator(BaseEstimator):
    """Base class of the valuators: the template :meth:`_fit` and its steps."""

    # Seeds drawn from random_state before any work: the validation split,
    # then the valuator's own public randomness.
    _n_seeds = 2

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _fit(self, X, y, X_val=None, y_val=None, groups=None, **fit_params):
        """The template: check, seed, lay out the parties, value them, set values."""
        model = self._check_parameters()
        options = self._party_options(model)
        check_classes_parameter(self, options["is_classifier"], self.classes)
        warn_if_default_epsilon(self, stacklevel=STEP_TO_USER - 1)
        split_seed, *seeds = check_random_state(self.random_state).randint(
            MAX_INT, size=self._n_seeds)
        parties = self._parties(X, y, X_val, y_val, groups, options, split_seed)
        parties = self._finish_parties(parties, X_val is not None, groups)
        values = self._value(parties, groups, model, seeds, **fit_params)
        self._set_values(values, parties, groups)
        return self

    def _check_parameters(self):
        """Checks beyond ``_parameter_constraints``; returns the wrapped model."""
        raise NotImplementedError

    def _party_options(self, model):
        """Keyword arguments of :func:`~skdpval._data.prepare_parties`."""
        raise NotImplementedError

    # Whether fit takes Dask collections (skdpval._dask): the valuators whose
    # row-reading steps run on the blocks say so.
    _dask_input = False

    def _parties(self, X, y, X_val, y_val, groups, options, split_seed):
        """The validated parties and validation set (and ``classes_``)."""
        prepare = prepare_parties
        if _dask.any_dask(X, y, groups):
            if not self._dask_input:
                raise TypeError(
                    f"{type(self).__name__} takes numpy arrays, sparse matrices or "
                    "data frames in memory; Dask collections are taken by "
                    "DPDataValuator and DPLabelQuality. Compute the collection "
                    "first (X.compute()).")
            prepare = _dask.prepare_parties
        parties = prepare(
            self, X, y, X_val, y_val, groups, classes=self.classes,
            validation_fraction=self.validation_fraction, split_seed=split_seed,
            stacklevel=STEP_TO_USER, **options)
        if parties.classes is not None:
            self.classes_ = parties.classes
        return parties

    def _finish_parties(self, parties, given_X_val, groups):
        """What a valuator checks or changes once the parties are laid out
        (nothing by default)."""
        return parties

    def _value(self, parties, groups, model, seeds, **fit_params):
        """One value per training party, in the order of ``parties``."""
        raise NotImplementedError

    def _set_values(self, values, parties, groups):
        """``values_`` and ``rank_`` over all parties (NaN and 0 for held-out
        ones) and, with groups, ``sample_values_``."""
        train = parties.train_parties
        self.values_ = np.full(parties.n_all_parties, np.nan)
        self.values_[train] = values
        self.rank_ = np.zeros(parties.n_all_parties, dtype=np.int64)
        self.rank_[train] = rankdata(-values, method="ordinal")
        if groups is not None:
            self.sample_values_ = self.values_[parties.party_of_sample]
