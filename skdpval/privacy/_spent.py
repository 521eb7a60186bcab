"""The privacy a whole workflow spends: :func:`privacy_spent`.

Each fit of a skdpval valuator is exactly ``mu``-GDP per party (Gaussian
releases, zero-out adjacency). Fits compose exactly in GDP: a party that
took part in fits of ``mu_1 .. mu_m`` is ``sqrt(sum mu_i^2)``-GDP. Pure
``epsilon``-DP parts (a diffprivlib final model, by its ``epsilon``; a
model declaring its guarantee through ``__dp_guarantee__``; the Laplace
values of LayeredShapleyValuator) compose with them exactly too, through
the worst case of each (randomized response):
:func:`skdpval.privacy._accounting.composed_epsilon`.

What is fitted on the private data *without* noise is not counted: it is
listed under ``"leaks"`` (a scaler fitted on private rows, a non-private
final model, the scores a search ranks its candidates by, folds stratified
on private labels, rows held out as a validation set, one noise_seed fixed
in several fits).
"""

from collections import Counter
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    LeaveOneGroupOut,
    LeaveOneOut,
    PredefinedSplit,
    RepeatedKFold,
    RepeatedStratifiedKFold,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
)
from sklearn.model_selection._search import BaseSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metadata_routing import get_routing_for_object
from sklearn.utils.validation import check_is_fitted

from ._accounting import composed_epsilon, composed_mu, epsilon_net_of_sampler
from ._plan import add_plan, fold_sizes, refit_structures
from ._secure_noise import sampler_delta
from ._threat_model import refuse_in_joint_mode

# Splitters whose test folds partition the samples: a party is in every
# training set but one.
_PARTITIONS = (KFold, StratifiedKFold, GroupKFold, StratifiedGroupKFold,
               LeaveOneOut, LeaveOneGroupOut)
# Splitters whose test folds partition the groups: a group is in every
# training set but one.
_GROUP_PARTITIONS = (GroupKFold, StratifiedGroupKFold, LeaveOneGroupOut)
_STRATIFIED = (StratifiedKFold, RepeatedStratifiedKFold, StratifiedShuffleSplit,
               StratifiedGroupKFold)
# Parameters of DP models (diffprivlib's) that, left None, are read from the
# private data.
_DATA_BOUNDS = ("data_norm", "bounds", "bounds_X", "bounds_y")

ADJACENCY = (
    "zero-out one party (n public) for the Gaussian releases and for "
    "LayeredShapleyValuator's Laplace values; a final model's pure-DP fit "
    "holds under replace-one, which covers zero-out with the empty slot read "
    "as any fixed record. epsilon_replace_one doubles the Gaussian "
    "sensitivity and the Laplace values' epsilon.")
METHOD = (
    "Gaussian fits compose exactly in GDP (mu = sqrt(sum mu_i^2)); pure "
    "epsilon-DP parts compose with them exactly through their worst case, "
    "randomized response (Kairouz, Oh and Viswanath 2015; Dong, Roth and Su "
    "2022, Thm. 3.2). mu also counts each pure part as -2 Phi^-1(1/(1+e^eps))"
    "-GDP, which is valid but looser than epsilon.")


class _Spend:
    """What one party's data went through: DP parts, and what leaked."""

    def __init__(self):
        self.gaussian = []  # (mu, count), zero-out: 2 mu under replace-one
        self.gaussian_replace_one = []  # (mu, count) that hold under replace-one
        self.pure = []      # (epsilon, epsilon under replace-one, count)
        self.deltas = []    # delta of each Gaussian fit (without its sampler's)
        self.sampler_tv = []  # (total variation of a fit's sampler per party, count)
        self.noise_seeds = []  # the fixed noise_seed of each fit that has one
        self.holds_out = False  # a fitted valuator held out private rows
        self.units = []
        self.notes = []     # plain words on each private part
        self.leaks = []     # plain words on each non-private part

    def add(self, other, times=1, fits=None):
        """Add ``other`` for ``times`` fits a party is in, of ``fits`` fits
        in all (``times`` by default): a noise seed repeats in every fit."""
        self.gaussian += [(mu, count * times) for mu, count in other.gaussian]
        self.gaussian_replace_one += [(mu, count * times)
                                      for mu, count in other.gaussian_replace_one]
        self.pure += [(epsilon, replace_one, count * times)
                      for epsilon, replace_one, count in other.pure]
        self.noise_seeds += other.noise_seeds * (times if fits is None else fits)
        self.sampler_tv += [(tv, count * times) for tv, count in other.sampler_tv]
        self.holds_out |= other.holds_out
        for mine, theirs in ((self.deltas, other.deltas), (self.units, other.units),
                             (self.notes, other.notes), (self.leaks, other.leaks)):
            mine += [item for item in theirs if item not in mine]
        return self

    def leak(self, text):
        if text not in self.leaks:
            self.leaks.append(text)

    def gaussian_mu(self, replace_one=False):
        scale = 4 if replace_one else 1
        return composed_mu([(mu, scale * count) for mu, count in self.gaussian]
                           + self.gaussian_replace_one)

    def pure_counts(self, replace_one=False):
        """Sorted ``(epsilon, count)`` of the pure parts, under either adjacency."""
        counts = Counter()
        for epsilon, epsilon_replace_one, count in self.pure:
            counts[epsilon_replace_one if replace_one else epsilon] += count
        return sorted((e, c) for e, c in counts.items() if c > 0)

    def summary(self, delta, max_fits):
        """The dict :func:`privacy_spent` returns."""
        leaks = list(self.leaks)
        units = sorted(set(self.units))
        if len(units) > 1:
            leaks.append(
                f"the parts protect different units ({', '.join(units)}): a "
                "group of m samples gets m times the epsilon of a per-sample "
                "part (group privacy), which is not counted here")
        if delta is None:
            delta = max(self.deltas, default=0.0)
        for seed, uses in Counter(self.noise_seeds).items():
            if uses > 1:
                leaks.append(
                    f"noise_seed={seed!r} is fixed in {uses} fits: they draw the same "
                    "noise numbers, which cancel between the fits, so the "
                    "composition above does not hold. Leave noise_seed=None (fresh "
                    "secret noise every fit)")
        gaussian_mu = self.gaussian_mu()
        pure = self.pure_counts()
        mu = composed_mu([(gaussian_mu, 1)], pure)
        # The samplers are within this total variation of the exact noise for
        # a party, over every fit: (1 + e^eps) times it is part of delta.
        tv = sum(tv * count for tv, count in self.sampler_tv)
        epsilon = epsilon_net_of_sampler(gaussian_mu, pure, tv, delta)
        added = sampler_delta(tv, 1, epsilon) if np.isfinite(epsilon) else 0.0
        notes = list(self.notes)
        if not np.isfinite(epsilon) and np.isfinite(gaussian_mu) and delta > 0:
            # Many fits: at their composed epsilon the samplers' share would
            # take more than half of delta. State the guarantee with it added.
            epsilon = composed_epsilon(gaussian_mu, pure, delta)
            added = min(1.0 - delta, sampler_delta(tv, 1, epsilon))
            notes.append(
                f"at epsilon {epsilon:.4g} the noise samplers' share of delta, "
                f"(1 + e^eps) x {tv:.3g} = {added:.3g}, exceeds half of the "
                f"requested {delta:g}: delta is stated as the requested one plus "
                "that share")
            delta = delta + added
        return {
            "mu": mu,
            "epsilon": epsilon,
            "delta": float(delta),
            "sampler_delta": added,
            "sampler_tv": float(tv),
            "epsilon_replace_one": epsilon_net_of_sampler(
                self.gaussian_mu(replace_one=True),
                self.pure_counts(replace_one=True), tv, delta),
            "max_fits_per_party": int(max_fits),
            "gaussian_mu": gaussian_mu,
            "pure_epsilons": [(float(e), int(c)) for e, c in pure],
            "private": bool(not leaks and np.isfinite(mu) and np.isfinite(epsilon)),
            "leaks": leaks,
            "parts": notes,
            "adjacency": ADJACENCY,
            "method": METHOD,
        }


def _refuse_joint(item):
    """``privacy_spent`` composes central releases: refuse a fit under the
    joint threat model (its values are delivered each to its own owner)."""
    refuse_in_joint_mode(item, "privacy_spent")
    for name, value in item.get_params(deep=True).items():
        if name.endswith("threat_model") and value == "joint":
            raise ValueError(
                f"privacy_spent composes central releases, and {name}='joint': "
                "a fit under the joint threat model delivers each owner its own "
                "value only, and its privacy_report_ states that guarantee. Use "
                "threat_model='central' to compose its values with other releases.")


