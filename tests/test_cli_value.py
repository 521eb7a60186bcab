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

from skdpval.cli import _models, _table, main
from skdpval.cli import _value as value_cli
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
                  "--output", tmp_path / "out.csv",
                  "--report", tmp_path / "report.json")
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
    "output is the training file": (["--target", "label", "--output", "{train}"],
                                    "--output {train!r} is the input file TRAIN"),
    "report is the validation file": (
        ["--target", "label", "--validation", "{val}", "--report", "{val}"],
        "--report {val!r} is the input file --validation"),
    "output is a folder": (["--target", "label", "--output", "{folder}/dir.csv"],
                           "is a folder: name a file"),
    "output in no folder": (["--target", "label", "--output", "{folder}/no/out.csv"],
                            "--output: no such folder"),
    "feature not in the file": (["--target", "label", "--features", "a", "nope"],
                                "column 'nope' (--features) is not in"),
    "drop the target": (["--target", "label", "--drop", "label"],
                        "--drop 'label' is the --target column"),
    "features and drop": (["--target", "label", "--features", "a", "--drop", "b"],
                          "not allowed with argument"),
    "sep for parquet": (["--target", "label", "--validation", "{broken}", "--sep",
                         ";"], "--sep applies to CSV files only"),
    "bad sep": (["--target", "label", "--sep", ";;"], "argument --sep"),
    "bad impute": (["--target", "label", "--impute", "mode"], "argument --impute"),
    "empty file": (["--target", "label", "--validation", "{folder}/empty.csv"],
                   "the file is empty"),
    "text target for regression": (["--target", "site", "--task", "regression"],
                                   "--task regression needs a numeric --target"),
    "unknown label-quality model": (
        ["--target", "label", "--method", "label-quality", "--model", "Forest"],
        "--model 'Forest' is not a classifier or regressor of scikit-learn"),
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
    paths = {"folder": folder, "train": str(folder / "train.csv"),
             "val": str(folder / "val.csv")}
    (folder / "dir.csv").mkdir()
    (folder / "empty.csv").write_text("")
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


@pytest.mark.parametrize("case", ["number column, held-out split", "ragged line",
                                  "regression target", "class outside the set",
                                  "missing target", "unreadable parquet"])
def test_more_bad_training_rows_exit_2_quoting_no_value(files, capsys, case):
    """Every bad training row ends in one line that names a column, a line
    number or an option, never the value."""
    folder, train, val = files
    secret = "183000"
    path = folder / "private.csv"
    args = ["--target", "label", "--method", "label-quality", "--epsilon", "3"]
    protected = _rows(len(train))[0]
    changed = train.astype(object)
    if case == "number column, held-out split":
        changed.loc[protected[0], "b"] = f"salary={secret}"
    elif case == "regression target":
        changed["label"] = (train["a"] * 1000).astype(object)
        changed.loc[protected[0], "label"] = f"salary={secret}"
        args += ["--task", "regression"]
    elif case == "class outside the set":
        changed.loc[protected[0], "label"] = f"salary={secret}"
    elif case == "missing target":
        changed.loc[protected[0], "label"] = None
        changed.loc[protected[1], "a"] = secret
    changed.to_csv(path, index=False)
    if case == "ragged line":
        lines = path.read_text().splitlines()
        lines[-1] += f",{secret}"
        path.write_text("\n".join(lines) + "\n")
    if case == "unreadable parquet":
        pytest.importorskip("pyarrow")
        path = folder / "private.parquet"
        path.write_bytes(b"PAR1" + secret.encode() * 3)
    code, out, err = _value(capsys, path, *args)
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("skdpval value: error: ")
    assert secret not in err, err


