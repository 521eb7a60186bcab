"""How many labels are bad: :class:`~skdpval.DPLabelQuality`'s
``noisy_share_``, from its releases and the validation rows only.

A released score is a party's clipped score plus noise of mean zero, so
the releases' mean ``M`` is the mix, over the classes ``j`` (shares
``pi_j``), of what a clean label of class ``j`` scores (``c_j``) and what a
flipped one scores (``f_j``, a label drawn uniformly among the others):
``M = sum_j pi_j ((1 - rho_j) c_j + rho_j f_j)``, ``rho_j`` the share of
class ``j``'s labels that are flipped. The validation rows (public) give
``pi_j``, ``c_j`` and ``f_j``: each row's score with its own label, and its
mean score with the other labels. With ``C = sum_j pi_j c_j`` and gaps
``d_j = c_j - f_j``, the share of bad labels ``s = sum_j pi_j rho_j``
satisfies ``sum_j pi_j rho_j d_j = C - M``:

- with one rate for every class, the share is also the weight of the
  flipped law in the releases' whole law: each release is one row's score
  plus Gaussian noise of a public std, so that law is the mixture
  ``(1 - s) clean + s flipped`` of the validation rows' scores with their
  own label and with each other label, each convolved with the noise. The
  estimate is its maximum-likelihood weight (:func:`_mixture_share`), within
  the interval: the mean alone is one summary of the releases, and on the
  small tables of ``benchmarks/noise_rate.py`` the whole law tells the
  weight better (``benchmarks/results/noise_rate_estimators.jsonl``). When a
  release is a group's mean, or has no noise, the laws are not those, and
  the estimate is ``(C - M) / sum_j pi_j d_j`` (within the interval), exact
  in expectation when every class's labels are flipped at one rate;
- the interval holds every share that some class-dependent rates
  ``rho_j`` in ``[0, 1]`` reach (from ``(C - M) / max d`` to
  ``(C - M) / min d``, when the gaps differ: a model fitted on flipped
  labels tells some classes' flips worse than others), widened by the
  sampling spread of ``M`` (the releases' own spread over their number)
  and of the validation rows (a bootstrap of them, ``N_BOOTSTRAP`` draws
  from the public seed; ``M`` drawn from its normal approximation): its
  ends are the ``(1 -+ level) / 2`` quantiles of the draws' lowest and
  highest shares, each found exactly (:func:`_reach`).

The validation rows must be scored by a model not fitted on them, as the
training rows are: a public model fitted privately on the training rows
scores them as it is (``public_model_``, with its margin scale); a public
model fitted on the validation rows would score them higher than it scores
new rows (it has seen their labels), so each row is scored by a clone
fitted on the other folds (``N_FOLDS``, stratified, from the public seed;
their warnings are those of the model fitted on all the rows, which ``fit``
already issued). The scores are clipped as the releases are and put on the
release's grid.

Everything here reads the releases, the validation rows and public models
only: post-processing, which spends no privacy.
"""

import warnings
from collections import namedtuple

import numpy as np
from scipy.special import logsumexp
from sklearn.model_selection import StratifiedKFold

from ._validation_folds import seeded_clone

__all__ = ["NoisyShare", "noisy_share", "reference_scores"]

# Folds of the validation rows for the out-of-fold scores: a model fitted on
# nine tenths of them stands for the one fitted on all (with five folds, the
# estimates on ten-class digits came out high: benchmarks/noise_rate.py).
N_FOLDS = 10
N_BOOTSTRAP = 2000
LEVEL = 0.9

NoisyShare = namedtuple("NoisyShare", ["share", "low", "high", "n_noisy", "level"])
NoisyShare.__doc__ = """The estimated share of bad labels, its interval (at
``level``), and the estimated number of bad labels among the valued parties."""


