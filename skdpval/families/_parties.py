"""The parties' layout: the inputs checked, split and standardised, party by party.

Every valuator lays out its training parties and the validation set here
(:func:`prepare_parties`): the class set from public data only, the held-out
parties from the public seed alone, the standardisation from the validation
set's own statistics, and the rows grouped by party. Errors about the
private rows quote none of their values.
"""

import warnings
from collections import namedtuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_feature_names,
    check_array,
    validate_data,
)

from sklearn.pipeline import Pipeline

from ..exceptions import (warn_if_many_classes, warn_if_unscaled,
                          warn_validation_from_training)
from ..kernels._math import _f64

OUTSIDE_DOMAIN = (
    " The private data must lie in the estimators' input domain: finite "
    "features, numeric targets for a regressor, labels in the public class "
    "set for a classifier. It is checked before any release; whether the "
    "data lie in it is not covered by the privacy guarantee (see the privacy "
    "model), and a fixed row-by-row rule applied before fit (e.g. "
    "np.nan_to_num) maps any data set into it.")


def public_classes(y_val, classes=None):
    """The class set, from public data only: ``classes``, or the labels of
    ``y_val`` (checked by ``check_array``, as :func:`check_y_val` does).

    The private ``y`` never chooses the classes: one relabelled sample could
    otherwise add an output to the model and change every value.
    """
    if classes is not None:
        labels = np.unique(check_array(classes, ensure_2d=False, dtype=None,
                                       input_name="classes"))
        if labels.ndim != 1 or len(labels) < 2:
            raise ValueError(f"classes must list at least two class labels, got "
                             f"{classes!r}.")
        return labels
    check_classification_targets(y_val)
    labels = np.unique(y_val)
    if len(labels) < 2:
        raise ValueError(
            f"y_val has a single class ({labels[0]!r}): the class set is taken "
            "from the validation labels, which are public. Pass a validation "
            "set with every class, or classes=[...] naming them.")
    return labels


def _class_index(labels, classes):
    """Index of each label in ``classes`` and a mask of those not in it."""
    try:
        index = np.clip(np.searchsorted(classes, labels), 0, len(classes) - 1)
    except TypeError:  # e.g. strings against numbers: none of them match
        return np.zeros(len(labels), dtype=np.int64), np.ones(len(labels), bool)
    return index, classes[index] != labels


def encode_training_labels(y, classes):
    """Class index of each training label (``y`` 1-D, as ``validate_data``
    returns it); an error for a label outside ``classes``.

    The message names no label: the training labels are private. (No
    ``check_classification_targets`` here: its warning on many distinct
    labels and its error on a non-integer float label, even one in the public
    class set, would tell the private labels without noise.)
    """
    index, unknown = _class_index(y, classes)
    if np.any(unknown):
        raise ValueError(
            f"y has labels outside the class set {classes.tolist()!r}, which "
            "is taken from y_val (public) so that no training label can change "
            "the model. Pass classes=[...] listing every class, or remove "
            "those samples." + OUTSIDE_DOMAIN)
    return index


# What an X_val that a Pipeline's steps did not transform looks like to the
# valuator at its end: text where X had numbers, other columns than X's.
UNTRANSFORMED = (
    "If the valuator is the last step of a Pipeline, X_val reaches it as "
    "given, without the transforms X went through: pass the Pipeline "
    "transform_input=['X_val'] (with sklearn.set_config("
    "enable_metadata_routing=True) and the valuator's set_fit_request("
    "X_val=True, y_val=True)), and fit the preprocessing on the public rows "
    "as FrozenEstimator(preprocessor.fit(X_val)) (a preprocessing fitted on "
    "the private X is a release without noise: privacy_spent lists it). See "
    "the user guide's \"Pipelines and preprocessing\".")


def _untransformed(message):
    """``message`` and :data:`UNTRANSFORMED`, on a line of its own after a list."""
    message = message.rstrip()
    if "\n" in message:
        return message + "\n" + UNTRANSFORMED
    return message + ("" if message.endswith(".") else ".") + " " + UNTRANSFORMED


