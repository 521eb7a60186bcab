"""Planning the fits of a search that no one can see: :func:`add_plan`.

A search (``GridSearchCV``...) keeps only its refit; every candidate fitted
on a training fold is gone. :func:`skdpval.privacy_spent` counts each of
them from the candidate's parameters, with the same calibration as a fit
(:meth:`skdpval.privacy._mechanism.PrivacyMechanism.plan`), laid out part by
part as the fit would have laid it out. The layout comes from the valuator
(``_planned_parts``: which parts a fit of these parameters on ``n`` protected
units declares, e.g. whether ``public_model="auto"`` fits the public model
privately), from what a fitted sibling (the search's refit) reports of its
parts, and from the training folds' sizes (public: the splitter's, from
``n`` and ``n_splits``). Where the layout cannot be known (a splitter whose
folds' sizes are unknown, no refit), every layout the fit could have is
planned and the largest ``mu`` counted.
"""

from numbers import Integral

from sklearn.base import is_classifier
from sklearn.model_selection import KFold, LeaveOneOut
from sklearn.pipeline import Pipeline

from ._accounting import composed_mu
from ._mechanism import PrivacyMechanism

# The name of a fitted valuator's attribute with the public inputs of its
# layout (e.g. the validation rows and parameters the public-model rule read).
LAYOUT_INPUTS = "_layout_inputs_"


def one_release():
    """The layout of a valuator that does not declare its own: one release
    of one coordinate per party."""
    return [dict(name="release", law="rounded Gaussian", n_releases=1, dimension=1,
                 zero_neighbour=True, share=1.0, n_releases_param=None)]


def refit_structures(estimator):
    """``{class name: (parts, n_units, inputs)}`` of the fitted valuators in
    ``estimator`` (a search's refit)."""
    found = {}
    steps = ([step for _, step in estimator.steps]
             if isinstance(estimator, Pipeline) else [estimator])
    for step in steps:
        components = getattr(step, "_privacy_components", None)
        valuator = components()[0] if components is not None else step
        report = getattr(valuator, "privacy_report_", None)
        if report is not None and "parts" in report:
            found.setdefault(type(valuator).__name__, (
                report["parts"], report["details"].get("n_units", 1),
                getattr(valuator, LAYOUT_INPUTS, None)))
    return found


def fold_sizes(search, n_units, partitions):
    """``(smallest, largest)`` protected units a training fold of ``search``
    can hold, for a refit on ``n_units``. ``partitions`` are the splitters
    whose test folds partition the data: their smallest training fold is
    ``n - ceil(n / n_splits)`` (else 1, which gives ``delta="auto"`` its
    cap). The largest is exact for KFold (``n - floor(n / n_splits)``) and
    LeaveOneOut, else ``n_units``."""
    cv, n_splits = search.cv, search.n_splits_
    regressor_kfold = ((cv is None or isinstance(cv, Integral))
                       and not is_classifier(search.estimator))
    smallest = (max(1, n_units - -(-n_units // n_splits))
                if cv is None or isinstance(cv, (Integral, *partitions)) else 1)
    largest = n_units
    if isinstance(cv, (KFold, LeaveOneOut)) or regressor_kfold:
        largest = max(smallest, n_units - n_units // n_splits)
    return smallest, largest


def add_plan(spend, valuator, structure=None):
    """An unfitted valuator's planned parts, from its parameters, into
    ``spend``: each part's ``mu`` (as a fit reports them). ``structure`` is
    ``(parts, (smallest, largest) units, inputs)`` of a fitted sibling, or
    None."""
    name = type(valuator).__name__
    params = valuator.get_params(deep=False)
    parts, sizes, inputs = structure if structure is not None else (None, (1, None),
                                                                    None)
    mechanism = PrivacyMechanism.of(
        valuator, adds_noise=getattr(valuator, "_adds_noise", lambda: True)())
    if not mechanism.adds_noise:
        spend.leak(f"{name} adds no privacy noise (epsilon=np.inf or "
                   "noise='none'): its values are not private")
        return
    layout = getattr(valuator, "_planned_parts", None)
    plans = []
    for n_units in dict.fromkeys(sizes):  # the smallest fold, then the largest
        layouts = ([parts or getattr(valuator, "_privacy_parts", one_release)()]
                   if layout is None else layout(parts, n_units, inputs))
        for parts_of_fit in layouts:
            try:
                plans.append(PrivacyMechanism.plan(params, parts_of_fit,
                                                   n_units=n_units or 1))
            except ValueError as error:
                raise ValueError(f"privacy_spent cannot count a {name} inside a "
                                 f"search from its parameters alone: {error}"
                                 ) from None
    # Where the layout depends on what is not known (a fold's size, a
    # sibling): the largest mu, the largest sampler share, the largest delta.
    mus, _, _ = max(plans, key=lambda plan: composed_mu([(mu, 1) for mu in plan[0]]))
    spend.gaussian += [(float(mu), 1) for mu in mus]
    spend.deltas.append(float(max(plan[2] for plan in plans)))
    spend.sampler_tv.append((float(max(plan[1] for plan in plans)), 1))
    mu = composed_mu([(mu, 1) for mu in mus])
    several = len({tuple(plan[0]) for plan in plans}) > 1
    spend.notes.append(f"{name}: {mu:.6g}-GDP (Gaussian releases, planned"
                       + (", the largest of the layouts its fit may have)"
                          if several else ")"))
    if params.get("noise_seed") is not None:
        spend.leak(f"{name}(noise_seed={params['noise_seed']!r}) makes the noise "
                   "reproducible: a seeded fit is not private")
        spend.noise_seeds.append(params["noise_seed"])
