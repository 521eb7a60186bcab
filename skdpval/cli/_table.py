"""The columns of ``skdpval value``: which are features, their kinds and codes.

Everything that shapes the features is read off public input only: the
column names (the files' headers), the options, and the validation rows.
Which columns are numbers and which categories a text column has come from
the validation rows, so that no training row can change the encoding (one
text value in a private row turning a numeric column into a one-hot one, or
adding a category, would be a release without noise). A training value that
does not fit is an error naming its column, never the value.
"""

import numpy as np

from ._files import UNNAMED_INDEX, column_list, describe_separator
from ._parser import IMPUTE, InputError

# pandas' default spellings of a boolean in a CSV file.
_TRUE = frozenset({"True", "TRUE", "true"})
_FALSE = frozenset({"False", "FALSE", "false"})
# A missing value of a text column: a category of its own.
MISSING = "(missing)"


def _where(name, sep):
    return name + ("" if sep is None else f" (read with separator "
                   f"{describe_separator(sep)}; --sep to choose another)")


def _need(table, column, option, name, sep):
    if column not in table.columns:
        raise InputError(f"column {column!r} ({option}) is not in {_where(name, sep)}; "
                         f"its columns: {column_list(table)}")


def _role(column, args):
    return "--target" if column == args.target else "--groups"


def choose_features(train, val, args, *, train_sep, val_sep, note):
    """The feature columns, after checking that every named column is there.

    ``--features`` names them; else every column but the target, the groups
    and ``--drop``, and an unnamed first column (pandas' index, said by
    ``note``). Without ``--features`` the validation file has no column of
    its own either.
    """
    _need(train, args.target, "--target", repr(args.train), train_sep)
    if val is not None:
        _need(val, args.target, "--target", f"the validation file {args.validation!r}",
              val_sep)
    if args.groups is not None:
        _need(train, args.groups, "--groups", repr(args.train), train_sep)
        if args.groups == args.target:
            raise InputError("--groups and --target name the same column")
    special = {args.target, args.groups}
    tables = [(train, repr(args.train), train_sep)]
    if val is not None:
        tables.append((val, f"the validation file {args.validation!r}", val_sep))
    if args.features is not None:
        for column in args.features:
            if column in special:
                raise InputError(f"--features {column!r} is the {_role(column, args)}"
                                 " column")
            for table, name, sep in tables:
                _need(table, column, "--features", name, sep)
        if len(set(args.features)) != len(args.features):
            raise InputError("--features names a column twice")
        return list(args.features)
    dropped = set(args.drop or ())
    for column in dropped:
        if not any(column in table.columns for table, _, _ in tables):
            raise InputError(f"--drop {column!r} is not a column of "
                             f"{' or '.join(name for _, name, _ in tables)}")
        if column in special:
            raise InputError(f"--drop {column!r} is the {_role(column, args)} column")
    for table, name, _ in tables:
        if (len(table.columns) and table.columns[0] == UNNAMED_INDEX
                and UNNAMED_INDEX not in special | dropped):
            dropped.add(UNNAMED_INDEX)
            note(f"dropped column {UNNAMED_INDEX!r} of {name}: an unnamed first "
                 "column, the index pandas writes (--features to keep it)")
    features = [c for c in train.columns if c not in special | dropped]
    if not features:
        raise InputError(f"{args.train!r} has no feature column besides the target")
    if val is not None:
        for column in features:
            if column not in val.columns:
                raise InputError(
                    f"column {column!r} of {args.train!r} is not in the validation "
                    f"file {_where(repr(args.validation), val_sep)}; its columns: "
                    f"{column_list(val)}")
        for column in val.columns:
            if column not in features and column not in special | dropped:
                raise InputError(f"column {column!r} of the validation file "
                                 f"{args.validation!r} is not in {args.train!r} "
                                 "(--drop to leave it out)")
    return features


