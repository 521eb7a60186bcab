"""A statistical test of a differential privacy claim, from samples of a mechanism.

:func:`dp_test` takes many runs of a mechanism on two neighbouring data sets
(one number per run: the release itself, or a one-number projection of it)
and a claimed privacy guarantee, and decides whether the samples refute the
claim. It follows the design of the statistical testers of Google's
differential privacy library: histograms of the two samples, a test of every
event built from their bins, and a majority of votes over independent parts
of the samples. Its bounds are Clopper-Pearson intervals, so a claim that
holds is rejected with probability at most ``alpha`` whatever the mechanism.
"""

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.stats import beta as beta_distribution
from sklearn.utils import check_random_state

from .privacy._accounting import log_delta

# Every part of a sample (the calibration part and each vote's) holds at
# least this many values.
MIN_PART = 20
# The calibration part: a tenth of each sample.
CALIBRATION_FRACTION = 0.1
# The most extreme quantile bins hold about this many values of a vote.
MIN_TAIL_COUNT = 10


@dataclass(frozen=True)
class DPTestResult:
    """What :func:`dp_test` found.

    Attributes
    ----------
    passed : bool
        False when a majority of the votes refuted the claim.
    epsilon, delta : float or ndarray
        The claim tested (arrays for a privacy profile).
    epsilon_lower : float or ndarray
        For each claimed ``delta``: a lower bound on the smallest ``epsilon``
        with which the pair is ``(epsilon, delta)``-DP (0 when nothing is
        found). Above the claimed ``epsilon`` where the claim is refuted.
    delta_lower : float or ndarray
        For each claimed ``epsilon``: a lower bound on the smallest ``delta``
        with which the pair is ``(epsilon, delta)``-DP. Above the claimed
        ``delta`` where the claim is refuted.
    votes_against : int
        How many votes refuted the claim.
    n_votes : int
    n_events : int
        Events tested in each vote (the Bonferroni correction counts them).
    bin_edges : ndarray
        The cut points of the bins: a value ``x`` falls in bin
        ``searchsorted(bin_edges, x, side="right")``.
    worst_event : tuple of (float, float)
        The event of the largest delta excess in the deciding vote, as
        half-open intervals ``[low, high)``.
    worst_event_favours : {"samples", "samples_neighbour"}
        The sample to which that event is the more likely.
    alpha : float
        The bound on the probability of rejecting a claim that holds; the
        bounds above hold jointly with probability at least ``1 - alpha``.
    """

    passed: bool
    epsilon: object
    delta: object
    epsilon_lower: object
    delta_lower: object
    votes_against: int
    n_votes: int
    n_events: int
    bin_edges: np.ndarray
    worst_event: tuple
    worst_event_favours: str
    alpha: float


def gdp_delta(epsilon, mu):
    """``delta(epsilon)`` of ``mu``-GDP: the privacy profile of a Gaussian mechanism.

    A Gaussian mechanism of sensitivity ``S`` and noise std ``s`` is
    ``mu``-GDP with ``mu = S / s``, hence ``(epsilon, delta(epsilon))``-DP for
    every ``epsilon >= 0`` (Balle and Wang 2018)::

        delta(epsilon) = Phi(-epsilon / mu + mu / 2)
                         - e^epsilon Phi(-epsilon / mu - mu / 2)

    Pass its values to :func:`dp_test` to test the whole profile rather than
    one point of it.

    Parameters
    ----------
    epsilon : float or array-like of floats >= 0
    mu : float > 0

    Returns
    -------
    delta : float or ndarray

    Examples
    --------
    >>> from skdpval.testing import gdp_delta
    >>> round(float(gdp_delta(0.0, 1.0)), 4)  # total variation: 2 Phi(1/2) - 1
    0.3829
    """
    if not isinstance(mu, Real) or not 0 < mu < np.inf:
        raise ValueError(f"mu must be a finite real number > 0, got {mu!r}.")
    eps = np.asarray(epsilon, dtype=np.float64)
    if not np.all(np.isfinite(eps) & (eps >= 0)):
        raise ValueError("epsilon must be finite and >= 0.")
    delta = np.exp([log_delta(e, mu) for e in eps.ravel()]).reshape(eps.shape)
    return float(delta) if delta.ndim == 0 else delta


