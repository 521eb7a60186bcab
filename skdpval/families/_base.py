"""The family interface: what a model family tells the valuators, and its registry.

A *family* is a kind of model the walks can train: scikit-learn's linear
models (:mod:`skdpval.families.linear`), its multilayer perceptrons
(:mod:`skdpval.families.network`), or a family of your own (the user guide's
"Add a model family"). A family is one module: a subclass of :class:`Family`
registered for the estimator classes it reads, with :func:`register_family`
(the shape of Opacus's ``register_grad_sampler``). The valuators ask
:func:`family_of` for the family of their estimator and never branch on
which one they hold: what differs between families is behind the methods
below.

What a family provides:

- :meth:`Family.objective`: the estimator's per-party objective (its loss
  and penalties, scaled as the estimator scales them), or a refusal that
  says why;
- :meth:`Family.public_params`: what it chooses on the public validation set
  (a ``*CV`` variant's hyper-parameters);
- :meth:`Family.view`: the rows and targets as its kernels read them
  (:class:`View`: the design matrix, the targets' encoding, the rows'
  weights, the penalties);
- :meth:`Family.space`: where a walk lives (every parameter, a public basis,
  or the public line) and the walk problems, whose ``walk`` runs the
  family's numba kernels (so no walk has a generic Python path);
- the private fit of the public model: :meth:`Family.fit_problem` and
  :meth:`Family.gradient_sum` (the family's clipped, exactly summed
  gradients; the noise and the clip's bound are the privacy layer's), and
  the parameter layout :meth:`Family.parameters_of` /
  :meth:`Family.with_parameters`.

Clipping, sensitivity and the noise are never taken on trust from a family:
the kernels clip with the privacy layer's :func:`clip_l2` and release
through it; a family only says how a party's gradient is computed.
"""

from abc import ABC, abstractmethod
from collections import namedtuple
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from sklearn.utils.class_weight import compute_class_weight
from threadpoolctl import ThreadpoolController

ALTERNATIVE = ("To score labels with any model fitted on the public validation "
               "set, use DPLabelQuality.")


@dataclass(frozen=True)
class Objective:
    """A party's objective, as the kernels minimise it.

    ``loss`` is the family's loss (an integer code of
    :mod:`skdpval.kernels`); the penalties are per party (already divided
    by ``n`` where the estimator sums its losses). ``family`` is the family
    that read it; ``details`` holds what only that family reads (a
    network's layers).
    """

    loss: int
    is_classifier: bool
    fit_intercept: bool
    loss_param: float = 0.0  # epsilon, quantile or Tweedie power
    l2_per_sample: float = 0.0
    multinomial: bool = False  # three or more classes: softmax (else one-vs-rest)
    l1_per_sample: float = 0.0
    penalize_intercept: bool = False  # liblinear: the intercept is a feature
    intercept_scaling: float = 1.0  # the intercept column's value
    binary_only: bool = False  # liblinear LogisticRegression
    class_weight: object = None  # None, a dict or "balanced" (from y_val)
    weights_sum_to_n: bool = False  # the estimator rescales sample weights
    target_domain: str = "real"  # "real", "nonnegative" or "positive"
    # The loss the public direction minimises on the validation set when the
    # model's own is minimised at zero (the perceptron's): None for the same.
    direction_loss: int = None
    # Regression targets the walk standardises by the public y_val, with the
    # loss's degree of homogeneity (values in standardised units times
    # scale**degree are in the utility's units); None: targets as given.
    target_scale_degree: int = None
    family: object = field(default=None, compare=False)
    details: object = None


View = namedtuple("View", [
    "X", "T", "offsets", "X_val", "T_val", "labels_val", "loss", "loss_param", "l2",
    "l1", "n_penalized", "total_sum_squares", "row_weights", "val_weights",
    "target_std", "objective"])
View.__doc__ = """The training parties and the validation set as a family's kernels read them.

``X[offsets[j]:offsets[j + 1]]`` are party ``j``'s rows (the intercept's
column appended where the family's design has one); ``T`` and ``T_val`` the
targets' encoding (+-1, one-hot, or standardised values); ``loss`` the
kernels' loss code for these targets; ``row_weights`` / ``val_weights`` the
rows' public loss weights (None: unweighted); ``target_std`` the public
scale of standardised regression targets (1 otherwise), by which the loss's
own parameter and an L1 term are divided.
"""


