"""DPDataValuator: differentially private G-Shapley semivalues."""

from collections import namedtuple
from numbers import Integral, Real
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.base import _fit_context, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..kernels import _kernels, _mlp, _subspace
from ._base import STEP_TO_USER, BaseValuator, check_converged
from ..families._data import (UTILITY_CODES, check_utility, kernel_targets,
    with_intercept)
from ..kernels._line import LINE_MAX_INTERVALS
from ..families._models import (TARGET_SCALE_DEGREE, check_sample_weight,
    check_target_domain, model_spec, public_params, row_weights, split_pipeline)
from ..privacy._accounting import mean_release_noise_std
from ..privacy._mechanism import PRIVACY_CONSTRAINTS, share_privacy_docs
from ._private_fit import (PUBLIC_MODEL_CONSTRAINTS, budget_mu, check_public_model,
    declare_fit, document_public_model, game_problem, resolve_public_model, run_fit)
from ..privacy._noise import (counted_permutations, noise_schedule, released_noise_std,
    unseen_noise_factor)
from ._semivalues import check_semivalue, semivalue_weights, warn_if_loo_misses_parties
from ..privacy._secure_noise import WALK, Grid
from ..families._mlp_space import network_space
from ..families._space import check_basis, space_of
from ._uncertainty import shared_noise_variance
from ..walks._dask import walk_client
from ..walks._walk import SeededDraws, one_blas_thread, run_walks
from ..privacy._threat_model import (THREAT_MODEL_CONSTRAINT, declare_joint,
    with_threat_model_doc)
from ..exceptions import FIRST_FIT_SECONDS, SkdpvalWarning, warn_if_first_compile
# Candidates of learning_rate="auto", ascending (ties go to the smaller rate).
AUTO_LEARNING_RATES = np.logspace(-4, 0, 13)
# learning_rate="auto" keeps the noise of a walk's validation margins (after n
# noisy steps) at most this std, where marginals are first-order in the step
# and i.i.d. and correlated noise both average out (benchmarks/quality.py).
AUTO_MARGIN_NOISE = 0.1
# ... and keeps the walk's drift (n steps of the validation rows' mean clipped
# step) to at most this much of a validation margin: noisy marginals add up
# across permutations only while the utility's slope along the walk keeps its
# sign, and a walk that reaches the validation optimum gives marginals of
# either sign there. Measured (paired noise seeds): on 45,000-row regime sets
# (benchmarks/drift_cap.py) the limit fraction rose by 0.035-0.089 at eps 3
# (0.002-0.033 at eps 1) on three of six sets and held on the others; limits
# from 0.03 to 3 gave the same within 0.005;
# the fidelity of group-level values (--suite fidelity) held from 2 on and
# fell at 1 (0.76 -> 0.74 at eps 10) and 0.1 (-> 0.48).
AUTO_MARGIN_DRIFT = 2.0
# clip_norm="auto": this percentile of the norms of the (projected) validation
# gradients at the initial model. Most releases are clipped: under heavy noise
# the sign of the signal is what a value can carry (10 beat 25 and 50 at
# eps 1 and 3 and tied at eps 10: benchmarks/quality.py).
AUTO_CLIP_PERCENTILE = 10
# q="auto" when releases are averaged: the seed paper's 0.9, and for Shapley
# a shorter counted tail. A counted permutation steps with the mean of the
# releases before its wave and its own, so the releases of the counted waves
# enter fewer means: at q = 0.9 (k = 1000, waves of 16) the value weighs its
# releases unevenly, as if 0.960 k of them were averaged
# (skdpval.privacy._noise.unseen_noise_factor), a noise std 2.1% above one release
# at the budget's. Counting the last 2% (at least one wave) makes that
# 0.988 k. Paired (same splits and noise), Shapley, k = 1000: +0.008 to
# +0.013 limit fraction on the regime sets (sep_0.8, sep_1.2, n_val 200,
# eps 1, 3 seeds; i.i.d. releases with q = 0, which weigh them evenly, gave
# +0.014 to +0.020); on the limit suite (4 sets, 10 seeds) the mean moved
# -0.004 / +0.003 / +0.000 at eps 1 / 3 / 10, diabetes -0.015 at eps 1;
# value fidelity (Spearman to the noiseless values) +0.000 to +0.006,
# record-level groups at eps 10 -0.004 (q 0.968, k = 500). Other semivalues
# weigh few positions, which fewer counted permutations may sample worse
# (not measured): they keep 0.9. benchmarks/burn_in.py, results in
# quality_burn_in.jsonl.
AUTO_BURN_IN = 0.9
AUTO_COUNTED_FRACTION = 0.02