def check_validation_features(estimator, X_val, stacklevel=3, **check_params):
    """``X_val`` checked against the ``X`` that ``estimator`` was just fitted on.

    Every error names ``X_val`` (``validate_data`` would say ``X``): its
    column count against ``n_features_in_``, NaN or infinity, sparse input.
    Column names are checked as ``validate_data(..., reset=False)`` does,
    its warnings naming ``X_val`` too; ``stacklevel`` counts from the caller
    of this function (3: a ``fit`` under ``_fit_context``, called by the user).
    ``check_params`` go to :func:`~sklearn.utils.check_array` (e.g.
    ``dtype=np.float64, order="C"``). Where ``X_val`` looks like the raw
    input of a Pipeline whose steps transformed ``X`` (text where numbers
    are expected, columns other than ``X``'s, a frame where ``X`` had no
    column names), the message says how to transform it
    (:data:`UNTRANSFORMED`).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _check_feature_names(estimator, X_val, reset=False)
        except ValueError as error:  # names other than X's
            raise ValueError(_untransformed(f"X_val: {error}")) from None
    try:
        X_val = check_array(X_val, input_name="X_val", **check_params)
    except ValueError as error:  # some of check_array's messages name no input
        text = str(error) if "X_val" in str(error) else f"X_val: {error}"
        if "convert" in text or "dtype" in text:  # text where numbers are expected
            raise ValueError(_untransformed(text)) from error
        raise ValueError(text) from error
    if X_val.shape[1] != estimator.n_features_in_:  # its warnings then moot
        raise ValueError(
            f"X_val has {X_val.shape[1]} features, but X has "
            f"{estimator.n_features_in_}: the validation set needs the same "
            f"columns as the training data. " + UNTRANSFORMED)
    for warning in caught:  # scikit-learn's text says X
        message = str(warning.message)
        if message.startswith("X "):
            message = "X_val " + message[2:]
        if "fitted without feature names" in message:  # a frame, X an array
            message = _untransformed(message)
        warnings.warn(message, warning.category, stacklevel=stacklevel + 1)
    return flush_subnormals(X_val)  # as the private rows are


def check_y_val(y_val):
    """``check_array`` of ``y_val`` (any dtype, 1-D or not)."""
    return check_array(y_val, ensure_2d=False, dtype=None, input_name="y_val")


def check_validation_targets(y_val, n_val, classes):
    """``y_val`` (checked by :func:`check_y_val`) as class indices
    (classifiers) or floats, checked against X_val."""
    if y_val.ndim != 1 or len(y_val) != n_val:
        raise ValueError(f"y_val must be 1-D with one target per row of X_val "
                         f"({n_val}), got shape {y_val.shape}.")
    if classes is None:
        return flush_subnormals(check_array(y_val, ensure_2d=False,
                                            dtype=np.float64, input_name="y_val"))
    index, unknown = _class_index(y_val, classes)
    if np.any(unknown):
        raise ValueError(f"y_val has labels not in classes={classes.tolist()!r}: "
                         f"{np.unique(y_val[unknown]).tolist()!r}.")
    return index


def check_public_targets(y, X_val, y_val, *, is_classifier, classes, standardize,
                         warn_unscaled, stacklevel):
    """``(y, y_val, classes)``: the class set from public data, the labels as
    its indices (or targets as floats), with the warnings about the
    validation set (``stacklevel`` counted from the caller). For the
    in-memory and the Dask paths alike."""
    if warn_unscaled:
        warn_if_unscaled(X_val, standardize=standardize, stacklevel=stacklevel + 1)
    y_val = check_y_val(y_val)  # once, before the class set is read from it
    if is_classifier:
        classes = public_classes(y_val, classes)
        warn_if_many_classes(y_val, classes, stacklevel=stacklevel + 1)
        y = encode_training_labels(y, classes)
    else:
        classes = None
    return y, check_validation_targets(y_val, len(X_val), classes), classes


def hold_out_parties(n_parties, validation_fraction, seed):
    """``(train, validation)`` parties, sorted, split at random without reading labels.

    A split stratified on the labels would let one private label move other
    samples in or out of the validation set; this one depends only on
    ``n_parties``, the fraction and the public seed.
    """
    n_val = int(np.ceil(validation_fraction * n_parties))
    if n_val < 1 or n_parties - n_val < 2:
        raise ValueError(
            f"validation_fraction={validation_fraction} of {n_parties} parties "
            "leaves no validation or fewer than 2 training parties; pass "
            "X_val and y_val or change validation_fraction.")
    order = np.random.default_rng(seed).permutation(n_parties)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


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
    try:
        labels, index = np.unique(groups, return_inverse=True)
    except TypeError:  # labels that do not compare, e.g. strings and numbers
        types = sorted({type(g).__name__ for g in groups})
        raise ValueError(f"groups must hold labels of one kind that sort, got a "
                         f"mix of {types}.") from None
    if len(labels) < 2:
        raise ValueError("groups has a single group: valuing parties needs "
                         "at least 2.")
    return labels, index


Parties = namedtuple("Parties", [
    "X", "y", "offsets", "X_val", "y_val", "classes", "train_parties",
    "n_all_parties", "party_of_sample", "n_unprotected", "scale", "target_scale",
    "rows"])
Parties.__doc__ = """The training parties and the validation set, ready for a valuator.

