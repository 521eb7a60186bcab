"""A Dask worker SIGKILLed mid-walk with the library's defaults: the values stay.

Prints one JSON object on stdout. Run from the repository root:

    python benchmarks/dask_kill.py >> benchmarks/results/speed_dask.jsonl

``n`` rows (default 1,000,000, d = 20, ``make_classification``) persisted on
a LocalCluster of 2 worker processes x 1 thread, 2,000 validation rows in
memory; :class:`~skdpval.DPDataValuator` with the library's defaults
(``n_permutations`` 128 as in ``speed.py dask_input``, ``epsilon=1``,
``noise_seed`` for reproducible noise). The Dask fit kills one worker
(SIGKILL, its nanny restarts it) after the walk's second wave: the walk's
data on it cannot be recomputed, so the walk starts again from its first
wave on the workers there are then (``skdpval.walks._cluster``). Reports
whether the values, standard errors and final utilities equal the same fit
on numpy input, the waves walked, and the seconds (the machine's load
beside them).
"""

import argparse
import json
import os
import signal
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=128)
    args = parser.parse_args()

    import dask.array as da
    import distributed
    from sklearn.datasets import make_classification

    import skdpval.walks._runner as runner_module
    from skdpval import DPDataValuator

    X, y = make_classification(n_samples=args.n + 2000, n_features=20, random_state=0)
    X, y, X_val, y_val = X[:args.n], y[:args.n], X[args.n:], y[args.n:]
    make = lambda: DPDataValuator(n_permutations=args.k, epsilon=1.0, random_state=0,
                                  noise_seed=0)
    case = dict(case="dask_kill", settings="library defaults", n=args.n, k=args.k,
                d=20, n_val=2000, workers="2 processes x 1 thread",
                load_before=round(os.getloadavg()[0], 2))
    started = time.perf_counter()
    expected = make().fit(X, y, X_val=X_val, y_val=y_val)
    case["numpy_seconds"] = round(time.perf_counter() - started, 1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        rows = -(-args.n // 8)
        X_dask = client.persist(da.from_array(X, chunks=(rows, 20)))
        y_dask = client.persist(da.from_array(y, chunks=rows))
        distributed.wait([X_dask, y_dask])
        pids = client.run(os.getpid)
        victim = pids[sorted(pids)[1]]
        waves, original = [], runner_module._Progress.update

        def kill_after_the_second_wave(self, size):
            waves.append(size)
            if len(waves) == 2:
                os.kill(victim, signal.SIGKILL)
            return original(self, size)

        runner_module._Progress.update = kill_after_the_second_wave
        started = time.perf_counter()
        try:
            got = make().fit(X_dask, y_dask, X_val=X_val, y_val=y_val)
        finally:
            runner_module._Progress.update = original
        case["dask_seconds_with_the_kill"] = round(time.perf_counter() - started, 1)
        case["worker_killed"] = victim not in client.run(os.getpid).values()
    case.update(
        waves_merged=len(waves), batch_permutations=got.batch_permutations_,
        public_model_fitted_privately=bool(got.public_model_fitted_privately_),
        values_identical=bool(np.array_equal(got.values_, expected.values_)),
        stderr_identical=bool(np.array_equal(got.values_stderr_,
                                             expected.values_stderr_)),
        final_utilities_identical=bool(np.array_equal(got.final_utilities_,
                                                      expected.final_utilities_)),
        load_after=round(os.getloadavg()[0], 2))
    print(json.dumps(case), flush=True)


if __name__ == "__main__":
    main()
