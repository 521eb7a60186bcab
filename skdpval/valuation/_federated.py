"""DPFederatedValuator: per-round Shapley values of federated clients."""

import itertools
import warnings
from collections import namedtuple
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..exceptions import SkdpvalWarning
from ..families import family_of
from ..privacy import (FEDERATED, PRIVACY_CONSTRAINTS, ROUNDING,
                       THREAT_MODEL_CONSTRAINT, check_compression, clip, compress,
                       declare_joint, sensitivity, share_privacy_docs, sign_vote,
                       with_threat_model_doc)
from ._base import STEP_TO_USER, BaseValuator
from ._game import UTILITY_CODES, check_utility
from ._statistics import check_converged

# The federated objective: the clients' rows and targets as the family reads
# them (a :class:`~skdpval.families.View`), its full space (every parameter:
# the clients' gradients and the utilities), the parameters' shape and the
# utility's settings.
_FederatedGame = namedtuple("_FederatedGame", ["view", "space", "shape",
                                               "utility_args"])

# All permutations are enumerated up to this many clients (8! = 40320).
_MAX_CLIENTS_ALL_PERMUTATIONS = 8


def federated_schedule(noise, n_rounds):
    """Weight ``x_t`` of round t's fresh release in the released average.

    ``"correlated"`` is the seed paper's App. D.2 exponential moving average,
    ``r_t = (1 - x_t) r_{t-1} + x_t g~_t`` with ``x_t = 0.75 - 0.7 t / k``;
    ``"iid"`` and ``"none"`` release ``g~_t`` itself (``x_t = 1``).
    """
    t = np.arange(1, n_rounds + 1)
    if isinstance(noise, str):
        if noise == "correlated":
            return 0.75 - 0.7 * t / n_rounds
        return np.ones(n_rounds)
    x = np.asarray(noise(t, n_rounds) if callable(noise) else noise, dtype=float)
    if x.shape != (n_rounds,) or not np.all((x > 0) & (x <= 1)):
        raise ValueError(f"noise must give one x_t in (0, 1] per round: shape "
                         f"({n_rounds},), got {x!r}.")
    return x


