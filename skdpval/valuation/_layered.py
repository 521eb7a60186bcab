"""LayeredShapleyValuator: Layered Shapley values with Laplace output noise.

Watson et al., "Differentially private Shapley values for data evaluation"
(the seed ``layered-shapley-paper.md``): the Shapley value of a point is the
average over coalition sizes ``k`` of its mean marginal gain over coalitions
of that size. Layered Shapley samples layer ``k`` with
``m_k = c^2 / (2 alpha^2 k^2) ln(2n / beta)`` coalitions (Algorithm 1),
using that marginal gains of a uniformly stable learner shrink like
``c / k``; the private version adds Laplace noise to each value (Algorithm
2, Theorem 3.5 with the sensitivity of Appendix D).

Where the code departs from the paper, to keep its guarantee true:

- each layer's gain is the mean over the coalitions actually drawn (the
  paper divides by the expected number ``m_k``, which exceeds the Appendix D
  bound whenever more coalitions are drawn than expected);
- no amplification by sampling is claimed. The inclusion probability of
  the code's own sampler (:func:`inclusion_probability`; Theorem 3.4's
  ``ln n / n`` understates it) is reported, but the amplification theorems
  (Balle et al. 2018) need the output without the point to be the output of
  a sample that never held it, whereas conditioning a coalition on holding
  a point changes the rest of its members; and the sample would have to be
  secret. The Laplace scale is the Appendix D sensitivity over epsilon,
  which holds for every draw;
- the bound's assumptions are enforced, not trusted: with ``epsilon``, the
  private rows are clipped to [0, 1] and scaled down so that the norm of
  ``(x, 1)`` is at most ``kappa`` (:func:`shrink_rows_to_kappa`, as
  diffprivlib does with ``data_norm``), and ``lipschitz`` is at least 1, the
  Lipschitz constant of the log loss that every coalition is fitted with.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.utils import ClassifierTags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed

from ..exceptions import SkdpvalWarning
from ..privacy import LAYERED, PRIVACY_CONSTRAINTS, share_privacy_docs
from ._base import STEP_TO_USER, BaseValuator
from ._layers import (_value_point, appendix_d_sensitivity, inclusion_probability,
                      layer_sizes, shrink_rows_to_kappa)


@share_privacy_docs
class LayeredShapleyValuator(BaseValuator):
    """Layered Shapley values, optionally with Laplace output perturbation.

    Each training point's Shapley value is estimated layer by layer: for
    coalition size ``k``, about ``m_k`` coalitions of the other points are
    drawn (a binomial number, each uniform over the ``C(n-1, k)``; a layer is
    enumerated when ``m_k`` reaches its size), and the marginal gain
    ``v(C + i) - v(C)`` is averaged over the coalitions drawn, with ``v`` the
    negative validation log loss of an L2-regularised logistic regression
    fitted on the coalition. Coalitions whose value is below random guessing
    (``-ln 2``) are skipped (they count as a gain of 0), as in the paper.
    Unlike the paper's Algorithm 1, the empty coalition's layer (``k = 0``,
    one coalition) is included, so that exhaustive layers give exactly the
    Shapley value.

    With ``epsilon``, each value gets Laplace noise of scale
    ``noise_scale_`` (Theorem 3.5 with the sensitivity of Appendix D,
    without the paper's amplification by sampling: see the module notes).
    That guarantee needs a trusted curator holding all the data, feature
    vectors with ``|(x, 1)| <= kappa``, the exact regularised minimiser
    (uniform stability) and an ``L``-Lipschitz loss. The first is enforced
    on the private data, silently (an error or a warning would depend on a
    private value without noise): each row of ``X`` is clipped to [0, 1],
    the declared domain, then scaled down so that ``|(x, 1)| <= kappa``
    (a no-op for rows in [0, 1] with ``kappa="auto"``), before anything
    else reads it; the validation rows are scaled down the same way (the
    stability bound holds the validation loss to ``kappa`` too), and must
    lie in [0, 1] (``X_val`` is public: outside it is an error). The loss
    is the log loss, 1-Lipschitz in the margin, so ``lipschitz >= 1``.
    What it covers:

    - adjacency: zero-out (Appendix D's removal stability: the point's loss
      is taken out of every coalition it is in); replacing a point doubles
      the sensitivity, reported as ``epsilon_replace_one_per_value``;
    - per released value: a point is covered by ``epsilon`` in each of the
      other ``n - 1`` values, ``(n - 1) epsilon`` for all of them (basic
      composition); a point's own value is computed from its own data and
      is *not* covered;
    - not the validation set, held out of ``X`` when not given (the report
      gives the number of held-out samples, which is public).

    Parameters
    ----------
    estimator : LogisticRegression, default=None
        Its ``C`` sets ``lambda = 1 / (2 C n)`` (its own per-sample penalty on
        the ``n`` training points) in the coalition objective
        ``mean log loss + lambda |w|^2``, the same for every coalition
        (intercept included and penalised, as the stability bound needs);
        ``None`` means ``LogisticRegression()``.
    alpha, beta : float in (0, 1), default=0.05
        The (alpha, beta) approximation of Theorem 3.3.
    c : float > 0 or "auto", default="auto"
        Bound constant of the marginal gains ``|v_i(C)| <= c / k``;
        ``"auto"`` is 1.0, a practical value (the worst-case stability bound
        ``L^2 kappa^2 / lambda`` would make every layer exhaustive).
    epsilon : float > 0 or np.inf, default=np.inf
        Privacy budget of each released value (pure DP); ``np.inf`` adds no
        noise (no privacy), as for the other valuators.
    lipschitz : float >= 1, default=1.0
        Lipschitz constant ``L`` of the loss in the margin. The coalitions
        are fitted with the log loss, which is 1-Lipschitz, so values below
        1 would understate the sensitivity and are refused; a larger value
        only adds noise.
    kappa : float > 1 or "auto", default="auto"
        Bound on the norm of a feature vector with its intercept feature 1,
        ``|(x, 1)| <= kappa``. With ``epsilon``, each row of ``X`` and
        ``X_val`` is scaled down to meet it (the intercept feature stays 1,
        hence ``kappa > 1``). ``"auto"`` is ``sqrt(n_features + 1)``, which
        every row in [0, 1] already meets; a smaller value means less noise
        but shrinks the rows that exceed it.
    utility : {"neg_loss"}, default="neg_loss"
        The negative validation log loss.
    skip_below_baseline : bool, default=True
        Skip coalitions whose value is below random guessing, as the paper
        does (the estimate is then no longer exactly a Shapley value).
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the points held out as the validation set when ``fit``
        gets no ``X_val``, drawn at random without reading labels (a split
        stratified on labels would let one label move other points).
    classes : array-like of two labels or None, default=None
        The two class labels. ``None`` takes them from ``y_val`` (public),
        never from the private ``y``.
    n_jobs : int or None, default=None
        Points valued in parallel (joblib threads).
    random_state : int, RandomState instance or None, default=None
        Seeds the public randomness: the split, the coalitions and the order
        of tied values in ``rank_``. It never seeds the noise.
    %(noise_seed)s

    Attributes
    ----------
    values_ : ndarray of shape (n_samples,)
        Value of each sample (private when ``epsilon`` is set); NaN for
        held-out validation samples.
    rank_ : ndarray of shape (n_samples,)
        1 for the most valuable (ties in a random order, not the rows');
        0 for held-out samples.
    n_coalitions_ : ndarray of shape (n_samples,)
        Coalitions evaluated for each point (0 for held-out samples).
    noise_scale_ : float
        Laplace scale of the noise (only with a finite ``epsilon``).
    epsilon_, delta_ : float
        The guarantee of a party over the other ``n - 1`` values (basic
        composition, ``delta_ = 0``; ``inf`` without noise). A party's own
        value is not covered.
    noise_multiplier_ : float
        The Laplace scale over the sensitivity, ``1 / epsilon``.
    n_releases_ : int
        Values that depend on one party's data besides its own: ``n - 1``.
    privacy_unit_ : {"sample"}
        Whom ``epsilon_`` protects.
    privacy_report_ : dict
        The guarantee in the schema of every valuator; ``"details"`` holds
        the assumptions, the inclusion probability and what is not covered.
    classes_ : ndarray of shape (2,)
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> from skdpval import LayeredShapleyValuator
    >>> X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    >>> X = MinMaxScaler().fit_transform(X)
    >>> valuator = LayeredShapleyValuator(alpha=0.3, random_state=0).fit(X, y)
    >>> valuator.values_.shape
    (40,)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "get_params"]), None],
        "alpha": [Interval(Real, 0.0, 1.0, closed="neither")],
        "beta": [Interval(Real, 0.0, 1.0, closed="neither")],
        "c": [Interval(Real, 0.0, None, closed="neither"), StrOptions({"auto"})],
        "epsilon": [Interval(Real, 0.0, None, closed="right")],
        # The log loss is 1-Lipschitz in the margin; (x, 1) has norm >= 1.
        "lipschitz": [Interval(Real, 1.0, None, closed="left")],
        "kappa": [Interval(Real, 1.0, None, closed="neither"), StrOptions({"auto"})],
        "utility": [StrOptions({"neg_loss"})],
        "skip_below_baseline": ["boolean"],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "classes": ["array-like", None],
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "noise_seed": PRIVACY_CONSTRAINTS["noise_seed"],
    }

    def __init__(self, estimator=None, *, alpha=0.05, beta=0.05, c="auto",
                 epsilon=np.inf, lipschitz=1.0, kappa="auto", utility="neg_loss",
                 skip_below_baseline=True, validation_fraction=0.2, classes=None,
                 n_jobs=None, random_state=None, noise_seed=None):
        self.estimator = estimator
        self.alpha = alpha
        self.beta = beta
        self.c = c
        self.epsilon = epsilon
        self.lipschitz = lipschitz
        self.kappa = kappa
        self.utility = utility
        self.skip_below_baseline = skip_below_baseline
        self.validation_fraction = validation_fraction
        self.classes = classes
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.noise_seed = noise_seed

    # Its budget grows with the number of values, which a template does not know.
    _planned_release = {**BaseValuator._planned_release, "law": "discrete Laplace"}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags = ClassifierTags(multi_class=False)  # binary only
        return tags

    def _inverse_regularisation(self):
        """The estimator's ``C``, checked."""
        estimator = LogisticRegression() if self.estimator is None else clone(self.estimator)
        if (not isinstance(estimator, LogisticRegression)
                or isinstance(estimator, LogisticRegressionCV)):
            raise TypeError("LayeredShapleyValuator values data for an "
                            "L2-regularised LogisticRegression only (with C=...), got "
                            f"{type(estimator).__name__}.")
        params = estimator.get_params()
        # The coalition solver fits an unweighted, penalised intercept.
        if params.get("class_weight") is not None or not params["fit_intercept"]:
            raise ValueError(
                "LayeredShapleyValuator fits every coalition with an intercept "
                "and equal sample weights: the estimator's "
                f"class_weight={params.get('class_weight')!r} and "
                f"fit_intercept={params['fit_intercept']!r} must be None and True.")
        if params.get("l1_ratio") or params.get("penalty") in ("l1", "elasticnet", None):
            raise ValueError("LayeredShapleyValuator needs the L2 penalty "
                             "(its stability bound): use LogisticRegression(C=...).")
        if not np.isfinite(params["C"]):
            raise ValueError("LayeredShapleyValuator needs a finite C "
                             "(lambda = 1 / (2 C n) > 0).")
        return float(params["C"])

    def _layer_sizes(self, n, c):
        """The layers' coalition counts; an error naming the parameters when
        they overflow, before any coalition is fitted."""
        with np.errstate(over="ignore"):
            m, w = layer_sizes(n, self.alpha, self.beta, np.float64(c))
        if not np.all(np.isfinite(m)):
            raise ValueError(f"c={self.c!r} with alpha={self.alpha!r} makes the "
                             "number of coalitions per layer overflow: use a smaller c.")
        return m, w

    @staticmethod
    def _check_unit_box(X, name):
        """Public data only: an error here must never read the private ``X``."""
        if X.size and (X.min() < -1e-9 or X.max() > 1 + 1e-9):
            raise ValueError(
                f"{name} must lie in [0, 1] when epsilon is set (the privacy "
                "bound needs |(x, 1)| <= kappa): scale it with "
                "sklearn.preprocessing.MinMaxScaler fitted on public data.")

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_val=None, y_val=None):
        """Estimate the Layered Shapley value of every training point.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private training data. With ``epsilon``, each row is clipped
            to [0, 1] and then scaled down so that ``|(x, 1)| <= kappa``,
            silently (the privacy bound needs it; an error would tell a
            private value): scale it into [0, 1] with public bounds, e.g. a
            ``MinMaxScaler`` fitted on the validation rows. Without
            ``epsilon`` it is used as given.
        y : array-like of shape (n_samples,), two classes
        X_val, y_val : array-like, default=None
            The validation set of ``v`` (public); held out of ``X`` when
            omitted. With ``epsilon``, ``X_val`` must lie in [0, 1] (an
            error otherwise) and its rows are scaled down to ``kappa`` as
            those of ``X`` are.

        Returns
        -------
        self : object
        """
        return self._fit(X, y, X_val, y_val)

    def _check_parameters(self):
        return self._inverse_regularisation()

    def _party_options(self, C):
        # Features are used as given (the privacy bound reads their domain),
        # so an unscaled validation set is no reason to warn.
        return dict(is_classifier=True, standardize=False, warn_unscaled=False)

    def _finish_parties(self, parties, given_X_val, groups):
        """The parties, binary, in the declared domain when ``epsilon`` is set."""
        if len(self.classes_) != 2:
            raise ValueError("LayeredShapleyValuator values data for binary "
                             f"classification: the class set "
                             f"{self.classes_.tolist()!r} (from y_val or classes=) "
                             f"has {len(self.classes_)} classes.")
        if not np.isfinite(self.epsilon):
            return parties
        # The declared domain, enforced per row: private rows (held-out
        # validation rows included) are clipped to [0, 1], then scaled to
        # |(x, 1)| <= kappa, silently, since an error or a warning would
        # depend on a private value without noise. A given X_val is public:
        # outside [0, 1] is an error. Its rows need |(x, 1)| <= kappa as
        # well: uniform stability bounds the loss change at every point of
        # the domain, and the validation loss moves by L |(x_val, 1)| |w - w'|.
        kappa = self._kappa(parties.X.shape[1])
        X_val = parties.X_val
        if given_X_val:
            self._check_unit_box(X_val, "X_val")
        else:
            X_val = np.clip(X_val, 0.0, 1.0)
        return parties._replace(
            X=shrink_rows_to_kappa(np.clip(parties.X, 0.0, 1.0), kappa),
            X_val=shrink_rows_to_kappa(X_val, kappa))

    def _kappa(self, n_features):
        return np.sqrt(n_features + 1) if self.kappa == "auto" else float(self.kappa)

    def _value(self, parties, groups, C, seeds, mechanism):
        """Each point's Layered Shapley value over exactly fitted coalitions,
        with Laplace noise on a grid when ``epsilon`` is set."""
        coalition_seed, = seeds
        kappa = self._kappa(parties.X.shape[1])
        train, y_train = parties.train_parties, parties.y
        X_val, y_val = parties.X_val, parties.y_val
        n = len(train)
        # The estimator's own penalty per sample on the n training points,
        # kept fixed for every coalition (the stability bound needs one lambda).
        lam = 1.0 / (2.0 * C * n)
        c = 1.0 if self.c == "auto" else float(self.c)

        ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
        signs = lambda labels: np.where(labels == 1, 1.0, -1.0)
        data = dict(X=ones(parties.X), y=signs(y_train), X_val=ones(X_val),
                    y_val=signs(y_val), lam=lam,
                    baseline=-np.log(2.0) - 1e-12 if self.skip_below_baseline
                    else -np.inf)
        m, w = self._layer_sizes(n, c)
        others = None
        if np.isfinite(self.epsilon):
            # Declared before any coalition is fitted: a scale that is not
            # finite is refused first. On a grid: gamma (rint(value / gamma)
            # + x), x discrete Laplace of scale Delta / epsilon in grid units,
            # Delta = 2**j + 1 the integer sensitivity of the rounded value:
            # exactly epsilon-DP. The grid is 2**8 times finer than the noise
            # scale (at most 2**-40 S).
            others = mechanism.laplace(
                "the other points' values", LAYERED, n_releases=n - 1,
                sensitivity=appendix_d_sensitivity(
                    n, np.float64(self.lipschitz), np.float64(kappa), lam),
                finer=min(32, max(0, math.ceil(math.log2(float(self.epsilon))))),
                parameters=f"lipschitz={self.lipschitz!r}, kappa={self.kappa!r}, "
                           f"epsilon={self.epsilon!r} and the estimator's C")
            self.noise_scale_ = others.scale
            self._warn_if_noise_dwarfs_values(n, c)
        elif hasattr(self, "noise_scale_"):  # from an earlier fit with noise
            del self.noise_scale_
        cache = {}
        results = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(_value_point)(i, n, m, w, data, cache, seed)
            for i, seed in enumerate(np.random.SeedSequence(coalition_seed).spawn(n)))
        values = np.array([value for value, _ in results])
        self.n_coalitions_ = np.zeros(parties.n_all_parties, dtype=np.int64)
        self.n_coalitions_[train] = [count for _, count in results]
        if others is not None:
            values = mechanism.release_laplace(others, values)
            self._describe_privacy(mechanism, n, inclusion_probability(n, m, w),
                                   kappa, lam)
        return values

    def _warn_if_noise_dwarfs_values(self, n, c):
        """Warn when the Laplace noise is ten times any value the bound
        ``|v_i(C)| <= c / k`` allows: ``(ln 2 + c H_{n-1}) / n`` (public)."""
        largest = (np.log(2.0) + c * np.sum(1.0 / np.arange(1, n))) / n
        if self.noise_scale_ > 10 * largest:
            warnings.warn(
                f"LayeredShapleyValuator(epsilon={self.epsilon:g}): the Laplace "
                f"noise scale {self.noise_scale_:.3g} is "
                f"{self.noise_scale_ / largest:.0f} times the largest value the "
                f"marginal-gain bound allows ({largest:.3g}): the values are "
                "noise. Raise epsilon, regularise more (a smaller C of the "
                "estimator), or use DPDataValuator.",
                SkdpvalWarning, stacklevel=STEP_TO_USER)

    def _describe_privacy(self, mechanism, n, p, kappa, lam):
        """What the guarantee assumes and leaves out, in the report."""
        mechanism.leak("each point's own value is computed from its own data "
                       "without noise of its own and is not covered (Laplace "
                       "output perturbation: Watson et al., Algorithm 2)")
        mechanism.details.update({
            "mechanism": "Laplace output perturbation (Watson et al., "
                         "Algorithm 2, Theorem 3.5, Appendix D)",
            "adjacency": "zero-out one point (Appendix D's removal stability: "
                         "its loss taken out of every coalition, n public); "
                         "replacing one point doubles the sensitivity",
            "composition": f"the other n-1 = {n - 1} values, each "
                           f"{self.epsilon:g}-DP, composed exactly (pure parts)",
            "inclusion_probability": float(p),
            "amplification": "none: the coalitions are public randomness, and "
                             "sampling them does not meet the amplification "
                             f"theorems' conditions (p = {p:.3g} is reported "
                             "for information)",
            "assumptions": "trusted curator; private features clipped to "
                           "[0, 1] and every row (validation included) "
                           f"scaled to |(x, 1)| <= kappa = {kappa:.3g}, "
                           "silently; exact L2-regularised minimiser "
                           f"(lambda = {lam:.3g}); log loss, 1-Lipschitz in "
                           f"the margin (L = {self.lipschitz:.3g} used)",
        })