def test_value_help_documents_every_option():
    result = _run("value", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    for action in command_parser(build_parser(), "value")._actions:
        if action.option_strings and action.dest != "help":
            assert action.option_strings[0] in text
            assert action.help, action.dest
    assert "one-hot encoded" in text and "validation rows only" in text


def _stderr_lines(err):
    """stderr's lines without the progress clock (``[  1.2 s] ``)."""
    import re
    return [re.sub(r"^\[ *[\d.]+ s\] ", "", line) for line in err.splitlines()]


def _label_quality(capsys, *args):
    """``skdpval value --method label-quality --epsilon 3 ...``, in-process."""
    return _value(capsys, *args, "--method", "label-quality", "--epsilon", "3")


# ---------------------------------------------------------------------------
# Item 2: an output never replaces an input, and is written whole or not at all
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["same path", "another spelling", "symlink",
                                  "hard link", "validation file", "report",
                                  "report is output"])
def test_an_output_that_is_an_input_is_refused(files, capsys, case):
    folder, _, _ = files
    train, val = folder / "train.csv", folder / "val.csv"
    before = {path: path.read_bytes() for path in (train, val)}
    if case == "symlink":
        os.symlink(train, folder / "link.csv")
    if case == "hard link":
        os.link(train, folder / "hard.csv")
    outputs = {"same path": ["--output", train],
               "another spelling": ["--output",
                                    f"{folder}/../{folder.name}/./train.csv"],
               "symlink": ["--output", folder / "link.csv"],
               "hard link": ["--output", folder / "hard.csv"],
               "validation file": ["--output", val],
               "report": ["--report", train],
               "report is output": ["--output", folder / "out.csv", "--report",
                                    f"{folder}/./out.csv"]}[case]
    code, out, err = _label_quality(capsys, train, "--target", "label",
                                    "--validation", val, *outputs)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1, err
    assert ("writing it would replace it" in err if case != "report is output"
            else "--output and --report name the same file" in err)
    assert {path: path.read_bytes() for path in (train, val)} == before
    assert not (folder / "out.csv").exists()


def test_write_atomically_leaves_the_old_file_or_none():
    from skdpval.cli._files import write_atomically

    def interrupted(temporary):
        with open(temporary, "w") as file:
            file.write("half of the new")
        raise KeyboardInterrupt

    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "values.csv")
        with pytest.raises(KeyboardInterrupt):  # no old file: none after
            write_atomically(path, interrupted)
        assert os.listdir(folder) == []
        with open(path, "w") as file:
            file.write("old\n")
        os.chmod(path, 0o640)
        with pytest.raises(KeyboardInterrupt):
            write_atomically(path, interrupted)
        assert open(path).read() == "old\n" and os.listdir(folder) == ["values.csv"]

        def whole(temporary):
            assert os.path.dirname(temporary) == folder  # renamed within it
            assert temporary.endswith("values.csv")  # pandas infers compression
            with open(temporary, "w") as file:
                file.write("new\n")

        write_atomically(path, whole)
        assert open(path).read() == "new\n" and os.listdir(folder) == ["values.csv"]
        assert os.stat(path).st_mode & 0o777 == 0o640  # the old file's mode


@pytest.mark.parametrize("output", ["out.csv", "out.parquet", "report.json"])
def test_a_run_interrupted_while_writing_leaves_the_old_output(files, capsys,
                                                               monkeypatch, output):
    """A writer that raises halfway through (an interruption, a full disk):
    the old output is left as it was, and no temporary file."""
    if output.endswith("parquet"):
        pytest.importorskip("pyarrow")
    folder, _, _ = files
    path = folder / output
    path.write_bytes(b"the old output\n")

    def half(self_or_text, target, *args, **kwargs):
        with open(target, "w") as file:
            file.write("value,stderr\n0.1,")
        raise OSError(28, "No space left on device")

    if output == "report.json":
        monkeypatch.setattr(value_cli, "_write_report", lambda report, target: (
            value_cli.write_atomically(target,
                                       lambda temporary: half(None, temporary))))
        where = ["--report", path]
    else:
        method = "to_parquet" if output.endswith("parquet") else "to_csv"
        monkeypatch.setattr(pd.DataFrame, method, half)
        where = ["--output", path]
    code, out, err = _label_quality(capsys, folder / "train.csv", "--target", "label",
                                    "--validation", folder / "val.csv", "--quiet",
                                    *where)
    assert code == 1
    assert err.splitlines()[0] == (f"skdpval value: error: cannot write {str(path)!r}; "
                                   "an old file there is left as it was (No space "
                                   "left on device)")
    assert path.read_bytes() == b"the old output\n"
    assert sorted(os.listdir(folder)) == sorted(["train.csv", "val.csv", output])