@with_threat_model_doc
@share_privacy_docs
class DPFederatedValuator(BaseValuator):
    """Private per-round Shapley values of the clients of federated SGD.

    ``n_rounds`` rounds of federated gradient descent on a linear model: in
    round t every client releases one gradient of its mean loss at the
    global model ``theta_t``, clipped, optionally compressed, and noised; the
    round's Shapley value of each client is estimated over permutations of
    the clients with the utility ``V(theta_t - lr * aggregate(releases of the
    coalition))`` (post-processing: no further privacy cost); the global
    model then steps with every client's release. The value of a client is
    the mean of its per-round values after the burn-in ``q * n_rounds``.
    Each client releases ``n_rounds`` times.

    The privacy unit is a record by default (``privacy_unit="record"``):
    each record's gradient is clipped, a client releases the sum of its
    clipped records plus noise calibrated for sensitivity ``clip_norm``,
    divided by its size (public), so that its release's noise shrinks with
    its size. With ``privacy_unit="group"`` the unit is a client: its
    mean-loss gradient is clipped once (and may be compressed). The
    guarantee holds under zero-out adjacency (a record's, or a client's,
    slot releases pure noise) with the clients and their sizes public, and
    replace-one (``privacy_report_["epsilon_replace_one"]``). It covers the
    clients' data, not their number or the validation set: when ``fit`` gets
    no ``X_val``, whole clients are held out as the validation set (chosen
    at random without reading labels), used without noise, and
    ``privacy_report_`` says how many samples they hold.

    Parameters
    ----------
    estimator : estimator object, default=None
        The linear model defining the loss (as for ``DPDataValuator``);
        ``None`` means ``LogisticRegression()``.
    n_rounds : int >= 1, default=50
        Rounds of federated SGD; every client releases once per round.
    n_permutations_per_round : int >= 1 or "all", default=100
        Permutations of the clients sampled per round; ``"all"`` enumerates
        them (at most 8 clients): the exact Shapley value of the round.
    learning_rate : float > 0, default=0.1
        Step of the global model.
    clip_norm : float > 0, default=1.0
        Clipping bound ``c`` (L2 norm, or per coordinate) of a client's
        gradient, or of each record's with ``privacy_unit="record"``.
    privacy_unit : {"record", "group"}, default="record"
        Whom the guarantee protects when ``fit`` gets ``groups``: one record
        of any client, or a whole client. Record-level releases support no
        compression but ``("randk", m)``: top-k, quantisation and signs of
        a client's sum can change far more than ``clip_norm`` when one
        record does (the kept coordinates, every sign), so their accounted
        sensitivity would not hold. Without ``groups`` every sample is a
        client and the unit is the sample either way.
    threat_model : {"central", "joint"}, default="central"
        %(threat_model)s
        Here the owners are the clients, and the billboard is every
        client's noisy release of every round (they move the global model);
        a client's marginal in a round is read from its own release before
        the noise (clipped and compressed, averaged as its releases are):
        ``V(theta - lr agg(S + own)) - V(theta - lr agg(S))``, ``S`` the
        noisy releases of the clients before it in the permutation.
    clipping : {"l2", "coordinate"}, default="l2"
        How gradients are clipped before compression and noise.
    compression : None, ("randk", m), ("topk", m), ("quantize", levels) or \
            "sign", default=None
        Compression before the noise; see ``skdpval.privacy._compression`` for the
        sensitivity of each. ``("randk", m)`` noises the ``m`` coordinates of
        a public random mask; ``("topk", m)`` picks its coordinates from
        private data, so all coordinates are noised.
    sign_threshold : float >= 0, default=0.0
        ``beta`` of the sign vote: a coordinate of the aggregate of ``T``
        sign releases is ``sign(sum)`` when ``|sum| >= beta T``, else 0.
    %(epsilon)s
    %(delta)s
    %(noise_multiplier)s
    noise : {"correlated", "iid", "none"}, array-like or callable, \
            default="correlated"
        Released value: the exponential moving average of App. D.2
        (``"correlated"``), the fresh release (``"iid"``), no noise at all
        (``"none"``), or your own ``x_t`` (array of length ``n_rounds`` or
        callable ``f(t, k)``).
    q : float in [0, 1), default=0.2
        Burn-in: the first ``floor(q * n_rounds)`` rounds do not count.
    utility : {"neg_loss", "accuracy", "neg_mse", "r2"}, default="neg_loss"
        Validation utility (classifiers: neg_loss, accuracy; regressors:
        neg_loss, neg_mse, r2). Accuracy barely moves once the global model
        is fitted: with it a fully mislabelled client of ten ranked last in
        1-3 of 10 splits without noise (make_classification, breast_cancer),
        against 10 of 10 with the loss.
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the clients held out, whole, as the validation set when
        ``fit`` gets no ``X_val``; drawn at random without reading labels.
        Held-out clients are not valued and not protected.
    standardize : bool, default=True
        Scale the features with the validation set's mean and std (public
        statistics) before the rounds. A scaler fitted on the clients' data
        would itself be a release that is not private.
    classes : array-like or None, default=None
        The class labels of a classifier. ``None`` takes them from ``y_val``
        (public), never from the clients' labels: a training label outside
        them is an error.
    random_state : int, RandomState instance or None, default=None
        Seeds the public randomness: the split, the random-k masks, the
        permutations and the order of tied values in ``rank_``. It never
        seeds the noise.
    %(noise_seed)s
        The stochastic-rounding coins of compression come from the same
        source (128 bits of OS entropy, or the seed).

    Attributes
    ----------
    chosen_params_ : dict
        Parameters of the wrapped model chosen on the validation set (a
        ``*CV`` variant's ``alpha`` / ``C``, HuberRegressor's ``scale``);
        empty for other models.
    values_ : ndarray of shape (n_clients,)
        Mean per-round value of each client past the burn-in; NaN for
        clients held out as the validation set.
    rank_ : ndarray of shape (n_clients,)
        Rank of each value, 1 being the most valuable (ties in a random
        order, not the clients'); 0 for held-out clients.
    sample_values_ : ndarray of shape (n_samples,)
        The value of each sample's client, when ``fit`` got ``groups``.
    round_values_ : ndarray of shape (n_rounds, n_clients)
        Each round's Shapley value estimate of each client (NaN for held-out
        clients).
    history_ : ndarray of shape (n_rounds,)
        Validation utility of the global model after each round.
    groups_ : ndarray of shape (n_clients,)
        Client labels, in the order of ``values_``.
    classes_ : ndarray of shape (n_classes,)
        Class labels (classifiers).
    epsilon_, delta_, noise_multiplier_ : float
        The guarantee of a client's releases and the per-release noise std
        divided by the sensitivity.
    n_releases_ : int
        Releases per client (``n_rounds``).
    privacy_unit_ : {"sample", "client", "record"}
        Whom ``epsilon_`` protects.
    threat_model_ : {"central", "joint"}
        The threat model of the fit; under ``"joint"`` ``values_`` and
        ``round_values_`` are the curator's view (:meth:`owner_value`).
    privacy_report_ : dict
        Unit (client), adjacency, releases, clipping, compression,
        sensitivity, noise and its source, mu, epsilon (zero-out and
        replace-one), delta, and the samples held out without protection.
    n_features_in_ : int
        Number of features seen during fit.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from skdpval import DPFederatedValuator
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> clients = np.arange(200) % 5
    >>> fed = DPFederatedValuator(n_rounds=10, n_permutations_per_round=20,
    ...                           epsilon=3.0, random_state=0)
    >>> fed.fit(X[:200], y[:200], groups=clients, X_val=X[200:], y_val=y[200:])
    DPFederatedValuator(...)
    >>> fed.round_values_.shape
    (10, 5)
    """

    _group_name = "client"

    _parameter_constraints: dict = {
        **PRIVACY_CONSTRAINTS,
        "estimator": [HasMethods(["fit", "get_params"]), None],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "n_permutations_per_round": [Interval(Integral, 1, None, closed="left"),
                                     StrOptions({"all"})],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither")],
        "clip_norm": [Interval(Real, 0.0, None, closed="neither")],
        "privacy_unit": [StrOptions({"record", "group"})],
        "threat_model": THREAT_MODEL_CONSTRAINT,
        "clipping": [StrOptions({"l2", "coordinate"})],
        "compression": [None, tuple, StrOptions({"sign"})],
        "sign_threshold": [Interval(Real, 0.0, None, closed="left")],
        "noise": [StrOptions({"correlated", "iid", "none"}), "array-like",
                  callable],
        "q": [Interval(Real, 0.0, 1.0, closed="left")],
        "utility": [StrOptions(set(UTILITY_CODES))],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "standardize": ["boolean"],
        "classes": ["array-like", None],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, *, n_rounds=50, n_permutations_per_round=100,
                 learning_rate=0.1, clip_norm=1.0, privacy_unit="record",
                 threat_model="central", clipping="l2", compression=None,
                 sign_threshold=0.0, epsilon="default", delta="auto", noise_multiplier=None,
                 noise="correlated", q=0.2, utility="neg_loss",
                 validation_fraction=0.2, standardize=True, classes=None,
                 random_state=None, noise_seed=None):
        self.estimator = estimator
        self.n_rounds = n_rounds
        self.n_permutations_per_round = n_permutations_per_round
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.privacy_unit = privacy_unit
        self.threat_model = threat_model
        self.clipping = clipping
        self.compression = compression
        self.sign_threshold = sign_threshold
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.noise = noise
        self.q = q
        self.utility = utility
        self.validation_fraction = validation_fraction
        self.standardize = standardize
        self.classes = classes
        self.random_state = random_state
        self.noise_seed = noise_seed

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_val=None, y_val=None, groups=None):
        """Run federated SGD and value every client in every round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            All clients' samples.
        y : array-like of shape (n_samples,)
        X_val, y_val : array-like, default=None
            The server's validation set (the utility; not protected). When
            omitted, ``validation_fraction`` of the clients is held out whole.
        groups : array-like of shape (n_samples,), default=None
            The client of each sample. None makes every sample a client,
            with a warning. It comes after ``X_val`` and ``y_val``, as in
            the other valuators: pass it by name.

        Returns
        -------
        self : object
        """
        if X_val is not None and y_val is None and np.ndim(X_val) == 1:
            raise ValueError(
                "X_val was given without y_val, and it is one-dimensional: "
                "fit takes X, y, X_val, y_val, groups (groups used to come "
                "third); pass groups=client_of_each_sample by name.")
        return self._fit(X, y, X_val, y_val, groups)

    _n_seeds = 3  # the split, the rounds, a *CV variant's search

    _party_unit = "client"
    _planned_release = {**BaseValuator._planned_release, "name": "round releases",
                        "zero_neighbour": False, "n_releases_param": "n_rounds"}

    def _adds_noise(self):
        return not (isinstance(self.noise, str) and self.noise == "none")

    def _check_parameters(self):
        estimator = LogisticRegression() if self.estimator is None else clone(self.estimator)
        family = family_of(estimator)
        family.require("federated", estimator)
        objective = family.objective(estimator, n_parties=1)
        check_utility(self.utility, objective.is_classifier)
        return estimator, objective

    def _party_options(self, model):
        _, spec = model
        return dict(is_classifier=spec.is_classifier, standardize=self.standardize,
                    center=spec.fit_intercept, party_unit="client")

    def _finish_parties(self, parties, given_X_val, groups):
        """Without groups every sample is a client (with a warning)."""
        if groups is None:
            warnings.warn(
                "DPFederatedValuator.fit got no groups: every sample is taken "
                "as a client. Pass groups=client_of_each_sample to value clients.",
                SkdpvalWarning, stacklevel=STEP_TO_USER)
            self.groups_ = np.arange(parties.n_all_parties)
        return parties

    def _value(self, parties, groups, model, seeds, mechanism):
        """Federated SGD over the clients' noisy releases; each round's Shapley
        values, and their mean over the counted rounds."""
        estimator, _ = model
        round_seed, search_seed = seeds
        n_clients = len(parties.train_parties)
        if self.n_permutations_per_round == "all" and n_clients > _MAX_CLIENTS_ALL_PERMUTATIONS:
            raise ValueError(
                f"n_permutations_per_round='all' enumerates n! permutations: at "
                f"most {_MAX_CLIENTS_ALL_PERMUTATIONS} clients, got {n_clients}.")
        record_level = self._record_level(groups)
        game = self._game(parties, estimator, search_seed)
        releases = self._releases(game, record_level, mechanism)
        round_values, history = self._rounds(game, releases, mechanism, record_level,
                                             round_seed)
        counted = np.arange(1, self.n_rounds + 1) > np.floor(self.q * self.n_rounds)
        values = round_values[counted].mean(axis=0)
        view = game.view
        check_converged(values, history, game.space.utilities(
            [np.zeros(game.shape)], view.X_val, view.T_val, view.labels_val,
            **game.utility_args)[0],
            self.learning_rate, self.utility, "federated training", "a round",
            stacklevel=STEP_TO_USER, auto_learning_rate=False)
        self.history_ = history
        self.round_values_ = np.full((self.n_rounds, parties.n_all_parties), np.nan)
        self.round_values_[:, parties.train_parties] = round_values
        return values

    def _game(self, parties, estimator, search_seed):
        """The objective the clients train, as the model's family reads it (rows
        with the intercept's column, targets, loss, weights), in its full space,
        and the utility's settings."""
        family = family_of(estimator)
        self.chosen_params_ = family.public_params(estimator, parties.X_val,
                                                   parties.y_val, search_seed)
        objective = family.objective(estimator, n_parties=len(parties.train_parties),
                                     public=self.chosen_params_)
        view = family.view(objective, parties, utility=self.utility)
        return _FederatedGame(
            view, family.space(view, None, validation_objective=None, seed=None),
            (view.T.shape[1], view.X.shape[1]),
            dict(loss=view.loss, utility=UTILITY_CODES[self.utility],
                 loss_param=view.loss_param,
                 total_sum_squares=view.total_sum_squares))

    def _releases(self, game, record_level, mechanism):
        """The part of ``mechanism`` a round's releases are (calibrated)."""
        n_params = int(np.prod(game.shape))
        kind, _ = check_compression(self.compression, n_params)
        if record_level and kind not in (None, "randk"):
            raise ValueError(
                f"compression={self.compression!r} of a client's sum of clipped "
                "gradients can change by more than clip_norm when one record "
                "does: with privacy_unit='record' use compression=None or "
                "('randk', m), or set privacy_unit='group' to protect whole "
                "clients.")
        # Releases on a grid: a client's release and its neighbour's are at
        # most the compressed release's sensitivity apart (L2), and rounding
        # each coordinate moves their difference by up to one step.
        releases = mechanism.gaussian(
            "round releases", FEDERATED, n_releases=self.n_rounds,
            clip=sensitivity(self.compression, self.clipping, self.clip_norm,
                             n_params),
            dimension=n_params, zero_neighbour=False, n_releases_param="n_rounds")
        mechanism.calibrate()
        mechanism.details.update(clipping=self.clipping, compression=self.compression,
                                 private_support=True)
        if self.threat_model == "joint":
            declare_joint(
                mechanism,
                billboard="every client's noisy release of every round (they "
                          "move the global model), and the permutations (public)",
                owner_value="the mean over the counted rounds of its Shapley "
                            "marginals, each read from its own release before the "
                            "noise added to the other clients' noisy releases")
        return releases

    def _rounds(self, game, releases, mechanism, record_level, round_seed):
        """The rounds: each client's release, each round's Shapley values, the
        model's validation utility after each round."""
        view, space, shape, utility_args = game
        offsets = view.offsets
        X_val, T_val, labels_val = view.X_val, view.T_val, view.labels_val
        n_clients, n_params = len(offsets) - 1, int(np.prod(shape))
        sizes = np.diff(offsets)
        # epsilon=np.inf is noise="none": the fresh releases, unaveraged.
        noise = self.noise if mechanism.adds_noise else "none"
        x_t = federated_schedule(noise, self.n_rounds)
        # Per round: a public generator (masks, permutations) from its own
        # child seed; the noise and the secret rounding coins from the
        # mechanism's ChaCha20 streams of the round.
        public_seeds = np.random.SeedSequence(round_seed).spawn(self.n_rounds)
        quantized = check_compression(self.compression, n_params)[0] == "quantize"
        theta = np.zeros(shape)
        released = np.zeros((n_clients, n_params))
        joint = self.threat_model == "joint"
        own = np.zeros((n_clients, n_params)) if joint else None
        round_values = np.empty((self.n_rounds, n_clients))
        history = np.empty(self.n_rounds)
        # A diverging run is reported once, below, with a remedy.
        with np.errstate(invalid="ignore", over="ignore"):
            for t in range(self.n_rounds):
                public = np.random.default_rng(public_seeds[t])
                updates = self._clipped_updates(theta, game, record_level)
                coins = (mechanism.uniforms(ROUNDING, t, n_clients * n_params)
                         .reshape(n_clients, n_params) if quantized
                         else [None] * n_clients)
                compressed = [compress(update, self.compression, self.clip_norm,
                                       public, coins[i])
                              for i, update in enumerate(updates)]
                exact = (np.array([release for release, _ in compressed])
                         if joint else None)  # each client's own, before the noise
                # Each client's noised coordinates on the grid with its noise
                # (the round's stream); the others (random-k's) exact zeros.
                fresh = np.array([release for release, _ in compressed])
                noisy = mechanism.release_each(
                    releases, [release[noised] for release, noised in compressed],
                    stream=t)
                for i, (_, noised) in enumerate(compressed):
                    fresh[i, noised] = noisy[i]
                if record_level:  # the mean of the noisy sum: post-processing
                    fresh /= sizes[:, None]
                    if joint:
                        exact /= sizes[:, None]
                if isinstance(noise, str) and noise in ("iid", "none"):
                    if joint:
                        own = exact
                    released = fresh
                else:  # the moving average of App. D.2 (released starts at 0)
                    if joint:  # of its earlier releases (billboard) and its own
                        own = (1 - x_t[t]) * released + x_t[t] * exact
                    released = (1 - x_t[t]) * released + x_t[t] * fresh
                round_values[t] = self._round_shapley(theta, released, game, public,
                                                      own)
                step = self._aggregate(released).reshape(shape)
                theta = theta - self.learning_rate * step
                history[t] = space.utilities([theta], X_val, T_val, labels_val,
                                             **utility_args)[0]
        return round_values, history

    def _clipped_updates(self, theta, game, record_level):
        """Each client's clipped gradient ``(n_clients, n_params)`` (its
        weighted loss plus the penalty), or with ``record_level`` the sum of
        its records' clipped gradients."""
        view = game.view
        n_clients = len(view.offsets) - 1
        rows = np.arange(len(view.X) + 1) if record_level else view.offsets
        gradients = game.space.party_gradients(
            theta, view.X, view.T, rows, loss=view.loss, loss_param=view.loss_param,
            l2=view.l2, l1=view.l1, row_weights=view.row_weights,
            n_penalized=view.n_penalized)
        clipped = np.array([clip(g, self.clipping, self.clip_norm)
                            for g in gradients.reshape(len(rows) - 1, -1)])
        if not record_level:
            return clipped
        return np.add.reduceat(clipped, view.offsets[:-1]).reshape(n_clients, -1)

    def _aggregate(self, releases):
        if self.compression == "sign":
            return sign_vote(releases, self.sign_threshold)
        return releases.mean(axis=0)

    def _round_shapley(self, theta, released, game, rng, own=None):
        """Shapley value of each client for one round, over permutations.

        With ``own`` (the joint threat model) a client's marginal adds its
        own release before the noise, ``own[i]``, to the noisy releases of
        the clients before it: ``V(theta - lr agg(S + own_i)) - V(theta - lr
        agg(S))``.
        """
        n_clients = len(released)
        if self.n_permutations_per_round == "all":
            permutations = np.array(list(itertools.permutations(range(n_clients))))
        else:
            permutations = np.array([rng.permutation(n_clients)
                                     for _ in range(self.n_permutations_per_round)])
        prefix = np.cumsum(released[permutations], axis=1)  # (P, n, p)
        size = np.arange(1, n_clients + 1)[None, :, None]

        def utilities_of(prefix):
            if self.compression == "sign":
                step = np.where(np.abs(prefix) >= self.sign_threshold * size,
                                np.sign(prefix), 0.0)
            else:
                step = prefix / size
            thetas = theta.ravel()[None, None, :] - self.learning_rate * step
            return game.space.utilities(
                thetas.reshape(-1, *theta.shape), *validation,
                **game.utility_args).reshape(len(permutations), n_clients)

        view = game.view
        validation = (view.X_val, view.T_val, view.labels_val)
        utilities = utilities_of(prefix)
        before = game.space.utilities([theta], *validation, **game.utility_args)[0]
        if own is None:
            marginals = np.diff(utilities, axis=1, prepend=before)
        else:
            with_own = utilities_of(prefix - released[permutations]
                                    + own[permutations])
            previous = np.concatenate(
                [np.full((len(permutations), 1), before), utilities[:, :-1]], axis=1)
            marginals = with_own - previous
        values = np.zeros(n_clients)
        np.add.at(values, permutations, marginals)
        return values / len(permutations)
