"""Plots of valuation quality (matplotlib: ``pip install "skdpval[plot]"``)."""

import numpy as np


def _axes(ax):
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError("skdpval.plotting needs matplotlib: "
                          'pip install "skdpval[plot]"') from error
    return plt.subplots(figsize=(5, 3.5))[1] if ax is None else ax


def _draw_curves(ax, x, curves):
    """Each curve's mean over trials, with a band of one std."""
    for label, curve in curves.items():
        curve = np.atleast_2d(np.asarray(curve, dtype=np.float64))
        mean, std = curve.mean(axis=0), curve.std(axis=0)
        line, = ax.plot(x, mean, marker="o", label=label)
        ax.fill_between(x, mean - std, mean + std, alpha=0.2, color=line.get_color())
    ax.legend()


def plot_removal_curves(fractions, curves, *, ax=None, ylabel="test accuracy"):
    """Test score against the fraction of training data removed.

    Parameters
    ----------
    fractions : array-like of shape (n_fractions,)
        Fractions removed (the x axis).
    curves : dict of str to array-like of shape (n_fractions,) or (n_trials, n_fractions)
        One curve per label, e.g. from :func:`skdpval.metrics.removal_curve`;
        with several trials, the mean is drawn with a band of one std.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.
    ylabel : str, default="test accuracy"

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = _axes(ax)
    _draw_curves(ax, fractions, curves)
    ax.set_xlabel("fraction of training data removed")
    ax.set_ylabel(ylabel)
    return ax


def plot_auc_vs_budget(budgets, aucs, *, ax=None, xlabel="permutations k",
                       ylabel="noisy-label AUC", chance_level=0.5):
    """Noisy-label AUC against a budget (k, epsilon or the burn-in q).

    Parameters
    ----------
    budgets : array-like of shape (n_budgets,)
        The x axis.
    aucs : dict of str to array-like of shape (n_budgets,) or (n_trials, n_budgets)
        One curve per label; with several trials, the mean with a band of
        one std.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.
    xlabel, ylabel : str
    chance_level : float or None, default=0.5
        Draws a dotted line at the score of a blind guess; None for none.

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = _axes(ax)
    _draw_curves(ax, budgets, aucs)
    if chance_level is not None:
        ax.axhline(chance_level, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax
