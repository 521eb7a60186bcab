"""``skdpval value`` on a folder or glob of Parquet files, read with Dask (issue
46, item 3): the values of the Python API row for row, one file per input
partition, every bad input refused in one line before any release."""

import json
import math
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from skdpval import DPDataValuator, DPLabelQuality  # noqa: E402
from skdpval.cli import main  # noqa: E402
from skdpval.cli import _dask_files  # noqa: E402
from skdpval.cli import _value as value_cli  # noqa: E402

NOISE_SEED = 46


def _value(capsys, *args):
    try:
        code = main(["value", *(str(arg) for arg in args)])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(folder, n, parts, seed=0):
    """``parts`` Parquet files of ``n`` training rows (numbers, a text column,
    string labels) and a validation file; returns the training frame in
    input order and the validation frame."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n + 1000, n_features=4, n_informative=3,
                               n_redundant=0, random_state=seed)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["site"] = np.random.default_rng(seed).choice(["north", "south"], len(frame))
    frame["label"] = np.where(y == 1, "good", "bad")
    train, val = frame.iloc[:n].reset_index(drop=True), frame.iloc[n:]
    data = folder / "data"
    data.mkdir()
    bounds = np.linspace(0, n, parts + 1).astype(int)
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        train.iloc[lo:hi].to_parquet(data / f"rows-{i:02d}.parquet", index=False)
    val.to_parquet(folder / "val.parquet", index=False)
    return train, val, bounds


@pytest.fixture
def seeded(monkeypatch):
    """The command line's valuator with ``noise_seed`` (reproducible noise)."""
    def with_seed(args, model):
        return value_cli._valuator(args, model).set_params(noise_seed=NOISE_SEED)

    monkeypatch.setattr(_dask_files, "_valuator", with_seed)


def _python_api(valuator, train, val, chunks=None):
    """The valuator fitted on the rows in memory (or, given ``chunks``, as a
    Dask array of those blocks), encoded as the command line does (the text
    column one-hot from the validation rows' categories)."""
    def encode(frame):
        return np.column_stack([frame["site"] == "(missing)", frame["site"] == "north",
                                frame["site"] == "south",
                                frame[["a", "b", "c", "d"]]]).astype(np.float64)

    X = encode(train)
    if chunks is not None:
        import dask.array as da

        X = da.from_array(X, chunks=(chunks, X.shape[1]))
    return valuator.fit(X, train["label"].to_numpy(),
                        X_val=encode(val), y_val=val["label"].to_numpy())


def _read_parts(folder):
    names = sorted(name for name in os.listdir(folder) if name.startswith("part-"))
    return names, pd.concat([pd.read_parquet(folder / name) for name in names],
                            ignore_index=True)


def test_a_glob_on_two_workers_gives_the_python_apis_values(tmp_path, capsys, seeded):
    """The issue's acceptance: a 10^5-row glob on a local cluster of 2 workers,
    values equal to the Python API's at the same noise_seed, row for row."""
    train, val, bounds = _write(tmp_path, 100_000, 4)
    code, out, err = _value(capsys, tmp_path / "data" / "*.parquet", "--target",
                            "label", "--validation", tmp_path / "val.parquet",
                            "--workers", "2", "--memory-limit", "1GiB",
                            "--epsilon", "3", "--n-permutations", "20",
                            "--output", tmp_path / "out")
    assert code == 0, err
    assert out == ""
    names, result = _read_parts(tmp_path / "out")
    assert names == [f"part-{i:05d}.parquet" for i in range(4)]
    assert [len(pd.read_parquet(tmp_path / "out" / name)) for name in names] == list(
        np.diff(bounds))
    # On Dask input the network (which the choice prefers here in memory) has
    # no walk: both leave it out, walk the linear model and say so.
    expected = _python_api(DPDataValuator(
        n_permutations=20, epsilon=3.0, random_state=0, noise_seed=NOISE_SEED),
        train, val, chunks=tuple(np.diff(bounds)))
    assert expected.model_choice_["chosen"] == "LogisticRegression"
    assert ("MLPClassifier left out: no walk on Dask input"
            in expected.model_choice_["why"])
    assert "model: LogisticRegression of LogisticRegression, MLPClassifier (" in err
    np.testing.assert_array_equal(result["value"].to_numpy(), expected.values_)
    np.testing.assert_array_equal(result["stderr"].to_numpy(), expected.values_stderr_)
    np.testing.assert_array_equal(result["rank"].to_numpy(), expected.rank_)
    n_flagged = int(np.ceil(0.1 * len(train)))
    assert result["flagged"].sum() == n_flagged
    assert result.loc[result["flagged"], "value"].max() <= result.loc[
        ~result["flagged"], "value"].min()
    assert not result["held_out"].any()
    assert "local Dask cluster: 2 worker process(es)" in err
    assert "% Completed" in err  # Dask's progress bar, on stderr
    assert err.strip().splitlines()[-1].startswith("privacy: epsilon 3")


