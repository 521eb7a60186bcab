"""The public model fitted privately on the training rows (``public_model``).

Users of valuation and cleaning hold many noisy training rows and few clean
validation rows. A model fitted to the validation rows alone is then weak;
this module fits the wrapped model's own objective (its loss and penalty, as
:class:`~skdpval.families.Family` of the model reads it) on the *training* rows with differential
privacy, and the valuators use that model where they used the validation one
(its margins, its direction).

The fit is full-batch noisy gradient descent, warm-started from the model
fitted on the validation set. Each of ``n_steps`` steps releases

    S~_t = gamma (rint(S_t / gamma) + m_t),
    S_t = u sum_j rint(clip(g_j(theta_t), C - u sqrt(D)) / u)

the sum over parties of each party's clipped gradient (its mean loss plus the
penalty), each rounded to the fixed-point step ``u = C 2**-b`` (``b = 32``
below 2**21 parties, then ``53 - bit_length(n)``, so that the sum is also
exact as a float64) and summed
exactly in 64-bit integers (:func:`fixed_point_unit`: the sum is the same
however the rows are split, in memory or over Dask blocks; the clip shrunk by
``u sqrt(D)``, ``D`` the parameters, keeps each rounded gradient within
``C``), with ``m_t`` rounded Gaussian integers on the grid ``gamma``
(:class:`~skdpval.privacy._grid.Grid`), drawn by the fit's
:class:`~skdpval.privacy._mechanism.PrivacyMechanism` (stream kind ``PUBLIC_FIT``),
and steps ``theta_{t+1} = theta_t - f P^-1 S~_t / n`` (``f =
FIT_STEP_FACTOR``), ``P`` a public preconditioner: the loss's curvature bound
times the validation rows' second moments (shrunk toward their mean eigenvalue)
plus the L2 penalty, so that ``FIT_STEPS = 20`` steps go as far as 100 plain
ones (a step ``1/L``, ``L`` the curvature bound times the moments' largest
eigenvalue) went, with less noise a step (``mu_fit`` fixed: a step's noise std
scales with ``sqrt(n_steps)``). Under zero-out adjacency one party's slot
changes ``S_t`` by at most ``C``; after rounding, by the padded sensitivity
``gamma Delta`` (``Delta = 2**j + sqrt(d)`` grid units). So the ``n_steps``
adaptive releases are exactly ``mu_fit``-GDP per party with
``mu_fit = sqrt(n_steps) gamma Delta / s``. The fit is one part of the
valuator's mechanism with the share ``public_model_share`` of ``mu^2``
(``mu_fit^2 = share mu^2``), the valuator's own release(s) the other part
with the rest, so that the whole fit is ``sqrt(mu_fit^2 + mu_release^2) =
mu``-GDP (Dong, Roth and Su 2022, Corollary 3.3), the same per-party total
as with the validation model; the mechanism calibrates both and reports
both (``privacy_report_["parts"]``). The model returned is the mean of the
iterates of the second half (Polyak averaging: post-processing of the
releases).

Privacy units: with groups and ``privacy_unit="record"`` every record is a
party of the fit (each record's gradient clipped: a record's sensitivity);
with ``"group"`` a group is (its mean gradient clipped once).

Where the fit pays (``public_model="auto"``): :func:`auto_fits_privately`.
The family of the wrapped model gives the fit's objective, its clipped
sums and its parameter layout (:class:`~skdpval.families.Family`); the noise
is the mechanism's.
"""
import math
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..families import family_of
from ..privacy import PUBLIC_FIT, WALK, PrivacyMechanism, gdp_mu
from ._family_choice import choose_model, data_candidates
from ._keep_rule import design_labels, keep_private_fit
from ._validation_folds import ValidationFolds

# choose_model and data_candidates: DPDataValuator's, through this module.
__all__ = ["choose_model", "data_candidates"]

PUBLIC_MODEL_OPTIONS = ("auto", "validation", "private")