# ---------------------------------------------------------------------------
# Item 3: which columns are numbers is read off the public rows only
# ---------------------------------------------------------------------------

def _rows(n_rows, seed=0, fraction=0.2):
    """``(protected, public)`` row numbers of a file without --validation."""
    held = value_cli._hold_out(n_rows, None, fraction, seed)
    return np.flatnonzero(~held), np.flatnonzero(held)


def _spy_on_encode(monkeypatch):
    """Record what ``encode`` returns: the features' shape and text columns."""
    seen = []

    def encode(*args, **kwargs):
        X, X_val, text = original(*args, **kwargs)
        seen.append((X.shape[1], list(text)))
        return X, X_val, text

    original = _table.encode
    monkeypatch.setattr(value_cli, "encode", encode)
    return seen


def test_two_files_differing_in_a_protected_row_print_the_same(tmp_path, capsys,
                                                               monkeypatch):
    """A missing value in a protected row of a True/False column made pandas
    read the whole column as text: one-hot encoded, named in the progress.
    Read off the public rows, the column is numeric in both files."""
    train, _ = _tables(n_train=150)
    train["member"] = np.arange(len(train)) % 3 == 0
    protected, public = _rows(len(train))
    changed = train.astype({"member": object})
    changed.loc[protected[0], "member"] = None
    train.to_csv(tmp_path / "a.csv", index=False)
    changed.to_csv(tmp_path / "b.csv", index=False)
    seen = _spy_on_encode(monkeypatch)
    runs = []
    for name in ("a.csv", "b.csv"):
        # a fixed --flag-fraction: auto's line quotes its estimate, a function
        # of the releases, whose noise is fresh in each run
        code, out, err = _label_quality(capsys, tmp_path / name, "--target", "label",
                                        "--impute", "most_frequent",
                                        "--flag-fraction", "0.1")
        assert code == 0, err
        runs.append([line.replace(name, "FILE") for line in _stderr_lines(err)])
    assert runs[0] == runs[1]
    assert seen[0] == seen[1] == (9, ["site"])  # site's 3 + missing, 5 numbers
    assert "member" not in " ".join(runs[0])


def test_a_text_value_in_a_protected_row_is_refused_as_with_validation(
        tmp_path, capsys):
    """One text value in a protected row of a numeric column: refused as the
    --validation path refuses it (naming the column, not the value); in a
    held-out (public) row it makes the column text, a public choice."""
    train, _ = _tables(n_train=150)
    protected, public = _rows(len(train))
    for row, expected in ((protected[3], None), (public[3], "a, site")):
        changed = train.astype({"a": object})
        changed.loc[row, "a"] = "salary=183000"
        changed.to_csv(tmp_path / "changed.csv", index=False)
        code, out, err = _label_quality(capsys, tmp_path / "changed.csv",
                                        "--target", "label")
        assert "183000" not in err
        if expected is None:
            assert code == 2 and out == ""
            assert err.splitlines() == [
                "skdpval value: error: column 'a' is numeric in the validation rows "
                "but not in the training rows: some training value is not a number "
                "(the values are not shown)"]
        else:
            assert code == 0, err
            assert f"(2 one-hot encoded from the validation rows: {expected})" in err


