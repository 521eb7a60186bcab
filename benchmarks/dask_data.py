"""The data set and the memory probes of the Dask benchmarks on disk.

Imported by the scripts that ``speed.py dask_scale`` and ``dask_fit.py`` run
in fresh processes (see :func:`run_script`: its Dask workers import this
module too, for the probes ``client.run`` sends them).
"""
import contextlib
import os
import subprocess
import sys
import tempfile

import numpy as np

D = 20


def status_mib(field):
    """A field of /proc/self/status in MiB (``"VmRSS:"``, ``"VmHWM:"``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024


def phase_peak_mib():
    """The peak resident memory since the last :func:`reset_peak`."""
    return status_mib("VmHWM:")


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def write_parquet(client, path, n, chunk_rows):
    """``n`` rows of ``D`` normal features and a noisy linear label, written
    to Parquet at ``path`` by the workers (never in the client); the workers
    are then restarted, so that their peaks are the fits' alone."""
    import dask.array as da
    import dask.dataframe as dd

    rng = da.random.default_rng(0)
    X = rng.normal(size=(n, D), chunks=(chunk_rows, D))
    y = ((X @ _weights() + rng.normal(size=n, chunks=chunk_rows)) > 0).astype(np.int64)
    frame = dd.from_dask_array(da.concatenate([X, y[:, None]], axis=1),
                               columns=[f"x{i}" for i in range(D)] + ["y"])
    frame.to_parquet(path, write_index=False)
    del X, y, frame
    client.restart()


@contextlib.contextmanager
def parquet_on_cluster(directory, n, chunk_rows, n_workers, memory_limit):
    """A LocalCluster of ``n_workers`` processes x 1 thread (``memory_limit``
    each), its Client, and the data set of :func:`write_parquet` in a
    temporary directory under ``directory``: yields ``(path, client)``."""
    import distributed

    with tempfile.TemporaryDirectory(dir=directory) as path, \
            distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                     processes=True, memory_limit=memory_limit,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        write_parquet(client, path, n, chunk_rows)
        yield path, client


def read_parquet(path):
    """The data frame at ``path``, its features and its labels (lazy)."""
    import dask.dataframe as dd

    data = dd.read_parquet(path)
    return data, data[[f"x{i}" for i in range(D)]], data["y"]


def validation_set():
    """2,000 validation rows in memory, labelled by the same rule."""
    X_val = np.random.default_rng(1).normal(size=(2000, D))
    y_val = ((X_val @ _weights() + np.random.default_rng(2).normal(size=2000)) > 0) * 1
    return X_val, y_val


def _weights():
    return np.linspace(-1.0, 1.0, D)


def run_script(path):
    """Run the script at ``path`` in a fresh process that (with its workers)
    imports this module."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, path], capture_output=True, text=True,
                          env=env)