# The fit's settings. Clip and share: the issue 33 prototype's. Steps, step
# factor and shrinkage: measured on the regime suite (2-seed sweep in
# benchmarks/results/quality_regime_fit_sweep.jsonl: plain 25 steps lost
# 0.02 of LF, 10-16 preconditioned ones up to 0.01; quality_regime_fit.jsonl:
# these settings against 100 plain steps on the same noise, 5 seeds, +0.002).
FIT_STEPS = 20
FIT_CLIP = 2.0
DEFAULT_SHARE = 0.05
FIT_STEP_FACTOR = 1.5
FIT_SHRINKAGE = 0.1

# "auto" fits privately when the fit's signal-to-noise index (below) reaches
# this and the training set is several times the validation set. Measured
# (benchmarks/quality.py --suite regime_rule: four regime sets subsampled to
# 250-20,000 rows, n_val 50, eps 1 and 3, 3 seeds, DPLabelQuality private
# minus validation LF): -0.67 to -0.11 at index <= 3, -0.17 to +0.15 between
# 3 and 5, +0.03 to +0.15 from 7 on.
# The index is normalised at 100 steps, the fit's count when the thresholds
# were measured, so that the rule's decisions stay those measured.
AUTO_MIN_INDEX = 6.0
AUTO_MIN_TRAIN_OVER_VAL = 5
AUTO_INDEX_STEPS = 100


def fit_noise_index(n_parties, mu_fit, n_params, n_steps=AUTO_INDEX_STEPS):
    """``n mu_fit / sqrt(n_steps d)``: how many noise stds a coordinate of the
    mean gradient's sum stands above the noise, per unit clip, over
    ``n_steps`` releases (public)."""
    return float(n_parties * mu_fit / math.sqrt(n_steps * n_params))


def auto_fits_privately(n_parties, n_val, n_params, mu, share, indexed=True):
    """The ``public_model="auto"`` rule, from public quantities only.

    Fit privately when the fit's noise index
    (:func:`fit_noise_index` at ``mu_fit = sqrt(share) mu``) is at least
    ``AUTO_MIN_INDEX`` and the training parties number at least
    ``AUTO_MIN_TRAIN_OVER_VAL`` times the validation rows; otherwise the
    validation model is kept (small training sets: the fit's noise would
    swamp what the rows add). Without noise (``mu`` infinite) the private
    fit is a plain fit on the training rows: it pays when the training set
    is larger than the validation set by that factor. The index's threshold
    was measured for the preconditioned descent of linear models; a family
    with its own descent (``indexed`` False: a network's) is fitted on the
    size condition alone, and :func:`~skdpval.valuation._keep_rule.keep_private_fit`
    then decides on the validation rows whether the fit is kept.
    """
    if n_parties < AUTO_MIN_TRAIN_OVER_VAL * n_val:
        return False
    if not np.isfinite(mu) or not indexed:
        return True
    return fit_noise_index(n_parties, math.sqrt(share) * mu, n_params) >= AUTO_MIN_INDEX


def check_public_model(public_model, share):
    """Errors for a misspelt option or a share outside (0, 1), before any work
    (the constraints catch them too; this names both in one message)."""
    if not (isinstance(public_model, str) and public_model in PUBLIC_MODEL_OPTIONS):
        raise ValueError(f"public_model must be one of {PUBLIC_MODEL_OPTIONS}, got "
                         f"{public_model!r}.")
    if not (isinstance(share, (int, float)) and 0.0 < share < 1.0):
        raise ValueError(f"public_model_share must lie in (0, 1) (the share of "
                         f"mu^2 spent on the fit), got {share!r}.")


# --- the noisy descent -------------------------------------------------------

# The per-step sums are exact: each party's clipped gradient is rounded to a
# fixed-point grid of step ``unit = clip 2**-b`` and the integers are summed
# in int64. Integer addition is associative, so the sum does not depend on
# how the rows are split (in memory, or over Dask chunks in any order): both
# paths release the same bits. ``b`` is FIT_SUM_BITS while the sum stays
# below 2**53 (each party adds at most ``2**b`` a coordinate: ``n 2**b <
# 2**53``), so that it also converts to float64 exactly before its release.
FIT_SUM_BITS = 32
_MIN_SUM_BITS = 16


