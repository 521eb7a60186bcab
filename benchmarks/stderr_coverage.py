"""Coverage benchmark: does ``values_stderr_`` cover the privacy noise?

Two fits of the same valuator with fresh noise (``noise_seed=None``) and
other permutations (another ``random_state``) estimate the same value, so
their difference ``d`` over ``sqrt(se_a^2 + se_b^2)`` should be about a
standard normal: ``|d| > 2`` combined standard errors for about 5% of the
parties, ``mean(d^2 / (se_a^2 + se_b^2))`` about 1 (below 1 the standard
errors are padded, above it too narrow). Each case refits ``--refits``
times (fits 1 and 2, 3 and 4, ... are the pairs; ``random_state`` 1, 2,
...), pools the parties of all pairs and reports:

- ``out_of_2se``: the share of parties with ``|d| > 2`` combined s.e.;
- ``mean_z2``: the mean of ``d^2 / (se_a^2 + se_b^2)``, and its range over
  the pairs (``mean_z2_pairs``);
- ``median_abs_z``;
- ``variance_ratio``: ``sum(d^2) / sum(se_a^2 + se_b^2)`` over the parties,
  about 1 when the standard errors are right on average (with
  ``utility="accuracy"`` most values move in rare jumps or not at all: the
  ratio of each party is far from normal while the average is right);
- the same for the Monte Carlo term alone, ``sqrt(marginal_var_ /
  n_marginals_)`` (``monte_carlo_only``): what ``values_stderr_`` was
  before it covered the noise that the counted permutations share (issue
  35), for :class:`~skdpval.DPDataValuator`.

Data sets: breast_cancer (400 training rows, the other 169 validation) and
make_classification(5000, 20 features, 5 informative; 4500 training rows,
500 validation). Cases, epsilon 3, delta 5e-5, logistic regression:
``defaults`` (public line, correlated noise, q = 0.9, k = 1000),
``subspace=None`` (the full gradient; k = 200 on the larger set, for time),
``noise="iid"``, ``noise="none"``, groups (breast_cancer: 40 of 10 rows;
the larger set: 150 of 30) at ``privacy_unit="record"`` and ``"group"``,
groups in the full space (breast_cancer only), ``utility="accuracy"``, the
label score (:class:`~skdpval.DPLabelQuality`, points and record-level
groups), and ``MLPClassifier((10,))`` (breast_cancer only; k = 300).
``--spread``: how large the standard errors are next to the spread of the
values (the median standard error over the values' std), on the data of
the user guide's ``plot_values`` example, 5 seeds.

Each line records the machine's load average::

    python benchmarks/stderr_coverage.py --refits 10 --datasets breast_cancer \\
        > benchmarks/results/stderr_coverage.jsonl
    python benchmarks/stderr_coverage.py --refits 6 --datasets \\
        classification_5000 >> benchmarks/results/stderr_coverage.jsonl
    python benchmarks/stderr_coverage.py --spread \\
        >> benchmarks/results/stderr_coverage.jsonl
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.neural_network import MLPClassifier

from skdpval import DPDataValuator, DPLabelQuality

EPSILON, DELTA = 3.0, 5e-5


def datasets():
    """``name -> (X, y, X_val, y_val, group size)``."""
    X, y = load_breast_cancer(return_X_y=True)
    Xc, yc = make_classification(5000, 20, n_informative=5, random_state=0)
    return {"breast_cancer": (X[:400], y[:400], X[400:], y[400:], 10),
            "classification_5000": (Xc[:4500], yc[:4500], Xc[4500:], yc[4500:], 30)}


def valuator(**params):
    return lambda seed, large: DPDataValuator(
        epsilon=EPSILON, delta=DELTA, random_state=seed, **params)


CASES = {
    # name: (make(seed, large), groups?, on the larger set?)
    "defaults": (valuator(), False, True),
    "subspace=None": (lambda seed, large: DPDataValuator(
        epsilon=EPSILON, delta=DELTA, subspace=None,
        n_permutations=200 if large else 1000, random_state=seed), False, True),
    "noise=iid": (valuator(noise="iid"), False, True),
    "noise=none": (valuator(noise="none"), False, True),
    "groups record": (valuator(), True, True),
    "groups group": (valuator(privacy_unit="group"), True, True),
    "groups record subspace=None": (valuator(subspace=None), True, False),
    "groups group subspace=None": (valuator(subspace=None, privacy_unit="group"),
                                   True, False),
    "accuracy": (valuator(utility="accuracy"), False, True),
    "label score": (lambda seed, large: DPLabelQuality(
        epsilon=EPSILON, delta=DELTA, random_state=seed), False, True),
    "label score groups record": (lambda seed, large: DPLabelQuality(
        epsilon=EPSILON, delta=DELTA, random_state=seed), True, True),
    "mlp": (valuator(estimator=MLPClassifier((10,), random_state=0),
                     n_permutations=300), False, False),
}


def z_statistics(d, variance):
    """Parties whose two values are equal with a zero standard error (an
    accuracy game's parties that never flip a validation row) are left out
    (``equal_and_exact``); a difference with a zero standard error is out of
    2 s.e. and counted apart (``zero_se``), outside the mean."""
    variance_ratio = float(np.sum(d**2) / np.sum(variance))
    exact = (d == 0) & (variance == 0)
    d, variance = d[~exact], variance[~exact]
    zero = variance == 0
    z2 = d[~zero]**2 / variance[~zero]
    stats = dict(out_of_2se=round(float((np.sum(z2 > 4) + zero.sum()) / len(d)), 4),
                 mean_z2=round(float(np.mean(z2)), 3),
                 median_abs_z=round(float(np.median(np.sqrt(z2))), 3),
                 variance_ratio=round(variance_ratio, 3))
    if exact.any():
        stats["equal_and_exact"] = int(exact.sum())
    if zero.any():
        stats["zero_se"] = int(zero.sum())
    return stats


def run_case(name, data_name, data, refits):
    make, grouped, _ = CASES[name]
    X, y, X_val, y_val, group_size = data
    groups = np.arange(len(X)) // group_size if grouped else None
    large = data_name != "breast_cancer"
    fits = []
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(1, refits + 1):
            fits.append(make(seed, large).fit(X, y, X_val=X_val, y_val=y_val,
                                              groups=groups))
    seconds = (time.perf_counter() - started) / refits
    d, variance, monte_carlo, pair_z2 = [], [], [], []
    for a, b in zip(fits[0::2], fits[1::2]):
        d.append(a.values_ - b.values_)
        variance.append(a.values_stderr_**2 + b.values_stderr_**2)
        pair_z2.append(z_statistics(d[-1], variance[-1])["mean_z2"])
        if hasattr(a, "marginal_var_"):
            monte_carlo.append(a.marginal_var_ / a.n_marginals_
                               + b.marginal_var_ / b.n_marginals_)
    d, variance = np.concatenate(d), np.concatenate(variance)
    case = dict(case="stderr_coverage", dataset=data_name, n=len(X),
                n_parties=len(fits[0].values_), setting=name, epsilon=EPSILON,
                delta=DELTA, pairs=len(pair_z2))
    if getattr(fits[0], "n_permutations", None) is not None:
        case.update(n_permutations=fits[0].n_permutations, q=fits[0].q_)
    if np.all(variance == 0):  # no noise, no Monte Carlo: exact scores
        case.update(max_abs_difference=float(np.max(np.abs(d))))
    else:
        case.update(z_statistics(d, variance),
                    mean_z2_pairs=[round(min(pair_z2), 3), round(max(pair_z2), 3)])
    if monte_carlo:
        monte_carlo = np.concatenate(monte_carlo)
        case["monte_carlo_only"] = z_statistics(d, monte_carlo)
    case.update(seconds_per_fit=round(seconds, 2),
                load_average=round(os.getloadavg()[0], 2))
    return case


def run_spread(seeds):
    """The median standard error over the std of the values, on the user
    guide's plot_values data (breast_cancer rows 150 on, 30% of the labels
    flipped; validation rows :150), without noise and at each epsilon, for
    k = 50 (the guide's example) and the default 1000."""
    from skdpval.datasets import flip_labels

    X, y = load_breast_cancer(return_X_y=True)
    for epsilon in (None, 1.0, 3.0, 10.0):
        for k in (50, 1000):
            ratios = []
            for seed in range(seeds):
                y_noisy, _ = flip_labels(y[150:], 0.3, random_state=seed)
                params = (dict(noise="none") if epsilon is None
                          else dict(epsilon=epsilon, delta=DELTA))
                valuator = DPDataValuator(n_permutations=k, random_state=seed,
                                          **params).fit(X[150:], y_noisy,
                                                        X_val=X[:150], y_val=y[:150])
                ratios.append(np.median(valuator.values_stderr_)
                              / np.std(valuator.values_))
            yield dict(case="stderr_spread", dataset="breast_cancer 30% flipped",
                       epsilon=epsilon, n_permutations=k, seeds=seeds,
                       median_stderr_over_value_std=round(float(np.mean(ratios)), 3),
                       load_average=round(os.getloadavg()[0], 2))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refits", type=int, default=10,
                        help="fits per case (pairs: half of it)")
    parser.add_argument("--datasets", nargs="+", default=list(datasets()))
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--spread", action="store_true",
                        help="instead: the median standard error over the values' std")
    args = parser.parse_args()
    if args.spread:
        for case in run_spread(seeds=5):
            print(json.dumps(case), flush=True)
        return
    sets = datasets()
    for data_name in args.datasets:
        for name in args.cases:
            if data_name != "breast_cancer" and not CASES[name][2]:
                continue
            print(json.dumps(run_case(name, data_name, sets[data_name],
                                      args.refits)), flush=True)


if __name__ == "__main__":
    main()
