"""DPLabelQuality: a private label-quality score, one Gaussian release per party."""

from numbers import Real

import numpy as np
from sklearn.base import _fit_context, is_classifier, is_regressor
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..families import call_on_private_data, family_of
from ..privacy import (LABEL_SCORE, PRIVACY_CONSTRAINTS, THREAT_MODEL_CONSTRAINT,
                       declare_joint, mean_release_noise_std, share_privacy_docs,
                       with_threat_model_doc)
from ..walks import map_row_blocks
from ._base import STEP_TO_USER, BaseValuator
from ._family_choice import (check_candidates, choose_candidate, fall_back_on_dask,
                             is_dask_rows, is_default_network)
from ._noisy_share import noisy_share, reference_scores
from ._public_model import (PUBLIC_MODEL_CONSTRAINTS, PlannedLayout, budget_mu,
                            check_public_model, declare_fit, document_public_model,
                            fit_steps, keep_private_fit, labels_model,
                            labels_problem, layout_inputs, resolve_public_model,
                            run_fit)
from ._validation_folds import ValidationFolds, fit_on_validation

_FLOAT32_MAX = float(np.finfo(np.float32).max)
# Under the joint threat model a score is not clipped, only kept finite (a
# class the model never saw scores -inf), with room for a group's sum.
_JOINT_SCORE_BOUND = 1e300


# A regressor's score is its absolute residual, capped at this many residual
# standard deviations of the public model on the validation set (measured:
# benchmarks/quality.py --suite regression).
REGRESSION_CAP_SDS = 3.0

# A privately fitted classifier's margins are scaled so that the median
# absolute margin of the validation rows is this many clips: most scores
# then saturate, which is what a release under heavy noise can carry (the
# noisy rows' fit has small margins; unscaled, its LF fell below the
# validation model's although its accuracy was higher. Measured on
# sep_0.8 and cps1988, 3 seeds: 1, 2, 4 clips and a sign release; 2 and 4
# tied within 0.01 of the sign, 1 clip 0.02-0.04 lower).
PRIVATE_MARGIN_CLIPS = 3.0


def _residual_scale(model, parties):
    """Root mean squared residual of ``model`` on the validation set (public)."""
    residuals = parties.y_val - model.predict(parties.X_val)
    scale = float(np.sqrt(np.mean(residuals**2)))
    if not np.isfinite(scale):
        raise ValueError("DPLabelQuality: the model fitted on the validation set "
                         "predicts non-finite values on it.")
    if scale == 0:  # a perfect fit: fall back on the targets' own spread
        scale = float(np.std(parties.y_val)) or 1.0
    return scale


