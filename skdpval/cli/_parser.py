"""The one parser of the command line: ``skdpval`` and its subcommands.

Standard library only: a bad command line is refused (exit code 2, one line)
before numpy, numba or scikit-learn load. A command's module
(:mod:`~skdpval.cli._demo`, :mod:`~skdpval.cli._value`) is imported once its
arguments parse.
"""

import argparse
import sys

from ._flag import flag_fraction_type

PROG = "skdpval"
COMMANDS = ("demo", "value")

DESCRIPTION = """\
Differentially private data valuation for scikit-learn.

  skdpval [demo] [options]              the main job on bundled data (the default)
  skdpval value TRAIN --target COLUMN   value the rows of your own data file

`skdpval demo --help` and `skdpval value --help` list each one's options.
Bad arguments end with exit code 2 and one line on stderr, before any work.
"""

DEMO_DESCRIPTION = """\
The main job: find flipped labels in breast_cancer privately, against the limit.

Run `skdpval` (or `python -m skdpval`; `skdpval demo` is the same). To value
your own data file instead: skdpval value TRAIN --target COLUMN (`skdpval
value --help`). Values a data set with each training label flipped
independently with probability --flip-fraction, with the seed paper's
mechanism (the full gradient clipped and noised, with i.i.d. or correlated
noise), with the library's defaults (releases in a public subspace) and with
the private label-quality score, and prints how well each finds the flipped
labels (noisy-label AUC) next to the best expected AUC any mechanism can
reach at that budget and the range one run of the best possible test
reaches, and the privacy report of the defaults.

Bad arguments end with exit code 2 and one line on stderr, before any work.
"""

VALUE_DESCRIPTION = """\
Private values of the rows of your own data file.

Reads the training rows (private) from a CSV or Parquet file and the
validation rows (public) from --validation FILE, or holds out
--validation-fraction of the training rows as the validation set (those rows
are then public: used without noise, not protected, and get no value).
Values every training row (or group) with DPDataValuator (--method shapley)
or DPLabelQuality (--method label-quality) and writes one line per training
row, in the input order: value, stderr (empty where the method has none),
rank (1 = most valuable, 0 = held out), flagged (among the lowest
--flag-fraction of the values; auto: the estimated share of bad labels),
held_out and, with --groups, the row's group
(whose value, rank and flag the row carries). Progress and a one-line privacy
summary go to stderr; --report FILE writes the full privacy report (JSON).

Files: CSV (the separator read off the header line, or --sep; .gz, .bz2,
.zip, .xz too) or Parquet. An unnamed first column ('Unnamed: 0', the index
pandas writes) is dropped, with a note. Each output is written to a
temporary file in its folder and renamed over the old one at the end: an
interrupted run leaves the old file, or none. An output that is an input
file is refused.

Features: every column but the target and the --groups column (--features
names them, --drop leaves some out). Which columns are numbers is read off
the validation rows only (public): a column is numeric when every
validation value in it is a number; a training value in it that is not a
number is an error. Numeric columns are used as they are (the valuator
standardises them with the validation rows' statistics); a missing value in
one is an error naming the column, unless --impute fills it with a statistic
of the validation rows. Any other column is one-hot encoded with the
categories found in the validation rows only, plus one for a missing value:
a training value outside them encodes as all zeros. Reading the types or the
categories off the private rows would release them without noise.

Data that do not fit in memory: TRAIN a folder or a glob of Parquet files
('data/*.parquet') is read lazily with Dask, on the cluster of --scheduler
ADDRESS or on a local one of --workers N processes (without either, Dask's
threads in this process), one block per input partition; the rows stay where
Dask reads them (the client holds the target and a few numbers a row). It
needs --validation FILE (holding out training rows would gather them in the
client) and --output FOLDER, which gets one Parquet file per input partition
(part-00000.parquet, ... in the input order, each written atomically as
above); --groups, and --method shapley with a network (MLPClassifier,
MLPRegressor: its walk reads whole rows at every step), are refused there,
before any work. The columns are checked block by block with the same
messages as for one file, before any release.

Bad input (a bad option, an unreadable file, a missing column, a bad model
name or parameter, an output that is an input) ends with exit code 2 and one
line on stderr, before any work. Errors name columns and options, never a
training value.

pandas is needed (pip install 'skdpval[pandas]'); Parquet files need pyarrow
too (pip install 'skdpval[parquet]'), and a folder or glob dask
(pip install 'skdpval[dask]').
"""

