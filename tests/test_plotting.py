"""Plot helpers draw what they are given (needs the plot extra's matplotlib)."""

import matplotlib
import numpy as np

from skdpval.plotting import plot_auc_vs_budget, plot_removal_curves

matplotlib.use("Agg")


def test_curves_are_drawn_with_their_means():
    ax = plot_removal_curves([0.0, 0.5], {"a": [0.9, 0.7],
                                          "b": [[0.9, 0.8], [0.7, 0.6]]})
    lines = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    np.testing.assert_allclose(lines["a"], [0.9, 0.7])
    np.testing.assert_allclose(lines["b"], [0.8, 0.7])
    ax = plot_auc_vs_budget([1, 2, 3], {"x": [0.5, 0.6, 0.7]}, chance_level=None)
    assert [line.get_label() for line in ax.get_lines()] == ["x"]
