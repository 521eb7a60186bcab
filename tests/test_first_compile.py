"""The one line a first fit says when its kernels compile (issue 35)."""

import json
import os
import re
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest
from sklearn.datasets import make_classification

import skdpval.kernels._linear as kernels_module
import skdpval.kernels._subspace as subspace_module
from skdpval import DPDataValuator
from skdpval.exceptions import (FIRST_FIT_SECONDS, FirstCompileWarning,
                                warn_if_first_compile)

ROOT = Path(__file__).resolve().parents[1]


def _kernel(index_path, signatures=()):
    cache = types.SimpleNamespace(_cache_file=types.SimpleNamespace(
        _index_path=str(index_path),
        _load_index=lambda: {"entry": 0} if index_path.exists() else {}))
    return types.SimpleNamespace(signatures=list(signatures), _cache=cache)


def test_it_warns_only_without_an_on_disk_cache(tmp_path):
    missing = _kernel(tmp_path / "kernel.nbi")
    with pytest.warns(FirstCompileWarning, match="takes about 4.5 s on a quiet"):
        assert warn_if_first_compile(missing, "a walk", 4.5)
    with pytest.warns(FirstCompileWarning, match=r"of a walk \(once;"):
        assert warn_if_first_compile(missing, "a walk")  # no time said
    (tmp_path / "kernel.nbi").write_bytes(b"")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_if_first_compile(missing, "a walk", 4.5)
        compiled = _kernel(tmp_path / "other.nbi", signatures=["(float64,)"])
        assert not warn_if_first_compile(compiled, "a walk", 4.5)


@pytest.mark.parametrize("subspace, kernel, says", [
    ("public", "_line_walk", f"default walk along a public line (the first fit "
                             f"takes about {FIRST_FIT_SECONDS:g} s"),
    (None, "_walk", "full-space walk (once;")])
def test_a_fit_says_it_when_its_walk_has_no_cache(monkeypatch, tmp_path, subspace,
                                                   kernel, says):
    """The walk's kernel, as if never compiled and not cached: the warning
    names the walk, and quotes the benchmark's time for the default's only."""
    module = subspace_module if subspace == "public" else kernels_module
    monkeypatch.setattr(module, kernel, _kernel(tmp_path / "absent.nbi"),
                        raising=True)
    X, y = make_classification(n_samples=60, n_features=3, n_informative=2,
                               n_redundant=0, random_state=0)
    valuator = DPDataValuator(epsilon=1.0, n_permutations=2, random_state=0,
                              subspace=subspace)
    with pytest.warns(FirstCompileWarning, match=re.escape(says)):
        try:
            valuator.fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:])
        except (TypeError, AttributeError):
            pass  # the stand-in kernel cannot walk: the warning came first


def test_a_default_fit_compiles_each_kernel_once():
    """A fresh process's default fit compiles (or loads) each kernel it calls
    once: its set-up walks on the walk's own kernel with the walk's flags
    (:func:`skdpval.kernels._subspace_problem.set_up_problem`), not on a second
    specialisation of it."""
    code = (
        "import json, sys, warnings\n"
        "from numba.core.registry import CPUDispatcher\n"
        "from sklearn.datasets import load_breast_cancer\n"
        "from skdpval import DPDataValuator\n"
        "X, y = load_breast_cancer(return_X_y=True)\n"
        "warnings.simplefilter('ignore')\n"
        "DPDataValuator(n_permutations=32).fit(X[:300], y[:300], X_val=X[300:],\n"
        "                                      y_val=y[300:])\n"
        "print(json.dumps({f'{m}.{a}': len(v.signatures)\n"
        "                  for m, module in list(sys.modules.items())\n"
        "                  if m.startswith('skdpval')\n"
        "                  for a, v in vars(module).items()\n"
        "                  if isinstance(v, CPUDispatcher) and v.signatures}))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env, cwd=ROOT, timeout=300).stdout
    compiled = json.loads(out.strip().splitlines()[-1])
    assert compiled["skdpval.kernels._subspace._line_walk"] == 1
    assert {name for name, count in compiled.items() if count != 1} == set()
