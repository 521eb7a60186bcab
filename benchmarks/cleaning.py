"""When does private cleaning pay? Clean-test accuracy before and after.

The setting: many private training rows with 30% bad labels and a few clean,
public validation rows. Per seed (a new split, new flips, fresh secret
noise), clean-test accuracy of

- ``noisy``: the final model fitted on every (noisy) training row;
- ``validation_only``: the same model fitted on the ``n_val`` clean
  validation rows alone (``validation_only_lr`` / ``validation_only_hgb``
  for each final model, and ``best_validation_only`` the better of the two
  means, chosen on the test set: a generous yardstick);
- ``cleaned``: ``DPFilteredClassifier(DPLabelQuality(epsilon, delta,
  public_model=...), final, drop_fraction=0.3)``, the 30% lowest-scored rows
  dropped, the final model fitted on the rest (for HGB: on the rows the same
  private cleaning kept, ``kept_mask_``);
- ``oracle``: not private and not available to a user: the final model
  fitted on the training rows whose labels were not flipped;
- ``epsilon="inf"``: the same cleaning without noise (not private), the
  ceiling of cleaning by this score.

Only the cleaning is private. The final model reads the kept rows without
noise: it is private only if it is a DP model itself (see
examples/plot_private_cleaning.py, which uses diffprivlib's).

Final models: ``LogisticRegression()`` (the default C) on features scaled
with the validation set's statistics (public), and
``HistGradientBoostingClassifier(max_iter=50)`` (flexible: it fits label
noise that a linear model averages out).

Flips (``--flips``): ``symmetric``, each label flipped with probability 0.3;
``class1``, class-conditional: a label of class 1 flipped with probability
0.45, of class 0 with 0.15 (30% on balanced data).

Settings: ``large``, ``make_classification(25200, 20, n_informative=8,
class_sep=1.0, flip_y=0)`` (data fixed, seed 0): 5,000 clean test rows,
n_val from 200 held-out rows, the remaining 20,000 for training; n_val 50,
100 and 200; epsilon 1, 3 and inf; delta 1e-6 (below 1 / (10 n)); public_model
"auto" (here: a private fit on the training rows) and "validation". ``small``:
breast_cancer as in examples/plot_private_cleaning.py (170 test rows, the
validation rows, 299 training rows), n_val 50 and 100, twice the seeds.

``pays``: the cleaned model's mean beats both the noisy model's and the
best validation-only model's by more than 0.005; ``flipped_dropped``: the
fraction of the flipped rows that the cleaning dropped.

One JSON object per case (means over seeds, their standard deviations,
paired differences and win counts) on stdout, then a ``run`` object (time,
load). Runs on one BLAS / OpenMP thread::

    python benchmarks/cleaning.py > benchmarks/results/cleaning.jsonl
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skdpval import DPFilteredClassifier, DPLabelQuality

FLIP_RATES = {"symmetric": (0.3, 0.3), "class1": (0.15, 0.45)}  # (class 0, class 1)
DROP_FRACTION = 0.3
DELTA = 1e-6


def linear():
    return LogisticRegression(max_iter=1000)


def boosted():
    return HistGradientBoostingClassifier(max_iter=50, random_state=0)


def load(setting):
    if setting == "large":
        X, y = make_classification(25200, 20, n_informative=8, class_sep=1.0,
                                   flip_y=0, random_state=0)
        return X, y, 5000, 200
    X, y = load_breast_cancer(return_X_y=True)
    return X, y, 170, 100


def split(setting, seed, flips):
    """Test, held-out validation pool and training rows; noisy training labels."""
    X, y, n_test, n_pool = load(setting)
    rng = np.random.default_rng([seed, len(y), len(flips)])
    order = rng.permutation(len(y))
    test, pool, train = order[:n_test], order[n_test:n_test + n_pool], order[n_test + n_pool:]
    rate = np.where(y[train] == 1, FLIP_RATES[flips][1], FLIP_RATES[flips][0])
    flipped = rng.random(len(train)) < rate
    y_train = np.where(flipped, 1 - y[train], y[train])
    return X, y, test, pool, train, y_train, flipped


def first_rows_with_both_classes(pool, y, n_val):
    """The first n_val rows of the pool, moved on until both classes appear."""
    for start in range(len(pool) - n_val + 1):
        val = pool[start:start + n_val]
        if len(np.unique(y[val])) == 2:
            return val
    raise ValueError("no validation window with both classes")


def run_seed(setting, seed, flips, n_vals, epsilons, public_models):
    X, y, test, pool, train, y_train, flipped = split(setting, seed, flips)
    out = {}
    # HGB is invariant to the scaling: fit it once per seed.
    hgb_noisy = boosted().fit(X[train], y_train).score(X[test], y[test])
    hgb_oracle = boosted().fit(X[train][~flipped], y_train[~flipped]).score(X[test], y[test])
    for n_val in n_vals:
        val = first_rows_with_both_classes(pool, y, n_val)
        Xs = StandardScaler().fit(X[val]).transform(X)  # public statistics only
        X_train, X_val, X_test, y_val, y_test = Xs[train], Xs[val], Xs[test], y[val], y[test]
        base = {
            "LogisticRegression": dict(
                noisy=linear().fit(X_train, y_train).score(X_test, y_test),
                oracle=linear().fit(X_train[~flipped], y_train[~flipped]).score(X_test, y_test)),
            "HistGradientBoostingClassifier": dict(noisy=hgb_noisy, oracle=hgb_oracle),
        }
        val_lr = linear().fit(X_val, y_val).score(X_test, y_test)
        val_hgb = boosted().fit(X_val, y_val).score(X_test, y_test)
        for final in base:
            base[final].update(validation_only_lr=val_lr, validation_only_hgb=val_hgb,
                               validation_only=val_lr if final == "LogisticRegression"
                               else val_hgb)
        for epsilon in epsilons:
            for public_model in public_models:
                start = time.perf_counter()
                step = DPFilteredClassifier(
                    DPLabelQuality(epsilon=epsilon, delta=DELTA, public_model=public_model),
                    linear(), drop_fraction=DROP_FRACTION)
                step.fit(X_train, y_train, X_val=X_val, y_val=y_val)
                seconds = time.perf_counter() - start
                kept = step.kept_mask_
                common = dict(private_fit=bool(step.valuator_.public_model_fitted_privately_),
                              valuator_seconds=seconds,
                              flipped_dropped=float(flipped[~kept].sum() / flipped.sum()))
                out[(n_val, epsilon, public_model, "LogisticRegression")] = dict(
                    base["LogisticRegression"], cleaned=step.score(X_test, y_test), **common)
                hgb = boosted().fit(X_train[kept], y_train[kept])
                out[(n_val, epsilon, public_model, "HistGradientBoostingClassifier")] = dict(
                    base["HistGradientBoostingClassifier"],
                    cleaned=hgb.score(X_test, y_test), **common)
    return out, len(train)


def summarise(setting, flips, n_train, key, per_seed):
    n_val, epsilon, public_model, final = key
    keys = ["noisy", "validation_only", "validation_only_lr", "validation_only_hgb",
            "cleaned", "oracle", "flipped_dropped"]
    arrays = {k: np.array([s[k] for s in per_seed]) for k in keys}
    best_val_name = max(("validation_only_lr", "validation_only_hgb"),
                        key=lambda k: arrays[k].mean())
    best_val = arrays[best_val_name]
    cleaned = arrays["cleaned"]
    case = dict(suite="cleaning", setting=setting, flips=flips, n_train=n_train,
                n_val=n_val, epsilon=epsilon if np.isfinite(epsilon) else "inf",
                delta=DELTA, public_model=public_model,
                final_model=final, drop_fraction=DROP_FRACTION, seeds=len(per_seed))
    for k in keys:
        case[k] = round(float(arrays[k].mean()), 4)
    case["cleaned_sd"] = round(float(cleaned.std()), 4)
    case["best_validation_only"] = round(float(best_val.mean()), 4)
    case["best_validation_only_model"] = ("LogisticRegression"
                                          if best_val_name.endswith("lr")
                                          else "HistGradientBoostingClassifier")
    case["cleaned_minus_noisy"] = round(float((cleaned - arrays["noisy"]).mean()), 4)
    case["cleaned_minus_best_validation_only"] = round(float((cleaned - best_val).mean()), 4)
    case["seeds_cleaned_beats_both"] = int(np.sum((cleaned > arrays["noisy"])
                                                  & (cleaned > best_val)))
    case["pays"] = bool(case["cleaned_minus_noisy"] > 0.005
                        and case["cleaned_minus_best_validation_only"] > 0.005)
    case["private_fit_fraction"] = float(np.mean([s["private_fit"] for s in per_seed]))
    case["valuator_seconds"] = round(float(np.mean([s["valuator_seconds"]
                                                    for s in per_seed])), 3)
    case["load"] = round(os.getloadavg()[0], 2)
    print(json.dumps(case), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+", default=["large", "small"],
                        choices=["large", "small"])
    parser.add_argument("--flips", nargs="+", default=list(FLIP_RATES),
                        choices=list(FLIP_RATES))
    parser.add_argument("--seeds", type=int, default=10,
                        help="seeds for the large set (the small set runs twice as many)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, np.inf])
    parser.add_argument("--public-models", nargs="+", default=["auto", "validation"])
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # ConvergenceWarning of tiny validation fits
    # One BLAS / OpenMP thread: on a shared, loaded 2-core machine HGB's
    # OpenMP threads spin (a 20,000-row fit took 7.7 s with 2 threads, 0.4 s
    # with 1).
    threadpool_limits(1)
    start = time.perf_counter()
    for setting in args.settings:
        n_vals = (50, 100, 200) if setting == "large" else (50, 100)
        seeds = args.seeds if setting == "large" else 2 * args.seeds
        for flips in args.flips:
            results = {}
            for seed in range(seeds):
                out, n_train = run_seed(setting, seed, flips, n_vals, args.epsilons,
                                        args.public_models)
                for key, value in out.items():
                    results.setdefault(key, []).append(value)
            for key, per_seed in results.items():
                summarise(setting, flips, n_train, key, per_seed)
    print(json.dumps(dict(suite="cleaning", run=True,
                          seconds=round(time.perf_counter() - start, 1),
                          load=round(os.getloadavg()[0], 2),
                          date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))),
          flush=True)


if __name__ == "__main__":
    main()
