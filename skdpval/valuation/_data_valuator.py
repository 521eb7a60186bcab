"""DPDataValuator: differentially private G-Shapley semivalues."""

from collections import namedtuple
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..families import check_sample_weight, family_of, split_pipeline
from ..privacy import (PRIVACY_CONSTRAINTS, THREAT_MODEL_CONSTRAINT,
                       declare_joint, mean_release_noise_std, noise_schedule,
                       released_noise_std, share_privacy_docs,
                       unseen_noise_factor, with_threat_model_doc)
from ..walks import SeededDraws, run_walks, walk_client
from . import _walk_settings as settings
from ._base import STEP_TO_USER, BaseValuator
from ._game import UTILITY_CODES, check_utility, make_game
from ._public_model import (PUBLIC_MODEL_CONSTRAINTS, PlannedLayout, PublicModel,
                            choose_model, data_candidates, document_public_model)
from ._statistics import walk_statistics

# The wrapped model as DPDataValuator reads it: a Pipeline's transformers
# (or None), its last step (a clone), its family and objective.
WrappedModel = namedtuple("WrappedModel", ["preprocessor", "estimator", "family",
                                           "objective", "candidates"])


@with_threat_model_doc
@document_public_model
@share_privacy_docs
class DPDataValuator(PlannedLayout, BaseValuator):
    """Differentially private data values from noisy per-party gradients.

    Estimates a semivalue (data Shapley, Banzhaf, Beta Shapley or
    leave-one-out) of every training sample with the G-Shapley walk: along
    each of ``n_permutations`` random permutations, a linear model starts from
    zero and takes one gradient step per sample, in order; the change in
    validation utility at a sample's step is its marginal contribution. Every
    step releases the sample's gradient clipped to L2 norm ``clip_norm`` plus
    Gaussian noise calibrated to ``(epsilon, delta)``-DP over all
    ``n_permutations`` releases. With ``noise="correlated"`` the model is
    updated with the running mean of the sample's own releases, so that more
    permutations give better, not worse, values [1]_.

    By default (``subspace="public"``) the gradient is first projected on one
    public direction, that of the wrapped model fitted on the validation set
    only, then clipped and noised in that one dimension; the walk moves the
    model along it. The values are the semivalues of a well-defined learning
    process (the model restricted to that subspace), with the same privacy
    (``k`` releases of sensitivity ``clip_norm``), spent where the utility
    reads it: a flipped label moves the projected release by 86-90% of ``2
    C`` against 26-57% when the whole gradient is clipped first, close to
    the best any mechanism can reach
    (:func:`skdpval.metrics.detection_auc_limit`). ``subspace=None`` is the
    seed paper's Algorithm 1 (the full gradient clipped and noised).

    Features are standardised with the validation set's mean and std
    (``standardize=True``): public statistics. Do not put a scaler fitted on
    the private ``X`` in front of the valuator: its mean and scale are a
    non-private release of the training data.

    Parameters
    ----------
    estimator : estimator object, list of them, or None, default=None
        The linear model whose per-sample objective (loss, penalty, weights)
        defines the walk: any linear model of ``sklearn.linear_model`` or
        ``sklearn.svm`` that minimises a sum of per-sample losses plus a
        penalty (the user guide's coverage table lists them, and why the
        others are refused), or ``MLPClassifier`` / ``MLPRegressor``, walked
        from their public initialisation (the user guide's neural
        networks). Only the parameters of its objective are used (loss,
        penalty, ``alpha`` / ``C``, ``l1_ratio``, ``epsilon``,
        ``quantile``, ``power``, ``class_weight``, ``fit_intercept``); it is
        never fitted on the private data. A ``*CV`` variant (and
        HuberRegressor, for its scale) is fitted on the validation set
        only, to choose those parameters (``chosen_params_``). With
        ``standardize=True`` the penalty acts on the coefficients of the
        standardised features (and targets). A
        :class:`~sklearn.pipeline.Pipeline` ending in such a model is
        accepted: its other steps are fitted on the public validation set
        only (``preprocessor_``) and applied to ``X``, and the last step is
        walked; ``fit`` then needs ``X_val``. A list: candidates, one chosen
        on the validation rows as :class:`~skdpval.DPLabelQuality` chooses
        (``model_choice_``). ``None``: ``[LogisticRegression(),
        MLPClassifier((64,), learning_rate_init=0.01, max_iter=50)]`` (the
        first with ``public_model="private"``).

    semivalue : {"shapley", "banzhaf", "loo"} or tuple ("beta", a, b), \
            default="shapley"
        The semivalue to estimate. ``("beta", 16, 1)`` weights small
        coalitions most (Kwon and Zou's convention). Banzhaf's weights peak
        near position ``sqrt(2 n / pi)`` and give high-variance estimates.
        Leave-one-out reads a party only where it comes last: about
        ``3 n`` counted permutations value 95% of the parties (the fit
        warns below that; the others get 0).

    noise : {"correlated", "iid", "none"}, array-like or callable, \
            default="correlated"
        How each step combines a sample's releases. ``"iid"`` uses the fresh
        release; ``"correlated"`` the mean of all its releases so far;
        ``"none"`` adds no noise (no privacy; ``epsilon=np.inf`` is the
        same). An array of length
        ``n_permutations`` or a callable ``f(t, k)`` of the integer array
        ``t = 1 .. k`` gives the weight ``x_tt`` in (0, 1] of the fresh
        release at permutation ``t``, the rest going to the running mean.

    q : float in [0, 1) or "auto", default="auto"
        Burn-in ratio: marginals of the first ``q * n_permutations``
        permutations are not counted (they still release noise and are
        accounted for). ``"auto"``, when releases are averaged
        (``noise="correlated"`` or a schedule with ``x_tt < 1``): for Shapley
        the last 2% of the permutations are counted (at least one wave of
        ``batch_permutations`` and two permutations, at most as many as 0.9
        counts: 0.98 at the default 1000 permutations), for other
        semivalues 0.9; 0 otherwise: i.i.d. releases gain nothing from a
        burn-in and would discard most of them. The counted permutations
        step with means that hold few of their own waves' releases, so a
        longer counted tail weighs the releases less evenly (see
        :doc:`/user_guide/noise_policies`).

    %(epsilon)s
    %(delta)s
    %(noise_multiplier)s
    privacy_unit : {"record", "group"}, default="record"
        Whom the guarantee protects when ``fit`` gets ``groups`` (without
        groups the unit is the sample either way). ``"record"``: one
        record (a person) in any group. Each record's gradient is clipped to
        ``clip_norm``; a group releases the sum of its clipped records plus
        noise calibrated for sensitivity ``clip_norm``, divided by its size
        ``n_g`` (public), so its mean release has noise std ``s / n_g``:
        large groups are valued precisely. ``"group"``: a whole group, its
        mean-loss gradient clipped once, so a group's value is as noisy as
        a single sample's. The default is ``"record"`` because the law
        protects people, not data sets; choose ``"group"`` when a group's
        membership or its data as a whole is the secret.

    threat_model : {"central", "joint"}, default="central"
        %(threat_model)s
        Here the billboard is every noisy release (they move the walks'
        states); along each permutation an owner's marginal is read from
        its own clipped step before the noise, ``U(z + step) - U(z)`` with
        ``z`` the walk's state before its step, while the state moves with
        its noisy release as under ``"central"``. Needs the walk along the
        public line (``subspace="public"`` and a utility the line
        tabulates): other walks refuse it. ``values_stderr_`` is then each
        owner's own Monte Carlo standard error, without the pooled term for
        the noise the permutations share (a regression across owners).

    clip_norm : float > 0 or "auto", default="auto"
        L2 norm bound ``C`` of each released (projected) gradient: its
        sensitivity. ``"auto"`` is the 10th percentile of the norms of the
        validation rows' (projected) gradients at the initial model (public):
        most releases are clipped, which spends the budget on the direction
        of the signal rather than on its outliers.

    subspace : "public", None or array-like of shape (m, n_params), \
            default="public"
        Where the releases live. ``"public"``: one direction, the parameters
        (intercept included; for several outputs the flattened parameter
        matrix) minimising the wrapped model's own objective on the
        validation set. ``None``: the full gradient (the seed paper's
        Algorithm 1). An array: ``m`` orthonormal rows over the parameters,
        laid out as ``(n_outputs, n_features + 1)`` flattened, the intercept
        last (without intercept: ``n_features`` columns). Each gradient is
        projected on the subspace, then clipped to ``clip_norm``, then noised
        in ``m`` dimensions, and the walk moves the model inside the
        subspace: the values are the semivalues of the model restricted to
        it. Choose it from public data only.

    standardize : bool, default=True
        Scale the features with the validation set's mean and std before the
        walk (public statistics; a constant validation column is only
        centred; a model without intercept is scaled, not centred). For a
        regressor the targets are standardised with ``y_val``'s mean and std
        too, so that the walk starts at the validation mean; values,
        ``initial_utility_`` and ``final_utilities_`` are reported in the
        utility's own units. Without it, unscaled features make the learning rate and
        the clip norm act on arbitrary scales.

    n_permutations : int >= 1, default=1000
        Number of permutations ``k``; every sample releases ``k`` gradients.

    learning_rate : float > 0 or "auto", default="auto"
        Step size of the walk. ``"auto"`` picks, from
        ``AUTO_LEARNING_RATES``, the rate whose clipped one-pass SGD of
        ``n`` steps (in the subspace) on one half of the validation set has
        the lowest loss on the other half (both ways round); with noise, it
        then caps the rate so that the noise of ``n`` steps moves a
        validation margin by at most about 0.1 (``lr * s_eff * sqrt(n) * r
        <= 0.1``, ``s_eff`` the noise std of a released step in the counted
        permutations, ``r`` the root mean square over validation rows of how
        far a unit release moves their margins), and so that the walk's drift
        moves them by at most about 2 (``lr * n * |g| * r <= 2``,
        ``g`` the validation rows' mean clipped gradient at the initial
        model): a walk that reaches the validation optimum gives marginals
        of either sign there, and noisy marginals add up across permutations
        only while the utility's slope along the walk keeps its sign. Small
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

    batch_permutations : int >= 1 or "auto", default="auto"
        Wave size (``"auto"``: 16, halved while a wave would walk more than
        2**24 party steps, down to 2: 16 up to about a million parties, 2 at
        ten million; read from the number of parties only, so the values are
        the same on every backend): the permutations of a wave run in parallel, and with
        correlated noise they all use each sample's mean of its releases as of
        the end of the previous wave (a block lower-triangular combination of
        the releases: post-processing, the same privacy). Values depend on it,
        not on ``n_jobs``; 1 gives the paper's sequential algorithm. On
        Dask workers each walks ``batch_permutations / n_workers`` of a
        wave's permutations (the user guide's "Data held by Dask" gives the
        memory a party needs).

    n_jobs : int or None, default=None
        Number of workers walking a wave's permutations: threads (a pool kept
        for the fit; the kernels release the GIL) unless a
        ``joblib.parallel_config`` names another backend, e.g. a Dask
        cluster. A fit whose permutations are too cheap for threads to pay
        runs on one thread. ``None`` means 1 unless in a joblib context; -1
        uses all processors. The values do not depend on it.

    classes : array-like or None, default=None
        The class labels of a classifier. ``None`` takes them from ``y_val``
        (public), never from the private ``y``: a training label outside
        them is an error.

    %(public_model)s
        For this valuator the public model gives the line of
        ``subspace="public"``: its direction and where the utility's table
        is centred (the walk still starts from zero). With another
        ``subspace``, or ``noise_multiplier`` (no budget to share), the
        validation model is kept (``"private"`` is an error).

    %(public_model_share)s

    random_state : int, RandomState instance or None, default=None
        Seeds the public randomness: the split, the learning-rate search,
        the permutations and the order of tied values in ``rank_``. It
        never seeds the noise.

    %(noise_seed)s
    verbose : int, default=0
        Print progress (permutations per second, time left) to stderr when
        positive.

    Attributes
    ----------
    chosen_params_ : dict
        Parameters of the wrapped model chosen on the validation set only: a
        ``*CV`` variant's choice (``alpha``, ``l1_ratio``, ``C``), fitted
        with its own cross-validation on ``X_val, y_val``, and
        HuberRegressor's ``scale``; empty for other models.
    values_ : ndarray of shape (n_samples,) or (n_groups,)
        Estimated value of each party (sample, or group in the order of
        ``groups_``); NaN for parties held out as the validation set.

    rank_ : ndarray of shape (n_samples,) or (n_groups,)
        Rank of each value, 1 being the most valuable (ties in a random
        order, not the rows'); 0 for held-out parties.

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

    values_stderr_ : ndarray of shape (n_samples,) or (n_groups,)
        Standard error of each value: how far two fits with fresh noise and
        other permutations (another ``random_state``) would place it,
        ``sqrt(marginal_var_ / n_marginals_ + shared)``. The first term is
        the Monte Carlo variance: the spread of the marginals over the
        counted permutations, which holds all of the noise of i.i.d.
        releases. ``shared`` is the noise the counted permutations share
        when steps use running means (``noise="correlated"`` or a schedule
        with ``x_tt < 1``), which that spread does not see: to first order,
        ``|a|^2 s_j^2`` times what the schedule's covariance leaves out,
        ``s_j`` the party's noise std (a record-level group's over its
        size) and ``a`` the slope of the values on the parties' mean
        releases, read from the values and the releases across parties
        (post-processing only). ``noise="none"`` and ``"iid"``: the Monte
        Carlo term alone. Not covered: the bias (the step size, the burn-in,
        the model restricted to its subspace) and what the public choices
        (``learning_rate="auto"``, the public direction) would change. With
        ``utility="accuracy"`` (a step function) most values move in rare
        jumps or not at all: the standard errors are right on average over
        the parties, not party by party. NaN, with a warning, when fewer
        than two permutations are counted.

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

    batch_permutations_ : int
        The wave size used.

    clip_norm_ : float
        The clip norm used (the sensitivity of a release).

    q_ : float
        The burn-in ratio used.

    subspace_ : ndarray of shape (m, n_params) or None
        The orthonormal basis the releases live in (public); None for the
        full gradient.

    epsilon_ : float
        Privacy budget of the releases (``inf`` with ``noise="none"``).

    delta_ : float
        Privacy parameter delta of ``epsilon_``.

    noise_multiplier_ : float
        Per-release noise std divided by ``clip_norm`` (record-level: the
        noise of a group's sum; its mean release's is that over ``n_g``).

    privacy_unit_ : {"sample", "group", "record"}
        Whom ``epsilon_`` protects: a sample (no groups), a group, or a
        record in any group.

    threat_model_ : {"central", "joint"}
        The threat model of the fit. Under ``"joint"``, ``values_`` (and every
        per-party attribute) is the curator's view: deliver each owner its
        own value with :meth:`owner_value`; ``rank_`` refuses.

    n_releases_ : int
        Number of noisy gradients released per sample (``n_permutations``).

    public_model_ : ndarray of shape (n_outputs, n_columns) or None
        The public model's parameters (standardised features, intercept
        last) whose direction the walk follows (``subspace="public"``):
        fitted on the validation set, or privately on the training rows
        (then private output, covered by ``epsilon_``). None otherwise.

    public_model_fitted_privately_, public_model_reason_ : bool, str
        Whether the model kept is its private fit; why (a fit not kept, too).

    model_choice_ : dict or None
        The candidates' choice (``estimator`` None or a list; else None).

    privacy_report_ : dict
        The guarantee in full: unit, adjacency (zero-out with n public, and
        replace-one), releases and their dimension, clip norm, noise std, mu
        of Gaussian DP, epsilon, epsilon under replace-one, delta, the best
        expected noisy-label AUC any mechanism reaches at this budget
        (``"max_noisy_label_auc"``), the source of the noise, method, and
        what the validation set exposes. With groups, ``sample_values_``
        shows which samples share a group and so the groups' sizes, and the
        report gives the number of held-out samples: both are public by
        construction, not protected. Record-level (``privacy_unit_ ==
        "record"``): the guarantee per record, the groups' sizes, the noise
        std of a group's mean release and, for completeness, the guarantee
        of a whole group (``"group_mu"``, ``"group_epsilon"``: ``n_g`` times
        the record's mu, for the largest group).

    preprocessor_ : Pipeline
        A wrapped Pipeline's steps before its model, fitted on the validation set.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    sklearn.linear_model.SGDClassifier : A model the walk can use.
    DPLabelQuality : One private score per party, to find bad labels or targets.

    Notes
    -----
    A value is, to first order, the projection of the party's clipped
    gradient on the validation utility's gradient along the walk. For a
    regressor with a squared loss, from the zero model along the public
    direction ``b``, that is ``(x . b) t`` (standardised target ``t``): the
    sign of the target along the public model's prediction, not the size of
    its residual. Of uniformly replaced targets on make_regression, one
    whose sign flipped is found (no-noise AUC 1.00 against the clean
    targets), one that kept it looks clean (0.47): about half are found,
    whatever the budget (``benchmarks/quality.py --suite regression``).
    The residual's size reaches a value only through second-order terms,
    which noise swamps. To find corrupted targets, use
    :class:`DPLabelQuality`: it releases the residual's size itself.

    References
    ----------
    .. [1] Zhou, Xu, Rus and Low. "Data Value Estimation on Private
       Gradients." arXiv:2412.17008, 2024: Algorithm 1 and Section 5 (i.i.d.
       vs correlated noise, burn-in ``q``).
    .. [2] Ghorbani and Zou. "Data Shapley: Equitable Valuation of Data for
       Machine Learning." ICML 2019.
    .. [3] Dong, Roth and Su. "Gaussian Differential Privacy." JRSS B, 2022.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skdpval import DPDataValuator
    >>> X, y = load_breast_cancer(return_X_y=True)
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
        **PRIVACY_CONSTRAINTS,
        "estimator": [HasMethods(["fit", "get_params"]), list, None],
        "semivalue": [StrOptions({"shapley", "banzhaf", "loo"}), tuple],
        "noise": [StrOptions({"correlated", "iid", "none"}), "array-like",
                  callable],
        "q": [Interval(Real, 0.0, 1.0, closed="left"), StrOptions({"auto"})],
        "privacy_unit": [StrOptions({"record", "group"})],
        "threat_model": THREAT_MODEL_CONSTRAINT,
        "clip_norm": [Interval(Real, 0.0, None, closed="neither"),
                      StrOptions({"auto"})],
        "subspace": [StrOptions({"public"}), "array-like", None],
        "standardize": ["boolean"],
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither"),
                          StrOptions({"auto"})],
        "utility": [StrOptions(set(UTILITY_CODES))],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "batch_permutations": [Interval(Integral, 1, None, closed="left"),
                               StrOptions({"auto"})],
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],
        "classes": ["array-like", None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        **PUBLIC_MODEL_CONSTRAINTS,
    }

    def __init__(
        self,
        estimator=None,
        *,
        semivalue="shapley",
        noise="correlated",
        q="auto",
        epsilon="default",
        delta="auto",
        noise_multiplier=None,
        privacy_unit="record",
        threat_model="central",
        clip_norm="auto",
        subspace="public",
        standardize=True,
        n_permutations=1000,
        learning_rate="auto",
        utility="neg_loss",
        validation_fraction=0.2,
        batch_permutations="auto",
        n_jobs=None,
        classes=None,
        public_model="auto",
        public_model_share=0.05,
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
        self.privacy_unit = privacy_unit
        self.threat_model = threat_model
        self.clip_norm = clip_norm
        self.subspace = subspace
        self.standardize = standardize
        self.n_permutations = n_permutations
        self.learning_rate = learning_rate
        self.utility = utility
        self.validation_fraction = validation_fraction
        self.batch_permutations = batch_permutations
        self.n_jobs = n_jobs
        self.classes = classes
        self.public_model = public_model
        self.public_model_share = public_model_share
        self.random_state = random_state
        self.noise_seed = noise_seed
        self.verbose = verbose

    def _get_estimator(self):
        """``(preprocessor, candidates)``: clones; a Pipeline's transformers apart."""
        if self.estimator is None or isinstance(self.estimator, list):
            return None, data_candidates(self.estimator, self.public_model)
        preprocessor, model = split_pipeline(self.estimator)
        return preprocessor, [clone(model)]

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_val=None, y_val=None, groups=None, sample_weight=None):
        """Estimate the value of every training sample, or of every group.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples (the private data, one party per sample). A
            Dask array or data frame is read where its blocks live (with
            ``y`` and ``sample_weight`` Dask or in memory, ``X_val`` in
            memory): the rows are projected there and the walk runs on one
            number a party, on the distributed Client's workers when there
            is one (a private fit of the public model sums its steps on
            the blocks and draws its noise in the client); the values equal
            the numpy path's bit for bit (the user guide's "Data held by
            Dask").
        y : array-like of shape (n_samples,)
            Their targets.
        X_val : array-like of shape (n_val, n_features), default=None
            Validation samples defining the utility (public: used without
            noise). When omitted, a ``validation_fraction`` of the parties is
            held out instead.
        y_val : array-like of shape (n_val,), default=None
            Validation targets; required with ``X_val``.
        groups : array-like of shape (n_samples,), default=None
            Group label of each sample: each group is one party (a data set,
            a client), valued as a whole. With ``privacy_unit="record"`` its
            release is the mean of its records' clipped gradients and the
            privacy unit stays the record; with ``"group"`` it is its
            mean-loss gradient clipped once, and the unit is the group.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample's loss (finite, >= 0), multiplied by the
            estimator's ``class_weight``; applied before clipping, so a
            weight above 1 saturates at ``clip_norm``. Public: weights are
            parameters the user chooses and must not be computed from the
            private data (e.g. from the training labels' counts).

        Returns
        -------
        self : object
            The fitted valuator.
        """
        return self._fit(X, y, X_val, y_val, groups, sample_weight=sample_weight)

    _n_seeds = 3  # the split, the learning-rate search, the walks
    _dask_input = True  # rows projected on their blocks (skdpval.walks)
    _planned_release = {**BaseValuator._planned_release, "name": "walk",
                        "n_releases_param": "n_permutations"}

    def _check_parameters(self):
        settings.check_semivalue(self.semivalue)
        preprocessor, candidates = self._get_estimator()
        for estimator in candidates[::-1]:  # the first one's model kept
            family = family_of(estimator)
            objective = family.objective(estimator, n_parties=1)  # refuses early
            check_utility(self.utility, objective.is_classifier)
            PublicModel.check(self, estimator, needs_line=True)
        if self.threat_model == "joint":
            settings.check_joint(self.subspace, self.utility)
        return WrappedModel(preprocessor, estimator, family, objective,
                            candidates if len(candidates) > 1 else None)

    def _adds_noise(self):
        return not (isinstance(self.noise, str) and self.noise == "none")

    def _party_options(self, model):
        objective = model.objective
        return dict(is_classifier=objective.is_classifier,
                    standardize=self.standardize, center=objective.fit_intercept,
                    scale_targets=objective.target_scale_degree is not None,
                    preprocessor=model.preprocessor)

    def _value(self, parties, groups, model, seeds, mechanism, sample_weight=None):
        """The walks: the game, its space, clip norm, noise, learning rate; the
        values in the utility's units (and the walk's statistics)."""
        search_seed, walk_seed = seeds
        model = choose_model(self, model, parties, search_seed, mechanism)
        self.chosen_params_, game = make_game(
            model.family, model.estimator, parties, utility=self.utility,
            semivalue=self.semivalue, record_level=self._record_level(groups),
            joint=self.threat_model == "joint", subspace=self.subspace,
            sample_weight=check_sample_weight(sample_weight,
                                              len(parties.party_of_sample)),
            seed=search_seed, stacklevel=STEP_TO_USER)
        public_model = PublicModel(self, model.estimator, mechanism)
        game = self._space(game, model.family, public_model, search_seed)
        self.clip_norm_ = settings.clip_norm(game, self.clip_norm)
        self.batch_permutations_ = wave = settings.wave_size(
            self.batch_permutations, len(game.train_parties))
        # epsilon=np.inf is noise="none": no releases to average.
        x_tt, use_rolling, _ = noise_schedule(
            self.noise if mechanism.adds_noise else "none", self.n_permutations, wave)
        self.q_, counted = settings.burn_in(
            self.semivalue, self.q, self.n_permutations, wave,
            use_rolling, len(game.train_parties), stacklevel=STEP_TO_USER)
        walk = public_model.walk_part(game, self.clip_norm_, self.n_permutations)
        mechanism.details["release_dimension"] = game.space.release_dimension
        if self.threat_model == "joint":
            self._declare_joint(mechanism)
        self.learning_rate_ = settings.learning_rate(
            game, self.learning_rate, self.clip_norm_,
            released_noise_std(walk.noise_std, x_tt, counted, wave), search_seed)
        return self._walk(game, walk, mechanism, walk_seed, x_tt, use_rolling,
                          counted)

    def _space(self, game, family, public_model, seed):
        """The game in its space: ``subspace_``, ``public_model_`` and the
        public model's choice are set; along a public line the private fit
        of the public model (when chosen) refines its direction."""
        public_model.choose(game, line=isinstance(self.subspace, str))
        space = family.space(game, self.subspace,
                             validation_objective=game.validation_objective,
                             seed=seed, refine=public_model.refine(game, seed))
        self.subspace_, self.public_model_ = space.basis, space.public_model
        return game._replace(space=space)

    def _declare_joint(self, mechanism):
        declare_joint(
            mechanism,
            billboard=("the private fit of the public model (it gives the "
                       "line), " if self.public_model_fitted_privately_ else "") +
                      "every noisy release of every owner (they move the "
                      "walks' states), and the public line, the learning "
                      "rate and the permutations (public)",
            owner_value="the mean of its weighted marginals, each U(z + its "
                        "own clipped step) - U(z) at the walk's state z "
                        "before its step (a function of the billboard)")

    def _walk(self, game, walk, mechanism, seed, x_tt, use_rolling, counted):
        """Every permutation's walk; the values and the walk's statistics."""
        noise_std = walk.noise_std
        # In a list that the walk empties (on Dask it frees the client's copy).
        problem = [settings.walk_problem(
            game, clip=self.clip_norm_, rate=self.learning_rate_,
            noise_std=noise_std,
            n_permutations=self.n_permutations)]
        # Past the walk only the shapes of the per-party arrays are read, and
        # the largest semivalue weight: the problem holds the rest, freed with
        # it before the statistics.
        sizes = np.diff(game.offsets) if game.record_level else None
        game = game._replace(T=np.empty((0, game.T.shape[1])), row_weights=None,
                             weights=np.max(np.abs(game.weights), initial=0.0,
                                            keepdims=True))
        walked = [run_walks(
            problem, SeededDraws(np.random.SeedSequence(seed),
                                 mechanism.noise_stream(walk), self.n_permutations,
                                 len(game.train_parties)),
            x_tt=x_tt, use_rolling=use_rolling, counted=counted,
            batch_permutations=self.batch_permutations_, n_jobs=self.n_jobs,
            verbose=self.verbose, client=walk_client(game.X))]
        del problem
        # Popped: the statistics free the walk's arrays as they go.
        statistics = walk_statistics(
            walked.pop(), game,
            party_noise_std=mean_release_noise_std(walk.noise_std, sizes),
            unseen_factor=unseen_noise_factor(x_tt, counted,
                                              self.batch_permutations_),
            learning_rate=self.learning_rate_, utility=self.utility, q=self.q_,
            n_permutations=self.n_permutations, stacklevel=STEP_TO_USER + 1)
        self.marginal_mean_ = statistics.marginal_mean
        self.marginal_var_ = statistics.marginal_var
        self.values_stderr_ = statistics.values_stderr
        self.n_marginals_ = statistics.n_marginals
        self.initial_utility_ = statistics.initial_utility
        self.final_utilities_ = statistics.final_utilities
        return statistics.values
