"""The tables that the README and the documentation quote, from the committed
results in benchmarks/results/.

    python benchmarks/tables.py            # every table, as Markdown
    python benchmarks/tables.py quality    # one table

Each table only formats values of committed result lines: no mean, ratio or
difference is computed here, so every number it prints can be found in its
source file (tests/test_docs.py checks that, and that the README's quality
table is exactly ``markdown("quality")``). The documentation renders the same
tables when the site is built (doc/_ext/results_tables.py).
"""

import json
import re
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"

# The limit suite (benchmarks/quality.py) on this release's code.
QUALITY = "quality_limit_final.jsonl"
QUALITY_METHODS = (
    ("paper", "the seed paper's mechanism"),
    ("defaults", "`DPDataValuator()`"),
    ("iid q=0", "`DPDataValuator(noise=\"iid\")`"),
    ("label quality", "`DPLabelQuality()`"),
)
# Cells the limit suite recorded as refused, filled by a later run of the same
# suite (issue 45: with the exact sampler the seed paper's mechanism runs at
# epsilon 10); such a cell says "rerun" and the table names both files.
QUALITY_RERUNS = ("quality_limit_paper_eps10.jsonl",)


def read(name):
    """The result lines of ``benchmarks/results/<name>`` (JSON lines only)."""
    lines = []
    for line in (RESULTS / name).read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


def _fmt(value, digits):
    return "" if value is None else f"{value:.{digits}f}"


def _sig(value, digits=3):
    """``digits`` significant digits, never in exponent notation."""
    return np.format_float_positional(value, precision=digits, unique=False,
                                      fractional=False, trim="-")


def quality():
    """Mean limit fraction over the four data sets of the limit suite."""
    lines = read(QUALITY)
    summary = {(r["method"], r["epsilon"]): r for r in lines if r["case"] == "summary"}
    refused = {(r["method"], r["epsilon"]) for r in lines
               if r["case"] == "limit" and "refused" in r}
    rerun = {(r["method"], r["epsilon"]): r for name in QUALITY_RERUNS
             for r in read(name) if r.get("case") == "summary"}
    epsilons = sorted({eps for _, eps in summary})
    rows = []
    for eps in epsilons:
        limit = next(r["limit"] for (m, e), r in summary.items() if e == eps)
        cells = [f"{eps:g}", _fmt(limit, 3)]
        for method, _ in QUALITY_METHODS:
            if (method, eps) in summary:
                cells.append(_fmt(summary[method, eps]["mean_limit_fraction"], 2))
            elif (method, eps) in rerun:
                cells.append(_fmt(rerun[method, eps]["mean_limit_fraction"], 2) + " (rerun)")
            elif (method, eps) in refused:
                cells.append("refused")
            else:
                cells.append("")
        rows.append(cells)
    header = ["epsilon", "limit on the expected AUC"] + [name for _, name in QUALITY_METHODS]
    return {"source": QUALITY, "also": list(QUALITY_RERUNS), "header": header, "rows": rows}


def quality_by_dataset():
    """AUC (limit fraction) of each method on each data set of the limit suite."""
    lines = [r for r in read(QUALITY) if r["case"] == "limit"]
    reruns = [r for name in QUALITY_RERUNS for r in read(name) if r.get("case") == "limit"]
    datasets = list(dict.fromkeys(r["dataset"] for r in lines))
    rows = []
    for eps in (1.0, 3.0, 10.0, None):
        for dataset in datasets:
            cells = ["no DP" if eps is None else f"{eps:g}", dataset]
            for method, _ in QUALITY_METHODS:
                if eps is None:
                    method = {"defaults": "no DP",
                              "label quality": "label quality no DP"}.get(method)
                found = [r for r in lines if r["dataset"] == dataset
                         and r["method"] == method and r["epsilon"] == eps]
                again = [r for r in reruns if r["dataset"] == dataset
                         and r["method"] == method and r["epsilon"] == eps]
                if found and "refused" in found[0] and again:
                    cells.append(f"{again[0]['auc_mean']:.3f} "
                                 f"({again[0]['limit_fraction']:.2f}, rerun)")
                elif not found:
                    cells.append("")
                elif "refused" in found[0]:
                    cells.append("refused")
                elif "limit_fraction" in found[0]:
                    cells.append(f"{found[0]['auc_mean']:.3f} "
                                 f"({found[0]['limit_fraction']:.2f})")
                else:
                    cells.append(f"{found[0]['auc_mean']:.3f}")
            rows.append(cells)
    header = ["epsilon", "data set"] + [name for _, name in QUALITY_METHODS]
    return {"source": QUALITY, "also": list(QUALITY_RERUNS), "header": header, "rows": rows}