FitProblem = namedtuple("FitProblem", [
    "theta0", "X", "T", "offsets", "X_val", "loss", "loss_param", "l2", "l1",
    "n_penalized", "row_weights", "centre", "scale", "has_intercept",
    "intercept_scaling", "details"], defaults=(None,))
FitProblem.__doc__ = """The private fit of the public model in its family's layout:
``theta0`` its start (the validation model); ``centre`` and ``scale`` of
standardised regression targets (undone on the result); ``details`` the
objective's family-specific details (a network's layers)."""


FitDescent = namedtuple("FitDescent", ["n_steps", "step", "details"])
FitDescent.__doc__ = """A family's private fit: ``n_steps`` releases; ``step()``
a fresh rule ``(t, mean gradient) -> theta's change`` (post-processing of
the releases); ``details`` for the report."""


class Family(ABC):
    """Base class of the model families; see the module docstring.

    A subclass is registered for the estimator classes it reads with
    :func:`register_family`; the valuators reach it through
    :func:`family_of`.
    """

    #: Its name in messages and reports.
    name = "family"

    # --- the objective -------------------------------------------------------------

    @abstractmethod
    def objective(self, estimator, *, n_parties, public=None):
        """The :class:`Objective` of ``estimator`` for ``n_parties`` parties.

        ``public`` holds what :meth:`public_params` chose on the validation
        set; without it, placeholders (for the checks before any data is
        read). Raises a TypeError or ValueError naming what is not supported.
        """

    def public_params(self, estimator, X_val, y_val, seed):
        """Parameters chosen on the public validation set (none by default)."""
        return {}

    def describe(self, estimator_class):
        """The objective of ``estimator_class`` in words (the docs' coverage
        table and the command line's model list)."""
        return f"the objective of the {self.name} family"

    # --- the data as the kernels read them ---------------------------------------

    def intercept_column(self, objective):
        """Whether the kernels' rows carry the intercept's column (a linear
        model's; a network keeps its intercepts apart)."""
        return False

    def design(self, objective, *arrays):
        """The arrays of rows as the family's kernels read them: with the
        intercept's column appended (:meth:`intercept_column`): ones, or
        liblinear's ``intercept_scaling``."""
        if not self.intercept_column(objective):
            return arrays
        return tuple(
            A.with_column(objective.intercept_scaling) if hasattr(A, "with_column")
            else np.hstack([A, np.full((len(A), 1), objective.intercept_scaling)])
            for A in arrays)

    def encode_targets(self, objective, y_index, n_classes):
        """``(T, loss)``: a classifier's targets for class indices ``y_index``
        (+-1 for two classes and one-vs-rest, one-hot for the multinomial
        loss) and the loss code for them."""
        y_index = np.asarray(y_index)
        if objective.binary_only and n_classes > 2:
            raise ValueError(
                f"This model takes two classes only, as in scikit-learn, and "
                f"there are {n_classes}: use a multinomial model or "
                "one-vs-rest (LinearSVC, SGDClassifier).")
        if n_classes == 2:
            return np.where(y_index == 1, 1.0, -1.0).reshape(-1, 1), objective.loss
        one_hot = (y_index[:, None] == np.arange(n_classes)[None, :]).astype(np.float64)
        if objective.multinomial:
            return one_hot, self.multinomial_loss
        return 2.0 * one_hot - 1.0, objective.loss

    #: The loss code of the softmax over classes.
    multinomial_loss = None

    def view(self, objective, parties, *, utility, sample_weight=None,
             n_fit_parties=None):
        """The :class:`View` of ``parties`` under ``objective``.

        ``utility`` is the valuator's (R^2 needs ``y_val`` not constant);
        ``sample_weight`` (public, one per input sample) multiplies each
        row's loss with ``class_weight``.
        """
        y, y_val, classes = parties.y, parties.y_val, parties.classes
        if objective.is_classifier:
            T, loss = self.encode_targets(objective, y, len(classes))
            T_val, _ = self.encode_targets(objective, y_val, len(classes))
            labels_val, total_sum_squares = np.asarray(y_val, dtype=np.int64), 1.0
        else:
            total_sum_squares = float(np.sum((y_val - y_val.mean()) ** 2))
            if utility == "r2" and total_sum_squares == 0:
                raise ValueError("utility='r2' needs y_val that is not constant.")
            T, T_val, loss = (np.reshape(y, (-1, 1)), np.reshape(y_val, (-1, 1)),
                              objective.loss)
            labels_val = np.zeros(len(y_val), dtype=np.int64)
        check_target_domain(objective, y, "y")
        check_target_domain(objective, y_val, "y_val")
        X, X_val = self.design(objective, parties.X, parties.X_val)
        weights, val_weights = row_weights(
            objective, y, y_val, classes,
            None if sample_weight is None else sample_weight[parties.rows])
        # Standardised targets (by s) divide the loss's own scale (huber's
        # epsilon) by s, and an L1 term of a squared loss by s as well: the
        # objective is then the original one over s^2 (L2 terms keep alpha).
        target_std = 1.0 if parties.target_scale is None else parties.target_scale[1]
        n_penalized = parties.X.shape[1] + (objective.fit_intercept
                                            and objective.penalize_intercept)
        return View(X, T, parties.offsets, X_val, T_val, labels_val, loss,
                    objective.loss_param / target_std, objective.l2_per_sample,
                    objective.l1_per_sample / target_std, n_penalized,
                    total_sum_squares, weights, val_weights, target_std, objective)

    # --- where the walk lives --------------------------------------------------------

    @abstractmethod
    def space(self, view, subspace, *, validation_objective, seed, refine=None):
        """Where a walk of ``view`` lives: a space object.

        ``subspace`` is the valuator's (``"public"``, None or a basis);
        ``validation_objective`` the objective as the estimator weighs it on
        the validation rows (the public direction's fit); ``seed`` the public
        randomness a family may need (an initialisation); ``refine(theta_val)
        -> (unit direction, norm)`` (when not None) fits the public model
        privately from the validation model's parameters (the valuator owns
        it: it draws through the privacy mechanism). The space has
        ``basis`` (None for every parameter), ``line_center`` (where the
        public model lies along a public line, 0 otherwise) and
        ``public_model`` (its parameters in the kernels' layout, or None),
        and answers the valuator's questions: ``coordinates``,
        ``release_dimension``, ``initial_theta``, ``party_gradients``,
        ``sgd_pass``, ``utilities``, ``margin_scale`` and ``problem`` (the
        walk problem, whose ``walk`` runs the family's kernels).
        """

    @abstractmethod
    def walk_kernel(self, view, subspace, utility):
        """``(kernel, what, seconds)``: the numba kernel a walk in ``subspace``
        runs, what it is in words, and the first fit's measured time when it is
        the library's default walk (None otherwise): for the warning on a
        first compilation."""

    # --- the private fit of the public model ---------------------------------------

    def private_fit_unsupported(self, estimator):
        """Why ``estimator`` cannot be fitted privately, or None when it can."""
        return f"{type(estimator).__name__} ({self.name}) has no private fit"

    def fit_problem(self, view, theta0, *, record_level=False, centre=0.0,
                    scale=1.0, has_intercept=False):
        """The :class:`FitProblem` of ``view`` from ``theta0``; with
        ``record_level`` every row is a party of the fit."""
        offsets = np.arange(len(view.X) + 1) if record_level else view.offsets
        return FitProblem(theta0, view.X, view.T, offsets, view.X_val, view.loss,
                          view.loss_param, view.l2, view.l1, view.n_penalized,
                          view.row_weights, centre, scale, has_intercept,
                          view.objective.intercept_scaling, view.objective.details)

    def gradient_sum(self, problem, *, clip, unit):
        """``f(theta) -> sum over parties`` of each party's gradient clipped to
        ``clip`` and rounded to multiples of ``unit`` (int64, exact in any
        order), for the private fit's noisy descent."""
        raise NotImplementedError(f"the {self.name} family has no private fit")

    #: Whether :meth:`space` refits its public line from the private fit
    #: (the ``refine`` argument): DPDataValuator's private fit needs it.
    refines_line = False

    #: Whether the private fit runs on rows held by Dask (on their blocks).
    private_fit_on_dask = True

    #: Whether DPDataValuator walks this family on rows held by Dask.
    walks_on_dask = True

    def n_fit_params(self, estimator, n_features, n_outputs):
        """How many parameters the private fit releases (public)."""
        return n_outputs * (n_features + 1)

    def fit_descent(self, problem):
        """None (the preconditioned descent of
        :func:`skdpval.valuation._public_model.run_fit`, for models linear in
        their parameters), or a :class:`FitDescent`: the family's own
        number of steps and step rule for its private fit."""
        return None

    def curvature(self, loss):
        """A bound on the loss's second derivative in the margin (the private
        fit's preconditioner)."""
        raise NotImplementedError(f"the {self.name} family has no private fit")

    def parameters_of(self, model, n_outputs, n_columns, has_intercept,
                      intercept_scaling):
        """A fitted estimator's parameters in the kernels' layout."""
        raise NotImplementedError(f"the {self.name} family has no parameter layout")

    def with_parameters(self, model, theta, has_intercept, intercept_scaling):
        """A copy of ``model`` whose parameters are ``theta``."""
        raise NotImplementedError(f"the {self.name} family has no parameter layout")

    # --- what a valuator may need ------------------------------------------------------

    #: What the family supports beyond a walk in memory: "federated" (rounds
    #: of every client's gradient), "dask" (rows held by Dask), "private fit".
    supports = frozenset()

    def require(self, feature, estimator):
        """Raise a TypeError when ``feature`` is not in :attr:`supports`, with the
        family's message (:attr:`unsupported`, ``{estimator}`` the class name)."""
        if feature not in self.supports:
            message = self.unsupported.get(
                feature, "{estimator} (the %s family) does not support %s."
                % (self.name, feature))
            raise TypeError(message.format(estimator=type(estimator).__name__))

    #: Why a feature is not supported: a message with ``{estimator}``.
    unsupported = {}


