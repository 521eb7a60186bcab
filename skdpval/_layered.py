"""LayeredShapleyValuator: Layered Shapley values with Laplace output noise.

Watson et al., "Differentially private Shapley values for data evaluation"
(the seed ``layered-shapley-paper.md``): the Shapley value of a point is the
average over coalition sizes ``k`` of its mean marginal gain over coalitions
of that size. Layered Shapley samples layer ``k`` with
``m_k = c^2 / (2 alpha^2 k^2) ln(2n / beta)`` coalitions (Algorithm 1),
using that marginal gains of a uniformly stable learner shrink like
``c / k``; the private version adds Laplace noise to each value (Algorithm
2, Theorem 3.5 with the sensitivity of Appendix D).
"""

from itertools import combinations
from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils import ClassifierTags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_array, validate_data

from . import _kernels
from ._valuator import MAX_INT

# Layers up to this many coalitions are enumerated when sampling would
# draw them all anyway.
_MAX_ENUMERATED = 20000


def layer_sizes(n, alpha, beta, c):
    """``m_k`` and ``w_k = C(n-1, k)`` for the layers ``k = 1 .. n-1``."""
    k = np.arange(1, n)
    m = c**2 / (2 * alpha**2 * k**2) * np.log(2 * n / beta)
    w = np.exp(gammaln(n) - gammaln(k + 1) - gammaln(n - k))
    return m, w


def inclusion_probability(n, alpha, beta, c):
    """Theorem 3.4: a bound on the chance that a point is used for one value."""
    return c**2 * np.log(n) / (2 * alpha**2 * n) * np.log(2 * n / beta)


def laplace_scale(n, epsilon, lipschitz, kappa, lam, alpha, beta, c):
    """Appendix D: sensitivity ``L^2 kappa^2 / (n lambda) H_{n-1}``, amplified.

    With the Theorem 3.4 inclusion probability ``p < 1``, amplification by
    sampling lets the Laplace mechanism run at
    ``epsilon_0 = ln((e^epsilon - 1) / p + 1)``; with ``p >= 1`` there is no
    amplification and the scale is ``sensitivity / epsilon``. Returns
    ``(scale, sensitivity, p, epsilon_0)``.
    """
    harmonic = np.sum(1.0 / np.arange(1, n))
    sensitivity = lipschitz**2 * kappa**2 / (n * lam) * harmonic
    p = inclusion_probability(n, alpha, beta, c)
    base = np.log(np.expm1(epsilon) / p + 1) if p < 1 else epsilon
    return sensitivity / base, sensitivity, p, base


