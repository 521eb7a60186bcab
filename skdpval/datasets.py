"""Small noisy-label data sets built from scikit-learn's bundled data."""

from numbers import Integral, Real

import numpy as np
from sklearn import datasets as sk_datasets
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch, check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import column_or_1d


def _digits_3_vs_8():
    digits = sk_datasets.load_digits()
    keep = np.isin(digits.target, (3, 8))
    return Bunch(data=digits.data[keep], target=(digits.target[keep] == 8).astype(int),
                 feature_names=np.asarray(digits.feature_names))


def _classification():
    X, y = sk_datasets.make_classification(n_samples=600, n_features=20,
                                           n_informative=5, random_state=0)
    return Bunch(data=X, target=y,
                 feature_names=np.array([f"x{i}" for i in range(20)]))


_LOADERS = {
    "breast_cancer": sk_datasets.load_breast_cancer,
    "diabetes": sk_datasets.load_diabetes,
    "digits_3_vs_8": _digits_3_vs_8,
    "classification": _classification,
    "wine": sk_datasets.load_wine,
    "iris": sk_datasets.load_iris,
}


def flip_labels(y, fraction, random_state=None, *, independent=False):
    """Change the label of a random ``fraction`` of the samples.

    Each chosen sample gets another label drawn uniformly from the other
    classes present in ``y`` (for two classes: the other class).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (binary or multiclass, no NaN), at least two distinct
        ones.
    fraction : float in [0, 1]
        Fraction of samples to flip (rounded to the nearest count), or with
        ``independent=True`` the probability that each label is flipped.
    random_state : int, RandomState instance or None, default=None
        Chooses the samples and their new labels.
    independent : bool, default=False
        Flip each label independently with probability ``fraction``: the
        setting of :func:`skdpval.metrics.detection_auc_limit`. (With an
        exact count the flips are not independent, and a mechanism could in
        principle do a little better.)

    Returns
    -------
    y_noisy : ndarray of shape (n_samples,)
        The labels after flipping.
    is_flipped : ndarray of bool of shape (n_samples,)
        True where the label was changed.

    Examples
    --------
    >>> from skdpval.datasets import flip_labels
    >>> y_noisy, is_flipped = flip_labels([0, 1, 0, 1, 0, 1, 0, 1, 0, 1], 0.3,
    ...                                   random_state=0)
    >>> int(is_flipped.sum())
    3
    """
    y = column_or_1d(y)
    if not isinstance(fraction, Real) or not 0 <= fraction <= 1:
        raise ValueError(f"fraction must be a real number in [0, 1], got {fraction!r}.")
    if not isinstance(independent, (bool, np.bool_)):
        raise ValueError(f"independent must be a bool, got {independent!r}.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y must not contain NaN or infinite labels.")
    target_type = type_of_target(y, input_name="y")
    if target_type not in ("binary", "multiclass"):
        raise ValueError("flip_labels needs class labels: y must be a binary or "
                         f"multiclass target, got a {target_type!r} one.")
    classes = np.unique(y)
    if len(classes) < 2:
        raise ValueError("flip_labels needs y with at least two classes.")
    rs = check_random_state(random_state)
    if independent:
        chosen = np.flatnonzero(rs.random_sample(len(y)) < fraction)
    else:
        chosen = rs.choice(len(y), size=int(round(fraction * len(y))),
                           replace=False)
    n_flip = len(chosen)
    y_noisy = y.copy()
    index = np.searchsorted(classes, y[chosen])
    shift = rs.randint(1, len(classes), size=n_flip)
    y_noisy[chosen] = classes[(index + shift) % len(classes)]
    is_flipped = np.zeros(len(y), dtype=bool)
    is_flipped[chosen] = True
    return y_noisy, is_flipped


