"""Check a built gallery: every example ran, drew a figure, and took under a limit.

Usage: ``python doc/check_gallery.py [--max-seconds 60]`` after
``sphinx-build doc doc/_build``. Reads what sphinx-gallery wrote in
``doc/auto_examples``: the page of each ``examples/plot_*.py``, its first
figure, and the running time stated on the page. Exits 1 with one line per
problem, else prints one line per example.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIME = re.compile(r"\*\*Total running time of the script:\*\*\s*\((\d+) minutes ([\d.]+) seconds\)")


def check(max_seconds):
    gallery = ROOT / "doc" / "auto_examples"
    problems, lines = [], []
    examples = sorted((ROOT / "examples").glob("plot_*.py"))
    if not examples:
        problems.append("no examples/plot_*.py found")
    for example in examples:
        page = gallery / f"{example.stem}.rst"
        if not page.exists():
            problems.append(f"{example.name}: no page {page.relative_to(ROOT)} (did it run?)")
            continue
        figures = sorted((gallery / "images").glob(f"sphx_glr_{example.stem}_*.png"))
        if not figures:
            problems.append(f"{example.name}: ran but drew no figure")
        match = TIME.search(page.read_text())
        if match is None:
            problems.append(f"{example.name}: the page states no running time")
            continue
        seconds = 60 * int(match.group(1)) + float(match.group(2))
        if seconds > max_seconds:
            problems.append(f"{example.name}: took {seconds:.1f} s, more than {max_seconds:g} s")
        lines.append(f"{example.name}: {seconds:5.1f} s, {len(figures)} figure(s)")
    print("\n".join(lines))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    problems = check(args.max_seconds)
    for problem in problems:
        print("gallery check failed:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