@with_threat_model_doc
@document_public_model
@share_privacy_docs
class DPLabelQuality(PlannedLayout, BaseValuator):
    """Private label-quality score: how well each label fits a public model.

    A clone of ``estimator`` is fitted on the validation set only (public
    data); with ``public_model="private"`` (or ``"auto"`` on a large
    training set) it is then refitted on the training rows with
    differential privacy, from that start, spending a small share of the
    budget (``public_model_``). Each training party's score is its clipped
    margin under the public model, averaged over its rows for a group:

    - binary classifier: ``y * f(x)`` with ``y`` in {-1, +1} and ``f`` the
      decision function;
    - multiclass: the true class's score minus the best other class's;
    - regressor: minus the absolute residual ``|y - f(x)|`` in units of
      ``REGRESSION_CAP_SDS`` (3) root-mean-square residuals of the public
      model on the validation set (``residual_scale_``), times ``clip``: the
      clip then caps residuals at 3 of those sds;

    each clipped to ``[-clip, clip]`` (a regressor's to ``[-clip, 0]``).
    The score is released **once** per party with Gaussian noise of std
    ``sensitivity / mu``, ``mu`` calibrated exactly to ``(epsilon,
    delta)``. A classifier's score has sensitivity ``clip`` under zero-out
    adjacency (a party's slot releasing pure noise) and ``2 clip`` under
    replace-one. A regressor's is released centred, ``score + clip / 2`` in
    ``[-clip / 2, clip / 2]``, so its sensitivity is ``clip / 2`` under
    zero-out and ``clip`` under replace-one (the centring is undone after
    the noise, a public shift). Low scores point at bad labels. For
    groups with ``privacy_unit="record"`` (the default) the noise is added
    to the sum of a group's clipped (and centred) scores (sensitivity that
    of one record) and the sum divided by the group's size ``n_g``
    (public): a group's score has noise std ``sensitivity / (mu n_g)``, and
    the guarantee is per record.

    It is not a semivalue: it says how well a label agrees with a model
    trained on the validation set, not what a party adds to a model. Use it
    to find bad labels, where it spends the whole budget on the one number
    that matters and comes close to the best any mechanism can do
    (:func:`skdpval.metrics.detection_auc_limit`). Use
    :class:`~skdpval.DPDataValuator` for pricing and attribution, which need
    the Shapley value: of data sets (groups) under record-level privacy,
    which keep their no-noise ranking; a single point's private value does
    not (:func:`skdpval.metrics.value_fidelity`).

    Parameters
    ----------
    estimator : estimator object, list of them, or None, default=None
        The model fitted on the validation set: any scikit-learn classifier
        with ``decision_function`` or ``predict_proba`` (its log), or any
        regressor. A list: candidates, one chosen on the validation rows
        (public, no privacy spent): each one's cross-validated log loss (a
        regressor's squared error) on them, in order, a later candidate
        replacing the current choice only when its mean loss is lower by
        more than one standard error of the rows' paired differences (the
        one-standard-error rule), and only with at least 100 validation
        rows (so that a flexible model does not win by chance on few rows;
        ``model_choice_``). ``None`` means the candidates
        ``[LogisticRegression(), MLPClassifier((64,), learning_rate_init=0.01,
        max_iter=50)]`` (the network's fixed budget of epochs: longer
        training overfits a few hundred validation rows).

    %(epsilon)s
    %(delta)s
    %(noise_multiplier)s
    clip : float > 0, default=1.0
        Scores are clipped to ``[-clip, clip]`` (the sensitivity).

    privacy_unit : {"record", "group"}, default="record"
        Whom the guarantee protects when ``fit`` gets ``groups`` (without
        groups the unit is the sample either way): one record in any group
        (the noise is added to the group's sum of clipped scores, then
        divided by its size, which is public), or a whole group (its mean
        clipped score noised at sensitivity ``clip``). See
        :class:`~skdpval.DPDataValuator`.

    threat_model : {"central", "joint"}, default="central"
        %(threat_model)s
        Here an owner's value is its own score (its label's margin, or a
        regressor's scaled residual) under the public model, delivered to
        it without noise and not clipped (the clip bounds a release's
        sensitivity, and nothing is released: a clip would only tie the
        scores it reaches). With the model fitted on the validation set
        the billboard is empty: the other owners' values do not depend on
        its data at all (``epsilon_`` is 0) With ``public_model="private"``
        the billboard is that private fit, which takes the whole budget.

    standardize : bool, default=True
        Scale the features with the validation set's mean and std (public)
        before fitting and scoring. A scaler fitted on the private data in
        front of this estimator would leak.

    validation_fraction : float in (0, 1), default=0.2
        Fraction of the parties held out at random as the validation set
        when ``fit`` gets no ``X_val`` (those are then not protected).

    classes : array-like or None, default=None
        Class labels of a classifier; ``None`` takes them from ``y_val``.

    %(public_model)s
        A privately fitted classifier's margins are scaled so that the
        validation rows' median absolute margin is 3 clips
        (``margin_scale_``).

    %(public_model_share)s

    random_state : int, RandomState instance or None, default=None
        Public randomness: the split, an unset ``random_state`` of the
        estimator and the order of tied scores in ``rank_``. It never seeds
        the noise.

    %(noise_seed)s

    Attributes
    ----------
    values_ : ndarray of shape (n_samples,) or (n_groups,)
        Noisy score of each party; NaN for parties held out as the
        validation set.

    rank_ : ndarray of shape (n_samples,) or (n_groups,)
        1 for the highest score; 0 for held-out parties. Scores lie on a
        grid and tie often (all the more at small noise): tied scores take
        their ranks in a random order drawn from ``random_state``, not in
        the rows' order, so that a file sorted by date or by label does
        not decide which of them rank last (or are dropped by a filter).

    values_stderr_ : ndarray of shape (n_samples,) or (n_groups,)
        Standard error of each score: the noise std of its release (public;
        for a record-level group, that of its sum over its size ``n_g``), 0
        without noise; NaN for held-out parties. It covers the noise only:
        the score before the noise is exact for ``estimator_``, the model
        fitted on the validation set.

    estimator_ : estimator object
        The clone of ``estimator`` (the chosen candidate) fitted on the
        validation set.

    model_choice_ : dict or None
        The choice among the candidates (None for one estimator): their
        names, mean cross-validated losses, each later candidate's paired
        difference and its standard error, the chosen one (also in
        ``privacy_report_["details"]["model_choice"]``).

    public_model_ : estimator object
        The model whose margins are scored: ``estimator_``, or its private
        refit on the training rows (``public_model_fitted_privately_``). The
        refit is private output (a function of noisy releases only), covered
        by ``epsilon_``; its coefficients are in the standardised features'
        units (as ``estimator_``'s).

    public_model_fitted_privately_ : bool
        Whether ``public_model_`` is the private fit on the training rows
        (``"auto"`` may make that fit and not keep it: its share of the
        budget is spent all the same, ``public_model_reason_`` says why).

    public_model_reason_ : str
        Why (the option, or what ``"auto"`` decided and why).

    margin_scale_ : float
        Factor on a classifier's margins before clipping: 1, or for a
        privately fitted public model ``3 clip`` over the median absolute
        margin of the validation rows (public), so that most scores saturate.

    classes_ : ndarray of shape (n_classes,)
        Class labels (classifiers).

    groups_ : ndarray of shape (n_groups,)
        Sorted group labels, when ``fit`` got ``groups``.

    sample_values_ : ndarray of shape (n_samples,)
        Each sample's group score, when ``fit`` got ``groups``.

    epsilon_, delta_ : float
        The guarantee of a party's release (``inf`` without noise).

    noise_multiplier_ : float
        Noise std divided by the zero-out sensitivity (``1 / mu``):
        ``clip`` for a classifier, ``clip / 2`` for a regressor; record-level,
        that of a group's sum of scores (its mean's is that over ``n_g``).

    privacy_unit_ : {"sample", "group", "record"}
        Whom ``epsilon_`` protects.

    threat_model_ : {"central", "joint"}
        The threat model of the fit. Under ``"joint"``, ``values_`` (and every
        per-party attribute) is the curator's view: deliver each owner its
        own value with :meth:`owner_value`; ``rank_`` refuses.

    n_releases_ : int
        Releases per party: 1.

    privacy_report_ : dict
        The guarantee in full (as :class:`~skdpval.DPDataValuator`'s).

    residual_scale_ : float
        Root mean squared residual of ``estimator_`` on the validation set
        (regressors only; public).

    noisy_share_ : NoisyShare
        How many labels are bad (classifiers, central threat model): the
        estimated ``share`` of the valued parties' labels that are flipped,
        a 90% interval ``low``-``high`` and ``n_noisy``, the estimated
        number (the private counterpart of cleanlab's
        ``num_label_issues``). Post-processing: it reads the released
        scores, the validation rows and the public model only, and spends
        no privacy. ``share`` is the weight of the flipped law in the
        releases' law, fitted by maximum likelihood: the mixture of what the
        validation rows score with their own label and with another one,
        convolved with the release noise (its std is public); with groups,
        or without noise, the releases' mean is compared with those scores'
        means instead. Both assume a flipped label drawn uniformly among the
        other classes; the interval holds every share that class-dependent
        flip rates could give, plus the sampling spread of the releases and
        of the validation rows (a bootstrap from ``random_state``).
        ``share`` is NaN (interval ``[0, 1]``) when the model does not
        score a flipped label lower than a clean one on the validation
        rows. With groups, the mean over the groups of each one's share of
        bad labels. ``benchmarks/noise_rate.py`` measures coverage and
        error (``benchmarks/results/noise_rate.jsonl``).

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    DPDataValuator : Private semivalues (Shapley, Banzhaf, ...).
    skdpval.metrics.detection_auc_limit : The best AUC any mechanism reaches.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skdpval import DPLabelQuality
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> y_noisy = y.copy()
    >>> y_noisy[:50] = 1 - y_noisy[:50]            # 50 flipped labels
    >>> scorer = DPLabelQuality(epsilon=3.0, random_state=0)
    >>> scorer.fit(X[:400], y_noisy[:400], X_val=X[400:], y_val=y[400:])
    DPLabelQuality(epsilon=3.0, random_state=0)
    >>> scorer.values_.shape, round(scorer.noise_multiplier_, 3)
    ((400,), 1.275)
    >>> bool(scorer.values_[:50].mean() < scorer.values_[50:].mean())
    True
    """

    _dask_input = True  # rows scored on their blocks (skdpval.walks._dask)

    _parameter_constraints: dict = {
        **PRIVACY_CONSTRAINTS,
        "estimator": [HasMethods(["fit", "predict"]), list, None],
        "clip": [Interval(Real, 0.0, None, closed="neither")],
        "privacy_unit": [StrOptions({"record", "group"})],
        "threat_model": THREAT_MODEL_CONSTRAINT,
        "standardize": ["boolean"],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "classes": ["array-like", None],
        "random_state": ["random_state"],
        **PUBLIC_MODEL_CONSTRAINTS,
    }

    def __init__(self, estimator=None, *, epsilon="default", delta="auto",
                 noise_multiplier=None, clip=1.0, privacy_unit="record",
                 threat_model="central", standardize=True, validation_fraction=0.2,
                 classes=None, public_model="auto", public_model_share=0.05,
                 random_state=None, noise_seed=None):
        self.estimator = estimator
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.clip = clip
        self.privacy_unit = privacy_unit
        self.threat_model = threat_model
        self.standardize = standardize
        self.validation_fraction = validation_fraction
        self.classes = classes
        self.public_model = public_model
        self.public_model_share = public_model_share
        self.random_state = random_state
        self.noise_seed = noise_seed

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_val=None, y_val=None, groups=None):
        """Fit the model on the validation set, then score and release each party.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples (private). A Dask array or data frame is
            scored where its blocks live (``X_val`` in memory); the noise
            is drawn in the client (also that of a private fit of the
            public model, whose steps are summed on the blocks). The values
            equal the numpy path's bit for bit (the user guide's "Data held
            by Dask").
        y : array-like of shape (n_samples,)
            Their labels or targets.
        X_val, y_val : array-like, default=None
            The validation set (public). When omitted, a
            ``validation_fraction`` of the parties is held out instead.
        groups : array-like of shape (n_samples,), default=None
            Group of each sample: each group is one party, scored by the mean
            of its rows' clipped scores and released once.

        Returns
        -------
        self : object
        """
        return self._fit(X, y, X_val, y_val, groups)

    def _check_parameters(self):
        """The candidates (a list: None gives the default two), checked."""
        candidates = check_candidates(self.estimator)
        for estimator in candidates:
            if not (is_classifier(estimator) or is_regressor(estimator)):
                raise TypeError(
                    f"DPLabelQuality scores labels with a classifier or a "
                    f"regressor; estimator={type(estimator).__name__} is neither.")
        check_public_model(self.public_model, self.public_model_share)
        if self.public_model == "private":  # refuses before any data is read
            for estimator in candidates:
                resolve_public_model(
                    self, estimator, n_parties=0, n_val=0, n_params=1,
                    mu=None if self.noise_multiplier is not None else 0.0)
        return candidates

    def _party_options(self, candidates):
        return dict(is_classifier=is_classifier(candidates[0]),
                    standardize=self.standardize)

    def _value(self, parties, groups, candidates, seeds, mechanism):
        """The model chosen on the validation rows, the public model, each
        party's clipped score and its one release."""
        model_seed, = seeds
        # The same out-of-fold fits serve the family choice and the keep rule.
        folds = ValidationFolds(parties.X_val, parties.y_val, model_seed)
        chosen, self.model_choice_ = choose_candidate(candidates, folds)
        if self.public_model == "private" and self.model_choice_ is not None:
            chosen = fall_back_on_dask(candidates, chosen, self.model_choice_,
                                       parties, lambda f: f.private_fit_on_dask,
                                       "private fit")
        estimator = candidates[chosen]
        if self.model_choice_ is not None:
            mechanism.details["model_choice"] = self.model_choice_
        self.estimator_ = fit_on_validation(estimator, parties.X_val, parties.y_val,
                                            model_seed, "DPLabelQuality",
                                            stacklevel=STEP_TO_USER,
                                            budgeted=self.estimator is None
                                            and is_default_network(estimator))
        record_level = self._record_level(groups)
        # A private fit of the public model is a part of its own, declared
        # before the release it serves; the two share mu^2.
        problem = self._public_model_problem(estimator, parties, record_level,
                                             mechanism, model_seed)
        self._layout_inputs_["candidate"] = chosen
        joint = self.threat_model == "joint"
        share = 1.0
        if problem is not None:
            # Under the joint threat model the fit is the whole billboard:
            # the scores go to their owners without noise.
            fit = declare_fit(mechanism, problem.theta0.size,
                              1.0 if joint else self.public_model_share,
                              fit_steps(family_of(estimator)))
            share = 1.0 - self.public_model_share
        # A regressor's scores lie in [-clip, 0]: released centred, in
        # [-clip/2, clip/2], their zero-out sensitivity is clip/2.
        centre = 0.0 if is_classifier(self.estimator_) else -self.clip / 2
        # The released statistic: a party's (centred) score, or at record
        # level its sum of them, whose neighbour is one record away (no clamp).
        if joint:
            mechanism.calibrate()
            # Each owner's score reads its own rows and the public model only
            # (the billboard: empty, or the private fit), and goes to that
            # owner alone, without noise.
            declare_joint(
                mechanism,
                billboard=("the public model, fitted privately on the training "
                           "rows (its noisy gradient steps)" if problem is not None
                           else "empty: the public model is fitted on the "
                                "validation set (public)"),
                owner_value="its own score under the public model, exact and "
                            "not clipped")
        else:
            score = mechanism.gaussian("label score", LABEL_SCORE, n_releases=1,
                                       clip=self.clip - abs(centre), dimension=1,
                                       zero_neighbour=not record_level, share=share)
            mechanism.calibrate()
        self.public_model_ = self.estimator_
        mechanism.details["public_model"] = self.public_model_reason_
        if problem is not None:
            theta, mechanism.details["public_model_fit"] = run_fit(
                family_of(estimator), problem, fit, mechanism)
            fitted = labels_model(self.estimator_, estimator, theta, problem)
            problem = None  # its targets and weights (n numbers each): freed
            classifier = is_classifier(fitted)
            keep, self.public_model_reason_, rule = keep_private_fit(
                self, estimator, fitted.predict(parties.X_val) if classifier
                else None, folds, fitted.predict_proba(parties.X_val)
                if classifier and hasattr(fitted, "predict_proba") else None)
            mechanism.details["public_model"] = self.public_model_reason_
            mechanism.details["public_model_fit"].update(kept=keep, rule=rule)
            self.public_model_fitted_privately_ = keep
            if keep:
                self.public_model_ = fitted
        if not is_classifier(self.estimator_):
            self.residual_scale_ = _residual_scale(self.public_model_, parties)
        self.margin_scale_ = self._margin_scale(parties)
        scores = self._party_scores(parties, record_level, centre)
        self.__dict__.pop("noisy_share_", None)  # an earlier fit's
        references = None
        if is_classifier(self.estimator_) and not joint:
            # What a clean and a flipped label score (public): for noisy_share_.
            references = reference_scores(
                self, parties.X_val, parties.y_val, estimator, model_seed,
                score.grid.gamma if score.noise_std > 0 else 0.0)
        if joint:
            mechanism.details["release"] = (
                "to each owner alone, its own score (its label's margin under the "
                "public model), without noise or clip")
        else:
            mechanism.details["release"] = self._release_statement(record_level)
            # One release per party on the grid: gamma (rint(score / gamma) + m).
            scores = mechanism.release(score, scores)
        if record_level:  # the mean of the noisy sum: post-processing
            scores = scores / np.diff(parties.offsets)
        # A score's only randomness is its noise (public std; a record-level
        # group's mean carries that of its sum over its size).
        self.values_stderr_ = np.full(parties.n_all_parties, np.nan)
        self.values_stderr_[parties.train_parties] = 0.0 if joint else (
            mean_release_noise_std(score.noise_std,
                                   np.diff(parties.offsets) if record_level else None))
        scores += centre  # in place: the released copy (an array of n)
        if references is not None:  # post-processing of the releases
            # A release is one row's score plus noise of a public law only
            # when a party is one row and there is noise: then the releases'
            # whole law is fitted; else their mean is (see noisy_share).
            one_row = len(parties.offsets) - 1 == len(parties.X)
            self.noisy_share_ = noisy_share(
                scores, *references, parties.y_val, model_seed,
                noise_std=score.noise_std if one_row and score.noise_std > 0 else None)
        return scores

    def _public_model_problem(self, estimator, parties, record_level, mechanism,
                              seed):
        """Sets ``public_model_fitted_privately_`` and ``public_model_reason_``;
        the private fit's problem, or None to keep the validation model."""
        n_parties = len(parties.X) if record_level else len(parties.offsets) - 1
        classifier = is_classifier(self.estimator_)
        n_outputs = (len(self.classes_) if classifier and len(self.classes_) > 2
                     else 1)
        try:
            family = family_of(estimator)
        except TypeError:  # a model no family reads: no private fit
            family = None
        self._layout_inputs_ = layout_inputs(
            len(parties.X_val), n_outputs * (parties.X.shape[1] + 1) if family is None
            else family.n_fit_params(estimator, parties.X.shape[1], n_outputs))
        fits, self.public_model_reason_ = resolve_public_model(
            self, estimator, n_parties=n_parties, mu=budget_mu(mechanism),
            share=1.0 if self.threat_model == "joint" else None,
            dask=is_dask_rows(parties), n_val=self._layout_inputs_["n_val"],
            n_params=self._layout_inputs_["n_params"])
        self.public_model_fitted_privately_ = fits
        if not fits:
            return None
        return labels_problem(self.estimator_, estimator, parties,
                              record_level=record_level, seed=seed)

    def _margin_scale(self, parties):
        """1, or for a privately fitted classifier ``PRIVATE_MARGIN_CLIPS clip``
        over the median absolute margin of the validation rows (public)."""
        if not (self.public_model_fitted_privately_ and is_classifier(self.estimator_)):
            return 1.0
        self.margin_scale_ = 1.0
        with np.errstate(all="ignore"):
            margins = np.abs(self._row_scores(parties.X_val, parties.y_val))
        finite = margins[np.isfinite(margins)]
        median = float(np.median(finite)) if len(finite) else 0.0
        return PRIVATE_MARGIN_CLIPS * self.clip / median if median > 0 else 1.0

    def _party_scores(self, parties, record_level=False, centre=0.0):
        """Each training party's mean clipped score minus ``centre`` (before
        noise), or with ``record_level`` the sum of its rows' clipped scores
        minus ``centre`` each; under the joint threat model not clipped but
        kept within ``+-_JOINT_SCORE_BOUND`` (finite).

        A score that is not a number (an overflow in a private row) counts
        as 0, the middle of the range, and overflows raise no warning: either
        would tell a private row without noise. For the same reason the
        features are first clipped to the float32 range, past which models
        that compute in float32 (trees, forests) raise an error.
        """
        row_scores = map_row_blocks(self._clipped_row_scores, parties.X,
                                    parties.y)
        row_scores -= centre
        if len(parties.offsets) - 1 == len(parties.X):
            # One row a party: its sum and its mean are its row's score (no
            # more arrays of n).
            return row_scores
        sums = np.add.reduceat(row_scores, parties.offsets[:-1])
        return sums if record_level else sums / np.diff(parties.offsets)

    def _clipped_row_scores(self, X, y):
        """The rows' scores, not-a-number as 0, clipped (see
        :meth:`_party_scores`). The rows come in aligned blocks of
        ``SCORE_BLOCK_ROWS``, in memory and on Dask alike (a model's BLAS
        call may round a row differently in a block of another size)."""
        X = np.clip(X, -_FLOAT32_MAX, _FLOAT32_MAX)
        with np.errstate(all="ignore"):
            row_scores = call_on_private_data(
                lambda: self._row_scores(X, y), self._scoring_failed,
                catch=Exception)
        # The clip bounds a release's sensitivity; under the joint threat
        # model no score is released to anyone but its owner, and a clip
        # would only tie the scores it reaches: they are kept finite only.
        bound = _JOINT_SCORE_BOUND if self.threat_model == "joint" else self.clip
        return np.clip(np.nan_to_num(row_scores, nan=0.0), -bound, bound)

    def _scoring_failed(self, error):
        return (f"{type(self.public_model_).__name__} failed to score the private "
                f"rows ({type(error).__name__}); its message is not shown, since "
                "it may quote private values. Check that the estimator accepts "
                "every value the training features can take.")

    def _row_scores(self, X, y, model=None):
        """Margin of each row's label under ``model`` (``public_model_``),
        before clipping."""
        model = self.public_model_ if model is None else model
        if not is_classifier(model):
            # The residual in units of REGRESSION_CAP_SDS residual sds of the
            # public model on the validation set, so that clip caps it there.
            return -self.clip * np.abs(y - model.predict(X)) / (
                REGRESSION_CAP_SDS * self.residual_scale_)
        if hasattr(model, "decision_function"):
            scores = np.asarray(model.decision_function(X), dtype=np.float64)
        else:
            with np.errstate(divide="ignore"):
                scores = np.log(model.predict_proba(X))
        scores = scores * self.margin_scale_
        seen = np.asarray(model.classes_, dtype=np.int64)
        if scores.ndim == 1:  # binary: the score of the second class
            signed = np.where(y == seen[1], 1.0, -1.0)
            return np.where(np.isin(y, seen), signed * scores, -np.inf)
        # Scores of every class (a class the model never saw scores -inf).
        per_class = np.full((len(X), len(self.classes_)), -np.inf)
        per_class[:, seen] = scores
        rows = np.arange(len(X))
        own = per_class[rows, y]
        per_class[rows, y] = -np.inf
        with np.errstate(invalid="ignore"):
            margin = own - per_class.max(axis=1)
        return np.where(np.isnan(margin), -np.inf, margin)

    def _release_statement(self, record_level):
        """What one release is, in words, for the report."""
        if record_level:
            return ("one score per group: the sum of its records' clipped (and, "
                    "for a regressor, centred) scores plus Gaussian noise of std "
                    "noise_std, divided by its size n_g (public)")
        if is_classifier(self.estimator_):
            return ("one clipped score per party: the margin of its label under "
                    "the public model, in [-clip, clip]")
        return ("one clipped score per party: minus the absolute residual of its "
                "target under the public model, in [-clip, 0], "
                "released centred (plus clip/2: sensitivity clip/2 under zero-out, "
                "clip under replace-one)")
