"""``.. results-table:: NAME``: a table of committed benchmark results.

Renders ``benchmarks/tables.py``'s table NAME (quality, quality_by_dataset,
audit, audit_paths, mutations, cold_fit, joint, seed_paper, sampler_ab) when
the site is built, from the result lines under ``benchmarks/results/``, with
the files it read: the page cannot quote a figure that the results do not
hold. The README's quality
table is the same function's Markdown (tests/test_docs.py checks both).
"""

import importlib.util
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

TABLES_PY = Path(__file__).resolve().parents[2] / "benchmarks" / "tables.py"


def load_tables():
    spec = importlib.util.spec_from_file_location("skdpval_benchmark_tables", TABLES_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(text):
    """A table entry; ``code`` between backticks becomes a literal."""
    paragraph = nodes.paragraph()
    for i, part in enumerate(text.split("`")):
        if part:
            paragraph += nodes.literal(part, part) if i % 2 else nodes.Text(part)
    entry = nodes.entry()
    entry += paragraph
    return entry


class ResultsTable(Directive):
    required_arguments = 1

    def run(self):
        tables = load_tables()
        name = self.arguments[0]
        if name not in tables.TABLES:
            raise self.error(f"results-table: no table {name!r} in benchmarks/tables.py "
                             f"(one of {', '.join(tables.TABLES)})")
        table = tables.TABLES[name]()
        self.state.document.settings.record_dependencies.add(str(TABLES_PY))
        for name in [table["source"], *table.get("also", [])]:
            self.state.document.settings.record_dependencies.add(str(tables.RESULTS / name))

        width = len(table["header"])
        group = nodes.tgroup(cols=width)
        for _ in range(width):
            group += nodes.colspec(colwidth=1)
        head, body = nodes.thead(), nodes.tbody()
        row = nodes.row()
        for text in table["header"]:
            row += _cell(text)
        head += row
        for cells in table["rows"]:
            row = nodes.row()
            for text in cells:
                row += _cell(text)
            body += row
        group += head
        group += body
        node = nodes.table(classes=["results-table"])
        title = nodes.title("", "", nodes.Text("From "))
        for i, name in enumerate([table["source"], *table.get("also", [])]):
            caption = f"benchmarks/results/{name}"
            if i:
                title += nodes.Text(" and, for the cells marked rerun, ")
            title += nodes.literal(caption, caption)
        title += nodes.Text(", rendered when this page was built.")
        node += title
        node += group
        return [node]


def setup(app):
    app.add_directive("results-table", ResultsTable)
    return {"parallel_read_safe": True, "version": "1"}