def fixed_point_unit(clip, n_parties):
    """The fixed-point step of the fit's sums for ``n_parties`` parties
    (public): ``clip 2**-b``, ``b = min(FIT_SUM_BITS, 53 - bit_length(n))``."""
    bits = min(FIT_SUM_BITS, 53 - int(n_parties).bit_length())
    if bits < _MIN_SUM_BITS:
        raise ValueError(f"The private fit sums at most 2**{53 - _MIN_SUM_BITS} "
                         f"parties exactly; got {n_parties}. Use "
                         "public_model='validation'.")
    return math.ldexp(float(clip), -bits)


def rounded_clip(clip, unit, size):
    """The norm each party's gradient is clipped to before rounding, so that
    the rounded vector (``size`` coordinates, each moved by at most ``unit``:
    half a step of rounding, and the last bits of the division by ``unit``)
    still has norm at most ``clip``: the sum's sensitivity is unchanged."""
    return float(clip) - unit * math.sqrt(size)


def preconditioner(X_val, curvature, l2, shrinkage=FIT_SHRINKAGE):
    """``P^-1``, ``P`` the loss's curvature bound times the validation rows'
    second moments shrunk by ``shrinkage`` toward their mean eigenvalue (so
    that a direction the validation rows barely span, e.g. a category
    missing from them, still gets a bounded step), plus ``l2``. Public: the
    steps it shapes are post-processing of the releases."""
    second = X_val.T @ X_val / len(X_val)
    n_columns = len(second)
    identity = np.eye(n_columns)
    shrunk = ((1.0 - shrinkage) * second
              + shrinkage * np.trace(second) / n_columns * identity)
    # pinv: without validation rows' spread and without a penalty (a zero
    # matrix) no step rather than an error.
    return np.linalg.pinv(curvature * shrunk + l2 * identity,
                          hermitian=True)


def noisy_gradient_descent(problem, gradient_sum, *, clip, step, n_steps, release):
    """The private fit: ``n_steps`` released clipped sums, averaged iterates.

    ``gradient_sum(clip, unit) -> f(theta)`` is the family's exact clipped sum
    (:meth:`~skdpval.families.Family.gradient_sum`: on the rows in memory, or
    on the blocks of rows held by Dask, each block's integer sum added in
    the client); the sums are exact (:func:`fixed_point_unit`), so both give
    the same bits however the rows are chunked. ``step(t, mean gradient)``:
    theta's change at step ``t`` from the released mean gradient ``S~ / n``
    (post-processing: a preconditioned step, or a family's own rule). ``release(t, total)`` is step ``t``'s release of
    the flat sum ``total`` (the mechanism's,
    :meth:`~skdpval.privacy.PrivacyMechanism.release`: on its grid with the
    noise of stream ``t``). Returns theta.
    """
    theta = np.array(problem.theta0, dtype=np.float64, order="C")
    n_parties = len(problem.offsets) - 1
    unit = fixed_point_unit(clip, n_parties)
    total_of = gradient_sum(rounded_clip(clip, unit, theta.size), unit)
    average = np.zeros_like(theta)
    first_averaged = n_steps // 2
    for t in range(n_steps):
        total = total_of(theta.copy()).astype(np.float64) * unit
        released = release(t, total.ravel()).reshape(theta.shape)
        theta -= step(t, released / n_parties)
        if t >= first_averaged:
            average += theta
    return average / (n_steps - first_averaged)


# --- the shared parameter --------------------------------------------------------

PUBLIC_MODEL_CONSTRAINTS = {
    "public_model": [StrOptions(set(PUBLIC_MODEL_OPTIONS))],
    "public_model_share": [Interval(Real, 0.0, 1.0, closed="neither")],
}