# The demo: its data sets; q=0.9 leaves a tenth of the permutations counted,
# and two are needed for a standard error.
DATASETS = ("breast_cancer", "diabetes", "digits_3_vs_8", "classification",
            "wine", "iris")
MIN_PERMUTATIONS = 20
IMPUTE = ("mean", "median", "most_frequent", "zero")
SEPARATORS = {",": ",", ";": ";", "tab": "\t", "\\t": "\t", "|": "|"}


class InputError(Exception):
    """Bad input: one line on stderr, exit code 2."""


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a bad argument prints one line (no usage block)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                    argparse.RawDescriptionHelpFormatter):
    pass


def bounded(kind, low, high=None, *, low_closed=False, high_closed=False):
    """An argparse type: a ``kind`` number in the given range (``inf`` is
    inside an open upper end; NaN never is)."""
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
            right = "inf]" if high is None else (f"{high:g}]" if high_closed
                                                 else f"{high:g})")
            raise argparse.ArgumentTypeError(
                f"{text} is outside {left}{low:g}, {right}")
        return value
    return parse


def separator(text):
    """An argparse type: ``--sep``, one character (``tab`` for a tab)."""
    sep = SEPARATORS.get(text, text)
    if len(sep) != 1 or sep in "\"'\r\n":
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one character (',', ';', '|', or tab)")
    return sep


def _common(parser, *, epsilon_help, delta_default, delta_help, random_help):
    """The options both commands have, with one type each."""
    parser.add_argument("--epsilon", type=bounded(float, 0.0),
                        default=epsilon_help[1], help=epsilon_help[0])
    parser.add_argument("--delta", type=bounded(float, 0.0, 1.0),
                        default=delta_default, help=delta_help)
    parser.add_argument("--random-state", type=bounded(int, 0, low_closed=True),
                        default=0, help=random_help)


def _demo_options(parser):
    parser.add_argument("--dataset", default="breast_cancer", choices=DATASETS,
                        help="bundled binary or multiclass data set to value")
    _common(parser,
            epsilon_help=("privacy budget per training sample (> 0)", 3.0),
            delta_default=5e-5,
            delta_help="privacy parameter delta, in (0, 1); keep it well "
                       "below 1 / (number of training samples)",
            random_help="seed of the split, the flips and the permutations "
                        "(the privacy noise is always fresh)")
    parser.add_argument("--n-permutations", type=bounded(
                            int, MIN_PERMUTATIONS, low_closed=True), default=500,
                        help=f"permutations of the valuation walk (>= "
                             f"{MIN_PERMUTATIONS}); more cost proportionally more "
                             "time and the same privacy")
    parser.add_argument("--flip-fraction", type=bounded(float, 0.0, 1.0),
                        default=0.3,
                        help="probability with which each training label is "
                             "flipped, in (0, 1)")


