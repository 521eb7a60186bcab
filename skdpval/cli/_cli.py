"""skdpval value: private values of the rows of your own data file.

Run ``skdpval value TRAIN --target COLUMN`` (or ``python -m skdpval value
...``; ``--help`` lists the options). Reads the training rows (private) from
a CSV or Parquet file and the validation rows (public) from ``--validation
FILE``, or holds out ``--validation-fraction`` of the training rows as the
validation set (those rows are then public: used without noise, not
protected, and get no value). Values every training row (or group) with
DPDataValuator (``--method shapley``) or DPLabelQuality (``--method
label-quality``) and writes one line per training row, in the input order:
``value``, ``stderr`` (empty where the method has none), ``rank`` (1 = most
valuable, 0 = held out), ``flagged`` (among the lowest ``--flag-fraction``
of the values), ``held_out`` and, with ``--groups``, the row's group (whose
value, rank and flag the row carries). Progress and the privacy report (JSON)
go to stderr.

Features: every column but the target (and the ``--groups`` column).
Numeric columns are used as they are (the valuator standardises them with
the validation rows' statistics). Any other column is one-hot encoded with
the categories found in the validation rows only (public): a training value
outside them encodes as all zeros. Reading the categories off the private
rows would release them without noise.

Bad input (an unreadable file, a missing target or groups column, a feature
column absent from either file, a bad model name or parameter) ends with
exit code 2 and one line on stderr, before any work. Errors name columns,
never a training value.

pandas is needed (``pip install 'skdpval[pandas]'``); Parquet files need
pyarrow too (``pip install 'skdpval[parquet]'``).
"""

import argparse
import ast
import json
import math
import os
import sys
import time
import warnings

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.multiclass import type_of_target

from ..families import Refused, family_of, registered
from ..valuation import DPDataValuator, DPLabelQuality

PROG = "skdpval value"
# Model names: the estimators the valuators support, by class name.
MODELS = {cls.__name__: cls for cls, entry in registered().items()
          if not isinstance(entry, Refused)}
DEFAULT_MODELS = {"classification": "LogisticRegression", "regression": "Ridge"}
CSV = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz")
PARQUET = (".parquet", ".pq")


class _InputError(Exception):
    """Bad input: one line on stderr, exit code 2."""


class _OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a bad argument prints one line (no usage block)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                     argparse.RawDescriptionHelpFormatter):
    pass


