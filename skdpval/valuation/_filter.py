"""Cleaning steps built on private data values.

Tuning the valuator (``epsilon``, ``q``...) by cross-validation on the
private data spends privacy too: every fit releases new noisy gradients of
the samples it values. ``n`` fits that each give ``mu``-GDP (see
``privacy_report_["mu"]``) together give ``mu * sqrt(n)``-GDP: a grid of
``G`` candidates with ``F``-fold cross-validation and a refit values each
sample up to ``G (F - 1) + 1`` times. :func:`skdpval.privacy_spent` counts it.
"""

import sys
import warnings
from numbers import Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    MetaEstimatorMixin,
    RegressorMixin,
    _fit_context,
    clone,
)
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from ..exceptions import SkdpvalWarning
from ..families import check_validation_features, validate_private_data
from ..privacy import refuse_in_joint_mode, step_privacy_report
from ._data_valuator import DPDataValuator


def _check_valuator(valuator):
    """A valuator: fit(X, y, ...) setting values_ (and privacy_report_)."""
    if not (hasattr(valuator, "fit") and hasattr(valuator, "get_params")):
        raise TypeError(
            "valuator must be an estimator whose fit(X, y) sets values_ and "
            "privacy_report_ (DPDataValuator, DPLabelQuality...), got "
            f"{type(valuator).__name__}.")
    refuse_in_joint_mode(valuator, "A filter's kept data set (the samples it drops)")


def _fit_values(valuator, X, y, fit_params):
    """Clone and fit ``valuator``; return it and its values."""
    _check_valuator(valuator)
    valuator = clone(valuator).fit(X, y, **fit_params)
    values = getattr(valuator, "values_", None)
    if values is None or np.shape(values) != (_num_samples(X),):
        raise TypeError(
            f"valuator {type(valuator).__name__} did not set values_ with one "
            "value per sample after fit.")
    return valuator, np.asarray(values, dtype=np.float64)


def _rank(valuator):
    """The fitted valuator's ``rank_`` (one per value), or None."""
    rank = getattr(valuator, "rank_", None)
    return (None if rank is None or np.shape(rank) != np.shape(valuator.values_)
            else rank)


def _check_no_groups(filter_, fit_params):
    """The filters keep or drop samples: a valuation of groups has one value
    per group, which they cannot use."""
    if fit_params.get("groups") is not None:
        raise ValueError(
            f"{type(filter_).__name__} keeps or drops samples and takes no "
            "groups: value the groups with the valuator's fit(X, y, groups=...) "
            "and drop rows by its sample_values_.")


def _kept_mask(values, drop_fraction, threshold, rank=None):
    """Keep all but the lowest-valued samples; held-out samples (NaN) stay.
    Among tied values the valuator's ``rank`` decides (its ties are broken
    by its ``random_state``, not by the rows' order); a valuator without
    ``rank_`` leaves them in the rows' order."""
    valued = ~np.isnan(values)
    keep = np.ones(len(values), dtype=bool)
    if threshold is not None:
        keep[valued] = values[valued] >= threshold
        if valued.any() and not keep[valued].any():  # noisy values: public
            warnings.warn(f"threshold={threshold!r} keeps none of the {valued.sum()} "
                          f"valued samples (the largest value is "
                          f"{values[valued].max():.3g}).", SkdpvalWarning,
                          stacklevel=4)
        return keep
    n_drop = int(np.floor(drop_fraction * valued.sum()))
    by = values[valued] if rank is None else -np.asarray(rank)[valued]
    order = np.flatnonzero(valued)[np.argsort(by, kind="stable")]
    keep[order[:n_drop]] = False
    return keep