def load_noisy_classification(name="breast_cancer", *, n_train=None,
                              flip_fraction=0.3, independent_flips=False,
                              validation_size=0.2, test_size=0.2,
                              scale=True, random_state=None):
    """A bundled classification data set, split, scaled, with flipped labels.

    The samples are split (stratified) into train / validation / test; the
    features are standardised with the validation split's statistics (public:
    a scaler fitted on the private training split would itself leak); a
    ``flip_fraction`` of the training labels is flipped. Validation and test
    labels stay clean.

    Parameters
    ----------
    name : {"breast_cancer", "diabetes", "digits_3_vs_8", "classification", \
"wine", "iris"}, default="breast_cancer"
        The data set. ``"diabetes"`` is the regression target binarised at
        its median; ``"digits_3_vs_8"`` the digits 3 (class 0) and 8 (class
        1); ``"classification"`` is ``make_classification(600, 20,
        n_informative=5, random_state=0)``.
    n_train : int >= 2 or None, default=None
        Training samples to keep (at most what the split leaves; they must
        hold at least two classes); ``None`` keeps all.
    flip_fraction : float in [0, 1], default=0.3
        Fraction of training labels to flip.
    independent_flips : bool, default=False
        Flip each training label independently with probability
        ``flip_fraction`` (see :func:`flip_labels`).
    validation_size : float in (0, 1), default=0.2
        Fraction of all samples for the validation split;
        ``validation_size + test_size`` must be below 1.
    test_size : float in [0, 1), default=0.2
        Fraction of all samples for the test split; 0 for none (the returned
        ``X_test`` and ``y_test`` are then empty). Each split must get at
        least one sample of every class.
    scale : bool, default=True
        Standardise the features with the validation split's statistics;
        False keeps them raw.
    random_state : int, RandomState instance or None, default=None
        Seeds the split and the flips.

    Returns
    -------
    data : Bunch
        ``X_train, y_train`` (noisy), ``y_train_clean``, ``is_noisy``,
        ``X_val, y_val, X_test, y_test`` and ``feature_names``.

    Examples
    --------
    >>> from skdpval.datasets import load_noisy_classification
    >>> data = load_noisy_classification("breast_cancer", random_state=0)
    >>> data.X_train.shape, float(round(data.is_noisy.mean(), 2))
    ((341, 30), 0.3)
    """
    if name not in _LOADERS:
        raise ValueError(f"name must be one of {sorted(_LOADERS)}, got {name!r}.")
    if n_train is not None and (not isinstance(n_train, Integral) or n_train < 2
                                or isinstance(n_train, (bool, np.bool_))):
        raise ValueError(f"n_train must be an int >= 2 or None, got {n_train!r}.")
    if not isinstance(flip_fraction, Real) or not 0 <= flip_fraction <= 1:
        raise ValueError(f"flip_fraction must be a real number in [0, 1], "
                         f"got {flip_fraction!r}.")
    for arg, flag in (("independent_flips", independent_flips), ("scale", scale)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"{arg} must be a bool, got {flag!r}.")
    if not isinstance(validation_size, Real) or not 0 < validation_size < 1:
        raise ValueError(f"validation_size must be a real number in (0, 1), "
                         f"got {validation_size!r}.")
    if not isinstance(test_size, Real) or not 0 <= test_size < 1:
        raise ValueError(f"test_size must be a real number in [0, 1), "
                         f"got {test_size!r}.")
    if not validation_size + test_size < 1:
        raise ValueError(f"validation_size + test_size must be below 1 (some samples "
                         f"must be left to train on), got {validation_size!r} + "
                         f"{test_size!r}.")
    raw = _LOADERS[name]()
    X, y = raw.data, raw.target
    if name == "diabetes":
        y = (y > np.median(y)).astype(int)
    rs = check_random_state(random_state)
    split_seed = rs.randint(2**31 - 1)
    try:
        if test_size > 0:
            X_rest, X_test, y_rest, y_test = train_test_split(
                X, y, test_size=test_size, stratify=y, random_state=split_seed)
        else:
            X_rest, y_rest, X_test, y_test = X, y, X[:0], y[:0]
        X_train, X_val, y_train, y_val = train_test_split(
            X_rest, y_rest, test_size=validation_size / (1 - test_size),
            stratify=y_rest, random_state=rs.randint(2**31 - 1))
    except ValueError as exc:
        raise ValueError(
            f"validation_size={validation_size!r} and test_size={test_size!r} do not "
            f"split {name!r} ({len(y)} samples, {len(np.unique(y))} classes) into "
            f"stratified parts with every class in each: {exc}") from exc
    if n_train is not None and n_train < len(X_train):
        X_train, y_train = X_train[:n_train], y_train[:n_train]
        if len(np.unique(y_train)) < 2:
            raise ValueError(f"n_train={n_train} keeps a single class of {name!r}: "
                             "increase n_train.")
    scaler = StandardScaler(with_mean=scale, with_std=scale).fit(X_val)
    y_noisy, is_noisy = flip_labels(y_train, flip_fraction, random_state=rs,
                                    independent=independent_flips)
    return Bunch(X_train=scaler.transform(X_train), y_train=y_noisy,
                 y_train_clean=y_train, is_noisy=is_noisy,
                 X_val=scaler.transform(X_val), y_val=y_val,
                 X_test=scaler.transform(X_test) if len(X_test) else X_test,
                 y_test=y_test,
                 feature_names=np.asarray(raw.feature_names))


_REGRESSION_LOADERS = {
    "diabetes": lambda: sk_datasets.load_diabetes(return_X_y=True),
    "regression": lambda: sk_datasets.make_regression(
        600, 20, n_informative=5, noise=10.0, random_state=0),
}


