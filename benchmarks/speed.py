"""Speed benchmark: prints one JSON object per case on stdout.

Run from the repository root:

    python benchmarks/speed.py [case ...] > benchmarks/results/speed.jsonl

Cases:

- ``cold_start``: the first binary fit in a fresh process with an empty
  numba cache (``NUMBA_CACHE_DIR``), import excluded (reported apart), of
  the default walk, the full-space walk and ``MLPClassifier()``'s default
  walk (k = 20), and the default walk at the library's k = 1000; with the
  first fit's CPU seconds (the machine is shared: CPU time
  moves less with the load than wall time);
- ``paper_table8``: the seed paper's Table 8 job (diabetes, logistic
  regression, correlated noise), one job;
- ``vs_reference``: the plain-numpy Algorithm 1 of tests/reference.py on
  the same job;
- ``floor``: the Table 8 job, and its walk kernel alone, against its floor,
  the job's own arithmetic
  in a tight numba loop (per step: the validation margins' multiply-adds,
  ``d + 1`` columns for the full-space walk and one for the default walk,
  and one softplus per validation row, summed);
- ``threads``: n_jobs=1 against n_jobs=2 on three jobs;
- ``dask``: a LocalCluster of 2 worker processes x 1 thread against one
  job, with the bytes that cross the network per wave;
- ``scale``: 100,000 parties (d = 20, 500 validation rows, waves of 16):
  time and peak memory, in a fresh process;
- ``multiclass``: cost per step against the number of classes (digits);
- ``randomness``: the default walk's time per step against drawing that
  step's randomness alone (its place in the permutation and its noise, with
  the sampler the walk ships), in the same run: the Table 8 job and
  make_classification with 8,000 parties;
- ``large``: a default fit on 200,000 parties (d = 20, 2,000 validation
  rows, k = 1000) and on 1,000,000 (``--large-n`` to change), 2 threads, in
  a fresh process: time and peak memory.
- ``losses``: the walk kernel's cost per step for each loss (and an L1
  term, row weights) against binary logistic, on the Table 8 job's size.
- ``dask_input``: Dask-array input (rows persisted on a LocalCluster of 2
  processes x 1 thread, the walk on its workers) against numpy input in one
  process with n_jobs=1, n = 100,000 and 1,000,000, k = 128.
- ``dask_scale``: Dask input read from Parquet (written by the workers),
  workers limited to 1 GiB each (``--scale-memory``): the label score and
  the default walk, time and each fit's peak memory per process, for
  n = 1e4 ... 1e7 (``--scale-n``) on 2 workers (``--scale-workers``).
- ``noise_cost``: the fit with the shipped noise (ChaCha20, rounded Gaussian
  on a grid) against the float Gaussian it replaced, and the sampler alone.

Times are medians over repeats in one process, after a warm-up fit; the
machine (2 cores, shared) is noisy, so compare the ratios in a case.
The walk measured is the estimator's default and, when the estimator has a
``subspace`` parameter, also the full-space walk (``subspace=None``).
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from unittest import mock

import numpy as np
from numba import njit
from sklearn.datasets import load_diabetes, load_digits, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skdpval import DPDataValuator

from skdpval.kernels import _losses, _math, _subspace_problem
from skdpval.kernels._linear import make_problem
from skdpval.walks import _waves
from skdpval.privacy._release import release_stream
from skdpval.privacy._mechanism import GaussianPart, NoiseStream
from skdpval.privacy._grid import Grid
from skdpval.privacy._secure_noise import WALK, noise_key
from skdpval.walks._runner import run_walks
from skdpval.walks._waves import SeededDraws

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

# Table 8 of the seed paper: seconds with correlated noise (L40 GPU, PyTorch).
PAPER_TABLE8 = {(100, 120): 78.466, (100, 240): 154.954, (100, 360): 262.166,
                (200, 120): 113.612, (200, 240): 256.431, (200, 360): 407.126,
                (300, 120): 158.565, (300, 240): 344.286, (300, 360): 530.579}
N_VAL = 142  # diabetes has 442 rows: the validation set is what 300 parties leave
LEARNING_RATE = 0.05
# make_classification's jobs (8000 and 100,000 parties): at 0.05 the
# full-space walk diverges at epsilon 1 (ConvergenceWarning), and a diverged
# walk runs about 15% slower (overflowing margins): not a job anyone runs.
CLASSIFICATION_LEARNING_RATE = 0.005


@contextlib.contextmanager
def timed_walks(seconds):
    """Inside, each fit's ``run_walks`` (the walk alone) appends its seconds."""
    from skdpval.valuation import _data_valuator

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return run_walks(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - started)

    with mock.patch.object(_data_valuator, "run_walks", timed):
        yield


def emit(**case):
    # The load average says how busy the shared machine was during the case.
    print(json.dumps({**case, "load_average_1min": round(os.getloadavg()[0], 2)}),
          flush=True)


def walks():
    """The walks to measure: the default, and the full-space one if it differs."""
    if "subspace" in DPDataValuator().get_params():
        return {"default": {}, "full-space": {"subspace": None}}
    return {"full-space (the default)": {}}


def diabetes():
    X, y = load_diabetes(return_X_y=True)
    y = (y > np.median(y)).astype(int)
    order = np.random.default_rng(0).permutation(len(y))
    X = StandardScaler().fit_transform(X)[order]
    return X[:-N_VAL], y[order][:-N_VAL], X[-N_VAL:], y[order][-N_VAL:]


def classification(n, n_val=500, d=20):
    X, y = make_classification(n_samples=n + n_val, n_features=d, random_state=0)
    return X[:n], y[:n], X[n:], y[n:]


def timed_fit(valuator, X, y, X_val, y_val, repeats=3):
    """Median seconds of ``repeats`` fits after a warm-up fit; and the values."""
    valuator.fit(X, y, X_val=X_val, y_val=y_val)
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        valuator.fit(X, y, X_val=X_val, y_val=y_val)
        seconds.append(time.perf_counter() - started)
    return float(np.median(seconds)), valuator.values_


COLD_FIT = """
import json, time, warnings
started = time.perf_counter()
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.neural_network import MLPClassifier
from skdpval import DPDataValuator
imported = time.perf_counter() - started
X, y = load_breast_cancer(return_X_y=True)
X = (X - X.mean(0)) / X.std(0)
seconds, cpu = [], []
for _ in range(2):
    started, started_cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FirstCompileWarning, and a network's fit's
        DPDataValuator({estimator}, n_permutations={k}, random_state=0, noise_seed=0,
                       **{params!r}).fit(X[:300], y[:300], X_val=X[300:],
                                         y_val=y[300:])
    seconds.append(time.perf_counter() - started)
    cpu.append(time.process_time() - started_cpu)
print(json.dumps(dict(import_seconds=imported, first_fit_seconds=seconds[0],
                      first_fit_cpu_seconds=cpu[0], second_fit_seconds=seconds[1])))
"""