def _bounded(kind, low, high=None, *, low_closed=False, high_closed=False):
    """An argparse type: a ``kind`` number in the given range."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if kind is int else 'a number'}")
        above = value >= low if low_closed else value > low
        below = (high is None or (value <= high if high_closed else value < high))
        if not (above and below) or value != value:  # NaN fails too
            left = "[" if low_closed else "("
            right = "inf)" if high is None else (f"{high:g}]" if high_closed
                                                 else f"{high:g})")
            raise argparse.ArgumentTypeError(
                f"{text} is outside {left}{low:g}, {right}")
        return value
    return parse


def build_parser():
    """The parser of ``skdpval value`` (every option with help text and default)."""
    parser = _OneLineErrorParser(prog=PROG, description=__doc__,
                                 formatter_class=_HelpFormatter)
    parser.add_argument("train", metavar="TRAIN",
                        help="the training rows (private): a .csv or .parquet file")
    parser.add_argument("--target", required=True, metavar="COLUMN",
                        help="the column holding the label or target")
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--validation", metavar="FILE", default=None,
                       help="the validation rows (public, used without noise): a "
                            ".csv or .parquet file with the same columns as TRAIN")
    split.add_argument("--validation-fraction", type=_bounded(float, 0.0, 1.0), default=None,
                       metavar="F",
                       help="without --validation: hold out this fraction of the "
                            "training rows (of the groups, with --groups) at "
                            "random (--random-state) as the validation set; "
                            "those rows are not protected and get no value "
                            "(None: 0.2)")
    parser.add_argument("--task", choices=("auto", "classification", "regression"),
                        default="auto",
                        help="auto: regression when the validation rows' target "
                             "(public) is continuous (scikit-learn's "
                             "type_of_target), classification otherwise (an "
                             "integer target counts as classes: pass --task "
                             "regression for counts)")
    parser.add_argument("--method", choices=("shapley", "label-quality"),
                        default="shapley",
                        help="shapley: DPDataValuator's private Shapley value "
                             "(what a row adds to the model; for pricing and "
                             "attribution, with a standard error); label-quality: "
                             "DPLabelQuality's score of how well a row's label "
                             "fits a model fitted on the validation rows (one "
                             "release per row: faster and closer to the privacy "
                             "limit when the goal is only to find bad labels). "
                             "shapley is the default because it is what the "
                             "command promises: each row's value")
    parser.add_argument("--model", default=None, metavar="NAME",
                        help="the scikit-learn estimator, by class name: one of "
                             + ", ".join(sorted(MODELS)) + " (None: "
                             "LogisticRegression for classification, Ridge for "
                             "regression)")
    parser.add_argument("--model-params", nargs="+", default=None,
                        metavar="KEY=VALUE",
                        help="the model's parameters: one JSON object "
                             "('{\"C\": 0.5}') or KEY=VALUE pairs (C=0.5 "
                             "hidden_layer_sizes=[16]), each value read as a "
                             "JSON or Python literal, else as a string; never "
                             "evaluated as code")
    parser.add_argument("--epsilon", type=_bounded(float, 0.0), default=None,
                        help="privacy budget per row (or per group or record, "
                             "see --privacy-unit) (None: the valuator's default, "
                             "with its warning)")
    parser.add_argument("--delta", type=_bounded(float, 0.0, 1.0), default=None,
                        help="privacy parameter delta, in (0, 1); keep it well "
                             "below 1 / (number of training rows) (None: the "
                             "valuator's default, min(5e-5, 1 / (10 n)))")
    parser.add_argument("--groups", default=None, metavar="COLUMN",
                        help="a column of TRAIN naming each row's group: each "
                             "group is valued as one party")
    parser.add_argument("--privacy-unit", choices=("record", "group"), default=None,
                        help="with --groups: protect one row in any group "
                             "(record) or a whole group (group) (None: record)")
    parser.add_argument("--n-permutations", type=_bounded(int, 0), default=None,
                        help="--method shapley: permutations of the valuation walk; "
                             "more cost more time, not more privacy (None: the "
                             "valuator's default)")
    parser.add_argument("--flag-fraction", type=_bounded(float, 0.0, 1.0), default=0.1,
                        help="flag this fraction of the valued rows (groups) "
                             "with the lowest values, in (0, 1)")
    parser.add_argument("--random-state", type=_bounded(int, 0, low_closed=True), default=0,
                        help="seed of the public randomness (the held-out split, "
                             "the permutations); the privacy noise is always "
                             "fresh")
    parser.add_argument("--output", default=None, metavar="FILE",
                        help="where to write the values: .csv or .parquet (None: "
                             "CSV on stdout)")
    parser.add_argument("--quiet", action="store_true",
                        help="print no progress (errors, warnings and the privacy "
                             "report still go to stderr)")
    return parser


def _suffix(path):
    name = os.path.basename(path).lower()
    for suffix in CSV + PARQUET:
        if name.endswith(suffix):
            return suffix
    return None


def _import(module, extra):
    """``module``, or an input error naming the extra that installs it."""
    try:
        return __import__(module)
    except ImportError:
        raise _InputError(f"{PROG} needs {module} for this: pip install "
                          f"'skdpval[{extra}]'") from None


def _check_file_type(path, what):
    suffix = _suffix(path)
    if suffix is None:
        raise _InputError(f"{what} {path!r} must end in .csv or .parquet")
    if suffix in PARQUET:
        _import("pyarrow", "parquet")


def _read(path, public, pd):
    """The table in ``path``; an error quoting no private value."""
    if not os.path.isfile(path):
        raise _InputError(f"cannot read {path!r}: no such file")
    try:
        if _suffix(path) in PARQUET:
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except Exception as error:  # noqa: BLE001 (pandas raises many kinds)
        detail = (" ".join(str(error).split()) if public else
                  "its message is not shown, since it may quote private values")
        raise _InputError(f"cannot read {path!r} ({type(error).__name__}: "
                          f"{detail})") from None


def parse_model_params(items):
    """The ``--model-params`` as a dict: literals only, never evaluated code."""
    if not items:
        return {}
    if len(items) == 1 and items[0].lstrip().startswith("{"):
        try:
            params = json.loads(items[0])
        except ValueError as error:
            raise _InputError(f"--model-params is not a JSON object: {error}") from None
        if not isinstance(params, dict):
            raise _InputError("--model-params must be a JSON object")
        return params
    params = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise _InputError(f"--model-params {item!r} is not KEY=VALUE")
        params[key] = _literal(text.strip())
    return params


def _literal(text):
    """A JSON or Python literal (numbers, strings, lists, tuples, dicts,
    True/False/None), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _make_model(name, params, task=None):
    """The estimator ``name`` with ``params``, checked by scikit-learn, and
    against the ``task`` when given."""
    if name not in MODELS:
        raise _InputError(f"--model {name!r} is not a supported estimator; "
                          f"choose from {', '.join(sorted(MODELS))}")
    try:
        model = MODELS[name](**params)
    except TypeError as error:
        raise _InputError(f"--model-params: {name} refuses them: "
                          f"{' '.join(str(error).split())}") from None
    try:
        model._validate_params()  # scikit-learn's own checks, before any work
    except (ValueError, TypeError) as error:
        raise _InputError(f"--model-params: {' '.join(str(error).split())}") from None
    if task is not None and is_classifier(model) != (task == "classification"):
        kind = "classifier" if is_classifier(model) else "regressor"
        raise _InputError(f"--model {name} is a {kind}, but the task is {task} "
                          "(--task)")
    return model