def _inside_imblearn_pipeline():
    """Whether an ``imblearn.pipeline.Pipeline`` method is on the call stack.

    imbalanced-learn (0.14) gives a sampler no step parameters unless
    metadata routing is on: ``pipe.fit(X, y, filter__X_val=...)`` reaches
    ``fit_resample`` without them. The filter cannot see what was dropped,
    only where it is called from.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "imblearn.pipeline":
            return True
        frame = frame.f_back
    return False


def _take(data, index):
    """Rows ``index`` of an array, a DataFrame or a Series (keeping its index)."""
    if hasattr(data, "iloc"):
        return data.iloc[index]
    return np.asarray(data)[index] if isinstance(data, list) else data[index]


class DPValueFilter(BaseEstimator):
    """Drop the lowest-valued samples: a sampler for imbalanced-learn pipelines.

    ``fit_resample(X, y)`` values the samples with a clone of ``valuator`` and
    returns those kept. It follows imbalanced-learn's sampler convention
    without depending on it, so it works as a step of
    ``imblearn.pipeline.Pipeline``, which applies samplers at fit time only
    (``predict`` never drops anything).

    In ``imblearn.pipeline.Pipeline``, turn on scikit-learn's metadata
    routing and give the public validation set to the pipeline's ``fit``:
    ``sklearn.set_config(enable_metadata_routing=True)``, then
    ``pipe.fit(X, y, X_val=X_val, y_val=y_val)``. The filter requests
    ``X_val`` and ``y_val`` by default, for ``fit`` and ``fit_resample``.
    Without routing, imbalanced-learn (0.14) drops the step parameters of a
    sampler (``filter__X_val=...`` never arrives), so a fit without
    ``X_val`` inside that pipeline is an error rather than a silent,
    unprotected split of the private rows.

    Parameters
    ----------
    valuator : estimator, default=None
        Values the samples: a DPDataValuator, a DPLabelQuality, or any
        estimator whose ``fit(X, y, **fit_params)`` sets ``values_`` (one per
        sample) and ``privacy_report_``; ``None`` means ``DPDataValuator()``.
        Samples it holds out as its validation set (value NaN) are kept.
    drop_fraction : float in [0, 1) or None, default=0.1
        Fraction of the valued samples to drop, lowest values first; among
        tied values, in the order of the valuator's ``rank_`` (ties broken
        at random by its ``random_state``, not by the rows' order). Set it
        to ``None`` when giving ``threshold``.
    threshold : float or None, default=None
        Drop the samples valued below it instead.

    Attributes
    ----------
    valuator_ : estimator
        The fitted clone of ``valuator``; its ``epsilon_`` is the privacy
        spent by this fit.
    privacy_report_ : dict
        The valuation's own report (``"valuation"``), whether it is private,
        what the output is (the kept rows are the private data themselves:
        what is fitted on them must be private too) and the composition of
        the step as :func:`skdpval.privacy_spent` counts it (``"mu"``,
        ``"epsilon"``, ``"delta"``, ``"leaks"``...).
    sample_indices_ : ndarray of shape (n_kept,)
        Positions of the kept samples in the ``X`` given to ``fit_resample``.
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    DPFilteredClassifier : Filter then fit a classifier, for plain sklearn pipelines.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdpval import DPDataValuator, DPValueFilter
    >>> X, y = make_classification(n_samples=100, random_state=0)
    >>> sampler = DPValueFilter(DPDataValuator(n_permutations=20, random_state=0),
    ...                         drop_fraction=0.25)
    >>> X_kept, y_kept = sampler.fit_resample(X, y)
    >>> X_kept.shape   # 80 valued samples, 20 of them dropped; 20 held out
    (80, 20)
    """

    _parameter_constraints: dict = {
        "valuator": [HasMethods(["fit"]), None],
        "drop_fraction": [Interval(Real, 0.0, 1.0, closed="left"), None],
        "threshold": [Real, None],
    }

    # Routed to fit and fit_resample when metadata routing is on (the
    # filter is useless in a pipeline without a public validation set).
    __metadata_request__fit = {"X_val": True, "y_val": True}
    __metadata_request__fit_resample = {"X_val": True, "y_val": True}

    def __init__(self, valuator=None, *, drop_fraction=0.1, threshold=None):
        self.valuator = valuator
        self.drop_fraction = drop_fraction
        self.threshold = threshold

    def _defaults(self):
        """The valuator to clone, and no final model."""
        return (DPDataValuator() if self.valuator is None else self.valuator), None

    def _privacy_components(self):
        """The valuator (fitted when this is) and the final model (a template)
        whose fits :func:`skdpval.privacy_spent` counts."""
        valuator, final = self._defaults()
        return getattr(self, "valuator_", valuator), final

    def _check_rule(self):
        if (self.drop_fraction is None) == (self.threshold is None):
            raise ValueError(
                "Give exactly one of drop_fraction and threshold (set "
                "drop_fraction=None to use threshold).")
        if self.threshold is not None and not np.isfinite(self.threshold):
            raise ValueError(f"threshold must be finite, got {self.threshold!r}.")

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, **fit_params):
        """Value the samples and choose those to keep.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **fit_params : dict
            Passed to the valuator's ``fit``: above all ``X_val``
            (array-like of shape (n_val, n_features)) and ``y_val``
            (array-like of shape (n_val,)), the public validation set.
            Without them the valuator holds out part of ``X`` as its
            validation set, unprotected.

        Returns
        -------
        self : object
        """
        self._check_rule()
        _check_no_groups(self, fit_params)
        if fit_params.get("X_val") is None and _inside_imblearn_pipeline():
            raise ValueError(
                "DPValueFilter got no X_val inside imblearn.pipeline.Pipeline: "
                "imbalanced-learn passes no step parameters (filter__X_val=...) "
                "to a sampler unless metadata routing is on, and without X_val "
                "the valuator would hold out private rows, unprotected. Turn "
                "routing on with sklearn.set_config(enable_metadata_routing=True) "
                "and call pipe.fit(X, y, X_val=X_val, y_val=y_val).")
        self.valuator_, values = _fit_values(self._defaults()[0], X, y, fit_params)
        self.n_features_in_ = self.valuator_.n_features_in_
        if hasattr(self.valuator_, "feature_names_in_"):
            self.feature_names_in_ = self.valuator_.feature_names_in_
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_  # from an earlier fit on a DataFrame
        self.sample_indices_ = np.flatnonzero(_kept_mask(
            values, self.drop_fraction, self.threshold, _rank(self.valuator_)))
        self.privacy_report_ = step_privacy_report(self)
        return self

    def fit_resample(self, X, y, **fit_params):
        """Value the samples and return the kept ones.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like or Series of shape (n_samples,)
        **fit_params : dict
            Passed to the valuator's ``fit``: above all ``X_val``
            (array-like of shape (n_val, n_features)) and ``y_val``
            (array-like of shape (n_val,)), the public validation set.
            Without them the valuator holds out part of ``X`` as its
            validation set, unprotected.

        Returns
        -------
        X_resampled : array-like or DataFrame of shape (n_kept, n_features)
            The kept rows, of the type of ``X`` (a DataFrame keeps its index
            and columns).
        y_resampled : array-like or Series of shape (n_kept,)
        """
        self.fit(X, y, **fit_params)
        return _take(X, self.sample_indices_), _take(y, self.sample_indices_)


class _BaseFiltered(MetaEstimatorMixin, BaseEstimator):
    """Value, drop the lowest-valued samples, fit ``estimator`` on the rest."""

    _parameter_constraints: dict = {
        "valuator": [HasMethods(["fit"]), None],
        "estimator": [HasMethods(["fit"]), None],
        "drop_fraction": [Interval(Real, 0.0, 1.0, closed="left")],
    }

    # Routed to fit when metadata routing is on (a Pipeline's
    # transform_input=["X_val"] needs it), as the filter's are.
    __metadata_request__fit = {"X_val": True, "y_val": True}

    def __init__(self, valuator=None, estimator=None, *, drop_fraction=0.1):
        self.valuator = valuator
        self.estimator = estimator
        self.drop_fraction = drop_fraction

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, **fit_params):
        """Value the samples, drop the lowest, fit the estimator on the rest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **fit_params : dict
            Passed to the valuator's ``fit``: above all ``X_val``
            (array-like of shape (n_val, n_features)) and ``y_val``
            (array-like of shape (n_val,)), the public validation set.
            Without them the valuator holds out part of ``X`` as its
            validation set, unprotected. ``sample_weight`` goes to the
            valuator too and, for the kept rows, to the estimator's ``fit``.

        Returns
        -------
        self : object
        """
        valuator, estimator = self._defaults()
        _check_no_groups(self, fit_params)
        X, y = validate_private_data(self, X, y, dtype=None, ensure_min_samples=2)
        if fit_params.get("X_val") is not None:
            # X reaches the valuator as an array: X_val's column names are
            # checked here, against X's.
            fit_params = {**fit_params, "X_val": check_validation_features(
                self, fit_params["X_val"], dtype=None)}
        self.valuator_, values = _fit_values(valuator, X, y, fit_params)
        self.kept_mask_ = _kept_mask(values, self.drop_fraction, None,
                                     _rank(self.valuator_))
        weights = fit_params.get("sample_weight")
        kept_weights = ({} if weights is None else
                        {"sample_weight": np.asarray(weights)[self.kept_mask_]})
        self.estimator_ = clone(estimator).fit(X[self.kept_mask_], y[self.kept_mask_],
                                               **kept_weights)
        if hasattr(self.estimator_, "classes_"):
            self.classes_ = self.estimator_.classes_
        self.privacy_report_ = step_privacy_report(self)
        return self

    def _privacy_components(self):
        """The valuator (fitted when this is) and the final model (a template)
        whose fits :func:`skdpval.privacy_spent` counts."""
        valuator, final = self._defaults()
        return getattr(self, "valuator_", valuator), final

    def _estimator_has(attr):
        def check(self):
            if hasattr(self, "estimator_"):
                return hasattr(self.estimator_, attr)
            return hasattr(self._defaults()[1], attr)
        return check

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the estimator fitted on the kept samples."""
        check_is_fitted(self)
        return self.estimator_.predict(validate_data(self, X, reset=False, dtype=None))

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities from the estimator fitted on the kept samples."""
        check_is_fitted(self)
        return self.estimator_.predict_proba(
            validate_data(self, X, reset=False, dtype=None))

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the estimator fitted on the kept samples."""
        check_is_fitted(self)
        return self.estimator_.decision_function(
            validate_data(self, X, reset=False, dtype=None))

    @available_if(_estimator_has("score"))
    def score(self, X, y, sample_weight=None):
        """The estimator's own score on ``(X, y)``."""
        check_is_fitted(self)
        return self.estimator_.score(validate_data(self, X, reset=False, dtype=None),
                                     y, sample_weight=sample_weight)


