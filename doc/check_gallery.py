"""Check a built documentation: gallery, API pages, user guide, code blocks.

Usage: ``python doc/check_gallery.py [--max-seconds 60]`` after
``sphinx-build doc doc/_build``. Checks that

- every ``examples/**/plot_*.py`` ran, drew a figure and took under the limit
  (what sphinx-gallery wrote in ``doc/auto_examples``);
- every estimator's API page (``doc/_build/generated``) documents ``fit``
  and names ``X_val``;
- every user-guide page (``doc/user_guide/*.rst`` but its index, and
  ``doc/workflow.rst``) has a figure (``figure``, ``image`` or ``plot``
  directive) that the build rendered;
- every Python code block of the pages is a doctest (``>>>``), so that
  ``tests/test_docs.py`` runs it in the test suite, or a ``plot`` directive,
  which the build itself ran. Other blocks must say their language
  (``bash``, ``text``...).

Exits 1 with one line per problem, else prints one line per check.
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
    examples = sorted((ROOT / "examples").rglob("plot_*.py"))
    if not examples:
        problems.append("no examples/**/plot_*.py found")
    for example in examples:
        # examples/<section>/plot_x.py -> doc/auto_examples/<section>/plot_x.rst
        section = gallery / example.parent.relative_to(ROOT / "examples")
        page = section / f"{example.stem}.rst"
        if not page.exists():
            problems.append(f"{example.name}: no page {page.relative_to(ROOT)} (did it run?)")
            continue
        figures = sorted((section / "images").glob(f"sphx_glr_{example.stem}_*.png"))
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


DOC = ROOT / "doc"
BUILD = DOC / "_build"
SKIP_DIRS = {"_build", "auto_examples", "generated", "_templates", "_ext"}
FIGURE = re.compile(r"^\.\. (figure|image|plot)::", re.MULTILINE)
# A block's opening: a directive with its language, or a paragraph ending "::".
BLOCK = re.compile(r"^(?P<indent> *)(\.\. (?:code-block|code|sourcecode)::\s*(?P<lang>\S*)"
                   r"|(?!\.\. ).*::)\s*$")
NOT_PYTHON = {"bash", "console", "shell", "sh", "text", "none", "toml", "yaml", "json"}


def _pages():
    return sorted(page for page in DOC.rglob("*.rst")
                  if not SKIP_DIRS & set(page.relative_to(DOC).parts))


def _blocks(text):
    """``(line number, language, body)`` of each literal block of a page."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        match = BLOCK.match(line)
        if match is None or line.lstrip().startswith(".. math::"):
            continue
        if line.lstrip().startswith(".. ") and match.group("lang") is None:
            continue  # another directive ending in "::" (e.g. "..  plot::")
        indent, body = len(match.group("indent")), []
        for following in lines[number + 1:]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        language = match.group("lang")
        body = [b for b in body if not b.strip().startswith(":")]  # options
        yield number + 1, ("python" if language in (None, "") else language), \
            "\n".join(body)


def check_code_blocks():
    problems, n_blocks = [], 0
    for page in _pages():
        for number, language, body in _blocks(page.read_text()):
            if not body.strip():
                continue
            n_blocks += 1
            where = f"{page.relative_to(ROOT)}:{number}"
            if language in NOT_PYTHON:
                continue
            if language not in ("python", "pycon", "python3"):
                problems.append(f"{where}: code block in {language!r}: say bash or "
                                "text, or write Python as a doctest")
            elif ">>>" not in body:
                problems.append(f"{where}: a Python block that is not a doctest "
                                "(write it with >>> so tests/test_docs.py runs it)")
    return problems, f"{n_blocks} code blocks: Python ones are all doctests"


def check_user_guide_figures():
    problems = []
    pages = [page for page in sorted((DOC / "user_guide").glob("*.rst"))
             if page.name != "index.rst"] + [DOC / "workflow.rst"]
    for page in pages:
        relative = page.relative_to(DOC).with_suffix(".html")
        if not FIGURE.search(page.read_text()):
            problems.append(f"{page.relative_to(ROOT)}: no figure")
            continue
        html = BUILD / relative
        if html.exists() and "<img" not in html.read_text():
            problems.append(f"{relative}: the built page shows no image")
    return problems, f"{len(pages)} user-guide pages, each with a figure"


def check_api_pages():
    sys.path.insert(0, str(ROOT))  # this checkout's package, as doc/conf.py
    import skdpval
    from sklearn.base import BaseEstimator

    problems, names = [], [
        name for name in skdpval.__all__
        if isinstance(getattr(skdpval, name), type)
        and issubclass(getattr(skdpval, name), BaseEstimator)]
    for name in names:
        page = BUILD / "generated" / f"skdpval.{name}.html"
        if not page.exists():
            problems.append(f"{name}: no API page {page.relative_to(ROOT)}")
            continue
        html = page.read_text()
        if f'id="skdpval.{name}.fit"' not in html:
            problems.append(f"{name}: its API page does not document fit")
        if "X_val" not in html:
            problems.append(f"{name}: its API page never names X_val")
    return problems, f"{len(names)} estimator API pages document fit and X_val"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    problems = check(args.max_seconds)
    for extra_check in (check_api_pages, check_user_guide_figures, check_code_blocks):
        found, summary = extra_check()
        problems += found
        if not found:
            print(summary)
    for problem in problems:
        print("gallery check failed:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