def _value_options(parser):
    parser.add_argument("train", metavar="TRAIN",
                        help="the training rows (private): a .csv or .parquet "
                             "file, or a folder or glob of .parquet files (read "
                             "lazily with Dask)")
    parser.add_argument("--target", required=True, metavar="COLUMN",
                        help="the column holding the label or target")
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--validation", metavar="FILE", default=None,
                       help="the validation rows (public, used without noise): a "
                            ".csv or .parquet file with the same columns as TRAIN")
    split.add_argument("--validation-fraction", type=bounded(float, 0.0, 1.0),
                       default=None, metavar="F",
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
    parser.add_argument("--model", default="auto", metavar="NAME",
                        help="the scikit-learn estimator, by class name, or auto "
                             "(the default: for classification without "
                             "--model-params, LogisticRegression or "
                             "a 64-unit MLPClassifier, chosen on the validation rows "
                             "by cross-validated log loss, which costs no "
                             "privacy; otherwise as below). --method "
                             "shapley: a model the valuators map (the linear "
                             "models, e.g. LogisticRegression, SGDClassifier, "
                             "Ridge, and MLPClassifier, MLPRegressor; a wrong "
                             "name lists them); --method label-quality: any "
                             "classifier or regressor of scikit-learn "
                             "(sklearn.utils.all_estimators, e.g. "
                             "HistGradientBoostingClassifier) that needs no other "
                             "estimator (auto with --model-params: "
                             "LogisticRegression for classification; Ridge for "
                             "regression)")
    parser.add_argument("--model-params", nargs="+", default=None,
                        metavar="KEY=VALUE",
                        help="the model's parameters: one JSON object "
                             "('{\"C\": 0.5}') or KEY=VALUE pairs (C=0.5 "
                             "hidden_layer_sizes=[16]), each value read as a "
                             "JSON or Python literal, else as a string; never "
                             "evaluated as code")
    _common(parser,
            epsilon_help=("privacy budget per row (or per group or record, see "
                          "--privacy-unit); inf adds no noise: the output is "
                          "then NOT PRIVATE (None: the valuator's default, 1, "
                          "with its warning)", None),
            delta_default=None,
            delta_help="privacy parameter delta, in (0, 1); keep it well below "
                       "1 / (number of training rows) (None: the valuator's "
                       "default, min(5e-5, 1 / (10 n)))",
            random_help="seed of the public randomness (the held-out split, "
                        "the permutations); the privacy noise is always fresh")
    parser.add_argument("--groups", default=None, metavar="COLUMN",
                        help="a column of TRAIN naming each row's group: each "
                             "group is valued as one party")
    parser.add_argument("--privacy-unit", choices=("record", "group"), default=None,
                        help="with --groups: protect one row in any group "
                             "(record) or a whole group (group) (None: record)")
    parser.add_argument("--n-permutations", type=bounded(int, 0), default=None,
                        help="--method shapley: permutations of the valuation walk; "
                             "more cost more time, not more privacy (None: the "
                             "valuator's default)")
    parser.add_argument("--flag-fraction", type=flag_fraction_type, default="auto",
                        metavar="F",
                        help="flag this fraction of the valued rows (groups) "
                             "with the lowest values, in (0, 1), or auto: "
                             "--method label-quality on classes estimates the "
                             "share of bad labels from the released scores "
                             "(post-processing, with a 90%% interval, printed) "
                             "and flags that share; its low end when the "
                             "interval is wider than 0.2; none when the interval "
                             "contains 0; the lowest 10%% when there is no "
                             "estimate (--method shapley, regression)")
    columns = parser.add_mutually_exclusive_group()
    columns.add_argument("--features", nargs="+", default=None, metavar="COLUMN",
                         help="the feature columns (None: every column but the "
                              "target and the --groups column)")
    columns.add_argument("--drop", nargs="+", default=None, metavar="COLUMN",
                         help="columns that are not features (e.g. an id)")
    parser.add_argument("--impute", choices=IMPUTE, default=None,
                        help="fill a missing value in a numeric column with this "
                             "statistic of the column in the validation rows "
                             "(public; zero: 0) (None: a missing value in a "
                             "numeric column is an error naming it; in a text "
                             "column it is a category of its own either way)")
    parser.add_argument("--sep", type=separator, default=None, metavar="CHAR",
                        help="the CSV files' separator: one character, 'tab' for "
                             "a tab (None: read off each file's header line: the "
                             "one of , ; tab | that splits it into the most "
                             "columns)")
    parser.add_argument("--output", default=None, metavar="FILE",
                        help="where to write the values: .csv or .parquet (None: "
                             "CSV on stdout)")
    parser.add_argument("--report", default=None, metavar="FILE",
                        help="write the privacy report (JSON) to FILE; stderr "
                             "gets a one-line summary either way")
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", default=None, metavar="ADDRESS",
                         help="read Parquet TRAIN with Dask and run on the "
                              "distributed scheduler at ADDRESS (e.g. "
                              "tcp://10.0.0.1:8786); its workers draw the walk's "
                              "noise and must be as trusted as this machine")
    cluster.add_argument("--workers", type=bounded(int, 1, low_closed=True),
                         default=None, metavar="N",
                         help="read Parquet TRAIN with Dask and run on a local "
                              "cluster of N worker processes, one thread each")
    parser.add_argument("--memory-limit", default=None, metavar="SIZE",
                        help="with --workers: each worker's memory limit, a "
                             "number of bytes or with a unit (kB, MB, GB, KiB, "
                             "MiB, GiB; None: Dask's default, a share of this "
                             "machine's memory)")
    parser.add_argument("--quiet", action="store_true",
                        help="print no progress (errors, warnings and the "
                             "privacy summary still go to stderr)")