def cold_start(repeats=3):
    """A fresh process with an empty numba cache: import, first fit, second fit."""
    fits = {walk: ("None", params, 20) for walk, params in walks().items()}
    fits["MLPClassifier() default"] = ("MLPClassifier()", {}, 20)
    # The library's default k (benchmarks/cold_fit.py: no parameter set at all).
    fits["default, k = 1000"] = ("None", {}, 1000)
    for walk, (estimator, params, k) in fits.items():
        runs = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as cache:
                out = subprocess.run(
                    [sys.executable, "-c",
                     COLD_FIT.format(estimator=estimator, params=params, k=k)],
                    capture_output=True, text=True, check=True,
                    env={**os.environ, "NUMBA_CACHE_DIR": cache}).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
        median = {key: round(float(np.median([run[key] for run in runs])), 3)
                  for key in runs[0]}
        emit(case="cold_start", walk=walk, data="breast_cancer", n=300, k=k,
             repeats=repeats, **median,
             compile_seconds=round(median["first_fit_seconds"]
                                   - median["second_fit_seconds"], 3))


def paper_table8():
    X, y, X_val, y_val = diabetes()
    for n in (100, 200, 300):
        for k in (120, 240, 360):
            valuator = DPDataValuator(n_permutations=k, learning_rate=LEARNING_RATE,
                                      noise="correlated", epsilon=1.0, n_jobs=1,
                                      random_state=0)
            seconds, _ = timed_fit(valuator, X[:n], y[:n], X_val, y_val)
            emit(case="paper_table8", n=n, k=k, n_val=N_VAL, n_jobs=1,
                 seconds=round(seconds, 4), paper_seconds=PAPER_TABLE8[n, k],
                 speedup_vs_paper=round(PAPER_TABLE8[n, k] / seconds))


def _diabetes_problem(n):
    X, y, X_val, y_val = diabetes()
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    targets = lambda labels: np.where(labels == 1, 1.0, -1.0)[:, None]
    return dict(X=ones(X[:n]), T=targets(y[:n]), X_val=ones(X_val),
                T_val=targets(y_val), labels_val=y_val)


class _GivenDraws:
    """Given orders and float noise, in the walk's draw protocol (no grid)."""

    has_noise = True

    def __init__(self, orders, noise):
        self.orders, self.noise = orders, noise

    def __call__(self, lo, hi, releases):
        releases[...] = self.noise[lo:hi]
        return self.orders[lo:hi], release_stream(releases)


def vs_reference(n=300, k=3):
    """The same permutations and noise through tests/reference.py and the kernel."""
    from reference import algorithm1

    data = _diabetes_problem(n)
    shape = (1, data["X"].shape[1])
    noise_std = 10.0
    # The reference adds float noise (no grid): both walks get the same numbers.
    permutations, _ = SeededDraws(np.random.SeedSequence(0), None, k, n)(0, k, None)
    noise = np.random.default_rng(1).normal(0.0, noise_std, (k, n, *shape))
    draws = _GivenDraws(permutations, noise)
    settings = dict(learning_rate=LEARNING_RATE, l2=1.0 / n, n_penalized=10,
                    clip_norm=1.0)
    started = time.perf_counter()
    psi, _ = algorithm1(**data, loss="logistic", utility_name="neg_loss",
                        permutations=permutations, noise=noise,
                        x_tt=1.0 / np.arange(1, k + 1), q=0.0, weights=np.ones(n),
                        **settings)
    reference_seconds = time.perf_counter() - started
    problem = make_problem(data["X"], data["T"], np.arange(n + 1), data["X_val"],
                           data["T_val"], data["labels_val"], loss=_losses.LOGISTIC,
                           utility=_losses.NEG_LOSS, loss_param=0.0,
                           total_sum_squares=1.0, weights=np.ones(n), **settings)
    run = lambda: run_walks(problem, draws, x_tt=1.0 / np.arange(1, k + 1),
                            use_rolling=True, counted=np.ones(k, bool),
                            batch_permutations=1)
    run()
    started = time.perf_counter()
    result = run()
    kernel_seconds = time.perf_counter() - started
    emit(case="vs_reference", n=n, k=k, n_val=N_VAL,
         reference_seconds=round(reference_seconds, 4),
         kernel_seconds=round(kernel_seconds, 6),
         ratio=round(reference_seconds / kernel_seconds, 1),
         max_abs_difference=float(np.max(np.abs(result.marginal_mean - psi))))


@njit(cache=True, nogil=True, error_model="numpy")
def _floor_loop(X_val_t, t_val, n_val, steps, seed, buf, with_loss):
    """The job's arithmetic: per step, margins -= step @ X_val, then the loss.

    The step differs every time (so nothing is hoisted); the validation
    rows are padded as in the kernels; the loss is summed as they sum it.
    ``with_loss=False`` times the multiply-adds alone.
    """
    n_columns, n_rows = X_val_t.shape
    margins = buf[0]
    losses = buf[1]
    for i in range(n_rows):
        margins[i] = 0.0
    total = 0.0
    for s in range(steps):
        for c in range(n_columns):
            step = 1e-4 * (((s * 7 + c * 3 + seed) % 13) - 6.0)
            column = X_val_t[c]
            for i in range(n_rows):
                margins[i] -= step * column[i]
        if with_loss:
            for i in range(n_rows):
                losses[i] = _math.softplus(-t_val[i] * margins[i])
            total += _math._sum(losses, n_val)
    return total + margins[0]