def _columns(train, val, args, val_name):
    """The feature columns, after checking every named column is there."""
    if args.target not in train.columns:
        raise _InputError(f"column {args.target!r} (--target) is not in {args.train!r}")
    if val is not None and args.target not in val.columns:
        raise _InputError(f"column {args.target!r} (--target) is not in the "
                          f"validation file {val_name!r}")
    if args.groups is not None:
        if args.groups not in train.columns:
            raise _InputError(f"column {args.groups!r} (--groups) is not in "
                              f"{args.train!r}")
        if args.groups == args.target:
            raise _InputError("--groups and --target name the same column")
    features = [c for c in train.columns if c not in (args.target, args.groups)]
    if not features:
        raise _InputError(f"{args.train!r} has no feature column besides the "
                          "target")
    if val is not None:
        given = [c for c in val.columns if c not in (args.target, args.groups)]
        for column in features:
            if column not in val.columns:
                raise _InputError(f"column {column!r} of {args.train!r} is not in "
                                  f"the validation file {val_name!r}")
        for column in given:
            if column not in features:
                raise _InputError(f"column {column!r} of the validation file "
                                  f"{val_name!r} is not in {args.train!r}")
    return features


def _hold_out(n_rows, groups, fraction, seed):
    """Mask of the rows held out as the validation set: a random ``fraction``
    of the rows (of the groups), from the public seed only."""
    if groups is None:
        labels, party = np.arange(n_rows), np.arange(n_rows)
    else:
        labels, party = np.unique(groups.astype(str), return_inverse=True)
    n_val = math.ceil(fraction * len(labels))
    if n_val < 1 or len(labels) - n_val < 2:
        raise _InputError(f"--validation-fraction {fraction:g} of {len(labels)} "
                          f"{'rows' if groups is None else 'groups'} leaves no "
                          "validation rows or fewer than 2 to value")
    held = np.random.default_rng(seed).permutation(len(labels))[:n_val]
    return np.isin(party, held)


def _encode(train_X, val_X, pd):
    """Numeric arrays of the features: numeric columns as they are, others
    one-hot encoded with the validation rows' categories (public).

    Which columns are numeric is read off the validation rows too; a
    training column that is not numeric where the validation one is is an
    error naming the column (no value).
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    categorical = [c for c in val_X.columns
                   if not pd.api.types.is_numeric_dtype(val_X[c])]
    for column in val_X.columns:
        if column in categorical:
            continue
        if not pd.api.types.is_numeric_dtype(train_X[column]):
            raise _InputError(
                f"column {column!r} is numeric in the validation rows but not in "
                "the training rows: some training value is not a number (the "
                "values are not shown)")
    if not categorical:
        return (train_X.to_numpy(dtype=np.float64), val_X.to_numpy(dtype=np.float64),
                categorical)
    as_text = {c: str for c in categorical}
    encoder = ColumnTransformer(
        [("onehot", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
          categorical)], remainder="passthrough")
    X_val = encoder.fit_transform(val_X.astype(as_text))
    X = encoder.transform(train_X.astype(as_text))
    return np.asarray(X, np.float64), np.asarray(X_val, np.float64), categorical


def _task(args, y_val):
    """``--task``, or with ``auto`` the kind of the validation rows' target
    (public)."""
    if args.task != "auto":
        return args.task
    try:
        kind = type_of_target(y_val)
    except ValueError as error:  # the validation rows are public: quoted
        raise _InputError(f"column {args.target!r} (--target) of the validation "
                          f"rows: {' '.join(str(error).split())}") from None
    return "regression" if kind.startswith("continuous") else "classification"


def _valuator(args, model):
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
        raise _InputError(" ".join(str(error).split())) from None
    return valuator


def _check_arguments(args):
    if args.privacy_unit is not None and args.groups is None:
        raise _InputError("--privacy-unit needs --groups")
    if args.n_permutations is not None and args.method != "shapley":
        raise _InputError("--n-permutations applies to --method shapley only")
    _check_file_type(args.train, "TRAIN")
    if args.validation is not None:
        _check_file_type(args.validation, "--validation")
    if args.output is not None:
        _check_file_type(args.output, "--output")
        folder = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(folder):
            raise _InputError(f"--output: no such folder {folder!r}")


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


def main(argv=None):
    """Run ``skdpval value``: returns 0, or exits with 2 on bad input."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except _InputError as error:
        parser.exit(2, f"{PROG}: error: {error}\n")


