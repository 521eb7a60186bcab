"""The public model fitted privately on the training rows (``public_model``).

Users of valuation and cleaning hold many noisy training rows and few clean
validation rows. A model fitted to the validation rows alone is then weak;
this module fits the wrapped model's own objective (its loss and penalty, as
:mod:`skdpval.families._models` reads it) on the *training* rows with differential
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
(:class:`~skdpval.privacy._secure_noise.Grid`), drawn by the fit's
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
"""

import copy
import math
from collections import namedtuple
from numbers import Real

import numpy as np
from numba import njit
from sklearn.utils._param_validation import Interval, StrOptions

from ..kernels import _linear, _losses, _math
from ..privacy._accounting import gdp_mu
from ..families._parties import kernel_targets, with_intercept
from ..families._models import (TARGET_SCALE_DEGREE, model_spec, public_params,
    row_weights)
from ..privacy._release import clip_l2
from ..privacy._secure_noise import PUBLIC_FIT

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

# Curvature bound of each loss in the margin (its second derivative's
# maximum), for the preconditioner: curvature times the validation rows'
# second moments (public) plus the L2 penalty.
_CURVATURE = {_losses.LOGISTIC: 0.25, _losses.MULTINOMIAL: 0.5, _losses.SQUARED: 1.0}

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


def auto_fits_privately(n_parties, n_val, n_params, mu, share):
    """The ``public_model="auto"`` rule, from public quantities only.

    Fit privately when the fit's noise index
    (:func:`fit_noise_index` at ``mu_fit = sqrt(share) mu``) is at least
    ``AUTO_MIN_INDEX`` and the training parties number at least
    ``AUTO_MIN_TRAIN_OVER_VAL`` times the validation rows; otherwise the
    validation model is kept (small training sets: the fit's noise would
    swamp what the rows add). Without noise (``mu`` infinite) the private
    fit is a plain fit on the training rows: it pays when the training set
    is larger than the validation set by that factor.
    """
    if n_parties < AUTO_MIN_TRAIN_OVER_VAL * n_val:
        return False
    if not np.isfinite(mu):
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


# --- the kernel -----------------------------------------------------------------

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


@njit(cache=True, nogil=True)
def clipped_gradient_sum(theta, X, T, row_weights, offsets, loss, loss_param, l2, l1,
                         n_penalized, clip, unit, margin_buf, dloss_buf, party, out):
    """``out`` (int64) <- sum over parties of each party's gradient (mean
    loss of its rows plus the penalty) clipped to L2 norm ``clip``, in
    units of ``unit`` rounded to integers (exact, in any order)."""
    n_outputs, n_columns = theta.shape
    inverse_unit = 1.0 / unit
    for k in range(n_outputs):
        for c in range(n_columns):
            out[k, c] = 0
    for j in range(offsets.shape[0] - 1):
        _linear.party_gradient(theta, X, T, row_weights, offsets[j], offsets[j + 1], loss,
                         loss_param, l2, l1, n_penalized, margin_buf, dloss_buf,
                         party)
        clip_l2(party, clip)
        for k in range(n_outputs):
            for c in range(n_columns):
                out[k, c] += np.int64(np.rint(party[k, c] * inverse_unit))


# Reassociation and contraction only (no finite-math flags: a gradient that
# is not finite must still be caught): the row's dot product vectorises.
_ROW_FASTMATH = {"reassoc", "contract", "nsz"}


