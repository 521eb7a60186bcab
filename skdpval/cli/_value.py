"""``skdpval value``: private values of the rows of your own data file.

What it does and its options: :data:`skdpval.cli._parser.VALUE_DESCRIPTION`
(``skdpval value --help``). Reads the tables (:mod:`._files`), lays out the
features from public input only (:mod:`._table`), builds the model
(:mod:`._models`) and the valuator, fits, and writes one line per training
row (atomically), the privacy report (``--report``) and a one-line privacy
summary on stderr. Errors and warnings of the library are told in the
command line's words (:func:`cli_words`).
"""

import json
import math
import re
import sys
import time
import warnings

import numpy as np

from ._files import describe_separator, file_kind, read_table, write_atomically
from ._flag import auto_flag_fraction
from ._models import DEFAULT_MODELS, choice_line, make_model, parse_model_params
from ._parser import InputError
from ._table import choose_features, columns_line, encode, targets

PROG = "skdpval value"
NOT_PRIVATE = (f"{PROG}: WARNING: --epsilon inf adds no privacy noise: the output "
               "is NOT PRIVATE (every value can reveal its row's data)")

# The library's words for its Python parameters, and the command line's.
CLI_WORDS = (
    (r" The private data must lie in the estimators' input domain:.*?maps any "
     r"data set into it\.", ""),
    (r"Pass classes=\[\.\.\.\] listing every class, or remove those samples\.",
     "Every class must appear in the validation rows."),
    (r"Pass a validation set with every class, or classes=\[\.\.\.\] naming them\.",
     "Add validation rows of every class."),
    (r"privacy_report_\['max_noisy_label_auc'\]",
     "max_noisy_label_auc in the privacy report (--report FILE)"),
    (r"For a numeric target use a regressor \(e\.g\. DPDataValuator\(Ridge\(\)\) or "
     r"SGDRegressor\(\)\)", "For a numeric target pass --task regression"),
    (r"Set epsilon explicitly", "Pass --epsilon"),
    (r" \(or raise noise_multiplier\)", ""),
    (r"Give a larger noise_multiplier or clip norm\.", "Pass a smaller --epsilon."),
    (r"\(e\.g\. fewer n_permutations or n_rounds\)",
     "(fewer --n-permutations, with --method shapley)"),
    (r"\bn_permutations\b", "--n-permutations"),
    (r"\bepsilon=(?=[-\d.ine])", "--epsilon "),
    (r"\bdelta=(?=[-\d.ine])", "--delta "),
    (r"\b(lower|raise|higher|smaller|larger) (epsilon|delta)\b", r"\1 --\2"),
    (r"\bX_val\b", "the validation rows"),
    (r"\by_val\b", "the validation rows' target"),
)


def cli_words(message):
    """``message`` on one line, the Python API's parameters named as the
    command line's options."""
    message = " ".join(str(message).split())
    for pattern, words in CLI_WORDS:
        message = re.sub(pattern, words, message)
    return message


def _import(module, extra):
    """``module``, or an input error naming the extra that installs it."""
    try:
        return __import__(module)
    except ImportError:
        raise InputError(f"{PROG} needs {module} for this: pip install "
                         f"'skdpval[{extra}]'") from None


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"{PROG}: warning: {cli_words(message)} ({category.__name__})",
          file=sys.stderr)


def _hold_out(n_rows, groups, fraction, seed):
    """Mask of the rows held out as the validation set: a random ``fraction``
    of the rows (of the groups), from the public seed only."""
    if groups is None:
        labels, party = np.arange(n_rows), np.arange(n_rows)
    else:
        labels, party = np.unique(groups.astype(str), return_inverse=True)
    n_val = math.ceil(fraction * len(labels))
    if n_val < 1 or len(labels) - n_val < 2:
        raise InputError(f"--validation-fraction {fraction:g} of {len(labels)} "
                         f"{'rows' if groups is None else 'groups'} leaves no "
                         "validation rows or fewer than 2 to value")
    held = np.random.default_rng(seed).permutation(len(labels))[:n_val]
    return np.isin(party, held)