PUBLIC_MODEL_DOCS = {
    "public_model": """\
    public_model : {"auto", "validation", "private"}, default="auto"
        Which public model the mechanism reads. ``"validation"``: the
        wrapped model fitted on the validation set alone. ``"private"``: the
        wrapped model's own objective fitted on the *training* rows with
        differential privacy (full-batch noisy gradient descent of 20 steps,
        each party's gradient clipped to 2 and the sum released on the grid,
        each step preconditioned by the validation rows' second moments;
        warm-started from the validation model), spending
        ``public_model_share`` of the budget's ``mu^2``; the mechanism's own
        release(s) get the rest, so the per-party guarantee is the same
        ``(epsilon, delta)`` (exact GDP composition: the fit is the part
        "public model fit" of ``privacy_report_["parts"]``). Linear models
        of the registry, and for DPLabelQuality ``MLPClassifier`` (30 Adam
        steps on the released mean gradients, not on Dask input); for
        others (a network in DPDataValuator, a Pipeline, a model the
        valuators do not map) ``"private"`` is an error naming why.
        ``"auto"``: fit privately where it pays, from public quantities only
        (the number of training parties, the validation set's size, the
        number of parameters, the budget): when the training parties are at
        least 5 times the validation rows and the fit's noise index ``n
        mu_fit / sqrt(100 d)`` is at least 6 (measured: benchmarks/quality.py
        --suite regime_rule and --suite regime_small, with a fit of 100 plain
        steps: the index keeps that normalisation; a network: the size
        condition alone); otherwise, and for
        models the fit does not cover, the validation model. A private fit
        that ``"auto"`` made is then kept only if it passes two checks on
        the validation rows (public, no privacy spent): its balanced
        accuracy there is not below the validation model's cross-validated
        one by more than 0.05 or 1.5 standard errors (the larger), and (where it gives class probabilities) their
        mean lies within 1.5 standard errors of class shares that symmetric
        label noise could have left (between the validation rows' shares
        and ``1 / K``). Label noise that depends on the class makes the
        private fit learn it, and then the validation model finds the bad
        labels better (``benchmarks/quality.py --suite regime
        --flip-rates 0.15 0.45``); a fit that is not kept has still spent its
        share (``privacy_report_["parts"]``). ``privacy_report_["details"]
        ["public_model"]`` says which model was kept and why, and
        ``["public_model_fit"]["rule"]`` gives the checks' numbers.
""",
    "public_model_share": """\
    public_model_share : float in (0, 1), default=0.05
        Share of ``mu^2`` spent on the private fit of the public model (when
        it is fitted privately).
""",
}


def document_public_model(cls):
    """Put the entries of :data:`PUBLIC_MODEL_DOCS` in ``cls``'s docstring at
    the lines ``    %(public_model)s`` and ``    %(public_model_share)s`` (one
    text for every valuator)."""
    doc = cls.__doc__
    for name, text in PUBLIC_MODEL_DOCS.items():
        doc = doc.replace(f"    %({name})s\n", text)
    cls.__doc__ = doc
    return cls