@njit(cache=True, nogil=True, fastmath=_ROW_FASTMATH)
def clipped_row_gradient_sum(theta, X, T, row_weights, loss, loss_param, l2,
                             n_penalized, clip, unit, out):
    """:func:`clipped_gradient_sum` for one-row parties, one output and no
    L1 term, in one pass over the rows: a row's gradient is ``a x + l2
    theta_pen`` (``a`` its weighted loss derivative), whose norm follows from
    ``|x|^2``, ``x . theta_pen`` and ``|theta_pen|^2`` (summed in the pass
    that forms the margin). A gradient that is not finite counts as zero (as
    :func:`skdpval.privacy._release.clip_l2` sets it)."""
    n_columns = theta.shape[1]
    coef = theta[0]
    pen_sq = 0.0
    for c in range(n_penalized):
        pen_sq += coef[c] * coef[c]
    for c in range(n_columns):
        out[0, c] = 0
    inverse_unit = 1.0 / unit
    clip_sq = clip * clip
    for row in range(X.shape[0]):
        x = X[row]
        dot_pen = 0.0
        row_sq = 0.0
        for c in range(n_penalized):
            dot_pen += coef[c] * x[c]
            row_sq += x[c] * x[c]
        m = dot_pen
        for c in range(n_penalized, n_columns):
            m += coef[c] * x[c]
            row_sq += x[c] * x[c]
        a = row_weights[row] * _losses._output_dloss(loss, m, T[row, 0], loss_param)
        norm_sq = a * a * row_sq + 2.0 * a * l2 * dot_pen + l2 * l2 * pen_sq
        scale = inverse_unit  # the root only for the rows clipped
        if norm_sq > clip_sq:
            if not norm_sq < np.inf:
                continue
            scale = clip / np.sqrt(norm_sq) * inverse_unit
        elif not norm_sq >= -np.inf:  # NaN
            continue
        a *= scale
        penalty = l2 * scale
        for c in range(n_penalized):
            out[0, c] += np.int64(np.rint(a * x[c] + penalty * coef[c]))
        for c in range(n_penalized, n_columns):
            out[0, c] += np.int64(np.rint(a * x[c]))


def rows_gradient_sum(X, T, row_weights, theta, offsets, loss, loss_param, l2, l1,
                      n_penalized, clip, unit):
    """The clipped sum of rows ``X`` (in memory) at ``theta``, in int64 units
    of ``unit``; ``offsets`` None: one row a party. The kernel is chosen from
    the parties' shape alone (one-row parties, one output, no L1 term: the
    one-pass kernel), so any block of rows is summed as the whole is (C
    order: one compiled kernel for every block)."""
    X, T, row_weights = _math._f64(X), _math._f64(T), _math._f64(row_weights)
    out = np.empty(theta.shape, dtype=np.int64)
    if offsets is None and theta.shape[0] == 1 and l1 == 0:
        clipped_row_gradient_sum(theta, X, T, row_weights, loss, loss_param, l2,
                                 n_penalized, clip, unit, out)
        return out
    if offsets is None:
        offsets = np.arange(len(X) + 1, dtype=np.int64)
    n_outputs = theta.shape[0]
    clipped_gradient_sum(theta, X, T, row_weights, offsets, loss, loss_param, l2, l1,
                         n_penalized, clip, unit, np.empty(n_outputs),
                         np.empty(n_outputs), np.empty_like(theta), out)
    return out


def preconditioner(X_val, loss, l2, shrinkage=FIT_SHRINKAGE):
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
    return np.linalg.pinv(_CURVATURE.get(loss, 1.0) * shrunk + l2 * identity,
                          hermitian=True)


def unweighted_rows_gradient_sum(X, T, theta, *args):
    """:func:`rows_gradient_sum` with unit row weights (made per block)."""
    return rows_gradient_sum(X, T, _math.unit_weights(len(X)), theta, *args)