def privacy_spent(obj, *, delta=None):
    """The privacy a fitted workflow spent, per party, in the worst case.

    Composes every differentially private part a party's data went through:
    the fits of skdpval valuators (each exactly ``mu_i``-GDP), inside
    filters, Pipelines and searches, and the final models whose guarantee
    is known: a diffprivlib model (pure ``epsilon``-DP by its ``epsilon``),
    or any model that declares its guarantee through ``__dp_guarantee__()``
    (Notes); the Laplace values of :class:`LayeredShapleyValuator` are pure
    DP too. Gaussian fits compose exactly in Gaussian DP:
    ``mu = sqrt(sum mu_i^2)`` over the fits a party
    took part in. Pure parts compose with them exactly through their worst
    case, randomized response (the ``epsilon`` returned is that exact
    composition; ``mu`` also converts each pure part to GDP, valid but
    looser).

    For a search (``GridSearchCV``, ``RandomizedSearchCV``...), every
    candidate is fitted on the training folds, and a party is in at most
    ``n_splits - 1`` of them when the test folds partition the data (KFold,
    StratifiedKFold, GroupKFold...; ``n_splits - n_repeats`` for the
    repeated ones, ``n_splits`` for any other splitter), plus the refit.
    When the fits value groups (``groups`` routed to the estimator), a
    group is in a training set when any of its rows is: only GroupKFold,
    StratifiedGroupKFold and LeaveOneGroupOut keep it out of one, and with
    any other splitter (KFold over the rows...) it is counted in all
    ``n_splits``. The count comes from the search's public structure
    (``n_splits_``, the splitter, the metadata the estimator requests, the
    candidates in ``cv_results_["params"]``, the refit), never from which
    rows fell in which fold. Each candidate's fit is planned part by part as
    it lays them out (with ``public_model`` a private fit of the public
    model is a part, chosen from public quantities: the training fold's
    size, the refit's validation rows and parameters); where a layout
    cannot be known (no refit, a splitter whose folds' sizes are not
    known), the largest ``mu`` of those the fit may have is counted.

    What is fitted on the private data without noise is not counted but
    listed under ``"leaks"``: a scaler fitted on the private rows (scale
    with the validation set's statistics instead), any other final model
    (scikit-learn's ``SGDClassifier`` has an ``epsilon`` parameter, the
    width of its Huber loss, and is not private), a diffprivlib model left
    to read its bounds from the data, the cross-validation scores a search
    picks its candidate by, folds stratified on the private labels, samples
    held out as a validation set (by every fit of a search whose ``fit`` got no
    ``X_val``), and a ``noise_seed`` fixed in more than one fit (the same
    noise twice cancels). The workflow is private (``"private": True``)
    only when nothing leaks.

    Parameters
    ----------
    obj : estimator, search or list
        A fitted skdpval estimator (DPDataValuator, DPFederatedValuator,
        LayeredShapleyValuator, DPValueFilter, DPFilteredClassifier,
        DPFilteredRegressor, or any skdpval valuator with
        ``privacy_report_``), a fitted Pipeline containing them, a fitted
        search whose estimator contains them, or a list of such objects
        fitted on the same parties (their spends add up).
    delta : float in [0, 1) or None, default=None
        The delta of the returned ``epsilon``; ``None`` takes the largest
        delta requested by the Gaussian fits (0 when there are none). The
        returned ``delta`` adds ``sampler_delta``, the samplers' share over
        every fit (see the privacy model).

    Returns
    -------
    spent : dict
        ``mu`` (the whole workflow is ``mu``-GDP), ``epsilon`` at ``delta``
        (exact composition), ``delta`` (with ``sampler_delta``),
        ``sampler_delta``, ``epsilon_replace_one`` (replacing
        a party's data instead of zeroing it out), ``max_fits_per_party``,
        ``gaussian_mu`` (the Gaussian fits alone), ``pure_epsilons``
        (``(epsilon, count)`` pairs), ``private``, ``leaks`` and ``parts``
        (plain words), ``adjacency`` and ``method``.

    See Also
    --------
    DPDataValuator : Its ``privacy_report_`` is the guarantee of one fit.

    Notes
    -----
    A final model that is neither skdpval's nor diffprivlib's (its class's
    module starts with ``diffprivlib``) counts as private only if it has a
    method ``__dp_guarantee__()`` that returns, from its parameters alone
    (it is called on unfitted templates too), a dict with exactly one of
    ``"epsilon"`` (one fit is pure ``epsilon``-DP) or ``"mu"`` (one fit is
    ``mu``-GDP), and optionally ``"unit"`` (the protected unit, default
    ``"sample"``), under replace-one adjacency of one unit; or ``None``
    (no guarantee). A parameter named ``epsilon`` alone means nothing:
    scikit-learn's ``SGDClassifier``, ``SGDRegressor``, ``SVR`` and
    ``HuberRegressor`` have one and are not private.

    References
    ----------
    .. [1] Dong, Roth and Su. "Gaussian Differential Privacy." JRSS B, 2022
       (composition, Thm. 3.2; pure DP as a tradeoff curve, Prop. 2.5).
    .. [2] Kairouz, Oh and Viswanath. "The Composition Theorem for
       Differential Privacy." ICML 2015.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.model_selection import GridSearchCV, KFold
    >>> from skdpval import DPDataValuator, DPFilteredClassifier, privacy_spent
    >>> X, y = make_classification(n_samples=120, random_state=0)
    >>> X_val, y_val = make_classification(n_samples=40, random_state=1)
    >>> model = DPFilteredClassifier(DPDataValuator(epsilon=1.0, n_permutations=10,
    ...                                             random_state=0))
    >>> search = GridSearchCV(model, {"valuator__q": [0.5, 0.9]}, cv=KFold(3))
    >>> search = search.fit(X, y, X_val=X_val, y_val=y_val)
    >>> spent = privacy_spent(search)
    >>> spent["max_fits_per_party"]    # 2 candidates x 2 training folds + refit
    5
    >>> round(spent["epsilon"], 2)     # 5 fits at epsilon 1 (delta 5e-5)
    2.49
    >>> spent["private"]               # the final LogisticRegression is not
    False
    >>> for leak in spent["leaks"]:
    ...     print(leak[:60])
    LogisticRegression is fitted on the private data without a g
    model selection: the cross-validation scores (cv_results_) a
    """
    if delta is not None and not (isinstance(delta, Real) and 0 <= delta < 1):
        raise ValueError(f"delta must be a float in [0, 1) or None, got {delta!r}.")
    objects = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    if not objects:
        raise ValueError("privacy_spent got an empty list: pass fitted estimators.")
    spend, max_fits = _Spend(), 0
    for item in objects:
        if not hasattr(item, "get_params"):
            raise TypeError(
                "privacy_spent takes a fitted estimator, search or Pipeline, or "
                f"a list of them; got {type(item).__name__}.")
        check_is_fitted(item, msg=(
            "privacy_spent needs a fitted %(name)s: call fit first (an unfitted "
            "estimator has spent nothing)."))
        _refuse_joint(item)
        if isinstance(item, BaseSearchCV):
            item_spend, fits = _search_spend(item)
        else:
            item_spend, fits = _spend_of(item), 1
        if hasattr(item, "fit_resample") and not isinstance(item, Pipeline):
            item_spend.leak(f"{type(item).__name__} returns the kept rows, which are "
                            "the private data themselves")
        spend.add(item_spend)
        max_fits += fits
    return spend.summary(delta, max_fits)