def _run(args):
    started = time.perf_counter()

    def progress(line):
        if not args.quiet:
            print(f"[{time.perf_counter() - started:5.1f} s] {line}", file=sys.stderr)

    _check_arguments(args)
    pd = _import("pandas", "pandas")
    params = parse_model_params(args.model_params)
    if args.model is not None:  # its name and parameters, before reading data
        _make_model(args.model, params)

    train = _read(args.train, False, pd)
    val = None if args.validation is None else _read(args.validation, True, pd)
    features = _columns(train, val, args, args.validation)
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
        raise _InputError(f"the validation file {args.validation!r} has no rows")
    fitted = train.iloc[fitted_rows]
    X, X_val, encoded = _encode(fitted[features], val[features], pd)
    y_val = val[args.target].to_numpy()
    task = _task(args, y_val)
    y = fitted[args.target].to_numpy()
    if task == "regression":
        if not pd.api.types.is_numeric_dtype(val[args.target]):
            raise _InputError(f"--task regression needs a numeric --target, and "
                              f"column {args.target!r} of the validation rows is "
                              "not numeric")
        if not pd.api.types.is_numeric_dtype(fitted[args.target]):
            raise _InputError(f"column {args.target!r} (--target) of the training "
                              "rows is not numeric (the values are not shown)")
    name = args.model or DEFAULT_MODELS[task]
    model = _make_model(name, params, task)
    if args.method == "shapley":
        try:  # the valuator's support of the model and its parameters
            family_of(model).objective(model, n_parties=len(fitted_rows))
        except (ValueError, TypeError) as error:
            raise _InputError(
                f"--model {name}: {' '.join(str(error).split())}") from None
    valuator = _valuator(args, model)

    held_note = ""
    if args.validation is None:
        held_note = (f"; {n_rows - len(fitted_rows)} of them held out as the "
                     "validation set (public: not protected, no value)")
    progress(f"{args.train}: {n_rows} rows{held_note}; "
             f"{len(X_val)} validation rows; {len(features)} feature columns"
             + (f" ({len(encoded)} one-hot encoded from the validation rows: "
                f"{', '.join(map(str, encoded))})" if encoded else "")
             + f"; {task}")
    progress(f"valuing with {type(valuator).__name__}({name}) ...")
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # each warning once, on stderr
        try:
            valuator.fit(X, y, X_val=X_val, y_val=y_val,
                         groups=None if groups is None else groups[fitted_rows])
        except (ValueError, TypeError, FloatingPointError) as error:
            # the valuators' errors quote no private value
            raise _InputError(" ".join(str(error).split())) from None
    columns, n_flagged = _row_results(valuator, fitted_rows, groups, n_rows,
                                      args.flag_fraction)
    result = pd.DataFrame(columns)
    if groups is not None:
        result[args.groups] = groups
    unit = "groups" if groups is not None else "rows"
    progress(f"done: {n_flagged} {unit} flagged (the lowest "
             f"{args.flag_fraction:g} of the values)")
    report = dict(valuator.privacy_report_)
    if args.validation is None:
        report["validation_set"] = (
            f"{n_rows - len(fitted_rows)} rows of {args.train} held out as the "
            "validation set (--validation-fraction) are used without noise and "
            "are not protected")
    print(json.dumps(report, indent=2, default=_jsonable), file=sys.stderr)
    if args.output is None:
        result.to_csv(sys.stdout, index=False)
    elif _suffix(args.output) in PARQUET:
        result.to_parquet(args.output, index=False)
    else:
        result.to_csv(args.output, index=False)
    if args.output is not None:
        progress(f"wrote {len(result)} rows to {args.output}")
    return 0