class Refused:
    """A registry entry for an estimator class no family can walk, with why."""

    def __init__(self, reason, closest):
        self.reason, self.closest = reason, closest


# Estimator class -> Family instance or Refused entry.
_REGISTRY = {}


def register_family(*estimator_classes):
    """Class decorator: register a :class:`Family` for ``estimator_classes``.

    An instance of the decorated class serves every estimator whose class
    (or nearest registered base class) is one of them; a later registration
    of a class replaces an earlier one.
    """
    def register(family_class):
        family = family_class()
        for cls in estimator_classes:
            _REGISTRY[cls] = family
        return family_class

    return register


def refuse(estimator_class, reason, closest):
    """Register ``estimator_class`` as refused: ``reason`` says why, ``closest``
    names the nearest supported model."""
    _REGISTRY[estimator_class] = Refused(reason, closest)


def registered():
    """``{estimator class: Family or Refused}``, a copy."""
    return dict(_REGISTRY)


def family_of(estimator):
    """The :class:`Family` of ``estimator``'s class (or of its nearest
    registered base class); a TypeError naming what is supported otherwise."""
    for cls in type(estimator).__mro__:
        entry = _REGISTRY.get(cls)
        if isinstance(entry, Refused):
            raise TypeError(
                f"{type(estimator).__name__} is not supported by the valuators: "
                f"{entry.reason}. The closest supported model: {entry.closest}. "
                f"{ALTERNATIVE}")
        if entry is not None:
            return entry
    supported = ", ".join(sorted(cls.__name__ for cls, entry in _REGISTRY.items()
                                 if not isinstance(entry, Refused)))
    raise TypeError(
        f"The valuators cannot value data for {type(estimator).__name__}: "
        f"supported estimators are {supported}. {ALTERNATIVE}")


