"""Golden values: what users get, pinned before the one-design move.

A matrix of configurations (``CASES``: the four valuators; samples, record-
and group-level groups; the central and joint threat models; the public
model from the validation set or fitted privately; numpy and Dask input;
logistic regression on the public line, on a user basis and in the full
space, a regressor, three classes, a small network on its public line and in
its full space; semivalues and noise policies other than the defaults). Each
case pins every constructor parameter that can change a result (all of
``get_params()`` but ``n_jobs`` and ``verbose``; ``test_every_parameter_is_
pinned`` checks it), including a fixed ``noise_seed``, and runs on small
inputs drawn from ``np.random.RandomState`` (whose streams numpy freezes).

``tests/data/golden_values.json`` holds, for each case, the fitted
attributes (every public ``*_`` attribute the fit sets: ``values_``,
``values_stderr_``, ``rank_``, ``learning_rate_``, ``clip_norm_``,
``round_values_``, the public model's coefficients, ...) and
``privacy_report_``, encoded exactly: floats as ``float.hex()`` (``"nan"``,
``"inf"``, ``"-inf"``), arrays with their dtype and shape, tuples kept apart
from lists. It also holds the environment that produced them (numpy,
scipy, scikit-learn, numba, llvmlite, dask, Python, ``platform.machine()``,
``platform.system()`` and the CPU numba compiles for: some kernels use
``fastmath`` reassociation, whose bits depend on the vector width) and a
checksum of each input data set.

The test refits each case and compares:

- **bit for bit** when the stored environment equals the current one:
  arrays with ``np.array_equal(..., equal_nan=True)`` (and the same dtype and
  shape), everything else, ``privacy_report_`` included, as its exact
  serialised form;
- otherwise (another machine, other library versions) floats, scalars and
  arrays alike, with ``rtol=1e-7, atol=1e-12`` (NaN matches NaN, an
  infinity only itself), and everything else exactly (strings, integers,
  booleans, keys, shapes; dtypes by kind). The test says which mode it ran.
  Releases are rounded to the noise's grid, so there a last-bit difference
  can become a whole grid step, far outside the tolerance: a failure in
  this mode alone is no evidence that skdpval changed; rerun on the stored
  environment (the cases without noise, ``*no_noise*``, are not rounded).

Inputs: the fit's own X and y (or Dask arrays of them, scheduler
"synchronous"), X_val and y_val unless the case is ``split``, ``groups``
and ``sample_weight`` where the case says so. Warnings: the library's own
(``SkdpvalWarning``: a seeded fit is not private, ...) and scikit-learn's
``ConvergenceWarning`` are ignored during the fits; anything else, a
``RuntimeWarning`` above all, is left to pytest's filters (an error).

Regenerating::

    python tests/test_golden.py --regenerate            # every case
    python tests/test_golden.py --regenerate CASE ...   # these cases only

The commits of the refactor (moving ``skdpval``'s modules into
subpackages) must NOT regenerate: that the values stay the same is the
point. A change that knowingly changes values regenerates in a commit of
its own whose message says why (and which cases moved). Regenerating some
cases needs the stored environment (the file has one). One case changed
once, on purpose: ``federated_compressed_quantize``, when the stochastic
rounding coins of ``compression=("quantize", levels)`` moved from numpy's
generator to the privacy mechanism's ChaCha20 stream (kind ``ROUNDING``);
it was regenerated alone, in its own commit.
"""

import argparse
import hashlib
import json
import platform
import sys
import warnings
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

DATA_FILE = Path(__file__).resolve().parent / "data" / "golden_values.json"
RTOL, ATOL = 1e-7, 1e-12
# Parameters that change no result (tests/test_parallel.py: values do not
# depend on n_jobs).
UNPINNED = {"n_jobs", "verbose"}


# --- environment -------------------------------------------------------------------

def environment():
    """What the bits of a fit may depend on besides skdpval's own code."""
    import dask
    import llvmlite
    import numba
    import scipy
    import sklearn
    from llvmlite import binding

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "dask": dask.__version__,
        "machine": platform.machine(),
        "system": platform.system(),
        "cpu": binding.get_host_cpu_name(),
    }