def _valuator(args, model):
    from ..valuation import DPDataValuator, DPLabelQuality

    params = {}
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    if args.delta is not None:
        params["delta"] = args.delta
    if args.privacy_unit is not None:
        params["privacy_unit"] = args.privacy_unit
    if args.method == "shapley":
        if args.n_permutations is not None:
            params["n_permutations"] = args.n_permutations
        valuator = DPDataValuator(model, random_state=args.random_state,
                                  verbose=int(not args.quiet), **params)
    else:
        valuator = DPLabelQuality(model, random_state=args.random_state, **params)
    try:
        valuator._validate_params()
    except (ValueError, TypeError) as error:
        raise InputError(cli_words(error)) from None
    return valuator


def _row_results(valuator, fitted_rows, groups, n_rows, flag_fraction):
    """One row per input row: value, stderr, rank, flagged, held_out."""
    frame = valuator.to_frame()
    valued = ~frame["held_out"].to_numpy()
    n_valued = int(valued.sum())
    n_flagged = math.ceil(flag_fraction * n_valued - 1e-9)
    rank = frame["rank"].to_numpy()
    flagged = valued & (rank > n_valued - n_flagged)
    if groups is None:
        party = np.arange(len(fitted_rows))
    else:
        party = frame.index.get_indexer(groups[fitted_rows])
    columns = {
        "value": np.full(n_rows, np.nan),
        "stderr": np.full(n_rows, np.nan),
        "rank": np.zeros(n_rows, dtype=np.int64),
        "flagged": np.zeros(n_rows, dtype=bool),
        "held_out": np.ones(n_rows, dtype=bool),
    }
    columns["value"][fitted_rows] = frame["value"].to_numpy()[party]
    columns["stderr"][fitted_rows] = frame["stderr"].to_numpy()[party]
    columns["rank"][fitted_rows] = rank[party]
    columns["flagged"][fitted_rows] = flagged[party]
    columns["held_out"][fitted_rows] = ~valued[party]
    return columns, n_flagged


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def privacy_summary(report, args, unprotected):
    """The privacy report in one line: epsilon and delta per unit, epsilon for
    a replaced unit, and what is not protected."""
    unit = {"sample": "row", "group": f"group (--groups {args.groups})",
            "record": "record (one row of any group)"}.get(report["unit"],
                                                          report["unit"])
    if not math.isfinite(report["epsilon"]):
        head = "privacy: none (--epsilon inf): the output is NOT PRIVATE"
    else:
        head = (f"privacy: epsilon {report['epsilon']:.3g}, delta "
                f"{report['delta']:.3g} per {unit}; epsilon "
                f"{report['epsilon_replace_one']:.3g} for replacing a "
                f"{unit.split(' (')[0]}'s data")
    leaks = [cli_words(leak) for leak in report["leaks"]
             if not leak.startswith("no privacy noise")]
    where = (f"the full report: {args.report}" if args.report is not None
             else "--report FILE writes the full report")
    return "; ".join([head, f"not protected: {unprotected}", *leaks, where])


def _write_values(result, path, pd):
    if path is None:
        result.to_csv(sys.stdout, index=False)
    elif file_kind(path) == "parquet":
        write_atomically(path, lambda temporary: result.to_parquet(temporary,
                                                                   index=False))
    else:
        write_atomically(path, lambda temporary: result.to_csv(temporary,
                                                               index=False))


def _write_report(report, path):
    text = json.dumps(report, indent=2, default=_jsonable) + "\n"

    def write(temporary):
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)

    write_atomically(path, write)


