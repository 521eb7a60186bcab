"""Print the README's quality tables from benchmarks/results/quality.jsonl.

    python benchmarks/tables.py

so that the README shows what the committed results say.
"""

import json
import os
from collections import defaultdict

RESULTS = os.path.join(os.path.dirname(__file__), "results", "quality.jsonl")
METHODS = ("paper", "defaults", "iid q=0", "label quality")
NAMES = {"paper": "paper's mechanism", "defaults": "`DPDataValuator()`",
         "iid q=0": "`DPDataValuator(noise=\"iid\")`",
         "label quality": "`DPLabelQuality()`"}


def main():
    rows = [json.loads(line) for line in open(RESULTS)]
    cells = defaultdict(list)
    no_dp = {}
    for row in rows:
        if row["case"] == "limit" and row["epsilon"] is not None:
            cells[row["method"], row["epsilon"]].append(row)
        elif row["case"] == "limit":
            no_dp.setdefault(row["method"], []).append(row["auc_mean"])
    epsilons = sorted({eps for _, eps in cells})
    print("| epsilon | limit | " + " | ".join(NAMES[m] for m in METHODS) + " |")
    print("|---" * (len(METHODS) + 2) + "|")
    for eps in epsilons:
        limit = cells[METHODS[0], eps][0]["limit"]
        entries = []
        for method in METHODS:
            group = cells[method, eps]
            auc = sum(r["auc_mean"] for r in group) / len(group)
            fraction = sum(r["limit_fraction"] for r in group) / len(group)
            entries.append(f"{auc:.3f} ({fraction:.2f})")
        print(f"| {eps:g} | {limit:.3f} | " + " | ".join(entries) + " |")
    print(f"| no DP | 1 | | {sum(no_dp['no DP']) / len(no_dp['no DP']):.3f} | | "
          f"{sum(no_dp['label quality no DP']) / len(no_dp['label quality no DP']):.3f} |")
    print()
    for eps in epsilons:
        print(f"epsilon {eps:g}: " + "; ".join(
            f"{r['dataset']} " + ", ".join(
                f"{m} {next(x for x in cells[m, eps] if x['dataset'] == r['dataset'])['auc_mean']:.3f}"
                for m in METHODS)
            for r in cells[METHODS[0], eps]))
    for row in rows:
        if row["case"] == "unscaled":
            print(f"unscaled, standardize={row['standardize']}: {row['auc_mean']:.3f}")


if __name__ == "__main__":
    main()