def floor(n=300, k=360, repeats=9):
    """The Table 8 job (one job) against the job's own arithmetic, per walk.

    The floor of a walk is its own arithmetic: the full-space walk updates
    ``d + 1`` margin columns a step, the default walk one (the projected
    feature). The job and the floor run in turn, ``repeats`` times: the
    ratio is the median of the pairs' ratios (the machine's speed drifts).
    """
    X, y, X_val, y_val = diabetes()
    steps = n * k
    for walk, params in walks().items():
        valuator = DPDataValuator(n_permutations=k, learning_rate=LEARNING_RATE,
                                  epsilon=1.0, n_jobs=1, random_state=0, **params)
        valuator.fit(X[:n], y[:n], X_val=X_val, y_val=y_val)
        columns = np.hstack([X_val, np.ones((N_VAL, 1))])
        if getattr(valuator, "subspace_", None) is not None:
            mean, std = X_val.mean(axis=0), X_val.std(axis=0)  # as standardize does
            columns = np.hstack([(X_val - mean) / std, np.ones((N_VAL, 1))])
            columns = columns @ valuator.subspace_.T
        X_val_t = _math.pad_columns(columns)
        t_val = _math.pad_columns(np.where(y_val == 1, 1.0, -1.0)[:, None])[0]
        buf = np.empty((2, X_val_t.shape[1]))
        kernel_only = _walk_kernel_alone(valuator, X[:n], y[:n], X_val, y_val, k)
        runs = {
            "job": lambda seed: valuator.fit(X[:n], y[:n], X_val=X_val, y_val=y_val),
            "kernel": kernel_only,
            "floor": lambda seed: _floor_loop(X_val_t, t_val, N_VAL, steps, seed, buf,
                                              True),
            "multiply_adds": lambda seed: _floor_loop(X_val_t, t_val, N_VAL, steps,
                                                      seed, buf, False)}
        seconds = {name: [] for name in runs}
        for seed in range(repeats + 1):
            for name, run in runs.items():
                started = time.perf_counter()
                run(seed)
                if seed:  # the first round warms up (compiles)
                    seconds[name].append(time.perf_counter() - started)
        job, kernel, floor_seconds, multiply_adds = (np.array(seconds[name])
                                                     for name in runs)
        ratios = job / floor_seconds
        emit(case="floor", walk=walk, n=n, k=k, n_val=N_VAL,
             n_columns=X_val_t.shape[0], steps=steps,
             multiply_adds=steps * N_VAL * X_val_t.shape[0],
             softplus_evaluations=steps * N_VAL, repeats=repeats,
             job_seconds=round(float(np.median(job)), 4),
             floor_seconds=round(float(np.median(floor_seconds)), 4),
             multiply_add_seconds=round(float(np.median(multiply_adds)), 4),
             softplus_share_of_floor=round(float(np.median(
                 1 - multiply_adds / floor_seconds)), 3),
             fit_over_floor=round(float(np.median(ratios)), 3),
             fit_over_floor_range=[round(float(ratios.min()), 3),
                                   round(float(ratios.max()), 3)],
             kernel_seconds=round(float(np.median(kernel)), 4),
             kernel_over_floor=round(float(np.median(kernel / floor_seconds)), 3),
             job_ns_per_step=round(float(np.median(job)) / steps * 1e9),
             floor_ns_per_step=round(float(np.median(floor_seconds)) / steps * 1e9))