def run(args, parser=None):
    """Run ``skdpval value`` on parsed ``args``: returns 0 (1 when an output
    cannot be written); bad input raises :class:`InputError`."""
    started = time.perf_counter()

    def progress(line):
        if not args.quiet:
            print(f"[{time.perf_counter() - started:5.1f} s] {line}", file=sys.stderr)

    pd = _import("pandas", "pandas")
    paths = (args.train, args.validation, args.output)
    if any(path is not None and file_kind(path) == "parquet" for path in paths):
        _import("pyarrow", "parquet")
    params = parse_model_params(args.model_params)
    if args.model not in (None, "auto"):  # its name and parameters, before reading data
        make_model(args.model, params, args.method)

    train, train_sep = read_table(args.train, public=False, sep=args.sep, pd=pd)
    val, val_sep = (None, None) if args.validation is None else read_table(
        args.validation, public=True, sep=args.sep, pd=pd)
    features = choose_features(train, val, args, train_sep=train_sep,
                               val_sep=val_sep, note=progress)
    groups = None if args.groups is None else train[args.groups].to_numpy()
    n_rows = len(train)
    if val is None:
        fraction = 0.2 if args.validation_fraction is None else args.validation_fraction
        held = _hold_out(n_rows, groups, fraction, args.random_state)
        val = train[held]
        fitted_rows = np.flatnonzero(~held)
    else:
        fitted_rows = np.arange(n_rows)
    if len(val) == 0:
        raise InputError(f"the validation file {args.validation!r} has no rows")
    fitted = train.iloc[fitted_rows]
    typed = file_kind(args.validation or args.train) == "parquet"
    X, X_val, encoded = encode(fitted[features], val[features], args.impute, pd,
                               typed=typed)
    y, y_val, task = targets(fitted[args.target], val[args.target], args, pd,
                             progress)
    name = (DEFAULT_MODELS[task] if args.model in (None, "auto") else args.model)
    model = make_model(name, params, args.method, task)
    if args.model in (None, "auto") and not params and task == "classification":
        # The library's default: the family chosen on the validation rows.
        name, model = "a linear model or a network, chosen on the validation rows", None
    elif args.method == "shapley":
        from ..families import family_of
        try:  # the valuator's support of the model and its parameters
            family_of(model).objective(model, n_parties=len(fitted_rows))
        except (ValueError, TypeError) as error:
            raise InputError(f"--model {name}: {cli_words(error)}") from None
    valuator = _valuator(args, model)

    if args.validation is None:
        unprotected = (f"the {n_rows - len(fitted_rows)} rows of {args.train} held "
                       "out as the validation set (--validation-fraction), used "
                       "without noise")
        held_note = (f"; {n_rows - len(fitted_rows)} of them held out as the "
                     "validation set (public: not protected, no value)")
    else:
        unprotected = (f"the validation rows ({args.validation}), used without "
                       "noise")
        held_note = ""
    separators = {s for s in (train_sep, val_sep) if s is not None}
    read_with = ("" if separators <= {","} else "; separator " + ", ".join(
        sorted(map(describe_separator, separators))))
    progress(f"{args.train}: {n_rows} rows{held_note}; "
             + columns_line(len(X_val), features, encoded, args.impute, task)
             + read_with)
    if args.epsilon == math.inf:  # every input checked; before any work
        print(NOT_PRIVATE, file=sys.stderr)
    progress(f"valuing with {type(valuator).__name__}({name}) ...")
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # each warning once, on stderr
        warnings.showwarning = _show_warning
        try:
            valuator.fit(X, y, X_val=X_val, y_val=y_val,
                         groups=None if groups is None else groups[fitted_rows])
        except (ValueError, TypeError, FloatingPointError) as error:
            # the valuators' errors quote no private value
            raise InputError(cli_words(error)) from None
    if choice_line(valuator) is not None:
        progress(choice_line(valuator))
    unit = "groups" if groups is not None else "rows"
    fraction, estimate = args.flag_fraction, None
    if fraction == "auto":
        fraction, line, estimate = auto_flag_fraction(valuator, unit)
        progress(line)
    columns, n_flagged = _row_results(valuator, fitted_rows, groups, n_rows,
                                      fraction)
    result = pd.DataFrame(columns)
    if groups is not None:
        result[args.groups] = groups
    progress(f"done: {n_flagged} {unit} flagged (the lowest {fraction:.3g} of "
             f"the values{'; --flag-fraction auto' if estimate is not None else ''})")
    report = dict(valuator.privacy_report_)
    if estimate is not None:
        report["bad_labels"] = estimate
    if args.validation is None:
        report["validation_set"] = (
            f"{n_rows - len(fitted_rows)} rows of {args.train} held out as the "
            "validation set (--validation-fraction) are used without noise and "
            "are not protected")
    writes = [(args.output, lambda: _write_values(result, args.output, pd))]
    if args.report is not None:
        writes.append((args.report, lambda: _write_report(report, args.report)))
    for path, write in writes:
        try:
            write()
        except OSError as error:
            where = "to stdout" if path is None else (
                f"{path!r}; an old file there is left as it was")
            print(f"{PROG}: error: cannot write {where} ({error.strerror or error})",
                  file=sys.stderr)
            return 1
        if path is not None:
            progress(f"wrote {path}")
    print(privacy_summary(report, args, unprotected), file=sys.stderr)
    return 0
