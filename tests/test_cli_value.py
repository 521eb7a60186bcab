"""``skdpval value``: the rows of a data file valued, every bad input refused in
one line, nothing lost (issue 43: outputs, types from public rows, the gaps
of the command line)."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skdpval.cli import _models, _table, _value, main
from skdpval.cli._parser import InputError, build_parser, command_parser

ROOT = Path(__file__).resolve().parents[1]


def _run(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "skdpval", *map(str, args)],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def _tables(n_train=120, n_val=60, seed=0, regression=False):
    """A training and a validation table: numeric features, a categorical
    column, string labels (or a real target) and a group column."""
    from sklearn.datasets import make_classification, make_regression

    n = n_train + n_val
    if regression:
        X, y = make_regression(n_samples=n, n_features=3, noise=5.0, random_state=seed)
        target = y
    else:
        X, y = make_classification(n_samples=n, n_features=3, n_informative=2,
                                   n_redundant=0, random_state=seed)
        target = np.where(y == 1, "good", "bad")
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["site"] = rng.choice(["north", "south", "east"], n)
    frame["label"] = target
    frame["clinic"] = np.arange(n) % 6
    return frame.iloc[:n_train].reset_index(drop=True), frame.iloc[n_train:]


@pytest.fixture
def files(tmp_path):
    train, val = _tables()
    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    return tmp_path, train, val


def _value(capsys, *args):
    """Run ``skdpval value`` in-process: (exit code, stdout, stderr)."""
    try:
        code = main(["value", *(str(arg) for arg in args)])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _summary(stderr):
    """The one line of the privacy summary on stderr."""
    lines = [line for line in stderr.splitlines() if line.startswith("privacy: ")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_value_writes_one_row_per_training_row(tmp_path):
    """The issue's acceptance command, in a fresh process."""
    train, val = _tables()
    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    result = _run("value", tmp_path / "train.csv", "--target", "label",
                  "--validation", tmp_path / "val.csv", "--epsilon", "3",
                  "--n-permutations", "40", "--delta", "1e-6",
                  "--output", tmp_path / "out.csv", "--report", tmp_path / "report.json")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    n = len(train)
    assert out.columns.tolist() == ["value", "stderr", "rank", "flagged", "held_out"]
    assert len(out) == n
    assert sorted(out["rank"]) == list(range(1, n + 1))
    assert not out["held_out"].any()
    assert np.all(np.isfinite(out["stderr"])) and np.all(out["stderr"] > 0)
    # rank 1 is the highest value; the flagged rows are the lowest tenth
    assert out.loc[out["rank"] == 1, "value"].item() == out["value"].max()
    assert out["flagged"].sum() == int(np.ceil(0.1 * n))
    flagged = out["flagged"]
    assert out.loc[flagged, "value"].max() < out.loc[~flagged, "value"].min()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["epsilon"] == pytest.approx(3.0)
    assert report["n_releases"] == 40
    assert report["delta"] == pytest.approx(1e-6, rel=0.01)
    assert "DPDataValuator" in result.stderr  # the progress says what runs
    # stderr: progress, then one line of privacy, no JSON between them
    summary = _summary(result.stderr)
    assert summary.startswith("privacy: epsilon 3, delta 1e-06 per row; epsilon ")
    assert f"{report['epsilon_replace_one']:.3g} for replacing a row's data" in summary
    assert "not protected: the validation rows" in summary
    assert f"the full report: {tmp_path / 'report.json'}" in summary
    assert "{" not in result.stderr and '"epsilon"' not in result.stderr


def test_value_rows_follow_the_input_order(files, capsys):
    """Row i of the output is row i of TRAIN: a shuffled file gives the
    shuffled values. The label score is a function of each row plus fresh
    noise, small at epsilon 18, so the two runs' values agree row by row."""
    folder, train, _ = files

    def scores(path):
        code, out, err = _value(capsys, path, "--target", "label", "--validation",
                                folder / "val.csv", "--method", "label-quality",
                                "--epsilon", "18", "--quiet")
        assert code == 0, err
        return pd.read_csv(io.StringIO(out))

    first = scores(folder / "train.csv")
    assert len(first) == len(train)
    # The label score's standard error is its noise std, the same for every row.
    assert first["stderr"].nunique() == 1 and first["stderr"].iloc[0] > 0
    order = np.random.default_rng(1).permutation(len(train))
    train.iloc[order].to_csv(folder / "shuffled.csv", index=False)
    shuffled = scores(folder / "shuffled.csv")["value"].to_numpy()
    values = first["value"].to_numpy()
    assert np.corrcoef(shuffled, values[order])[0, 1] > 0.6  # measured 0.77
    assert abs(np.corrcoef(shuffled, values)[0, 1]) < 0.5  # unaligned: 0.05


