"""Running the walk: waves of permutations, in parallel, bit-reproducibly.

Permutations run in waves of ``batch_permutations``. The permutations of a
wave are independent: they run in parallel (joblib, threads by default, the
kernels release the GIL), and with a rolling mean all of them read each
party's mean of its releases as of the end of the previous wave, which is
updated once the wave is done. Every permutation draws its order and noise
from its own seed, and the results of a wave are added up in permutation
order, so the values are bit-identical for any ``n_jobs`` and any joblib
backend at a fixed seed and wave size.
"""

import sys
import time
from collections import namedtuple

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed

from . import _kernels
from ._noise import gaussian_noise

WalkProblem = namedtuple("WalkProblem", [
    "X", "T", "offsets", "X_val_t", "T_val_t", "labels_val", "loss", "utility",
    "huber_epsilon", "l2", "n_penalized", "clip_norm", "learning_rate",
    "total_sum_squares", "theta_init", "weights"])

WalkResult = namedtuple("WalkResult", [
    "marginal_mean", "marginal_m2", "n_counted", "end_utility"])


def make_problem(X, T, offsets, X_val, T_val, labels_val, *, loss, utility,
                 huber_epsilon, l2, n_penalized, clip_norm, learning_rate,
                 total_sum_squares, weights):
    """Pack the walk's inputs as contiguous arrays and plain scalars.

    ``X`` holds the parties' rows, party ``j`` being
    ``X[offsets[j]:offsets[j + 1]]``; the validation set is given by rows.
    """
    f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)
    n_outputs = T.shape[1]
    return WalkProblem(
        f64(X), f64(T), np.ascontiguousarray(offsets, dtype=np.int64),
        _kernels.pad_columns(X_val), _kernels.pad_columns(T_val),
        np.ascontiguousarray(labels_val, dtype=np.int64), int(loss),
        int(utility), float(huber_epsilon), float(l2), int(n_penalized),
        float(clip_norm), float(learning_rate), float(total_sum_squares),
        np.zeros((n_outputs, X.shape[1])), f64(weights))


def permutation_draws(order_seed, noise_seed, n_parties, noise_std, noise_out):
    """Permutation ``t``'s order, and its noise written into ``noise_out``.

    Each permutation has its own Generators, seeded from its own child seeds
    (one public, for the order; one secret, for the noise), so results do not
    depend on how permutations are grouped or scheduled.
    """
    permutation = np.random.default_rng(order_seed).permutation(n_parties)
    if noise_out is not None:
        gaussian_noise(np.random.default_rng(noise_seed), noise_std, noise_out)
    return permutation


class SeededDraws:
    """Draws of permutation ``t`` from the ``t``-th child seeds (picklable).

    The walk's draw protocol: ``has_noise``, and ``draw(t, noise_out)``
    returning the order and filling ``noise_out`` (one entry per party).
    ``order_seeds`` are public (``random_state``); ``noise_seeds`` secret.
    """

    def __init__(self, order_seeds, noise_seeds, n_parties, noise_std):
        self.order_seeds = order_seeds
        self.noise_seeds = noise_seeds
        self.n_parties = n_parties
        self.noise_std = noise_std
        self.has_noise = noise_std > 0

    def __call__(self, t, noise_out):
        return permutation_draws(self.order_seeds[t], self.noise_seeds[t],
                                 self.n_parties, self.noise_std, noise_out)


def _walk_part(problem, draw, indices, x_tt, rolling_mean):
    """Walk the permutations ``indices`` of one wave; runs in a worker."""
    n_parties = problem.offsets.shape[0] - 1
    permutations = np.empty((len(indices), n_parties), dtype=np.int64)
    noise = (np.empty((len(indices), n_parties, *problem.theta_init.shape))
             if draw.has_noise else None)
    for i, t in enumerate(indices):
        permutations[i] = draw(t, None if noise is None else noise[i])
    marginals, end_utility = _kernels.walk(problem, permutations, noise, x_tt,
                                           rolling_mean)
    raw_releases = noise if rolling_mean is not None else None
    return marginals, raw_releases, end_utility


class _Progress:
    """Permutations done, per second and time left: tqdm if installed."""

    def __init__(self, total, verbose):
        self.total, self.done, self.bar = total, 0, None
        self.enabled = bool(verbose)
        self.started = self.last = time.perf_counter()
        if self.enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, unit="perm", desc="DPDataValuator")

    def update(self, n):
        if not self.enabled:
            return
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.perf_counter()
        if now - self.last >= 1.0 or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.started, 1e-9)
            print(f"[DPDataValuator] {self.done}/{self.total} permutations, "
                  f"{rate:.1f}/s, ETA {(self.total - self.done) / rate:.1f}s",
                  file=sys.stderr)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run_walks(problem, draw, *, x_tt, use_rolling, counted, batch_permutations,
              n_jobs=None, verbose=0):
    """Walk all permutations in waves; return each party's marginal statistics.

    The mean and the sum of squared deviations (``marginal_m2``) of the
    counted marginals are kept with Welford's update, in permutation order.

    ``draw`` follows :class:`SeededDraws`' protocol; ``x_tt[t]`` the weight of its fresh release; ``counted[t]``
    whether its marginals count (past the burn-in).
    """
    n_permutations = len(x_tt)
    n_parties = problem.offsets.shape[0] - 1
    marginal_mean = np.zeros(n_parties)
    marginal_m2 = np.zeros(n_parties)
    n_counted = 0
    end_utility = np.empty(n_permutations)
    rolling_mean = (np.zeros((n_parties, *problem.theta_init.shape))
                    if use_rolling else None)
    progress = _Progress(n_permutations, verbose)
    with Parallel(n_jobs=n_jobs, prefer="threads") as parallel:
        n_workers = effective_n_jobs(n_jobs)
        for start in range(0, n_permutations, batch_permutations):
            wave = np.arange(start, min(start + batch_permutations, n_permutations))
            parts = [part for part in np.array_split(wave, n_workers) if len(part)]
            results = parallel(
                delayed(_walk_part)(problem, draw, part, x_tt[part], rolling_mean)
                for part in parts)
            raw_sum = np.zeros_like(rolling_mean) if use_rolling else None
            for part, (marginals, raw_releases, ends) in zip(parts, results):
                end_utility[part] = ends
                for t, row in zip(part, marginals):
                    if counted[t]:
                        n_counted += 1
                        # A diverged walk is reported by the caller, not here.
                        with np.errstate(invalid="ignore", over="ignore"):
                            deviation = row - marginal_mean
                            marginal_mean += deviation / n_counted
                            marginal_m2 += deviation * (row - marginal_mean)
                if use_rolling:
                    for raw in raw_releases:
                        raw_sum += raw
            if use_rolling:
                rolling_mean = (start * rolling_mean + raw_sum) / (start + len(wave))
            progress.update(len(wave))
    progress.close()
    return WalkResult(marginal_mean, marginal_m2, n_counted, end_utility)
