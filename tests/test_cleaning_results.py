"""The user guide's "When does private cleaning pay?" (doc/user_guide/cleaning.rst)
quotes benchmarks/results/cleaning.jsonl: every number in its table and
bullets is checked against the committed lines, so a rerun of
benchmarks/cleaning.py that moves a figure fails here until the page follows."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cleaning.jsonl"
FINALS = {"HistGradientBoosting": "HistGradientBoostingClassifier",
          "LogisticRegression": "LogisticRegression"}


@pytest.fixture(scope="module")
def cases():
    lines = [json.loads(line) for line in RESULTS.read_text().splitlines()]
    return [line for line in lines if not line.get("run")]


@pytest.fixture(scope="module")
def section():
    text = (ROOT / "doc" / "user_guide" / "cleaning.rst").read_text()
    start = text.index("When does private cleaning pay?\n---")
    return text[start:text.index("The public model: ", start)]


def case(cases, *, setting="large", flips, n_val=100, epsilon=3.0, public_model,
         final):
    found = [c for c in cases if c["setting"] == setting and c["flips"] == flips
             and c["n_val"] == n_val and c["epsilon"] == epsilon
             and c["public_model"] == public_model and c["final_model"] == final]
    assert len(found) == 1, (setting, flips, n_val, epsilon, public_model, final)
    return found[0]


def table_rows(section):
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 6
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_table_quotes_the_results(cases, section):
    for flips_cell, final, public_cell, *numbers, wins in table_rows(section):
        flips = "class1" if flips_cell.startswith("class-dependent") else "symmetric"
        setting = "small" if "breast_cancer" in flips_cell else "large"
        public_model = re.search(r'`"(\w+)"`', public_cell).group(1)
        line = case(cases, setting=setting, flips=flips, public_model=public_model,
                    final=FINALS[final])
        expected = [line[key] for key in ("noisy", "best_validation_only", "cleaned",
                                          "oracle")]
        assert [cell.strip("*") for cell in numbers] == [f"{x:.3f}" for x in expected]
        assert wins.split()[:3] == [str(line["seeds_cleaned_beats_both"]), "of",
                                    str(line["seeds"])]
        # "auto" is labelled with the public model it chose.
        chose_private = "private fit" in public_cell
        if public_model == "auto":
            assert line["private_fit_fraction"] == (1.0 if chose_private else 0.0)


def test_bullets_quote_the_results(cases, section):
    pays = {(n_val, eps): case(cases, flips="class1", n_val=n_val, epsilon=eps,
                               public_model="validation",
                               final="HistGradientBoostingClassifier")
            for n_val in (50, 100, 200) for eps in (1.0, 3.0)}
    at_3 = [pays[n_val, 3.0] for n_val in (50, 100, 200)]
    assert all(c["seeds_cleaned_beats_both"] == c["seeds"] for c in at_3)
    quoted = ("(" + " / ".join(f"{c['cleaned']:.3f}" for c in at_3)
              + f" against noisy {at_3[0]['noisy']:.3f} and")
    assert quoted in section
    assert ("validation only " + " / ".join(f"{c['best_validation_only']:.3f}"
                                            for c in at_3)) in section.replace("\n  ", " ")
    low, high = pays[50, 1.0], pays[200, 1.0]
    assert low["pays"] and not high["pays"]
    flat = " ".join(section.split())
    assert (f"({low['cleaned']:.3f} against {low['best_validation_only']:.3f})"
            in flat)
    assert (f"({high['best_validation_only']:.3f} against {high['cleaned']:.3f})"
            in flat)
    # Symmetric flips: within 0.014 below the noisy model, never a gain.
    symmetric = [c for c in cases if c["setting"] == "large" and c["flips"] == "symmetric"
                 and c["epsilon"] != "inf"]
    assert len(symmetric) == 24
    gaps = [c["cleaned_minus_noisy"] for c in symmetric]
    assert -0.0145 <= min(gaps) and max(gaps) <= 0.0005
    assert "within 0.014 below" in flat
    assert not any(c["pays"] for c in symmetric)
    # breast_cancer: no cleaned model beats the validation rows, noiseless included.
    small = [c for c in cases if c["setting"] == "small"]
    assert small and not any(c["pays"] for c in small)
    assert all(c["cleaned_minus_best_validation_only"] < 0 for c in small
               if c["n_val"] == 100)
    noiseless = case(cases, setting="small", flips="symmetric", epsilon="inf",
                     public_model="validation", final="LogisticRegression")
    assert f"even cleaning without noise ({noiseless['cleaned']:.3f})" in flat


@pytest.mark.parametrize("example", ["find_bad_labels/plot_cleaning_pays.py",
                                     "find_bad_labels/plot_private_cleaning.py"])
def test_examples_quote_the_results(cases, example):
    """Every three-decimal accuracy the examples' text quotes is a committed
    figure (their cells print their own run's numbers, not these). A loose
    check, unlike the user guide's: it catches a number found nowhere in the
    results, not one swapped for another committed figure."""
    quoted = set(re.findall(r"\b0\.\d{3}\b", (ROOT / "examples" / example).read_text()))
    assert quoted
    committed = {f"{value:.3f}" for line in cases for value in line.values()
                 if isinstance(value, float)}
    assert quoted <= committed, sorted(quoted - committed)
