"""What pyarrow's memory pool keeps on a Dask worker after reading Parquet.

``python benchmarks/dask_reader_memory.py [N]`` (default 1,000,000 rows of
20 features, written by the workers, ``benchmarks/dask_data.py``): one
worker process of a LocalCluster reads them through
:class:`~skdpval.DPLabelQuality`; its resident memory then, after a full
garbage collection and ``malloc_trim`` (what glibc keeps), and after
``pyarrow.default_memory_pool().release_unused()`` (what each walk task
calls: ``skdpval.walks._cluster.return_reader_memory``), with that call's time.
Prints one JSON object; results: ``benchmarks/results/dask_memory.jsonl``.
"""
import json
import os
import sys
import tempfile
import time


def _rss_mib():
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _trimmed_mib():
    import ctypes
    import gc

    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _rss_mib()


def _released_mib():
    from skdpval.walks._cluster import return_reader_memory

    return_reader_memory()
    after = _rss_mib()
    started = time.perf_counter()
    for _ in range(1000):
        return_reader_memory()
    return after, (time.perf_counter() - started) / 1000 * 1e6


def main(n):
    from dask_data import parquet_on_cluster, read_parquet, validation_set

    from skdpval import DPLabelQuality

    with tempfile.TemporaryDirectory() as directory, \
            parquet_on_cluster(directory, n, min(250_000, n), 1, "4GiB") as (path, client):
        _, X, y = read_parquet(path)
        X_val, y_val = validation_set()
        DPLabelQuality(epsilon=1.0, random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
        read = list(client.run(_rss_mib).values())[0]
        trimmed = list(client.run(_trimmed_mib).values())[0]
        released, call_us = list(client.run(_released_mib).values())[0]
    print(json.dumps(dict(
        case="dask_reader_memory", n=n, d=20, source="Parquet on disk",
        worker_after_reading_mib=round(read), after_gc_and_malloc_trim_mib=round(trimmed),
        after_release_unused_mib=round(released),
        release_unused_microseconds=round(call_us, 2),
        load_average_1min=round(os.getloadavg()[0], 2))), flush=True)


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000)
