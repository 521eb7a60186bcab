"""``.. auc-limit-table::``: the noisy-label AUC ceiling of each epsilon, computed.

Options: ``:epsilons:`` (space-separated), ``:delta:``, ``:permutations:``
(the k of the noise columns). Every number comes from
:mod:`skdpval.privacy._accounting` at build time, so the table cannot drift from
the code.
"""

import numpy as np
from docutils.parsers.rst import Directive, directives
from docutils.statemachine import StringList
from docutils import nodes
from scipy.special import ndtr

from skdpval.privacy._accounting import gdp_mu, noisy_label_auc_limit


def table_rows(epsilons, delta, permutations):
    """Header and rows: eps, mu, Phi(sqrt(2) mu), Phi(2 mu), s / C for each k."""
    header = ["epsilon", "mu (per party)", "expected AUC limit Phi(sqrt(2) mu)",
              "exact flip count: Phi(2 mu)"]
    header += [f"noise std / C per release, k = {k}" for k in permutations]
    rows = []
    for epsilon in epsilons:
        mu = gdp_mu(epsilon, delta)
        rows.append([f"{epsilon:g}", f"{mu:.3f}", f"{noisy_label_auc_limit(mu):.3f}",
                     f"{ndtr(2 * mu):.3f}"]
                    + [f"{np.sqrt(k) / mu:.1f}" for k in permutations])
    return header, rows


class AUCLimitTable(Directive):
    option_spec = {"epsilons": directives.unchanged,
                   "delta": directives.unchanged,
                   "permutations": directives.unchanged}

    def run(self):
        epsilons = [float(e) for e in self.options.get(
            "epsilons", "0.5 1 2 3 5 10").split()]
        delta = float(self.options.get("delta", "5e-5"))
        permutations = [int(k) for k in self.options.get(
            "permutations", "200 1000").split()]
        header, rows = table_rows(epsilons, delta, permutations)
        lines = [".. list-table::", "   :header-rows: 1", ""]
        for row in [header] + rows:
            lines.append(f"   * - {row[0]}")
            lines.extend(f"     - {cell}" for cell in row[1:])
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="auc-limit-table"),
                                self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("auc-limit-table", AUCLimitTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