def numbers(column, pd, *, parse_text=True):
    """``(values, not_numbers)``: the column as floats (NaN where missing) and
    a mask of the values present that are not numbers (or booleans); a
    string is read as a number (or a boolean) when ``parse_text``, else it
    is not one."""
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        return (column.to_numpy(dtype=np.float64, na_value=np.nan),
                np.zeros(len(column), dtype=bool))
    if pd.api.types.is_datetime64_any_dtype(column):
        return np.full(len(column), np.nan), column.notna().to_numpy()

    def number(value):
        if isinstance(value, (bool, np.bool_)):
            return float(value)
        if isinstance(value, str):
            if not parse_text:
                return "a string"  # not a number: coerced to NaN below
            text = value.strip()
            if text in _TRUE:
                return 1.0
            if text in _FALSE:
                return 0.0
            return text
        return value

    present = column.notna().to_numpy()
    converted = pd.to_numeric(column.astype(object).map(number), errors="coerce")
    values = converted.to_numpy(dtype=np.float64, na_value=np.nan)
    return values, present & np.isnan(values)


def column_kinds(val_X, pd, typed=False):
    """``{column: "number" or "text"}`` from the validation rows (public):
    numbers when every value present is a number. ``typed``: the rows come
    from a file whose schema gives each column's type (Parquet), so a string
    is text even when it spells a number; from a CSV file a string is read
    as pandas reads it."""
    return {column: "text" if numbers(val_X[column], pd, parse_text=not typed)[1]
            .any() else "number" for column in val_X.columns}


def _text(column):
    """The column as strings, a missing value as :data:`MISSING`."""
    return column.astype(object).where(column.notna(), MISSING).astype(str).to_numpy()


def _statistic(values, strategy):
    present = values[~np.isnan(values)]
    if strategy == "zero":
        return 0.0
    if not len(present):
        return None
    if strategy == "mean":
        return float(np.mean(present))
    if strategy == "median":
        return float(np.median(present))
    levels, counts = np.unique(present, return_counts=True)
    return float(levels[np.argmax(counts)])  # the smallest on a tie


def _numeric_block(train_X, val_X, columns, impute, pd):
    """The numeric columns as floats; missing values imputed from the
    validation rows or refused, a non-number or an infinity refused."""
    X = np.empty((len(train_X), len(columns)))
    X_val = np.empty((len(val_X), len(columns)))
    for j, column in enumerate(columns):
        val_values, _ = numbers(val_X[column], pd)
        values, not_numbers = numbers(train_X[column], pd)
        if not_numbers.any():
            raise InputError(
                f"column {column!r} is numeric in the validation rows but not in "
                "the training rows: some training value is not a number (the "
                "values are not shown)")
        strategies = ", ".join(IMPUTE)
        n_missing_val = int(np.isnan(val_values).sum())
        if impute is None and n_missing_val:
            raise InputError(
                f"column {column!r} has {n_missing_val} missing values in the "
                f"validation rows: --impute ({strategies}) fills them with a "
                f"statistic of the validation rows, or --drop {column} leaves the "
                "column out")
        if impute is None and np.isnan(values).any():
            raise InputError(
                f"column {column!r} has missing values in the training rows (how "
                f"many is not shown): --impute ({strategies}) fills them with a "
                f"statistic of the validation rows, or --drop {column} leaves the "
                "column out")
        if impute is not None:
            fill = _statistic(val_values, impute)
            if fill is None:
                raise InputError(f"column {column!r} has no value in the "
                                 f"validation rows: --impute {impute} has no "
                                 f"statistic for it (--impute zero, or --drop "
                                 f"{column})")
            val_values = np.where(np.isnan(val_values), fill, val_values)
            values = np.where(np.isnan(values), fill, values)
        if not np.all(np.isfinite(val_values)):
            raise InputError(f"column {column!r} has an infinite value in the "
                             "validation rows")
        if not np.all(np.isfinite(values)):
            raise InputError(f"column {column!r} has an infinite value in the "
                             "training rows (the values are not shown)")
        X[:, j], X_val[:, j] = values, val_values
    return X, X_val


