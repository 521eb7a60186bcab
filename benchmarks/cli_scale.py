"""``skdpval value`` on a glob of Parquet files, on a local cluster (issue 46).

``python benchmarks/cli_scale.py [N ...]`` (default 10,000,000): ``N`` rows
of ``D = 20`` features and a label written to Parquet by the workers of a
first cluster (``benchmarks/dask_data.py``, 250,000 rows a file), 2,000
validation rows in a file of their own; then, in a fresh process, the
command line as a user types it, with the library's defaults::

    skdpval value 'data/*.parquet' --target y --validation val.parquet \\
        --workers 2 --memory-limit 1GiB --output out

Prints one JSON object per ``N``: the exit code, the wall time, the client
process's peak resident memory (``VmHWM``: the workers are processes of
their own), the files written and their rows, and the last stderr line
(the privacy summary). Results: ``benchmarks/results/cli_scale.jsonl``.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from dask_data import D, validation_set, write_parquet

CHUNK_ROWS = 250_000

RUN = """
import sys
from skdpval.cli import main
code = main(sys.argv[1:])
with open("/proc/self/status") as f:
    peak = [line.split()[1] for line in f if line.startswith("VmHWM:")][0]
print("PEAK_KIB", peak, file=sys.stderr)
sys.exit(code)
"""


def write_data(directory, n):
    """The training glob and the validation file under ``directory``."""
    import distributed
    import pandas as pd

    data = os.path.join(directory, "data")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit="2GiB", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        write_parquet(client, data, n, min(CHUNK_ROWS, n))
    X_val, y_val = validation_set()
    frame = pd.DataFrame(X_val, columns=[f"x{i}" for i in range(D)])
    frame["y"] = y_val
    frame.to_parquet(os.path.join(directory, "val.parquet"), index=False)
    return data


def run(n):
    import pandas as pd

    with tempfile.TemporaryDirectory() as directory:
        data = write_data(directory, n)
        out = os.path.join(directory, "out")
        args = [os.path.join(data, "*.parquet"), "--target", "y", "--validation",
                os.path.join(directory, "val.parquet"), "--workers", "2",
                "--memory-limit", "1GiB", "--output", out]
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", RUN, "value", *args],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
        lines = done.stderr.strip().splitlines()
        peak = [line for line in lines if line.startswith("PEAK_KIB")]
        case = dict(case="cli_scale", n=n, d=D, n_val=2000, input_files=len(
            os.listdir(data)), workers="2 processes x 1 thread (--workers 2)",
            memory_limit="1GiB", settings="library defaults",
            exit_code=done.returncode, seconds=round(seconds, 1),
            client_peak_mib=round(int(peak[0].split()[1]) / 1024, 1) if peak else None,
            load_before=round(load_before, 2), load_after=round(os.getloadavg()[0], 2))
        if done.returncode == 0:
            parts = sorted(os.listdir(out))
            rows = [len(pd.read_parquet(os.path.join(out, name))) for name in parts]
            case.update(output_files=len(parts), output_rows=int(np.sum(rows)),
                        summary=[line for line in lines
                                 if not line.startswith("PEAK_KIB")][-1][:300],
                        progress=[line[:160] for line in lines
                                  if line.startswith("[")][-6:])
        else:
            case["stderr_tail"] = lines[-5:]
    print(json.dumps(case), flush=True)


if __name__ == "__main__":
    for n in [int(float(arg)) for arg in sys.argv[1:]] or [10_000_000]:
        run(n)