def noisy_gradient_descent(theta0, X, T, offsets, *, loss, loss_param, l2, l1,
                           n_penalized, row_weights, clip, learning_rate, n_steps,
                           release):
    """The private fit: ``n_steps`` released clipped sums, averaged iterates.

    ``X``: the rows in memory, or :class:`~skdpval.walks._dask.DaskRows` (one row
    a party): each step's sum is then formed on the blocks, each block's
    exact integer sum (:func:`rows_gradient_sum`) sent to the client, which
    adds them, releases the sum and takes the step. The sums are exact
    (:func:`fixed_point_unit`), so both give the same bits however the rows
    are chunked. ``learning_rate``: a symmetric matrix over the columns (a
    preconditioner: a step is ``(S~ / n) @ learning_rate``).
    ``release(t, total)`` is step ``t``'s release of the flat sum ``total``
    (the mechanism's, :meth:`~skdpval.privacy._mechanism.PrivacyMechanism.release`:
    on its grid with the noise of stream ``t``). Returns theta.
    """
    theta = np.array(theta0, dtype=np.float64, order="C")
    T = _math._f64(T)
    n_parties = len(offsets) - 1
    one_row_parties = n_parties == len(X) and _math.one_row_each(offsets)
    unit = fixed_point_unit(clip, n_parties)
    kernel_args = (None if one_row_parties else _math._i64(offsets), int(loss),
                   float(loss_param), float(l2), float(l1), int(n_penalized),
                   rounded_clip(clip, unit, theta.size), unit)
    if hasattr(X, "sum_blocks"):  # Dask rows: one row a party
        if not one_row_parties:
            raise ValueError("The private fit on Dask input needs one row a party.")
        gradient_sum = (X.sum_blocks(unweighted_rows_gradient_sum, T)
                        if row_weights is None else
                        X.sum_blocks(rows_gradient_sum, T, _math._f64(row_weights)))
    else:
        X = _math._f64(X)
        weights = (_math.unit_weights(len(X)) if row_weights is None
                   else _math._f64(row_weights))

        def gradient_sum(theta, *args):
            return rows_gradient_sum(X, T, weights, theta, *args)
    average = np.zeros_like(theta)
    first_averaged = n_steps // 2
    for t in range(n_steps):
        total = gradient_sum(theta.copy(), *kernel_args).astype(np.float64) * unit
        step = release(t, total.ravel()).reshape(theta.shape)
        theta -= (step / n_parties) @ learning_rate
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
        of the registry only; for others (a network, a Pipeline, a model the
        valuators do not map) ``"private"`` is an error naming why.
        ``"auto"``: fit privately where it pays, from public quantities only
        (the number of training parties, the validation set's size, the
        number of parameters, the budget): when the training parties are at
        least 5 times the validation rows and the fit's noise index ``n
        mu_fit / sqrt(100 d)`` is at least 6 (measured: benchmarks/quality.py
        --suite regime_rule and --suite regime_small, with a fit of 100 plain
        steps: the index keeps that normalisation); otherwise, and for
        models the fit does not cover, the validation model
        (``privacy_report_["details"]["public_model"]`` says which and why).
        A private fit learns from the noisy training labels: where the label
        noise depends on the class it inherits that bias, and the validation
        model finds the bad labels better (``benchmarks/cleaning.py``:
        class-dependent flips, 20,000 rows, epsilon 3: cleaning with the
        validation model beat both the noisy and the validation-only model,
        with the private fit it did not). Pass ``"validation"`` there.
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


def private_fit_unsupported(estimator):
    """Why ``estimator`` cannot be fitted privately, or None when it can."""
    try:
        spec = model_spec(estimator, n_samples=1)
    except (TypeError, ValueError) as error:
        return (f"{type(estimator).__name__} is not a linear model the valuators "
                f"map to an objective ({str(error).split('. ')[0]})")
    if spec.network is not None:
        return (f"{type(estimator).__name__} is a network: its private fit is not "
                "built (a network's noisy gradient descent from the validation "
                "model needs its own step size and clipping rule)")
    if not spec.intercept_column and spec.fit_intercept:
        return f"{type(estimator).__name__} has no intercept column"
    return None


def resolve_public_model(valuator, estimator, *, n_parties, n_val, n_params, mu,
                         share=None):
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
    why_not = private_fit_unsupported(estimator)
    if option == "private":
        if why_not is not None:
            raise ValueError(f"public_model='private' cannot fit {why_not}. Use "
                             "public_model='validation' (or 'auto').")
        return True, "public_model='private'"
    if why_not is not None:
        return False, f"public_model='auto' keeps the validation model: {why_not}"
    share = valuator.public_model_share if share is None else share
    if auto_fits_privately(n_parties, n_val, n_params, mu, share):
        return True, "public_model='auto': the training set is large enough"
    return False, ("public_model='auto' keeps the validation model: the "
                   "training set is too small for the fit's noise (or not "
                   f"{AUTO_MIN_TRAIN_OVER_VAL} times the validation set)")


