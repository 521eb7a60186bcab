"""Plots of valuation quality (matplotlib: ``pip install "skdpval[plot]"``)."""

from numbers import Real

import numpy as np
from sklearn.exceptions import NotFittedError

from .privacy._threat_model import refuse_in_joint_mode


def _axes(ax, layout=None):
    """``ax``, or the axes of a new figure (``layout``: its layout engine)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError("skdpval.plotting needs matplotlib: "
                          'pip install "skdpval[plot]"') from error
    if ax is not None:
        return ax
    return plt.subplots(figsize=(6, 4), layout=layout)[1]


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
    """A fitted valuator's values, sorted, with their uncertainty.

    The uncertainty of a value is ``interval`` times its standard error,
    ``valuator.values_stderr_`` (the Monte Carlo spread and the privacy
    noise, not the bias), drawn as error bars and as a shaded band;
    the legend gives its median size (under noise often close to the
    spread of the values itself: single-point values at a small budget are
    mostly noise). Without that attribute (or with
    NaN standard errors) the values are drawn without bars. Parties held out
    as the validation set (value NaN: not valued, not protected) are not
    drawn; the legend says how many there are.

    A new figure uses constrained layout, so a plain ``savefig`` keeps the
    axis labels. The legend sits in a corner that the sorted, increasing
    curve leaves empty (lower right or upper left).

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
        Where to draw; a new figure (constrained layout) when None.

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
    >>> ax.figure.savefig("values.png")  # doctest: +SKIP
    """
    refuse_in_joint_mode(valuator, "plot_values")
    if not hasattr(valuator, "values_"):
        raise NotFittedError(f"plot_values needs a fitted valuator (with values_), "
                             f"got an unfitted {type(valuator).__name__}: call fit "
                             "first.")
    if not (isinstance(interval, Real) and 0 <= interval < np.inf):
        raise ValueError(f"interval must be a finite number >= 0, got {interval!r}.")
    values = np.asarray(valuator.values_, dtype=np.float64)
    stderr = getattr(valuator, "values_stderr_", None)
    stderr = (np.full_like(values, np.nan) if stderr is None
              else np.asarray(stderr, dtype=np.float64))
    mark = np.zeros(len(values), bool) if mark is None else np.asarray(mark, bool)
    if mark.shape != values.shape:
        raise ValueError(f"mark must have one entry per value ({len(values)}), "
                         f"got shape {mark.shape}.")
    ax = _axes(ax, layout="constrained")
    valued = np.flatnonzero(~np.isnan(values))
    order = valued[np.argsort(values[valued], kind="stable")]
    position = np.arange(len(order))
    # NaN below two counted permutations (or no values_stderr_): no bars.
    half_width = interval * stderr[order]
    has_errors = bool(len(order)) and not np.isnan(half_width).all()
    if has_errors:
        ax.fill_between(position, values[order] - half_width,
                        values[order] + half_width, color="tab:blue", alpha=0.25,
                        linewidth=0, step="mid",
                        label=f"+- {interval:g} std. error (median "
                              f"{np.nanmedian(half_width):.2g})")
    for selected, label, color in [(~mark[order], "value", "tab:blue"),
                                   (mark[order], mark_label, "tab:red")]:
        if selected.any():
            rows = order[selected]
            ax.errorbar(position[selected], values[rows],
                        yerr=half_width[selected] if has_errors else None,
                        fmt="o", markersize=3, elinewidth=1.2, capsize=1.5,
                        color=color, ecolor=color, label=label)
    ax.axhline(0.0, color="grey", linestyle=":", linewidth=1)
    n_held_out = int(np.isnan(values).sum())
    if n_held_out:
        # An empty handle: a legend line that says what is not drawn.
        ax.plot([], [], " ", label=f"{n_held_out} held out: not valued, not shown")
    ax.set_xlabel("parties, by increasing value")
    ax.set_ylabel(f"value +- {interval:g} std. error" if has_errors else "value")
    ax.set_ymargin(0.1)
    # A sorted, increasing curve leaves two corners empty: above its left
    # half (values below the median) and below its right half (above it).
    # The legend takes the larger one.
    sorted_values = values[order]
    low, mid, high = ((sorted_values[0], np.median(sorted_values), sorted_values[-1])
                      if len(order) else (0.0, 0.0, 0.0))
    ax.legend(loc="lower right" if mid - low >= high - mid else "upper left",
              fontsize="small")
    return ax
