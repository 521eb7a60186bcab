"""A user's first fit: the default valuator, an empty numba cache, a new process.

Prints one JSON object per run on stdout. Run from the repository root:

    python benchmarks/cold_fit.py [--repeats N]
    python benchmarks/cold_fit.py --ab REF [--pairs N] >> benchmarks/results/cold_fit.jsonl

The case is the one the library promises (``skdpval.exceptions.FIRST_FIT_SECONDS``
quotes it): ``DPDataValuator()`` with no parameter set (not even
``noise_seed``; its warnings left as they are) fitted on the first 300 rows
of scikit-learn's breast cancer data, the other 269 as the validation set,
in a fresh Python process whose ``NUMBA_CACHE_DIR`` is a new empty folder.
The import is timed apart (excluded); the first fit counts everything it
triggers, numba's first use in the process included, as a user waits for
it; then a second fit in the same process. Also each top-level
compilation's seconds, from numba's event API (``numba:compile``; a
kernel's helpers compiled on its behalf count in its time).

``--ab REF`` adds a ``git worktree`` of ``REF`` (a commit of this
repository) in a temporary folder and runs the same case alternately on
``REF`` (A) and on this checkout (B), A B A B..., ``--pairs`` pairs (at
least 5): each run's line, then a summary with the medians, the median of
the pairs' ratios B / A and the load. Each line holds the 1-minute load
average before and after its run and the commit it ran (``+`` when the
package differs from it). The machine is shared: compare runs of one
session, and read the load.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# Runs in the fresh process, with the package's tree first on sys.path.
CHILD = r"""
import json, sys, time
started = time.perf_counter()
from sklearn.datasets import load_breast_cancer
import skdpval
from skdpval import DPDataValuator
imported = time.perf_counter() - started
from numba.core import event

class Compilations(event.Listener):
    # Seconds of each top-level compilation (nested ones count in their caller).
    def __init__(self):
        self.stack, self.seconds = [], {}

    def on_start(self, ev):
        self.stack.append((ev.data["dispatcher"].py_func, time.perf_counter()))

    def on_end(self, ev):
        func, start = self.stack.pop()
        if not self.stack:
            name = func.__module__ + "." + func.__qualname__
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

compilations = Compilations()
event.register("numba:compile", compilations)
X, y = load_breast_cancer(return_X_y=True)
seconds, cpu = [], []
for _ in range(2):
    started, started_cpu = time.perf_counter(), time.process_time()
    DPDataValuator().fit(X[:300], y[:300], X_val=X[300:], y_val=y[300:])
    seconds.append(time.perf_counter() - started)
    cpu.append(time.process_time() - started_cpu)
    if len(seconds) == 1:
        compiled = dict(compilations.seconds)
print(json.dumps(dict(
    package=skdpval.__file__, import_seconds=imported, first_fit_seconds=seconds[0],
    first_fit_cpu_seconds=cpu[0], second_fit_seconds=seconds[1],
    compile_seconds=sum(compiled.values()),
    compile_by_function={name: round(s, 3) for name, s in
                         sorted(compiled.items(), key=lambda item: -item[1])})))
"""


def git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


def commit_of(tree):
    """The tree's commit, with ``+`` when its package differs from it."""
    commit = git("rev-parse", "--short", "HEAD", cwd=tree)
    dirty = git("status", "--porcelain", "--", "skdpval", cwd=tree)
    return commit + ("+" if dirty else "")


def cold_run(tree):
    """One cold first fit of the package in ``tree``, in a fresh process."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as cwd:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": tree}
        load_before = os.getloadavg()[0]
        out = subprocess.run([sys.executable, "-c", CHILD], cwd=cwd, env=env,
                             capture_output=True, text=True, check=True)
        load_after = os.getloadavg()[0]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result.pop("package").startswith(os.path.join(tree, "skdpval")):
        raise RuntimeError(f"the run did not import the package in {tree}")
    rounded = {key: round(value, 3) if isinstance(value, float) else value
               for key, value in result.items()}
    return dict(case="cold_fit", commit=commit_of(tree), **rounded,
                load_1min_before=round(load_before, 2),
                load_1min_after=round(load_after, 2),
                warnings=[line for line in out.stderr.splitlines()
                          if "Warning:" in line])


def machine():
    import numba
    import sklearn
    return dict(cpus=os.cpu_count(), python=sys.version.split()[0],
                numpy=np.__version__, numba=numba.__version__,
                scikit_learn=sklearn.__version__)


def emit(line):
    print(json.dumps(line), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1,
                        help="cold runs of this checkout (default 1)")
    parser.add_argument("--ab", metavar="REF",
                        help="also run REF's package, alternating with this one")
    parser.add_argument("--pairs", type=int, default=5,
                        help="A B pairs with --ab (at least 5, default 5)")
    args = parser.parse_args()
    if args.ab is None:
        for _ in range(args.repeats):
            emit(dict(cold_run(ROOT), **machine()))
        return
    if args.pairs < 5:
        parser.error("--pairs must be at least 5")
    with tempfile.TemporaryDirectory() as folder:
        ref_tree = os.path.join(folder, "ref")
        git("worktree", "add", "--detach", ref_tree, args.ab)
        try:
            runs = {"A": [], "B": []}
            for pair in range(args.pairs):
                for side, tree in (("A", ref_tree), ("B", ROOT)):
                    run = cold_run(tree)
                    runs[side].append(run)
                    emit(dict(run, ab=side, pair=pair))
        finally:
            git("worktree", "remove", "--force", ref_tree)
    first = {side: [run["first_fit_seconds"] for run in runs[side]] for side in runs}
    loads = [run[key] for side in runs for run in runs[side]
             for key in ("load_1min_before", "load_1min_after")]
    emit(dict(
        case="cold_fit_ab", A=runs["A"][0]["commit"], B=runs["B"][0]["commit"],
        pairs=args.pairs,
        median_first_fit_seconds={side: round(float(np.median(first[side])), 3)
                                  for side in first},
        median_second_fit_seconds={
            side: round(float(np.median([run["second_fit_seconds"]
                                         for run in runs[side]])), 3)
            for side in runs},
        median_ratio_B_over_A=round(float(np.median(
            np.array(first["B"]) / np.array(first["A"]))), 3),
        load_1min_range=[min(loads), max(loads)], **machine()))


if __name__ == "__main__":
    main()
