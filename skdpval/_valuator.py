"""DPDataValuator: differentially private G-Shapley semivalues."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import validate_data

from . import _kernels
from ._accounting import noise_std_for_budget, privacy_report
from ._data import (
    UTILITY_CODES,
    check_budget,
    check_groups,
    check_utility,
    check_validation_targets,
    encode_training_labels,
    hold_out_parties,
    kernel_targets,
    public_classes,
    with_intercept,
)
from ._models import model_spec
from ._noise import (
    counted_permutations,
    noise_schedule,
    noise_source,
    released_noise_std,
    secret_seed_sequence,
)
from ._semivalues import check_semivalue, semivalue_weights
from ._walk import SeededDraws, make_problem, run_walks

MAX_INT = np.iinfo(np.int32).max
# Candidates of learning_rate="auto", ascending (ties go to the smaller rate).
AUTO_LEARNING_RATES = np.logspace(-4, 0, 13)
# learning_rate="auto" keeps the noise of a walk's validation margins (after n
# noisy steps) at most this std, where marginals are first-order in the step
# and i.i.d. and correlated noise both average out (benchmarks/quality.py).
AUTO_MARGIN_NOISE = 0.1


class DPDataValuator(BaseEstimator):
    """Differentially private data values from noisy per-party gradients.

    Estimates a semivalue (data Shapley, Banzhaf, Beta Shapley or
    leave-one-out) of every training sample with the G-Shapley walk: along
    each of ``n_permutations`` random permutations, a linear model starts from
    zero and takes one gradient step per sample, in order; the change in
    validation utility at a sample's step is its marginal contribution. Every
    gradient is clipped to L2 norm ``clip_norm`` and released with Gaussian
    noise calibrated to ``(epsilon, delta)``-DP over all ``n_permutations``
    releases. With ``noise="correlated"`` the model is updated with the
    running mean of the sample's own releases, so that more permutations give
    better, not worse, values [1]_.

    Features are used as given: scale them first (e.g. with
    :class:`~sklearn.preprocessing.StandardScaler`), as the learning rate and
    the clipping norm act on their scale.

    Parameters
    ----------
    estimator : estimator object, default=None
        The linear model whose loss and L2 penalty define the walk: one of
        SGDClassifier, SGDRegressor, LogisticRegression, LinearRegression,
        Ridge, RidgeClassifier. Only its loss, penalty, ``alpha`` / ``C``,
        ``epsilon`` (huber) and ``fit_intercept`` are used; it is never
        fitted. ``None`` means ``LogisticRegression()``.

    semivalue : {"shapley", "banzhaf", "loo"} or tuple ("beta", a, b), \
            default="shapley"
        The semivalue to estimate. ``("beta", 16, 1)`` weights small
        coalitions most (Kwon and Zou's convention). Banzhaf's weights peak
        near position ``sqrt(2 n / pi)`` and give high-variance estimates.

    noise : {"correlated", "iid", "none"}, array-like or callable, \
            default="correlated"
        How each step combines a sample's releases. ``"iid"`` uses the fresh
        release; ``"correlated"`` the mean of all its releases so far;
        ``"none"`` adds no noise (no privacy). An array of length
        ``n_permutations`` or a callable ``f(t, k)`` of the integer array
        ``t = 1 .. k`` gives the weight ``x_tt`` in (0, 1] of the fresh
        release at permutation ``t``, the rest going to the running mean.

    q : float in [0, 1), default=0.9
        Burn-in ratio: marginals of the first ``q * n_permutations``
        permutations are not counted (they still release noise and are
        accounted for).

    epsilon : float > 0 or None, default=1.0
        Privacy budget for all releases of one sample. Set it to ``None``
        when giving ``noise_multiplier``.

    delta : float in (0, 1), default=5e-5
        Privacy parameter delta.

    noise_multiplier : float > 0 or None, default=None
        Per-release noise std divided by ``clip_norm``, instead of
        ``epsilon``; ``epsilon_`` then reports the resulting budget.

    clip_norm : float > 0, default=1.0
        L2 norm bound ``C`` of each released gradient (its sensitivity).

    n_permutations : int >= 1, default=1000
        Number of permutations ``k``; every sample releases ``k`` gradients.

    learning_rate : float > 0 or "auto", default="auto"
        Step size of the walk. ``"auto"`` picks, from
        ``AUTO_LEARNING_RATES``, the rate whose clipped one-pass SGD of
        ``n`` steps on one half of the validation set has the lowest loss on
        the other half (both ways round); with noise, it then caps the rate
        so that the noise of ``n`` steps moves a validation margin by at most
        about 0.1 (``lr * s_eff * sqrt(n * n_params) <= 0.1``, ``s_eff``
        the noise std of a released step in the counted permutations). Small
        steps keep each marginal first-order in its own step, which is where
        private values find bad data best (``benchmarks/quality.py``). It
        never reads the training data.

    utility : {"neg_loss", "accuracy", "neg_mse", "r2"}, default="neg_loss"
        Validation utility: the model's own loss (without the penalty),
        accuracy (classifiers), or negative MSE / R^2 (regressors).

    validation_fraction : float in (0, 1), default=0.2
        Fraction of the parties held out as the validation set when ``fit``
        gets no ``X_val``, drawn at random with ``random_state`` (never
        stratified: that would read private labels). Held-out samples are
        not valued and not protected.

    batch_permutations : int >= 1, default=16
        Wave size: the permutations of a wave run in parallel, and with
        correlated noise they all use each sample's mean of its releases as of
        the end of the previous wave (a block lower-triangular combination of
        the releases: post-processing, the same privacy). Values depend on it,
        not on ``n_jobs``; 1 gives the paper's sequential algorithm.

    n_jobs : int or None, default=None
        Number of permutations of a wave run at once (joblib; threads unless
        a ``joblib.parallel_config`` says otherwise, e.g. a Dask cluster).
        ``None`` means 1 unless in a joblib context; -1 uses all processors.

    classes : array-like or None, default=None
        The class labels of a classifier. ``None`` takes them from ``y_val``
        (public), never from the private ``y``: a training label outside
        them is an error.

    random_state : int, RandomState instance or None, default=None
        Seeds the public randomness: the split, the learning-rate search and
        the permutations. It never seeds the noise.

    noise_seed : int >= 0 or None, default=None
        ``None`` draws the noise from 128 bits of fresh OS entropy, so that
        it stays secret. An int makes the noise reproducible (for tests and
        papers); the guarantee then holds only while that seed is secret.

    verbose : int, default=0
        Print progress (permutations per second, time left) to stderr when
        positive.

    Attributes
    ----------
    values_ : ndarray of shape (n_samples,) or (n_groups,)
        Estimated value of each party (sample, or group in the order of
        ``groups_``); NaN for parties held out as the validation set.

    rank_ : ndarray of shape (n_samples,) or (n_groups,)
        Rank of each value, 1 being the most valuable; 0 for held-out parties.

    groups_ : ndarray of shape (n_groups,)
        The sorted group labels, when ``fit`` got ``groups``.

    sample_values_ : ndarray of shape (n_samples,)
        The value of each sample's group, when ``fit`` got ``groups``.

    marginal_mean_ : ndarray of shape (n_samples,) or (n_groups,)
        Mean of each party's counted (weighted) marginals: equal to
        ``values_``; NaN for held-out parties.

    marginal_var_ : ndarray of shape (n_samples,) or (n_groups,)
        Variance (ddof=0) of each party's counted marginals, kept as running
        sums (no k x n array); NaN for held-out parties.

    n_marginals_ : int
        Number of counted permutations (past the burn-in).

    initial_utility_ : float
        Validation utility of the initial (zero) model.

    final_utilities_ : ndarray of shape (n_permutations,)
        Validation utility at the end of each permutation's walk. For
        Shapley with ``q=0`` the marginals of a walk telescope: the values
        sum to ``mean(final_utilities_) - initial_utility_``.

    classes_ : ndarray of shape (n_classes,)
        Class labels (classifiers only).

    learning_rate_ : float
        The learning rate used.

    epsilon_ : float
        Privacy budget of the releases (``inf`` with ``noise="none"``).

    delta_ : float
        Privacy parameter delta of ``epsilon_``.

    noise_multiplier_ : float
        Per-release noise std divided by ``clip_norm``.

    n_releases_ : int
        Number of noisy gradients released per sample (``n_permutations``).

    privacy_report_ : dict
        The guarantee in full: unit, adjacency, releases, clip norm, noise
        std, mu of Gaussian DP, epsilon (add/remove and replace-one), delta,
        method, and what the validation set exposes.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    sklearn.linear_model.SGDClassifier : A model the walk can use.

    References
    ----------
    .. [1] "Data Value Estimation on Private Gradients", Algorithm 1 and
       Section 5 (i.i.d. vs correlated noise, burn-in ``q``); the seed paper
       in the project's ``shared/seeds``.
    .. [2] Ghorbani and Zou. "Data Shapley: Equitable Valuation of Data for
       Machine Learning." ICML 2019.
    .. [3] Dong, Roth and Su. "Gaussian Differential Privacy." JRSS B, 2022.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdpval import DPDataValuator
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> valuator = DPDataValuator(LogisticRegression(), epsilon=3.0,
    ...                           n_permutations=50, random_state=0)
    >>> valuator.fit(X[:200], y[:200], X_val=X[200:300], y_val=y[200:300])
    DPDataValuator(...)
    >>> valuator.values_.shape
    (200,)
    >>> round(valuator.epsilon_, 6)
    3.0
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "get_params"]), None],
        "semivalue": [StrOptions({"shapley", "banzhaf", "loo"}), tuple],
        "noise": [StrOptions({"correlated", "iid", "none"}), "array-like",
                  callable],
        "q": [Interval(Real, 0.0, 1.0, closed="left")],
        "epsilon": [Interval(Real, 0.0, None, closed="neither"), None],
        "delta": [Interval(Real, 0.0, 1.0, closed="neither")],
        "noise_multiplier": [Interval(Real, 0.0, None, closed="neither"), None],
        "clip_norm": [Interval(Real, 0.0, None, closed="neither")],
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither"),
                          StrOptions({"auto"})],
        "utility": [StrOptions(set(UTILITY_CODES))],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "batch_permutations": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "classes": ["array-like", None],
        "random_state": ["random_state"],
        "noise_seed": [Interval(Integral, 0, None, closed="left"), None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        semivalue="shapley",
        noise="correlated",
        q=0.9,
        epsilon=1.0,
        delta=5e-5,
        noise_multiplier=None,
        clip_norm=1.0,
        n_permutations=1000,
        learning_rate="auto",
        utility="neg_loss",
        validation_fraction=0.2,
        batch_permutations=16,
        n_jobs=None,
        classes=None,
        random_state=None,
        noise_seed=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.semivalue = semivalue
        self.noise = noise
        self.q = q
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.clip_norm = clip_norm
        self.n_permutations = n_permutations
        self.learning_rate = learning_rate
        self.utility = utility
        self.validation_fraction = validation_fraction
        self.batch_permutations = batch_permutations
        self.n_jobs = n_jobs
        self.classes = classes
        self.random_state = random_state
        self.noise_seed = noise_seed
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _get_estimator(self):
        return LogisticRegression() if self.estimator is None else clone(self.estimator)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_val=None, y_val=None, groups=None):
        """Estimate the value of every training sample, or of every group.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples (the private data, one party per sample).
        y : array-like of shape (n_samples,)
            Their targets.
        X_val : array-like of shape (n_val, n_features), default=None
            Validation samples defining the utility. When omitted, a
            ``validation_fraction`` of the parties is held out instead.
        y_val : array-like of shape (n_val,), default=None
            Validation targets; required with ``X_val``.
        groups : array-like of shape (n_samples,), default=None
            Group label of each sample: each group is one party (a data set,
            a client), valued as a whole; its gradient is that of its mean
            loss, clipped once, and the privacy unit becomes the group.

        Returns
        -------
        self : object
            The fitted valuator.
        """
        check_semivalue(self.semivalue)
        check_budget(self.epsilon, self.noise_multiplier, self.noise)
        estimator = self._get_estimator()
        spec = model_spec(estimator, n_samples=1)  # refuses early; l2 below
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together.")
        check_utility(self.utility, spec.is_classifier)

        X, y = validate_data(self, X, y, dtype=np.float64, order="C",
                             y_numeric=not spec.is_classifier,
                             ensure_min_samples=2)
        if groups is None:
            for name in ("groups_", "sample_values_"):
                if hasattr(self, name):
                    delattr(self, name)
            party_of_sample = np.arange(len(X))
        else:
            self.groups_, party_of_sample = check_groups(groups, len(X))
        n_all_parties = party_of_sample.max() + 1
        rs = check_random_state(self.random_state)
        split_seed, search_seed, walk_seed = rs.randint(MAX_INT, size=3)
        if X_val is None:
            train_parties, val_parties = hold_out_parties(
                n_all_parties, self.validation_fraction, split_seed)
            val_rows = np.flatnonzero(np.isin(party_of_sample, val_parties))
            X_val, y_val = X[val_rows], y[val_rows]
            n_unprotected = len(val_rows)
        else:
            X_val = validate_data(self, X_val, reset=False, dtype=np.float64,
                                  order="C")
            train_parties = np.arange(n_all_parties)
            n_unprotected = 0
        classes = None
        if spec.is_classifier:
            classes = public_classes(y_val, self.classes)
            y = encode_training_labels(y, classes)
            self.classes_ = classes
        y_val = check_validation_targets(y_val, len(X_val), classes)
        n_parties = len(train_parties)
        if n_parties < 2:
            raise ValueError(f"Data valuation needs at least 2 training parties, got "
                             f"{n_parties}.")
        # The parties' rows, party by party: party j is rows offsets[j]:offsets[j+1].
        position = np.full(n_all_parties, -1)
        position[train_parties] = np.arange(n_parties)
        train_rows = np.flatnonzero(position[party_of_sample] >= 0)
        # Rows by party, and inside a party by content: a group's gradient
        # then sums its rows in one order whatever order they came in.
        train_rows = train_rows[np.lexsort((y[train_rows], *X[train_rows].T[::-1],
                                            position[party_of_sample[train_rows]]))]
        offsets = np.r_[0, np.cumsum(np.bincount(position[party_of_sample[train_rows]],
                                                 minlength=n_parties))]
        X_train, y_train = X[train_rows], y[train_rows]

        spec = model_spec(estimator, n_samples=n_parties)
        T, T_val, loss, labels_val, total_sum_squares = kernel_targets(
            spec, y_train, y_val, None if classes is None else len(classes),
            self.utility)
        X_train, X_val = with_intercept(spec, X_train, X_val)

        k = self.n_permutations
        x_tt, use_rolling, add_noise = noise_schedule(self.noise, k,
                                                      self.batch_permutations)
        counted = counted_permutations(self.q, k)
        if not add_noise:
            noise_std = 0.0
        elif self.noise_multiplier is not None:
            noise_std = self.noise_multiplier * self.clip_norm
        else:
            noise_std = noise_std_for_budget(self.epsilon, self.delta, k,
                                             self.clip_norm)
        self.privacy_report_ = privacy_report(
            noise_std=noise_std, delta=self.delta, n_releases=k,
            clip_norm=self.clip_norm, unit="sample" if groups is None else "group",
            n_unprotected=n_unprotected,
            noise_source=noise_source(self.noise_seed, noise_std > 0))
        self.epsilon_ = self.privacy_report_["epsilon"]
        self.delta_ = float(self.delta)
        self.noise_multiplier_ = noise_std / self.clip_norm
        self.n_releases_ = k

        model = dict(loss=loss, huber_epsilon=spec.huber_epsilon,
                     l2=spec.l2_per_sample, n_penalized=X.shape[1],
                     clip_norm=self.clip_norm)
        theta_init = np.zeros((T.shape[1], X_train.shape[1]))
        if self.learning_rate == "auto":
            self.learning_rate_ = self._search_learning_rate(
                X_val, T_val, labels_val, n_parties, theta_init, model,
                search_seed)
            step_noise = released_noise_std(noise_std, x_tt, counted,
                                            self.batch_permutations)
            if step_noise > 0:
                # n steps of noise std step_noise in each of the parameters
                # move a margin of a standardised row by about
                # lr * step_noise * sqrt(n * n_params): keep that small.
                cap = AUTO_MARGIN_NOISE / (step_noise * np.sqrt(n_parties * theta_init.size))
                self.learning_rate_ = min(self.learning_rate_, float(cap))
        else:
            self.learning_rate_ = float(self.learning_rate)

        problem = make_problem(
            X_train, T, offsets, X_val, T_val, labels_val,
            utility=UTILITY_CODES[self.utility], learning_rate=self.learning_rate_,
            total_sum_squares=total_sum_squares,
            weights=semivalue_weights(self.semivalue, n_parties), **model)
        draws = SeededDraws(np.random.SeedSequence(walk_seed).spawn(k),
                            secret_seed_sequence(self.noise_seed).spawn(k),
                            n_parties, noise_std)
        result = run_walks(problem, draws, x_tt=x_tt, use_rolling=use_rolling,
                           counted=counted,
                           batch_permutations=self.batch_permutations,
                           n_jobs=self.n_jobs, verbose=self.verbose)
        values = result.marginal_mean
        self.initial_utility_ = _kernels.utility_of_theta(
            theta_init, X_val, T_val, labels_val, loss=loss,
            utility=UTILITY_CODES[self.utility],
            huber_epsilon=spec.huber_epsilon, total_sum_squares=total_sum_squares)
        self.final_utilities_ = result.end_utility
        remedy = ("Use a smaller learning_rate (or 'auto'), or scale the "
                  "features (e.g. StandardScaler).")
        if not (np.all(np.isfinite(values))
                and np.all(np.isfinite(self.final_utilities_))):
            raise FloatingPointError(
                f"The walk diverged with learning_rate={self.learning_rate_:g}: "
                f"utilities or values are not finite. {remedy}")
        scale = max(1.0, abs(self.initial_utility_))
        if (self.utility != "accuracy" and np.median(self.final_utilities_)
                < self.initial_utility_ - 100 * scale):
            warnings.warn(
                f"The walk diverges with learning_rate={self.learning_rate_:g}: "
                f"the median validation utility after a permutation is "
                f"{np.median(self.final_utilities_):.3g}, against "
                f"{self.initial_utility_:.3g} before it. {remedy}",
                ConvergenceWarning, stacklevel=2)
        self.n_marginals_ = result.n_counted
        variance = result.marginal_m2 / result.n_counted
        self.marginal_mean_ = np.full(n_all_parties, np.nan)
        self.marginal_mean_[train_parties] = values
        self.marginal_var_ = np.full(n_all_parties, np.nan)
        self.marginal_var_[train_parties] = variance
        self.values_ = np.full(n_all_parties, np.nan)
        self.values_[train_parties] = values
        self.rank_ = np.zeros(n_all_parties, dtype=np.int64)
        self.rank_[train_parties] = rankdata(-values, method="ordinal")
        if groups is not None:
            self.sample_values_ = self.values_[party_of_sample]
        return self

    def _search_learning_rate(self, X_val, T_val, labels_val, n_steps, theta_init,
                              model, seed):
        """One-pass SGD of ``n_steps`` on half the validation set, scored on the other.

        Only the validation set is read. Each candidate is scored by the
        model's own validation loss, averaged over both halves.
        """
        rng = np.random.default_rng(seed)
        rows = rng.permutation(len(X_val))
        if len(rows) >= 4:
            halves = [(rows[: len(rows) // 2], rows[len(rows) // 2:]),
                      (rows[len(rows) // 2:], rows[: len(rows) // 2])]
        else:  # too few rows to split: train and score on all of them
            halves = [(rows, rows)]
        orders = [rng.choice(train, size=n_steps, replace=len(train) < n_steps)
                  for train, _ in halves]
        scores = np.zeros(len(AUTO_LEARNING_RATES))
        for i, rate in enumerate(AUTO_LEARNING_RATES):
            for (_, test), order in zip(halves, orders):
                theta = _kernels.sgd_pass(X_val, T_val, learning_rate=rate,
                                          theta_init=theta_init, order=order,
                                          **model)
                scores[i] += _kernels.utility_of_theta(
                    theta, X_val[test], T_val[test], labels_val[test],
                    loss=model["loss"], utility=_kernels.NEG_LOSS,
                    huber_epsilon=model["huber_epsilon"], total_sum_squares=1.0)
        scores[~np.isfinite(scores)] = -np.inf
        return float(AUTO_LEARNING_RATES[int(np.argmax(scores))])