def _walk_kernel_alone(valuator, X, y, X_val, y_val, k, batch=16):
    """The fitted valuator's walk kernel on its own job: waves of ``batch``
    permutations with noise drawn once beforehand (no draws, no search)."""
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)  # as standardize does
    ones = lambda A: np.hstack([(A - mean) / std, np.ones((len(A), 1))])
    targets = lambda labels: np.where(labels == 1, 1.0, -1.0)[:, None]
    n = len(X)
    settings = dict(loss=_losses.LOGISTIC, utility=_losses.NEG_LOSS,
                    loss_param=0.0, l2=1.0 / n, n_penalized=X.shape[1],
                    clip_norm=valuator.clip_norm_, learning_rate=valuator.learning_rate_,
                    total_sum_squares=1.0, weights=np.ones(n))
    data = (ones(X), targets(y), np.arange(n + 1), ones(X_val), targets(y_val), y_val)
    if valuator.subspace_ is None:
        problem = make_problem(*data, **settings)
    else:
        problem = _subspace_problem.make_subspace_problem(valuator.subspace_, *data, **settings)
    rng = np.random.default_rng(0)
    permutations = np.array([rng.permutation(n) for _ in range(batch)])
    noise = valuator.noise_multiplier_ * valuator.clip_norm_ * rng.normal(
        size=(batch, n, *problem.release_shape))
    rolling = np.zeros((n, *problem.release_shape))

    def run(seed):
        for _ in range(-(-k // batch)):
            problem.walk(permutations, release_stream(noise.copy()),
                         np.full(batch, 0.1), rolling)
    return run


def threads(repeats=7):
    """n_jobs=1 against n_jobs=2 on a small, a middle and a large job.

    The two run in turn (after a warm-up each); the speed-up is the median
    of the pairs' ratios.
    """
    X, y, X_val, y_val = diabetes()
    jobs = [("table8", X[:300], y[:300], X_val, y_val, 360, repeats, LEARNING_RATE),
            ("diabetes", X[:300], y[:300], X_val, y_val, 200, repeats, LEARNING_RATE),
            ("classification", *classification(8000), 64, 3, CLASSIFICATION_LEARNING_RATE)]
    for walk, params in walks().items():
        for name, X, y, X_val, y_val, k, rounds, learning_rate in jobs:
            valuators = {n_jobs: DPDataValuator(
                n_permutations=k, learning_rate=learning_rate, epsilon=1.0,
                n_jobs=n_jobs, random_state=0, noise_seed=0, **params) for n_jobs in (1, 2)}
            seconds = {1: [], 2: []}
            for round_ in range(rounds + 1):
                for n_jobs, valuator in valuators.items():
                    started = time.perf_counter()
                    valuator.fit(X, y, X_val=X_val, y_val=y_val)
                    if round_:  # the first round warms up
                        seconds[n_jobs].append(time.perf_counter() - started)
            one, two = np.array(seconds[1]), np.array(seconds[2])
            emit(case="threads", walk=walk, job=name, n=len(X), k=k,
                 n_val=len(X_val), d=X.shape[1], repeats=rounds,
                 seconds_1_job=round(float(np.median(one)), 4),
                 seconds_2_jobs=round(float(np.median(two)), 4),
                 speedup=round(float(np.median(one / two)), 3),
                 speedup_range=[round(float(np.min(one / two)), 3),
                                round(float(np.max(one / two)), 3)],
                 values_identical=bool(np.array_equal(valuators[1].values_,
                                                      valuators[2].values_)))


def _loopback_bytes():
    with open("/proc/net/dev") as f:
        for line in f:
            if line.strip().startswith("lo:"):
                return int(line.split(":")[1].split()[0])
    return 0


def _transfers(dask_worker):
    """What this worker sent: (recipient, key, bytes) (None: the client)."""
    return [(entry.get("who"), str(key), size)
            for entry in dask_worker.transfer_outgoing_log
            for key, size in entry.get("keys", {}).items()]


def dask():
    """A LocalCluster of 2 worker processes x 1 thread against one local job.

    The local fit and the Dask fit run in turn (9 pairs at n = 8000, 5 at
    n = 100,000, after a warm-up); the speed-up is the median of the pairs'
    ratios. Bytes: what the workers sent each other (numpy's sizes,
    from Dask's transfer logs), split into what a fit sends once (the
    problem and the draws) and what every wave sends; and, as a cross-check,
    every byte on the loopback during the Dask fits. CPU: the seconds every
    process of the machine's cluster (this one, which runs the scheduler,
    and the workers) used per fit, against those of the local fit; and the
    median round trip of an empty task, submit to result.

    Bound: the local fit's set-up (its time outside ``run_walks``) runs on
    the client either way, so two workers with no overhead at all would
    take ``setup + walk / 2``; ``speedup_bound`` is the local fit over that,
    and ``dask_overhead_seconds`` what a Dask fit took beyond it. The
    default walk also runs a larger job (n = 200,000, k = 256, 16 waves).
    """
    walk_seconds = []

    import distributed
    import psutil
    from joblib import parallel_config

    once = ("WalkProblem", "SubspaceProblem", "SeededDraws")
    variants = {**walks(), "default, noise='iid'": {"noise": "iid"}}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        processes = [psutil.Process(), *psutil.Process().children(recursive=True)]
        cpu = lambda: sum(sum(p.cpu_times()[:2]) for p in processes)
        round_trips = []
        for _ in range(21):
            started = time.perf_counter()
            client.submit(int, pure=False).result()
            round_trips.append(time.perf_counter() - started)
        jobs = [(walk, params, size) for walk, params in variants.items()
                for size in ((8000, 64, 9), (100_000, 32, 5))]
        jobs.append(("default", {}, (200_000, 256, 3)))
        for walk, params, (n, k, rounds) in jobs:
            X, y, X_val, y_val = classification(n)
            d = X.shape[1]
            make = lambda **kw: DPDataValuator(n_permutations=k,
                                               learning_rate=CLASSIFICATION_LEARNING_RATE,
                                               epsilon=1.0, random_state=0, noise_seed=0,
                                               **params, **kw)
            local, on_dask = make(n_jobs=1), make(n_jobs=-1)
            local.fit(X[:2000], y[:2000], X_val=X_val, y_val=y_val)  # compiles
            with parallel_config(backend="dask"):
                on_dask.fit(X[:2000], y[:2000], X_val=X_val, y_val=y_val)  # warms workers
            client.run(lambda dask_worker: dask_worker.transfer_outgoing_log.clear())
            seconds = {"local": [], "dask": []}
            cpu_seconds = {"local": [], "dask": []}
            loopback = 0
            walk_seconds.clear()
            for _ in range(rounds):
                started, cpu_started = time.perf_counter(), cpu()
                with timed_walks(walk_seconds):
                    local.fit(X, y, X_val=X_val, y_val=y_val)
                seconds["local"].append(time.perf_counter() - started)
                cpu_seconds["local"].append(cpu() - cpu_started)
                with parallel_config(backend="dask"):
                    before = _loopback_bytes()
                    started, cpu_started = time.perf_counter(), cpu()
                    on_dask.fit(X, y, X_val=X_val, y_val=y_val)
                    seconds["dask"].append(time.perf_counter() - started)
                    cpu_seconds["dask"].append(cpu() - cpu_started)
                    loopback += _loopback_bytes() - before
            sent = [t for log in client.run(_transfers).values() for t in log]
            n_waves = rounds * -(-k // on_dask.batch_permutations)
            between = lambda keep: sum(size for who, key, size in sent
                                       if who is not None and keep(key))
            one, two = np.array(seconds["local"]), np.array(seconds["dask"])
            walked = np.array(walk_seconds)
            setup = float(np.median(one - walked))
            ideal = setup + float(np.median(walked)) / 2
            emit(case="dask", walk=walk, n=n, k=k, d=d, n_val=len(X_val),
                 workers="2 processes x 1 thread", repeats=rounds,
                 seconds_1_job=round(float(np.median(one)), 3),
                 seconds_dask=round(float(np.median(two)), 3),
                 speedup=round(float(np.median(one / two)), 3),
                 speedup_range=[round(float(np.min(one / two)), 3),
                                round(float(np.max(one / two)), 3)],
                 values_identical=bool(np.array_equal(local.values_, on_dask.values_)),
                 setup_seconds_1_job=round(setup, 4),
                 walk_seconds_1_job=round(float(np.median(walked)), 4),
                 speedup_bound=round(float(np.median(one)) / ideal, 3),
                 dask_overhead_seconds=round(float(np.median(two)) - ideal, 4),
                 cpu_seconds_1_job=round(float(np.median(cpu_seconds["local"])), 3),
                 cpu_seconds_dask=round(float(np.median(cpu_seconds["dask"])), 3),
                 empty_task_round_trip_ms=round(1e3 * float(np.median(round_trips)), 2),
                 waves_per_fit=n_waves // rounds,
                 bytes_per_wave=round(between(lambda key: not key.startswith(once)) / n_waves),
                 bytes_once_per_fit=round(between(lambda key: key.startswith(once)) / rounds),
                 bytes_to_client_per_fit=round(sum(size for who, _, size in sent
                                                   if who is None) / rounds),
                 bound_bytes_per_wave=3 * 8 * n * (d + 1),
                 loopback_bytes_per_fit=round(loopback / rounds),
                 note="bytes_per_wave: each node's sums to the other worker "
                      "(which updates its own copy of the rolling means) and to "
                      "the first (the counted sums); loopback counts every "
                      "process on the machine")


SCALE = """
import json, resource, time
from sklearn.datasets import make_classification
from skdpval import DPDataValuator
X, y = make_classification(n_samples={n} + {n_val}, n_features={d}, random_state=0)
DPDataValuator(n_permutations=2, learning_rate=0.05).fit(X[:1000], y[:1000], X_val=X[-50:], y_val=y[-50:])
started = time.perf_counter()
DPDataValuator(n_permutations={k}, learning_rate={learning_rate}, noise="correlated", n_jobs=2,
               batch_permutations={batch}, random_state=0, **{params!r}).fit(
    X[:{n}], y[:{n}], X_val=X[{n}:], y_val=y[{n}:])
seconds = time.perf_counter() - started
print(json.dumps(dict(seconds=seconds, peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""


def scale(n=100_000, k=100, n_val=500, d=20, batch=16):
    """Run in a fresh process, so that its peak memory is its own."""
    for walk, params in walks().items():
        code = SCALE.format(n=n, n_val=n_val, d=d, k=k, batch=batch, params=params,
                            learning_rate=CLASSIFICATION_LEARNING_RATE)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                             text=True, check=True).stdout
        measured = json.loads(out.strip().splitlines()[-1])
        mib = lambda n_values: round(n_values * 8 / 2**20, 1)
        emit(case="scale", walk=walk, n=n, k=k, n_val=n_val, d=d, n_jobs=2,
             batch_permutations=batch, seconds=round(measured["seconds"], 2),
             peak_memory_mib=round(measured["peak_mib"], 1),
             data_mib=mib((n + n_val) * d), one_wave_of_noise_mib=mib(batch * n * (d + 1)),
             rolling_means_mib=mib(n * (d + 1)),
             note="peak of the whole process (Python, numpy, sklearn, numba "
                  "included); at most one wave of noise is alive")


def multiclass(ks=(20, 200), repeats=3):
    """Seconds per step of the walk on digits against the number of classes c,
    at k = 20 and 200 (a short fit pays the line table's set-up and walks
    past it in its first, noisiest wave: a step costs less as k grows)."""
    for k in ks:
        _multiclass(k, repeats)


def _multiclass(k, repeats):
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rows = np.random.default_rng(0).permutation(len(y))
    X, y = X[rows], y[rows]
    n_val = 300
    cases = [("binary (digit < 5)", (y < 5).astype(int), 2)]
    cases += [(f"{c} classes", y, c) for c in (3, 5, 10)]
    per_step = {}
    for name, labels, c in cases:
        keep = labels < c if c > 2 else np.ones(len(labels), bool)
        Xc, yc = X[keep], labels[keep]
        n = len(yc) - n_val
        valuator = DPDataValuator(LogisticRegression(), n_permutations=k,
                                  learning_rate=LEARNING_RATE, n_jobs=1, random_state=0)
        seconds, _ = timed_fit(valuator, Xc[:n], yc[:n], Xc[n:], yc[n:], repeats=repeats)
        per_step[c] = seconds / (n * k)
        emit(case="multiclass", data="digits", classes=c, name=name, outputs=1 if c == 2 else c,
             n=n, k=k, n_val=n_val, d=X.shape[1], seconds=round(seconds, 4),
             us_per_step=round(per_step[c] * 1e6, 3),
             relative_to_binary=round(per_step[c] / per_step[2], 2))


def _draws_alone(valuator, n, k, batch=16):
    """Seconds to draw a fit's randomness alone: every permutation's order and
    noise, wave by wave as the walk draws them, with the shipped sampler."""
    noise_std = valuator.noise_multiplier_ * valuator.clip_norm_
    shape = (1,) if valuator.subspace_ is not None else (
        1, valuator.n_features_in_ + 1)
    grid = Grid(valuator.clip_norm_, int(np.prod(shape)))
    part = GaussianPart("walk", WALK, k, valuator.clip_norm_, grid, 1.0,
                        noise_std=noise_std)
    draw = SeededDraws(np.random.SeedSequence(0), NoiseStream(noise_key(0), part), k, n)
    started = time.perf_counter()
    for lo in range(0, k, batch):
        hi = min(k, lo + batch)
        draw(lo, hi, np.empty((hi - lo, n, *shape)))
    return time.perf_counter() - started


def randomness(repeats=9):
    """The default walk's seconds per step against its randomness alone.

    ``fit_over_randomness`` is the whole fit's (set-up included: validation,
    the public direction, the line's table); ``walk_over_randomness`` that
    of its walk alone (``run_walks``: the draws, the walk kernel, the waves'
    merges), timed inside the same fits; ``marginal_over_randomness`` what
    one more step costs a whole fit: a fit with ``2 k`` permutations, run
    in turn with the ``k`` one, less the ``k`` one, over the ``n k`` steps
    it adds (the fixed set-up cancels).
    """
    walk_seconds = []

    X, y, X_val, y_val = diabetes()
    jobs = [("paper_table8", X[:300], y[:300], X_val, y_val, 360,
             dict(learning_rate=LEARNING_RATE, epsilon=1.0)),
            ("classification_8000", *classification(8000), 64,
             dict(learning_rate=CLASSIFICATION_LEARNING_RATE, epsilon=1.0))]
    for name, Xj, yj, Xv, yv, k, params in jobs:
        valuator, doubled = (DPDataValuator(n_permutations=m, n_jobs=1, random_state=0,
                                            **params) for m in (k, 2 * k))
        valuator.fit(Xj, yj, X_val=Xv, y_val=yv)
        doubled.fit(Xj, yj, X_val=Xv, y_val=yv)
        fits, draws, added = [], [], []
        walk_seconds.clear()
        for _ in range(repeats):
            with timed_walks(walk_seconds):
                started = time.perf_counter()
                valuator.fit(Xj, yj, X_val=Xv, y_val=yv)
                fits.append(time.perf_counter() - started)
            draws.append(_draws_alone(valuator, len(yj), k))
            started = time.perf_counter()
            doubled.fit(Xj, yj, X_val=Xv, y_val=yv)
            added.append(time.perf_counter() - started - fits[-1])
        steps = len(yj) * k
        fit, drawn = float(np.median(fits)), float(np.median(draws))
        walked = float(np.median(walk_seconds))
        marginal = float(np.median(added))
        emit(case="randomness", job=name, n=len(yj), k=k, n_val=len(yv), n_jobs=1,
             repeats=repeats, fit_seconds=round(fit, 4),
             fit_ns_per_step=round(fit / steps * 1e9, 1),
             walk_ns_per_step=round(walked / steps * 1e9, 1),
             randomness_ns_per_step=round(drawn / steps * 1e9, 1),
             setup_seconds=round(fit - walked, 4),
             marginal_ns_per_step=round(marginal / steps * 1e9, 1),
             fit_over_randomness=round(fit / drawn, 2),
             walk_over_randomness=round(walked / drawn, 2),
             marginal_over_randomness=round(marginal / drawn, 2),
             ratios=[round(f / d, 2) for f, d in zip(fits, draws)])


LARGE = """
import json, resource, time
import numpy as np
from sklearn.datasets import make_classification
from skdpval import DPDataValuator
X, y = make_classification(n_samples={n} + 2000, n_features=20, random_state=0)
started = time.perf_counter()
DPDataValuator(n_permutations={k}, n_jobs=2, random_state=0, epsilon=1.0).fit(
    X[:{n}], y[:{n}], X_val=X[{n}:], y_val=y[{n}:])
seconds = time.perf_counter() - started
print(json.dumps(dict(seconds=seconds, peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""


def large(ns=(200_000, 1_000_000), k=1000):
    """Default fits on 200,000 and 1,000,000 parties, fresh processes."""
    for n in ns:
        out = subprocess.run([sys.executable, "-c", LARGE.format(n=n, k=k)],
                             capture_output=True, text=True, check=True).stdout
        measured = json.loads(out.strip().splitlines()[-1])
        emit(case="large", n=n, k=k, n_val=2000, d=20, n_jobs=2,
             seconds=round(measured["seconds"], 1),
             ns_per_step=round(measured["seconds"] / (n * k) * 1e9, 1),
             peak_memory_mib=round(measured["peak_mib"], 1))


def losses(k=64, batch=16, repeats=7):
    """Seconds per step of the walk kernel for each loss, against binary logistic.

    The Table 8 job's size (diabetes, 300 parties, 142 validation rows,
    d = 10 and an intercept), i.i.d. noise drawn once, the default
    (one public direction) and the full-space walk; classification losses on
    the binary labels, regression losses on the standardised target, the
    Tweedie family on the target over its mean. Also the logistic loss with
    an L1 term and with row weights.
    """
    X_all, y_all = load_diabetes(return_X_y=True)
    X_all = StandardScaler().fit_transform(X_all)
    n = len(y_all) - N_VAL
    with_ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    X, X_val = with_ones(X_all[:n]), with_ones(X_all[n:])
    binary = np.where(y_all > np.median(y_all), 1.0, -1.0)[:, None]
    real = ((y_all - y_all.mean()) / y_all.std())[:, None]
    positive = (y_all / y_all.mean())[:, None]
    K = _losses
    cases = [("logistic", K.LOGISTIC, 0.0, binary, {}),
             ("logistic + l1", K.LOGISTIC, 0.0, binary, {"l1": 1e-3}),
             ("logistic, weighted", K.LOGISTIC, 0.0, binary,
              {"row_weights": np.linspace(0.5, 2.0, n)}),
             ("hinge", K.HINGE, 0.0, binary, {}),
             ("squared_hinge", K.SQUARED_HINGE, 0.0, binary, {}),
             ("modified_huber", K.MODIFIED_HUBER, 0.0, binary, {}),
             ("perceptron", K.PERCEPTRON, 0.0, binary, {}),
             ("squared", K.SQUARED, 0.0, real, {}),
             ("huber", K.HUBER, 1.35, real, {}),
             ("epsilon_insensitive", K.EPSILON_INSENSITIVE, 0.1, real, {}),
             ("squared_epsilon_insensitive", K.SQUARED_EPSILON_INSENSITIVE, 0.1,
              real, {}),
             ("pinball", K.PINBALL, 0.3, real, {}),
             ("poisson", K.TWEEDIE, 1.0, positive, {}),
             ("gamma", K.TWEEDIE, 2.0, positive, {}),
             ("tweedie 1.5", K.TWEEDIE, 1.5, positive, {})]
    rng = np.random.default_rng(0)
    permutations = np.array([rng.permutation(n) for _ in range(batch)])
    direction = rng.normal(size=(1, X.shape[1]))
    direction /= np.linalg.norm(direction)
    for walk, basis in (("default", direction), ("full-space", None)):
        per_step = {}
        for name, loss, param, T, extra in cases:
            settings = dict(loss=loss, utility=K.NEG_LOSS, loss_param=param,
                            l2=1.0 / n, n_penalized=X.shape[1] - 1, clip_norm=1.0,
                            learning_rate=0.01, total_sum_squares=1.0,
                            weights=np.ones(n), **extra)
            data = (X, T[:n], np.arange(n + 1), X_val, T[n:],
                    np.zeros(N_VAL, dtype=np.int64))
            problem = (make_problem(*data, **settings) if basis is None else
                       _subspace_problem.make_subspace_problem(basis, *data, **settings))
            noise = 0.5 * rng.normal(size=(batch, n, *problem.release_shape))

            def run():
                for _ in range(k // batch):
                    problem.walk(permutations, release_stream(noise), np.ones(batch),
                                 None)
            run()  # compile
            seconds = []
            for _ in range(repeats):
                started = time.perf_counter()
                run()
                seconds.append(time.perf_counter() - started)
            per_step[name] = float(np.median(seconds)) / (k * n)
            emit(case="losses", walk=walk, loss=name, n=n, k=k, n_val=N_VAL,
                 d=X.shape[1] - 1, ns_per_step=round(per_step[name] * 1e9, 1),
                 relative_to_logistic=round(per_step[name] / per_step["logistic"], 3))


class FloatGaussianDraws(SeededDraws):
    """The walk's draws before the grid: N(0, s^2) doubles from a PCG64 stream
    per permutation (numpy's sampler), added to the unrounded statistic."""

    def __init__(self, order_seed, noise, n_permutations, n_parties):
        super().__init__(order_seed, noise, n_permutations, n_parties)
        self.noise_std = noise.std * noise.grid.gamma  # from grid units
        self.noise_words = _waves.stream_words(np.random.SeedSequence(1), n_permutations)

    def __call__(self, lo, hi, releases):
        if releases is not None:
            generator = np.random.Generator(np.random.PCG64())
            for i, t in enumerate(range(lo, hi)):
                w = self.noise_words[t]
                generator.bit_generator.state = {
                    "bit_generator": "PCG64",
                    "state": {"state": int(w[0]) << 64 | int(w[1]),
                              "inc": int(w[2]) << 64 | int(w[3]) | 1},
                    "has_uint32": 0, "uinteger": 0}
                generator.standard_normal(out=releases[i])
                releases[i] *= self.noise_std
        orders, _ = super().__call__(lo, hi, None)
        return orders, release_stream(releases)


def noise_cost(rounds=7):
    """The default fit with the shipped noise (ChaCha20, rounded Gaussian on a
    grid) against the same fit with the float Gaussian it replaced (numpy's
    PCG64 sampler, no grid), alternating, one process, one job; and the
    sampler alone (ns a draw) against numpy's normal."""
    from skdpval.privacy import _secure_noise

    X, y, X_val, y_val = diabetes()
    jobs = [("table8", X[:300], y[:300], X_val, y_val, 360, LEARNING_RATE),
            ("classification", *classification(8000), 64, CLASSIFICATION_LEARNING_RATE)]
    for walk, params in walks().items():
        for name, X, y, X_val, y_val, k, learning_rate in jobs:
            valuator = DPDataValuator(n_permutations=k, learning_rate=learning_rate,
                                      epsilon=1.0, n_jobs=1, random_state=0,
                                      noise_seed=0, **params)
            seconds = {"grid": [], "float": []}
            for round_ in range(rounds + 1):
                for variant in ("grid", "float"):
                    with mock.patch(
                            "skdpval.valuation._data_valuator.SeededDraws",
                            FloatGaussianDraws if variant == "float" else SeededDraws):
                        started = time.perf_counter()
                        valuator.fit(X, y, X_val=X_val, y_val=y_val)
                        if round_:  # the first round warms up
                            seconds[variant].append(time.perf_counter() - started)
            grid, old = np.array(seconds["grid"]), np.array(seconds["float"])
            emit(case="noise_cost", walk=walk, job=name, n=len(X), k=k, rounds=rounds,
                 seconds_float_gaussian=round(float(np.median(old)), 4),
                 seconds_grid_chacha20=round(float(np.median(grid)), 4),
                 ratio=round(float(np.median(grid / old)), 3),
                 ratio_range=[round(float(np.min(grid / old)), 3),
                              round(float(np.max(grid / old)), 3)])
    key = noise_key(0)
    for sigma in (64 * 95.0, 1e5):
        out = np.empty(2_000_000)
        _secure_noise.rounded_gaussian(key, _secure_noise.stream_nonce(1), sigma, out)
        timings, numpy_timings = [], []
        generator = np.random.default_rng(0)
        for _ in range(5):
            started = time.perf_counter()
            _secure_noise.rounded_gaussian(key, _secure_noise.stream_nonce(1), sigma, out)
            timings.append(time.perf_counter() - started)
            started = time.perf_counter()
            generator.standard_normal(out=out)
            numpy_timings.append(time.perf_counter() - started)
        emit(case="noise_cost", sampler="rounded Gaussian, ChaCha20", sigma_on_grid=sigma,
             table_entries=len(_secure_noise.rounded_gaussian_table(sigma).cdf),
             ns_per_draw=round(float(np.median(timings)) / len(out) * 1e9, 1),
             numpy_normal_ns_per_draw=round(float(np.median(numpy_timings))
                                            / len(out) * 1e9, 1))


def mlp(repeats=3, n=300, k=1000):
    """Issue 24: a default fit with MLPClassifier((32,)) (relu, and tanh whose
    line utility is tabulated) on digits 3 vs 8 (n = 300, k = 1000, the
    other 57 rows the validation set) against the default LogisticRegression
    fit on the same data (target: at most 5x); and the full-space MLP walk."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, (3, 8))
    X, y = X[keep], (y[keep] == 8).astype(int)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    data = (X[:n], y[:n], X[n:], y[n:])
    models = {"LogisticRegression": LogisticRegression(),
              "MLPClassifier((32,))": MLPClassifier((32,)),
              "MLPClassifier((32,), tanh)": MLPClassifier((32,), activation="tanh")}
    base = None
    for name, model in models.items():
        seconds, _ = timed_fit(DPDataValuator(model, epsilon=3.0, n_permutations=k,
                                              random_state=0), *data, repeats=repeats)
        base = base or seconds
        emit(case="mlp", model=name, walk="default", n=n, k=k,
             seconds=round(seconds, 3), vs_logistic=round(seconds / base, 2))
    seconds, _ = timed_fit(DPDataValuator(MLPClassifier((32,)), epsilon=3.0,
                                          n_permutations=k, subspace=None,
                                          random_state=0), *data, repeats=1)
    emit(case="mlp", model="MLPClassifier((32,))", walk="full-space", n=n, k=k,
         seconds=round(seconds, 3), vs_logistic=round(seconds / base, 2))


def _own_cpu():
    """CPU seconds (user + system) of this process so far."""
    times = os.times()
    return times.user + times.system


def _wave_timings(tasks, n_nodes):
    """From a Dask task stream of one fit: the waves' node times and the gaps
    between a wave's last node ending and the next wave's first starting
    (the wait for the exchange of sums and the rolling means' update)."""
    nodes = sorted((entry["startstops"][-1]["start"], entry["startstops"][-1]["stop"])
                   for entry in tasks if str(entry["key"]).startswith("walk_node"))
    waves = [nodes[i:i + n_nodes] for i in range(0, len(nodes), n_nodes)]
    gaps = [min(a for a, _ in later) - max(b for _, b in wave)
            for wave, later in zip(waves, waves[1:])]
    longest = [max(b - a for a, b in wave) for wave in waves]
    shortest = [min(b - a for a, b in wave) for wave in waves]
    return dict(waves=len(waves),
                node_seconds_per_wave_max=round(float(np.median(longest)), 3),
                node_seconds_per_wave_min=round(float(np.median(shortest)), 3),
                gap_ms_between_waves=round(1e3 * float(np.median(gaps)), 1)
                if gaps else None)


def dask_input(ns=(100_000, 1_000_000), k=128, rounds=5, chunks=8):
    """Dask-array input on a LocalCluster of 2 processes x 1 thread against
    numpy input in one process with n_jobs=1: the library's defaults (the
    public model's choice and private fit, the learning-rate search, the
    wave size), ``n_permutations=k``, ``epsilon=1`` and a ``noise_seed``.

    The rows live on the workers (``persist``), in ``chunks`` blocks; the
    Dask fit projects them there, gathers one number a party, and walks the
    waves on the workers (:func:`skdpval.walks._dask.walk_client`). The two fits
    run in turn, ``rounds`` times, after a warm-up each (compilation on the
    workers); the speed-up is the median of the pairs' ratios. CPU: the
    seconds of the client process (which runs the scheduler) and of each
    worker during each fit. On a machine shared with other jobs the wall
    ratio depends on the others (two worker processes get two shares of the
    cores, the one-process fit one); ``speedup_from_cpu`` estimates it with
    both cores free: the local fit's CPU seconds over the client's plus the
    busier worker's. It is pessimistic under load: Dask's event loops burn
    CPU while idle (``idle_cpu_per_second``, measured for 5 s before the
    fits), for as long as the load stretches the fit.
    """
    import dask.array as da
    import distributed

    walk_seconds = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        workers_cpu = lambda: np.array(list(client.run(_own_cpu).values()))
        idle_started, idle_client, idle_workers = time.perf_counter(), _own_cpu(), workers_cpu()
        time.sleep(5)
        idle_wall = time.perf_counter() - idle_started
        idle_rate_client = (_own_cpu() - idle_client) / idle_wall
        idle_rate_workers = (workers_cpu() - idle_workers) / idle_wall
        for n in ns:
            X, y, X_val, y_val = classification(n, n_val=2000)
            rows = -(-n // chunks)
            X_dask = client.persist(da.from_array(X, chunks=(rows, X.shape[1])))
            y_dask = client.persist(da.from_array(y, chunks=rows))
            distributed.wait([X_dask, y_dask])
            make = lambda **kw: DPDataValuator(
                n_permutations=k, epsilon=1.0, random_state=0, noise_seed=0, **kw)
            local, on_dask = make(n_jobs=1), make()
            local.fit(X[:2000], y[:2000], X_val=X_val, y_val=y_val)  # compiles
            on_dask.fit(X_dask[:2000], y_dask[:2000], X_val=X_val, y_val=y_val)
            seconds = {"local": [], "dask": []}
            cpu = {"local": [], "dask_client": [], "dask_workers": []}
            loads = []
            walk_seconds.clear()
            for _ in range(rounds):
                loads.append(os.getloadavg()[0])
                started, cpu_started = time.perf_counter(), _own_cpu()
                with timed_walks(walk_seconds):
                    local.fit(X, y, X_val=X_val, y_val=y_val)
                seconds["local"].append(time.perf_counter() - started)
                cpu["local"].append(_own_cpu() - cpu_started)
                client_cpu, worker_cpu = _own_cpu(), workers_cpu()
                started = time.perf_counter()
                with distributed.get_task_stream() as stream:
                    on_dask.fit(X_dask, y_dask, X_val=X_val, y_val=y_val)
                seconds["dask"].append(time.perf_counter() - started)
                waves = _wave_timings(stream.data, n_nodes=2)
                cpu["dask_client"].append(_own_cpu() - client_cpu)
                cpu["dask_workers"].append(workers_cpu() - worker_cpu)
            one, two = np.array(seconds["local"]), np.array(seconds["dask"])
            median = lambda values: round(float(np.median(values)), 3)
            client_cpu = np.array(cpu["dask_client"])
            worker_cpu = np.array(cpu["dask_workers"])

            emit(case="dask_input", walk="default", settings="library defaults",
                 public_model_fitted_privately=bool(
                     on_dask.public_model_fitted_privately_),
                 learning_rate=on_dask.learning_rate_,
                 batch_permutations=on_dask.batch_permutations_,
                 ratios=[round(float(r), 3) for r in one / two],
                 n=n, k=k, d=X.shape[1],
                 n_val=len(X_val), chunks=chunks, workers="2 processes x 1 thread",
                 baseline="numpy input, one process, n_jobs=1", repeats=rounds,
                 seconds_1_job=median(one), walk_seconds_1_job=median(walk_seconds),
                 seconds_dask=median(two), speedup=median(one / two),
                 speedup_range=[round(float(np.min(one / two)), 3),
                                round(float(np.max(one / two)), 3)],
                 values_identical=bool(np.array_equal(local.values_, on_dask.values_)),
                 cpu_seconds_1_job=median(cpu["local"]),
                 cpu_seconds_dask_client=median(client_cpu),
                 cpu_seconds_dask_workers=[median(worker_cpu[:, i])
                                           for i in range(worker_cpu.shape[1])],
                 idle_cpu_per_second_client=round(idle_rate_client, 4),
                 idle_cpu_per_second_workers=[round(r, 4) for r in idle_rate_workers],
                 speedup_from_cpu=median(np.array(cpu["local"])
                                         / (client_cpu + worker_cpu.max(axis=1))),
                 load_average_before=[round(load, 2) for load in loads],
                 **waves)
            del X_dask, y_dask


DASK_SCALE = """
import json, resource, time
import numpy as np
from dask_data import (parquet_on_cluster, phase_peak_mib, read_parquet, reset_peak,
                       validation_set)

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def on_workers(client, function):
    # A worker past its limit is being restarted: its peak is lost.
    try:
        return sorted(client.run(function).values())
    except Exception as error:
        return f"{{type(error).__name__}} (a worker restarting)"

def main():
    from skdpval import DPDataValuator, DPLabelQuality
    n, k, chunk_rows = {n}, {k}, {chunk_rows}
    out = dict()
    # The data set, written to Parquet by the workers (never in the client),
    # then fresh workers: their peaks are the fits' alone.
    with parquet_on_cluster({directory!r}, n, chunk_rows, {n_workers},
                            {memory_limit!r}) as (path, client):
        X_val, y_val = validation_set()
        _, X, y = read_parquet(path)
        out["client_before_fits_mib"] = phase_peak_mib()
        out["workers_before_fits_mib"] = on_workers(client, phase_peak_mib)
        fits = dict(
            label=lambda: DPLabelQuality(epsilon=1.0, random_state=0),
            valuator=lambda: DPDataValuator(
                n_permutations=k, epsilon=1.0, random_state=0,
                batch_permutations={batch_permutations!r}, **{settings!r}))
        fitted = []
        for name, make in fits.items():
            reset_peak()
            on_workers(client, reset_peak)
            started = time.perf_counter()
            try:
                fitted.append(make().fit(X, y, X_val=X_val, y_val=y_val))
            except Exception as error:  # recorded: a worker over its limit
                out[name + "_failed"] = f"{{type(error).__name__}}: {{error}}"[:300]
            out[name + "_seconds"] = time.perf_counter() - started
            # Each fit's own peaks (the fitted valuators before it stay in memory).
            out[name + "_client_peak_mib"] = phase_peak_mib()
            out[name + "_worker_peak_mib"] = on_workers(client, phase_peak_mib)
        out["finite"] = bool(all(np.all(np.isfinite(f.values_)) for f in fitted))
        out["client_peak_mib"] = peak_mib()
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


def dask_scale(ns=(10_000, 100_000, 1_000_000, 10_000_000), k=100,
               memory_limit="1GiB", chunk_rows=250_000, n_workers=(2,),
               batch_permutations="auto", defaults=True):
    """Dask input read from Parquet on disk (written by the workers), a
    LocalCluster of ``n_workers`` processes x 1 thread with ``memory_limit``
    each: the label score and the default walk; time and peak memory per
    process (the client's in a fresh process: it runs the scheduler too),
    for each fit and over the run. ``defaults``: the library's (else the
    earlier runs' ``public_model="validation"``, learning rate 0.005)."""
    settings = {} if defaults else dict(learning_rate=0.005,
                                        public_model="validation")
    from dask_data import D, run_script

    for workers in n_workers:
        for n in ns:
            with tempfile.TemporaryDirectory() as directory:
                script = os.path.join(directory, "scale.py")
                with open(script, "w") as f:
                    f.write(DASK_SCALE.format(
                        n=n, k=k, chunk_rows=min(chunk_rows, n),
                        memory_limit=memory_limit, directory=directory,
                        n_workers=workers, batch_permutations=batch_permutations,
                        settings=settings))
                started = time.perf_counter()
                out = run_script(script)
            if out.returncode != 0:
                emit(case="dask_scale", n=n, k=k, d=D, memory_limit=memory_limit,
                     workers=f"{workers} processes x 1 thread",
                     failed=out.stderr.strip().splitlines()[-3:])
                continue
            measured = json.loads(out.stdout.strip().splitlines()[-1])
            emit(case="dask_scale", n=n, k=k, d=D, data_mib=round(n * D * 8 / 2**20),
                 memory_limit=memory_limit, chunk_rows=min(chunk_rows, n),
                 workers=f"{workers} processes x 1 thread", source="Parquet on disk",
                 batch_permutations=batch_permutations,
                 settings="library defaults" if defaults else settings,
                 run_seconds=round(time.perf_counter() - started, 1),
                 **{key: (round(value, 1) if isinstance(value, float) else
                          [round(v, 1) for v in value] if isinstance(value, list)
                          else value)
                    for key, value in measured.items()})


CASES = {"cold_start": cold_start, "paper_table8": paper_table8,
         "vs_reference": vs_reference, "floor": floor, "threads": threads,
         "dask": dask, "scale": scale, "multiclass": multiclass,
         "randomness": randomness, "large": large, "losses": losses,
         "noise_cost": noise_cost, "mlp": mlp, "dask_input": dask_input,
         "dask_scale": dask_scale}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cases", nargs="*", choices=[[], *CASES],
                        help="cases to run (default: all)")
    parser.add_argument("--scale-n", type=float, nargs="*",
                        help="dask_scale: the numbers of parties")
    parser.add_argument("--scale-workers", type=int, nargs="*",
                        help="dask_scale: the numbers of workers")
    parser.add_argument("--scale-batch", default="auto",
                        help="dask_scale: batch_permutations ('auto': the default)")
    parser.add_argument("--scale-old-settings", action="store_true",
                        help="dask_scale: public_model='validation' and learning "
                             "rate 0.005, as before issue 46")
    parser.add_argument("--input-n", type=float, nargs="*",
                        help="dask_input: the numbers of parties")
    parser.add_argument("--input-rounds", type=int, default=5,
                        help="dask_input: alternating pairs of fits")
    parser.add_argument("--scale-memory", default="1GiB",
                        help="dask_scale: each worker's memory_limit")
    arguments = parser.parse_args()
    for name in arguments.cases or list(CASES):
        if name == "dask_scale":
            batch = arguments.scale_batch
            options = dict(batch_permutations=batch if batch == "auto" else int(batch),
                           defaults=not arguments.scale_old_settings,
                           memory_limit=arguments.scale_memory)
            if arguments.scale_n:
                options["ns"] = [int(n) for n in arguments.scale_n]
            if arguments.scale_workers:
                options["n_workers"] = arguments.scale_workers
            dask_scale(**options)
        elif name == "dask_input":
            dask_input(ns=[int(n) for n in arguments.input_n or (1e5, 1e6)],
                       rounds=arguments.input_rounds)
        else:
            CASES[name]()