def step_privacy_report(step):
    """``privacy_report_`` of a fitted DPValueFilter / DPFiltered* step.

    The valuation's own report, whether the valuation and the final model
    are private (and why, in plain words), and the composition of the
    whole step (:func:`privacy_spent`).
    """
    valuation = _spend_of(step.valuator_)
    report = {
        "valuation": dict(getattr(step.valuator_, "privacy_report_", None) or {})
        or None,
        "valuation_private": not valuation.leaks and bool(valuation.gaussian
                                                          or valuation.pure),
    }
    if hasattr(step, "estimator_"):
        final = _spend_of(step._privacy_components()[1])
        report["final_model_private"] = not final.leaks
        report["final_model"] = "; ".join(final.leaks or final.notes)
    else:
        report["output"] = (
            "the kept rows are the private data themselves: a model fitted on "
            "them is private only if its fit is (privacy_spent of the whole "
            "Pipeline composes its steps)")
    report.update(privacy_spent(step))
    return report


def _is_skdpval(estimator):
    return type(estimator).__module__.split(".")[0] == "skdpval"


def _spend_of(estimator, structures=None):
    """The spend of one (fitted or template) estimator, a single fit of it.

    ``structures`` maps a valuator's class name to the parts of a fitted
    sibling's report (a search's refit), the sizes a fit of the template may
    have, and the sibling's layout inputs, with which an unfitted template
    is planned (:func:`skdpval.privacy._plan.add_plan`).
    """
    spend = _Spend()
    if estimator is None or (isinstance(estimator, str) and estimator == "passthrough"):
        return spend
    if isinstance(estimator, BaseSearchCV):
        return _search_spend(estimator)[0]
    if isinstance(estimator, Pipeline):
        for _, step in estimator.steps:
            spend.add(_spend_of(step, structures))
        return spend
    components = getattr(estimator, "_privacy_components", None)
    if _is_skdpval(estimator) and components is not None:  # a filter
        valuator, final = components()
        spend.add(_valuator_spend(valuator, structures))
        if final is not None:
            # The template, not estimator_: diffprivlib's fit overwrites a
            # data_norm=None with the norm it read from the data.
            spend.add(_spend_of(final))
        return spend
    if _is_skdpval(estimator) or hasattr(estimator, "privacy_report_"):
        return _valuator_spend(estimator, structures)
    return _model_spend(estimator)


