"""Measures of how well data values find bad data."""

from collections import namedtuple
from numbers import Integral, Real

import numpy as np
from scipy.integrate import quad
from scipy.stats import norm, spearmanr
from sklearn.base import clone, is_classifier
from sklearn.dummy import DummyClassifier
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    check_array,
    check_is_fitted,
    check_X_y,
    column_or_1d,
)

from .privacy._accounting import gdp_mu, noisy_label_auc_limit


def detection_auc_limit(epsilon, delta):
    """The best expected ROC AUC any (epsilon, delta)-DP mechanism reaches on flipped labels.

    Flipping one training label is a replace-one change: the releases of
    ``(x, y)`` and ``(x, y')`` differ by at most twice the sensitivity, so
    releases that are ``mu``-GDP per party (zero-out adjacency) are
    ``2 mu``-GDP for "is this label flipped". Every test's ROC curve then lies
    below ``Phi(Phi^-1(FPR) + 2 mu)``, and with labels flipped independently
    no method, private values or anything else computed from the releases,
    finds flipped labels with an *expected* ROC AUC above
    ``Phi(sqrt(2) mu)``. (When the number of flips is known exactly the
    provable bound is ``Phi(2 mu)``.) ``mu`` is the GDP parameter that
    ``(epsilon, delta)`` allows. The limit fraction of a method is
    ``(AUC - 0.5) / (limit - 0.5)``.

    The limit bounds the mean over runs (over the noise). One run's AUC,
    computed on a finite number of flipped and clean labels, scatters around
    its mean and can exceed the limit: :func:`detection_auc_band` gives the
    range one run of the best possible test reaches.

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
    if not isinstance(epsilon, Real) or not epsilon > 0:
        raise ValueError(f"epsilon must be a real number > 0, got {epsilon!r}.")
    if not isinstance(delta, Real) or not 0 < delta < 1:
        raise ValueError(f"delta must be a real number in (0, 1), got {delta!r}.")
    if np.isinf(epsilon):
        return 1.0
    return noisy_label_auc_limit(gdp_mu(epsilon, delta))


def detection_auc_band(epsilon, delta, n_flipped, n_clean, *, level=0.95):
    """Where one run's AUC of the best possible test lands, at a budget.

    :func:`detection_auc_limit` bounds the *expected* AUC. One run computes
    the AUC on ``n_flipped`` flipped and ``n_clean`` clean labels, and it
    scatters around its mean: a run above the limit is no contradiction
    while it stays inside this band. The band is that of the test that meets
    the limit: each flipped party's score is ``N(2 mu, 1)`` and each clean
    party's ``N(0, 1)``, independently (the Gaussian tradeoff curve of
    ``2 mu``-GDP, whose expected AUC is ``Phi(sqrt(2) mu)``). Its empirical
    AUC (a Mann-Whitney statistic) has mean ``A = Phi(sqrt(2) mu)`` and
    the exact variance (Hanley and McNeil 1982, eq. 2; Bamber 1975)::

        (A (1 - A) + (n_flipped - 1) (Q1 - A^2) + (n_clean - 1) (Q2 - A^2))
        / (n_flipped n_clean)

    with ``Q1 = Q2 = E[Phi(2 mu + Z)^2]`` for this binormal model (computed
    by quadrature). The band is ``A +- z sd`` (normal approximation),
    clipped to [0, 1]. It uses only public quantities: the budget and the
    counts of flipped and clean labels of the experiment.

    Parameters
    ----------
    epsilon : float > 0
        Per-party budget (``np.inf``: no privacy, the band is [1, 1]).
    delta : float in (0, 1)
    n_flipped, n_clean : int >= 1
        Numbers of flipped and clean labels the AUC is computed on.
    level : float in (0, 1), default=0.95
        Probability that one run of the best test lands in the band.

    Returns
    -------
    low, high : float
        The band; ``high`` is what one run can reach, ``level`` of the time
        or more (``(1 + level) / 2`` of the runs stay below it).

    References
    ----------
    .. [1] Hanley and McNeil. "The meaning and use of the area under a
       receiver operating characteristic (ROC) curve." Radiology, 1982.

    Examples
    --------
    >>> from skdpval.metrics import detection_auc_band, detection_auc_limit
    >>> round(detection_auc_limit(3.0, 5e-5), 3)
    0.866
    >>> [round(v, 3) for v in detection_auc_band(3.0, 5e-5, 113, 228)]
    [0.826, 0.906]
    """
    limit = detection_auc_limit(epsilon, delta)
    for name, count in (("n_flipped", n_flipped), ("n_clean", n_clean)):
        if (not isinstance(count, Integral) or isinstance(count, bool)
                or count < 1):
            raise ValueError(f"{name} must be an int >= 1, got {count!r}.")
    if not isinstance(level, Real) or not 0 < level < 1:
        raise ValueError(f"level must be a real number in (0, 1), got {level!r}.")
    if limit == 1.0:
        return 1.0, 1.0
    shift = 2.0 * gdp_mu(epsilon, delta)  # separation of the optimal test
    # Q = P(two flipped beat one clean) = P(one flipped beats two clean).
    q, _ = quad(lambda z: norm.pdf(z) * norm.cdf(shift + z) ** 2,
                -np.inf, np.inf, epsabs=1e-13)
    auc = limit
    variance = (auc * (1 - auc) + (n_flipped - 1 + n_clean - 1) * (q - auc**2)
                ) / (n_flipped * n_clean)
    half_width = norm.ppf((1 + level) / 2) * np.sqrt(max(variance, 0.0))
    return float(max(auc - half_width, 0.0)), float(min(auc + half_width, 1.0))


ValueFidelity = namedtuple("ValueFidelity", [
    "spearman", "top_decile_overlap", "bottom_decile_overlap"])
ValueFidelity.__doc__ = """How closely values track reference values
(see :func:`value_fidelity`)."""


def _decile(values, top):
    """Indices of the ``ceil(n / 10)`` largest (``top``) or smallest values,
    ties broken by position."""
    size = int(np.ceil(len(values) / 10))
    order = np.argsort(-values if top else values, kind="stable")
    return set(order[:size].tolist())


def value_fidelity(values, reference):
    """Spearman correlation and decile overlaps of ``values`` with ``reference``.

    The yardstick for pricing and attribution: how well private values
    (e.g. ``DPDataValuator(...).values_``) track the values of the same
    game without noise (``noise="none"``). Parties that are NaN in both
    (held out as the validation set) are left out.

    What any private release can reach: a release that is ``mu``-GDP for a
    party reveals about that party's value at most what one Gaussian
    observation of it with noise std ``range / mu`` would (``range`` is the
    span a party's value can take, set by its sensitivity), so a value whose
    spread over the parties is ``sd_v`` is tracked with a correlation of at
    most about ``sd_v / sqrt(sd_v^2 + (range / mu)^2)``. Single points at
    ``epsilon <= 3`` (``mu`` below 1) cannot be priced; groups under
    record-level privacy (``privacy_unit="record"``), whose release has
    sensitivity ``clip_norm / n_g``, can.

    Parameters
    ----------
    values : array-like of shape (n_parties,)
        The values to assess.
    reference : array-like of shape (n_parties,)
        The reference values of the same parties.

    Returns
    -------
    fidelity : ValueFidelity
        A named tuple: ``spearman`` (rank correlation), ``top_decile_overlap``
        and ``bottom_decile_overlap`` (the fraction of the ``ceil(n / 10)``
        highest, or lowest, reference values that are also among the
        highest, or lowest, of ``values``; ties broken by position).

    Examples
    --------
    >>> from skdpval.metrics import value_fidelity
    >>> reference = list(range(20))
    >>> values = reference[:18] + [19, 18]
    >>> value_fidelity(values, reference)
    ValueFidelity(spearman=0.998..., top_decile_overlap=1.0, bottom_decile_overlap=1.0)
    """
    values = column_or_1d(check_array(values, ensure_2d=False, ensure_all_finite=False,
                                      input_name="values"))
    reference = column_or_1d(check_array(reference, ensure_2d=False,
                                         ensure_all_finite=False,
                                         input_name="reference"))
    if len(values) != len(reference):
        raise ValueError(f"values and reference must have the same length, got "
                         f"{len(values)} and {len(reference)}.")
    missing = np.isnan(values)
    if np.any(missing != np.isnan(reference)):
        raise ValueError("values and reference must be NaN for the same parties "
                         "(those held out as the validation set).")
    if not (np.all(np.isfinite(values[~missing]))
            and np.all(np.isfinite(reference[~missing]))):
        raise ValueError("values and reference must be finite (or NaN for "
                         "held-out parties).")
    values, reference = values[~missing], reference[~missing]
    if len(values) < 2:
        raise ValueError(f"value_fidelity needs at least 2 parties with values, "
                         f"got {len(values)}.")
    size = int(np.ceil(len(values) / 10))
    overlaps = [len(_decile(values, top) & _decile(reference, top)) / size
                for top in (True, False)]
    return ValueFidelity(float(spearmanr(values, reference)[0]), *overlaps)


def noisy_label_auc(values, is_noisy):
    """ROC AUC of a low value predicting a noisy (flipped) label.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        Data values; lower means more likely noisy. Must be finite: select
        the valued samples first (held-out validation samples have NaN).
    is_noisy : array-like of bool of shape (n_samples,)
        True for the samples whose label is noisy (bool, or numbers that
        are all 0 or 1).

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
    is_noisy = column_or_1d(is_noisy)
    if is_noisy.dtype != bool:
        # Object arrays of bools (a pandas object Series) hold True == 1.
        bad = (~np.isin(is_noisy, (0, 1)) if is_noisy.dtype.kind in "iufO"
               else np.ones(len(is_noisy), dtype=bool))
        if np.any(bad):
            example = is_noisy[bad][:1].tolist()[0]
            raise ValueError("is_noisy must be an array of bool (or of 0 and 1), got "
                             f"{is_noisy.dtype} values such as {example!r}.")
        is_noisy = is_noisy.astype(bool)
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
        Fractions of the training samples to remove; ``round(fraction *
        n_samples)`` are removed, and at least one sample must stay:
        ``round(fraction * n_samples) <= n_samples - 1``.
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
    n_samples = len(values)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(fractions) | (fractions < 0) | (fractions >= 1)
        bad |= np.round(fractions * n_samples) > n_samples - 1
    if np.any(bad):
        raise ValueError(
            f"fractions must be finite, lie in [0, 1) and leave at least one of the "
            f"{n_samples} samples (round(fraction * {n_samples}) <= {n_samples - 1}), "
            f"got {fractions[bad]!r}.")
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
        keep = ranking[int(round(fraction * n_samples)):]
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
        counted permutations, over the valued samples. An unfitted
        valuator raises :class:`~sklearn.exceptions.NotFittedError`.

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
        check_is_fitted(valuator)
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


def _query_values(valuator, X_data, y_data, X_targets, y_targets, X_val, y_val,
                  noise_seed):
    """Values of the targets, each queried against the data set (App. D.1).

    The service values query points together with its data set and
    releases their values: a target that is in the data set is present
    twice, and the value released is that of the query copy. ``noise_seed``
    (None: the valuator's own) seeds the noise of valuators that take one.
    """
    X = np.vstack([X_data, X_targets])
    y = np.concatenate([y_data, y_targets])
    fitted = clone(valuator)
    if noise_seed is not None and "noise_seed" in fitted.get_params():
        fitted.set_params(noise_seed=noise_seed)
    fitted.fit(X, y, X_val=X_val, y_val=y_val)
    return fitted.values_[-len(X_targets):]


def membership_inference_auc(valuator, X_members, y_members, X_nonmembers,
                             y_nonmembers, X_rest, y_rest, X_val, y_val,
                             n_shadow=32, random_state=None):
    """ROC AUC of a likelihood-ratio membership attack on released values.

    The query model of the seed paper's App. D.1 (after Wang et al., 2023):
    a valuation service holds a private data set, the ``rest`` and the
    members, and answers queries by valuing the query points together with
    it (a member is then present twice) and releasing their values. The
    attack is LiRA (Carlini et al., 2022) with per-target IN and OUT shadow
    fits, by the adversary of differential privacy: it knows the rest, the
    targets (members and non-members), how many are members, and the
    valuator with its parameters, including ``random_state`` (public
    randomness); it does not know the noise or which targets are members.
    Each of ``n_shadow`` rounds fits the rest plus as many targets as there
    are members (consecutive rounds take the two ends of one random order of
    the targets, so that with as many non-members as members each target is
    IN in exactly half of the rounds), queries every target, and records its
    value as IN or OUT. A Gaussian fitted to each target's IN values and one
    to its OUT values score the value the service released by the log
    likelihood ratio; the returned AUC is that score's for members against
    non-members: 0.5 is a blind attacker.

    The number of members is fixed, so a target's membership is a
    replace-one change of one party: against releases that are ``mu``-GDP
    under zero-out no attack exceeds ``Phi(sqrt(2) mu)``
    (``privacy_report_["max_noisy_label_auc"]``).

    Parameters
    ----------
    valuator : estimator with ``values_``, e.g. DPDataValuator
        The service's valuator (cloned). Its ``random_state`` is public and
        used as is; the shadow fits draw their own ``noise_seed``.
    X_members, y_members : array-like
        The members: in the service's data set, all attacked.
    X_nonmembers, y_nonmembers : array-like
        Points from the same distribution, not in it, all attacked.
    X_rest, y_rest : array-like
        The rest of the service's data set, known to the attacker (may
        have no rows).
    X_val, y_val : array-like
        The validation set of every valuation (the service's own).
    n_shadow : int, default=32
        Number of shadow rounds; every target needs at least 2 IN and 2
        OUT values. The rounds depend only on ``random_state`` and the
        numbers of members and non-members, and are checked before any
        valuation.
    random_state : int, RandomState instance or None, default=None
        The attacker's randomness: its shadow rounds and their noise seeds.

    Returns
    -------
    auc : float

    Notes
    -----
    How strong the attack is depends on the data and the walk. With 25
    members and 25 non-members with isotropic Gaussian features (d = 50), no
    rest, k = 50, ``learning_rate=0.1``, a public ``random_state`` and the
    full-space walk (``subspace=None, clip_norm=1.0``), it reaches AUC 0.86
    without noise and 0.57 at epsilon = 1 (means over 10 seeds, std 0.06 and
    0.09; the limit is 0.66; ``tests/test_trust.py``). The default walk in a
    public direction releases one number per step, in which a second copy of
    a point barely shows: there the attack stays near chance (about 0.49)
    even without noise. On ``breast_cancer``
    (standardised, same setting), whose features are strongly correlated,
    one more copy of a point moves its value little against the other
    points' influence, and the attack reaches only 0.62 without noise (6
    seeds). The end-to-end audits (``tests/test_audit.py``) are the guard of
    the guarantee, not this attack.
    """

    X_members, y_members = check_X_y(X_members, y_members, dtype=None)
    X_nonmembers, y_nonmembers = check_X_y(X_nonmembers, y_nonmembers, dtype=None)
    X_rest, y_rest = check_X_y(X_rest, y_rest, dtype=None, ensure_min_samples=0)
    if n_shadow < 2:
        raise ValueError(f"n_shadow must be at least 2, got {n_shadow}.")
    rs = check_random_state(random_state)
    X_targets = np.vstack([X_members, X_nonmembers])
    y_targets = np.concatenate([y_members, y_nonmembers])
    n_members, n_targets = len(X_members), len(X_targets)
    is_member = np.arange(n_targets) < n_members

    def query(inside, noise_seed):
        return _query_values(valuator, np.vstack([X_rest, X_targets[inside]]),
                             np.concatenate([y_rest, y_targets[inside]]), X_targets,
                             y_targets, X_val, y_val, noise_seed)

    # The plan (rounds and noise seeds, drawn in the order of the rounds)
    # depends only on rs: draw and check it before any valuation.
    shadow_inside = np.zeros((n_shadow, n_targets), dtype=bool)
    noise_seeds = np.empty(n_shadow, dtype=np.int64)
    for round_ in range(n_shadow):
        if round_ % 2 == 0:
            order = rs.permutation(n_targets)
        chosen = order[:n_members] if round_ % 2 == 0 else order[-n_members:]
        shadow_inside[round_, chosen] = True
        noise_seeds[round_] = rs.randint(np.iinfo(np.int32).max)
    counts = shadow_inside.sum(axis=0)
    if counts.min() < 2 or (n_shadow - counts).min() < 2:
        raise ValueError(f"n_shadow={n_shadow} leaves a target with fewer than 2 "
                         "IN or OUT shadow values: increase n_shadow.")
    released = query(is_member, None)
    shadow_values = np.empty((n_shadow, n_targets))
    for round_ in range(n_shadow):
        shadow_values[round_] = query(shadow_inside[round_], int(noise_seeds[round_]))
    score = np.empty(n_targets)
    for target in range(n_targets):
        gaussians = []
        for inside in (shadow_inside[:, target], ~shadow_inside[:, target]):
            values = shadow_values[inside, target]
            gaussians.append(norm(values.mean(), max(values.std(), 1e-12)))
        score[target] = (gaussians[0].logpdf(released[target])
                         - gaussians[1].logpdf(released[target]))
    return float(roc_auc_score(is_member, score))
