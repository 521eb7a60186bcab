"""The valuators' shared template: one ``fit``, one way to lay out the parties.

Every valuator (:class:`~skdpval.DPDataValuator`,
:class:`~skdpval.DPLabelQuality`, :class:`~skdpval.DPFederatedValuator`,
:class:`~skdpval.LayeredShapleyValuator`) fits in the same named steps:

1. ``_check_parameters``: the parameters that need more than
   ``_parameter_constraints`` (the budget, the wrapped model), before any
   data is read; returns the wrapped model as the valuator reads it;
2. the public randomness: ``_n_seeds`` seeds drawn from ``random_state``
   before any work (the first splits off the validation set), then one
   more that breaks ties in ``rank_`` (drawn last, so that the values of
   a given ``random_state`` do not depend on it);
3. ``_parties``: :func:`~skdpval.families.prepare_parties` with the options
   of ``_party_options`` (validation, the split, the public
   standardisation, the rows laid out party by party), then
   ``_finish_parties``, the valuator's own checks and changes of them;
4. ``_value``: the valuator's own mechanism, returning one value per
   training party;
5. ``_set_values``: ``values_``, ``rank_`` (tied values in a random order
   of the tie seed) and ``sample_values_``, with
   NaN and rank 0 for parties held out as the validation set (under
   ``threat_model="joint"`` these are the curator's view: ``rank_``
   refuses, and :meth:`~OwnerValues.owner_value` delivers one owner's value).

The fit's privacy lives in one :class:`~skdpval.privacy._mechanism.PrivacyMechanism`,
built from the parameters in step 1 (a budget it cannot reach is refused
there), told whom it protects after step 3, handed to ``_value`` (which
declares the parts it releases, calibrates and draws through it), and
written out after step 4: ``privacy_report_`` and the public privacy
attributes, the same on every valuator.

A subclass documents its ``fit`` (decorated with ``_fit_context``) and
calls :meth:`BaseValuator._fit`.

Every fitted valuator exports its values the same way:
:meth:`BaseValuator.to_frame` (a pandas DataFrame, one row per party) and
:meth:`BaseValuator.to_pydvl` (pyDVL's ``ValuationResult``).
"""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..walks import _dask
from ..families import check_classes_parameter, prepare_parties
from ..privacy import PrivacyMechanism, warn_if_default_epsilon
from ..privacy._threat_model import OwnerValues, refuse_in_joint_mode

MAX_INT = np.iinfo(np.int32).max

# Warnings about the user's data point at the user's call of fit: from a
# step of ``_fit``, past the step, _fit, fit and _fit_context's wrapper.
STEP_TO_USER = 5


# The ranks are written in blocks of this many parties: scipy's rankdata
# holds several arrays of n at once (benchmarks/dask_memory.py).
RANK_BLOCK = 2**16


def ordinal_rank(values, train, n_all, seed):
    """``rank[train[i]]``: 1 for the largest of ``values``, NaN after every
    number; 0 for the parties not in ``train``. Tied values take their ranks
    in a random order drawn from ``seed`` (public randomness), not in the
    order of the rows: values on a grid tie often (a label score, or any
    value without noise), and a file sorted by date or by label would
    otherwise decide which of them rank last."""
    shuffled = np.random.RandomState(seed).permutation(len(values))
    keys = values[shuffled]
    np.negative(keys, out=keys)
    order = np.argsort(keys, kind="stable")
    del keys
    order = shuffled[order]
    rank = np.zeros(n_all, dtype=np.int64)
    for lo in range(0, len(order), RANK_BLOCK):
        block = order[lo:lo + RANK_BLOCK]
        rank[train[block]] = np.arange(lo + 1, lo + 1 + len(block))
    return rank


