"""Reading the tables and writing the outputs of ``skdpval value``.

Standard library at import (the parser checks file names with it); pandas
is passed in by the caller. Outputs are written through a temporary file in
the output's own folder, renamed over the old file at the end
(:func:`write_atomically`): an interrupted run leaves the old file or none.
An output that resolves to an input file is refused (:func:`check_outputs`).
"""

import bz2
import contextlib
import csv
import glob
import gzip
import io
import itertools
import lzma
import os
import re
import shutil
import zipfile

from ._parser import InputError

CSV = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz")
PARQUET = (".parquet", ".pq")
# The separators read off a header line, the first preferred on a tie.
SEPARATORS = (",", ";", "\t", "|")
# pandas' name for an empty header in the first column: the index that
# DataFrame.to_csv writes unless index=False.
UNNAMED_INDEX = "Unnamed: 0"
# pandas' message for a line with more fields than the header (numbers only).
_RAGGED = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def file_kind(path):
    """``"csv"`` or ``"parquet"`` by the name's ending, else None."""
    name = os.path.basename(str(path)).lower()
    if name.endswith(CSV):
        return "csv"
    if name.endswith(PARQUET):
        return "parquet"
    return None


def check_file_type(path, what):
    """The kind of ``path`` (``what`` names the option in the error)."""
    kind = file_kind(path)
    if kind is None:
        raise InputError(f"{what} {str(path)!r} must end in .csv or .parquet "
                         "(.csv.gz, .csv.bz2, .csv.zip, .csv.xz, .pq)")
    return kind


def same_file(first, second):
    """Whether two paths name one file: the same real path, or (both
    existing) the same inode (a hard link)."""
    if os.path.normcase(os.path.realpath(first)) == os.path.normcase(
            os.path.realpath(second)):
        return True
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):  # one of them does not exist (yet)
        return False


def check_outputs(inputs, outputs):
    """Refuse an output that is an input, a folder, in no folder, or the
    other output. ``inputs`` and ``outputs`` map option names to paths."""
    for option, path in outputs.items():
        if os.path.isdir(path):
            raise InputError(f"{option} {path!r} is a folder: name a file")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InputError(f"{option}: no such folder {folder!r}")
        for name, source in inputs.items():
            if same_file(path, source):
                raise InputError(
                    f"{option} {path!r} is the input file {name} ({source!r}): "
                    "writing it would replace it; name another file")
    if len(outputs) == 2 and same_file(*outputs.values()):
        raise InputError("--output and --report name the same file")


def write_atomically(path, write):
    """Call ``write(temporary_path)``, then rename the temporary file over
    ``path``; on any error or interruption remove it and leave ``path`` as it
    was. The temporary file lies in ``path``'s folder (a rename within one
    file system is atomic) and ends with ``path``'s name (pandas infers the
    compression from it); it takes the old file's permissions, else those
    of a new file."""
    folder, name = os.path.split(os.path.abspath(path))
    # O_EXCL takes the first free name (the process id keeps two runs apart);
    # the name needs no secrecy, so the privacy layer's source stays its own.
    for attempt in itertools.count():
        temporary = os.path.join(folder, f".{os.getpid()}.{attempt}.tmp.{name}")
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        if os.path.exists(path):
            shutil.copymode(path, temporary)
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def _open_text(path):
    """``path`` as text, decompressed by its ending."""
    name = str(path).lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="")
    if name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8", errors="replace", newline="")
    if name.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8", errors="replace", newline="")
    if name.endswith(".zip"):
        archive = zipfile.ZipFile(path)
        member = archive.open(archive.namelist()[0])
        return io.TextIOWrapper(member, encoding="utf-8", errors="replace", newline="")
    return open(path, encoding="utf-8", errors="replace", newline="")


def header_separator(path):
    """The separator that splits ``path``'s first line (the header: column
    names, no row) into the most fields; ``,`` when none splits it."""
    try:
        with _open_text(path) as text:
            header = text.readline()
    except (OSError, EOFError, zipfile.BadZipFile, IndexError, lzma.LZMAError):
        return ","  # pandas says what is wrong with the file
    counts = [len(next(csv.reader([header], delimiter=sep), [])) for sep in SEPARATORS]
    best = max(range(len(SEPARATORS)), key=lambda i: (counts[i], -i))
    return SEPARATORS[best] if counts[best] > 1 else ","


def describe_separator(sep):
    return "tab" if sep == "\t" else repr(sep)