def resolve_public_model(valuator, estimator, *, n_parties, n_val, n_params, mu,
                         share=None, line=False, dask=False):
    """``(fit_privately, why)`` for ``valuator.public_model`` (public only);
    ``share`` of mu^2 for the fit (default ``valuator.public_model_share``;
    1 under the joint threat model, where the fit is the whole billboard).

    ``"private"`` for an estimator the fit does not cover raises a
    ValueError naming why; ``"auto"`` keeps the validation model then.
    Training rows held by Dask decide as in memory: the fit runs on their
    blocks (:func:`noisy_gradient_descent`).
    """
    option = valuator.public_model
    if option == "validation":
        return False, "public_model='validation'"
    if mu is None:
        if option == "private":
            raise ValueError("public_model='private' needs epsilon, not "
                             "noise_multiplier: a budget to share with the fit.")
        return False, ("public_model='auto' keeps the validation model: "
                       "noise_multiplier leaves no budget to share")
    try:
        family = family_of(estimator)
        why_not = family.private_fit_unsupported(estimator)
    except TypeError as error:  # no family reads it (DPLabelQuality takes any model)
        why_not = (f"{type(estimator).__name__} is not a model the valuators map "
                   f"to an objective ({str(error).split('. ')[0]})")
    else:
        if why_not is None and line and not family.refines_line:
            why_not = (f"{type(estimator).__name__} ({family.name}): "
                       "DPDataValuator's walk does not follow a privately "
                       "fitted line of this family (DPLabelQuality fits it)")
        elif why_not is None and dask and not family.private_fit_on_dask:
            why_not = (f"{type(estimator).__name__} on Dask input (the "
                       f"{family.name} family's private fit reads whole rows at "
                       "every step; pass numpy arrays)")
    if option == "private":
        if why_not is not None:
            raise ValueError(f"public_model='private' cannot fit {why_not}. Use "
                             "public_model='validation' (or 'auto').")
        return True, "public_model='private'"
    if why_not is not None:
        return False, f"public_model='auto' keeps the validation model: {why_not}"
    share = valuator.public_model_share if share is None else share
    if auto_fits_privately(n_parties, n_val, n_params, mu, share,
                           indexed=family.fit_descent(None) is None):
        return True, "public_model='auto': the training set is large enough"
    return False, ("public_model='auto' keeps the validation model: the "
                   "training set is too small for the fit's noise (or not "
                   f"{AUTO_MIN_TRAIN_OVER_VAL} times the validation set)")


def labels_problem(validation_model, estimator, parties, *, record_level, seed):
    """DPLabelQuality's fit problem: the wrapped model's objective on the
    training rows of ``parties`` (class indices for a classifier; regression
    targets standardised by the validation targets, public), from
    ``validation_model`` (fitted on the validation set)."""
    family = family_of(estimator)
    n_fit = len(parties.X) if record_level else len(parties.offsets) - 1
    public = family.public_params(estimator, parties.X_val, parties.y_val, seed)
    objective = family.objective(estimator, n_parties=n_fit, public=public)
    view = family.view(objective, parties, utility="neg_loss")
    centre, scale = 0.0, 1.0
    if objective.target_scale_degree is not None:
        # Targets in units of the validation targets' spread (public), as the
        # walk does, so that the clip means the same for any target scale.
        centre = float(np.mean(parties.y_val)) if objective.fit_intercept else 0.0
        scale = float(np.std(parties.y_val)) or 1.0
    has_intercept = family.intercept_column(objective)
    theta0 = family.parameters_of(validation_model, view.T.shape[1], view.X.shape[1],
                                  has_intercept, objective.intercept_scaling)
    if scale != 1.0 or centre != 0.0:
        theta0 = theta0 / scale
        if has_intercept:
            theta0[:, -1] -= centre / scale / objective.intercept_scaling
    # Unweighted: no array of n ones.
    weighted = objective.is_classifier and objective.class_weight is not None
    view = view._replace(T=(view.T - centre) / scale if scale != 1.0 or centre != 0.0
                         else view.T,
                         loss_param=objective.loss_param / scale,
                         l1=objective.l1_per_sample / scale,
                         row_weights=view.row_weights if weighted else None)
    return family.fit_problem(view, theta0, record_level=record_level,
                              centre=centre, scale=scale,
                              has_intercept=has_intercept)


def labels_model(validation_model, estimator, theta, problem):
    """A copy of ``validation_model`` with the fitted ``theta`` (targets'
    standardisation undone)."""
    if problem.scale != 1.0 or problem.centre != 0.0:
        theta = theta * problem.scale
        if problem.has_intercept:
            theta[:, -1] += problem.centre / problem.intercept_scaling
    return family_of(estimator).with_parameters(
        validation_model, theta, problem.has_intercept, problem.intercept_scaling)


FIT_PART = "public model fit"


def layout_inputs(n_val, n_params):
    """What a fitted valuator keeps of its public-model rule's public inputs
    (``_layout_inputs_``), for the plans of its siblings in a search."""
    return {"n_val": int(n_val), "n_params": int(n_params)}


