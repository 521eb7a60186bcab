"""The command line (python -m skdpval): help, and bad arguments refused cleanly."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skdpval.__main__ import _versus_band, build_parser

ROOT = Path(__file__).resolve().parents[1]


def _run(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "skdpval", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def test_help_documents_every_option_with_its_default():
    result = _run("--help")
    assert result.returncode == 0, result.stderr
    options = [action for action in build_parser()._actions
               if action.option_strings and action.dest != "help"]
    assert len(options) == 6
    for action in options:
        assert action.help, action.dest
        name = action.option_strings[0]
        # the option's own block in --help: its help text and its default
        block = result.stdout.split(f"\n  {name}", 1)[1].split("\n  --", 1)[0]
        assert action.help.split()[0] in block, name
        assert f"(default: {action.default})" in " ".join(block.split()), name


BAD = [
    ["--epsilon", "0"],
    ["--epsilon", "-1"],
    ["--epsilon", "nan"],
    ["--epsilon", "abc"],
    ["--epsilon", "1e9"],              # beyond what the calibration supports
    ["--delta", "1"],
    ["--flip-fraction", "0"],
    ["--flip-fraction", "1"],
    ["--flip-fraction", "0.001", "--dataset", "iris"],  # flips no label
    ["--n-permutations", "1"],
    ["--random-state", "-3"],
    ["--dataset", "mnist"],
    ["--no-such-option"],
]


@pytest.mark.parametrize("args", BAD, ids=" ".join)
def test_bad_arguments_exit_2_with_one_line(args):
    result = _run(*args)
    assert result.returncode == 2
    assert result.stdout == ""  # refused before any work or output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert re.match(r"python -m skdpval: error: (argument --|unrecognized)",
                    lines[0]), lines[0]


def test_a_run_is_compared_with_the_limit_and_the_band():
    limit, high = 0.866, 0.906
    assert _versus_band(0.85, limit, high, True) == "below the limit"
    assert "inside the band" in _versus_band(0.88, limit, high, True)
    assert "ABOVE THE BAND" in _versus_band(0.91, limit, high, True)
    assert "no limit" in _versus_band(0.99, limit, high, False)



def test_delta_reaches_every_fit(monkeypatch, capsys):
    """``--delta`` is the delta of every private fit, not only the header's."""
    import skdpval.__main__ as cli

    fitted = []

    def recording(make):
        def make_and_record(*args):
            estimator = make(*args)
            fitted.append(estimator)
            return estimator
        return make_and_record

    monkeypatch.setattr(cli, "RUNS", tuple(
        (label, meaning, recording(make)) for label, meaning, make in cli.RUNS))
    cli.main(["--delta", "1e-6", "--n-permutations", "20", "--dataset", "iris",
              "--flip-fraction", "0.2"])
    out = capsys.readouterr().out
    assert "delta=1e-06" in out
    assert len(fitted) == len(cli.RUNS)
    private = [estimator for estimator in fitted if estimator.epsilon_ != float("inf")]
    assert len(private) == len(cli.RUNS) - 1  # all but the no-noise reference
    # delta_ may add the grid sampler's tiny term to the delta asked for
    # (the default 5e-5 would be 50 times off)
    for estimator in private:
        assert estimator.delta_ == pytest.approx(1e-6, rel=0.01), type(estimator)
        assert estimator.privacy_report_["delta"] == pytest.approx(1e-6, rel=0.01)
    # the report printed last is that of a fit at 1e-6 too
    report = json.loads(out.split("privacy report of the defaults:\n", 1)[1])
    assert report["delta"] == pytest.approx(1e-6, rel=0.01)