def test_column_kinds_read_the_rows_given_only():
    frame = pd.DataFrame({"n": ["1", "2.5", None], "t": ["1", "x", "2"],
                          "b": [True, False, None], "s": ["True", "false", "TRUE"],
                          "f": [1.0, np.nan, 3.0]})
    assert _table.column_kinds(frame, pd) == {"n": "number", "t": "text",
                                              "b": "number", "s": "number",
                                              "f": "number"}
    values, not_numbers = _table.numbers(frame["s"], pd)
    np.testing.assert_array_equal(values, [1.0, 0.0, 1.0])
    assert not not_numbers.any()
    assert _table.numbers(frame["t"], pd)[1].tolist() == [False, True, False]
    # a typed file (Parquet) says a column of strings is text, digits or not
    assert _table.column_kinds(frame, pd, typed=True) == {
        "n": "text", "t": "text", "b": "number", "s": "text", "f": "number"}


def test_a_parquet_column_of_digit_strings_stays_text(files, capsys, monkeypatch):
    pytest.importorskip("pyarrow")
    folder, train, val = files
    for table, name in ((train, "train"), (val, "val")):
        table.assign(code=(table["clinic"] + 10).astype(str)).to_parquet(
            folder / f"{name}.parquet", index=False)
    seen = _spy_on_encode(monkeypatch)
    code, out, err = _label_quality(capsys, folder / "train.parquet", "--target",
                                    "label", "--validation", folder / "val.parquet",
                                    "--quiet")
    assert code == 0, err
    assert seen[-1][1] == ["site", "code"]


# ---------------------------------------------------------------------------
# Item 7: the gaps of the command line
# ---------------------------------------------------------------------------

def test_epsilon_inf_says_not_private_first_and_unmissably(files, capsys):
    folder, _, _ = files
    code, out, err = _value(capsys, folder / "train.csv", "--target", "label",
                            "--validation", folder / "val.csv", "--quiet",
                            "--method", "label-quality", "--epsilon", "inf",
                            "--report", folder / "report.json")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == ("skdpval value: WARNING: --epsilon inf adds no privacy "
                        "noise: the output is NOT PRIVATE (every value can reveal "
                        "its row's data)")
    assert _summary(err).startswith("privacy: none (--epsilon inf): the output is "
                                    "NOT PRIVATE")
    assert json.loads((folder / "report.json").read_text())["private"] is False
    result = pd.read_csv(io.StringIO(out))
    assert (result["stderr"] == 0).all()  # no noise: said above, not only here


# Names of the Python API that a command-line user cannot pass.
PYTHON_ONLY = ("classes=", "noise_multiplier", "nan_to_num", "X_val", "y_val",
               "n_permutations", "privacy_report_", "epsilon=", "delta=",
               "DPDataValuator(")


def _integer_tables(tmp_path):
    """An integer target with many values (a count), in two files whose
    training rows hold values the validation rows lack."""
    from sklearn.datasets import make_regression

    X, y = make_regression(n_samples=260, n_features=3, noise=3.0, random_state=0)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["count"] = np.round((y - y.min()) / 4).astype(int)
    frame.iloc[:200].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[200:].to_csv(tmp_path / "val.csv", index=False)
    return tmp_path / "train.csv", tmp_path / "val.csv"


def test_an_integer_target_read_as_classes_hints_at_task_regression(tmp_path,
                                                                     capsys):
    train, val = _integer_tables(tmp_path)
    code, out, err = _label_quality(capsys, train, "--target", "count",
                                    "--validation", val)
    assert code == 2 and out == ""
    lines = _stderr_lines(err)
    assert lines[-1].startswith("skdpval value: error: column 'count' (--target) "
                                "has labels in the training rows that no validation "
                                "row has (the labels are not shown)")
    assert lines[-1].endswith("if column 'count' is a quantity to predict, not a "
                              "class, pass --task regression")
    assert any(line.startswith("column 'count' (--target) holds") and
               "classes; if column 'count' is a quantity" in line for line in lines)
    assert not any(name in err for name in PYTHON_ONLY), err
    code, out, err = _label_quality(capsys, train, "--target", "count",
                                    "--validation", val, "--task", "regression")
    assert code == 0, err


