"""Plot helpers draw what they are given (needs the plot extra's matplotlib)."""

import matplotlib
import numpy as np
import pytest

from skdpval.plotting import plot_auc_vs_budget, plot_removal_curves, plot_values

matplotlib.use("Agg")


def test_curves_are_drawn_with_their_means():
    ax = plot_removal_curves([0.0, 0.5], {"a": [0.9, 0.7],
                                          "b": [[0.9, 0.8], [0.7, 0.6]]})
    lines = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    np.testing.assert_allclose(lines["a"], [0.9, 0.7])
    np.testing.assert_allclose(lines["b"], [0.8, 0.7])
    ax = plot_auc_vs_budget([1, 2, 3], {"x": [0.5, 0.6, 0.7]}, chance_level=None)
    assert [line.get_label() for line in ax.get_lines()] == ["x"]


class _Values:
    """A fitted valuator as plot_values reads it."""

    def __init__(self, values, stderr=None):
        self.values_ = np.asarray(values, dtype=float)
        if stderr is not None:
            self.values_stderr_ = np.asarray(stderr, dtype=float)


def test_plot_values_sorts_draws_error_bars_and_leaves_held_out_rows_out():
    valuator = _Values([0.3, np.nan, -0.1, 0.2, np.nan], stderr=[0.01, np.nan, 0.02, 0.03, np.nan])
    mark = np.array([False, False, True, False, False])
    ax = plot_values(valuator, mark=mark, mark_label="flipped", interval=2.0)
    series = {container.get_label(): container for container in ax.containers}
    clean, flipped = series["value"], series["flipped"]
    np.testing.assert_allclose(clean.lines[0].get_ydata(), [0.2, 0.3])
    np.testing.assert_allclose(clean.lines[0].get_xdata(), [1, 2])
    np.testing.assert_allclose(flipped.lines[0].get_ydata(), [-0.1])
    # error bars span value +- 2 stderr
    segments = clean.lines[2][0].get_segments()
    np.testing.assert_allclose([s[:, 1] for s in segments], [[0.14, 0.26], [0.28, 0.32]])
    # and a band, its median half-width in the legend
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "+- 2 std. error (median 0.04)" in legend
    # Held-out rows (NaN) are not drawn at all, and the legend says so.
    drawn_x = np.concatenate([c.lines[0].get_xdata() for c in ax.containers])
    assert sorted(drawn_x) == [0, 1, 2]
    assert "2 held out: not valued, not shown" in legend
    assert "2 std. error" in ax.get_ylabel()


def _fitted_like_breast_cancer(n=300, n_held_out=60, seed=0, skew=0):
    rng = np.random.default_rng(seed)
    values = rng.normal(0.0, 2e-3, size=n) + skew * rng.exponential(4e-3, size=n)
    values[rng.choice(n, n_held_out, replace=False)] = np.nan
    return _Values(values, stderr=np.full(n, 4e-5)), rng.random(n) < 0.3


def test_plot_values_saved_plainly_keeps_its_labels_inside_the_figure(tmp_path):
    valuator, mark = _fitted_like_breast_cancer()
    ax = plot_values(valuator, mark=mark, mark_label="flipped")
    figure = ax.figure
    figure.savefig(tmp_path / "values.png", bbox_inches=None)
    renderer = figure.canvas.get_renderer()
    inside = figure.bbox.padded(-1)  # within a pixel of the edge
    tight = ax.get_tightbbox(renderer)  # axes, tick labels, axis labels, legend
    assert (tight.x0 >= inside.x0 - 1 and tight.y0 >= inside.y0 - 1
            and tight.x1 <= inside.x1 + 1 and tight.y1 <= inside.y1 + 1), (
        tight, figure.bbox)
    for label in (ax.xaxis.label, ax.yaxis.label):
        box = label.get_window_extent(renderer)
        assert figure.bbox.contains(box.x0, box.y0) and figure.bbox.contains(
            box.x1, box.y1), label.get_text()


@pytest.mark.parametrize("skew", [0, 1, -1])
def test_plot_values_legend_covers_no_point(skew):
    valuator, mark = _fitted_like_breast_cancer(skew=skew)
    ax = plot_values(valuator, mark=mark, mark_label="flipped")
    ax.figure.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    for container in ax.containers:
        points = ax.transData.transform(np.column_stack(
            [container.lines[0].get_xdata(), container.lines[0].get_ydata()]))
        covered = ((points[:, 0] >= legend.x0) & (points[:, 0] <= legend.x1)
                   & (points[:, 1] >= legend.y0) & (points[:, 1] <= legend.y1))
        assert not covered.any(), container.get_label()


def test_plot_values_without_stderr_draws_points_only():
    ax = plot_values(_Values([0.5, -0.5, 0.0]))
    (series,) = ax.containers
    np.testing.assert_allclose(series.lines[0].get_ydata(), [-0.5, 0.0, 0.5])
    assert ax.get_ylabel() == "value"


def test_plot_values_with_nan_stderr_does_not_claim_error_bars():
    """Below two counted permutations values_stderr_ is NaN: no bars to label."""
    ax = plot_values(_Values([0.5, -0.5, np.nan], stderr=[np.nan] * 3))
    assert ax.get_ylabel() == "value"


def test_plot_values_checks_the_mark():
    with pytest.raises(ValueError, match="mark must have one entry per value"):
        plot_values(_Values([0.5, -0.5]), mark=[True])


def test_plot_values_checks_the_valuator_and_the_interval():
    from sklearn.exceptions import NotFittedError

    from skdpval import DPDataValuator

    with pytest.raises(NotFittedError, match="call fit first"):
        plot_values(DPDataValuator())
    for interval in (-1.0, np.nan, np.inf, "2"):
        with pytest.raises(ValueError, match="interval must be a finite number >= 0"):
            plot_values(_Values([0.5, -0.5]), interval=interval)
