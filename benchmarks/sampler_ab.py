"""A/B of the rounded-Gaussian sampler (issue 45): today's main (9dc041b, the
double-precision table) against this code (the proven table with the exact
path), in one run, one thread, old and new alternated.

    NUMBA_NUM_THREADS=1 python benchmarks/sampler_ab.py [--quick] \
        [--cases sampler walk] [--walk-reps 15] > benchmarks/results/sampler_ab.jsonl

The old sampler is ``skdpval/privacy/_secure_noise.py`` at ``--base`` (default
9dc041b), read with ``git show`` into a temporary module (it imports nothing
of skdpval). For each sigma (grid steps):

- ``build``: seconds to build the table (median of alternated repetitions;
  small tables timed over many builds each);
- ``draw``: ns per draw of a walk's call (8 streams x 2^15 draws; for the new
  sampler the kernel and the exact resolution of its undecided draws), and of
  small calls (1 stream x 600 draws: a label score's, or one permutation of
  a 600-party walk, the wrapper's cost included); 25 back-to-back pairs, the
  order alternated: the ratio of the medians, the median of the pairs'
  ratios and the ratio of the fastest runs (the machine is shared: the last
  two are the least disturbed by other users);
- the undecided draws seen, the draws that differ between old and new (the
  same words: they differ only where the old table inverts wrongly), and
  the 1-minute load average before and after.

Then ``walk``: whole fits with the mechanism's draw site (and its ``eta``)
switched between old and new, the rest of the package the same: the default
walk at epsilon 5 (1,000 permutations, 400 parties) and the seed paper's
full-space walk (LogisticRegression, subspace=None, 65 coordinates, 300
permutations) at epsilon 5, which both samplers accept; ns per walk step is
a fit's seconds over permutations x parties (the fit's set-up included).
One JSON object per case.
"""

import argparse
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def load():
    return round(os.getloadavg()[0], 2)