def encode(train_X, val_X, impute, pd, *, typed=False):
    """Numeric arrays of the features and the text columns' names.

    Text columns (by the validation rows, :func:`column_kinds`) are one-hot
    encoded with the validation rows' categories plus one for a missing
    value; numeric ones follow, as they are (``impute`` fills their missing
    values).
    """
    from sklearn.preprocessing import OneHotEncoder

    kinds = column_kinds(val_X, pd, typed)
    text = [c for c in val_X.columns if kinds[c] == "text"]
    numeric = [c for c in val_X.columns if kinds[c] == "number"]
    X, X_val = _numeric_block(train_X, val_X, numeric, impute, pd)
    if not text:
        return X, X_val, text
    val_text = np.column_stack([_text(val_X[c]) for c in text])
    train_text = np.column_stack([_text(train_X[c]) for c in text])
    categories = [sorted(set(val_text[:, j]) | {MISSING}) for j in range(len(text))]
    encoder = OneHotEncoder(categories=categories, handle_unknown="ignore",
                            sparse_output=False, dtype=np.float64).fit(val_text)
    return (np.hstack([encoder.transform(train_text), X]),
            np.hstack([encoder.transform(val_text), X_val]), text)


def columns_line(n_val, features, encoded, impute, task):
    """The progress line's account of the columns: the validation rows, the
    feature columns and which were one-hot encoded, the imputation, the task
    (the one-file and the Dask paths say it alike)."""
    return (f"{n_val} validation rows; {len(features)} feature columns"
            + (f" ({len(encoded)} one-hot encoded from the validation rows: "
               f"{', '.join(map(str, encoded))})" if encoded else "")
            + (f"; missing numbers filled: --impute {impute}" if impute else "")
            + f"; {task}")


def targets(train_y, val_y, args, pd, note):
    """``(y, y_val, task)``: the task (``--task``, or from the validation
    target), the targets in one type, every training label in the validation
    rows' class set."""
    from sklearn.utils.multiclass import type_of_target

    target = args.target
    n_missing = int(val_y.isna().sum())
    if n_missing:
        raise InputError(f"column {target!r} (--target) has {n_missing} missing "
                         "values in the validation rows")
    if train_y.isna().any():
        raise InputError(f"column {target!r} (--target) has missing values in the "
                         "training rows (how many is not shown): remove those rows")
    numeric = not numbers(val_y, pd)[1].any()
    y_val = numbers(val_y, pd)[0] if numeric else _text(val_y)
    task = args.task
    if task == "auto":
        try:
            kind = type_of_target(y_val)
        except ValueError as error:  # the validation rows are public: quoted
            raise InputError(f"column {target!r} (--target) of the validation "
                             f"rows: {' '.join(str(error).split())}") from None
        task = "regression" if kind.startswith("continuous") else "classification"
    if task == "regression" and not numeric:
        raise InputError(f"--task regression needs a numeric --target, and column "
                         f"{target!r} of the validation rows is not numeric")
    if numeric:
        y, not_numbers = numbers(train_y, pd)
        if not_numbers.any():
            raise InputError(f"column {target!r} (--target) is numeric in the "
                             "validation rows but not in the training rows (the "
                             "values are not shown)")
        if task == "classification" and np.all(np.concatenate([y, y_val]) % 1 == 0):
            y, y_val = y.astype(np.int64), y_val.astype(np.int64)
    else:
        y = _text(train_y)
    if task == "regression":
        return y, y_val, task
    classes = np.unique(y_val)
    if len(classes) < 2:
        raise InputError(f"column {target!r} (--target) has a single class in the "
                         f"validation rows ({classes[0]!r}): the class set is read "
                         "from them (public); add validation rows of other classes")
    quantity = (f"; if column {target!r} is a quantity to predict, not a class, "
                "pass --task regression") if numeric and args.task == "auto" else ""
    if numeric and args.task == "auto" and len(classes) > 2:
        note(f"column {target!r} (--target) holds {len(classes)} distinct numbers "
             f"in the validation rows: read as {len(classes)} classes" + quantity)
    if not np.all(np.isin(y, classes)):
        raise InputError(
            f"column {target!r} (--target) has labels in the training rows that no "
            "validation row has (the labels are not shown): the class set is read from "
            "the validation rows (public), so every class must appear in them"
            + quantity)
    return y, y_val, task