def _valuator_spend(valuator, structures=None):
    """A valuator: its report when fitted, else its planned guarantee.

    Reads only the report's schema (:data:`skdpval.privacy._mechanism.REPORT_KEYS`):
    its parts, sampler total variation, delta, unit and leaks.
    """
    spend, name = _Spend(), type(valuator).__name__
    fitted = hasattr(valuator, "values_")
    report = getattr(valuator, "privacy_report_", None)
    if fitted and report is None:
        spend.leak(f"{name} has no privacy_report_: its values are not private")
        return spend
    if fitted:
        _add_report(spend, name, report)
        seed = valuator.get_params(deep=False).get("noise_seed")
        if seed is not None and report["parts"]:
            spend.noise_seeds.append(seed)
    else:
        add_plan(spend, valuator, (structures or {}).get(name))
    if fitted and np.any(np.isnan(valuator.values_)):
        spend.holds_out = True
        spend.leak(
            f"{int(np.sum(np.isnan(valuator.values_)))} samples held out by {name} "
            "as its validation set are used without noise and are not protected: "
            "pass X_val, y_val (a public validation set)")
    return spend


def _add_report(spend, name, report):
    """One fitted valuator's parts, from its report."""
    if not np.isfinite(report["mu"]):  # no noise: no guarantee at all
        spend.gaussian.append((np.inf, 1))
    for part in report["parts"]:
        if part["law"] == "rounded Gaussian":
            spend.gaussian.append((float(part["mu"]), 1))
        else:
            spend.pure.append((part["epsilon"], part["epsilon_replace_one"],
                               part["n_releases"]))
    spend.deltas.append(float(report["delta"]))
    spend.sampler_tv.append((float(report["sampler_tv"]), 1))
    spend.units.append(report["unit"])
    for text in report["leaks"]:
        spend.leak(f"{name}: {text}")
    if report["details"].get("private_support") is False:
        spend.leak(f"{name}: the positions of the released coordinates "
                   "are chosen from private data (compression='topk')")
    finite = [p for p in report["parts"] if np.isfinite(p.get("mu", 0.0))]
    if finite and report["private"] is not None:
        spend.notes.append(f"{name}: {report['mu']:.6g}-GDP "
                           f"({', '.join(p['name'] for p in report['parts'])})")