# --- data: RandomState streams are frozen (NEP 19) ----------------------------------

def _linear(X, w):
    """``X @ w`` summed in a fixed order, elementwise: the same bits on any
    machine (a BLAS product may round differently)."""
    total = np.zeros(len(X))
    for j, w_j in enumerate(w):
        total = total + X[:, j] * w_j
    return total


def _binary():
    rs = np.random.RandomState(0)
    X = rs.normal(size=(120, 5))
    y = (_linear(X, [1.5, -1.0, 0.5, 0.0, 0.0]) + 0.5 * rs.normal(size=120)
         > 0).astype(int)
    y[40:][rs.rand(80) < 0.1] ^= 1  # some noisy training labels
    return X[40:], y[40:], X[:40], y[:40]


def _groups():
    """Eight groups of 4 to 16 of the 80 training rows, labelled 1, 4, ...,
    22, their rows scattered (not contiguous)."""
    rs = np.random.RandomState(3)
    sizes = [4, 6, 8, 10, 10, 12, 14, 16]
    return rs.permutation(np.repeat(3 * np.arange(8) + 1, sizes))


def _weights():
    """Sample weights of the 80 training rows."""
    return np.random.RandomState(6).uniform(0.5, 2.0, 80)


def _three_classes():
    rs = np.random.RandomState(1)
    X = rs.normal(size=(150, 5))
    W = rs.normal(size=(5, 3))
    scores = np.column_stack([_linear(X, W[:, k]) for k in range(3)])
    y = np.argmax(scores + 0.3 * rs.normal(size=(150, 3)), axis=1)
    return X[50:], y[50:], X[:50], y[:50]


def _regression():
    rs = np.random.RandomState(2)
    X = rs.normal(size=(120, 4))
    y = 10.0 + _linear(X, [3.0, -2.0, 1.0, 0.0]) + rs.normal(size=120)
    return X[40:], y[40:], X[:40], y[:40]


def _unit_box():
    """Rows in [0, 1] (the layered valuator's private rows are clipped there)."""
    rs = np.random.RandomState(4)
    X = rs.rand(70, 3)
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.2 * rs.normal(size=70) > 0.25).astype(int)
    return X[30:], y[30:], X[:30], y[:30]


DATA = {"binary": _binary, "three_classes": _three_classes, "regression": _regression,
        "unit_box": _unit_box}


def data_checksum(name):
    digest = hashlib.sha256()
    for array in (*DATA[name](), _groups(), _weights()):
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


# --- the cases ------------------------------------------------------------------------

def _logistic():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, fit_intercept=True, solver="lbfgs", tol=1e-4,
                              max_iter=100, class_weight=None, random_state=0)


def _ridge():
    from sklearn.linear_model import Ridge

    return Ridge(alpha=1.0, fit_intercept=True, solver="auto", tol=1e-4,
                 random_state=0)


def _mlp(activation="tanh"):
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(hidden_layer_sizes=(4,), activation=activation, alpha=1e-4,
                         solver="adam", learning_rate_init=1e-3, max_iter=200,
                         random_state=0)