@pytest.mark.parametrize("case", ["single class", "out of the sampler's reach",
                                  "default epsilon", "many classes"])
def test_errors_and_warnings_name_command_line_options(files, capsys, monkeypatch,
                                                       case):
    """What the library says in Python terms is said in options."""
    import skdpval.privacy._mechanism as mechanism

    monkeypatch.setattr(mechanism, "_default_epsilon_warned", False)
    folder, train, val = files
    args = [folder / "train.csv", "--target", "label", "--validation",
            folder / "val.csv", "--method", "label-quality", "--quiet"]
    if case == "single class":
        val.assign(label="good").to_csv(folder / "val.csv", index=False)
        args += ["--epsilon", "3"]
    elif case == "out of the sampler's reach":
        args += ["--epsilon", "400"]
    elif case == "many classes":
        # 60 integer classes, each in the validation rows
        train.assign(label=np.arange(len(train)) % 60).to_csv(
            folder / "train.csv", index=False)
        val.assign(label=np.arange(len(val)) % 60).to_csv(
            folder / "val.csv", index=False)
        args += ["--epsilon", "3", "--drop", "site", "clinic"]
    code, out, err = _value(capsys, *args)
    assert not any(name in err for name in PYTHON_ONLY), err
    if case == "single class":
        assert code == 2
        assert "has a single class in the validation rows ('good')" in err
    elif case == "out of the sampler's reach":
        assert code == 2 and len(err.splitlines()) == 1
        assert err.startswith("skdpval value: error: --epsilon 400.0 at --delta 5e-05"
                              " is out of reach of the noise sampler")
        assert "lower --epsilon" in err and "raise --delta" in err
    elif case == "default epsilon":
        assert code == 0, err
        assert "Pass --epsilon (--epsilon 1 keeps this budget" in err
        assert "(DefaultEpsilonWarning)" in err
    else:
        assert code == 0, err
        assert ("looks like a regression target. A classifier's walk costs more "
                "with every class") in err
        assert "For a numeric target pass --task regression" in err
        assert "(ManyClassesWarning)" in err


def test_the_default_epsilon_warning_quotes_the_fits_delta_and_limit(
        tmp_path, capsys, monkeypatch):
    """delta="auto" is min(5e-5, 1 / (10 n)): 4e-05 for 2500 rows, not the
    cap; the limit quoted is that of the fit's own (epsilon, delta)."""
    import skdpval.privacy._mechanism as mechanism
    from skdpval.privacy import gdp_mu, noisy_label_auc_limit

    monkeypatch.setattr(mechanism, "_default_epsilon_warned", False)
    train, val = _tables(n_train=2500, n_val=100)
    train.to_csv(tmp_path / "train.csv", index=False)
    val.to_csv(tmp_path / "val.csv", index=False)
    code, out, err = _value(capsys, tmp_path / "train.csv", "--target", "label",
                            "--validation", tmp_path / "val.csv", "--method",
                            "label-quality", "--quiet", "--report",
                            tmp_path / "report.json")
    assert code == 0, err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["delta"] == pytest.approx(4e-5)
    warning = next(line for line in err.splitlines() if "default --epsilon" in line)
    limit = noisy_label_auc_limit(gdp_mu(1.0, 4e-5))
    assert "(--delta 4e-05)" in warning
    assert f"above {limit:.3f}." in warning
    assert f"{report['max_noisy_label_auc']:.3f}" == f"{limit:.3f}"
    assert f"{noisy_label_auc_limit(gdp_mu(1.0, 5e-5)):.3f}" not in warning


