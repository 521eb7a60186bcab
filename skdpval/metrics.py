"""Measures of how well data values find bad data."""

import numpy as np
from scipy.stats import norm
from sklearn.base import clone, is_classifier
from sklearn.dummy import DummyClassifier
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_X_y, column_or_1d

from ._accounting import gdp_mu, noisy_label_auc_limit


def detection_auc_limit(epsilon, delta):
    """The best ROC AUC any (epsilon, delta)-DP mechanism reaches on flipped labels.

    Flipping one training label is a replace-one change: the releases of
    ``(x, y)`` and ``(x, y')`` differ by at most twice the sensitivity, so
    releases that are ``mu``-GDP per party (zero-out adjacency) are
    ``2 mu``-GDP for "is this label flipped". Every test's ROC curve then lies
    below ``Phi(Phi^-1(FPR) + 2 mu)``, and with labels flipped independently
    no method, private values or anything else computed from the releases,
    finds flipped labels with ROC AUC above ``Phi(sqrt(2) mu)``. (When the
    number of flips is known exactly the provable bound is ``Phi(2 mu)``.)
    ``mu`` is the GDP parameter that ``(epsilon, delta)`` allows. The limit
    fraction of a method is ``(AUC - 0.5) / (limit - 0.5)``.

    Parameters
    ----------
    epsilon : float > 0
        Per-party budget (``np.inf``: no privacy, limit 1).
    delta : float in (0, 1)

    Returns
    -------
    auc : float

    Examples
    --------
    >>> from skdpval.metrics import detection_auc_limit
    >>> [round(detection_auc_limit(eps, 5e-5), 3) for eps in (1, 3, 10)]
    [0.663, 0.866, 0.999]
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}.")
    if np.isinf(epsilon):
        return 1.0
    return noisy_label_auc_limit(gdp_mu(epsilon, delta))


def noisy_label_auc(values, is_noisy):
    """ROC AUC of a low value predicting a noisy (flipped) label.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        Data values; lower means more likely noisy. Must be finite: select
        the valued samples first (held-out validation samples have NaN).
    is_noisy : array-like of bool of shape (n_samples,)
        True for the samples whose label is noisy.

    Returns
    -------
    auc : float
        1.0 when every noisy sample is valued below every clean one, 0.5 for
        values unrelated to the noise.

    Examples
    --------
    >>> from skdpval.metrics import noisy_label_auc
    >>> noisy_label_auc([0.3, -0.2, 0.1, -0.5], [False, True, False, True])
    1.0
    """
    values = column_or_1d(values).astype(np.float64)
    is_noisy = column_or_1d(is_noisy).astype(bool)
    if len(values) != len(is_noisy):
        raise ValueError(f"values and is_noisy have different lengths "
                         f"({len(values)} and {len(is_noisy)}).")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite: drop held-out (NaN) samples "
                         "before scoring.")
    return float(roc_auc_score(is_noisy, -values))


def removal_curve(X, y, X_test, y_test, values, estimator, fractions, *,
                  order="high", random_state=None):
    """Test score after removing a fraction of the training data and refitting.

    Parameters
    ----------
    X, y : array-like of shape (n_samples, n_features) and (n_samples,)
        Training data, one value per sample.
    X_test, y_test : array-like
        Held-out data the refitted model is scored on.
    values : array-like of shape (n_samples,)
        Finite data values.
    estimator : estimator object
        Cloned and refitted on what is left; scored with its ``score``.
    fractions : array-like of float in [0, 1)
        Fractions of the training samples to remove.
    order : {"high", "low", "random"}, default="high"
        Remove the highest values first (good values make the score drop
        fast), the lowest first, or a random subset.
    random_state : int, RandomState instance or None, default=None
        The random subset for ``order="random"``.

    Returns
    -------
    scores : ndarray of shape (len(fractions),)
        Test score after each removal. A classifier left with a single class
        scores as the constant predictor of that class.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skdpval.metrics import removal_curve
    >>> X = np.array([[0.], [1.], [2.], [3.], [-1.], [4.]])
    >>> y = np.array([0, 0, 1, 1, 1, 0])
    >>> removal_curve(X, y, X, y, values=[1, 1, 1, 1, -1, -1],
    ...               estimator=LogisticRegression(), fractions=[0, 1 / 3],
    ...               order="low")
    array([0.33333333, 0.66666667])
    """

    X, y = check_X_y(X, y, dtype=None)
    values = column_or_1d(values).astype(np.float64)
    fractions = column_or_1d(np.asarray(fractions, dtype=np.float64))
    if len(values) != len(y):
        raise ValueError(f"values has {len(values)} entries for {len(y)} samples.")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite: drop held-out (NaN) samples first.")
    if np.any((fractions < 0) | (fractions >= 1)):
        raise ValueError("fractions must lie in [0, 1).")
    if order == "high":
        ranking = np.argsort(-values, kind="stable")
    elif order == "low":
        ranking = np.argsort(values, kind="stable")
    elif order == "random":
        ranking = check_random_state(random_state).permutation(len(values))
    else:
        raise ValueError(f"order must be 'high', 'low' or 'random', got {order!r}.")
    X_test = check_array(X_test, dtype=None)
    scores = np.empty(len(fractions))
    for i, fraction in enumerate(fractions):
        keep = ranking[int(round(fraction * len(values))):]
        model = clone(estimator)
        if is_classifier(estimator) and len(np.unique(y[keep])) < 2:
            model = DummyClassifier(strategy="constant", constant=y[keep][0])
        scores[i] = model.fit(X[keep], y[keep]).score(X_test, y_test)
    return scores


def _mean_adjusted(mean, variance_of_mean):
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = variance_of_mean / np.abs(mean)
    if not np.all(np.isfinite(ratio)):
        raise ValueError("mean_adjusted_variance is undefined: some parties have "
                         "a mean marginal of exactly 0.")
    return float(np.mean(ratio))


def mean_adjusted_variance(marginals=None, *, valuator=None):
    """The seed paper's ``n^-1 sum_j s_j^2 / |mu_j|`` (Sec. 6.1).

    ``mu_j`` is party j's mean marginal over ``k`` permutations and
    ``s_j^2 = sum_t (m_j(pi_t) - mu_j)^2 / (k (k - 1))`` the variance of that
    mean: how uncertain the value estimates are, relative to their size.

    Parameters
    ----------
    marginals : array-like of shape (k, n_parties), default=None
        Marginal contributions, one row per permutation.
    valuator : fitted DPDataValuator, default=None
        Instead of ``marginals``: uses its running statistics
        (``marginal_mean_``, ``marginal_var_``, ``n_marginals_``) of the
        counted permutations, over the valued samples.

    Returns
    -------
    mean_adjusted_variance : float

    Examples
    --------
    >>> from skdpval.metrics import mean_adjusted_variance
    >>> round(mean_adjusted_variance([[1.0, -2.0], [3.0, -4.0]]), 6)
    0.416667
    """
    if (marginals is None) == (valuator is None):
        raise ValueError("Give exactly one of marginals and valuator.")
    if valuator is not None:
        k = valuator.n_marginals_
        valued = ~np.isnan(valuator.marginal_mean_)
        mean = valuator.marginal_mean_[valued]
        variance = valuator.marginal_var_[valued]  # ddof=0
    else:
        marginals = np.asarray(marginals, dtype=np.float64)
        if marginals.ndim != 2 or not np.all(np.isfinite(marginals)):
            raise ValueError("marginals must be a finite 2-D array (k, n_parties).")
        k = marginals.shape[0]
        mean = marginals.mean(axis=0)
        variance = marginals.var(axis=0)
    if k < 2:
        raise ValueError(f"mean_adjusted_variance needs at least 2 permutations, got {k}.")
    return _mean_adjusted(mean, variance / (k - 1))


def _query_values(valuator, X_base, y_base, X_targets, y_targets, X_val, y_val,
                  duplicate, seed):
    """Values of the targets queried against ``X_base``, as a valuation service.

    The service values a query point by valuing it together with its data
    set; a target that is a member is already in that data set, so it
    appears twice (``duplicate`` marks those targets). The value released is
    that of the query copy.
    """

    X = np.vstack([X_base, X_targets[duplicate], X_targets])
    y = np.concatenate([y_base, y_targets[duplicate], y_targets])
    fitted = clone(valuator).set_params(random_state=seed).fit(
        X, y, X_val=X_val, y_val=y_val)
    return fitted.values_[-len(X_targets):]


def membership_inference_auc(valuator, X_members, y_members, X_nonmembers,
                             y_nonmembers, X_shadow, y_shadow, X_val, y_val,
                             n_shadow=32, random_state=None):
    """ROC AUC of a likelihood-ratio membership attack on released values.

    The attack of Wang et al. (2023) on data values, as in the seed paper's
    App. D.1. A valuation service holds a private data set (the members) and
    answers a query point z with z's value, computed by valuing z together
    with the private set (a member is then present twice). The attacker
    knows a shadow pool from the same distribution. For each of
    ``n_shadow`` rounds it draws a shadow set (each shadow point kept with
    probability 1/2) and values every target with the shadow set twice: once
    with the target IN it (present twice) and once OUT (present once). It
    fits a Gaussian to ``|value(z)|`` over the IN and over the OUT valuations
    of each target z, and scores the value of z released by the real service
    by the log likelihood ratio ``log N(|v|; IN) - log N(|v|; OUT)``. The
    returned AUC is that score's ROC AUC for members against non-members:
    0.5 is a blind attacker.

    Parameters
    ----------
    valuator : DPDataValuator
        The service's valuator (cloned; its ``random_state`` is set per run).
    X_members, y_members : array-like
        The private data set; all of it is attacked.
    X_nonmembers, y_nonmembers : array-like
        Points from the same distribution, not in the private set.
    X_shadow, y_shadow : array-like
        The attacker's shadow pool.
    X_val, y_val : array-like
        The validation set of every valuation (the service's own).
    n_shadow : int, default=32
        Number of shadow rounds (each values the targets IN and OUT).
    random_state : int, RandomState instance or None, default=None
        Seeds the shadow sets and every valuation.

    Returns
    -------
    auc : float
    """

    X_members, y_members = check_X_y(X_members, y_members, dtype=None)
    X_nonmembers, y_nonmembers = check_X_y(X_nonmembers, y_nonmembers, dtype=None)
    X_shadow, y_shadow = check_X_y(X_shadow, y_shadow, dtype=None)
    if n_shadow < 2:
        raise ValueError(f"n_shadow must be at least 2, got {n_shadow}.")
    rs = check_random_state(random_state)
    X_targets = np.vstack([X_members, X_nonmembers])
    y_targets = np.concatenate([y_members, y_nonmembers])
    is_member = np.r_[np.ones(len(X_members), bool), np.zeros(len(X_nonmembers), bool)]
    everyone = np.ones(len(X_targets), bool)
    nobody = np.zeros(len(X_targets), bool)

    seed = lambda: rs.randint(np.iinfo(np.int32).max)
    released = np.abs(_query_values(valuator, X_members, y_members, X_targets,
                                    y_targets, X_val, y_val, is_member, seed()))
    inside, outside = [], []
    for _ in range(n_shadow):
        keep = rs.rand(len(X_shadow)) < 0.5
        shadow = (X_shadow[keep], y_shadow[keep])
        inside.append(_query_values(valuator, *shadow, X_targets, y_targets,
                                    X_val, y_val, everyone, seed()))
        outside.append(_query_values(valuator, *shadow, X_targets, y_targets,
                                     X_val, y_val, nobody, seed()))
    inside, outside = np.abs(inside), np.abs(outside)
    spread = lambda a: np.maximum(a.std(axis=0), 1e-12)
    score = (norm.logpdf(released, inside.mean(axis=0), spread(inside))
             - norm.logpdf(released, outside.mean(axis=0), spread(outside)))
    return float(roc_auc_score(is_member, score))