def load_noisy_regression(name="diabetes", *, corrupt_fraction=0.3,
                          validation_size=0.25, random_state=None):
    """A regression data set, split, with a fraction of training targets corrupted.

    Each training target is replaced, independently with probability
    ``corrupt_fraction``, by a uniform draw over the range of all the data
    set's targets (a corruption can land near the truth, so corrupted targets
    are harder to find than flipped labels). Features stay raw (the
    estimators standardise with validation statistics); validation targets
    stay clean.

    Parameters
    ----------
    name : {"diabetes", "regression"}, default="diabetes"
        ``"regression"`` is ``make_regression(600, 20, n_informative=5,
        noise=10, random_state=0)``.
    corrupt_fraction : float in [0, 1], default=0.3
        Probability that a training target is replaced.
    validation_size : float in (0, 1), default=0.25
        Fraction of the samples for the validation split.
    random_state : int, RandomState instance or None, default=None
        Seeds the split and the corruption.

    Returns
    -------
    data : Bunch
        ``X_train, y_train`` (corrupted), ``y_train_clean``, ``is_noisy``,
        ``X_val, y_val``.

    Examples
    --------
    >>> from skdpval.datasets import load_noisy_regression
    >>> data = load_noisy_regression("diabetes", random_state=0)
    >>> data.X_train.shape
    (331, 10)
    """
    if name not in _REGRESSION_LOADERS:
        raise ValueError(f"name must be one of {sorted(_REGRESSION_LOADERS)}, "
                         f"got {name!r}.")
    if not isinstance(corrupt_fraction, Real) or not 0 <= corrupt_fraction <= 1:
        raise ValueError(f"corrupt_fraction must be a real number in [0, 1], "
                         f"got {corrupt_fraction!r}.")
    if not isinstance(validation_size, Real) or not 0 < validation_size < 1:
        raise ValueError(f"validation_size must be a real number in (0, 1), "
                         f"got {validation_size!r}.")
    X, y = _REGRESSION_LOADERS[name]()
    rs = check_random_state(random_state)
    X_train, X_val, y_train, y_val = train_test_split(
        X, y, test_size=validation_size, random_state=rs.randint(2**31 - 1))
    is_noisy = rs.random_sample(len(y_train)) < corrupt_fraction
    y_noisy = y_train.copy()
    y_noisy[is_noisy] = rs.uniform(y.min(), y.max(), size=int(is_noisy.sum()))
    return Bunch(X_train=X_train, y_train=y_noisy, y_train_clean=y_train,
                 is_noisy=is_noisy, X_val=X_val, y_val=y_val)


def make_2dplanes(n_samples=2000, *, noise=1.0, random_state=None):
    """Generate the 2dplanes classification problem (Breiman et al. 1984).

    Ten discrete features: ``x1`` in {-1, 1}, ``x2 .. x10`` in {-1, 0, 1},
    each uniform and independent. The regression target is ``3 + 3 x2 + 2
    x3 + x4`` where ``x1 = 1`` and ``-3 + 3 x5 + 2 x6 + x7`` elsewhere,
    plus Gaussian noise of std ``noise``; the class is 1 where it exceeds
    its median over the generated samples, else 0 (two balanced classes).
    ``x8 .. x10`` carry no signal. The setting of DP-TKNN-Shapley's
    noisy-label benchmark (Wang et al., NeurIPS 2023), as its definition
    reads (OpenML's 2dplanes is the regression target).

    Parameters
    ----------
    n_samples : int >= 2, default=2000
        Number of samples.
    noise : float >= 0, default=1.0
        Standard deviation of the Gaussian noise added to the target.
    random_state : int, RandomState instance or None, default=None
        Seeds the features and the noise.

    Returns
    -------
    X : ndarray of shape (n_samples, 10)
        The features, as floats.
    y : ndarray of shape (n_samples,)
        The class labels, 0 or 1.

    References
    ----------
    .. [1] Breiman, Friedman, Olshen and Stone. "Classification and
       Regression Trees." Wadsworth, 1984 (Section 8.6).
    .. [2] Wang, Yang, Li, Bhaskar and Mittal. "Threshold KNN-Shapley: A
       Linear-Time and Privacy-Friendly Approach to Data Valuation."
       NeurIPS 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpval.datasets import make_2dplanes
    >>> X, y = make_2dplanes(200, random_state=0)
    >>> X.shape, np.unique(X[:, 0]).tolist(), np.unique(X[:, 1]).tolist()
    ((200, 10), [-1.0, 1.0], [-1.0, 0.0, 1.0])
    >>> int(y.sum())
    100
    """
    if not (isinstance(n_samples, Integral) and n_samples >= 2):
        raise ValueError(f"n_samples must be an integer >= 2, got {n_samples!r}.")
    if not (isinstance(noise, Real) and np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite float >= 0, got {noise!r}.")
    rng = check_random_state(random_state)
    X = np.empty((n_samples, 10))
    X[:, 0] = rng.choice([-1.0, 1.0], size=n_samples)
    X[:, 1:] = rng.choice([-1.0, 0.0, 1.0], size=(n_samples, 9))
    target = np.where(X[:, 0] == 1,
                      3 + 3 * X[:, 1] + 2 * X[:, 2] + X[:, 3],
                      -3 + 3 * X[:, 4] + 2 * X[:, 5] + X[:, 6])
    target = target + noise * rng.standard_normal(n_samples)
    return X, (target > np.median(target)).astype(np.int64)