def objective_of(estimator, *, n_parties=1, public=None):
    """``family_of(estimator).objective(...)``, with the family recorded."""
    family = family_of(estimator)
    return family.objective(estimator, n_parties=n_parties, public=public)


# --- weights and targets (public) ---------------------------------------------------


def check_sample_weight(sample_weight, n_samples):
    """``sample_weight`` as floats, or None: one finite weight >= 0 per sample,
    not all zero. The weights are public (the user's parameters)."""
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},), one "
                         f"weight per sample, got {weights.shape}.")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or not weights.any():
        raise ValueError("sample_weight must be finite and >= 0, and not all zero.")
    return weights


def check_class_weight(name, class_weight):
    if class_weight is None or isinstance(class_weight, dict):
        return
    if isinstance(class_weight, str) and class_weight == "balanced":
        return
    raise ValueError(f"{name}: class_weight must be None, a dict or 'balanced', "
                     f"got {class_weight!r}.")


def row_weights(objective, y_index, y_val_index, classes, sample_weight):
    """Each row's loss weight, ``class_weight[y] * sample_weight``, public.

    ``class_weight="balanced"`` is computed from the validation labels
    (public): from the private labels it would make every party's weight
    depend on the others' labels. ``sample_weight`` is the user's, public;
    where the estimator rescales weights to sum to ``n`` they are rescaled
    by their (public) sum. Returns ``(weights of y_index, weights of
    y_val_index)``; ones when unweighted.
    """
    n = len(y_index)
    weights = np.ones(n) if sample_weight is None else np.asarray(
        sample_weight, dtype=np.float64).copy()
    weights_val = np.ones(len(y_val_index))
    if objective.is_classifier and objective.class_weight is not None:
        per_class = class_weights(objective.class_weight, classes, y_val_index)
        weights *= per_class[np.asarray(y_index, dtype=np.int64)]
        weights_val *= per_class[np.asarray(y_val_index, dtype=np.int64)]
    if objective.weights_sum_to_n and sample_weight is not None:
        weights *= n / np.sum(sample_weight)
    return weights, weights_val