def _model_spend(estimator):
    """Any other estimator fitted on the private data: private only if its
    guarantee is known (:func:`declared_guarantee`)."""
    spend, name = _Spend(), type(estimator).__name__
    if isinstance(estimator, FrozenEstimator) or not get_tags(estimator).requires_fit:
        return spend  # never fitted on the private data
    guarantee, why = declared_guarantee(estimator)
    if guarantee is None:
        spend.leak(f"{name} is fitted on the private data without a guarantee "
                   f"privacy_spent knows ({why}), so what it learns is not "
                   "private")
        return spend
    spend.units.append(guarantee.get("unit", "sample"))
    if "mu" in guarantee:
        spend.gaussian_replace_one.append((guarantee["mu"], 1))
        spend.notes.append(
            f"{name}: {guarantee['mu']:g}-GDP fit ({guarantee['source']})")
    else:
        epsilon = guarantee["epsilon"]
        spend.pure.append((epsilon, epsilon, 1))
        spend.notes.append(f"{name}(epsilon={epsilon:g}): pure epsilon-DP fit "
                           f"({guarantee['source']})")
    if is_classifier(estimator):
        spend.notes.append(
            f"{name} takes its classes_ from the labels of the rows it is fitted on "
            "(the kept private rows): the class set is assumed public, as "
            "y_val's; a class with no kept row would be missing from classes_")
    if guarantee["source"].startswith("diffprivlib"):
        params = estimator.get_params(deep=False)
        for bound in _DATA_BOUNDS:
            if bound in params and params[bound] is None:
                spend.leak(f"{name}({bound}=None) reads {bound} from the private "
                           "data (diffprivlib warns PrivacyLeakWarning): set it "
                           "from domain knowledge or the public validation set")
        if params.get("delta"):
            spend.leak(f"{name}(delta={params['delta']!r}): approximate-DP parts "
                       "other than skdpval's are not counted")
    return spend


def declared_guarantee(estimator):
    """The privacy guarantee of one fit of a model that is not skdpval's.

    A model counts as private in two cases only. A diffprivlib model (its
    class's module starts with ``diffprivlib``) is an ``epsilon``-DP fit by
    its ``epsilon`` parameter. Any other model declares its guarantee with a
    method ``__dp_guarantee__()``, computed from its parameters alone (it is
    called on unfitted templates), returning ``None`` (no guarantee) or a
    dict with exactly one of

    - ``"epsilon"``: one fit is pure ``epsilon``-DP, or
    - ``"mu"``: one fit is ``mu``-GDP,

    under replace-one adjacency of one ``"unit"`` (optional, default
    ``"sample"``). Every other model, whatever its parameters are called
    (scikit-learn's ``SGDClassifier`` has an ``epsilon`` that is the Huber
    loss's width), is not private.

    Returns
    -------
    guarantee : dict or None
        ``{"epsilon": float}`` or ``{"mu": float}``, with ``"unit"`` and
        ``"source"`` (plain words), or None.
    why : str
        Why there is no guarantee, when there is none.
    """
    if type(estimator).__module__.split(".")[0] == "diffprivlib":
        epsilon = estimator.get_params(deep=False).get("epsilon")
        if not (isinstance(epsilon, Real) and 0 < epsilon < np.inf):
            return None, f"diffprivlib model with epsilon={epsilon!r}"
        return {"epsilon": float(epsilon), "unit": "sample",
                "source": "diffprivlib model, by its epsilon parameter"}, ""
    declare = getattr(estimator, "__dp_guarantee__", None)
    if declare is None:
        return None, ("neither a diffprivlib model nor one declaring "
                      "__dp_guarantee__")
    declared = declare()
    if declared is None:
        return None, "its __dp_guarantee__() returned None"
    if not isinstance(declared, dict) or len(set(declared) & {"epsilon", "mu"}) != 1 \
            or not set(declared) <= {"epsilon", "mu", "unit"}:
        raise TypeError(
            f"{type(estimator).__name__}.__dp_guarantee__() must return None or a "
            "dict with exactly one of 'epsilon' (pure DP) or 'mu' (GDP), and "
            f"optionally 'unit'; got {declared!r}.")
    (key,) = set(declared) & {"epsilon", "mu"}
    value = declared[key]
    if not (isinstance(value, Real) and 0 < value < np.inf):
        return None, f"its __dp_guarantee__() declares {key}={value!r}"
    return {key: float(value), "unit": str(declared.get("unit", "sample")),
            "source": "declared by its __dp_guarantee__()"}, ""