class LayeredShapleyValuator(BaseEstimator):
    """Layered Shapley values, optionally with Laplace output perturbation.

    Each training point's Shapley value is estimated layer by layer: for
    coalition size ``k``, ``m_k`` coalitions of the other points are drawn
    (each of the ``C(n-1, k)`` with probability ``m_k / C(n-1, k)``; a layer
    is enumerated when that probability reaches 1), and the marginal gain
    ``v(C + i) - v(C)`` is averaged, with ``v`` the negative validation log
    loss of an L2-regularised logistic regression fitted on the coalition.
    Coalitions whose value is below random guessing (``-ln 2``) are skipped,
    as in the paper. Unlike the paper's Algorithm 1, the empty coalition's
    layer (``k = 0``, one coalition) is included, so that exhaustive layers
    give exactly the Shapley value.

    With ``epsilon``, each value gets Laplace noise of scale
    ``noise_scale_`` (Theorem 3.5 with Appendix D). That guarantee needs a
    trusted curator holding all the data, features in [0, 1] (so that
    ``|x| <= kappa``), the exact regularised minimiser (uniform stability),
    an ``L``-Lipschitz loss, and, for the amplification by sampling, the
    inclusion probability ``p < 1`` of Theorem 3.4. It is per released
    value: releasing all ``n`` values composes to ``n * epsilon``; a point
    is not protected from its own value; the validation set is not protected.

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
    epsilon : float > 0 or None, default=None
        Privacy budget of each released value; None for no noise.
    lipschitz : float > 0, default=1.0
        Lipschitz constant ``L`` of the loss in the margin (1 for log loss).
    kappa : float > 0 or "auto", default="auto"
        Bound on the norm of a feature vector with its intercept feature;
        ``"auto"`` is ``sqrt(n_features + 1)`` for features in [0, 1].
    utility : {"neg_loss"}, default="neg_loss"
        The negative validation log loss.
    skip_below_baseline : bool, default=True
        Skip coalitions whose value is below random guessing, as the paper
        does (the estimate is then no longer exactly a Shapley value).
    validation_fraction : float in (0, 1), default=0.2
        Held out (stratified) as the validation set when ``fit`` gets no
        ``X_val``.
    n_jobs : int or None, default=None
        Points valued in parallel (joblib threads).
    random_state : int, RandomState instance or None, default=None
        Seeds the split, the coalitions of each point and the noise.

    Attributes
    ----------
    values_ : ndarray of shape (n_samples,)
        Value of each sample (private when ``epsilon`` is set); NaN for
        held-out validation samples.
    rank_ : ndarray of shape (n_samples,)
        1 for the most valuable; 0 for held-out samples.
    n_coalitions_ : ndarray of shape (n_samples,)
        Coalitions evaluated for each point (0 for held-out samples).
    noise_scale_ : float
        Laplace scale of the noise (only with ``epsilon``).
    privacy_report_ : dict
        The guarantee, its assumptions and its inputs (only with ``epsilon``).
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
        "epsilon": [Interval(Real, 0.0, None, closed="neither"), None],
        "lipschitz": [Interval(Real, 0.0, None, closed="neither")],
        "kappa": [Interval(Real, 0.0, None, closed="neither"), StrOptions({"auto"})],
        "utility": [StrOptions({"neg_loss"})],
        "skip_below_baseline": ["boolean"],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, *, alpha=0.05, beta=0.05, c="auto",
                 epsilon=None, lipschitz=1.0, kappa="auto", utility="neg_loss",
                 skip_below_baseline=True, validation_fraction=0.2, n_jobs=None,
                 random_state=None):
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
        self.n_jobs = n_jobs
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.classifier_tags = ClassifierTags(multi_class=False)  # binary only
        return tags

    def _inverse_regularisation(self):
        """The estimator's ``C``, checked."""
        estimator = LogisticRegression() if self.estimator is None else clone(self.estimator)
        if not isinstance(estimator, LogisticRegression):
            raise TypeError("LayeredShapleyValuator values data for an "
                            "L2-regularised LogisticRegression only, got "
                            f"{type(estimator).__name__}.")
        params = estimator.get_params()
        if params.get("l1_ratio") or params.get("penalty") in ("l1", "elasticnet", None):
            raise ValueError("LayeredShapleyValuator needs the L2 penalty "
                             "(its stability bound): use LogisticRegression(C=...).")
        if not np.isfinite(params["C"]):
            raise ValueError("LayeredShapleyValuator needs a finite C "
                             "(lambda = 1 / (2 C n) > 0).")
        return float(params["C"])

    @staticmethod
    def _check_unit_box(X, name):
        if X.size and (X.min() < -1e-9 or X.max() > 1 + 1e-9):
            raise ValueError(
                f"{name} must lie in [0, 1] when epsilon is set (the privacy "
                "bound needs |x| <= kappa): scale it with "
                "sklearn.preprocessing.MinMaxScaler.")

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_val=None, y_val=None):
        """Estimate the Layered Shapley value of every training point.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            In [0, 1] when ``epsilon`` is set (the privacy bound needs it).
        y : array-like of shape (n_samples,), two classes
        X_val, y_val : array-like, default=None
            The validation set of ``v``; held out of ``X`` when omitted.

        Returns
        -------
        self : object
        """
        C = self._inverse_regularisation()
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together.")
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        if self.epsilon is not None:
            self._check_unit_box(X, "X")
        check_classification_targets(y)
        self.classes_, y = np.unique(y, return_inverse=True)
        if len(self.classes_) != 2:
            raise ValueError("LayeredShapleyValuator values data for binary "
                             f"classification: y has {len(self.classes_)} classes.")
        rs = check_random_state(self.random_state)
        if X_val is None:
            n_val = int(np.ceil(self.validation_fraction * len(X)))
            stratify = y if np.bincount(y).min() >= 2 and n_val >= 2 else None
            train, val = train_test_split(np.arange(len(X)), test_size=n_val,
                                          stratify=stratify,
                                          random_state=rs.randint(MAX_INT))
            X_val, y_val = X[val], y[val]
        else:
            X_val = validate_data(self, X_val, reset=False, dtype=np.float64)
            if self.epsilon is not None:
                self._check_unit_box(X_val, "X_val")
            y_val = check_array(y_val, ensure_2d=False, dtype=None)
            index = np.clip(np.searchsorted(self.classes_, y_val), 0, 1)
            if y_val.ndim != 1 or len(y_val) != len(X_val) or np.any(
                    self.classes_[index] != y_val):
                raise ValueError("y_val must be 1-D, one label per row of X_val, "
                                 "with labels from y.")
            y_val, train = index, np.arange(len(X))
        n = len(train)
        if n < 2:
            raise ValueError("Layered Shapley needs at least 2 training points.")
        # The estimator's own penalty per sample on the n training points,
        # kept fixed for every coalition (the stability bound needs one lambda).
        lam = 1.0 / (2.0 * C * n)
        c = 1.0 if self.c == "auto" else float(self.c)
        kappa = np.sqrt(X.shape[1] + 1) if self.kappa == "auto" else float(self.kappa)

        ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
        data = dict(X=ones(X[train]), y=np.where(y[train] == 1, 1.0, -1.0),
                    X_val=ones(X_val), y_val=np.where(y_val == 1, 1.0, -1.0), lam=lam,
                    baseline=-np.log(2.0) - 1e-12 if self.skip_below_baseline
                    else -np.inf)
        m, w = layer_sizes(n, self.alpha, self.beta, c)
        seeds = rs.randint(MAX_INT, size=n)
        cache = {}
        results = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(_value_point)(i, n, m, w, data, cache, seed)
            for i, seed in enumerate(seeds))
        values = np.array([value for value, _ in results])
        self.n_coalitions_ = np.zeros(len(X), dtype=np.int64)
        self.n_coalitions_[train] = [count for _, count in results]
        if self.epsilon is not None:
            scale, sensitivity, p, base = laplace_scale(
                n, self.epsilon, self.lipschitz, kappa, lam, self.alpha,
                self.beta, c)
            self.noise_scale_ = float(scale)
            values = values + np.random.default_rng(rs.randint(MAX_INT)).laplace(
                0.0, scale, size=n)
            self.privacy_report_ = {
                "mechanism": "Laplace output perturbation (Watson et al., "
                             "Algorithm 2, Theorem 3.5, Appendix D)",
                "epsilon_per_value": float(self.epsilon), "delta": 0.0,
                "epsilon_all_values_basic_composition": float(n * self.epsilon),
                "sensitivity": float(sensitivity), "noise_scale": float(scale),
                "inclusion_probability": float(p),
                "amplification": (f"by sampling, p = {p:.3g}: the Laplace mechanism "
                                  f"runs at epsilon_0 = {base:.3g}" if p < 1 else
                                  f"none: the inclusion probability bound p = {p:.3g} "
                                  "is not below 1"),
                "assumptions": "trusted curator; features in [0, 1] so |x| <= "
                               f"kappa = {kappa:.3g}; exact L2-regularised "
                               f"minimiser (lambda = {lam:.3g}); loss "
                               f"{self.lipschitz:.3g}-Lipschitz in the margin",
                "not_protected": "each point from its own value; the validation set",
            }
        self.values_ = np.full(len(X), np.nan)
        self.values_[train] = values
        self.rank_ = np.zeros(len(X), dtype=np.int64)
        self.rank_[train] = rankdata(-values, method="ordinal")
        return self


