"""Measures of how well data values find bad data."""

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.utils.validation import column_or_1d


def noisy_label_auc(values, is_noisy):
    """ROC AUC of a low value predicting a noisy (flipped) label.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        Data values; lower means more likely noisy. Must be finite: select
        the valued samples first (held-out validation samples have NaN).
    is_noisy : array-like of bool of shape (n_samples,)
        True for the samples whose label is noisy.

    Returns
    -------
    auc : float
        1.0 when every noisy sample is valued below every clean one, 0.5 for
        values unrelated to the noise.

    Examples
    --------
    >>> from skdpval.metrics import noisy_label_auc
    >>> noisy_label_auc([0.3, -0.2, 0.1, -0.5], [False, True, False, True])
    1.0
    """
    values = column_or_1d(values).astype(np.float64)
    is_noisy = column_or_1d(is_noisy).astype(bool)
    if len(values) != len(is_noisy):
        raise ValueError(f"values and is_noisy have different lengths "
                         f"({len(values)} and {len(is_noisy)}).")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite: drop held-out (NaN) samples "
                         "before scoring.")
    return float(roc_auc_score(is_noisy, -values))