class PlannedLayout:
    """The parts a fit of a valuator with a ``public_model`` option lays out,
    from its parameters (:func:`skdpval.privacy._plan.add_plan`: the unseen
    fits of a search)."""

    def _planned_parts(self, parts, n_units, inputs):
        """The layouts a fit of these parameters may have on ``n_units``
        protected units (None: not known), from the ``parts`` a fitted
        sibling reports (None: no sibling) and the public inputs of its
        public-model rule (``_layout_inputs_``): one layout where the rule's
        choice is known, else each one it may make."""
        others = [part for part in (parts or self._privacy_parts())
                  if part["name"] != FIT_PART]
        fitted = [part for part in parts or () if part["name"] == FIT_PART]
        if not isinstance(getattr(self, "subspace", "public"), str):
            choices = [False]  # DPDataValuator fits only the line's model
        else:
            choices = self._fit_choices(n_units, inputs)
        # The fit's dimension: the sibling's fit, else the rule's count of
        # parameters (a model without intercept has one fewer per output:
        # the sampler's share of delta differs by a few ulps), else 1.
        dimension = (fitted[0]["dimension"] if fitted else
                     inputs["n_params"] if inputs else 1)
        total = sum(part["share"] for part in others)
        layouts = []
        for fits in choices:
            share = self.public_model_share if fits else 0.0
            layout = [{**part, "share": part["share"] / total * (1.0 - share)}
                      for part in others]
            if fits:
                layout.insert(0, dict(
                    name=FIT_PART, law="rounded Gaussian",
                    n_releases=(fitted[0]["n_releases"] if fitted else
                                self._planned_fit_steps(inputs)),
                    dimension=dimension, zero_neighbour=False, share=share,
                    n_releases_param=None))
            layouts.append(layout)
        return layouts

    def _candidates(self, inputs=None):
        """The models a fit of these parameters may use: the one the
        parameters give, or of a list of candidates (DPLabelQuality) the
        one a fitted sibling chose (``inputs["candidate"]``), else each."""
        model = self._check_parameters()
        if isinstance(model, tuple):  # DPDataValuator's WrappedModel
            return [model.estimator]
        if not isinstance(model, list):
            return [model]
        if inputs is not None and "candidate" in inputs:
            return [model[inputs["candidate"]]]
        return model

    def _planned_fit_steps(self, inputs=None):
        """The releases of a private fit of these parameters' model (its
        family's steps, the most over the candidates; ``FIT_STEPS`` where
        the parameters do not check)."""
        steps = []
        try:
            for estimator in self._candidates(inputs):
                try:
                    steps.append(fit_steps(family_of(estimator)))
                except TypeError:  # no family: no private fit
                    pass
        except (TypeError, ValueError):
            pass
        return max(steps, default=FIT_STEPS)

    def _fit_choices(self, n_units, inputs):
        """Whether a fit on ``n_units`` protected units fits the public model
        privately: ``[the rule's choice]``, or where the size or the inputs
        are not known, the choices it makes for none and for very many
        training parties (both where the parameters do not check)."""
        try:
            candidates = self._candidates(inputs)
        except (TypeError, ValueError):
            return [False, True]
        sizes = ([(n_units, inputs)] if n_units is not None and inputs is not None
                 else [(0, layout_inputs(0, 1)), (2**40, layout_inputs(0, 1))])
        choices = []
        for estimator in candidates:
            for n_parties, rule in sizes:
                mechanism = PrivacyMechanism.of(self, adds_noise=self._adds_noise())
                mechanism.protect("sample", n_parties)
                fits, _ = resolve_public_model(
                    self, estimator, n_parties=n_parties, mu=budget_mu(mechanism),
                    line=hasattr(self, "subspace"), n_val=rule["n_val"],
                    n_params=rule["n_params"])
                choices += [fits] if fits not in choices else []
        return choices


