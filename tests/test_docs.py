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
