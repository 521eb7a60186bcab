"""Plots of valuation quality (matplotlib: ``pip install "skdpval[plot]"``)."""

from numbers import Real

import numpy as np
from sklearn.exceptions import NotFittedError


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


def plot_values(valuator, *, mark=None, mark_label="marked", interval=2.0, ax=None):
    """A fitted valuator's values, sorted, with error bars; held-out parties marked.

    The error bar of a value is ``interval`` times its standard error,
    ``valuator.values_stderr_`` (the spread of the Monte Carlo estimate and
    of the noise, not its bias); without that attribute the values are drawn
    without bars. Parties held out as the validation set (value NaN) are
    drawn after the valued ones, as grey crosses on the zero line.

    Parameters
    ----------
    valuator : fitted valuator
        Any estimator with ``values_`` (e.g. :class:`~skdpval.DPDataValuator`).
    mark : array-like of bool of shape (n_parties,), default=None
        Parties to draw in another colour, e.g. those known to have flipped
        labels.
    mark_label : str, default="marked"
        Legend entry of the ``mark`` parties.
    interval : float >= 0, default=2.0
        Half-width of the error bars in standard errors (2: about 95%).
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skdpval import DPDataValuator
    >>> from skdpval.plotting import plot_values
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> # No scaler: the valuator standardises with the validation statistics.
    >>> valuator = DPDataValuator(noise="none", q=0.0, n_permutations=20,
    ...                           random_state=0).fit(X[:120], y[:120])
    >>> ax = plot_values(valuator)
    >>> ax.get_xlabel()
    'parties, by increasing value'
    """
    if not hasattr(valuator, "values_"):
        raise NotFittedError(f"plot_values needs a fitted valuator (with values_), "
                             f"got an unfitted {type(valuator).__name__}: call fit "
                             "first.")
    if not (isinstance(interval, Real) and 0 <= interval < np.inf):
        raise ValueError(f"interval must be a finite number >= 0, got {interval!r}.")
    values = np.asarray(valuator.values_, dtype=np.float64)
    stderr = getattr(valuator, "values_stderr_", None)
    stderr = (np.zeros_like(values) if stderr is None
              else np.asarray(stderr, dtype=np.float64))
    mark = np.zeros(len(values), bool) if mark is None else np.asarray(mark, bool)
    if mark.shape != values.shape:
        raise ValueError(f"mark must have one entry per value ({len(values)}), "
                         f"got shape {mark.shape}.")
    ax = _axes(ax)
    valued = np.flatnonzero(~np.isnan(values))
    order = valued[np.argsort(values[valued], kind="stable")]
    position = np.arange(len(order))
    for selected, label, color in [(~mark[order], "value", "tab:blue"),
                                   (mark[order], mark_label, "tab:red")]:
        if selected.any():
            rows = order[selected]
            ax.errorbar(position[selected], values[rows], yerr=interval * stderr[rows],
                        fmt="o", markersize=3, elinewidth=0.8, color=color, label=label)
    held_out = np.flatnonzero(np.isnan(values))
    if len(held_out):
        ax.plot(len(order) + np.arange(len(held_out)), np.zeros(len(held_out)),
                "x", color="grey", markersize=3,
                label="held out (validation: not valued, not protected)")
    ax.axhline(0.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("parties, by increasing value")
    has_errors = getattr(valuator, "values_stderr_", None) is not None and not np.isnan(
        stderr[valued]).all()  # NaN below two counted permutations: no bars
    ax.set_ylabel(f"value +- {interval:g} std. error" if has_errors else "value")
    ax.legend()
    return ax