def declare_fit(mechanism, n_params, share, n_steps=FIT_STEPS):
    """The fit's part of ``mechanism``: ``n_steps`` releases of the
    parameters' clipped sum (any two neighbouring sums ``FIT_CLIP`` apart)."""
    return mechanism.gaussian(FIT_PART, PUBLIC_FIT, n_releases=n_steps,
                              clip=FIT_CLIP, dimension=n_params,
                              zero_neighbour=False, share=share)


def fit_steps(family):
    """The number of releases of ``family``'s private fit (public)."""
    descent = family.fit_descent(None)
    return FIT_STEPS if descent is None else descent.n_steps


def run_fit(family, problem, part, mechanism):
    """The noisy descent of ``problem`` (of ``family``) with ``part``'s
    calibrated noise: ``(theta, details)`` (details for the report, all
    public). The family's own descent (:meth:`~skdpval.families.Family.fit_descent`)
    where it has one, else the preconditioned one."""
    descent = family.fit_descent(problem)
    if descent is None:
        learning_rate = FIT_STEP_FACTOR * preconditioner(
            problem.X_val, family.curvature(problem.loss), problem.l2)
        n_steps, step = FIT_STEPS, lambda t, gradient: gradient @ learning_rate
        details = dict(n_steps=FIT_STEPS, clip=FIT_CLIP, step_factor=FIT_STEP_FACTOR,
                       preconditioner_shrinkage=FIT_SHRINKAGE)
        rule = ("each step is step_factor times the preconditioned released mean "
                "gradient (preconditioner: the loss's curvature bound times the "
                "validation rows' second moments, shrunk toward their mean "
                "eigenvalue by preconditioner_shrinkage, plus the L2 term)")
    else:
        n_steps, step = descent.n_steps, descent.step()
        details = dict(descent.details, clip=FIT_CLIP)
        rule = ("each step is the family's step_rule (with rate and betas: "
                "Adam) on the released mean gradients")
    theta = noisy_gradient_descent(
        problem, lambda clip, unit: family.gradient_sum(problem, clip=clip, unit=unit),
        clip=FIT_CLIP, step=step, n_steps=n_steps,
        release=lambda t, total: mechanism.release(part, total, stream=t))
    details.update(
        n_parties=len(problem.offsets) - 1,
        sum_unit=fixed_point_unit(FIT_CLIP, len(problem.offsets) - 1),
        release=("full-batch noisy gradient descent on the training rows: each "
                 "step releases the sum over parties of each party's gradient "
                 "clipped to clip (less sum_unit sqrt(d)) and rounded to "
                 "multiples of sum_unit (an exact sum, the same however the "
                 "rows are split), on a grid with rounded Gaussian noise; "
                 + rule + "; warm-started from the model fitted on the "
                 "validation set; the model is the mean of the second half's "
                 "iterates"))
    return theta, details


def budget_mu(mechanism):
    """The per-party budget as mu-GDP for the ``"auto"`` rule: inf without
    noise, None when set by ``noise_multiplier`` (no budget to share)."""
    if not mechanism.adds_noise:
        return np.inf
    if mechanism.noise_multiplier is not None:
        return None
    return gdp_mu(mechanism.epsilon, mechanism.delta)