def test_missing_numbers_name_their_column_and_impute_offers_a_fill(files, capsys):
    folder, train, val = files
    train.loc[[3, 7], "b"] = np.nan
    train.to_csv(folder / "holes.csv", index=False)
    args = [folder / "holes.csv", "--target", "label", "--validation",
            folder / "val.csv"]
    code, out, err = _label_quality(capsys, *args)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "skdpval value: error: column 'b' has missing values in the training rows "
        "(how many is not shown): --impute (mean, median, most_frequent, zero) "
        "fills them with a statistic of the validation rows, or --drop b leaves "
        "the column out"]
    val.loc[val.index[:3], "c"] = np.nan  # public: the count is said
    val.to_csv(folder / "val_holes.csv", index=False)
    code, out, err = _label_quality(capsys, folder / "train.csv", "--target",
                                    "label", "--validation", folder / "val_holes.csv")
    assert code == 2 and "column 'c' has 3 missing values in the validation" in err
    code, out, err = _label_quality(capsys, *args, "--impute", "median")
    assert code == 0, err
    assert "missing numbers filled: --impute median" in err
    assert pd.read_csv(io.StringIO(out))["value"].notna().all()


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent", "zero"])
def test_impute_fills_with_the_validation_rows_statistics(strategy):
    train = pd.DataFrame({"x": [np.nan, 100.0, 200.0, np.nan], "t": ["u"] * 4})
    val = pd.DataFrame({"x": [1.0, 2.0, 2.0, 7.0, np.nan], "t": ["u"] * 5})
    X, X_val, text = _table.encode(train, val, strategy, pd)
    fill = {"mean": 3.0, "median": 2.0, "most_frequent": 2.0, "zero": 0.0}[strategy]
    numeric = X[:, -1]  # the one-hot columns come first
    np.testing.assert_array_equal(numeric, [fill, 100.0, 200.0, fill])
    assert X_val[-1, -1] == fill
    with pytest.raises(InputError, match="column 'x' has no value in the validation"):
        _table.encode(train, val.assign(x=np.nan), "mean", pd)