def test_value_with_groups_and_held_out_fraction(files, capsys):
    folder, train, _ = files
    code, out, err = _value(capsys, folder / "train.csv", "--target", "label",
                            "--groups", "clinic", "--validation-fraction", "0.34",
                            "--method", "label-quality", "--epsilon", "3",
                            "--flag-fraction", "0.25", "--quiet", "--report",
                            folder / "report.json")
    assert code == 0, err
    result = pd.read_csv(io.StringIO(out))
    assert len(result) == len(train)
    assert (result["clinic"] == train["clinic"]).all()
    # ceil(0.34 * 6) = 3 clinics held out: all their rows, no value, rank 0
    held = result.groupby("clinic")["held_out"].agg(["all", "any"])
    assert (held["all"] == held["any"]).all() and held["all"].sum() == 3
    assert result.loc[result["held_out"], "value"].isna().all()
    assert (result.loc[result["held_out"], "rank"] == 0).all()
    assert not result.loc[result["held_out"], "flagged"].any()
    # every row carries its group's value; one of the 3 valued groups flagged
    per_group = result[~result["held_out"]].groupby("clinic")
    assert (per_group["value"].nunique() == 1).all()
    assert sorted(per_group["rank"].first()) == [1, 2, 3]
    flagged = per_group["flagged"].first()
    assert flagged.sum() == 1
    group_values = per_group["value"].first()
    assert group_values[flagged].item() == group_values.min()
    report = json.loads((folder / "report.json").read_text())
    assert "held out" in report["validation_set"]
    assert report["unit"] == "record"
    summary = _summary(err)
    assert "per record (one row of any group)" in summary
    assert "not protected: the 60 rows of" in summary  # 3 of 6 clinics of 20
    assert err.splitlines() == [summary]  # --quiet: the summary only


def test_value_regression_defaults(tmp_path, capsys):
    train, val = _tables(regression=True)
    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    code, out, err = _value(capsys, tmp_path / "train.csv", "--target", "label",
                            "--validation", tmp_path / "val.csv", "--epsilon", "3",
                            "--n-permutations", "20")
    assert code == 0, err
    assert "regression" in err and "DPDataValuator(Ridge)" in err
    result = pd.read_csv(io.StringIO(out))
    assert len(result) == len(train) and result["value"].notna().all()


def test_value_reads_and_writes_parquet(files, capsys):
    pytest.importorskip("pyarrow")
    folder, train, val = files
    train.to_parquet(folder / "train.parquet", index=False)
    val.to_parquet(folder / "val.parquet", index=False)
    code, _, err = _value(capsys, folder / "train.parquet", "--target", "label",
                          "--validation", folder / "val.parquet", "--method",
                          "label-quality", "--epsilon", "3", "--output",
                          folder / "out.parquet")
    assert code == 0, err
    result = pd.read_parquet(folder / "out.parquet")
    assert len(result) == len(train)
    assert result["flagged"].dtype == bool


def test_parquet_without_pyarrow_names_the_extra(files, capsys, monkeypatch):
    folder, _, _ = files
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails
    code, out, err = _value(capsys, folder / "train.parquet", "--target", "label")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert "pip install 'skdpval[parquet]'" in err


def test_categories_come_from_the_validation_rows_only():
    train, val = _tables()
    features = ["a", "b", "c", "site"]
    X, X_val, encoded = _table.encode(train[features], val[features], None, pd)
    assert encoded == ["site"]
    n_categories = val["site"].nunique() + 1  # and one for a missing value
    assert X.shape == (len(train), n_categories + 3)
    assert X_val.shape == (len(val), n_categories + 3)
    # a training category the validation rows lack encodes as all zeros, and
    # adds no column: the private rows choose nothing
    changed = train[features].copy()
    changed.loc[0, "site"] = "a private category"
    X_changed, _, _ = _table.encode(changed, val[features], None, pd)
    assert X_changed.shape == X.shape
    np.testing.assert_array_equal(X_changed[0, :n_categories], 0)
    np.testing.assert_array_equal(X_changed[1:], X[1:])


def test_model_params_are_literals_never_code():
    parse = _models.parse_model_params
    assert parse(['{"C": 0.5, "fit_intercept": false}']) == {
        "C": 0.5, "fit_intercept": False}
    assert parse(["C=0.5", "hidden_layer_sizes=(16, 8)", "solver=lbfgs",
                  "class_weight=None", "tol=1e-3", "fit_intercept=False"]) == {
        "C": 0.5, "hidden_layer_sizes": (16, 8), "solver": "lbfgs",
        "class_weight": None, "tol": 1e-3, "fit_intercept": False}
    code = "__import__('os').system('echo owned')"
    assert parse([f"solver={code}"]) == {"solver": code}  # a string, not run
    with pytest.raises(InputError, match="not KEY=VALUE"):
        parse(["C"])
    with pytest.raises(InputError, match="not a JSON object"):
        parse(['{"C": }'])


def test_model_by_name_with_its_parameters():
    model = _models.make_model("MLPClassifier", _models.parse_model_params(
        ["hidden_layer_sizes=(4,)", "alpha=0.01"]), "shapley", "classification")
    assert type(model).__name__ == "MLPClassifier"
    assert model.hidden_layer_sizes == (4,) and model.alpha == 0.01
    assert type(_models.make_model("Ridge", {}, "shapley", "regression")
                ).__name__ == "Ridge"
    assert _models.DEFAULT_MODELS == {"classification": "LogisticRegression",
                                   "regression": "Ridge"}