_FILTERED_DOC = """{summary}

    ``fit`` values the training samples with a clone of ``valuator``, drops
    the ``drop_fraction`` of them with the lowest values, and fits a clone of
    ``estimator`` on the rest; prediction methods delegate to that estimator.
    Usable as the last step of a scikit-learn ``Pipeline`` and inside
    ``GridSearchCV`` (e.g. ``param_grid={{"valuator__q": [0.5, 0.9],
    "valuator__epsilon": [1, 3]}}``, with ``valuator`` given: nested
    parameters need the object). Tuning on private data spends privacy:
    each fit releases new noisy gradients of its training samples, and ``n``
    fits of ``mu``-GDP compose to ``mu * sqrt(n)``-GDP;
    :func:`skdpval.privacy_spent` counts a whole search.

    The returned model is private only if ``estimator`` is: it is fitted on
    the kept rows themselves. A diffprivlib model (e.g.
    ``LogisticRegression(epsilon=1.0, data_norm=...)``) counts as an
    ``epsilon``-DP fit, a model that declares its guarantee through
    ``__dp_guarantee__()`` (:func:`skdpval.privacy_spent`) as what it
    declares, and ``privacy_report_`` then gives the budget of valuation and
    fit together; any other estimator (scikit-learn's ``SGDClassifier``
    included, whose ``epsilon`` is its Huber loss's width) makes
    ``privacy_report_["final_model_private"]`` False, with the reason.

    Parameters
    ----------
    valuator : estimator, default=None
        Values the samples: a DPDataValuator, a DPLabelQuality, or any
        estimator whose ``fit(X, y, **fit_params)`` sets ``values_`` (one per
        sample) and ``privacy_report_``; ``None`` means
        ``DPDataValuator({default_model})``. Samples it holds out as its
        validation set are kept.
    estimator : estimator object, default=None
        Fitted on the kept samples; ``None`` means ``{default_model}`` (not
        private).
    drop_fraction : float in [0, 1), default=0.1
        Fraction of the valued samples to drop, lowest values first; among
        tied values, in the order of the valuator's ``rank_`` (ties broken
        at random by its ``random_state``, not by the rows' order).

    Attributes
    ----------
    valuator_ : estimator
        The fitted clone of ``valuator``; ``valuator_.epsilon_`` is the
        privacy spent by the valuation.
    privacy_report_ : dict
        The whole step: the valuation's own report (``"valuation"``),
        ``"valuation_private"``, ``"final_model_private"`` and
        ``"final_model"`` (why, in plain words), and the composition of
        valuation and final fit as :func:`skdpval.privacy_spent` counts it
        (``"mu"``, ``"epsilon"``, ``"delta"``, ``"private"``, ``"leaks"``...).
    estimator_ : estimator object
        The clone of ``estimator`` fitted on the kept samples.
    kept_mask_ : ndarray of bool of shape (n_samples,)
        True for the samples ``estimator_`` was fitted on.{classes}
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    DPValueFilter : The same filtering as an imbalanced-learn style sampler.

    Examples
    --------
    {example}
    """