def test_a_missing_text_value_is_a_category_of_its_own():
    val = pd.DataFrame({"site": ["north", "south", "north"]})
    train = pd.DataFrame({"site": ["north", None, "west"]})
    X, X_val, text = _table.encode(train, val, None, pd)
    assert text == ["site"] and X.shape == (3, 3)  # (missing), north, south
    np.testing.assert_array_equal(X, [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(X_val[:, 0], 0)  # none missing in public rows


def test_features_and_drop_choose_the_columns(files, capsys, monkeypatch):
    folder, _, _ = files
    seen = _spy_on_encode(monkeypatch)
    common = [folder / "train.csv", "--target", "label", "--validation",
              folder / "val.csv"]
    for columns, expected in ((["--features", "a", "site"], (1 + 4, ["site"])),
                              (["--drop", "clinic", "site"], (3, [])),
                              ([], (3 + 4 + 1, ["site"]))):
        code, out, err = _label_quality(capsys, *common, *columns)
        assert code == 0, err
        assert seen[-1] == expected
    for columns, message in (
            (["--features", "a", "nope"], "column 'nope' (--features) is not in"),
            (["--features", "label"], "--features 'label' is the --target column"),
            (["--drop", "nope"], "--drop 'nope' is not a column of"),
            (["--drop", "label"], "--drop 'label' is the --target column")):
        code, out, err = _label_quality(capsys, *common, *columns)
        assert code == 2 and len(err.splitlines()) == 1
        assert message in err


def test_the_pandas_index_column_is_dropped_and_said(files, capsys, monkeypatch):
    folder, train, val = files
    train.to_csv(folder / "indexed.csv")  # pandas' default: index=True
    val.to_csv(folder / "val_indexed.csv")
    seen = _spy_on_encode(monkeypatch)
    code, out, err = _label_quality(capsys, folder / "indexed.csv", "--target",
                                    "label", "--validation", folder / "val_indexed.csv")
    assert code == 0, err
    assert ("dropped column 'Unnamed: 0' of " + repr(str(folder / "indexed.csv"))
            + ": an unnamed first column, the index pandas writes") in err
    assert seen[-1] == (8, ["site"])  # as without the index
    assert "5 feature columns" in err


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_the_separator_is_read_off_the_header_or_given(files, capsys, sep):
    folder, train, val = files
    train.to_csv(folder / "train_sep.csv", sep=sep, index=False)
    val.to_csv(folder / "val_sep.csv", sep=sep, index=False)
    args = [folder / "train_sep.csv", "--target", "label", "--validation",
            folder / "val_sep.csv"]
    code, out, err = _label_quality(capsys, *args)
    assert code == 0, err
    assert ("separator tab" if sep == "\t" else f"separator {sep!r}") in err
    given = "tab" if sep == "\t" else sep
    code, out, err = _label_quality(capsys, *args, "--sep", given)
    assert code == 0, err
    # the wrong separator: the target is missing, and the error lists what
    # was read and how
    code, out, err = _label_quality(capsys, *args, "--sep", ",")
    assert code == 2 and len(err.splitlines()) == 1
    header = sep.join(train.columns)
    assert (f"column 'label' (--target) is not in {str(folder / 'train_sep.csv')!r} "
            f"(read with separator ','; --sep to choose another); its columns: "
            f"{header!r}") in err


def test_a_ragged_line_is_named_by_its_number(files, capsys):
    folder, _, _ = files
    lines = (folder / "train.csv").read_text().splitlines()
    lines[8] += ",salary=183000"  # the file's line 9
    (folder / "ragged.csv").write_text("\n".join(lines) + "\n")
    code, out, err = _label_quality(capsys, folder / "ragged.csv", "--target", "label")
    assert code == 2 and out == ""
    assert err == (f"skdpval value: error: cannot read {str(folder / 'ragged.csv')!r}: "
                   "line 9 has 7 fields, the header 6 (separator ','; --sep to "
                   "choose another)\n")


def test_label_quality_takes_any_sklearn_classifier_shapley_the_families(
        files, capsys):
    folder, _, _ = files
    common = [folder / "train.csv", "--target", "label", "--validation",
              folder / "val.csv", "--model", "HistGradientBoostingClassifier",
              "--model-params", "max_iter=10", "--quiet"]
    code, out, err = _label_quality(capsys, *common)
    assert code == 0, err
    assert pd.read_csv(io.StringIO(out))["value"].notna().all()
    code, out, err = _value(capsys, *common, "--epsilon", "3")  # shapley
    assert code == 2 and len(err.splitlines()) == 1
    assert ("--model HistGradientBoostingClassifier: --method shapley values rows "
            "with the models the valuators map (") in err
    assert "works with --method label-quality" in err
    for name, message in (("os.system", "is not a classifier or regressor of "
                                        "scikit-learn"),
                          ("sklearn.ensemble.RandomForestClassifier",
                           "is not a classifier or regressor"),
                          ("VotingClassifier", "needs estimators: other estimators"),
                          ("RandomForestClasifier", "did you mean "
                                                    "RandomForestClassifier")):
        code, out, err = _label_quality(capsys, folder / "train.csv", "--target",
                                        "label", "--model", name)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert message in err, err


def test_label_quality_models_are_all_of_sklearns_that_need_no_estimator():
    from sklearn.utils import all_estimators

    names = {name for name, _ in all_estimators(type_filter=["classifier",
                                                             "regressor"])}
    assert names == set(_models.sklearn_models())
    buildable = {name for name in names
                 if not _models._needs(_models.sklearn_models()[name])}
    assert "HistGradientBoostingRegressor" in buildable
    assert "StackingClassifier" not in buildable
    from skdpval.families import Refused, registered
    assert set(_models.valuation_models()) == {
        cls.__name__ for cls, entry in registered().items()
        if not isinstance(entry, Refused)}