def _sample(values, name):
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of numbers.") from None
    if values.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array (one number per run of the "
                         f"mechanism), got an array of shape {values.shape}.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be finite (no NaN or infinity).")
    return values


def _min_length(n_votes):
    """The smallest sample with a calibration part and ``n_votes`` parts of
    at least ``MIN_PART`` values each."""
    n = MIN_PART * (n_votes + 1)
    while n - max(MIN_PART, int(CALIBRATION_FRACTION * n)) < MIN_PART * n_votes:
        n += 1
    return n


def _claims(epsilon, delta):
    eps = np.asarray(epsilon, dtype=np.float64)
    dlt = np.asarray(delta, dtype=np.float64)
    if eps.ndim > 1 or dlt.ndim > 1:
        raise ValueError("epsilon and delta must be numbers or 1-D arrays.")
    if eps.ndim == 1 and dlt.ndim == 1 and eps.shape != dlt.shape:
        raise ValueError(f"epsilon and delta must have the same length, got "
                         f"{eps.size} and {dlt.size}.")
    if eps.size == 0 or dlt.size == 0:
        raise ValueError("epsilon and delta must not be empty.")
    if not np.all(np.isfinite(eps) & (eps >= 0)):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}.")
    if not np.all((dlt >= 0) & (dlt < 1)):
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}.")
    scalar = eps.ndim == 0 and dlt.ndim == 0
    eps, dlt = np.broadcast_arrays(np.atleast_1d(eps), np.atleast_1d(dlt))
    return eps.copy(), dlt.copy(), scalar


def _split(values, n_votes, rng):
    """The calibration part and ``n_votes`` equal vote parts of a shuffled sample."""
    values = values[rng.permutation(len(values))]
    n_calibration = max(MIN_PART, int(CALIBRATION_FRACTION * len(values)))
    per_vote = (len(values) - n_calibration) // n_votes
    votes = [values[n_calibration + v * per_vote:n_calibration + (v + 1) * per_vote]
             for v in range(n_votes)]
    return values[:n_calibration], votes


def _bin_edges(calibration, n_bins, vote_size):
    """Cut points chosen on the pooled calibration parts.

    Exact values when there are at most ``n_bins`` distinct ones (integer or
    grid outputs); otherwise quantiles whose tail probabilities shrink
    geometrically from 1/2 to about ``MIN_TAIL_COUNT`` values of a vote,
    since the privacy loss is largest in the tails.
    """
    pooled = np.sort(np.concatenate(calibration))
    distinct = np.unique(pooled)
    if len(distinct) <= n_bins:
        return distinct[1:]
    half = n_bins // 2
    smallest = min(0.5, max(MIN_TAIL_COUNT / vote_size, 1.0 / len(pooled)))
    tails = np.geomspace(smallest, 0.5, half)
    levels = np.concatenate([tails, 1.0 - tails[::-1][1:]])
    return np.unique(np.quantile(pooled, levels, method="inverted_cdf"))


def _events(edges, calibration, epsilons):
    """Boolean matrix (events x bins): every bin, every left and right tail,
    and, for each claimed epsilon and direction, the bins whose calibration
    frequencies exceed ``e^epsilon`` times the other sample's (the
    Neyman-Pearson event of the calibration histograms)."""
    n_bins = len(edges) + 1
    index = np.arange(n_bins)
    rows = [np.eye(n_bins, dtype=bool),
            index[None, :] <= index[:-1, None],  # left tails
            index[None, :] >= index[1:, None]]  # right tails
    frequencies = [np.bincount(np.searchsorted(edges, part, side="right"),
                               minlength=n_bins) / len(part) for part in calibration]
    for eps in np.unique(epsilons):
        rows.append(np.array([frequencies[0] > np.exp(eps) * frequencies[1],
                              frequencies[1] > np.exp(eps) * frequencies[0]]))
    events = np.unique(np.concatenate(rows), axis=0)
    size = events.sum(axis=1)
    return events[(size > 0) & (size < n_bins)]