def auto_burn_in(semivalue, n_permutations, batch_permutations):
    """``q="auto"`` with averaged releases: 0.9, or for Shapley the last 2% of
    the permutations counted: at least one wave and two permutations, and at
    most as many as 0.9 counts."""
    if semivalue != "shapley":
        return AUTO_BURN_IN
    k = n_permutations
    at_most = k - int(np.floor(AUTO_BURN_IN * k))
    n_counted = min(max(int(np.ceil(AUTO_COUNTED_FRACTION * k)),
                        batch_permutations, 2), at_most)
    q = (k - n_counted) / k
    # counted_permutations counts t > q k in floating point: keep its count
    # at n_counted exactly.
    for _ in range(4):
        counted = int(counted_permutations(q, k).sum())
        if counted == n_counted:
            break
        q = np.nextafter(q, 1.0 if counted > n_counted else 0.0)
    return float(q)


def _line_range(center, noise_reach, reach=np.inf):
    """``(lo, hi)`` of ``z`` to tabulate: 0 to ``center``, widened by half of
    it and by ``noise_reach``, and at most ``reach + noise_reach`` from 0:
    ``n`` clipped steps (``reach = lr n C``) go no further than ``reach``
    (a network's validation optimum can lie ten times further)."""
    margin = 0.5 * abs(center) + noise_reach
    cap = reach + noise_reach
    return (max(min(0.0, center) - margin, -cap),
            min(max(0.0, center) + margin, cap))


def _lowest_utility_bound(values, weights, utility):
    """A utility that some walk's validation utility fell to, or below.

    A marginal is ``w (v' - v)`` with ``|w| <= max |weights|``; the
    utilities are at most ``top`` (0 for a loss or an MSE, 1 for R^2), so
    ``|v' - v| <= top - min(v, v')``; a value is a mean of marginals.
    """
    top = 1.0 if utility == "r2" else 0.0
    largest = np.max(np.abs(weights), initial=0.0)
    if largest == 0:
        return top
    return top - float(np.max(np.abs(values), initial=0.0) / largest)


# The kernels' view of one valuation: rows with the intercept column,
# targets, loss, utility, the semivalue weights.
Game = namedtuple("Game", [
    "X", "T", "offsets", "X_val", "T_val", "labels_val", "loss", "utility",
    "loss_param", "l2", "n_penalized", "total_sum_squares", "weights", "l1",
    "row_weights", "val_weights", "val_spec", "record_level", "space", "target_std"],
    defaults=(False, None, 1.0))

# The wrapped model as DPDataValuator reads it: a Pipeline's transformers
# (or None), its last step (a clone) and the objective it defines.
WrappedModel = namedtuple("WrappedModel", ["preprocessor", "estimator", "spec"])