def old_module(base):
    """Today's sampler at commit ``base``, as a module (numba caches it in a
    directory of its own, kept between runs)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show",
                             f"{base}:skdpval/privacy/_secure_noise.py"],
                            check=True, capture_output=True, text=True).stdout
    folder = Path(tempfile.gettempdir()) / f"skdpval_sampler_ab_{base}"
    folder.mkdir(exist_ok=True)
    path = folder / f"old_secure_noise_{base}.py"
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's disk cache re-imports it by name
    spec.loader.exec_module(module)
    return module


def timed(function, repeat=1):
    gc.collect()
    start = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - start) / repeat


def ratios(new, old):
    return {"ratio_medians": statistics.median(new) / statistics.median(old),
            "ratio_pairs_median": statistics.median(n / o for n, o in zip(new, old)),
            "ratio_fastest": min(new) / min(old)}


def sampler_cases(old, new, sigmas, pairs, reps):
    key = new.noise_key(0)
    warm = old.RoundedGaussianTable(5.0)
    old.walk_noise(key, 1, 0, 1, warm.cdf, warm.guide, warm.shift, np.empty((1, 64)))
    new.walk_noise(key, 1, 0, 1, new.RoundedGaussianTable(5.0), np.empty((1, 64)))
    for sigma in sigmas:
        load_before = load()
        inner = 1 if sigma >= 1e5 else 20 if sigma >= 1e3 else 200
        build = {"old": [], "new": []}
        for r in range(5 if sigma >= 1e5 else reps):
            for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
                module = old if name == "old" else new
                build[name].append(timed(lambda: module.RoundedGaussianTable(sigma), inner))
        t_old, t_new = old.RoundedGaussianTable(sigma), new.RoundedGaussianTable(sigma)
        big, small, n_small = (8, 1 << 15), (1, 600), 500
        draw, draw_small = {"old": [], "new": []}, {"old": [], "new": []}
        undecided = differing = 0
        out_old, out_new = np.empty(big), np.empty(big)
        small_old, small_new = np.empty(small), np.empty(small)
        counts = []

        def run_old(lo):
            old.walk_noise(key, 1, lo, lo + 8, t_old.cdf, t_old.guide, t_old.shift, out_old)

        def run_new(lo):
            counts.append(new.walk_noise(key, 1, lo, lo + 8, t_new, out_new))

        def small_old_calls():
            for t in range(n_small):
                old.walk_noise(key, 2, t, t + 1, t_old.cdf, t_old.guide, t_old.shift,
                               small_old)

        def small_new_calls():
            for t in range(n_small):
                new.walk_noise(key, 2, t, t + 1, t_new, small_new)

        for r in range(pairs):
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            for name in order:
                function = run_old if name == "old" else run_new
                draw[name].append(timed(lambda: function(8 * r)))
            differing += int(np.sum(out_old != out_new))
            for name in order:
                draw_small[name].append(timed(small_old_calls if name == "old"
                                              else small_new_calls))
        undecided = int(sum(counts))
        per_draw = big[0] * big[1]
        per_small = n_small * small[1]
        case = {
            "case": "sampler", "sigma": sigma,
            "build_s_old": statistics.median(build["old"]),
            "build_s_new": statistics.median(build["new"]),
            "build": ratios(build["new"], build["old"]),
            "ns_per_draw_old": statistics.median(draw["old"]) / per_draw * 1e9,
            "ns_per_draw_new": statistics.median(draw["new"]) / per_draw * 1e9,
            "draw": ratios(draw["new"], draw["old"]),
            "ns_per_draw_small_old": statistics.median(draw_small["old"]) / per_small * 1e9,
            "ns_per_draw_small_new": statistics.median(draw_small["new"]) / per_small * 1e9,
            "draw_small": ratios(draw_small["new"], draw_small["old"]),
            "undecided": undecided, "draws": pairs * per_draw,
            "draws_differing": differing,
            "entries_old": len(t_old.cdf), "entries_new": len(t_new.cdf),
            "n_nodes_new": t_new.n_nodes,
            "load_before": load_before, "load_after": load()}
        print(json.dumps(case), flush=True)
        gc.collect()


def walk_cases(old, reps):
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    from skdpval import DPDataValuator
    from skdpval.privacy import _mechanism

    original = {"gaussian_noise": _mechanism.gaussian_noise,
                "rounded_gaussian_eta": _mechanism.rounded_gaussian_eta}

    def old_gaussian_noise(key, kind, lo, hi, std, out):
        table = old.rounded_gaussian_table(float(std))
        old.walk_noise(key, kind, lo, hi, table.cdf, table.guide, table.shift, out)
        return out

    def use(which):
        if which == "old":
            _mechanism.gaussian_noise = old_gaussian_noise
            _mechanism.rounded_gaussian_eta = old.rounded_gaussian_eta
        else:
            for name, function in original.items():
                setattr(_mechanism, name, function)

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], (y[:600] > 4)
    X, y, X_val, y_val = X[:400], y[:400], X[400:], y[400:]
    cases = [("default walk, epsilon 5", 1000,
              lambda: DPDataValuator(epsilon=5, random_state=0, n_jobs=1)),
             ("paper's full-space walk (LR, d = 65), epsilon 5", 300,
              lambda: DPDataValuator(LogisticRegression(), subspace=None, clip_norm=1.0,
                                     q=0.9, epsilon=5, n_permutations=300,
                                     random_state=0, n_jobs=1))]
    try:
        for name, k, make in cases:
            load_before = load()
            for which in ("old", "new"):  # compile or load both, once
                use(which)
                make().fit(X, y, X_val=X_val, y_val=y_val)
            times = {"old": [], "new": []}
            for r in range(reps):
                for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
                    use(which)
                    estimator = make()
                    times[which].append(timed(lambda: estimator.fit(
                        X, y, X_val=X_val, y_val=y_val)))
            steps = k * len(X)
            print(json.dumps({
                "case": "walk", "name": name, "steps": steps,
                "ns_per_step_old": statistics.median(times["old"]) / steps * 1e9,
                "ns_per_step_new": statistics.median(times["new"]) / steps * 1e9,
                "walk": ratios(times["new"], times["old"]),
                "seconds_old": [round(t, 4) for t in times["old"]],
                "seconds_new": [round(t, 4) for t in times["new"]],
                "load_before": load_before, "load_after": load()}), flush=True)
    finally:
        use("new")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="9dc041b")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sigmas", type=float, nargs="*",
                        default=[1.0, 10.0, 1e3, 3e4, 1e6])
    parser.add_argument("--cases", nargs="+", choices=["sampler", "walk"],
                        default=["sampler", "walk"])
    parser.add_argument("--walk-reps", type=int, default=None,
                        help="pairs of whole fits (default 7, 3 with --quick)")
    args = parser.parse_args()
    if os.environ.get("NUMBA_NUM_THREADS") != "1":
        sys.exit("run with NUMBA_NUM_THREADS=1 (one thread)")
    warnings.simplefilter("ignore")
    from skdpval.privacy import _secure_noise as new
    old = old_module(args.base)
    print(json.dumps({"case": "setup", "base": args.base, "python": sys.version.split()[0],
                      "cpus": os.cpu_count(), "load": load()}), flush=True)
    if "sampler" in args.cases:
        sampler_cases(old, new, args.sigmas, 7 if args.quick else 25,
                      3 if args.quick else 7)
    if "walk" in args.cases:
        walk_cases(old, args.walk_reps or (3 if args.quick else 7))


if __name__ == "__main__":
    main()
