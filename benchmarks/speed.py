"""Speed benchmark: prints one JSON object per case on stdout.

Run from the repository root (OpenBLAS' core-type override, if set, slows
the GEMM used as the roofline's reference, so unset it for this command):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/speed.py

Cases: ``paper_table8`` (the seed paper's Table 8 job: diabetes, logistic
regression, correlated noise), ``vs_reference`` (the plain-numpy Algorithm 1
of tests/reference.py on the same job), ``roofline`` (the job's own
arithmetic timed in isolation), ``threads`` (n_jobs=1 vs 2) and ``scale``
(1e5 parties).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from numba import njit
from sklearn.datasets import load_diabetes, make_classification
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info, threadpool_limits

from skdpval import DPDataValuator, _kernels
from skdpval._walk import SeededDraws, make_problem, run_walks

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

# Table 8 of the seed paper: seconds with correlated noise (L40 GPU, PyTorch).
PAPER_TABLE8 = {(100, 120): 78.466, (100, 240): 154.954, (100, 360): 262.166,
                (200, 120): 113.612, (200, 240): 256.431, (200, 360): 407.126,
                (300, 120): 158.565, (300, 240): 344.286, (300, 360): 530.579}
N_VAL = 142  # diabetes has 442 rows: the validation set is what 300 parties leave
LEARNING_RATE = 0.05


def emit(**case):
    print(json.dumps(case), flush=True)


def diabetes():
    X, y = load_diabetes(return_X_y=True)
    y = (y > np.median(y)).astype(int)
    order = np.random.default_rng(0).permutation(len(y))
    X = StandardScaler().fit_transform(X)[order]
    return X[:-N_VAL], y[order][:-N_VAL], X[-N_VAL:], y[order][-N_VAL:]


def timed_fit(valuator, X, y, X_val, y_val, repeats=3):
    valuator.fit(X, y, X_val=X_val, y_val=y_val)  # warm-up (compiles once)
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        valuator.fit(X, y, X_val=X_val, y_val=y_val)
        seconds.append(time.perf_counter() - started)
    return float(np.median(seconds))


def paper_table8():
    X, y, X_val, y_val = diabetes()
    for n in (100, 200, 300):
        for k in (120, 240, 360):
            valuator = DPDataValuator(n_permutations=k, learning_rate=LEARNING_RATE,
                                      noise="correlated", epsilon=1.0, n_jobs=1,
                                      random_state=0)
            seconds = timed_fit(valuator, X[:n], y[:n], X_val, y_val)
            emit(case="paper_table8", n=n, k=k, n_val=N_VAL, n_jobs=1,
                 seconds=round(seconds, 4), paper_seconds=PAPER_TABLE8[n, k],
                 speedup_vs_paper=round(PAPER_TABLE8[n, k] / seconds))


def _diabetes_problem(n):
    X, y, X_val, y_val = diabetes()
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    targets = lambda labels: np.where(labels == 1, 1.0, -1.0)[:, None]
    return dict(X=ones(X[:n]), T=targets(y[:n]), X_val=ones(X_val),
                T_val=targets(y_val), labels_val=y_val)


def vs_reference(n=300, k=3):
    """The same permutations and noise through tests/reference.py and the kernel."""
    from reference import algorithm1

    data = _diabetes_problem(n)
    shape = (1, data["X"].shape[1])
    noise_std = 10.0
    draws = SeededDraws(np.random.SeedSequence(0).spawn(k),
                        np.random.SeedSequence(1).spawn(k), n, noise_std)
    permutations = np.empty((k, n), dtype=np.int64)
    noise = np.empty((k, n, *shape))
    for t in range(k):
        permutations[t] = draws(t, noise[t])
    settings = dict(learning_rate=LEARNING_RATE, l2=1.0 / n, n_penalized=10,
                    clip_norm=1.0)
    started = time.perf_counter()
    psi, _ = algorithm1(**data, loss="logistic", utility_name="neg_loss",
                        permutations=permutations, noise=noise,
                        x_tt=1.0 / np.arange(1, k + 1), q=0.0, weights=np.ones(n),
                        **settings)
    reference_seconds = time.perf_counter() - started
    problem = make_problem(data["X"], data["T"], np.arange(n + 1), data["X_val"],
                           data["T_val"], data["labels_val"], loss=_kernels.LOGISTIC,
                           utility=_kernels.NEG_LOSS, huber_epsilon=0.0,
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
def _repeat_softplus(z, repeats):
    total = 0.0
    buf = np.empty_like(z)
    for _ in range(repeats):
        for i in range(z.shape[0]):
            buf[i] = _kernels.softplus(z[i])
        total += _kernels._sum(buf)
        z[0] += 1e-12  # keep the loop from being hoisted
    return total


@njit(cache=True, nogil=True)
def _repeat_libm_softplus(z, repeats):
    total = 0.0
    for _ in range(repeats):
        for i in range(z.shape[0]):
            total += max(z[i], 0.0) + np.log1p(np.exp(-abs(z[i])))
        z[0] += 1e-12
    return total


def roofline(n=300, k=360):
    """The job's arithmetic in isolation, single-threaded, against the job."""
    X, y, X_val, y_val = diabetes()
    steps = n * k
    n_columns = X.shape[1] + 1
    valuator = DPDataValuator(n_permutations=k, learning_rate=LEARNING_RATE,
                              epsilon=1.0, n_jobs=1, random_state=0)
    with threadpool_limits(1):
        job = timed_fit(valuator, X[:n], y[:n], X_val, y_val)
        rng = np.random.default_rng(0)
        A = rng.normal(size=(steps, n_columns))
        B = rng.normal(size=(n_columns, N_VAL))
        A @ B
        started = time.perf_counter()
        A @ B
        gemm = time.perf_counter() - started
    z = rng.normal(size=N_VAL) * 3
    _repeat_softplus(z.copy(), 2)
    _repeat_libm_softplus(z.copy(), 2)
    started = time.perf_counter()
    _repeat_softplus(z.copy(), steps)
    losses = time.perf_counter() - started
    started = time.perf_counter()
    _repeat_libm_softplus(z.copy(), steps)
    libm_losses = time.perf_counter() - started
    limit = gemm + losses
    blas = [(info.get("internal_api"), info.get("architecture")) for info in threadpool_info()
            if info.get("user_api") == "blas"]
    emit(case="roofline", n=n, k=k, n_val=N_VAL, steps=steps,
         multiply_adds=steps * N_VAL * n_columns, loss_evaluations=steps * N_VAL,
         gemm_seconds=round(gemm, 4), loss_seconds=round(losses, 4),
         libm_loss_seconds=round(libm_losses, 4), limit_seconds=round(limit, 4),
         job_seconds=round(job, 4), fraction=round(limit / job, 3),
         libm_fraction=round((gemm + libm_losses) / job, 3), blas=blas,
         openblas_coretype=os.environ.get("OPENBLAS_CORETYPE"))