class DPFilteredClassifier(ClassifierMixin, _BaseFiltered):
    def _defaults(self):
        valuator = DPDataValuator() if self.valuator is None else self.valuator
        estimator = LogisticRegression() if self.estimator is None else self.estimator
        return valuator, estimator


class DPFilteredRegressor(RegressorMixin, _BaseFiltered):
    def _defaults(self):
        valuator = DPDataValuator(Ridge()) if self.valuator is None else self.valuator
        estimator = Ridge() if self.estimator is None else self.estimator
        return valuator, estimator


DPFilteredClassifier.__doc__ = _FILTERED_DOC.format(
    summary="Fit a classifier on the samples that private data values keep.",
    default_model="LogisticRegression()",
    classes="\n    classes_ : ndarray of shape (n_classes,)\n        Class labels.",
    example=""">>> from sklearn.datasets import make_classification
    >>> from skdpval import DPDataValuator, DPFilteredClassifier
    >>> X, y = make_classification(n_samples=100, random_state=0)
    >>> model = DPFilteredClassifier(DPDataValuator(n_permutations=20,
    ...                                             random_state=0),
    ...                              drop_fraction=0.2).fit(X, y)
    >>> int(model.kept_mask_.sum())
    84""")
DPFilteredRegressor.__doc__ = _FILTERED_DOC.format(
    summary="Fit a regressor on the samples that private data values keep.",
    default_model="Ridge()", classes="",
    example=""">>> from sklearn.datasets import make_regression
    >>> from sklearn.linear_model import Ridge
    >>> from skdpval import DPDataValuator, DPFilteredRegressor
    >>> X, y = make_regression(n_samples=100, n_features=5, random_state=0)
    >>> model = DPFilteredRegressor(DPDataValuator(Ridge(), n_permutations=20,
    ...                                            random_state=0),
    ...                             drop_fraction=0.2).fit(X, y)
    >>> int(model.kept_mask_.sum())
    84""")
