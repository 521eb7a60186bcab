"""The private fit of the public model on Dask input: what its 20 passes cost.

Prints one JSON object per case on stdout. Run from the repository root:

    python benchmarks/dask_fit.py > benchmarks/results/dask_fit.jsonl

The set-up of ``benchmarks/speed.py dask_scale``: ``n`` rows of ``d = 20``
features written to Parquet by the workers, a LocalCluster of 2 worker
processes x 1 thread (``memory_limit`` each), 2,000 validation rows in
memory. :class:`~skdpval.DPLabelQuality` (epsilon 1) with
``public_model="validation"``, then ``"private"`` (the 20 steps' block sums
on the workers, the noise in the client), then ``"auto"`` (which decides
from public quantities: it fits privately here); the difference is the
fit's cost. Each fit in the same fresh process, with each fit's peak
memory in the client (and its resident memory as the fit starts) and the
workers; ``values_identical``: the private
fit's values against the same fit on numpy input (``noise_seed``).

Options: ``--n`` (default 1,000,000), ``--memory-limit`` (default 1GiB),
``--chunk-rows`` (default 250,000), ``--keep-share`` (the share of the
workers' memory under which the rows are kept for the fit's steps; 0: read
again at each step, as at n = 1e7 with workers of 1 GiB).
"""

import argparse
import json
import os
import tempfile
import time

from dask_data import run_script

SCRIPT = """
import json, time
import numpy as np
from dask_data import (D, parquet_on_cluster, phase_peak_mib, read_parquet,
                       reset_peak, status_mib, validation_set)

def main():
    import warnings
    warnings.simplefilter("ignore")
    import dask.dataframe as dd
    import skdpval.walks._dask
    from skdpval import DPLabelQuality
    if {keep_share!r} is not None:
        skdpval.walks._dask.KEEP_ROWS_MEMORY_SHARE = {keep_share!r}
    n, d, chunk_rows = {n}, D, {chunk_rows}
    out = dict()
    with parquet_on_cluster({directory!r}, n, chunk_rows, 2,
                            {memory_limit!r}) as (path, client):
        X_val, y_val = validation_set()
        _, X, y = read_parquet(path)
        make = lambda option: DPLabelQuality(epsilon=1.0, random_state=0,
                                             noise_seed=0, public_model=option)
        # Compile the kernels in every process first (the fit's and the score's).
        small = dd.read_parquet(path).head(5000, npartitions=1)
        for option in ("validation", "private"):
            make(option).fit(dd.from_pandas(small.iloc[:, :d], npartitions=2),
                             small["y"].to_numpy(), X_val=X_val, y_val=y_val)
        for option in ("validation", "private", "auto"):
            reset_peak()
            client.run(reset_peak)
            out[option + "_client_start_mib"] = status_mib("VmRSS:")
            started = time.perf_counter()
            fitted = make(option).fit(X, y, X_val=X_val, y_val=y_val)
            out[option + "_seconds"] = time.perf_counter() - started
            out[option + "_client_peak_mib"] = phase_peak_mib()
            peaks = client.run(phase_peak_mib)
            out[option + "_worker_peak_mib"] = sorted(peaks.values())
            if option == "private":
                private_values = fitted.values_
            fits = fitted.public_model_fitted_privately_
            out[option + "_fits_privately"] = bool(fits)
            del fitted
        X_memory, y_memory = X.compute().to_numpy(), y.compute().to_numpy()
        started = time.perf_counter()
        in_memory = make("private").fit(X_memory, y_memory, X_val=X_val, y_val=y_val)
        out["numpy_private_seconds"] = time.perf_counter() - started
        out["values_identical"] = bool(np.array_equal(in_memory.values_,
                                                      private_values))
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--memory-limit", default="1GiB")
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    parser.add_argument("--keep-share", type=float, default=None,
                        help="skdpval.walks._dask.KEEP_ROWS_MEMORY_SHARE (0: the rows "
                             "are read again at each step)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as directory:
        script = os.path.join(directory, "fit.py")
        with open(script, "w") as f:
            f.write(SCRIPT.format(n=args.n, chunk_rows=min(args.chunk_rows, args.n),
                                  memory_limit=args.memory_limit, directory=directory,
                                  keep_share=args.keep_share))
        started = time.perf_counter()
        out = run_script(script)
    case = dict(case="dask private fit", n=args.n, d=20, n_val=2000,
                source="Parquet on disk", chunk_rows=min(args.chunk_rows, args.n),
                workers="2 processes x 1 thread", memory_limit=args.memory_limit,
                keep_rows_memory_share=args.keep_share,
                run_seconds=round(time.perf_counter() - started, 1))
    if out.returncode != 0:
        case["failed"] = out.stderr.strip().splitlines()[-3:]
    else:
        measured = json.loads(out.stdout.strip().splitlines()[-1])
        case.update({key: (round(value, 2) if isinstance(value, float) else
                           [round(v, 1) for v in value] if isinstance(value, list)
                           else value) for key, value in measured.items()})
        case["fit_seconds"] = round(measured["private_seconds"]
                                    - measured["validation_seconds"], 2)
    case["load_before"] = round(load_before, 2)
    case["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(case), flush=True)


if __name__ == "__main__":
    main()
