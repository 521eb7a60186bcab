"""Warnings that name their remedy, the checks that raise them, and errors
a user may catch.

Every warning is a :class:`UserWarning` subclass, so that it can be
filtered on its own (``warnings.filterwarnings("ignore",
category=UnscaledFeaturesWarning)``). The checks read only public inputs:
the validation set, the class set, the parameters. A warning that read the
private training data would itself be a release that is not private.

Each check takes ``stacklevel``: which frame its warning points at, counted
from the code that calls the check (1). The default, 2, suits a call from
inside ``fit``: it points at the user's ``fit`` call (3 under
``@_fit_context``, which adds a frame).
"""

import warnings

import numpy as np


__all__ = [
    "DefaultEpsilonWarning",
    "DirectScatterError",
    "FirstCompileWarning",
    "ManyClassesWarning",
    "NoiseSeedWarning",
    "SkdpvalWarning",
    "UnprotectedValidationWarning",
    "UnscaledFeaturesWarning",
    "warn_if_many_classes",
    "warn_if_unscaled",
    "warn_validation_from_training",
]

# A validation column is "unscaled" when its std leaves [1/10, 10] or its
# mean lies more than 10 from 0: the walk starts at theta = 0 with one
# learning rate and one clip norm for every feature, so such a column either
# dominates every clipped gradient or is never learnt.
SCALE_TOLERANCE = 10.0
# Above this many classes a multinomial walk costs many times a binary one
# (13x at 10 classes: c margins and exponentials per validation row), and
# the target is more often a regression target than class labels.
MAX_CLASSES = 50


class DirectScatterError(RuntimeError):
    """A Dask client cannot reach a worker directly.

    The walk sends each Dask worker the fit's secret noise key straight from
    the client, never through the scheduler (Dask's route when the client
    cannot reach the workers): run the client where it reaches the
    workers' addresses, or fit without a distributed Client.
    """


class SkdpvalWarning(UserWarning):
    """Base class of the warnings of skdpval."""


class UnprotectedValidationWarning(SkdpvalWarning):
    """The validation set was taken from the training data ``X``.

    Those samples are used without noise: they are not protected and get no
    value. Pass a public ``X_val`` and ``y_val`` to ``fit`` instead.
    """


class UnscaledFeaturesWarning(SkdpvalWarning):
    """The validation features look unscaled (column std far from 1).

    The walk uses one learning rate and one clip norm for all features.
    Standardise with the validation set's statistics (the valuator's
    ``standardize=True``) or with statistics of other public data.
    """


class ManyClassesWarning(SkdpvalWarning):
    """A classifier's target looks like a regression target.

    More than ``MAX_CLASSES`` classes, or float labels with more than two
    values. Use a regressor, or integer class labels.
    """


# The first fit of DPDataValuator() at its defaults (300 parties, 1000
# permutations) in a new process with an empty numba cache, its compilation
# included, on the project's shared 2-core machine with nothing else running
# (1-minute load 0.9-1.1: the benchmark's own process): the median of the
# last run of benchmarks/cold_fit.py in benchmarks/results/cold_fit.jsonl.
# The one timing figure in the package's code: update it with that file.
FIRST_FIT_SECONDS = 4.7


class FirstCompileWarning(SkdpvalWarning):
    """The first fit of a model family compiles its numba kernels.

    Said once, when a walk's kernel has no on-disk cache yet and will
    compile: the fit then takes longer, once (the default valuator's first
    fit: ``FIRST_FIT_SECONDS``, from ``benchmarks/cold_fit.py``); later
    fits, in any process, load the compiled code from the cache next to the
    package.
    """


def warn_if_first_compile(kernel, what, seconds=None, *, stacklevel=2):
    """Warn that ``kernel`` (a numba dispatcher with ``cache=True``) is about
    to compile for the first time: it has no compiled version in this
    process and no index file in its on-disk cache. Returns whether it warned.

    ``what`` names the family and path; ``seconds``, when given, the first
    fit's measured time (``FIRST_FIT_SECONDS``, the default walk's only).
    """
    import os

    if kernel.signatures:
        return False
    try:
        index = kernel._cache._cache_file._index_path
    except AttributeError:  # another numba: say nothing rather than guess
        return False
    if os.path.exists(index):
        return False
    took = ("" if seconds is None else
            f"the first fit takes about {seconds:g} s on a quiet 2-core machine, ")
    warnings.warn(
        f"First use: compiling the numba kernels of {what} ({took}once; later "
        "fits, in any process, load them from the on-disk cache).",
        FirstCompileWarning, stacklevel=stacklevel + 1)
    return True


class NoiseSeedWarning(SkdpvalWarning):
    """A fit drew its noise from a fixed ``noise_seed``: it is not private.

    The seed is in ``repr``, ``get_params()`` and every pickle, and a small
    seed can be found from the output by brute force; with it the noise can
    be subtracted. Leave ``noise_seed=None`` (fresh secret noise) for private
    output; seeds are for tests and papers.
    """


class DefaultEpsilonWarning(SkdpvalWarning):
    """The default ``epsilon`` is in use, and it caps what values can reveal.

    It fires only when ``epsilon`` was left at ``"default"`` (which means
    1.0): ``epsilon=1.0`` written out is a choice and does not warn. At the
    default budget no method can find flipped labels with an expected ROC
    AUC above ``Phi(sqrt(2) mu)`` (about 0.66 at epsilon = 1, delta = 5e-5).
    Raised once per process.
    """