``X[offsets[j]:offsets[j + 1]]`` are the rows of training party ``j``
(``train_parties[j]`` among all ``n_all_parties``), ordered by content inside
a party; ``y`` are class indices for a classifier; ``scale`` is the
``(mean, std)`` the features were standardised with (validation statistics),
or None; ``target_scale`` the ``(mean, std)`` of regression targets, or None;
``rows`` the index in the input ``X`` of each row of ``X``.
"""


def call_on_private_data(function, describe, catch=(TypeError, ValueError)):
    """``function()``; an exception it raises is replaced by one that quotes
    no private value.

    The new exception (a TypeError for a TypeError, else a ValueError) says
    ``describe(error)`` and is raised outside the handler, so that it holds
    no reference to the original, whose message may quote the data.
    """
    try:
        return function()
    except catch as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        message = describe(error)
    raise kind(message)


# Where text or sparse rows come from, most often: a frame's text columns,
# and an encoder's sparse output in a Pipeline in front of the valuator.
TEXT_COLUMNS = (
    " If X has text columns, encode them in a Pipeline in front of the "
    "valuator, the encoder fitted on the public rows: "
    "FrozenEstimator(encoder.fit(X_val)) with the Pipeline's "
    "transform_input=['X_val'] (the user guide's \"Pipelines and "
    "preprocessing\").")
SPARSE_ROWS = (
    " An encoder in a Pipeline gives dense rows with "
    "OneHotEncoder(sparse_output=False) or ColumnTransformer(sparse_threshold=0).")


def _first_line_without_value(error):
    message = str(error).split("\n", 1)[0].rstrip(":")
    hint = ""
    if message.startswith(("could not convert", "invalid literal")):
        message = message.split(":", 1)[0]  # the rest is the value
        hint = TEXT_COLUMNS
    elif message.startswith("Sparse data was passed"):
        hint = SPARSE_ROWS
    return (f"{message} (in the training data X, y; the values of private data "
            f"are not shown).{OUTSIDE_DOMAIN}{hint}")


def validate_private_data(estimator, X, y, **check_params):
    """``validate_data`` on the private training rows, with errors that quote no value.

    scikit-learn's and numpy's messages can quote the data ("could not
    convert string to float: 'salary=183000'", a 1-D ``X`` printed whole):
    such an error keeps its first line, without the value. Subnormal
    features (and regression targets) become 0 (:func:`flush_subnormals`).
    """
    X, y = call_on_private_data(
        lambda: validate_data(estimator, X, y, **check_params),
        _first_line_without_value)
    if check_params.get("y_numeric"):
        y = flush_subnormals(y)
    return flush_subnormals(X), y


def flush_subnormals(array):
    """``array`` with every value of magnitude below the smallest normal float
    set to 0; other arrays (not floating point) unchanged.

    Arithmetic on subnormal numbers is slow on many processors, so a
    private row of them would show in the run time. Always a new array, so
    that the time spent here does not depend on whether there were any.
    """
    if not (isinstance(array, np.ndarray) and array.dtype.kind == "f"):
        return array
    flushed = np.empty_like(array)  # the same memory layout
    np.copyto(flushed, array)
    np.copyto(flushed, 0, where=np.abs(array) < np.finfo(array.dtype).tiny)
    return flushed


def check_classes_parameter(estimator, is_classifier, classes):
    """``classes`` only for a classifier; drop a ``classes_`` of an earlier fit."""
    if is_classifier:
        return
    if classes is not None:
        raise ValueError(f"classes={classes!r} applies to classifiers: the "
                         "estimator is a regressor.")
    if hasattr(estimator, "classes_"):
        del estimator.classes_  # from an earlier fit as a classifier


def standardize_by_validation(X, X_val, center=True):
    """``X`` and ``X_val`` standardised by the validation set's own statistics.

    Returns ``(X, X_val, (mean, std))``; a validation std of 0 counts as 1.
    With ``center=False`` the columns are only divided by their std (the mean
    returned is 0): a model without intercept keeps its own function class,
    where centring would add an offset it cannot fit.
    The statistics are public (the validation set's), the scaled private
    rows are not: a finite value that overflows (near the largest float,
    over a small std) becomes the largest finite float, silently, since a
    warning or an infinity here would tell the private rows without noise.
    Clipping then bounds the row's gradient (a gradient that is not finite
    is released as zero).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std))):
        columns = np.flatnonzero(~(np.isfinite(mean) & np.isfinite(std)))
        raise ValueError(
            f"The validation set's columns {columns.tolist()} overflow their mean "
            "or standard deviation: rescale the features (e.g. divide by a "
            "public constant), or pass standardize=False.")
    std = np.where(std > 0, std, 1.0)
    if not center:
        mean = np.zeros_like(mean)
    return _standardized(X, mean, std), _standardized(X_val, mean, std), (mean, std)