def _search_spend(search):
    """Every candidate on its training folds, plus the refit."""
    check_is_fitted(search, "cv_results_")
    folds = _training_folds_per_party(search)
    candidates = search.cv_results_["params"]
    spend = _Spend()
    refit = hasattr(search, "best_estimator_")
    # The refit's valuators give the candidates' layout (their release
    # dimension is the data's, the public inputs of the public-model rule)
    # and the number of protected units; a fold holds fewer: each candidate
    # is planned at the training folds' smallest and largest sizes.
    fitted_structures = refit_structures(search.best_estimator_) if refit else {}
    fold_structures = {name: (parts, fold_sizes(search, n_units, _PARTITIONS), inputs)
                       for name, (parts, n_units, inputs) in fitted_structures.items()}
    for params in candidates:
        spend.add(_spend_of(clone(search.estimator).set_params(**params),
                            fold_structures), folds, fits=search.n_splits_)
    if refit:
        fitted = _spend_of(search.best_estimator_)
        planned = _spend_of(clone(search.estimator).set_params(
            **candidates[search.best_index_]),
            {name: (parts, (n_units, n_units), inputs)
             for name, (parts, n_units, inputs) in fitted_structures.items()})
        if len(fitted.gaussian) != len(planned.gaussian) or not np.allclose(
                sorted(fitted.gaussian), sorted(planned.gaussian), rtol=1e-9, atol=0):
            raise RuntimeError(
                "privacy_spent: the refit reports Gaussian fits "
                f"{fitted.gaussian} but its parameters plan {planned.gaussian}; "
                "the count of the search would be wrong. Please report this.")
        spend.add(fitted)
        if fitted.holds_out:
            spend.leak("the search's fit got no X_val: each of its fits held out its "
                       "own validation rows from the private data and used them "
                       "without noise (the count above is the refit's); pass X_val, "
                       "y_val")
    elif spend.gaussian or spend.gaussian_replace_one or spend.pure:
        spend.leak("refit=False: privacy_spent cannot tell whether the search's "
                   "fits got X_val; without it each fit held out its own "
                   "validation rows from the private data and used them without "
                   "noise")
    spend.leak("model selection: the cross-validation scores (cv_results_) and "
               "the choice of best_params_ are computed on the private data "
               "without noise; only the fits are counted")
    if _stratifies_on_labels(search):
        spend.leak("the folds are stratified on the private labels (an int cv "
                   "with a classifier means StratifiedKFold): one label can move "
                   "other samples between folds. Use cv=KFold(n_splits, "
                   "shuffle=True, random_state=...)")
    return spend, len(candidates) * folds + int(refit)


def _training_folds_per_party(search):
    """Most training sets of the search's splitter one party can be in.

    A party is in a training set when any of its rows is. When the fits
    value groups, only a splitter whose test folds partition the groups
    leaves a group out of one training set; any other (KFold over the
    rows...) may put some of a group's rows in every training set.
    """
    n_splits, cv = search.n_splits_, search.cv
    if _fits_value_groups(search):
        return n_splits - 1 if isinstance(cv, _GROUP_PARTITIONS) else n_splits
    if cv is None or isinstance(cv, Integral) or isinstance(cv, _PARTITIONS):
        return n_splits - 1
    if isinstance(cv, (RepeatedKFold, RepeatedStratifiedKFold)):
        return n_splits - cv.n_repeats
    if isinstance(cv, PredefinedSplit) and np.all(cv.test_fold != -1):
        return n_splits - 1
    return n_splits  # any other splitter: possibly every training set


def _fits_value_groups(search):
    """Whether the search's fits value groups (or clients), not samples.

    A search passes ``groups`` to its estimator only through metadata
    routing, when the estimator requests it; a refit that reports group
    units settles it too.
    """
    estimator = getattr(search, "estimator", None)
    if estimator is not None:
        try:
            if get_routing_for_object(estimator).consumes("fit", {"groups"}):
                return True
        except (AttributeError, TypeError):
            pass  # no metadata routing for this estimator
    fitted = getattr(search, "best_estimator_", None)
    return fitted is not None and "group" in _spend_of(fitted).units


def _stratifies_on_labels(search):
    cv = search.cv
    if cv is None or isinstance(cv, Integral):
        return is_classifier(search.estimator)
    return isinstance(cv, _STRATIFIED)