def class_weights(class_weight, classes, y_val_index):
    """One weight per class index; "balanced" from the validation labels."""
    n_classes = len(classes)
    if isinstance(class_weight, str):  # "balanced", from the public labels
        present = np.unique(y_val_index)
        if len(present) < n_classes:
            missing = [classes[k] for k in range(n_classes) if k not in present]
            raise ValueError(
                "class_weight='balanced' is computed from the validation labels "
                f"(public), and classes {missing} have none there: pass a dict.")
        return compute_class_weight("balanced", classes=np.arange(n_classes),
                                    y=np.asarray(y_val_index))
    weights = np.ones(n_classes)
    for k, label in enumerate(classes):
        if label in class_weight:
            weights[k] = float(class_weight[label])
    unknown = set(class_weight) - set(np.asarray(classes).tolist())
    if unknown:
        raise ValueError(f"class_weight has labels {sorted(unknown, key=str)} "
                         f"that are not classes ({list(classes)}).")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("class_weight values must be finite and >= 0.")
    return weights


def check_target_domain(objective, y, name):
    """Raise when targets leave the model's domain (Poisson y >= 0, Gamma y > 0).

    Reads the targets themselves (for ``y``, private): it runs before any
    release, and an input outside the domain is outside the privacy model
    (whether the error is raised depends on the data; what it says does
    not: it quotes no value, not even for the public ``y_val``, so that
    both messages read alike).
    """
    y = np.asarray(y, dtype=np.float64)
    if objective.target_domain == "nonnegative" and np.any(y < 0):
        raise ValueError(f"{name} must be >= 0 for this model (Poisson or Tweedie "
                         "with 1 <= power < 2): it has negative targets (their "
                         "values are not shown, since they may be private).")
    if objective.target_domain == "positive" and np.any(y <= 0):
        raise ValueError(f"{name} must be > 0 for this model (Gamma or Tweedie "
                         "with power >= 2): it has targets <= 0 (their values "
                         "are not shown, since they may be private).")


@lru_cache(maxsize=None)
def _blas_controller():
    """The process's BLAS libraries (found once)."""
    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS (OpenBLAS, MKL) runs on one thread, for the small
    BLAS calls of a fit's set-up (scipy's L-BFGS): OpenBLAS's threads spin
    after a threaded call and take a walk thread's core."""
    return _blas_controller().limit(limits=1, user_api="blas")