# Rows standardised per block: numpy's temporaries stay a block's size (in
# one go they made eight arrays of the whole X).
_STANDARDIZE_BLOCK_ROWS = 8192


def _standardized(X, mean, std):
    """``flush_subnormals(np.nan_to_num((X - mean) / std))``, per block of rows.

    NaN becomes 0, +-inf +-the largest float and magnitudes below the
    smallest normal 0, silently (a warning would tell the private rows
    without noise); selects, the same work whatever the values. numpy, not
    a kernel: nothing to compile at a first fit.
    """
    X, mean, std = _f64(X), _f64(mean), _f64(std)
    largest, tiny = np.finfo(np.float64).max, np.finfo(np.float64).tiny
    out = np.empty(X.shape)
    with np.errstate(all="ignore"):
        for start in range(0, X.shape[0], _STANDARDIZE_BLOCK_ROWS):
            rows = slice(start, start + _STANDARDIZE_BLOCK_ROWS)
            v = (X[rows] - mean) / std
            clamped = np.where(-largest > v, -largest, v)
            clamped = np.where(largest < clamped, largest, clamped)
            clamped = np.where(v != v, 0.0, clamped)
            out[rows] = np.where(np.abs(clamped) < tiny, 0.0, clamped)
    return out


def standardize_targets(y, y_val, center=True):
    """Regression targets standardised by the validation targets' mean and std.

    Returns ``(y, y_val, (mean, std))``, public statistics as for the
    features: the walk then starts at the validation mean (the intercept 0
    of the centred targets) and its learning rate and clip norm act on the
    same scale as for a classifier (the caller leaves a constant ``y_val``
    alone: centred, it would be all zeros). With
    ``center=False`` (no intercept) the targets are only scaled. A private
    target that overflows the scaling becomes the largest finite float
    silently, as in :func:`standardize_by_validation`.
    """
    mean = float(np.mean(y_val)) if center else 0.0
    std = float(np.std(y_val))
    if not (np.isfinite(mean) and np.isfinite(std)):
        raise ValueError("y_val overflows its mean or standard deviation: rescale "
                         "the targets by a public constant, or pass "
                         "standardize=False.")
    std = std if std > 0 else 1.0
    with np.errstate(over="ignore"):
        return (np.nan_to_num((y - mean) / std), np.nan_to_num((y_val - mean) / std),
                (mean, std))


def _transform_failed(error):
    return (f"A transformer of the wrapped Pipeline failed on the private rows "
            f"({type(error).__name__}); its message is not shown, since it may "
            "quote private values. The transformers are fitted on X_val only: "
            "check that they accept every value the training features can take "
            "(e.g. OneHotEncoder(handle_unknown='ignore')).")


def _dense(X):
    return X.toarray() if sp.issparse(X) else X