def read_table(path, *, public, sep, pd):
    """The table in ``path`` and the CSV separator used (None for Parquet).

    An error quotes no value of a private file: a line with more fields
    than the header is named by its number (the file's line, the header
    being line 1); other parser messages are shown for public files only.
    """
    if not os.path.isfile(path):
        raise InputError(f"cannot read {path!r}: no such file")
    if file_kind(path) == "parquet":
        sep = None
    elif sep is None:
        sep = header_separator(path)
    try:
        if sep is None:
            return pd.read_parquet(path), None
        return pd.read_csv(path, sep=sep), sep
    except Exception as error:  # noqa: BLE001 (pandas raises many kinds)
        ragged = _RAGGED.search(str(error))
        if ragged:
            fields, line, saw = ragged.groups()
            raise InputError(
                f"cannot read {path!r}: line {line} has {saw} fields, the header "
                f"{fields} (separator {describe_separator(sep)}; --sep to "
                "choose another)") from None
        if isinstance(error, pd.errors.EmptyDataError):
            raise InputError(f"cannot read {path!r}: the file is empty") from None
        detail = (" ".join(str(error).split()) if public else
                  "its message is not shown, since it may quote private values")
        raise InputError(f"cannot read {path!r} ({type(error).__name__}: "
                         f"{detail})") from None


def column_list(table, limit=12):
    """The columns of ``table``, quoted, for an error (the first ``limit``)."""
    names = [repr(str(c)) for c in table.columns]
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


# The values of a folder or glob of Parquet files: one file per input
# partition, in the input order, in the --output folder.
PART_NAME = "part-{:05d}.parquet"
_PART = re.compile(r"part-(\d{5,})\.parquet")


def parquet_files(pattern):
    """The Parquet files of TRAIN given as a folder (its ``*.parquet`` and
    ``*.pq`` files), a glob or one file, sorted by name (the input order)."""
    if os.path.isdir(pattern):
        names = [os.path.join(pattern, name) for name in os.listdir(pattern)
                 if file_kind(name) == "parquet"]
    elif any(c in pattern for c in "*?["):
        names = [name for name in glob.glob(pattern) if os.path.isfile(name)]
        others = [name for name in names if file_kind(name) != "parquet"]
        if others:
            raise InputError(f"TRAIN {pattern!r} matches files that are not Parquet "
                             f"(.parquet, .pq), e.g. {others[0]!r}: narrow the glob")
    else:
        names = [pattern] if os.path.isfile(pattern) else []
    return sorted(names)


def check_dask_arguments(args):
    """What ``skdpval value`` checks before any import when TRAIN is read
    with Dask (a folder, a glob, ``--scheduler`` or ``--workers``)."""
    what = (f"TRAIN {args.train!r} (a folder or glob)"
            if os.path.isdir(args.train) or any(c in args.train for c in "*?[")
            else "--scheduler" if args.scheduler is not None
            else "--workers")
    if args.memory_limit is not None and args.workers is None:
        raise InputError("--memory-limit applies with --workers only")
    if args.sep is not None:
        raise InputError(f"--sep applies to CSV files only, and {what} reads "
                         "Parquet")
    files = parquet_files(args.train)
    if not os.path.isdir(args.train) and not any(c in args.train for c in "*?["):
        if check_file_type(args.train, "TRAIN") != "parquet":
            raise InputError(f"{what} reads Parquet files: TRAIN {args.train!r} is "
                             "CSV (convert it, or leave out --scheduler and "
                             "--workers)")
    if not files:
        raise InputError(f"TRAIN {args.train!r} names no Parquet file "
                         "(.parquet, .pq)")
    if args.validation is None:
        raise InputError(f"{what} needs --validation FILE: holding out training "
                         "rows as the validation set would gather them in one "
                         "process")
    check_file_type(args.validation, "--validation")
    if args.groups is not None:
        raise InputError(f"--groups is not supported with {what} (a group's rows "
                         "may lie in several files)")
    if args.output is None:
        raise InputError(f"{what} writes one Parquet file per input partition: "
                         "pass --output FOLDER")
    if file_kind(args.output) is not None or os.path.isfile(args.output):
        raise InputError(f"--output {args.output!r} must be a folder with {what} "
                         "(it gets one Parquet file per input partition)")
    parent = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(parent):
        raise InputError(f"--output: no such folder {parent!r}")
    folder = os.path.realpath(args.output)
    for name, path in [("TRAIN", file) for file in files] + [
            ("--validation", args.validation)]:
        if os.path.dirname(os.path.realpath(path)) == folder:
            raise InputError(f"--output {args.output!r} holds the input file {name} "
                             f"({path!r}): name another folder")
    if args.report is not None:
        for file in files:
            check_outputs({"TRAIN": file}, {"--report": args.report})
        check_outputs({"--validation": args.validation}, {"--report": args.report})
        if os.path.dirname(os.path.realpath(args.report)) == folder and _PART.fullmatch(
                os.path.basename(args.report)):
            raise InputError("--report names a file of --output")


def stale_parts(folder, n_parts):
    """The ``part-NNNNN.parquet`` files in ``folder`` numbered ``n_parts`` or
    more (an earlier run's, on more partitions)."""
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if _PART.fullmatch(name) and int(_PART.fullmatch(name)[1]) >= n_parts)