def threads(n=8000, k=200, n_val=500, d=20):
    X, y = make_classification(n_samples=n + n_val, n_features=d, random_state=0)
    seconds = {}
    for n_jobs in (1, 2):
        valuator = DPDataValuator(n_permutations=k, learning_rate=LEARNING_RATE,
                                  epsilon=1.0, n_jobs=n_jobs, random_state=0)
        seconds[n_jobs] = timed_fit(valuator, X[:n], y[:n], X[n:], y[n:], repeats=1)
    emit(case="threads", n=n, k=k, n_val=n_val, d=d,
         seconds_1_job=round(seconds[1], 3), seconds_2_jobs=round(seconds[2], 3),
         speedup=round(seconds[1] / seconds[2], 3))


def scale(n=100_000, k=100, n_val=500, d=20):
    """Run in a child process, so that its peak memory is its own."""
    code = f"""
import json, resource, time
from sklearn.datasets import make_classification
from skdpval import DPDataValuator
X, y = make_classification(n_samples={n + n_val}, n_features={d}, random_state=0)
DPDataValuator(n_permutations=2, learning_rate=0.05).fit(X[:1000], y[:1000], X_val=X[-50:], y_val=y[-50:])
started = time.perf_counter()
DPDataValuator(n_permutations={k}, learning_rate=0.05, noise="correlated", n_jobs=2,
               random_state=0).fit(X[:{n}], y[:{n}], X_val=X[{n}:], y_val=y[{n}:])
seconds = time.perf_counter() - started
print(json.dumps(dict(seconds=seconds, peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    measured = json.loads(out.strip().splitlines()[-1])
    state_mib = (2 * n + 16 * n) * (d + 1) * 8 / 2**20
    emit(case="scale", n=n, k=k, n_val=n_val, d=d, n_jobs=2,
         seconds=round(measured["seconds"], 2),
         peak_memory_mib=round(measured["peak_mib"], 1),
         walk_state_mib=round(state_mib, 1),
         note="walk state = rolling means + one wave's sum + one wave of noise "
              "(batch_permutations=16): O(n d), never k x n x d")


CASES = {"paper_table8": paper_table8, "vs_reference": vs_reference,
         "roofline": roofline, "threads": threads, "scale": scale}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cases", nargs="*", choices=[[], *CASES],
                        help="cases to run (default: all)")
    for name in parser.parse_args().cases or list(CASES):
        CASES[name]()
