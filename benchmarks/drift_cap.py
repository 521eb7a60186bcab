"""The walk's drift cap (``AUTO_MARGIN_DRIFT`` of ``learning_rate="auto"``), paired.

Each comparison refits the same split with the same permutations and the same
noise (``noise_seed`` fixed: a benchmark's opt-in, not a private fit) and only
the module's drift limit changed, so the differences are the cap's alone
(independent noise makes 5-seed limit fractions differ by 0.1 at epsilon 1).

- ``--part regime``: DPDataValuator() on the regime sets (benchmarks/regime_data.py,
  n_val 50, 30% flips), limit fraction per drift limit, with the non-private
  out-of-fold reference of ``quality.py --suite regime``.
- ``--part limit``: the limit suite's four small sets (5 seeds, eps 1 / 3 / 10).
- ``--part fidelity``: Spearman of noisy group values with the no-noise values
  (``quality.py --suite fidelity``'s 100 groups of 30, privacy_unit "record"
  and "group", k = 500) and of points (breast_cancer, 300 rows, 30% flips).

Results: ``benchmarks/results/quality_drift_cap.jsonl`` (one JSON object a case).
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import skdpval.valuation._walk_settings as walk_settings  # noqa: E402
from quality import (DELTA, LIMIT_DATASETS, detection_auc_limit, group_data,  # noqa: E402
                     limit_data, load_noisy_classification, noisy_label_auc,
                     regime_reference)
from skdpval import DPDataValuator  # noqa: E402
from skdpval.metrics import value_fidelity  # noqa: E402


def emit(**case):
    case["load"] = round(os.getloadavg()[0], 2)
    print(json.dumps(case), flush=True)


def with_drift(limit):
    walk_settings.AUTO_MARGIN_DRIFT = float(limit)


def regime(names, n_val, epsilons, limits, seeds):
    from regime_data import regime_split
    for name in names:
        for seed in range(seeds):
            d = regime_split(name, seed, n_val)
            for eps in epsilons:
                limit = detection_auc_limit(eps, DELTA)
                lf = lambda auc: round((auc - .5) / (limit - .5), 4)
                case = dict(case="drift regime", dataset=name, seed=seed, n_val=n_val,
                            epsilon=eps, reference_oof=lf(regime_reference(d, eps, seed)[0]))
                for drift in limits:
                    with_drift(drift)
                    started = time.perf_counter()
                    fitted = DPDataValuator(epsilon=eps, delta=DELTA, random_state=seed,
                                            noise_seed=1000 + seed).fit(
                        d["X_train"], d["y_train"], X_val=d["X_val"], y_val=d["y_val"])
                    case[f"lf_{drift}"] = lf(noisy_label_auc(fitted.values_, d["flipped"]))
                    case[f"lr_{drift}"] = float("%.3g" % fitted.learning_rate_)
                    case[f"seconds_{drift}"] = round(time.perf_counter() - started, 1)
                emit(**case)


def limit_suite(limits, seeds):
    for name in LIMIT_DATASETS:
        data = limit_data(name, seeds)
        for eps in (1.0, 3.0, 10.0):
            bound = detection_auc_limit(eps, DELTA)
            case = dict(case="drift limit", dataset=name, epsilon=eps, seeds=seeds)
            for drift in limits:
                with_drift(drift)
                aucs = [noisy_label_auc(DPDataValuator(
                    epsilon=eps, random_state=seed, noise_seed=500 + seed).fit(
                        d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val).values_,
                    d.is_noisy) for seed, d in enumerate(data)]
                case[f"lf_{drift}"] = round((np.mean(aucs) - .5) / (bound - .5), 4)
            emit(**case)


def fidelity(limits, seeds):
    data = [group_data(seed) for seed in range(seeds)]
    for unit in ("record", "group"):
        def fit(seed, **params):
            X, y, groups, X_val, y_val, _ = data[seed]
            return DPDataValuator(n_permutations=500, privacy_unit=unit,
                                  random_state=seed, **params).fit(
                X, y, X_val=X_val, y_val=y_val, groups=groups)
        references = [fit(seed, noise="none").values_ for seed in range(seeds)]
        for eps in (1.0, 3.0, 10.0):
            case = dict(case="drift fidelity groups", privacy_unit=unit, epsilon=eps,
                        seeds=seeds)
            for drift in limits:
                with_drift(drift)
                fits = [fit(seed, epsilon=eps, noise_seed=70 + seed) for seed in range(seeds)]
                case[f"spearman_{drift}"] = round(float(np.mean([
                    value_fidelity(f.values_, r).spearman
                    for f, r in zip(fits, references)])), 4)
            emit(**case)
    points = [load_noisy_classification(
        "breast_cancer", n_train=300, flip_fraction=0.3, independent_flips=True,
        validation_size=0.25, test_size=0.0, random_state=seed) for seed in range(seeds)]
    fit = lambda d, **params: DPDataValuator(**params).fit(
        d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val).values_
    references = [fit(d, noise="none", random_state=seed) for seed, d in enumerate(points)]
    for eps in (1.0, 3.0, 10.0):
        case = dict(case="drift fidelity points", dataset="breast_cancer", epsilon=eps,
                    seeds=seeds)
        for drift in limits:
            with_drift(drift)
            case[f"spearman_{drift}"] = round(float(np.mean([value_fidelity(
                fit(d, epsilon=eps, random_state=seed, noise_seed=80 + seed),
                references[seed]).spearman for seed, d in enumerate(points)])), 4)
        emit(**case)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["regime", "limit", "fidelity"], required=True)
    parser.add_argument("--limits", nargs="+", default=["inf", "2.0"])
    parser.add_argument("--datasets", nargs="+",
                        default=["sep_0.8", "sep_1.2", "diamonds", "cps1988", "rwm5yr",
                                 "gss7402"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[3.0, 1.0])
    parser.add_argument("--n-val", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the fixed noise seeds' NoiseSeedWarning
    if args.part == "regime":
        regime(args.datasets, args.n_val, args.epsilons, args.limits, args.seeds)
    elif args.part == "limit":
        limit_suite(args.limits, max(args.seeds, 5))
    else:
        fidelity(args.limits, max(args.seeds, 5))
