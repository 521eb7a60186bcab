"""``--flag-fraction auto``: how many rows to flag, from the estimated share
of bad labels (:class:`~skdpval.DPLabelQuality`'s ``noisy_share_``,
post-processing of the releases). Standard library only: the parser takes
:func:`flag_fraction_type`.

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
        raise argparse.ArgumentTypeError(f"{text} is outside (0, 1), and not auto")
    return value


def auto_flag_fraction(valuator, unit="rows"):
    """``(fraction, line, record)``: the fraction of the valued parties that
    ``auto`` flags for the fitted ``valuator``, one line saying why, and the
    estimate and the rule as a dict for the report (``record["share"]`` is
    None when there is no estimate)."""
    estimate = getattr(valuator, "noisy_share_", None)
    record = dict(level=None, share=None, low=None, high=None, n_bad=None,
                  source="DPLabelQuality.noisy_share_: post-processing of the "
                         "released scores and the validation rows")
    if estimate is None:
        if hasattr(valuator, "residual_scale_"):
            why = "regression: a bad target follows no known law"
        elif hasattr(valuator, "public_model_"):
            why = "the label scores gave none: see the warning above"
        else:
            why = ("--method shapley: its values have no known law for a bad "
                   "label; --method label-quality estimates it")
        record.update(flag_fraction=FALLBACK, rule="no estimate: the fixed fallback")
        return FALLBACK, (f"bad labels: no estimate ({why}); --flag-fraction auto "
                          f"flags the lowest {FALLBACK:.0%}"), record
    share, low, high = estimate.share, estimate.low, estimate.high
    record.update(level=estimate.level, share=None if math.isnan(share) else share,
                  low=low, high=high, n_bad=estimate.n_noisy)
    said = (f"bad labels: estimated share {share:.3f} of the {unit} (about "
            f"{estimate.n_noisy}; {estimate.level:.0%} interval {low:.3f}-{high:.3f}, "
            "from the released scores)")
    if low <= 0 or math.isnan(share):
        fraction, rule = 0.0, ("the interval contains 0: flagging none (pass "
                               "--flag-fraction F to flag a fixed share)")
    elif high - low > WIDE:
        fraction, rule = low, (f"the interval is wider than {WIDE:g}: flagging "
                               f"its low end, the lowest {low:.1%}")
    else:
        fraction, rule = share, f"flagging the lowest {share:.1%}"
    record.update(flag_fraction=fraction, rule=rule)
    return fraction, f"{said}; {rule}", record
