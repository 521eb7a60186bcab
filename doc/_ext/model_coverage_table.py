"""``.. model-coverage-table::``: every linear model of scikit-learn, supported or not.

Rows come from the registry ``skdpval.families.registered()`` at build time, and
every estimator of ``sklearn.linear_model`` and ``sklearn.svm`` appears
(the coverage test fails when one is in neither list), so the table cannot
drift from the code. With ``:results:`` (a JSON-lines file of
benchmarks/models.py, relative to the docs' source directory) it adds the
measured AUCs of finding corrupted labels or targets.
"""

import json
import warnings
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.statemachine import StringList
from sklearn.utils import all_estimators

from skdpval.families import Refused, registered


def load_results(path):
    """``{(estimator, method): (auc_mean, auc_std, seeds)}`` from benchmarks/models.py."""
    results = {}
    for line in Path(path).read_text().splitlines():
        case = json.loads(line)
        if case.get("case") == "models" and case["auc_mean"] is not None:
            results[case["estimator"], case["method"]] = (
                case["auc_mean"], case["auc_std"], case["seeds"])
    return results


def table_rows(results):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated PA classes
        found = sorted((cls.__module__.split(".")[1], name, cls)
                       for name, cls in all_estimators()
                       if cls.__module__.startswith(("sklearn.linear_model.",
                                                     "sklearn.svm.",
                                                     "sklearn.neural_network.")))
    methods = ["no noise", "eps 3", "clean-model AUC"]
    header = ["Estimator", "Walked objective (per sample), or why it is refused"]
    if results is not None:
        header += ["AUC, no noise", "AUC, eps 3", "clean-model AUC"]
    rows = []
    registry = registered()
    for module, name, cls in found:
        entry = registry.get(cls)
        if entry is None:
            text = "not in the registry (the coverage test fails)"
        elif isinstance(entry, Refused):
            text = f"**refused**: {entry.reason}. Closest: {entry.closest}."
        else:
            text = entry.describe(cls)
        row = [f"``{module}.{name}``", text]
        if results is not None:
            for method in methods:
                value = results.get((name, method))
                row.append("" if value is None else f"{value[0]:.3f}")
        rows.append(row)
    return header, rows


class ModelCoverageTable(Directive):
    option_spec = {"results": directives.unchanged}

    def run(self):
        results = None
        if "results" in self.options:
            source = Path(self.state.document.settings.env.srcdir)
            results = load_results(source / self.options["results"])
        header, rows = table_rows(results)
        lines = [".. list-table::", "   :header-rows: 1",
                 f"   :widths: 20 50{' 10 10 10' if results is not None else ''}", ""]
        for row in [header] + rows:
            lines.append(f"   * - {row[0]}")
            lines.extend(f"     - {cell}" for cell in row[1:])
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="model-coverage-table"),
                                self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("model-coverage-table", ModelCoverageTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