def warn_validation_from_training(n_unprotected, n_samples, *,
                                  validation_fraction=None, unit="sample",
                                  stacklevel=2):
    """Warn that ``n_unprotected`` of ``n_samples`` rows of X became the validation set.

    Call it when ``fit`` got no ``X_val``. ``unit`` is the privacy unit
    (``"sample"`` or ``"group"``), for the message.

    Parameters
    ----------
    n_unprotected : int
        Number of rows of ``X`` held out as the validation set.
    n_samples : int
        Number of rows of ``X``.
    validation_fraction : float or None, default=None
        The fraction that was held out, quoted in the message.
    unit : str, default="sample"
        The privacy unit.
    stacklevel : int, default=2
        Which frame the warning points at (see the module docstring).

    Examples
    --------
    >>> import warnings
    >>> from skdpval.exceptions import warn_validation_from_training
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_validation_from_training(114, 569, validation_fraction=0.2)
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    fit got no X_val: 114 of the 569 samples of X (validation_fraction=0.2) ...
    """
    fraction = ("" if validation_fraction is None
                else f" (validation_fraction={validation_fraction:g})")
    warnings.warn(
        f"fit got no X_val: {n_unprotected} of the {n_samples} samples of X"
        f"{fraction} were held out as the validation set. They are used "
        f"without noise, are NOT protected by the privacy guarantee, and get "
        f"no value (NaN). Pass public validation data with fit(X, y, "
        f"X_val=..., y_val=...) to protect every {unit}.",
        UnprotectedValidationWarning, stacklevel=stacklevel + 1)


def warn_if_unscaled(X_val, *, standardize=False, stacklevel=2):
    """Warn when validation columns look unscaled and nothing will scale them.

    A column (constant ones excepted) is off-scale when its std lies outside
    ``[1/SCALE_TOLERANCE, SCALE_TOLERANCE]`` or its mean is more than
    ``SCALE_TOLERANCE`` away from 0. Only ``X_val`` is read: it is public.

    Parameters
    ----------
    X_val : ndarray of shape (n_val, n_features)
        The validation features, as the walk would see them.
    standardize : bool, default=False
        Whether the estimator standardises the features itself; then
        nothing is checked.
    stacklevel : int, default=2
        Which frame the warning points at (see the module docstring).

    Returns
    -------
    off_scale : ndarray of shape (n_features,) of bool
        The columns found off-scale (all False when ``standardize``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpval.exceptions import warn_if_unscaled
    >>> rng = np.random.default_rng(0)
    >>> warn_if_unscaled(rng.normal(size=(50, 3))).any()
    np.False_
    """
    X_val = np.asarray(X_val, dtype=np.float64)
    off_scale = np.zeros(X_val.shape[1], dtype=bool)
    if standardize or len(X_val) < 2:
        return off_scale
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    varies = std > 0
    off_scale = varies & ((std > SCALE_TOLERANCE) | (std < 1 / SCALE_TOLERANCE)
                          | (np.abs(mean) > SCALE_TOLERANCE))
    if off_scale.any():
        worst = np.flatnonzero(off_scale)[np.argmax(np.abs(np.log(std[off_scale]))
                                                    + np.abs(mean[off_scale]))]
        warnings.warn(
            f"The features look unscaled: {off_scale.sum()} of {X_val.shape[1]} "
            f"validation columns have a std outside [{1 / SCALE_TOLERANCE:g}, "
            f"{SCALE_TOLERANCE:g}] or a mean beyond +-{SCALE_TOLERANCE:g} (e.g. "
            f"column {worst}: mean {mean[worst]:.3g}, std {std[worst]:.3g}). "
            "The walk uses one learning rate and one clip norm for every "
            "feature, so its values can be worse than chance. Let the "
            "valuator standardise with the validation set's statistics "
            "(standardize=True), or scale X and X_val with statistics of "
            "public data: a StandardScaler fitted on the private X is itself "
            "a release that is not private.",
            UnscaledFeaturesWarning, stacklevel=stacklevel + 1)
    return off_scale


def warn_if_many_classes(y_val, classes, *, max_classes=MAX_CLASSES,
                         stacklevel=2):
    """Warn when a classifier's target looks like a regression target.

    It fires for more than ``max_classes`` classes, or for float labels with
    more than two classes. Only public inputs are read: ``classes`` (the
    class set, from ``y_val`` or the ``classes`` parameter) and ``y_val``.

    Parameters
    ----------
    y_val : array-like of shape (n_val,)
        The validation targets as given to ``fit``.
    classes : array-like of shape (n_classes,)
        The class set the classifier will use.
    max_classes : int, default=MAX_CLASSES
        More classes than this fire the warning.
    stacklevel : int, default=2
        Which frame the warning points at (see the module docstring).

    Returns
    -------
    fired : bool

    Examples
    --------
    >>> from skdpval.exceptions import warn_if_many_classes
    >>> warn_if_many_classes([0, 1, 1, 0], classes=[0, 1])
    False
    """
    n_classes = len(classes)
    float_labels = np.asarray(y_val).dtype.kind == "f" and n_classes > 2
    if n_classes <= max_classes and not float_labels:
        return False
    why = (f"{n_classes} classes (more than {max_classes})"
           if n_classes > max_classes else
           f"float labels with {n_classes} distinct values")
    warnings.warn(
        f"The classifier's target has {why}: it looks like a regression "
        f"target. A classifier's walk costs more with every class (13 times "
        "a binary one at 10 classes). For a numeric target use a regressor (e.g. "
        "DPDataValuator(Ridge()) or SGDRegressor()); if these are class "
        "labels, pass them as integers or strings, or merge rare classes.",
        ManyClassesWarning, stacklevel=stacklevel + 1)
    return True