def build_parser():
    """The parser of ``skdpval``: the subcommands ``demo`` and ``value``, every
    option with its help text and default."""
    parser = OneLineErrorParser(prog=PROG, description=DESCRIPTION,
                                formatter_class=HelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="{demo,value}",
                                     parser_class=OneLineErrorParser)
    _demo_options(commands.add_parser(
        "demo", prog=f"{PROG} demo", description=DEMO_DESCRIPTION,
        formatter_class=HelpFormatter,
        help="the main job on bundled data (the default)"))
    _value_options(commands.add_parser(
        "value", prog=f"{PROG} value", description=VALUE_DESCRIPTION,
        formatter_class=HelpFormatter, help="value the rows of your own data file"))
    return parser


def command_parser(parser, command):
    """The subparser of ``command``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)


def with_command(argv):
    """``(argv, implicit)``: ``argv`` with ``demo`` in front when it names no
    command (no subcommand runs the demo; ``-h`` alone asks for the
    commands' help), and whether it was put there."""
    argv = list(sys.argv[1:] if argv is None else argv)
    implicit = not argv or argv[0] not in COMMANDS + ("-h", "--help")
    return (["demo"] + argv if implicit else argv), implicit


def on_dask(args):
    """Whether ``skdpval value`` reads TRAIN with Dask: a folder, a glob, or
    a cluster asked for."""
    import os

    return (args.scheduler is not None or args.workers is not None
            or os.path.isdir(args.train) or any(c in args.train for c in "*?["))


def check_value_arguments(args):
    """What ``skdpval value`` checks before any import: the options that need
    each other, the file types, the outputs (not an input, in a folder)."""
    from ._files import check_file_type, check_outputs  # standard library too

    if on_dask(args):
        from ._files import check_dask_arguments
        return check_dask_arguments(args)
    if args.memory_limit is not None:
        raise InputError("--memory-limit applies with --workers only")
    if args.privacy_unit is not None and args.groups is None:
        raise InputError("--privacy-unit needs --groups")
    if args.n_permutations is not None and args.method != "shapley":
        raise InputError("--n-permutations applies to --method shapley only")
    if args.sep is not None and not all(
            check_file_type(path, what) == "csv"
            for path, what in ((args.train, "TRAIN"), (args.validation, "--validation"))
            if path is not None):
        raise InputError("--sep applies to CSV files only")
    check_file_type(args.train, "TRAIN")
    if args.validation is not None:
        check_file_type(args.validation, "--validation")
    if args.output is not None:
        check_file_type(args.output, "--output")
    inputs = {"TRAIN": args.train, "--validation": args.validation}
    outputs = {"--output": args.output, "--report": args.report}
    check_outputs({k: v for k, v in inputs.items() if v is not None},
                  {k: v for k, v in outputs.items() if v is not None})


def main(argv=None):
    """Run ``skdpval``: returns 0, or exits with 2 on bad input."""
    parser = build_parser()
    argv, implicit = with_command(argv)
    if implicit:  # the demo without its name: its messages say "skdpval"
        command_parser(parser, "demo").prog = PROG
    args, extra = parser.parse_known_args(argv)
    command = command_parser(parser, args.command)
    if extra:  # said by the command's parser, under its name
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "value":
            check_value_arguments(args)
            if on_dask(args):
                from ._dask_files import run
            else:
                from ._value import run
        else:
            from ._demo import run
        return run(args, command)
    except InputError as error:
        command.exit(2, f"{command.prog}: error: {error}\n")
