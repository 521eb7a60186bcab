"""Peak resident memory of the Dask walk's workers, per party (issue #36).

``python benchmarks/dask_memory.py N WORKERS [BATCH]``: Dask-array input
(rows persisted on a LocalCluster of WORKERS processes x 1 thread, 8 GiB
each), the default walk (k = 100, learning rate 0.005, eps 1), after a
warm-up fit of 40,000 parties (the same compiled kernels). A thread in each
worker samples its resident memory every 10 ms with the task it runs.
Prints, per worker, the memory at the fit's start and the largest seen
while it ran each kind of task; the walk's bytes a party are the largest
over the walk's tasks minus the start, over N. Run it with
``MALLOC_MMAP_THRESHOLD_=1048576`` at N of a few million: glibc then
returns freed arrays to the system as it does for the 80 MB arrays of
N = 10^7 (below 32 MB it keeps them in its heap). Results:
``benchmarks/results/dask_memory.jsonl``.
"""
import json
import os
import sys
import threading
import time

import numpy as np

WALK_TASKS = ("walk_node_of_mean", "next_rolling_mean", "end_wave_of_state",
              "raw_part", "counted_part")


def _rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024


def start_sampler(dask_worker):
    samples = []
    dask_worker._rss_samples = samples

    def loop():
        while getattr(dask_worker, "_rss_samples", None) is samples:
            running = [str(getattr(ts, "key", ts)) for ts in
                       list(dask_worker.state.executing)]
            samples.append((_rss_mib(), running[0] if running else ""))
            time.sleep(0.01)

    threading.Thread(target=loop, daemon=True).start()


def stop_sampler(dask_worker):
    samples, dask_worker._rss_samples = dask_worker._rss_samples, None
    return samples


def main(n, workers, batch=16, k=100):
    import dask.array as da
    import distributed

    from skdpval import DPDataValuator

    d = 20
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                  processes=True, memory_limit="8GiB",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        rng = da.random.default_rng(0)
        chunk = min(250_000, n)
        X = rng.normal(size=(n, d), chunks=(chunk, d))
        w = np.linspace(-1.0, 1.0, d)
        y = ((X @ w + rng.normal(size=n, chunks=chunk)) > 0).astype(np.int64)
        X, y = client.persist([X, y])
        distributed.wait([X, y])
        X_val = np.random.default_rng(1).normal(size=(2000, d))
        y_val = ((X_val @ w + np.random.default_rng(2).normal(size=2000)) > 0) * 1

        def make():
            return DPDataValuator(n_permutations=k, learning_rate=0.005, epsilon=1.0,
                                  random_state=0, noise_seed=0,
                                  public_model="validation", batch_permutations=batch)

        make().fit(X[:40000], y[:40000], X_val=X_val, y_val=y_val)  # compiles
        client.run(start_sampler)
        started = time.perf_counter()
        make().fit(X, y, X_val=X_val, y_val=y_val)
        seconds = time.perf_counter() - started
        for worker, samples in sorted(client.run(stop_sampler).items()):
            by_task = {}
            for rss, key in samples:
                name = key.split("-")[0].strip("('") if key else "idle"
                by_task[name] = max(by_task.get(name, 0.0), rss)
            start = samples[0][0]
            walk = max((by_task.get(name, 0.0) for name in WALK_TASKS), default=0.0)
            print(json.dumps(dict(
                case="dask_memory", n=n, workers=workers, batch_permutations=batch,
                k=k, worker=worker, start_mib=round(start),
                peak_mib_by_task={key: round(v) for key, v in by_task.items()},
                walk_bytes_per_party=round((walk - start) * 2**20 / n, 1),
                fit_seconds=round(seconds, 1),
                malloc_mmap_threshold=os.environ.get("MALLOC_MMAP_THRESHOLD_"),
                load_average_1min=round(os.getloadavg()[0], 2))), flush=True)


if __name__ == "__main__":
    main(int(float(sys.argv[1])), int(sys.argv[2]), *[int(a) for a in sys.argv[3:]])
