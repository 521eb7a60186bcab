"""The issue-45 reproducers, in full: the seed paper's budgets that the
double-precision sampler refused, run with the exact sampler.

    NUMBA_NUM_THREADS=1 python benchmarks/paper_budgets.py [--no-mlp] \
        > benchmarks/results/paper_budgets.jsonl

Data: ``X, y = load_digits(return_X_y=True); X, y = X[:600], (y[:600] > 4)``,
the first 400 rows for training and the last 200 for validation; delta =
5e-5. Cases (what 9dc041b did with each in brackets):

- the paper's Algorithm 1: ``DPDataValuator(LogisticRegression(),
  subspace=None, clip_norm=1.0, q=0.9, epsilon=10, n_permutations=1000)``
  (65,000 draws a party: refused, the sampler then supporting epsilon up to
  8.1);
- ``DPDataValuator(MLPClassifier((16,)), subspace=None, epsilon=10)``
  (1,057,000 draws: refused, up to 4.94);
- the default walk ``DPDataValuator(epsilon=20)`` (refused, up to 12.4) and
  the label score ``DPLabelQuality(epsilon=20)`` (refused, up to 19.3).

One JSON object per case: ``epsilon_``, ``delta_``, the report's
``sampler_delta`` and ``sampler_tv``, the share of delta, ``mu``, the noise
std, the draws a party, the seconds of the fit and the load average.
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from skdpval import DPDataValuator, DPLabelQuality

DELTA = 5e-5


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-mlp", action="store_true", help="skip the network")
    args = parser.parse_args()
    X, y = load_digits(return_X_y=True)
    X, y = X[:600], (y[:600] > 4)
    X, y, X_val, y_val = X[:400], y[:400], X[400:], y[400:]
    cases = [
        ("paper's Algorithm 1 (LogisticRegression, subspace=None, k=1000)", 10,
         lambda: DPDataValuator(LogisticRegression(), subspace=None, clip_norm=1.0,
                                q=0.9, epsilon=10, delta=DELTA, n_permutations=1000,
                                random_state=0)),
        ("MLPClassifier((16,)), subspace=None", 10,
         lambda: DPDataValuator(MLPClassifier((16,)), subspace=None, epsilon=10,
                                delta=DELTA, random_state=0)),
        ("default walk", 20, lambda: DPDataValuator(epsilon=20, delta=DELTA,
                                                    random_state=0)),
        ("label score", 20, lambda: DPLabelQuality(epsilon=20, delta=DELTA)),
    ]
    for name, epsilon, make in cases:
        if args.no_mlp and name.startswith("MLP"):
            continue
        load_before = round(os.getloadavg()[0], 2)
        estimator = make()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X, y, X_val=X_val, y_val=y_val)
        seconds = time.perf_counter() - start
        report = estimator.privacy_report_
        part = report["parts"][-1]
        print(json.dumps({
            "case": name, "epsilon_requested": epsilon, "delta_requested": DELTA,
            "epsilon_": estimator.epsilon_, "delta_": estimator.delta_,
            "sampler_delta": report["sampler_delta"], "sampler_tv": report["sampler_tv"],
            "sampler_share_of_delta": report["sampler_delta"] / estimator.delta_,
            "mu": report["mu"], "noise_std": report["noise_std"],
            "draws_per_party": int(part["n_releases"] * part["dimension"]),
            "values_finite": bool(np.all(np.isfinite(estimator.values_))),
            "seconds": round(seconds, 2), "load_before": load_before,
            "load_after": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
