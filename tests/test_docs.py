"""Every code example of the documentation pages runs (doctest of doc/**/*.rst).

The build (doc/check_gallery.py) checks that every Python code block of
those pages is written as a doctest, so that this test runs all of them.
"""

import doctest
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "doc"
SKIP_DIRS = {"_build", "auto_examples", "generated", "_templates", "_ext"}
PAGES = sorted(page for page in DOC.rglob("*.rst")
               if not SKIP_DIRS & set(page.relative_to(DOC).parts))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOC)))
def test_doc_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a snippet that writes a file writes it here
    text = page.read_text()
    test = doctest.DocTestParser().get_doctest(text, {}, page.name, str(page), 0)
    output = []
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=output.append)
    assert runner.failures == 0, "".join(output)


# --- The README and the site quote committed results, and link to no README.

import importlib.util  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402

ROOT = DOC.parent
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"
README_MAX_LINES = 250


def _tables():
    spec = importlib.util.spec_from_file_location("benchmark_tables",
                                                  ROOT / "benchmarks" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _committed_numbers(tables, text):
    """Every number of the committed result files that ``text`` names
    (``benchmarks/results/<file>``), as floats: a page's numbers must come
    from the results it cites."""
    found = set()
    for name in set(re.findall(r"benchmarks/results/([\w.]+\.(?:jsonl|txt))", text)):
        path = RESULTS / name
        if path.suffix == ".jsonl":
            found.update(float(x) for line in tables.read(name) for x in tables.numbers(line))
        else:
            found.update(float(x) for x in re.findall(r"\d+(?:\.\d+)?", path.read_text()))
    return found


# Decimal numbers that are not measurements, with the reason.
NOT_RESULTS = {
    "README.md": {"3.10": "the Python version required",
                  "1.0": "the default epsilon",
                  "0.5": "chance, in the limit fraction's formula"},
}


def _quoted_numbers(text):
    """Decimal numbers a page quotes in its prose and tables: code blocks,
    inline code and directive lines are set aside (parameters, not results)."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)          # Markdown blocks
    text = re.sub(r"``[^`]*``|`[^`]*`", "", text)                    # inline code
    text = "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith(".. "))
    return re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text)


def _matches(quoted, committed):
    digits = len(quoted.split(".")[1])
    return any(round(value, digits) == float(quoted) for value in committed)


def test_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, len(lines)


def test_readme_starts_with_the_two_ci_commands():
    """.ci/run runs the README's first two ```bash blocks: the main job, then
    the tests."""
    commands = re.findall(r"^```bash\n(.*)$", README.read_text(), flags=re.MULTILINE)[:2]
    assert "python -m skdpval" in commands[0]
    assert "pytest" in commands[1]


def test_readme_quality_table_is_generated_from_the_results():
    """The README's quality table is exactly benchmarks/tables.py's, which
    formats committed result lines: rerun the suite and the README must
    follow."""
    assert _tables().markdown("quality") in README.read_text()


@pytest.mark.parametrize("page", [README, DOC / "benchmarks.rst"],
                         ids=lambda page: page.name)
def test_quoted_numbers_are_committed_results(page):
    """Every decimal number the README and the benchmarks page quote (outside
    code) is a value of a committed result line of a file the page cites, at
    the quoted precision (or a listed non-measurement)."""
    tables = _tables()
    text = page.read_text()
    committed = _committed_numbers(tables, text)
    allowed = NOT_RESULTS.get(page.name, {})
    quoted = _quoted_numbers(text)
    missing = sorted({q for q in quoted
                      if q not in allowed and not _matches(q, committed)})
    assert not missing, f"{page.name} quotes numbers found in no result line: {missing}"


def test_generated_tables_quote_only_committed_results():
    """Each table of the benchmarks page (doc/_ext/results_tables.py renders
    benchmarks/tables.py's tables) holds only values of its own source file."""
    tables = _tables()
    for name, make in tables.TABLES.items():
        table = make()
        assert table["rows"], name
        path = RESULTS / table["source"]
        if path.suffix == ".jsonl":
            committed = {float(x) for name in [table["source"], *table.get("also", [])]
                         for line in tables.read(name) for x in tables.numbers(line)}
        else:
            committed = {float(x) for x in re.findall(r"\d+(?:\.\d+)?", path.read_text())}
        cells = " ".join(" ".join(row) for row in table["rows"])
        quoted = re.findall(r"(?<![\w.])-?\d+\.\d+(?![\w.])", cells)
        missing = sorted({q for q in quoted if not _matches(q, committed)})
        assert not missing, (name, missing)


def test_every_table_of_the_benchmarks_page_exists():
    names = re.findall(r"^\.\. results-table:: (\S+)", "\n".join(
        page.read_text() for page in PAGES), flags=re.MULTILINE)
    assert "quality" in names and "audit" in names and "mutations" in names
    assert set(names) <= set(_tables().TABLES)


def test_no_page_links_to_the_readme():
    """The README is not part of the site: pages, gallery scripts and the
    changelog send readers to pages, not to it."""
    sources = PAGES + sorted((ROOT / "examples").rglob("*.py")) + sorted(
        (ROOT / "examples").rglob("README.txt"))
    offenders = [str(path.relative_to(ROOT)) for path in sources
                 if re.search(r"README(?!\.txt)", path.read_text())]
    assert not offenders, offenders


def test_the_pages_the_site_promises_exist():
    for page in ("getting_started", "cli", "troubleshooting", "glossary", "references",
                 "benchmarks", "changelog", "user_guide/cleaning",
                 "user_guide/value_data", "user_guide/groups_federated",
                 "user_guide/privacy_model", "user_guide/choosing_epsilon",
                 "user_guide/reading_values", "user_guide/pipelines",
                 "user_guide/dask", "user_guide/speed"):
        assert (DOC / f"{page}.rst").exists(), page
    glossary = (DOC / "glossary.rst").read_text()
    for term in ("party", "release", "walk", "zero-out", "mu-GDP", "limit fraction",
                 "billboard", "wave"):
        assert f"\n   {term}\n" in glossary, term


def test_the_command_line_reference_renders_every_command():
    """doc/_ext/cli_reference.py finds the parsers and prints each command's
    --help (the build renders the same)."""
    import sys
    sys.path.insert(0, str(DOC / "_ext"))
    try:
        import cli_reference
    finally:
        sys.path.remove(str(DOC / "_ext"))
    texts = dict(cli_reference.help_texts("skdpval.cli"))
    names = [cli_reference._name(prog) for prog in texts]
    assert names[0] == "skdpval" and "skdpval value" in names, names
    value_help = next(text for prog, text in texts.items() if prog.endswith("value"))
    assert "--target" in value_help and "--epsilon" in value_help