def _theta_of(model, n_outputs, n_columns, fit_intercept, intercept_scaling):
    """A fitted linear model's parameters in the kernels' layout, or zeros
    when its shape differs (e.g. a class missing from the validation set)."""
    coef = np.atleast_2d(np.asarray(model.coef_, dtype=np.float64))
    n_features = n_columns - bool(fit_intercept)
    if coef.shape != (n_outputs, n_features):
        return np.zeros((n_outputs, n_columns))
    theta = np.zeros((n_outputs, n_columns))
    theta[:, :n_features] = coef
    if fit_intercept:
        intercept = np.asarray(model.intercept_, dtype=np.float64)
        theta[:, -1] = np.broadcast_to(intercept, (n_outputs,)) / intercept_scaling
    return theta


def _with_theta(model, theta, fit_intercept, intercept_scaling):
    """A copy of ``model`` whose coefficients (and intercept) are ``theta``."""
    fitted = copy.deepcopy(model)
    n_features = theta.shape[1] - bool(fit_intercept)
    coef_shape = np.shape(model.coef_)
    fitted.coef_ = theta[:, :n_features].reshape(coef_shape).copy()
    if fit_intercept:
        intercept = theta[:, -1] * intercept_scaling
        fitted.intercept_ = (float(intercept[0]) if np.ndim(model.intercept_) == 0
                             else intercept.reshape(np.shape(model.intercept_)))
    return fitted


# The private fit's inputs in the kernels' layout; ``centre`` and ``scale`` of
# standardised regression targets (undone on the result), the intercept's
# column and value.
FitProblem = namedtuple("FitProblem", [
    "theta0", "X", "T", "offsets", "X_val", "loss", "loss_param", "l2", "l1",
    "n_penalized", "row_weights", "centre", "scale", "has_intercept",
    "intercept_scaling"])


def labels_problem(validation_model, estimator, parties, *, record_level, classes,
                   seed):
    """DPLabelQuality's fit problem: the wrapped model's objective on the
    standardised training rows of ``parties`` (class indices for a
    classifier), from ``validation_model`` (fitted on the validation set)."""
    n_fit = len(parties.X) if record_level else len(parties.offsets) - 1
    offsets = np.arange(len(parties.X) + 1) if record_level else parties.offsets
    public = public_params(estimator, parties.X_val, parties.y_val, seed)
    spec = model_spec(estimator, n_samples=n_fit, public=public)
    n_classes = None if classes is None else len(classes)
    T, T_val, loss, _, _ = kernel_targets(spec, parties.y, parties.y_val, n_classes,
                                          "neg_loss")
    centre, scale = 0.0, 1.0
    if not spec.is_classifier and spec.loss in TARGET_SCALE_DEGREE:
        # Targets in units of the validation targets' spread (public), as the
        # walk does, so that the clip means the same for any target scale.
        centre = float(np.mean(parties.y_val)) if spec.fit_intercept else 0.0
        scale = float(np.std(parties.y_val)) or 1.0
        T = (T - centre) / scale
    X, X_val = with_intercept(spec, parties.X, parties.X_val)
    weights = None  # unweighted: no array of n ones (n = 1e7: 80 MB)
    if spec.is_classifier and spec.class_weight is not None:
        weights, _ = row_weights(spec, parties.y, parties.y_val, classes, None)
    n_penalized = parties.X.shape[1] + (spec.fit_intercept and spec.penalize_intercept)
    has_intercept = bool(spec.fit_intercept and spec.intercept_column)
    theta0 = _theta_of(validation_model, T.shape[1], X.shape[1], has_intercept,
                       spec.intercept_scaling)
    if scale != 1.0 or centre != 0.0:
        theta0 = theta0 / scale
        if has_intercept:
            theta0[:, -1] -= centre / scale / spec.intercept_scaling
    return FitProblem(theta0, X, T, offsets, X_val, loss, spec.loss_param / scale,
                      spec.l2_per_sample, spec.l1_per_sample / scale, n_penalized,
                      weights, centre, scale, has_intercept, spec.intercept_scaling)


