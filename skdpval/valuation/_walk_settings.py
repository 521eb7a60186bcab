"""The walk's settings, chosen from public quantities only.

``batch_permutations="auto"`` (:func:`wave_size`), ``q="auto"``
(:func:`auto_burn_in`), ``clip_norm="auto"`` (:func:`clip_norm`),
``learning_rate="auto"`` (:func:`learning_rate`) and the walk problem with its
table along the public line (:func:`walk_problem`). Each reads the
validation rows, the number of parties and the parameters, never the
training rows.
"""

import numpy as np

from ..kernels import LINE_MAX_INTERVALS
from ..privacy import counted_permutations
from ..walks import map_on_workers, walk_client
from ._semivalues import check_semivalue, warn_if_loo_misses_parties

__all__ = ["auto_burn_in", "burn_in", "check_semivalue", "clip_norm",
           "check_joint", "learning_rate", "walk_problem", "wave_size"]

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
# either sign there (benchmarks/drift_cap.py, results/quality_drift_cap.jsonl).
AUTO_MARGIN_DRIFT = 2.0
# clip_norm="auto": this percentile of the norms of the (projected) validation
# gradients at the initial model. Most releases are clipped: under heavy noise
# the sign of the signal is what a value can carry (benchmarks/quality.py).
AUTO_CLIP_PERCENTILE = 10
# q="auto" when releases are averaged: the seed paper's 0.9, and for Shapley
# the last 2% of the permutations counted: a counted permutation steps with
# the mean of the releases before its wave and its own, so a shorter counted
# tail weighs the releases more evenly (benchmarks/burn_in.py,
# results/quality_burn_in.jsonl). Other semivalues weigh few positions, which
# fewer counted permutations may sample worse: they keep 0.9.
AUTO_BURN_IN = 0.9
AUTO_COUNTED_FRACTION = 0.02
# The line's table covers where the walks go: this many noise stds of a
# walk of n steps on either side, and at least this many intervals.
LINE_NOISE_REACH = 4
LINE_MIN_INTERVALS = 512
NEG_LOSS = 0
# batch_permutations="auto": a wave of at most AUTO_WAVE permutations, fewer
# (halved, down to AUTO_MIN_WAVE) while the wave walks more than
# AUTO_WAVE_PARTY_STEPS party steps: a wave's orders, noise and marginals
# grow with its permutations times the parties, and all of them may be walked
# on one Dask worker (benchmarks/results/speed_dask.jsonl, dask_scale).
# A power of two: it splits evenly over 2, 4, ... workers or threads.
AUTO_WAVE = 16
AUTO_MIN_WAVE = 2
AUTO_WAVE_PARTY_STEPS = 2**24


def check_joint(subspace, utility):
    """Refuse, before any work, what the joint walk does not cover: it reads an
    owner's marginal along the tabulated public line only."""
    if not (isinstance(subspace, str) and subspace == "public"):
        raise ValueError(
            "threat_model='joint' needs subspace='public' (the walk along the "
            f"public line); got subspace={'None' if subspace is None else 'an array'}"
            ". Use threat_model='central' for other subspaces.")
    if utility == "accuracy":
        raise ValueError(
            "threat_model='joint' needs a utility the public line tabulates; "
            "utility='accuracy' is not one: use utility='neg_loss' (or "
            "threat_model='central').")


def wave_size(batch_permutations, n_parties):
    """``batch_permutations``, or for ``"auto"`` the wave size from the number
    of parties (public): ``AUTO_WAVE`` up to about a million parties, halved
    while a wave walks more than ``AUTO_WAVE_PARTY_STEPS`` party steps, at
    least ``AUTO_MIN_WAVE``. The same on every backend, so values are too
    (a wave longer than the walk is the whole walk)."""
    if batch_permutations != "auto":
        return int(batch_permutations)
    wave = AUTO_WAVE
    while wave > AUTO_MIN_WAVE and wave * n_parties > AUTO_WAVE_PARTY_STEPS:
        wave //= 2
    return wave


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