def test_a_folder_in_this_process_labels_and_stale_parts(tmp_path, capsys, seeded):
    """A folder read by Dask's threads here: label quality equals the Python
    API's; a later run on fewer partitions leaves no old part behind."""
    train, val, _ = _write(tmp_path, 3000, 3)
    out = tmp_path / "out"
    out.mkdir()
    for i in range(5):  # an earlier run's, on 5 partitions
        (out / f"part-{i:05d}.parquet").write_bytes(b"old")
    (out / "notes.txt").write_text("mine")
    code, _, err = _value(capsys, tmp_path / "data", "--target", "label",
                          "--validation", tmp_path / "val.parquet", "--method",
                          "label-quality", "--epsilon", "2", "--output", out,
                          "--report", tmp_path / "report.json", "--quiet")
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["notes.txt"] + [f"part-{i:05d}.parquet"
                                                       for i in range(3)]
    _, result = _read_parts(out)
    expected = _python_api(DPLabelQuality(epsilon=2.0, random_state=0,
                                          noise_seed=NOISE_SEED), train, val)
    np.testing.assert_array_equal(result["value"].to_numpy(), expected.values_)
    np.testing.assert_array_equal(result["stderr"].to_numpy(),
                                  expected.values_stderr_)
    # --flag-fraction auto (the default): the Python API's estimate, flagged
    bad = json.loads((tmp_path / "report.json").read_text())["bad_labels"]
    assert bad["share"] == expected.noisy_share_.share
    assert result["flagged"].sum() == math.ceil(bad["flag_fraction"] * len(result)
                                                - 1e-9)


@pytest.fixture
def small(tmp_path):
    _write(tmp_path, 600, 3)
    return tmp_path


@pytest.mark.parametrize("extra, message", [
    (["--output", "{out}"], "needs --validation FILE"),
    (["--validation", "{val}"], "pass --output FOLDER"),
    (["--validation", "{val}", "--output", "{out}/v.parquet"], "must be a folder"),
    (["--validation", "{val}", "--output", "{data}"], "holds the input file TRAIN"),
    (["--validation", "{val}", "--output", "{out}", "--groups", "site"],
     "--groups is not supported"),
    (["--validation", "{val}", "--output", "{out}", "--sep", ";"],
     "--sep applies to CSV files only"),
    (["--validation", "{val}", "--output", "{out}", "--model", "MLPClassifier"],
     "--model MLPClassifier with --method shapley is not supported"),
    (["--validation", "{val}", "--output", "{out}", "--features", "nope"],
     "column 'nope' (--features) is not in"),
])
def test_bad_input_exits_2_with_one_line_before_any_work(small, capsys, extra, message):
    paths = dict(val=small / "val.parquet", out=small / "out", data=small / "data")
    code, out, err = _value(capsys, small / "data" / "*.parquet", "--target", "label",
                            *(arg.format(**paths) for arg in extra))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not (small / "out").exists()


def test_a_glob_matching_other_files_and_a_report_over_an_input_are_refused(
        small, capsys):
    (small / "data" / "notes.csv").write_text("a,label\n1,0\n")
    common = ["--target", "label", "--validation", small / "val.parquet",
              "--output", small / "out"]
    code, _, err = _value(capsys, small / "data" / "*", *common)
    assert code == 2 and "matches files that are not Parquet" in err
    code, _, err = _value(capsys, small / "data" / "*.parquet", *common, "--report",
                          small / "data" / "rows-01.parquet")
    assert code == 2 and "is the input file TRAIN" in err
    assert not (small / "out").exists()


@pytest.mark.parametrize("option", [["--workers", "1"], ["--scheduler", "x:1"]])
def test_a_csv_train_with_a_cluster_is_refused(tmp_path, capsys, option):
    pd.DataFrame({"a": [1.0, 2.0], "label": [0, 1]}).to_csv(tmp_path / "t.csv")
    code, _, err = _value(capsys, tmp_path / "t.csv", "--target", "label",
                          "--validation", tmp_path / "t.csv", "--output",
                          tmp_path / "out", *option)
    assert code == 2 and "reads Parquet files" in err


def test_a_bad_value_in_one_file_gets_the_one_file_message(small, capsys):
    """A text value in a numeric column of the second file: the message of
    one file, naming the column, quoting no value, and nothing written."""
    bad = pd.read_parquet(small / "data" / "rows-01.parquet")
    bad["b"] = bad["b"].astype(str)
    bad.loc[7, "b"] = "secret-value"
    bad.to_parquet(small / "data" / "rows-01.parquet", index=False)
    code, _, err = _value(capsys, small / "data", "--target", "label",
                          "--validation", small / "val.parquet", "--output",
                          small / "out", "--quiet")
    assert code == 2
    assert ("column 'b' is numeric in the validation rows but not in the training "
            "rows") in err
    assert "secret" not in err and len(err.strip().splitlines()) == 1
    assert not (small / "out").exists()