def apply_public_preprocessor(estimator, preprocessor, X, y, X_val, y_val):
    """The transformers fitted on the validation set, and both sets transformed.

    Returns ``(preprocessor_, X, X_val, n_features_in, feature_names_in)``,
    the last two of the raw ``X``.

    The steps of a wrapped Pipeline before its model are fitted on the public
    validation set alone, then applied to both sets: the private rows are
    only transformed, never fitted on (a scaler fitted on the private ``X``
    is a non-private release). Sets ``n_features_in_`` (and
    ``feature_names_in_``) of ``estimator`` from the raw ``X``; an error of a
    transformer on the private rows quotes none of them.
    """
    if X_val is None:
        raise ValueError(
            "A Pipeline's transformers are fitted on the public validation set: "
            "pass X_val and y_val to fit (held-out training rows cannot be used, "
            "since the split happens after the transform).")
    validate_data(estimator, X, skip_check_array=True)
    raw_names = getattr(estimator, "feature_names_in_", None)
    fitted = clone(preprocessor).fit(X_val, y_val)
    X = call_on_private_data(lambda: _dense(fitted.transform(X)), _transform_failed,
                             catch=Exception)
    return (fitted, X, _dense(fitted.transform(X_val)), estimator.n_features_in_,
            raw_names)


def prepare_parties(estimator, X, y, X_val, y_val, groups, *, is_classifier,
                    classes, validation_fraction, split_seed, standardize,
                    center=True, scale_targets=False, preprocessor=None,
                    warn_unscaled=True, party_unit="group", stacklevel=2):
    """Validate the inputs and lay out the parties and the validation set.

    With a ``preprocessor`` (the transformers of a wrapped Pipeline), it is
    first fitted on the validation set and applied to both sets
    (:func:`apply_public_preprocessor`); ``estimator.preprocessor_`` holds
    the fitted copy. See :func:`_prepare_parties` for the rest.
    """
    if preprocessor is None:
        if hasattr(estimator, "preprocessor_"):  # from an earlier fit
            del estimator.preprocessor_
        return _prepare_parties(
            estimator, X, y, X_val, y_val, groups, is_classifier=is_classifier,
            classes=classes, validation_fraction=validation_fraction,
            split_seed=split_seed, standardize=standardize, center=center,
            scale_targets=scale_targets, warn_unscaled=warn_unscaled,
            party_unit=party_unit, stacklevel=stacklevel + 1)
    estimator.preprocessor_, X, X_val, n_features, names = apply_public_preprocessor(
        estimator, preprocessor, X, y, X_val, y_val)
    parties = _prepare_parties(
        estimator, X, y, X_val, y_val, groups, is_classifier=is_classifier,
        classes=classes, validation_fraction=validation_fraction,
        split_seed=split_seed, standardize=standardize, center=center,
        scale_targets=scale_targets, warn_unscaled=warn_unscaled,
        party_unit=party_unit, stacklevel=stacklevel + 1)
    estimator.n_features_in_ = n_features  # of the raw X, not the transformed
    if names is not None:
        estimator.feature_names_in_ = names
    return parties