BAD_VALUE = {
    "missing target": (["--target", "nope"], "'nope' (--target) is not in"),
    "target not in validation": (
        ["--target", "label", "--validation", "{val_no_label}"],
        "(--target) is not in the validation file"),
    "column absent from validation": (
        ["--target", "label", "--validation", "{val_no_b}"],
        "column 'b' of {train!r} is not in the validation file"),
    "extra validation column": (
        ["--target", "label", "--validation", "{val_extra}"],
        "column 'extra' of the validation file"),
    "missing groups column": (["--target", "label", "--groups", "ward"],
                              "'ward' (--groups) is not in"),
    "no such file": (["--target", "label", "--validation", "{folder}/none.csv"],
                     "no such file"),
    "unreadable validation": (["--target", "label", "--validation", "{broken}"],
                              "cannot read"),
    "bad file type": (["--target", "label", "--output", "{folder}/out.xlsx"],
                      "must end in .csv or .parquet"),
    "bad model": (["--target", "label", "--model", "RandomForest"],
                  "--model 'RandomForest' is not a model the valuators map"),
    "bad parameter name": (["--target", "label", "--model-params", "Cee=1"],
                           "LogisticRegression refuses them"),
    "bad parameter value": (["--target", "label", "--model-params", "C=-1"],
                            "--model-params: The 'C' parameter"),
    "bad parameter syntax": (["--target", "label", "--model-params", "{{C: 1"],
                             "--model-params"),
    "regressor for labels": (["--target", "label", "--model", "Ridge"],
                             "--model Ridge is a regressor, but the task is "
                             "classification"),
    "unsupported by the valuator": (
        ["--target", "label", "--model", "LinearSVC", "--model-params",
         "multi_class=crammer_singer"], "--model LinearSVC: LinearSVC with "
        "multi_class='crammer_singer' is not supported"),
    "unit without groups": (["--target", "label", "--privacy-unit", "group"],
                            "--privacy-unit needs --groups"),
    "permutations for label quality": (
        ["--target", "label", "--method", "label-quality", "--n-permutations", "5"],
        "--n-permutations applies to --method shapley only"),
    "no target option": ([], "the following arguments are required: --target"),
    "bad epsilon": (["--target", "label", "--epsilon", "-1"], "--epsilon"),
    "bad flag fraction": (["--target", "label", "--flag-fraction", "1"],
                          "--flag-fraction"),
}


@pytest.fixture
def bad_files(files):
    folder, train, val = files
    paths = {"folder": folder, "train": str(folder / "train.csv")}
    for name, table in {"val_no_label": val.drop(columns="label"),
                        "val_no_b": val.drop(columns="b"),
                        "val_extra": val.assign(extra=1.0)}.items():
        table.to_csv(folder / f"{name}.csv", index=False)
        paths[name] = str(folder / f"{name}.csv")
    (folder / "broken.parquet").write_bytes(b"not a parquet file")
    paths["broken"] = str(folder / "broken.parquet")
    return paths


@pytest.mark.parametrize("case", list(BAD_VALUE))
def test_bad_value_input_exits_2_with_one_line(bad_files, capsys, case):
    if case == "unreadable validation":
        pytest.importorskip("pyarrow")
    args, expected = BAD_VALUE[case]
    args = [arg.format(**bad_files) for arg in args]
    code, out, err = _value(capsys, bad_files["train"], *args)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("skdpval value: error: ")
    if expected is not None:
        assert expected.format(**bad_files) in lines[0]


@pytest.mark.parametrize("args", [
    ["--target", "nope"],
    ["--target", "label", "--validation", "{val_no_b}"],
])
def test_bad_value_input_in_a_process_has_no_traceback(bad_files, args):
    result = _run("value", bad_files["train"],
                  *[arg.format(**bad_files) for arg in args])
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_errors_never_quote_a_private_value(files, capsys):
    folder, train, _ = files
    secret = "salary=183000"
    for column, value in (("a", secret), ("label", secret)):
        changed = train.astype({column: object})
        changed.loc[5, column] = value
        changed.to_csv(folder / "private.csv", index=False)
        code, out, err = _value(capsys, folder / "private.csv", "--target", "label",
                                "--validation", folder / "val.csv", "--method",
                                "label-quality", "--epsilon", "3", "--quiet")
        assert code == 2, err
        assert secret not in err and "183000" not in err
        assert len(err.splitlines()) == 1, err
        if column == "a":
            assert "column 'a'" in err
    # a training file that cannot be parsed: its message is not quoted
    (folder / "garbled.csv").write_bytes(b"a,b,label\n1,2,good\n\xff" + secret.encode()
                                         + b"\xfe,3,4,5\n")
    code, out, err = _value(capsys, folder / "garbled.csv", "--target", "label")
    assert code == 2 and secret not in err and "183000" not in err


def test_value_help_documents_every_option():
    result = _run("value", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    for action in command_parser(build_parser(), "value")._actions:
        if action.option_strings and action.dest != "help":
            assert action.option_strings[0] in text
            assert action.help, action.dest
    assert "one-hot encoded" in text and "validation rows only" in text