def _clopper_pearson(successes, trials, level):
    """One-sided Clopper-Pearson bounds, each failing with probability <= ``level``."""
    k = np.asarray(successes, dtype=np.float64)
    some, not_all = k > 0, k < trials
    lower = np.where(some, beta_distribution.ppf(level, np.maximum(k, 1),
                                                 trials - k + 1), 0.0)
    upper = np.where(not_all, beta_distribution.isf(level, k + 1,
                                                    np.maximum(trials - k, 1)), 1.0)
    return lower, upper


def _vote(parts, edges, events, eps, dlt, level):
    """Per claim: lower bounds on delta and epsilon from one vote's parts,
    and the (event, direction) of the largest delta excess."""
    n_bins = len(edges) + 1
    bounds = []
    for part in parts:
        counts = np.bincount(np.searchsorted(edges, part, side="right"),
                             minlength=n_bins)
        bounds.append(_clopper_pearson(events @ counts, len(part), level))
    (lower_x, upper_x), (lower_y, upper_y) = bounds
    # direction 0: P(S | samples) large against P(S | samples_neighbour)
    lower = np.stack([lower_x, lower_y])[:, None, :]  # (direction, 1, event)
    upper = np.stack([upper_y, upper_x])[:, None, :]
    scale = np.exp(eps)[None, :, None]  # (1, claim, 1)
    excess = lower - scale * upper  # delta needed, (direction, claim, event)
    delta_lower = np.maximum(excess.max(axis=(0, 2)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (lower - dlt[None, :, None]) / upper
        log_ratio = np.where(ratio > 0, np.log(np.where(ratio > 0, ratio, 1.0)), 0.0)
    epsilon_lower = np.maximum(log_ratio.max(axis=(0, 2)), 0.0)
    gap = excess - dlt[None, :, None]
    direction, _, event = np.unravel_index(np.argmax(gap), gap.shape)
    return delta_lower, epsilon_lower, gap.max(), (direction, event)


def _intervals(mask, edges):
    """The bins of ``mask`` as merged half-open intervals ``[low, high)``."""
    bounds = np.r_[-np.inf, edges, np.inf]
    intervals, start = [], None
    for b, inside in enumerate(list(mask) + [False]):
        if inside and start is None:
            start = b
        elif not inside and start is not None:
            intervals.append((float(bounds[start]), float(bounds[b])))
            start = None
    return tuple(intervals)


def dp_test(samples, samples_neighbour, epsilon, delta, *, alpha=1e-3, n_votes=3,
            n_bins=64, random_state=None):
    """Test whether two samples of a mechanism refute an (epsilon, delta)-DP claim.

    ``samples`` are outputs of independent runs of a mechanism ``M`` on a data
    set ``D`` (one number per run: the release, or a one-number projection
    of it, which is post-processing), ``samples_neighbour`` of runs on a
    neighbouring ``D'``. The claim is that for every event ``S``::

        P(M(D) in S) <= e^epsilon P(M(D') in S) + delta

    and the same with ``D`` and ``D'`` swapped, for one ``(epsilon, delta)``
    or, given arrays, for each pair of a privacy profile (a Gaussian
    mechanism's: :func:`gdp_delta`). The test follows
    the statistical testers of Google's differential privacy library
    (histograms of the two samples, every event of their bins tested, a
    majority of votes):

    1. Each sample is shuffled (``random_state``) and split into a
       calibration part (a tenth) and ``n_votes`` equal parts.
    2. The calibration parts choose the bins (the exact values when there
       are at most ``n_bins`` distinct ones, otherwise quantiles refined in
       the tails) and the events: every bin, every left and right tail, and
       for each claimed epsilon the set of bins where one calibration
       histogram exceeds ``e^epsilon`` times the other.
    3. Each vote bounds every event's probability under both samples with
       one-sided Clopper-Pearson bounds, and votes against the claim when,
       for some event, claim and direction, the lower bound of
       ``P(S | D)`` exceeds ``e^epsilon`` times the upper bound of
       ``P(S | D')`` plus ``delta``.
    4. The claim is refuted when a majority of the votes is against it.

    Error rates. The events are fixed before the votes' parts are read and
    the parts are independent, so a vote against a claim that holds needs
    a Clopper-Pearson bound to fail: with each of the ``4 n_events`` bounds
    of a vote at level ``beta / (4 n_events)`` (Bonferroni), a vote is
    wrongly against with probability at most ``beta``, and a majority of
    ``m = (n_votes + 1) / 2`` wrong votes has probability at most
    ``C(n_votes, m) beta^m``; ``beta`` is set so that this is ``alpha``.
    So a true claim, however tight (an exactly calibrated mechanism), is
    rejected with probability at most ``alpha`` (1e-3 by default); the
    number of claimed pairs costs nothing, since every pair is judged on
    the same bounds. The reported lower bounds are the deciding vote's (the
    ``m``-th largest over the votes) and hold jointly with the same
    probability.

    Measured (benchmarks/results/dp_test.jsonl): no false rejection in 30
    runs on exactly calibrated rounded Gaussian releases (10^6 per
    neighbour) nor in 1,000 runs on randomized response tight on its event,
    at ``alpha`` 1e-3, 0.05 and 0.2 (the bound is conservative).

    Power. Rounded Gaussian releases of a sensitivity-1 statistic calibrated
    to ``(epsilon, 1e-5)``, epsilon 0.5, 1, 2, 10^6 per neighbour, default
    settings, 10 runs each: the profile (:func:`gdp_delta` at epsilon 0,
    0.25, 0.5, 1, 2) is refuted in every run with the noise scaled by 0.8
    and by 0.5; the single point ``(epsilon, 1e-5)`` in every run at 0.5,
    in none at 0.8. At 0.8 the point ``(1, 1e-5)`` is violated only in the
    far tail (``delta`` 2.2e-4 instead of 1e-5, on an event of probability
    about 1e-3), where even the best single event, known in advance and
    tested with all 10^6 samples, stands only 2.7 standard errors out (a
    test of that event alone at level 1e-3 would refute the claim in about
    a third of the runs). Test the profile the mechanism claims (a Gaussian
    mechanism claims all of it).

    A passed test is no proof of privacy: it bounds what these samples of
    this one projection and these neighbours show.

    Parameters
    ----------
    samples : array-like of shape (n_samples,)
        Outputs of the mechanism on ``D``, finite.
    samples_neighbour : array-like of shape (n_samples_neighbour,)
        Outputs on the neighbour ``D'``, finite.
    epsilon : float >= 0 or array-like of shape (n_claims,)
    delta : float in [0, 1) or array-like of shape (n_claims,)
        The claim: the pair is ``(epsilon[i], delta[i])``-DP for every ``i``
        (a number broadcasts against an array).
    alpha : float in (0, 0.5], default=1e-3
        The largest probability of rejecting a claim that holds.
    n_votes : odd int >= 1, default=3
        Independent parts that vote. More votes spread the samples thinner
        (less power at a given ``alpha``); Google's testers vote.
    n_bins : int >= 2, default=64
        The most bins the histograms use.
    random_state : int, RandomState instance or None, default=None
        The shuffle before the split (public randomness).

    Returns
    -------
    result : DPTestResult
        ``passed`` and the bounds found (see :class:`DPTestResult`).

    See Also
    --------
    gdp_delta : the privacy profile of a Gaussian mechanism.

    References
    ----------
    .. [1] Google, differential-privacy library: the stochastic and statistical
       testers (``cc/testing/statistical_tests_utils.h``:
       ``GenerateApproximateDpVote``, ``VerifyApproximateDp``, ``RunBallot``;
       ``java/tests/.../statistical``), https://github.com/google/differential-privacy
    .. [2] A. C. Gilbert, A. McMillan, "Property testing for differential
       privacy", Allerton 2018 (arXiv:1806.06427); the histogram tester of
       Google's DP Auditorium follows its Algorithm 2.
    .. [3] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial
       limits illustrated in the case of the binomial", Biometrika 1934.
    .. [4] B. Balle, Y.-X. Wang, "Improving the Gaussian mechanism for
       differential privacy: analytical calibration and optimal denoising",
       ICML 2018.

    Examples
    --------
    Randomized response that keeps a bit with probability 0.75 is
    ``ln 3``-DP:

    >>> import numpy as np
    >>> from skdpval.testing import dp_test
    >>> rng = np.random.default_rng(0)
    >>> on_one = rng.random(30_000) < 0.75  # the bit is 1
    >>> on_zero = rng.random(30_000) < 0.25  # the bit is 0
    >>> dp_test(on_one, on_zero, epsilon=np.log(3), delta=0.0, random_state=0).passed
    True
    >>> result = dp_test(on_one, on_zero, epsilon=0.9, delta=0.0, random_state=0)
    >>> result.passed, round(result.epsilon_lower, 2)
    (False, 1.04)
    """
    x = _sample(samples, "samples")
    y = _sample(samples_neighbour, "samples_neighbour")
    eps, dlt, scalar = _claims(epsilon, delta)
    if not isinstance(alpha, Real) or not 0 < alpha <= 0.5:
        raise ValueError(f"alpha must be a real number in (0, 0.5], got {alpha!r}.")
    if (not isinstance(n_votes, Integral) or isinstance(n_votes, bool)
            or n_votes < 1 or n_votes % 2 == 0):
        raise ValueError(f"n_votes must be an odd integer >= 1, got {n_votes!r}.")
    if not isinstance(n_bins, Integral) or isinstance(n_bins, bool) or n_bins < 2:
        raise ValueError(f"n_bins must be an integer >= 2, got {n_bins!r}.")
    n_min = _min_length(n_votes)
    for name, values in (("samples", x), ("samples_neighbour", y)):
        if len(values) < n_min:
            raise ValueError(
                f"{name} must hold at least {n_min} values with n_votes={n_votes} "
                f"(a calibration part and {n_votes} vote(s) of {MIN_PART} or "
                f"more), got {len(values)}.")

    rng = check_random_state(random_state)
    (calibration_x, votes_x), (calibration_y, votes_y) = (
        _split(x, n_votes, rng), _split(y, n_votes, rng))
    vote_size = min(len(votes_x[0]), len(votes_y[0]))
    edges = _bin_edges((calibration_x, calibration_y), n_bins, vote_size)
    events = _events(edges, (calibration_x, calibration_y), eps)
    majority = (n_votes + 1) // 2
    beta = (alpha / math.comb(n_votes, majority)) ** (1.0 / majority)
    # One bin (the calibration parts hold a single value): no event but the
    # certain one, which no claim can fail; its bounds are 1 for both.
    events = events if len(events) else np.ones((1, len(edges) + 1), dtype=bool)
    level = beta / (4 * len(events))

    votes = [_vote((vx, vy), edges, events, eps, dlt, level)
             for vx, vy in zip(votes_x, votes_y)]
    delta_lower = np.sort([v[0] for v in votes], axis=0)[::-1][majority - 1]
    epsilon_lower = np.sort([v[1] for v in votes], axis=0)[::-1][majority - 1]
    gaps = np.array([v[2] for v in votes])
    votes_against = int(np.sum(gaps > 0))
    deciding = int(np.argsort(-gaps, kind="stable")[majority - 1])
    direction, event = votes[deciding][3]

    def out(values):
        return float(values[0]) if scalar else values
    return DPTestResult(
        passed=votes_against < majority,
        epsilon=out(eps), delta=out(dlt),
        epsilon_lower=out(epsilon_lower), delta_lower=out(delta_lower),
        votes_against=votes_against, n_votes=n_votes, n_events=len(events),
        bin_edges=edges, worst_event=_intervals(events[event], edges),
        worst_event_favours=("samples", "samples_neighbour")[direction],
        alpha=float(alpha))
