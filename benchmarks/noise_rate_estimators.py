"""The share of bad labels two ways, on the same fits: are the misses of
``benchmarks/noise_rate.py`` bias or variance, and does fitting the
releases' whole law (``noisy_share_`` since issue 43) beat their mean?

On the three small tables of ``noise_rate.py`` (its ``load`` and ``split``,
100 validation rows), both flip laws at 10%, 25% and 40%, seeds 5-24 (not
the benchmark's 0-4), ``DPLabelQuality(epsilon=...)`` as a user fits it; its
``noisy_share`` is called again on the same releases and references with
``noise_std=None``: the mean's estimate ``(C - M) / sum_j pi_j d_j``
(clipped to [0, 1], not to the interval). Per case: each estimator's mean
error (bias) with its standard error, its sd and RMSE, and the RMSE and
within 0.05 over the seeds with AUC >= 0.8, and ``validation_sd``, the
validation rows' part of the mean's spread (a bootstrap of them, the
releases fixed); one JSON object per case, then a summary per table; then
the floor of :func:`oracle` (a fit told the laws exactly), the time and
the load. One BLAS thread::

    python benchmarks/noise_rate_estimators.py > benchmarks/results/noise_rate_estimators.jsonl
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from noise_rate import FLIPS, RATES, SMALL, load, split
from skdpval import DPLabelQuality
from skdpval.metrics import noisy_label_auc
from skdpval.valuation import _label_quality
from skdpval.valuation._noisy_share import noisy_share

_calls = []


def _spy(*args, **kwargs):
    _calls.append((args, kwargs))
    return noisy_share(*args, **kwargs)


def _stats(error, strong):
    n = len(error)
    return dict(bias=round(float(error.mean()), 4),
                bias_se=round(float(error.std(ddof=1) / np.sqrt(n)), 4),
                sd=round(float(error.std(ddof=1)), 4),
                rmse=round(float(np.sqrt(np.mean(error ** 2))), 4),
                rmse_auc_ge_0_8=round(float(np.sqrt(np.mean(error[strong] ** 2))), 4)
                if strong.any() else None,
                within_0_05=int((np.abs(error[strong]) <= 0.05).sum()))


def oracle(rng, runs=1000):
    """A floor no estimator passes: releases of ``n`` rows, each a clean
    score ``+a`` or, flipped (share ``s``), ``-a``, plus Gaussian noise of
    the std measured at epsilon 3 (1.275), fitted by maximum likelihood with
    both laws known exactly; the share of runs more than 0.05 from the
    realised share, and the mean's floor ``std / sqrt(n) / 2a``. ``a`` and
    ``n`` as measured on breast_cancer and digits 3 against 8."""
    std = 1.275
    for name, a, n in (("breast_cancer", 0.92, 469), ("digits_3_vs_8", 0.95, 257)):
        for s in RATES:
            errors = []
            for _ in range(runs):
                flipped = rng.random(n) < s
                values = np.where(flipped, -a, a) + rng.normal(0, std, n)
                # r_i: the flipped law's density over the clean one's
                ratio = np.exp(-2 * a * values / std ** 2)
                low, high = 0.0, 1.0
                for _ in range(50):
                    middle = (low + high) / 2
                    slope = np.sum((ratio - 1) / (1 - middle + middle * ratio))
                    low, high = (middle, high) if slope > 0 else (low, middle)
                errors.append((low + high) / 2 - flipped.mean())
            errors = np.array(errors)
            print(json.dumps(dict(
                suite="noise_rate_estimators", oracle=True, table=name, a=a, n=n,
                noise_std=std, rate=s, runs=runs, sd=round(float(errors.std()), 4),
                miss_0_05=round(float(np.mean(np.abs(errors) > 0.05)), 3),
                mean_floor_sd=round(std / np.sqrt(n) / (2 * a), 4))), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=list(SMALL))
    parser.add_argument("--seeds", type=int, nargs=2, default=[5, 25])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[3.0, 1.0])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    threadpool_limits(1)
    _label_quality.noisy_share = _spy
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for name in args.tables:
        X, y = load(name)
        table = {"likelihood": [], "mean": [], "strong": []}
        for epsilon in args.epsilons:
            for flips in FLIPS:
                for rate in RATES:
                    errors = {"likelihood": [], "mean": []}
                    strong, validation_sd = [], []
                    for seed in range(*args.seeds):
                        X_val, y_val, X_train, y_train, flipped = split(
                            X, y, 100, flips, rate, seed)
                        _calls.clear()
                        scorer = DPLabelQuality(epsilon=epsilon).fit(
                            X_train, y_train, X_val=X_val, y_val=y_val)
                        (call_args, kwargs), = _calls
                        mean = noisy_share(*call_args, **{**kwargs, "noise_std": None})
                        # the mean's own estimate, not clipped to the interval
                        values, clean, others = call_args[:3]
                        values = values[np.isfinite(values)]
                        gap = clean.mean() - others.mean()
                        raw = np.clip((clean.mean() - values.mean()) / gap, 0, 1)
                        assert mean.low == scorer.noisy_share_.low
                        # the validation rows' part of the spread: the mean's
                        # estimate over a bootstrap of them, the releases fixed
                        draws = rng.integers(0, len(clean), (200, len(clean)))
                        flip_means = others.reshape(len(clean), -1).mean(axis=1)
                        validation_sd.append(np.std(
                            (clean[draws].mean(axis=1) - values.mean())
                            / (clean[draws].mean(axis=1) - flip_means[draws].mean(axis=1))))
                        truth = flipped.mean()
                        errors["likelihood"].append(scorer.noisy_share_.share - truth)
                        errors["mean"].append(raw - truth)
                        strong.append(noisy_label_auc(scorer.values_, flipped) >= 0.8)
                    strong = np.array(strong)
                    case = dict(suite="noise_rate_estimators", table=name,
                                epsilon=epsilon, flips=flips, rate=rate,
                                seeds=list(args.seeds), seeds_auc_ge_0_8=int(strong.sum()),
                                validation_sd=round(float(np.mean(validation_sd)), 4))
                    for key in ("likelihood", "mean"):
                        error = np.array(errors[key])
                        case[key] = _stats(error, strong)
                        table[key].extend(error)
                    table["strong"].extend(strong)
                    print(json.dumps(case), flush=True)
        strong = np.array(table["strong"])
        print(json.dumps(dict(
            suite="noise_rate_estimators", table=name, summary=True,
            runs=len(strong), runs_auc_ge_0_8=int(strong.sum()),
            **{key: _stats(np.array(table[key]), strong)
               for key in ("likelihood", "mean")})), flush=True)
    oracle(rng)
    print(json.dumps(dict(suite="noise_rate_estimators", summary=True,
                          seconds=round(time.perf_counter() - start, 1),
                          load=round(os.getloadavg()[0], 2),
                          date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))))


if __name__ == "__main__":
    main()
