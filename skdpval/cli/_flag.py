"""``--flag-fraction auto``: how many rows to flag, from the estimated share
of bad labels (:func:`skdpval.metrics.estimate_noisy_share`, post-processing
of the releases). Imports nothing heavy until a fit's estimate is read, so
the parser that takes ``flag_fraction_type`` stays fast.

- the 90% interval excludes 0 and is at most ``WIDE`` wide: flag the
  estimate's share of the valued rows;
- it excludes 0 but is wider: flag its low end (the share the releases
  support; the estimate itself is too loose to flag by);
- it contains 0: flag nothing (the releases show no bad labels beyond
  doubt; pass a number to flag a fixed share anyway);
- no estimate (``--method shapley``, a regression): flag ``FALLBACK``, and
  say why.
"""

import argparse
import math
import warnings

__all__ = ["flag_fraction_type", "auto_flag_fraction", "FALLBACK", "WIDE"]

FALLBACK = 0.1
WIDE = 0.2


def flag_fraction_type(text):
    """An argparse type: ``auto``, or a fraction in (0, 1)."""
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither auto nor a number") from None
    if not 0 < value < 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{text} is outside (0, 1)")
    return value


def auto_flag_fraction(valuator, level=0.9):
    """``(fraction, line)``: the fraction of the valued parties that ``auto``
    flags for the fitted ``valuator``, and one line saying why."""
    from ..metrics import estimate_noisy_share  # not at import: the parser stays light

    if not hasattr(valuator, "validation_scores_"):
        why = ("regression: a bad target follows no known law"
               if hasattr(valuator, "residual_scale_") else
               "--method shapley: values have no known law for a bad label; "
               "--method label-quality estimates it")
        return FALLBACK, (f"flag fraction auto: no estimate of the share of bad "
                          f"labels ({why}); flagging the lowest {FALLBACK:.0%}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a NaN share is said below
        estimate = estimate_noisy_share(valuator, level=level)
    low, high = estimate.low, estimate.high
    said = (f"estimated share of bad labels {estimate.share:.3f} "
            f"({level:.0%} interval {low:.3f}-{high:.3f}, from the releases)")
    if low <= 0 or math.isnan(estimate.share):
        return 0.0, (f"{said}: the interval contains 0, so flagging none (pass "
                     "--flag-fraction F to flag a fixed share)")
    if high - low > WIDE:
        return low, (f"{said}: the interval is wider than {WIDE:g}, so flagging "
                     f"its low end, the lowest {low:.1%}")
    return estimate.share, f"{said}: flagging the lowest {estimate.share:.1%}"