def labels_model(validation_model, theta, problem):
    """A copy of ``validation_model`` with the fitted ``theta`` (targets'
    standardisation undone)."""
    if problem.scale != 1.0 or problem.centre != 0.0:
        theta = theta * problem.scale
        if problem.has_intercept:
            theta[:, -1] += problem.centre / problem.intercept_scaling
    return _with_theta(validation_model, theta, problem.has_intercept,
                       problem.intercept_scaling)


def game_problem(theta0, game):
    """DPDataValuator's fit problem from its game (rows with the intercept
    column, targets as the walk reads them), from ``theta0``."""
    offsets = np.arange(len(game.X) + 1) if game.record_level else game.offsets
    return FitProblem(theta0, game.X, game.T, offsets, game.X_val, game.loss,
                      game.loss_param, game.l2, game.l1, game.n_penalized,
                      game.row_weights, 0.0, 1.0, False, 1.0)


def declare_fit(mechanism, problem, share):
    """The fit's part of ``mechanism``: ``FIT_STEPS`` releases of the
    parameters' clipped sum (any two neighbouring sums ``FIT_CLIP`` apart)."""
    return mechanism.gaussian("public model fit", PUBLIC_FIT, n_releases=FIT_STEPS,
                              clip=FIT_CLIP, dimension=problem.theta0.size,
                              zero_neighbour=False, share=share)


def run_fit(problem, part, mechanism):
    """The noisy descent of ``problem`` with ``part``'s calibrated noise:
    ``(theta, details)`` (details for the report, all public)."""
    learning_rate = FIT_STEP_FACTOR * preconditioner(problem.X_val, problem.loss,
                                                     problem.l2)
    theta = noisy_gradient_descent(
        problem.theta0, problem.X, problem.T, problem.offsets, loss=problem.loss,
        loss_param=problem.loss_param, l2=problem.l2, l1=problem.l1,
        n_penalized=problem.n_penalized, row_weights=problem.row_weights,
        clip=FIT_CLIP, learning_rate=learning_rate, n_steps=FIT_STEPS,
        release=lambda t, total: mechanism.release(part, total, stream=t))
    details = dict(
        n_steps=FIT_STEPS, clip=FIT_CLIP, step_factor=FIT_STEP_FACTOR,
        preconditioner_shrinkage=FIT_SHRINKAGE,
        n_parties=len(problem.offsets) - 1,
        sum_unit=fixed_point_unit(FIT_CLIP, len(problem.offsets) - 1),
        release=("full-batch noisy gradient descent on the training rows: each "
                 "step releases the sum over parties of each party's gradient "
                 "clipped to clip (less sum_unit sqrt(d)) and rounded to "
                 "multiples of sum_unit (an exact sum, the same however the "
                 "rows are split), on a grid with rounded Gaussian noise; each "
                 "step is step_factor times the preconditioned released mean "
                 "gradient (preconditioner: the loss's curvature bound times the "
                 "validation rows' second moments, shrunk toward their mean "
                 "eigenvalue by preconditioner_shrinkage, plus the L2 term); "
                 "warm-started from the model fitted on the validation set; the "
                 "model is the mean of the second half's iterates"))
    return theta, details


def budget_mu(mechanism):
    """The per-party budget as mu-GDP for the ``"auto"`` rule: inf without
    noise, None when set by ``noise_multiplier`` (no budget to share)."""
    if not mechanism.adds_noise:
        return np.inf
    if mechanism.noise_multiplier is not None:
        return None
    return gdp_mu(mechanism.epsilon, mechanism.delta)