# Every parameter of each valuator but UNPINNED, given explicitly: a case
# overrides some of them (test_every_parameter_is_pinned checks the lists).
PINNED = {
    "DPDataValuator": lambda: {
        "estimator": _logistic(), "semivalue": "shapley", "noise": "correlated",
        "q": 0.5, "epsilon": 1.0, "delta": 1e-5, "noise_multiplier": None,
        "privacy_unit": "record", "threat_model": "central", "clip_norm": "auto",
        "subspace": "public", "standardize": True, "n_permutations": 24,
        "learning_rate": "auto", "utility": "neg_loss", "validation_fraction": 0.2,
        "batch_permutations": 4, "classes": None, "public_model": "validation",
        "public_model_share": 0.05, "random_state": 0, "noise_seed": 11},
    "DPLabelQuality": lambda: {
        "estimator": _logistic(), "epsilon": 1.0, "delta": 1e-5,
        "noise_multiplier": None, "privacy_unit": "record", "threat_model": "central",
        "clip": 1.0, "standardize": True, "validation_fraction": 0.2, "classes": None,
        "public_model": "validation", "public_model_share": 0.05, "random_state": 0,
        "noise_seed": 12},
    "DPFederatedValuator": lambda: {
        "estimator": _logistic(), "n_rounds": 6, "n_permutations_per_round": 8,
        "learning_rate": 0.1, "clip_norm": 1.0, "clipping": "l2", "compression": None,
        "sign_threshold": 0.0, "noise": "correlated", "q": 0.2, "epsilon": 1.0,
        "delta": 1e-5, "noise_multiplier": None, "privacy_unit": "record",
        "threat_model": "central", "utility": "neg_loss", "standardize": True,
        "validation_fraction": 0.2, "classes": None, "random_state": 0,
        "noise_seed": 13},
    "LayeredShapleyValuator": lambda: {
        "estimator": _logistic(), "alpha": 0.3, "beta": 0.05, "c": "auto",
        "epsilon": 1.0, "lipschitz": 1.0, "kappa": "auto", "utility": "neg_loss",
        "skip_below_baseline": True, "validation_fraction": 0.2, "classes": None,
        "random_state": 0, "noise_seed": 14},
}


def _pinned(name, params):
    import skdpval

    base = PINNED[name]()
    unknown = set(params) - set(base)
    assert not unknown, f"not among the pinned parameters: {sorted(unknown)}"
    return getattr(skdpval, name)(**{**base, **params})


def data_valuator(**params):
    return _pinned("DPDataValuator", params)


def label_quality(**params):
    return _pinned("DPLabelQuality", params)


def federated(**params):
    return _pinned("DPFederatedValuator", params)


def layered(**params):
    return _pinned("LayeredShapleyValuator", params)


# data: a key of DATA; groups: fit with _groups(); dask: X and y as Dask arrays;
# split: no X_val (the valuator holds out its own validation set).
# weights: fit with _weights() as sample_weight.
Case = namedtuple("Case", "make data groups dask split weights",
                  defaults=(False, False, False, False))