class PublicModel:
    """The public model of one :class:`~skdpval.DPDataValuator` fit: which one
    is kept (the validation model's direction, or its private refit on the
    training rows) and the parts of the fit's mechanism for it and for the
    walk beside it."""

    def __init__(self, valuator, estimator, mechanism):
        self.valuator, self.estimator, self.mechanism = valuator, estimator, mechanism
        self.fit = self.walk = None

    @staticmethod
    def check(valuator, estimator, needs_line=False):
        """Before any data is read: the option and its share, and a
        ``"private"`` fit the estimator or the parameters cannot have."""
        check_public_model(valuator.public_model, valuator.public_model_share)
        if valuator.public_model != "private":
            return
        if needs_line and not isinstance(valuator.subspace, str):
            raise ValueError("public_model='private' needs subspace='public' "
                             "(the public model gives its line).")
        resolve_public_model(valuator, estimator, n_parties=0, n_val=0, n_params=1,
                             mu=None if valuator.noise_multiplier is not None else 0.0,
                             line=True)

    def choose(self, game, line):
        """Sets the valuator's ``public_model_fitted_privately_`` and
        ``public_model_reason_``; for a private fit, declares its part and the
        walk's (one coordinate, a provisional clip: the clip norm depends on
        the fitted line) and calibrates them."""
        valuator, mechanism = self.valuator, self.mechanism
        if not line:
            valuator.public_model_fitted_privately_ = False
            valuator.public_model_reason_ = ("the validation model: the walk reads "
                                             "no public line (subspace is not "
                                             "'public')")
            return
        n_parties = len(game.X) if game.record_level else len(game.offsets) - 1
        n_params = game.X.shape[1] * game.T.shape[1]
        valuator._layout_inputs_ = layout_inputs(len(game.X_val), n_params)
        fits, reason = resolve_public_model(
            valuator, self.estimator, n_parties=n_parties, n_val=len(game.X_val),
            n_params=n_params, mu=budget_mu(mechanism), line=True)
        valuator.public_model_fitted_privately_ = fits
        valuator.public_model_reason_ = reason
        mechanism.details["public_model"] = reason
        if not fits:
            return
        self.fit = declare_fit(mechanism, n_params, valuator.public_model_share)
        self.walk = mechanism.gaussian(
            "walk", WALK, n_releases=valuator.n_permutations, clip=1.0, dimension=1,
            zero_neighbour=not game.record_level, n_releases_param="n_permutations",
            share=1.0 - valuator.public_model_share)
        mechanism.calibrate()

    def refine(self, game, seed):
        """None, or ``refine(theta_val) -> (unit direction, norm)``: the
        objective fitted privately on the training rows from the validation
        model's parameters ``theta_val`` (its direction kept when the fit's
        released parameters give none, or when ``"auto"`` does not keep the
        fit: :func:`keep_private_fit`, with the public ``seed``)."""
        if self.fit is None:
            return None
        family, valuator = game.objective.family, self.valuator

        def refine(theta_val):
            problem = family.fit_problem(
                game, theta_val.reshape(game.T.shape[1], -1),
                record_level=game.record_level)
            details = self.mechanism.details
            theta, details["public_model_fit"] = run_fit(
                family, problem, self.fit, self.mechanism)
            norm = float(np.linalg.norm(theta))
            labels, proba = (design_labels(game.X_val, theta, game.loss)
                             if game.objective.is_classifier else (None, None))
            keep, reason, rule = keep_private_fit(
                valuator, self.estimator, labels,
                ValidationFolds(game.X_val, game.labels_val, seed), proba)
            details["public_model_fit"].update(kept=keep, rule=rule)
            if keep and (not np.isfinite(norm) or norm == 0):  # noisy releases: public
                keep, reason = False, (reason + "; its released parameters give "
                                       "no direction: the validation model's kept")
            valuator.public_model_fitted_privately_ = keep
            valuator.public_model_reason_ = details["public_model"] = reason
            if not keep:
                return (theta_val.ravel() / np.linalg.norm(theta_val),
                        float(np.linalg.norm(theta_val)))
            return theta.ravel() / norm, norm

        return refine

    def walk_part(self, game, clip, n_permutations):
        """The walk's part of the mechanism, calibrated: declared now, or
        (after a private fit) given its clip norm and calibrated again."""
        mechanism = self.mechanism
        dimension = game.space.coordinates(game.X.shape[1] * game.T.shape[1])
        # Releases on a grid: the sample (or group) slot of a zero-out
        # neighbour releases 0, so its rounded statistic is clamped; a
        # record-level sum's neighbour is one record away (no clamp).
        if self.walk is None:
            walk = mechanism.gaussian(
                "walk", WALK, n_releases=n_permutations, clip=clip,
                dimension=dimension, zero_neighbour=not game.record_level,
                n_releases_param="n_permutations")
            mechanism.calibrate()
            return walk
        mechanism.reclip(self.walk, clip, dimension)
        return self.walk