def _prepare_parties(estimator, X, y, X_val, y_val, groups, *, is_classifier,
                     classes, validation_fraction, split_seed, standardize,
                     center=True, scale_targets=False, warn_unscaled=True,
                     party_unit="group", stacklevel=2):
    """Validate the inputs and lay out the parties and the validation set.

    Public choices come from public data only: the class set from ``y_val``
    (or ``classes``), the held-out parties (without ``X_val``) from the
    seed alone, and the standardisation from the validation set's own
    statistics. Sets ``n_features_in_`` (and ``feature_names_in_``) on
    ``estimator``. Warns (:mod:`skdpval.exceptions`) when the validation
    set comes from ``X``, looks unscaled and will not be scaled, or has
    labels that look like a regression target; ``stacklevel`` counts from
    the caller of this function, as the checks do. ``center=False`` (a
    model without intercept) scales without centring; ``scale_targets``
    standardises regression targets too (:func:`standardize_targets`);
    ``warn_unscaled=False`` skips the check of the validation set's scale
    (for features used as given on purpose); ``party_unit`` names a group
    in the warnings ("group", "client"). The caller has checked the
    ``classes`` parameter (:func:`check_classes_parameter`, before any data
    is read).
    """
    if (X_val is None) != (y_val is None):
        raise ValueError("X_val and y_val must be given together.")
    X, y = validate_private_data(estimator, X, y, dtype=np.float64, order="C",
                                 y_numeric=not is_classifier, ensure_min_samples=2)
    if groups is None:
        party_of_sample = np.arange(len(X))
        for name in ("groups_", "sample_values_"):  # from an earlier fit
            if hasattr(estimator, name):
                delattr(estimator, name)
    else:
        estimator.groups_, party_of_sample = check_groups(groups, len(X))
    n_all_parties = party_of_sample.max() + 1
    if X_val is None:
        train_parties, val_parties = hold_out_parties(
            n_all_parties, validation_fraction, split_seed)
        val_rows = np.flatnonzero(np.isin(party_of_sample, val_parties))
        X_val, y_val = X[val_rows], y[val_rows]
        n_unprotected = len(val_rows)
        warn_validation_from_training(
            n_unprotected, len(X), validation_fraction=validation_fraction,
            unit="sample" if groups is None else party_unit, stacklevel=stacklevel + 1)
    else:
        X_val = check_validation_features(estimator, X_val, stacklevel + 1,
                                          dtype=np.float64, order="C")
        train_parties = np.arange(n_all_parties)
        n_unprotected = 0
    y, y_val, classes = check_public_targets(
        y, X_val, y_val, is_classifier=is_classifier, classes=classes,
        standardize=standardize, warn_unscaled=warn_unscaled,
        stacklevel=stacklevel + 1)
    if len(train_parties) < 2:
        raise ValueError(f"Data valuation needs at least 2 training parties, got "
                         f"{len(train_parties)}.")
    scale = target_scale = None
    if standardize:
        X, X_val, scale = standardize_by_validation(X, X_val, center=center)
        if scale_targets and np.ptp(y_val) > 0:  # a constant y_val has no scale
            y, y_val, target_scale = standardize_targets(y, y_val, center=center)

    n_parties = len(train_parties)
    position = np.full(n_all_parties, -1)
    position[train_parties] = np.arange(n_parties)
    train_rows = np.flatnonzero(position[party_of_sample] >= 0)
    if groups is not None:
        # Rows by party, and inside a party by content: a group's gradient
        # then sums its rows in one order whatever order they came in.
        # (Without groups a party is one row, and the rows are in order.)
        train_rows = train_rows[np.lexsort((y[train_rows], *X[train_rows].T[::-1],
                                            position[party_of_sample[train_rows]]))]
    offsets = np.r_[0, np.cumsum(np.bincount(position[party_of_sample[train_rows]],
                                             minlength=n_parties))]
    return Parties(np.ascontiguousarray(X[train_rows]), y[train_rows], offsets,
                   np.ascontiguousarray(X_val), y_val, classes, train_parties,
                   n_all_parties, party_of_sample, n_unprotected, scale,
                   target_scale, train_rows)


def split_pipeline(estimator):
    """``(preprocessor, model)``: a Pipeline's transformers and its last step.

    ``preprocessor`` is None for a plain estimator; a nested Pipeline as the
    last step is split too. The transformers are fitted on the public
    validation set only (:func:`skdpval.families._parties.apply_public_preprocessor`), so
    a step that must see the private rows to do its work is refused: a
    sampler (``fit_resample``: it would drop or add private rows) or a step
    without ``transform``.
    """
    if not isinstance(estimator, Pipeline):
        return None, estimator
    steps = []
    while isinstance(estimator, Pipeline):
        steps.extend(estimator.steps[:-1])
        estimator = estimator.steps[-1][1]
    for name, step in steps:
        if step is None or step == "passthrough":
            continue
        if hasattr(step, "fit_resample"):
            raise TypeError(
                f"Pipeline step {name!r} ({type(step).__name__}) resamples the "
                "training rows, which a valuator cannot do on private data: put "
                "the valuator (or DPValueFilter) in the pipeline instead.")
        if not hasattr(step, "transform"):
            raise TypeError(
                f"Pipeline step {name!r} ({type(step).__name__}) has no "
                "transform: every step but the last must be a transformer.")
    if estimator is None or estimator == "passthrough":
        raise TypeError("The wrapped Pipeline must end with a model, not "
                        f"{estimator!r}.")
    steps = [(name, step) for name, step in steps
             if not (step is None or step == "passthrough")]
    return (Pipeline(steps) if steps else None), estimator