def audit():
    """Lower bounds of the end-to-end audits, at the claimed and halved noise."""
    lines = [r for r in read("audit.jsonl") if "case" in r]
    rows = []
    for r in lines:
        rows.append([r["case"], f"{r['noise']:g}", str(r.get("n_fits", "")),
                     _fmt(r.get("mu_lower"), 3), _fmt(r.get("claimed_mu"), 3),
                     _fmt(r.get("epsilon_lower"), 3), _fmt(r.get("claimed_epsilon"), 3),
                     _fmt(r.get("measured_over_claimed_scale"), 3),
                     "fails" if r["fails"] else "passes"])
    header = ["audit", "noise (x claimed)", "fits per neighbour", "mu lower bound",
              "mu claimed (replace-one)", "epsilon lower bound", "epsilon claimed",
              "noise scale measured / claimed", "audit"]
    return {"source": "audit.jsonl", "header": header, "rows": rows}


def audit_paths():
    """The audits of further code paths (benchmarks/audit_paths.py)."""
    lines = [r for r in read("audit_paths.jsonl") if "case" in r]
    rows = [[r["case"], f"{r['noise']:g}", str(r["n_fits"]), _fmt(r["mu_lower"], 3),
             _fmt(r["claimed_mu"], 3), "fails" if r["fails"] else "passes"]
            for r in lines]
    header = ["audit", "noise (x claimed)", "fits per neighbour", "mu lower bound",
              "mu claimed (replace-one)", "audit"]
    return {"source": "audit_paths.jsonl", "header": header, "rows": rows}


MUTATION = re.compile(r"^=== noise x(?P<factor>[\d.]+) at the (?P<site>.+?) draw site")
COUNTS = re.compile(r"^(?:(?P<failed>\d+) failed)?(?:, )?(?:(?P<passed>\d+) passed)?")


def mutations():
    """benchmarks/mutations.sh: noise scaled down at each draw site."""
    rows, current = [], None
    for line in (RESULTS / "mutations.txt").read_text().splitlines():
        head = MUTATION.match(line)
        if head:
            current = [head["site"], f"x{head['factor']}"]
            continue
        counts = COUNTS.match(line)
        if current and counts and (counts["failed"] or counts["passed"]) and " in " in line:
            failed = counts["failed"] or "0"
            rows.append(current + [failed, counts["passed"] or "0",
                                   "caught" if failed != "0" else "NOT CAUGHT"])
            current = None
    header = ["draw site", "noise", "checks failed", "checks passed", "mutation"]
    return {"source": "mutations.txt", "header": header, "rows": rows}


def cold_fit():
    """The default first fit in a fresh process, two commits alternating."""
    lines = [r for r in read("cold_fit.jsonl") if r["case"] == "cold_fit_ab"]
    rows = [[r["A"], r["B"], str(r["pairs"]),
             _fmt(r["median_first_fit_seconds"]["A"], 3),
             _fmt(r["median_first_fit_seconds"]["B"], 3),
             _fmt(r["median_ratio_B_over_A"], 3),
             f"{_fmt(r['load_1min_range'][0], 2)}-{_fmt(r['load_1min_range'][1], 2)}"]
            for r in lines]
    header = ["commit A", "commit B", "pairs", "first fit A, s (median)",
              "first fit B, s (median)", "ratio B / A (median)", "load (1 min)"]
    return {"source": "cold_fit.jsonl", "header": header, "rows": rows}


def joint():
    """Joint DP against DP-TKNN-Shapley on 2dplanes (benchmarks/joint.py)."""
    lines = read("quality_joint.jsonl")
    rows = []
    for r in lines:
        if r["case"] == "anchor":
            rows.append(["DP-TKNN-Shapley (its paper's code, as reported)", "joint",
                         f"{r['epsilon']:g}",
                         f"{_fmt(r['dp_tknn_shapley_auroc'], 3)} +- "
                         f"{_fmt(r['dp_tknn_shapley_auroc_std'], 3)}"])
            continue
        eps = r["epsilon"]
        rows.append([r["method"] + (f" ({r['estimator']})" if r.get("estimator") else ""),
                     r.get("threat_model", r["case"]),
                     "no noise" if eps is None else f"{eps:g}",
                     f"{_fmt(r['auc_mean'], 3)} +- {_fmt(r['auc_std'], 3)}"])
    header = ["method", "threat model", "epsilon", "AUROC of low values for flipped labels"]
    return {"source": "quality_joint.jsonl", "header": header, "rows": rows}


SEED_PAPER = "quality_seed_paper.jsonl"
SEED_PAPER_METHODS = ("no DP", "i.i.d.", "X*", "Y*(q=0.5)", "Y*(q=0.9)")