def noisy_share(values, clean, flipped, labels, seed, level=LEVEL, noise_std=None):
    """:class:`NoisyShare` of the finite releases ``values``, and the
    validation rows' ``clean`` scores, ``flipped`` ones (one a row and other
    label, or their mean) and class ``labels`` (``0..K-1``); ``seed`` is
    public. ``noise_std`` (public, positive): each release is one row's
    score plus Gaussian noise of that std, and the estimate fits the
    releases' law (:func:`_mixture_share`); None: it compares their mean."""
    values = values[np.isfinite(values)]
    others = flipped.reshape(len(clean), -1)
    flipped = others.mean(axis=1)
    n, m = len(values), len(clean)
    if n < 2 or m < 2:
        return NoisyShare(np.nan, 0.0, 1.0, 0, level)
    n_classes = int(labels.max()) + 1
    mean_values, se_values = values.mean(), values.std(ddof=1) / np.sqrt(n)
    clean_mean = clean.mean()
    gap = clean_mean - flipped.mean()
    share = np.nan
    if gap > 0:
        share = (min(max((clean_mean - mean_values) / gap, 0.0), 1.0)
                 if noise_std is None else
                 _mixture_share(values, noise_std, clean, others))
    rng = np.random.default_rng(seed)
    means = mean_values + se_values * rng.standard_normal(N_BOOTSTRAP)
    # Per draw and class: pi_j, pi_j c_j, pi_j d_j (in chunks of draws).
    pi, pi_c, pi_f = (np.empty((N_BOOTSTRAP, n_classes)) for _ in range(3))
    chunk = max(1, 2**20 // m)
    for start in range(0, N_BOOTSTRAP, chunk):
        stop = min(start + chunk, N_BOOTSTRAP)
        rows = rng.integers(0, m, size=(stop - start, m))
        cell = (np.arange(stop - start)[:, None] * n_classes + labels[rows]).ravel()
        size = (stop - start) * n_classes
        for out, weights in ((pi, None), (pi_c, clean[rows].ravel()),
                             (pi_f, flipped[rows].ravel())):
            out[start:stop] = np.bincount(cell, weights, minlength=size).reshape(
                stop - start, n_classes) / m
    lows, highs = _reach(pi, pi_c - pi_f, pi_c.sum(axis=1) - means)
    tail = (1 - level) / 2
    low, high = float(np.quantile(lows, tail)), float(np.quantile(highs, 1 - tail))
    if not np.isnan(share):  # the one-rate estimate, within the interval
        share = min(max(share, low), high)
    n_noisy = 0 if np.isnan(share) else int(round(share * n))
    return NoisyShare(float(share), low, high, n_noisy, level)


def _mixture_share(values, noise_std, clean, others):
    """The share ``s`` that maximises the likelihood of the releases as the
    mixture ``(1 - s) clean + s flipped`` of two laws: the validation rows'
    scores with their own label (``clean``) and with each other label
    (``others``), each smoothed by a kernel of Silverman's width (the rows
    are a sample of the law) and convolved with the release noise (Gaussian,
    ``noise_std`` public, positive). The log-likelihood is concave in ``s``: its
    derivative ``sum_i (r_i - 1) / (1 - s + s r_i)``, with ``r_i`` the
    flipped law's density at release ``i`` over the clean law's, falls
    from ``s = 0`` to ``s = 1``; its root is found by bisection."""
    spread = min(clean.std(), np.subtract(*np.percentile(clean, [75, 25])) / 1.349)
    bandwidth = 0.9 * (spread if spread > 0 else clean.std()) * len(clean) ** -0.2
    width = np.sqrt(noise_std ** 2 + bandwidth ** 2)
    others = others.ravel()
    # The releases lie on the release's grid: each distinct one once.
    points, index = np.unique(values, return_inverse=True)
    log_ratio = np.empty(len(points))
    chunk = max(1, 2**20 // len(others))
    for start in range(0, len(points), chunk):
        z = points[start:start + chunk, None] / width
        log_ratio[start:start + chunk] = (
            logsumexp(-0.5 * (z - others / width) ** 2, axis=1) - np.log(len(others))
            - logsumexp(-0.5 * (z - clean / width) ** 2, axis=1) + np.log(len(clean)))
    ratio = np.exp(np.clip(log_ratio, -50.0, 50.0))[index.ravel()]

    def slope(s):
        return np.sum((ratio - 1.0) / ((1.0 - s) + s * ratio))

    if slope(0.0) <= 0:
        return 0.0
    if slope(1.0) >= 0:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(50):  # the width 2**-50: exact in double precision
        middle = 0.5 * (low + high)
        low, high = (middle, high) if slope(middle) > 0 else (low, middle)
    return 0.5 * (low + high)


def _reach(pi, pi_d, target):
    """Per draw, the lowest and highest ``s = sum_j w_j`` with ``0 <= w_j <=
    pi_j`` and ``sum_j w_j d_j = target`` (``pi_d = pi_j d_j``): the shares
    some class-dependent rates reach. The reachable ``sum_j w_j d_j`` at
    share ``s`` runs from filling the classes by increasing gap (convex in
    ``s``) to filling them by decreasing gap (concave), so the shares that
    reach the target form an interval whose ends are 0, 1 or where one of
    the two curves crosses it; a target out of reach counts as its nearest
    end."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(pi > 0, pi_d / pi, 0.0)
    curves = []  # (width, slope, start) of each linear piece, both fillings
    for order in (np.argsort(d, axis=1), np.argsort(-d, axis=1)):
        width = np.take_along_axis(pi, order, axis=1)
        slope = np.take_along_axis(d, order, axis=1)
        curves.append((width, slope, np.cumsum(width, axis=1) - width))
    ends = [np.cumsum(w * g, axis=1) for w, g, _ in curves]
    target = np.clip(target, np.minimum(ends[0].min(axis=1), 0.0),
                     np.maximum(ends[1].max(axis=1), 0.0))[:, None]
    candidates = [np.zeros_like(target), np.ones_like(target)]
    for (width, slope, start), end in zip(curves, ends):
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = start + (target - (end - width * slope)) / slope
        inside = ((slope != 0) & (cross >= start - 1e-12)
                  & (cross <= start + width + 1e-12))
        candidates.append(np.where(inside, np.clip(cross, start, start + width),
                                   0.0))
    candidates = np.concatenate(candidates, axis=1)

    def value(width, slope, start):
        return (slope[:, None, :] * np.clip(candidates[:, :, None] - start[:, None, :],
                                            0.0, width[:, None, :])).sum(axis=2)

    tol = 1e-9 * (1.0 + np.abs(target))
    ok = (value(*curves[0]) <= target + tol) & (value(*curves[1]) >= target - tol)
    found = ok.any(axis=1)
    lows = np.where(found, np.where(ok, candidates, np.inf).min(axis=1), 0.0)
    highs = np.where(found, np.where(ok, candidates, -np.inf).max(axis=1), 1.0)
    return np.clip(lows, 0.0, 1.0), np.clip(highs, 0.0, 1.0)


def reference_scores(scorer, X_val, y_val, estimator, seed, gamma):
    """``(clean, flipped)``: each validation row's clipped score on the grid
    with its label, and its scores with each other label (None, with a
    warning, when a fit on the folds fails).

    ``scorer`` is the fitted :class:`~skdpval.DPLabelQuality` (its
    ``public_model_``, ``clip`` and ``classes_``), ``X_val`` and ``y_val``
    the validation rows as the model sees them (standardised, encoded),
    ``seed`` the public seed of the folds, ``gamma`` the release's grid (0:
    none, no noise).
    """
    n_folds = min(N_FOLDS, int(np.bincount(y_val).min()))
    if scorer.public_model_fitted_privately_ or n_folds < 2:
        # Not fitted on them, or a class too rare to leave out of a fold.
        return _scores(scorer, scorer.public_model_, X_val, y_val, gamma)
    n_classes = len(scorer.classes_)
    clean, flipped = np.empty(len(y_val)), np.empty((len(y_val), n_classes - 1))
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed % 2**32)
    with warnings.catch_warnings():
        # The folds' warnings repeat those of the fit on all the rows (issued).
        warnings.simplefilter("ignore")
        try:
            for fit_rows, score_rows in folds.split(X_val, y_val):
                model = seeded_clone(estimator, seed % 2**32)
                model.fit(X_val[fit_rows], y_val[fit_rows])
                clean[score_rows], flipped[score_rows] = _scores(
                    scorer, model, X_val[score_rows], y_val[score_rows], gamma)
        except Exception as error:  # the validation rows are public: quoted
            failure = error
        else:
            return clean, flipped
    warnings.warn(
        f"DPLabelQuality has no noisy_share_: fitting {type(estimator).__name__} "
        f"on {n_folds - 1} of {n_folds} folds of the validation rows, to score "
        f"each row by a model that did not see it, failed "
        f"({type(failure).__name__}: {failure}).", UserWarning, stacklevel=2)
    return None


def _scores(scorer, model, X, y, gamma):
    """Each row's clipped score on the grid under ``model`` with its label,
    and its scores with each other label (one column each)."""
    n_classes = len(scorer.classes_)
    per_class = np.empty((len(X), n_classes))
    with np.errstate(all="ignore"):
        for label in range(n_classes):
            scores = scorer._row_scores(X, np.full(len(X), label), model=model)
            per_class[:, label] = np.clip(np.nan_to_num(scores, nan=0.0),
                                          -scorer.clip, scorer.clip)
    if gamma > 0:  # the release's rounding (skdpval.privacy._release)
        per_class = gamma * np.rint(per_class / gamma)
    own = np.arange(n_classes) == y[:, None]
    return per_class[own], per_class[~own].reshape(len(X), n_classes - 1)