def _value_point(i, n, m, w, data, cache, seed):
    """Layered Shapley estimate of point ``i``: ``(value, coalitions evaluated)``."""
    rng = np.random.default_rng(seed)
    others = np.delete(np.arange(n), i)
    # (coalitions, normaliser) per layer: the layer's mean gain is the sum of
    # its gains over the expected number of coalitions drawn, m_k = p_k w_k.
    layers = [([()], 1.0)]  # k = 0: the empty coalition
    for k in range(1, n):
        m_k, w_k = m[k - 1], w[k - 1]
        if m_k >= w_k and w_k <= _MAX_ENUMERATED:
            layers.append((list(combinations(others, k)), w_k))
            continue
        expected = min(m_k, w_k)
        count = (rng.binomial(int(w_k), expected / w_k) if w_k < 2**62
                 else rng.poisson(expected))
        layers.append(([tuple(np.sort(rng.choice(others, size=k, replace=False)))
                        for _ in range(count)], expected))
    needed = {C for coalitions, _ in layers for C in coalitions}
    needed |= {tuple(sorted(C + (i,))) for C in needed}
    missing = [C for C in needed if C not in cache]
    if missing:
        members = np.zeros((len(missing), max(len(C) for C in missing)),
                           dtype=np.int64)
        for row, C in enumerate(missing):
            members[row, :len(C)] = C
        sizes = np.array([len(C) for C in missing])
        values = _kernels.coalition_values(data["X"], data["y"], data["X_val"],
                                           data["y_val"], members, sizes, data["lam"])
        cache.update(zip(missing, values))
    # Coalitions worse than random guessing (ln 2 log loss) may be skipped,
    # as in the paper; the empty coalition is exactly at that baseline.
    baseline = data["baseline"]
    total = 0.0
    for coalitions, normaliser in layers:
        gains = [cache[tuple(sorted(C + (i,)))] - cache[C] for C in coalitions
                 if cache[C] >= baseline]
        total += sum(gains) / normaliser
    return total / n, len(needed)