def burn_in(semivalue, q, n_permutations, batch_permutations, use_rolling,
            n_parties, stacklevel):
    """``(q_, counted)``: the burn-in ratio (``q``, or for ``"auto"``
    :func:`auto_burn_in` when releases are averaged, else 0) and the mask of
    the counted permutations; warns when leave-one-out misses parties."""
    q = (float(q) if q != "auto"
         else auto_burn_in(semivalue, n_permutations, batch_permutations)
         if use_rolling else 0.0)
    counted = counted_permutations(q, n_permutations)
    warn_if_loo_misses_parties(semivalue, int(counted.sum()), n_parties, q,
                               stacklevel=stacklevel + 1)
    return q, counted


def _settings(game, **more):
    """The objective's settings as the space's methods take them, and what the
    fit walks (the set-up walks on its kernel)."""
    return dict(loss=game.loss, loss_param=game.loss_param, l2=game.l2, l1=game.l1,
                n_penalized=game.n_penalized,
                walk=dict(utility=game.utility, offsets=game.offsets,
                          record_level=game.record_level, joint=game.joint),
                **more)


def start_gradients(game):
    """Each validation row's gradient (in the release space) at the walk's
    initial model: ``(n_val, m)``."""
    rows = (game.X_val, game.T_val, np.arange(len(game.X_val) + 1))
    theta = game.space.initial_theta(game.T.shape[1], game.X.shape[1])
    return game.space.party_gradients(theta, *rows,
                                      **_settings(game, row_weights=game.val_weights))


def clip_norm(game, clip_norm):
    """``clip_norm``, or for "auto" a percentile of validation gradient norms."""
    if clip_norm != "auto":
        return float(clip_norm)
    norms = np.linalg.norm(start_gradients(game), axis=1)
    norms = norms[norms > 0]  # rows the loss is flat at carry no scale
    if len(norms) == 0 or not np.all(np.isfinite(norms)):
        raise ValueError(
            "clip_norm='auto' found no finite, nonzero validation gradient "
            "at the initial model; give clip_norm as a number.")
    return float(np.percentile(norms, AUTO_CLIP_PERCENTILE))


def utilities(game, thetas, rows, utility):
    """Utility of each of ``thetas`` on the validation ``rows``, as the walk
    computes it."""
    data = (game.X_val[rows], game.T_val[rows], game.labels_val[rows])
    return game.space.utilities(thetas, *data, loss=game.loss, utility=utility,
                                loss_param=game.loss_param,
                                total_sum_squares=game.total_sum_squares)


def initial_utility(game):
    """The validation utility of the walks' initial model."""
    theta = game.space.initial_theta(game.T.shape[1], game.X.shape[1])
    return utilities(game, [theta], np.arange(len(game.X_val)), game.utility)[0]