@with_threat_model_doc
@document_public_model
@share_privacy_docs
class DPDataValuator(BaseValuator):
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
    only; then it is clipped and noised in that one dimension, and the walk
    moves the model along that direction. The values are then the semivalues
    of a well-defined learning process, the model restricted to that
    subspace, and the privacy is the same (``k`` releases of sensitivity
    ``clip_norm``). It spends the budget where the utility reads it: a
    flipped label moves the projected release by 86-90% of ``2 C`` against
    26-57% when the whole gradient is clipped first, which brings the values
    close to the best any mechanism can reach
    (:func:`skdpval.metrics.detection_auc_limit`). ``subspace=None`` is the
    seed paper's Algorithm 1 (the full gradient clipped and noised).

    Features are standardised with the validation set's mean and std
    (``standardize=True``): public statistics. Do not put a scaler fitted on
    the private ``X`` in front of the valuator: its mean and scale are a
    non-private release of the training data.

    Parameters
    ----------
    estimator : estimator object, default=None
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
        walked; ``fit`` then needs ``X_val``. ``None`` means
        ``LogisticRegression()``.

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

    batch_permutations : int >= 1, default=16
        Wave size: the permutations of a wave run in parallel, and with
        correlated noise they all use each sample's mean of its releases as of
        the end of the previous wave (a block lower-triangular combination of
        the releases: post-processing, the same privacy). Values depend on it,
        not on ``n_jobs``; 1 gives the paper's sequential algorithm. On
        Dask workers each walks ``batch_permutations / n_workers`` of a
        wave's permutations: with little memory a worker (10^7 parties on
        1 GiB), one each (2 on 2 workers) needs about 39 bytes a party.

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
        Seeds the public randomness: the split, the learning-rate search and
        the permutations. It never seeds the noise.

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
        (``public_model_fitted_privately_``; then private output, a function
        of noisy releases only, covered by ``epsilon_``). None for another
        subspace.

    public_model_fitted_privately_ : bool
        Whether the public model was fitted privately on the training rows.

    public_model_reason_ : str
        Why (the option, or what ``"auto"`` decided and why).

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
        The steps of a wrapped Pipeline before its model, fitted on the
        validation set only (when ``estimator`` is a Pipeline).

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
        "estimator": [HasMethods(["fit", "get_params"]), None],
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
        "batch_permutations": [Interval(Integral, 1, None, closed="left")],
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
        batch_permutations=16,
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
        """``(preprocessor, model)``: clones; the transformers of a Pipeline apart."""
        if self.estimator is None:
            return None, LogisticRegression()
        preprocessor, model = split_pipeline(self.estimator)
        return preprocessor, clone(model)

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
    _dask_input = True  # rows projected on their blocks (skdpval.walks._dask)

    def _check_parameters(self):
        check_semivalue(self.semivalue)
        preprocessor, estimator = self._get_estimator()
        spec = model_spec(estimator, n_samples=1)  # refuses early; l2 below
        check_utility(self.utility, spec.is_classifier)
        if self.threat_model == "joint":
            self._check_joint(estimator, spec)
        check_public_model(self.public_model, self.public_model_share)
        if self.public_model == "private":  # refuses before any data is read
            if not isinstance(self.subspace, str):
                raise ValueError("public_model='private' needs subspace='public' "
                                 "(the public model gives its line).")
            resolve_public_model(self, estimator, n_parties=0, n_val=0, n_params=1,
                                 mu=None if self.noise_multiplier is not None else 0.0)
        return WrappedModel(preprocessor, estimator, spec)

    def _check_joint(self, estimator, spec):
        """Refuse, before any work, what the joint walk does not cover: it
        reads an owner's marginal along the tabulated public line only."""
        if not (isinstance(self.subspace, str) and self.subspace == "public"):
            raise ValueError(
                "threat_model='joint' needs subspace='public' (the walk along the "
                f"public line); got subspace={'None' if self.subspace is None else 'an array'}"
                ". Use threat_model='central' for other subspaces.")
        if self.utility == "accuracy":
            raise ValueError(
                "threat_model='joint' needs a utility the public line tabulates; "
                "utility='accuracy' is not one: use utility='neg_loss' (or "
                "threat_model='central').")

    _planned_release = {**BaseValuator._planned_release, "name": "walk",
                        "n_releases_param": "n_permutations"}

    def _adds_noise(self):
        return not (isinstance(self.noise, str) and self.noise == "none")

    def _party_options(self, model):
        spec = model.spec
        return dict(is_classifier=spec.is_classifier, standardize=self.standardize,
                    center=spec.fit_intercept,
                    scale_targets=(not spec.is_classifier
                                   and spec.loss in TARGET_SCALE_DEGREE),
                    preprocessor=model.preprocessor)

    def _value(self, parties, groups, model, seeds, mechanism, sample_weight=None):
        """The walks: the game, its space, clip norm, noise, learning rate; the
        values in the utility's units (and the walk's statistics)."""
        search_seed, walk_seed = seeds
        sample_weight = check_sample_weight(sample_weight,
                                            len(parties.party_of_sample))
        self.chosen_params_ = public_params(model.estimator, parties.X_val,
                                            parties.y_val, search_seed)
        spec = model_spec(model.estimator, n_samples=len(parties.train_parties),
                          public=self.chosen_params_)
        check_target_domain(spec, parties.y, "y")
        check_target_domain(spec, parties.y_val, "y_val")
        game = self._game(model.estimator, spec, parties, sample_weight)._replace(
            record_level=self._record_level(groups))
        # Before the set-up: it compiles too, and walks on the walk's kernel.
        self._say_if_first_compile(spec, game)
        fit, walk = self._declare_public_model_fit(model.estimator, game, mechanism)
        self.subspace_, line_center, space = self._space(model.estimator, spec, game,
                                                         search_seed, mechanism, fit)
        game = game._replace(space=space)
        self.clip_norm_ = self._clip_norm(game)
        # epsilon=np.inf is noise="none": no releases to average.
        x_tt, use_rolling, _ = noise_schedule(
            self.noise if mechanism.adds_noise else "none", self.n_permutations,
            self.batch_permutations)
        self.q_ = (float(self.q) if self.q != "auto"
                   else auto_burn_in(self.semivalue, self.n_permutations,
                                     self.batch_permutations) if use_rolling
                   else 0.0)
        counted = counted_permutations(self.q_, self.n_permutations)
        warn_if_loo_misses_parties(self.semivalue, int(counted.sum()),
                                   len(parties.train_parties), self.q_,
                                   stacklevel=STEP_TO_USER)
        # Releases on a grid: the sample (or group) slot of a zero-out
        # neighbour releases 0, so its rounded statistic is clamped; a
        # record-level sum's neighbour is one record away (no clamp).
        dimension = game.space.coordinates(game.X.shape[1] * game.T.shape[1])
        if walk is None:
            walk = mechanism.gaussian(
                "walk", WALK, n_releases=self.n_permutations, clip=self.clip_norm_,
                dimension=dimension, zero_neighbour=not game.record_level,
                n_releases_param="n_permutations")
            mechanism.calibrate()
        else:
            self._recalibrate_walk(mechanism, fit, walk, dimension, game)
        noise_std = walk.noise_std
        mechanism.details["release_dimension"] = game.space.release_dimension
        if self.threat_model == "joint":
            declare_joint(
                mechanism,
                billboard=("the private fit of the public model (it gives the "
                           "line), " if self.public_model_fitted_privately_
                           else "") +
                          "every noisy release of every owner (they move the "
                          "walks' states), and the public line, the learning "
                          "rate and the permutations (public)",
                owner_value="the mean of its weighted marginals, each U(z + its "
                            "own clipped step) - U(z) at the walk's state z "
                            "before its step (a function of the billboard)")
        self.learning_rate_ = self._learning_rate(
            game, released_noise_std(noise_std, x_tt, counted,
                                     self.batch_permutations), search_seed)
        # In a list that the walk empties (on Dask it frees the client's copy).
        problem = [self._problem(game, noise_std, line_center)]
        # Past the walk only the shapes of the per-party arrays are read, and
        # the largest semivalue weight: the problem holds the rest, freed
        # with it before the statistics (n = 1e7: 80 MB an array).
        game = game._replace(T=np.empty((0, game.T.shape[1])), row_weights=None,
                             weights=np.max(np.abs(game.weights), initial=0.0,
                                            keepdims=True))
        walked = [run_walks(
            problem, SeededDraws(
                np.random.SeedSequence(walk_seed), mechanism.noise_stream(walk),
                self.n_permutations, len(parties.train_parties)),
            x_tt=x_tt, use_rolling=use_rolling, counted=counted,
            batch_permutations=self.batch_permutations, n_jobs=self.n_jobs,
            verbose=self.verbose, client=walk_client(game.X))]
        del problem
        # Popped: the statistics free the walk's arrays as they go.
        return self._walk_statistics(
            walked.pop(), game, parties, noise_std,
            unseen_noise_factor(x_tt, counted, self.batch_permutations))

    def _say_if_first_compile(self, spec, game):
        """One line when this fit's walk compiles for the first time
        (:class:`~skdpval.exceptions.FirstCompileWarning`), which says which
        walk; for the default's (a binary logistic model along its public
        line) also the first fit's measured time (``FIRST_FIT_SECONDS``)."""
        seconds = None
        if spec.network is not None:
            kernel, what = ((_mlp.line_walk, "a network's walk along its public line")
                            if self.subspace is not None else
                            (_mlp.walk, "a network's full-space walk"))
        elif isinstance(self.subspace, str):
            kernel, what = _subspace._line_walk, "the default walk along a public line"
            if _kernels.kernel_codes(game.loss, game.utility, game.T.shape[1]) == (
                    None, None):
                seconds = FIRST_FIT_SECONDS
        elif self.subspace is None:
            kernel, what = _kernels._walk, "the full-space walk"
        else:
            kernel, what = _subspace._walk, "the walk in a subspace"
        warn_if_first_compile(kernel, what, seconds, stacklevel=STEP_TO_USER + 1)

    def _game(self, estimator, spec, parties, sample_weight):
        """The kernels' view of the valuation."""
        T, T_val, loss, labels_val, total_sum_squares = kernel_targets(
            spec, parties.y, parties.y_val,
            None if parties.classes is None else len(parties.classes),
            self.utility)
        X, X_val = with_intercept(spec, parties.X, parties.X_val)
        weights, weights_val = row_weights(
            spec, parties.y, parties.y_val, parties.classes,
            None if sample_weight is None else sample_weight[parties.rows])
        # Standardised targets (by s) divide the loss's own scale (huber's
        # epsilon) by s, and an L1 term of a squared loss by s as well: the
        # objective is then the original one over s^2 (L2 terms keep alpha).
        target_std = 1.0 if parties.target_scale is None else parties.target_scale[1]
        semivalue = semivalue_weights(self.semivalue, len(parties.train_parties))
        if weights.shape == semivalue.shape and np.array_equal(weights, semivalue):
            # One array for both (ones: Shapley, unweighted rows), held and
            # sent to the walk's workers once (n = 1e7: 80 MB). Read only.
            weights = semivalue
        return Game(X, T, parties.offsets, X_val, T_val, labels_val, loss,
                    UTILITY_CODES[self.utility], spec.loss_param / target_std,
                    spec.l2_per_sample,
                    parties.X.shape[1] + (spec.fit_intercept and spec.penalize_intercept),
                    total_sum_squares, semivalue,
                    spec.l1_per_sample / target_std, weights, weights_val,
                    model_spec(estimator, n_samples=len(X_val),
                               public=self.chosen_params_), False, None, target_std)

    def _subspace_basis(self, estimator, game, mechanism=None, fit=None):
        """The public basis ``(m, n_params)`` with orthonormal rows, or None;
        and where the validation objective's minimum lies along a public
        direction (0 for other bases), which centres the line's table."""
        n_params = game.T.shape[1] * game.X.shape[1]
        if self.subspace is None:
            return None, 0.0
        if isinstance(self.subspace, str):  # "public"
            direction, norm = self._public_direction(estimator, game)
            if fit is not None:
                direction, norm = self._private_direction(direction * norm, game,
                                                          mechanism, fit)
            self.public_model_ = (direction * norm).reshape(game.T.shape[1], -1)
            return direction.reshape(1, -1), norm
        basis = check_basis(self.subspace, n_params,
                            f"{game.T.shape[1]} output(s) x {game.X.shape[1]} "
                            "columns, intercept last")
        return basis, 0.0

    def _space(self, estimator, spec, game, seed, mechanism=None, fit=None):
        """``(subspace_, line_center, space)``: a network's family builds its own
        (:func:`skdpval.families._mlp_space.network_space`), a linear model's is built here."""
        if spec.network is not None:
            if hasattr(game.X, "project_on"):
                raise ValueError("DPDataValuator on Dask input does not support a "
                                 "neural network's walk (it reads whole rows at "
                                 "every step): pass numpy arrays.")
            return network_space(spec.network, game, self.subspace, seed)
        basis, line_center = self._subspace_basis(estimator, game, mechanism, fit)
        return basis, line_center, space_of(basis)

    def _declare_public_model_fit(self, estimator, game, mechanism):
        """Sets ``public_model_fitted_privately_`` and ``public_model_reason_``.

        For a private fit, declares its part and the walk's (one coordinate,
        a provisional clip: the clip norm depends on the fitted line) and
        calibrates: ``(fit, walk)``; else ``(None, None)``.
        """
        self.public_model_ = None
        mu = budget_mu(mechanism)
        if not isinstance(self.subspace, str):
            self.public_model_fitted_privately_ = False
            self.public_model_reason_ = ("the validation model: the walk reads "
                                         "no public line (subspace is not "
                                         "'public')")
            return None, None
        n_parties = len(game.X) if game.record_level else len(game.offsets) - 1
        self.public_model_fitted_privately_, self.public_model_reason_ = (
            resolve_public_model(self, estimator, n_parties=n_parties,
                                 n_val=len(game.X_val), n_params=game.X.shape[1]
                                 * game.T.shape[1], mu=mu))
        mechanism.details["public_model"] = self.public_model_reason_
        if not self.public_model_fitted_privately_:
            return None, None
        n_params = game.X.shape[1] * game.T.shape[1]
        fit = declare_fit(mechanism, game_problem(np.zeros((1, n_params)), game),
                          self.public_model_share)
        walk = mechanism.gaussian(
            "walk", WALK, n_releases=self.n_permutations, clip=1.0, dimension=1,
            zero_neighbour=not game.record_level, n_releases_param="n_permutations",
            share=1.0 - self.public_model_share)
        mechanism.calibrate()
        return fit, walk

    def _recalibrate_walk(self, mechanism, fit, walk, dimension, game):
        """Give the walk's part its clip norm and calibrate again. A part's
        noise over its grid step does not depend on its clip, so the fit's
        noise (already drawn) is unchanged: checked."""
        fit_std = fit.noise_std
        walk.clip = self.clip_norm_
        walk.grid = Grid(self.clip_norm_, dimension, not game.record_level)
        mechanism.calibrate()
        if not np.isclose(fit.noise_std, fit_std, rtol=1e-9, atol=0):
            raise RuntimeError("the private fit's noise changed on recalibration")

    def _private_direction(self, theta_val, game, mechanism, fit):
        """The wrapped objective fitted privately on the training rows from
        ``theta_val``: ``(unit direction, norm)``."""
        problem = game_problem(theta_val.reshape(game.T.shape[1], -1), game)
        theta, mechanism.details["public_model_fit"] = run_fit(problem, fit,
                                                               mechanism)
        norm = float(np.linalg.norm(theta))
        if not np.isfinite(norm) or norm == 0:  # from noisy releases: public
            return (theta_val.ravel() / np.linalg.norm(theta_val),
                    float(np.linalg.norm(theta_val)))
        return theta.ravel() / norm, norm

    def _public_direction(self, estimator, game):
        """The wrapped model's objective minimised on the validation set: a unit vector.

        The model's own loss and penalty (as it would weigh them on the
        ``n_val`` validation rows; an L1 term over the targets' scale, as in
        the walk), minimised from zero by L-BFGS. Only the validation set is
        read.
        """
        n_params = game.T.shape[1] * game.X.shape[1]
        loss = game.loss if game.val_spec.direction_loss is None else (
            game.val_spec.direction_loss)
        objective = _subspace.mean_loss_and_gradient(
            None, game.X_val, game.T_val, loss=loss,
            loss_param=game.loss_param, l2=game.val_spec.l2_per_sample,
            l1=game.val_spec.l1_per_sample / game.target_std,
            row_weights=game.val_weights, n_penalized=game.n_penalized)
        with one_blas_thread():
            theta = minimize(objective, np.zeros(n_params), jac=True,
                             method="L-BFGS-B", options=dict(maxiter=500)).x
        norm = np.linalg.norm(theta)
        if not np.isfinite(norm) or norm == 0:
            raise ValueError(
                "subspace='public': the model fitted on the validation set has "
                "all-zero or non-finite parameters, which define no direction. "
                "Pass a basis array, or subspace=None.")
        return theta / norm, float(norm)

    def _clip_norm(self, game):
        """``clip_norm``, or for "auto" a percentile of validation gradient norms."""
        if self.clip_norm != "auto":
            return float(self.clip_norm)
        norms = np.linalg.norm(self._start_gradients(game), axis=1)
        norms = norms[norms > 0]  # rows the loss is flat at carry no scale
        if len(norms) == 0 or not np.all(np.isfinite(norms)):
            raise ValueError(
                "clip_norm='auto' found no finite, nonzero validation gradient "
                "at the initial model; give clip_norm as a number.")
        clip_norm = float(np.percentile(norms, AUTO_CLIP_PERCENTILE))
        return clip_norm

    def _sgd_pass(self, game, X, T, learning_rate, order):
        """Parameters after one clipped, noiseless SGD pass (in the subspace)."""
        model = dict(loss=game.loss, loss_param=game.loss_param, l2=game.l2,
                     l1=game.l1, n_penalized=game.n_penalized,
                     clip_norm=self.clip_norm_, learning_rate=learning_rate,
                     order=order, row_weights=game.val_weights,
                     walk=self._walk_of(game))
        return game.space.sgd_pass(X, T, **model)

    def _walk_of(self, game):
        """What the fit walks, for the set-up's walks on its kernel
        (:func:`skdpval.kernels._subspace.set_up_problem`)."""
        return dict(utility=game.utility, offsets=game.offsets,
                    record_level=game.record_level,
                    joint=self.threat_model == "joint")

    def _learning_rate(self, game, step_noise, seed):
        """``learning_rate``, or "auto": a search on the validation set, capped by the noise.

        The search runs one-pass SGD of ``n`` steps on one half of the
        validation set and scores the model's own loss on the other half
        (both ways round). With noise, the rate is then capped so that ``n``
        noisy steps move a validation margin by about ``AUTO_MARGIN_NOISE``:
        ``lr * step_noise * sqrt(n) * margin_scale``, ``margin_scale`` the
        root mean square of how far a unit release moves a validation row's
        margins; and so that ``n`` mean validation steps move it by at most
        ``AUTO_MARGIN_DRIFT``. Only the validation set is read. With record-level
        releases party ``j``'s step noise is ``step_noise / n_j`` (its size,
        public), and ``sqrt(n)`` becomes ``sqrt(sum_j 1 / n_j^2)``.
        """
        if self.learning_rate != "auto":
            return float(self.learning_rate)
        n_steps = len(game.offsets) - 1
        rng = np.random.default_rng(seed)
        rows = rng.permutation(len(game.X_val))
        if len(rows) >= 4:
            halves = [(rows[: len(rows) // 2], rows[len(rows) // 2:]),
                      (rows[len(rows) // 2:], rows[: len(rows) // 2])]
        else:  # too few rows to split: train and score on all of them
            halves = [(rows, rows)]
        orders = [rng.choice(train, size=n_steps, replace=len(train) < n_steps)
                  for train, _ in halves]
        scores = np.zeros(len(AUTO_LEARNING_RATES))
        for (_, test), order in zip(halves, orders):
            # All candidates of a half scored in one call.
            thetas = [self._sgd_pass(game, game.X_val, game.T_val, rate, order)
                      for rate in AUTO_LEARNING_RATES]
            scores += self._utilities(game, thetas, test, _kernels.NEG_LOSS)
        scores[~np.isfinite(scores)] = -np.inf
        rate = float(AUTO_LEARNING_RATES[int(np.argmax(scores))])
        if step_noise > 0:
            sizes = np.diff(game.offsets) if game.record_level else np.ones(n_steps)
            margin_scale = self._margin_scale(game)
            cap = AUTO_MARGIN_NOISE / (step_noise * np.sqrt(np.sum(1.0 / sizes**2))
                                       * margin_scale)
            rate = min(rate, float(cap))
            drift = n_steps * self._mean_clipped_step(game) * margin_scale
            if drift > 0:
                rate = min(rate, AUTO_MARGIN_DRIFT / drift)
        return rate

    def _start_gradients(self, game):
        """Each validation row's gradient (in the release space) at the
        walk's initial model: ``(n_val, m)``."""
        settings = dict(loss=game.loss, loss_param=game.loss_param,
                        l2=game.l2, l1=game.l1, n_penalized=game.n_penalized,
                        row_weights=game.val_weights, walk=self._walk_of(game))
        rows = (game.X_val, game.T_val, np.arange(len(game.X_val) + 1))
        theta = game.space.initial_theta(game.T.shape[1], game.X.shape[1])
        return game.space.party_gradients(theta, *rows, **settings)

    def _mean_clipped_step(self, game):
        """Norm of the validation rows' mean clipped gradient at the initial
        model: a walk's drift per step over the learning rate (public)."""
        gradients = self._start_gradients(game)
        norms = np.linalg.norm(gradients, axis=1, keepdims=True)
        with np.errstate(all="ignore"):
            scale = np.where(norms > self.clip_norm_, self.clip_norm_ / norms, 1.0)
        drift = float(np.linalg.norm(np.mean(gradients * scale, axis=0)))
        return drift if np.isfinite(drift) else 0.0

    def _utilities(self, game, thetas, rows, utility):
        """Utility of each of ``thetas`` on the validation ``rows``, as the walk
        computes it."""
        settings = dict(loss=game.loss, utility=utility,
                        loss_param=game.loss_param,
                        total_sum_squares=game.total_sum_squares)
        data = (game.X_val[rows], game.T_val[rows], game.labels_val[rows])
        return game.space.utilities(thetas, *data, **settings)

    def _utility(self, game, theta, rows, utility):
        """Utility of ``theta`` on the validation ``rows``, as the walk computes it."""
        return self._utilities(game, [theta], rows, utility)[0]

    def _margin_scale(self, game):
        """RMS over validation rows of the norm of d(margins) / d(release)."""
        return game.space.margin_scale(game.X_val, game.T.shape[1])

    def _problem(self, game, noise_std, line_center):
        """The walk's inputs. Along a public line the utility is tabulated
        where a walk goes: from 0 to ``line_center`` (the validation
        optimum), widened by half that and by four noise stds of a walk of
        ``n`` steps (``4 lr s sqrt(n)``), and no further than ``lr n C`` (the
        clipped steps' reach) plus those four stds, in at most ``n k / 4`` steps (at
        least 512), so that the table costs at most a quarter of the exact
        walk's utilities; a walk past it reads the utility from the rows, exactly."""
        settings = dict(loss=game.loss, utility=game.utility,
                        loss_param=game.loss_param, l2=game.l2,
                        n_penalized=game.n_penalized, clip_norm=self.clip_norm_,
                        learning_rate=self.learning_rate_,
                        total_sum_squares=game.total_sum_squares,
                        weights=game.weights, l1=game.l1,
                        row_weights=game.row_weights, record_level=game.record_level)
        if self.threat_model == "joint":
            settings["joint"] = True
        n_parties = len(game.offsets) - 1
        return game.space.problem(
            game.X, game.T, game.offsets, game.X_val, game.T_val, game.labels_val,
            **settings,
            line_range=_line_range(line_center, 4 * self.learning_rate_
                                   * noise_std * np.sqrt(n_parties),
                                   self.learning_rate_ * n_parties * self.clip_norm_),
            line_intervals=min(LINE_MAX_INTERVALS,
                               max(512, n_parties * self.n_permutations // 4)))

    def _standard_errors(self, shared_noise, train):
        """``sqrt(marginal_var_ / n_marginals_ + shared_noise)``: the Monte
        Carlo variance and that of the noise the counted permutations share
        (:mod:`skdpval.valuation._uncertainty`; ``shared_noise`` of the ``train``
        parties, None for none); NaN, with a warning, below two counted
        permutations (one marginal has no spread: 0 would claim an exact
        value)."""
        if self.n_marginals_ >= 2:
            # In place, one array of n (the sum's operations, in its order).
            variance = self.marginal_var_ / self.n_marginals_
            if shared_noise is not None:
                if len(train) == len(variance):
                    variance += shared_noise
                else:
                    variance[train] += shared_noise
            return np.sqrt(variance, out=variance)
        remedy = "raise n_permutations" + (" or lower q" if self.q_ > 0 else "")
        warnings.warn(
            f"values_stderr_ is NaN: {self.n_marginals_} permutation was counted past "
            f"the burn-in (q_={self.q_:g} of n_permutations={self.n_permutations}) "
            f"and a standard error needs two; {remedy}.",
            SkdpvalWarning, stacklevel=STEP_TO_USER + 2)  # past _walk_statistics
        return np.full_like(self.marginal_var_, np.nan)

    def _utility_unit(self, game, parties):
        """Factor from the walk's standardised targets to the utility's own units.

        A loss or MSE on targets divided by ``s`` is the original one divided
        by ``s ** degree`` (2 for the squared error and huber); R^2 and
        accuracy have no unit.
        """
        if parties.target_scale is None or self.utility in ("r2", "accuracy"):
            return 1.0
        degree = 2 if self.utility == "neg_mse" else TARGET_SCALE_DEGREE[game.loss]
        return parties.target_scale[1] ** degree

    def _walk_statistics(self, result, game, parties, noise_std, unseen_factor):
        """The marginal statistics and utilities in the utility's units;
        checks the walk stayed finite. Returns the values."""
        values = result.marginal_mean
        self.initial_utility_ = self._utility(
            game, game.space.initial_theta(game.T.shape[1], game.X.shape[1]),
            np.arange(len(game.X_val)), game.utility)
        self.final_utilities_ = result.end_utility
        check_converged(values, self.final_utilities_, self.initial_utility_,
                        self.learning_rate_, self.utility, "walk", "a permutation",
                        stacklevel=STEP_TO_USER + 1, lowest_utility=_lowest_utility_bound(
                            values, game.weights, self.utility))
        unit = self._utility_unit(game, parties)
        self.initial_utility_ *= unit
        self.final_utilities_ = self.final_utilities_ * unit
        self.n_marginals_ = result.n_counted
        train, n_all = parties.train_parties, parties.n_all_parties

        def over_all_parties(per_train):
            """NaN for held-out parties; the array itself when none is (with
            n = 1e7 each copy is 80 MB)."""
            if len(train) == n_all:
                return per_train
            out = np.full(n_all, np.nan)
            out[train] = per_train
            return out

        # With running means, the noise the counted permutations share
        # (from the values and the mean releases: post-processing only). Not
        # under the joint threat model: a joint value does not read its own
        # noisy releases, and the term regresses across every owner's value
        # (a pooled, central release); each owner's standard error is then
        # its own Monte Carlo one.
        shared_noise = None
        if (result.rolling_mean is not None and noise_std > 0
                and result.n_counted >= 2 and self.threat_model != "joint"):
            party_noise_std = mean_release_noise_std(
                noise_std, np.diff(game.offsets) if game.record_level else None)
            shared_noise = shared_noise_variance(
                result.marginal_mean, result.marginal_m2 / result.n_counted**2,
                result.rolling_mean, party_noise_std, unseen_factor)
            shared_noise *= unit**2
        result = result._replace(rolling_mean=None)
        values = values * unit if unit != 1.0 else values
        self.marginal_mean_ = over_all_parties(values)
        # In place: the walk's array (m2 / n * unit**2, in that order).
        variance = result.marginal_m2
        variance /= result.n_counted
        variance *= unit**2
        self.marginal_var_ = over_all_parties(variance)
        self.values_stderr_ = self._standard_errors(shared_noise, train)
        return values