CASES = {
    # DPDataValuator: the walk (logistic regression on the public line unless said)
    "data_sample_central_validation": Case(lambda: data_valuator(), "binary"),
    "data_sample_central_private_weights": Case(
        lambda: data_valuator(public_model="private", noise_seed=21), "binary",
        weights=True),
    "data_record_central": Case(lambda: data_valuator(noise_seed=22), "binary", True),
    "data_group_central": Case(
        lambda: data_valuator(privacy_unit="group", noise_seed=23), "binary", True),
    "data_sample_joint": Case(
        lambda: data_valuator(threat_model="joint", noise_seed=24), "binary"),
    "data_record_joint": Case(
        lambda: data_valuator(threat_model="joint", noise_seed=25), "binary", True),
    "data_group_joint_private": Case(
        lambda: data_valuator(threat_model="joint", privacy_unit="group",
                              public_model="private", noise_seed=26), "binary", True),
    "data_dask_validation": Case(lambda: data_valuator(noise_seed=27), "binary",
                                 dask=True),
    "data_dask_private_weights": Case(
        lambda: data_valuator(public_model="private", noise_seed=28), "binary",
        dask=True, weights=True),
    "data_dask_joint": Case(
        lambda: data_valuator(threat_model="joint", noise_seed=29), "binary",
        dask=True),
    "data_full_space": Case(
        lambda: data_valuator(subspace=None, noise_seed=30), "binary"),
    "data_full_space_record_iid": Case(
        lambda: data_valuator(subspace=None, noise="iid", q=0.0, noise_seed=31),
        "binary", True),
    "data_user_basis": Case(  # two orthonormal rows, exact in binary
        lambda: data_valuator(subspace=0.5 * np.array([[1.0, -1, 0, 0, 1, 1],
                                                       [1.0, 1, 1, -1, 0, 0]]),
                              noise_seed=32), "binary"),
    "data_three_classes_fixed_rate": Case(
        lambda: data_valuator(clip_norm=0.5, learning_rate=0.05, q="auto",
                              noise_seed=33), "three_classes"),
    "data_ridge_neg_mse_private": Case(
        lambda: data_valuator(estimator=_ridge(), utility="neg_mse",
                              public_model="private", noise_seed=34), "regression"),
    "data_ridge_r2_full_space_record": Case(
        lambda: data_valuator(estimator=_ridge(), utility="r2", subspace=None,
                              noise_seed=35), "regression", True),
    "data_mlp_public_line": Case(
        lambda: data_valuator(estimator=_mlp(), noise_seed=36), "binary"),
    "data_mlp_full_space": Case(
        lambda: data_valuator(estimator=_mlp("relu"), subspace=None,
                              n_permutations=12, q=0.0, noise="iid", noise_seed=37),
        "binary"),
    "data_banzhaf": Case(
        lambda: data_valuator(semivalue="banzhaf", noise_seed=38), "binary"),
    "data_beta_16_1_group": Case(
        lambda: data_valuator(semivalue=("beta", 16, 1), privacy_unit="group",
                              noise_seed=39), "binary", True),
    "data_loo_noise_multiplier": Case(
        # 3 n permutations: leave-one-out values most parties
        lambda: data_valuator(semivalue="loo", epsilon=None, noise_multiplier=8.0,
                              n_permutations=240, batch_permutations=16, q=0.0,
                              noise_seed=40), "binary"),
    "data_accuracy_schedule": Case(
        lambda: data_valuator(utility="accuracy",
                              noise=1.0 / np.sqrt(np.arange(1.0, 25.0)),
                              noise_seed=41), "binary"),
    # Without noise nothing is rounded to the noise's grid, which would
    # absorb a change in the last bits of what is released.
    "data_no_noise_split": Case(
        lambda: data_valuator(epsilon=np.inf, noise="none", q=0.0,
                              validation_fraction=0.3, noise_seed=42),
        "binary", split=True),

    # DPLabelQuality: the label score
    "label_sample_central_validation": Case(lambda: label_quality(), "binary"),
    "label_sample_central_private": Case(
        lambda: label_quality(public_model="private", noise_seed=51), "binary"),
    "label_record_central": Case(lambda: label_quality(noise_seed=52), "binary", True),
    "label_group_central": Case(
        lambda: label_quality(privacy_unit="group", clip=1.5, noise_seed=53),
        "binary", True),
    "label_sample_joint": Case(
        lambda: label_quality(threat_model="joint", noise_seed=54), "binary"),
    "label_record_joint_private": Case(
        lambda: label_quality(threat_model="joint", public_model="private",
                              noise_seed=55), "binary", True),
    "label_dask_validation": Case(lambda: label_quality(noise_seed=56), "binary",
                                  dask=True),
    "label_dask_private": Case(
        lambda: label_quality(public_model="private", noise_seed=57), "binary",
        dask=True),
    "label_private_no_noise_record": Case(
        lambda: label_quality(public_model="private", epsilon=np.inf,
                              noise_seed=61), "binary", True),
    "label_three_classes_private": Case(
        lambda: label_quality(public_model="private", public_model_share=0.2,
                              noise_seed=58), "three_classes"),
    "label_ridge_split": Case(
        lambda: label_quality(estimator=_ridge(), validation_fraction=0.3,
                              noise_seed=59), "regression", split=True),
    "label_mlp_public_model": Case(
        lambda: label_quality(estimator=_mlp(), noise_seed=60), "binary"),

    # DPFederatedValuator: clients are the groups
    "federated_record_central": Case(lambda: federated(), "binary", True),
    "federated_group_central": Case(
        lambda: federated(privacy_unit="group", noise_seed=71), "binary", True),
    "federated_record_joint": Case(
        lambda: federated(threat_model="joint", noise_seed=72), "binary", True),
    "federated_group_joint_iid_coordinate": Case(
        lambda: federated(threat_model="joint", privacy_unit="group", noise="iid",
                          clipping="coordinate", clip_norm=0.3, noise_seed=73),
        "binary", True),
    "federated_ridge_split": Case(
        lambda: federated(estimator=_ridge(), utility="neg_mse",
                          validation_fraction=0.25, noise_seed=74),
        "regression", True, split=True),
    "federated_randk_mask": Case(
        # (no rounding coins: random-k's mask is public, from random_state)
        lambda: federated(compression=("randk", 3), noise_seed=75), "binary", True),
    "federated_sign_vote": Case(
        lambda: federated(compression="sign", sign_threshold=0.25,
                          privacy_unit="group", noise_seed=76), "binary", True),
    "federated_no_noise_every_permutation": Case(
        lambda: federated(epsilon=np.inf, noise="none", n_rounds=3,
                          n_permutations_per_round="all", noise_seed=78),
        "binary", True),
    # The one case due to change: its rounding coins will move to another stream.
    "federated_compressed_quantize": Case(
        lambda: federated(compression=("quantize", 5), privacy_unit="group",
                          noise_seed=77), "binary", True),

    # LayeredShapleyValuator (samples only; no threat model, no Dask)
    "layered_private": Case(lambda: layered(), "unit_box"),
    "layered_no_noise_split": Case(
        lambda: layered(epsilon=np.inf, alpha=0.5, validation_fraction=0.25,
                        noise_seed=81), "unit_box", split=True),
}
def fit_case(name):
    """Fit case ``name``; return the fitted valuator."""
    case = CASES[name]
    X, y, X_val, y_val = DATA[case.data]()
    fit_params = {} if case.split else {"X_val": X_val, "y_val": y_val}
    if case.groups:
        fit_params["groups"] = _groups()
    if case.weights:
        fit_params["sample_weight"] = _weights()
    estimator = case.make()
    with warnings.catch_warnings():
        # A seeded fit warns that it is not private (a SkdpvalWarning, as are
        # the library's other advice warnings); the wrapped model's own fits on
        # the small validation sets may stop before converging. Nothing else
        # is silenced: a RuntimeWarning (a NaN) stays an error under pytest.
        from sklearn.exceptions import ConvergenceWarning

        from skdpval.exceptions import SkdpvalWarning

        warnings.simplefilter("ignore", SkdpvalWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        if case.dask:
            import dask
            import dask.array as da

            if case.weights:
                fit_params["sample_weight"] = da.from_array(_weights(), chunks=25)
            with dask.config.set(scheduler="synchronous"):
                estimator.fit(da.from_array(X, chunks=(25, 5)),
                              da.from_array(y, chunks=25), **fit_params)
        else:
            estimator.fit(X, y, **fit_params)
    return estimator


# --- exact encoding -----------------------------------------------------------------

def _float(x):
    return float(x).hex()  # "nan", "inf", "-inf" for those


def encode(value):
    """A JSON-able, exact form of ``value``: floats as hex, arrays with their
    dtype and shape, tuples apart from lists."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return {"float": _float(value)}
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        flat = value.ravel()
        if value.dtype.kind == "f":
            data = [_float(v) for v in flat]
        elif value.dtype.kind in "iub":
            data = [int(v) for v in flat]
        else:
            data = [str(v) for v in flat]
        return {"array": value.dtype.str, "shape": list(value.shape), "data": data}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        # Keys are strings in every report; other keys are kept distinct by repr.
        return {"dict": [[k if isinstance(k, str) else repr(k), encode(v)]
                         for k, v in value.items()]}
    if hasattr(value, "get_params"):  # a fitted scikit-learn model
        fitted = {name: encode(getattr(value, name))
                  for name in ("coef_", "intercept_", "coefs_", "intercepts_")
                  if hasattr(value, name)}
        return {"estimator": type(value).__name__, "fitted": fitted}
    raise TypeError(f"cannot encode {type(value).__name__}")


def fitted_attributes(valuator):
    """Every public fitted attribute (``name_``) the fit set, encoded, and
    ``rank_`` (a property that refuses under the joint threat model)."""
    names = {n for n in vars(valuator) if n.endswith("_") and not n.startswith("_")}
    out = {}
    for name in sorted(names | {"rank_"}):
        try:
            out[name] = encode(getattr(valuator, name))
        except AttributeError as error:  # rank_ under threat_model="joint"
            out[name] = {"refused": type(error).__name__}
    return out


def record(name):
    valuator = fit_case(name)
    attributes = fitted_attributes(valuator)
    report = attributes.pop("privacy_report_")
    params = {k: repr(v) for k, v in sorted(valuator.get_params(deep=False).items())}
    return {"data": CASES[name].data, "data_sha256": data_checksum(CASES[name].data),
            "params": params, "attributes": attributes, "privacy_report": report}


# --- comparison ---------------------------------------------------------------------

def _is_array(x):
    return isinstance(x, dict) and "array" in x and "data" in x


def _decode_array(x):
    dtype = np.dtype(x["array"])
    if dtype.kind == "f":
        data = [float.fromhex(v) for v in x["data"]]
    else:
        data = x["data"]
    return np.array(data, dtype=dtype).reshape(x["shape"])


def _floats_close(a, b):
    """Within RTOL and ATOL; NaN matches NaN, an infinity only itself."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    finite = np.isfinite(a) & np.isfinite(b)
    gap = np.abs(np.where(finite, a, 0.0) - np.where(finite, b, 0.0))
    close = np.where(finite, gap <= ATOL + RTOL * np.abs(b), (a == b) | np.isnan(a))
    return bool(np.all((np.isnan(a) == np.isnan(b)) & close))


def differences(expected, got, exact, path="", out=None):
    """Where ``got`` differs from ``expected`` (both encoded): a list of paths.

    ``exact``: arrays equal under ``np.array_equal(equal_nan=True)`` with the
    same dtype and shape, every other leaf (a float's hex, a string, an
    integer, a boolean) and every key in its order equal, so that the
    serialised forms are the same. Otherwise floats within RTOL and ATOL.
    """
    out = [] if out is None else out
    if _is_array(expected) and _is_array(got):
        e, g = _decode_array(expected), _decode_array(got)
        if e.shape != g.shape or (e.dtype != g.dtype if exact else
                                  e.dtype.kind != g.dtype.kind):
            out.append(f"{path}: {e.dtype}{e.shape} != {g.dtype}{g.shape}")
        elif exact or e.dtype.kind != "f":
            if not np.array_equal(e, g, equal_nan=e.dtype.kind == "f"):
                where = np.flatnonzero(~((e == g) | (e != e) & (g != g)))
                out.append(f"{path}: {where.size} of {e.size} entries differ, first "
                           f"at {where[0]}: {e.ravel()[where[0]]!r} != "
                           f"{g.ravel()[where[0]]!r}")
        elif not _floats_close(e, g):
            finite = np.isfinite(e) & np.isfinite(g)
            gap = np.abs(np.where(finite, e, 0.0) - np.where(finite, g, 0.0))
            moved = ~finite & ~((e == g) | np.isnan(e) & np.isnan(g))
            out.append(f"{path}: max |diff| {gap.max()} (and {moved.sum()} NaN "
                       f"or infinite entries moved)")
        return out
    if isinstance(expected, dict) and isinstance(got, dict):
        if list(expected) != list(got):
            out.append(f"{path}: keys {list(expected)} != {list(got)}")
        elif "float" in expected:
            e, g = expected["float"], got["float"]
            if e != g if exact else not _floats_close(float.fromhex(e),
                                                      float.fromhex(g)):
                out.append(f"{path}: {float.fromhex(e)!r} ({e}) != "
                           f"{float.fromhex(g)!r} ({g})")
        elif "dict" in expected:
            e, g = dict(expected["dict"]), dict(got["dict"])
            if list(e) != list(g):
                out.append(f"{path}: keys {list(e)} != {list(g)}")
            for key in e:
                if key in g:
                    differences(e[key], g[key], exact, f"{path}[{key!r}]", out)
        else:
            for key in expected:
                differences(expected[key], got[key], exact,
                            f"{path}.{key}" if key not in ("tuple", "fitted")
                            else path, out)
        return out
    if isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            out.append(f"{path}: length {len(expected)} != {len(got)}")
        for i, (e, g) in enumerate(zip(expected, got)):
            differences(e, g, exact, f"{path}[{i}]", out)
        return out
    if type(expected) is not type(got) or expected != got:
        out.append(f"{path}: {_short(expected)} != {_short(got)}")
    return out


def _short(x):
    text = json.dumps(x)
    return text if len(text) < 200 else text[:200] + "..."


# --- the tests -------------------------------------------------------------------

def _stored():
    if not DATA_FILE.exists():
        pytest.fail(f"{DATA_FILE} is missing: python tests/test_golden.py --regenerate")
    return json.loads(DATA_FILE.read_text())


@pytest.fixture(scope="module")
def stored():
    return _stored()


@pytest.fixture(scope="module")
def exact(stored):
    return stored["environment"] == environment()


def test_the_stored_cases_are_the_cases(stored):
    assert sorted(stored["cases"]) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_parameter_is_pinned(name):
    """Each valuator's parameters, all but n_jobs and verbose, are given
    explicitly (no default can move a golden value unseen)."""
    import skdpval

    params = set(getattr(skdpval, name)().get_params(deep=False))
    assert sorted(params - UNPINNED) == sorted(PINNED[name]())


@pytest.mark.parametrize("name", list(CASES))
def test_golden_values(name, stored, exact):
    expected = stored["cases"][name]
    assert expected["data_sha256"] == data_checksum(expected["data"]), (
        "the input data changed (RandomState's stream?): the golden values no "
        "longer describe these inputs")
    got = record(name)
    found = differences(expected["attributes"], got["attributes"], exact, "valuator")
    found += differences(expected["privacy_report"], got["privacy_report"], exact,
                         "privacy_report_")
    if exact:  # (what differences() checks, said once more the plain way)
        serialised = [json.dumps(x["privacy_report"]) for x in (expected, got)]
        assert serialised[0] == serialised[1] or found, (
            "privacy_report_ differs in its serialised form")
    mode = ("bit for bit (the stored environment)" if exact else
            f"rtol={RTOL}, atol={ATOL}: the environment differs from the stored "
            f"{stored['environment']}")
    assert not found, f"{name}, compared {mode}:\n  " + "\n  ".join(found[:20])


# --- regeneration -----------------------------------------------------------------

def dump(value, indent=""):
    """JSON with one line a key, a list of scalars on one line (an array's data)."""
    inner = indent + " "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return ("[\n" + ",\n".join(inner + dump(v, inner) for v in value) + "\n"
                + indent + "]")
    return json.dumps(value)


def regenerate(names=None):
    stored = json.loads(DATA_FILE.read_text()) if DATA_FILE.exists() else {"cases": {}}
    if names:
        unknown = set(names) - set(CASES)
        if unknown:
            raise SystemExit(f"unknown cases: {sorted(unknown)}")
        if stored.get("environment", environment()) != environment():
            raise SystemExit("the stored values come from another environment: "
                             "regenerate every case")
    cases = {name: stored["cases"][name] for name in CASES if name in stored["cases"]}
    for name in names or list(CASES):
        print(f"fitting {name}", file=sys.stderr)
        cases[name] = record(name)
    payload = {
        "about": "Golden values of tests/test_golden.py: see its docstring. Floats "
                 "are float.hex() strings.",
        "environment": environment(),
        "cases": {name: cases[name] for name in CASES},
    }
    DATA_FILE.parent.mkdir(exist_ok=True)
    DATA_FILE.write_text(dump(payload) + "\n")
    print(f"wrote {DATA_FILE} ({len(payload['cases'])} cases)", file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--regenerate", nargs="*", metavar="CASE",
                        help="rewrite the data file (every case, or these)")
    args = parser.parse_args(argv)
    if args.regenerate is None:
        parser.error("nothing to do: pass --regenerate [CASE ...]")
    regenerate(args.regenerate)


if __name__ == "__main__":
    main()
