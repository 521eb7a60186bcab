"""Joint differential privacy against the anchor: DP-TKNN-Shapley's 2dplanes row.

DP-TKNN-Shapley (Wang et al., NeurIPS 2023) values data under joint DP
(each owner learns its own value from a trusted curator) and reports
AUROC 0.885 +- 0.012 for 10% flipped labels on 2dplanes at epsilon 0.1,
delta 1e-4 (2,000 training rows, 200 validation rows), 0.92 without
privacy. This script runs that row for both of our threat models:

- 2dplanes (``skdpval.datasets.make_2dplanes``), 2,200 rows a seed, 200 at
  random as the (clean) validation set, 2,000 training rows with exactly
  10% of their labels flipped (``flip_labels``); epsilon 0.1, delta 1e-4;
- ``walk``: ``DPDataValuator(LogisticRegression(), epsilon=0.1,
  delta=1e-4, threat_model=...)`` (the defaults otherwise) and without noise
  (``noise="none"``);
- ``label score``: ``DPLabelQuality`` likewise, and without noise
  (``epsilon=np.inf``); and with ``public_model="private"`` (the public
  model fitted privately on the training rows: under the joint threat
  model the whole budget goes to that fit);
- the no-noise references keep the model fitted on the validation rows
  (``public_model="validation"``), as ``"auto"`` does at epsilon 0.1 here
  (each line records the choice the fits made);
- ``own margin``: each training row's margin under a model fitted on the
  validation rows, not clipped (``DPLabelQuality(estimator,
  threat_model="joint")``: no billboard, so no noise and no clip), for
  LogisticRegression, MLPClassifier((64,)) and 15-NN; ``own clipped
  margin``: the same clipped to [-1, 1], the central score without noise
  (``DPLabelQuality(estimator, epsilon=np.inf)``);
- the walk of an MLPClassifier((64,)) along its public line, both threat
  models and without noise.

One JSON object per (method, threat model, estimator) with the AUROC of a
low value for a flipped label over the seeds (mean, std, each seed's),
seconds per fit and the load average:

    python benchmarks/joint.py --seeds 5 > benchmarks/results/quality_joint.jsonl

``--speed``: the line walk's kernel (2,000 one-row parties, 16 walks, a
logistic line), ns a step, best of 30 runs, central and joint, run in turn
three times:

    python benchmarks/joint.py --speed > benchmarks/results/speed_joint.jsonl
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier

from skdpval import DPDataValuator, DPLabelQuality
from skdpval.datasets import flip_labels, make_2dplanes
from skdpval.metrics import noisy_label_auc

N_TRAIN, N_VAL, FLIP, EPSILON, DELTA = 2000, 200, 0.1, 0.1, 1e-4
ANCHOR = {"dp_tknn_shapley_auroc": 0.885, "dp_tknn_shapley_auroc_std": 0.012,
          "tknn_shapley_no_dp_auroc": 0.92}


def estimators(seed):
    return {
        "LogisticRegression": LogisticRegression(),
        "MLPClassifier(64)": MLPClassifier((64,), max_iter=2000, random_state=seed),
        "15-NN": KNeighborsClassifier(15),
    }


def cases(seed):
    """(method, threat model, estimator name, valuator) of one seed."""
    models = estimators(seed)
    budget = dict(epsilon=EPSILON, delta=DELTA)
    out = []
    for threat in ("central", "joint"):
        out.append(("walk", threat, "LogisticRegression", DPDataValuator(
            LogisticRegression(), threat_model=threat, random_state=seed, **budget)))
        out.append(("label score", threat, "LogisticRegression", DPLabelQuality(
            LogisticRegression(), threat_model=threat, random_state=seed, **budget)))
        out.append(("label score", threat, "MLPClassifier(64)", DPLabelQuality(
            models["MLPClassifier(64)"], threat_model=threat, random_state=seed,
            **budget)))
    # The no-noise references keep the model fitted on the validation rows,
    # as public_model="auto" does at epsilon 0.1 here (without noise "auto"
    # would fit it on the training rows).
    out.append(("walk", "no noise", "LogisticRegression", DPDataValuator(
        LogisticRegression(), noise="none", public_model="validation",
        random_state=seed)))
    out.append(("label score", "no noise", "LogisticRegression", DPLabelQuality(
        LogisticRegression(), epsilon=np.inf, public_model="validation",
        random_state=seed)))
    for threat in ("central", "joint"):
        out.append(("label score, public_model='private'", threat,
                    "LogisticRegression", DPLabelQuality(
                        LogisticRegression(), threat_model=threat,
                        public_model="private", random_state=seed, **budget)))
    for name, model in models.items():
        out.append(("own margin", "no noise", name, DPLabelQuality(
            model, threat_model="joint", public_model="validation",
            random_state=seed, **budget)))
        out.append(("own clipped margin", "no noise", name, DPLabelQuality(
            model, epsilon=np.inf, public_model="validation", random_state=seed)))
    for threat in ("central", "joint"):
        out.append(("walk", threat, "MLPClassifier(64)", DPDataValuator(
            models["MLPClassifier(64)"], threat_model=threat, random_state=seed,
            **budget)))
    out.append(("walk", "no noise", "MLPClassifier(64)", DPDataValuator(
        models["MLPClassifier(64)"], noise="none", public_model="validation",
        random_state=seed)))
    return out


def data(seed):
    X, y = make_2dplanes(N_TRAIN + N_VAL, random_state=seed)
    rows = np.random.default_rng(seed).permutation(len(y))
    train, val = rows[:N_TRAIN], rows[N_TRAIN:]
    y_noisy, flipped = flip_labels(y[train], FLIP, random_state=seed)
    return X[train], y_noisy, flipped, X[val], y[val]


def line_walk_speed(joint, n=2000, d=10, n_walks=16, repeats=30):
    """Best ns a step of the line walk's kernel (a logistic line, noise on a grid)."""
    from skdpval.kernels import _subspace_problem
    from skdpval.kernels import _losses
    from skdpval.privacy._release import release_stream
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=(n, d)), np.ones(n)]
    T = rng.choice([-1.0, 1.0], size=(n, 1))
    X_val = np.c_[rng.normal(size=(200, d)), np.ones(200)]
    T_val = np.sign(X_val[:, :1])
    basis = rng.normal(size=(1, d + 1))
    basis /= np.linalg.norm(basis)
    problem = _subspace_problem.make_subspace_problem(
        basis, X, T, np.arange(n + 1), X_val, T_val, (T_val[:, 0] > 0).astype(np.int64),
        loss=_losses.LOGISTIC, utility=_losses.NEG_LOSS, loss_param=0.0, l2=1e-3,
        n_penalized=d, clip_norm=0.5, learning_rate=0.01, total_sum_squares=1.0,
        weights=np.ones(n) / n, line_range=(-5, 5), joint=joint)
    permutations = np.array([rng.permutation(n) for _ in range(n_walks)])
    noise = np.rint(rng.normal(scale=30, size=(n_walks, n, 1)))
    grid = (0.5 / 64, 64.0)
    # compile
    problem.walk(permutations, release_stream(noise.copy(), grid), None, None)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        problem.walk(permutations, release_stream(noise.copy(), grid), None, None)
        best = min(best, time.perf_counter() - start)
    return best / (n_walks * n) * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args()
    if args.speed:
        for turn in range(3):
            for joint in (False, True):
                print(json.dumps({
                    "case": "line_walk_speed", "threat_model": "joint" if joint
                    else "central", "turn": turn, "n": 2000, "walks": 16,
                    "ns_per_step": round(line_walk_speed(joint), 2),
                    "load_average": round(os.getloadavg()[0], 2)}), flush=True)
        return
    results = {}
    for seed in range(args.seeds):
        X, y, flipped, X_val, y_val = data(seed)
        for method, threat, name, valuator in cases(seed):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                valuator.fit(X, y, X_val=X_val, y_val=y_val)
            seconds = time.perf_counter() - start
            entry = results.setdefault((method, threat, name), dict(
                aucs=[], seconds=[], threat_model_reported=None))
            entry["aucs"].append(noisy_label_auc(valuator.values_, flipped))
            entry["seconds"].append(seconds)
            entry["threat_model_reported"] = valuator.privacy_report_.get(
                "threat_model", "central")
            entry["epsilon_reported"] = valuator.epsilon_
            entry["public_model"] = getattr(valuator, "public_model_reason_", None)
    for (method, threat, name), entry in results.items():
        aucs = np.array(entry["aucs"])
        print(json.dumps({
            "case": "joint", "dataset": "2dplanes", "n": N_TRAIN, "n_val": N_VAL,
            "flip_fraction": FLIP, "method": method, "threat_model": threat,
            "estimator": name, "epsilon": None if threat == "no noise" else EPSILON,
            "delta": DELTA, "auc_mean": round(float(aucs.mean()), 4),
            "auc_std": round(float(aucs.std()), 4),
            "aucs": [round(float(a), 4) for a in aucs], "seeds": len(aucs),
            "epsilon_reported": entry["epsilon_reported"],
            "public_model": entry["public_model"],
            "seconds_per_fit": round(float(np.mean(entry["seconds"])), 3),
            "load_average": round(os.getloadavg()[0], 2)}), flush=True)
    print(json.dumps({"case": "anchor", **ANCHOR, "dataset": "2dplanes",
                      "epsilon": EPSILON, "delta": DELTA, "flip_fraction": FLIP,
                      "note": "DP-TKNN-Shapley's public code, as issue 34 quotes"}))


if __name__ == "__main__":
    main()