def _mean_clipped_step(game, clip):
    """Norm of the validation rows' mean clipped gradient at the initial
    model: a walk's drift per step over the learning rate (public)."""
    gradients = start_gradients(game)
    norms = np.linalg.norm(gradients, axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        scale = np.where(norms > clip, clip / norms, 1.0)
    drift = float(np.linalg.norm(np.mean(gradients * scale, axis=0)))
    return drift if np.isfinite(drift) else 0.0


def _search_pass(space, X_val, T_val, model, orders, i, rate):
    """One pass of the learning-rate search: rate ``rate``, order ``i``."""
    return space.sgd_pass(X_val, T_val, **model, learning_rate=rate, order=orders[i])


def learning_rate(game, learning_rate, clip, step_noise, seed):
    """``learning_rate``, or "auto": a search on the validation set, capped by the noise.

    The search runs one-pass SGD of ``n`` steps on one half of the
    validation set and scores the model's own loss on the other half (both
    ways round). With noise, the rate is then capped so that ``n`` noisy
    steps move a validation margin by about ``AUTO_MARGIN_NOISE``:
    ``lr * step_noise * sqrt(n) * margin_scale``, ``margin_scale`` the root
    mean square of how far a unit release moves a validation row's margins;
    and so that ``n`` mean validation steps move it by at most
    ``AUTO_MARGIN_DRIFT``. Only the validation set is read. With
    record-level releases party ``j``'s step noise is ``step_noise / n_j``
    (its size, public), and ``sqrt(n)`` becomes ``sqrt(sum_j 1 / n_j^2)``.
    """
    if learning_rate != "auto":
        return float(learning_rate)
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
    model = _settings(game, clip_norm=clip, row_weights=game.val_weights)
    # The passes read the validation rows only: with the training rows on a
    # Dask cluster they run on its workers, the same passes.
    calls = [(i, rate) for i in range(len(orders)) for rate in AUTO_LEARNING_RATES]
    thetas = map_on_workers(walk_client(game.X), _search_pass, calls, game.space,
                            game.X_val, game.T_val, model, orders)
    for i, (_, test) in enumerate(halves):
        scores += utilities(game, thetas[i * len(AUTO_LEARNING_RATES):
                                         (i + 1) * len(AUTO_LEARNING_RATES)],
                            test, NEG_LOSS)
    scores[~np.isfinite(scores)] = -np.inf
    rate = float(AUTO_LEARNING_RATES[int(np.argmax(scores))])
    if step_noise > 0:
        sizes = np.diff(game.offsets) if game.record_level else np.ones(n_steps)
        margin_scale = game.space.margin_scale(game.X_val, game.T.shape[1])
        cap = AUTO_MARGIN_NOISE / (step_noise * np.sqrt(np.sum(1.0 / sizes**2))
                                   * margin_scale)
        rate = min(rate, float(cap))
        drift = n_steps * _mean_clipped_step(game, clip) * margin_scale
        if drift > 0:
            rate = min(rate, AUTO_MARGIN_DRIFT / drift)
    return rate


def line_range(center, noise_reach, reach=np.inf):
    """``(lo, hi)`` of ``z`` to tabulate: 0 to ``center``, widened by half of
    it and by ``noise_reach``, and at most ``reach + noise_reach`` from 0:
    ``n`` clipped steps (``reach = lr n C``) go no further than ``reach``
    (a network's validation optimum can lie ten times further)."""
    margin = 0.5 * abs(center) + noise_reach
    cap = reach + noise_reach
    return (max(min(0.0, center) - margin, -cap),
            min(max(0.0, center) + margin, cap))


def walk_problem(game, *, clip, rate, noise_std, n_permutations):
    """The walk's inputs. Along a public line the utility is tabulated where a
    walk goes: from 0 to ``line_center`` (the validation optimum), widened by
    half that and by four noise stds of a walk of ``n`` steps (``4 lr s
    sqrt(n)``), and no further than ``lr n C`` (the clipped steps' reach)
    plus those four stds, in at most ``n k / 4`` steps (at least 512), so
    that the table costs at most a quarter of the exact walk's utilities; a
    walk past it reads the utility from the rows, exactly. (The space's
    ``line_center``: where the public model lies along the line.)"""
    settings = dict(loss=game.loss, utility=game.utility,
                    loss_param=game.loss_param, l2=game.l2,
                    n_penalized=game.n_penalized, clip_norm=clip,
                    learning_rate=rate, total_sum_squares=game.total_sum_squares,
                    weights=game.weights, l1=game.l1, row_weights=game.row_weights,
                    record_level=game.record_level)
    if game.joint:
        settings["joint"] = True
    n_parties = len(game.offsets) - 1
    return game.space.problem(
        game.X, game.T, game.offsets, game.X_val, game.T_val, game.labels_val,
        **settings,
        line_range=line_range(game.space.line_center, LINE_NOISE_REACH * rate * noise_std
                              * np.sqrt(n_parties), rate * n_parties * clip),
        line_intervals=min(LINE_MAX_INTERVALS,
                           max(LINE_MIN_INTERVALS, n_parties * n_permutations // 4)))