class BaseValuator(OwnerValues, BaseEstimator):
    """Base class of the valuators: the template :meth:`_fit` and its steps;
    each owner's value on its own (:meth:`owner_value`)."""

    # Seeds drawn from random_state before any work: the validation split,
    # then the valuator's own public randomness.
    _n_seeds = 2
    # What a party is called when fit got groups (to_frame's index name).
    _group_name = "group"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _fit(self, X, y, X_val=None, y_val=None, groups=None, **fit_params):
        """The template: check, seed, lay out the parties, value them, set values."""
        model = self._check_parameters()
        mechanism = PrivacyMechanism.of(self, adds_noise=self._adds_noise())
        options = self._party_options(model)
        check_classes_parameter(self, options["is_classifier"], self.classes)
        split_seed, *seeds, tie_seed = check_random_state(self.random_state).randint(
            MAX_INT, size=self._n_seeds + 1)
        parties = self._parties(X, y, X_val, y_val, groups, options, split_seed)
        parties = self._finish_parties(parties, X_val is not None, groups)
        # Who may see the values (skdpval.privacy._threat_model); a valuator without
        # the parameter values centrally.
        self.threat_model_ = getattr(self, "threat_model", "central")
        mechanism.protect(*self._protected_units(parties, groups))
        # The fit's own delta ("auto" resolved for its units), before any work.
        warn_if_default_epsilon(self, delta=mechanism.delta,
                                stacklevel=STEP_TO_USER - 1)
        values = self._value(parties, groups, model, seeds, mechanism, **fit_params)
        mechanism.write(self, parties.n_unprotected)
        self._set_values(values, parties, groups, tie_seed)
        # to_frame's index: the rows' own labels when X is a DataFrame.
        self._row_index = _frame_index(X) if groups is None else None
        return self

    # The word for a party that is a group, in reports and messages.
    _party_unit = "group"

    # How privacy_spent plans an unfitted template's fit when no fitted
    # sibling shows its layout: one release of one coordinate per party.
    _planned_release = dict(name="release", law="rounded Gaussian", n_releases=1,
                            dimension=1, zero_neighbour=True, share=1.0,
                            n_releases_param=None)

    def _privacy_parts(self):
        """The parts of a fit, as its report lists them, from the parameters
        alone (for :func:`skdpval.privacy_spent` of unfitted templates)."""
        return [dict(self._planned_release)]

    def _adds_noise(self):
        """Whether the fit adds privacy noise, besides ``epsilon=np.inf``."""
        return True

    def _record_level(self, groups):
        """Whether each record of a group is the privacy unit."""
        return groups is not None and getattr(self, "privacy_unit", None) == "record"

    def _protected_units(self, parties, groups):
        """``(unit, n_units, record_sizes, party)`` for
        :meth:`~skdpval.privacy._mechanism.PrivacyMechanism.protect`: all public."""
        if self._record_level(groups):
            return ("record", len(parties.X), np.diff(parties.offsets),
                    self._party_unit)
        unit = "sample" if groups is None else self._party_unit
        return unit, len(parties.train_parties), None, self._party_unit

    def _check_parameters(self):
        """Checks beyond ``_parameter_constraints``; returns the wrapped model."""
        raise NotImplementedError

    def _party_options(self, model):
        """Keyword arguments of :func:`~skdpval.families._parties.prepare_parties`."""
        raise NotImplementedError

    # Whether fit takes Dask collections (skdpval.walks._dask): the valuators whose
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

    def _value(self, parties, groups, model, seeds, mechanism, **fit_params):
        """One value per training party, in the order of ``parties``; its
        releases go through ``mechanism``."""
        raise NotImplementedError

    def _set_values(self, values, parties, groups, tie_seed):
        """``values_`` and ``rank_`` over all parties (NaN and 0 for held-out
        ones; ties broken by ``tie_seed``) and, with groups, ``sample_values_``."""
        train = parties.train_parties
        self.values_ = np.full(parties.n_all_parties, np.nan)
        self.values_[train] = values
        self.rank_ = ordinal_rank(values, train, parties.n_all_parties, tie_seed)
        if groups is not None:
            self.sample_values_ = self.values_[parties.party_of_sample]

    def to_frame(self):
        """The values as a pandas DataFrame, one row per party.

        Requires pandas (``pip install pandas``, or the ``pandas`` extra:
        ``pip install skdpval[pandas]``).

        Returns
        -------
        frame : pandas.DataFrame of shape (n_parties, 4)
            Columns ``value`` (``values_``), ``stderr`` (``values_stderr_``
            where the valuator has it, NaN otherwise), ``rank`` (``rank_``:
            1 for the most valuable, 0 for a held-out party) and
            ``held_out`` (bool: the party was held out as the validation
            set and has no value). The rows are the parties in the order of
            ``values_``: with ``groups`` (and for
            :class:`~skdpval.DPFederatedValuator`, whose parties are
            clients) the index holds their labels (``groups_``) and is named
            ``"group"`` (``"client"``); otherwise it is the index of ``X``
            when ``fit`` got a pandas DataFrame, else a RangeIndex over the
            samples (in a Pipeline, a step's ``set_output(transform="pandas")``
            passes the index on). The index of ``X`` is the caller's, not a
            release: the fitted valuator keeps it, so that a pickle of it
            names the training rows, which the privacy model does not
            protect (as the rows' order is not).

        Examples
        --------
        >>> from sklearn.datasets import load_breast_cancer
        >>> from skdpval import DPLabelQuality
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> scorer = DPLabelQuality(epsilon=3.0, random_state=0)
        >>> scorer = scorer.fit(X[:400], y[:400], X_val=X[400:], y_val=y[400:])
        >>> frame = scorer.to_frame()
        >>> frame.columns.tolist(), len(frame)
        (['value', 'stderr', 'rank', 'held_out'], 400)
        >>> bool(frame["held_out"].any())     # X_val given: every row is valued
        False
        """
        check_is_fitted(self, "values_")
        refuse_in_joint_mode(self, "to_frame")
        pd = _import_optional("pandas", "to_frame", "pandas")
        values = np.asarray(self.values_, dtype=np.float64)
        stderr = getattr(self, "values_stderr_", None)
        stderr = (np.full(len(values), np.nan) if stderr is None
                  else np.asarray(stderr, dtype=np.float64))
        groups = getattr(self, "groups_", None)
        row_index = getattr(self, "_row_index", None)
        index = (pd.Index(groups, name=self._group_name) if groups is not None
                 else pd.RangeIndex(len(values)) if row_index is None
                 else row_index)
        return pd.DataFrame({"value": values, "stderr": stderr,
                             "rank": np.asarray(self.rank_),
                             "held_out": np.asarray(self.rank_) == 0},
                            index=index)

    def to_pydvl(self):
        """The values as pyDVL's ``ValuationResult`` (pyDVL must be installed).

        The parties held out as the validation set have no value and are
        left out. ``indices`` are the parties' positions in ``values_``;
        ``data_names`` their group (client) labels, or the positions
        without groups. ``counts`` is the number of counted permutations
        (``n_marginals_``) or coalitions (``n_coalitions_``) where the
        valuator has one, else 1; ``variances`` is ``values_stderr_**2``
        times ``counts``, so that pyDVL's ``stderr`` (``sqrt(variances /
        counts)``) equals ``values_stderr_``; NaN where the valuator has no
        standard error. ``algorithm`` names the valuator's class. Tested
        against pyDVL's constructor (keywords ``values``, ``variances``,
        ``counts``, ``indices``, ``data_names``, ``algorithm``; pyDVL 0.10's
        ``pydvl.valuation.result``, older versions' ``pydvl.value.result``).

        Returns
        -------
        result : pydvl ValuationResult
        """
        check_is_fitted(self, "values_")
        refuse_in_joint_mode(self, "to_pydvl")
        try:
            from pydvl.valuation.result import ValuationResult
        except ImportError:
            try:  # pyDVL before 0.10
                from pydvl.value.result import ValuationResult
            except ImportError as error:
                raise ImportError(
                    f"{type(self).__name__}.to_pydvl needs pyDVL: pip install "
                    "pyDVL.") from error
        frame_values = np.asarray(self.values_, dtype=np.float64)
        train = np.flatnonzero(np.asarray(self.rank_) != 0)
        counts = getattr(self, "n_coalitions_", getattr(self, "n_marginals_", 1))
        counts = np.broadcast_to(np.asarray(counts, dtype=np.int64),
                                 frame_values.shape)[train].copy()
        stderr = getattr(self, "values_stderr_", None)
        variances = (np.full(len(train), np.nan) if stderr is None
                     else np.asarray(stderr, dtype=np.float64)[train] ** 2 * counts)
        groups = getattr(self, "groups_", None)
        names = train if groups is None else np.asarray(groups)[train]
        return ValuationResult(values=frame_values[train], variances=variances,
                               counts=counts, indices=train, data_names=names,
                               algorithm=f"skdpval.{type(self).__name__}")


def _frame_index(X):
    """The index of ``X`` when it is a pandas DataFrame (the rows' labels, as
    the caller gave them), else None."""
    if type(X).__module__.split(".")[0] == "pandas" and getattr(X, "ndim", 0) == 2:
        return X.index  # immutable
    return None


def _import_optional(module, method, extra):
    """``module``, or an ImportError naming the ``extra`` that installs it."""
    try:
        return __import__(module)
    except ImportError as error:
        raise ImportError(
            f"{method} needs {module}: pip install {module} (or pip install "
            f"'skdpval[{extra}]').") from error
