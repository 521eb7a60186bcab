"""``skdpval`` (``skdpval demo``): find flipped labels in a bundled data set
privately, against the limit.

What it prints and its options: :data:`skdpval.cli._parser.DEMO_DESCRIPTION`
(``skdpval demo --help``). Imported once the command line has parsed.
"""

import json
import sys
import time

from ..datasets import load_noisy_classification
from ..metrics import detection_auc_band, detection_auc_limit, noisy_label_auc
from ..privacy import gdp_mu
from ..valuation import DPDataValuator, DPLabelQuality

# Each method: its label in the table, what the label means, and how to make
# it from (epsilon, delta, n_permutations, random_state).
RUNS = (
    ("no DP (reference)",
     "no noise at all: what values find without privacy",
     lambda eps, delta, k, seed: DPDataValuator(
         noise="none", delta=delta, n_permutations=k, random_state=seed)),
    ("paper: full gradient, i.i.d.",
     "the seed paper's mechanism with independent (i.i.d.) noise: each "
     "release gets fresh Gaussian noise",
     lambda eps, delta, k, seed: DPDataValuator(
         subspace=None, clip_norm=1.0, noise="iid", q=0.0, epsilon=eps,
         delta=delta, n_permutations=k, random_state=seed)),
    ("paper: full gradient, Y*(0.9)",
     "the seed paper's best setting (its Y* with q=0.9): correlated noise "
     "(running mean of a party's releases) and the first 90% of the "
     "permutations uncounted as burn-in",
     lambda eps, delta, k, seed: DPDataValuator(
         subspace=None, clip_norm=1.0, q=0.9, epsilon=eps, delta=delta,
         n_permutations=k, random_state=seed)),
    ("ours: public subspace",
     "DPDataValuator's defaults: each gradient projected on one public "
     "direction (from the validation set), then clipped and noised",
     lambda eps, delta, k, seed: DPDataValuator(
         epsilon=eps, delta=delta, n_permutations=k, random_state=seed)),
    ("ours: DPLabelQuality",
     "the private label-quality score: one noisy release per sample of its "
     "clipped margin under a model fitted on the validation set",
     lambda eps, delta, k, seed: DPLabelQuality(epsilon=eps, delta=delta,
                                                random_state=seed)),
)
def _versus_band(auc, limit, high, private):
    """One run's AUC against the limit on the expected AUC and the run band."""
    if not private:
        return "no privacy: no limit"
    if auc <= limit:
        return "below the limit"
    if auc <= high:
        return "above the limit, inside the band (chance)"
    return "ABOVE THE BAND (the best possible test: 2.5% of runs)"


def run(args, parser):
    """Run the demo on parsed ``args``; ``parser.error`` refuses what the
    parser cannot check (exit code 2, one line)."""
    try:  # refused before any work: the range the calibration supports
        gdp_mu(args.epsilon, args.delta)
    except ValueError as error:
        parser.error(f"argument --epsilon/--delta: {error}")

    data = load_noisy_classification(args.dataset, flip_fraction=args.flip_fraction,
                                     independent_flips=True,
                                     random_state=args.random_state)
    n_flipped, n_train = int(data.is_noisy.sum()), len(data.y_train)
    if not 0 < n_flipped < n_train:
        parser.error(
            f"argument --flip-fraction: {args.flip_fraction:g} flipped "
            f"{n_flipped} of the {n_train} training labels at --random-state "
            f"{args.random_state}; the AUC needs flipped and clean labels")
    limit = detection_auc_limit(args.epsilon, args.delta)
    low, high = detection_auc_band(args.epsilon, args.delta, n_flipped,
                                   n_train - n_flipped)
    print(f"{args.dataset}: {n_train} training samples (private), {n_flipped} "
          f"of their labels flipped (each independently with probability "
          f"{args.flip_fraction:g}), {len(data.y_val)} validation samples "
          f"(public, used without noise); epsilon={args.epsilon:g}, "
          f"delta={args.delta:g}, {args.n_permutations} permutations.")
    print("The first run after installing compiles the numba kernels (several "
          "seconds, once); later runs reuse the compiled code.")
    print()
    print("AUC: how well a low value picks out the flipped labels (ROC AUC: "
          "0.5 is chance, 1 is perfect).")
    print(f"Limit: at this budget no mechanism finds flipped labels with an "
          f"EXPECTED AUC (the mean over runs of fresh noise) above {limit:.3f}.")
    print(f"One run scatters around its mean: on these {n_flipped} flipped and "
          f"{n_train - n_flipped} clean labels, one run of the best possible test "
          f"lands in [{low:.3f}, {high:.3f}] 95% of the time. A private run above "
          f"{limit:.3f} but inside that band is chance, not a broken limit.")
    print("'of limit' = (AUC - 0.5) / (limit - 0.5): the share of the way from "
          "chance to the limit.")
    print("epsilon_: the privacy the fit spent (inf: no privacy).")
    print()
    print(f"  {'method':<32} {'AUC':>6} {'of limit':>9}  {'epsilon_':<8}  "
          "one run vs limit and band")
    report = None
    for label, _, make in RUNS:
        started = time.perf_counter()
        estimator = make(args.epsilon, args.delta, args.n_permutations,
                         args.random_state)
        try:
            estimator.fit(data.X_train, data.y_train, X_val=data.X_val,
                          y_val=data.y_val)
        except ValueError as error:  # past the noise sampler's reach
            if "out of reach of the noise sampler" not in str(error):
                raise
            reach = str(error).split("With these releases ")[-1].split(":")[0]
            print(f"  {label:<32} refused: {reach} (fewer --n-permutations "
                  "or a lower --epsilon)")
            continue
        auc = noisy_label_auc(estimator.values_, data.is_noisy)
        private = estimator.epsilon_ != float("inf")
        fraction = f"{(auc - 0.5) / (limit - 0.5):9.2f}" if private else ""
        print(f"  {label:<32} {auc:6.3f} {fraction:>9}  "
              f"{estimator.epsilon_:<8.3g}  {_versus_band(auc, limit, high, private)}"
              f"   ({time.perf_counter() - started:.1f} s)")
        sys.stdout.flush()
        if label.startswith("ours: public"):
            report = estimator.privacy_report_
    print()
    print("The methods:")
    for label, meaning, _ in RUNS:
        print(f"  {label}: {meaning}.")
    print()
    print("The noise is fresh in every run: benchmarks/quality.py averages "
          "seeds to estimate each method's expected AUC.")
    print("privacy report of the defaults:")
    print(json.dumps(report, indent=2))

    return 0