def seed_paper():
    """The seed paper's noisy-label experiment (benchmarks/quality.py --suite
    seed_paper) beside what the paper reports (lines ``paper_reported``)."""
    lines = read(SEED_PAPER)
    ours = [r for r in lines if r.get("case") == "seed_paper"]
    reported = [r for r in lines if r.get("case") == "paper_reported"]
    tasks = list(dict.fromkeys(r["task"] for r in reported))
    datasets = list(dict.fromkeys(r["dataset"] for r in ours))
    rows = []
    for eps in (0.1, 1.0, 10.0, None):
        for method in SEED_PAPER_METHODS:
            if (eps is None) != (method == "no DP"):
                continue
            cells = ["no DP" if eps is None else f"{eps:g}", method]
            for task in tasks:
                found = [r for r in reported if r["task"] == task and r["method"] == method
                         and r["epsilon"] == eps]
                if not found:
                    cells.append("")
                elif "auc" in found[0]:
                    cells.append(f"{found[0]['auc']:.3f} ({found[0]['std_error']:.3f})")
                else:
                    cells.append(found[0]["effect"])
            for dataset in datasets:
                found = [r for r in ours if r["dataset"] == dataset and r["method"] == method
                         and r["epsilon"] == eps]
                cells.append(f"{found[0]['auc_mean']:.3f} ({found[0]['auc_std']:.3f})"
                             if found else "")
            rows.append(cells)
    header = (["epsilon", "noise"] + [f"the paper: {task}" for task in tasks]
              + [f"ours: {dataset}" for dataset in datasets])
    return {"source": SEED_PAPER, "header": header, "rows": rows}


SAMPLER_AB = "sampler_ab.jsonl"


def sampler_ab():
    """The rounded-Gaussian sampler against the one it replaced, in one run
    (benchmarks/sampler_ab.py): medians and ratios as the script wrote them."""
    lines = read(SAMPLER_AB)
    rows = []
    for r in lines:
        if r.get("case") == "sampler":
            rows.append([f"table, sigma = {r['sigma']:g}",
                         f"build {_sig(r['build_s_old'])} s",
                         f"build {_sig(r['build_s_new'])} s",
                         _fmt(r["build"]["ratio_medians"], 3),
                         _fmt(r["build"]["ratio_pairs_median"], 3),
                         _fmt(r["build"]["ratio_fastest"], 3),
                         f"{r['load_before']:g}-{r['load_after']:g}"])
            rows.append([f"draws, sigma = {r['sigma']:g}",
                         f"{_sig(r['ns_per_draw_old'])} ns a draw",
                         f"{_sig(r['ns_per_draw_new'])} ns a draw",
                         _fmt(r["draw"]["ratio_medians"], 3),
                         _fmt(r["draw"]["ratio_pairs_median"], 3),
                         _fmt(r["draw"]["ratio_fastest"], 3),
                         f"{r['load_before']:g}-{r['load_after']:g}"])
        elif r.get("case") == "walk":
            rows.append([f"{r['name']} ({len(r['seconds_old'])} pairs)",
                         f"{_sig(r['ns_per_step_old'])} ns a step",
                         f"{_sig(r['ns_per_step_new'])} ns a step",
                         _fmt(r["walk"]["ratio_medians"], 3),
                         _fmt(r["walk"]["ratio_pairs_median"], 3),
                         _fmt(r["walk"]["ratio_fastest"], 3),
                         f"{r['load_before']:g}-{r['load_after']:g}"])
    header = ["case", "old sampler (median)", "exact sampler (median)",
              "ratio of the medians", "median of the pairs' ratios",
              "ratio of the fastest runs", "load (1 min)"]
    return {"source": SAMPLER_AB, "header": header, "rows": rows}


TABLES = {
    "quality": quality,
    "quality_by_dataset": quality_by_dataset,
    "audit": audit,
    "audit_paths": audit_paths,
    "mutations": mutations,
    "cold_fit": cold_fit,
    "joint": joint,
    "seed_paper": seed_paper,
    "sampler_ab": sampler_ab,
}


def markdown(name):
    table = TABLES[name]()
    lines = ["| " + " | ".join(table["header"]) + " |",
             "|" + "---|" * len(table["header"])]
    lines += ["| " + " | ".join(row) + " |" for row in table["rows"]]
    return "\n".join(lines)


def numbers(value):
    """Every number in a result line (nested lists and dicts too)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from numbers(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from numbers(item)
    elif isinstance(value, str):
        for match in re.findall(r"-?\d+(?:\.\d+)?", value):
            yield float(match)


def main(argv):
    for name in argv or TABLES:
        print(f"{name} (benchmarks/results/{TABLES[name]()['source']}):")
        print(markdown(name))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
