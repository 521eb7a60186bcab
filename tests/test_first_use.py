"""The kernels' numpy twins and when they stand in (skdpval.kernels._first_use, issue 35).

A first fit in a process with an empty numba cache runs numpy twins of the
default's kernels instead of compiling them. Each twin must give the
kernel's bits: each is checked here against its kernel (``atol=0``, compared
as integers so that signed zeros and NaNs count), on inputs that reach its
edge cases, and whole fits with the twins forced against fits with the
kernels forced.
"""

import types
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from skdpval import DPDataValuator
from skdpval.kernels import _first_use, _kernels, _line, _orders, _reduction
from skdpval.privacy import _secure_noise as sn
from skdpval.kernels import _subspace

TWIN_MODULES = (sn, _orders, _subspace, _reduction, _line)


def assert_same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    if a.dtype == np.float64:
        a, b = a.view(np.int64), b.view(np.int64)
    np.testing.assert_array_equal(a, b)


# --- ChaCha20 and the walk's noise ------------------------------------------------

def test_numpy_chacha20_is_rfc8439_2_3_2():
    key = np.frombuffer(bytes(range(32)), "<u4").astype(np.uint64)
    nonce = np.frombuffer(bytes.fromhex("000000090000004a00000000"), "<u4")
    words = sn.chacha20_blocks_numpy(key, np.array([1], np.uint32), nonce[None])
    expected = ("e4e7f110 15593bd1 1fdd0f50 c47120a3 c7f4d1c7 0368c033 9aaa2204 "
                "4e6cd4c3 466482d2 09aa9f07 05d7c214 a2028bd9 d19c12b5 b94e16de "
                "e883d0cb 4e3c50a2").split()
    assert [f"{int(w):08x}" for w in words[:, 0]] == expected


def test_numpy_chacha20_blocks_are_the_kernel_s():
    key = sn.noise_key(11)
    rng = np.random.default_rng(0)
    counters = rng.integers(0, 2**32, 40, dtype=np.uint64)
    counters[:2] = [0, 2**32 - 1]
    nonces = rng.integers(0, 2**32, (40, 3), dtype=np.uint64)
    got = sn.chacha20_blocks_numpy(key, counters.astype(np.uint32),
                                   nonces.astype(np.uint32))
    for i in range(40):
        block = np.empty(16, np.uint64)
        sn.chacha20_block(key, counters[i], nonces[i], block)
        np.testing.assert_array_equal(got[:, i], block)


@pytest.mark.parametrize("sigma", [0.3, 40.0, 5000.0])
@pytest.mark.parametrize("lo, hi, n", [(0, 1, 1), (5, 9, 7), (7, 23, 8), (0, 16, 301),
                                       (2**32 - 2, 2**32 + 3, 30)])
def test_numpy_walk_noise_is_the_kernel_s(sigma, lo, hi, n):
    """Streams past 2**32 (the nonce's third word), rows that end mid-block,
    tiny and wide tables; -0.0 where the magnitude is 0 with a sign bit."""
    key, table = sn.noise_key(3), sn.rounded_gaussian_table(sigma)
    expected, got = np.empty((hi - lo, n)), np.empty((hi - lo, n))
    sn._walk_noise(key, sn.WALK, lo, hi, table.cdf, table.guide, table.shift,
                   expected, np.empty(3, np.uint64), np.empty(16, np.uint64))
    sn._walk_noise_numpy(key, sn.WALK, lo, hi, table.cdf, got)
    assert_same_bits(got, expected)


def test_numpy_walk_noise_has_the_calibrated_scale():
    """The twin's draws at sigma, and not at 0.95 sigma (the mutation check
    of the sampler's own tests, on the twin)."""
    sigma = 20.0
    table = sn.rounded_gaussian_table(sigma)
    draws = sn._walk_noise_numpy(sn.noise_key(5), sn.WALK, 0, 64, table.cdf,
                                 np.empty((64, 4000)))
    expected = np.sqrt(sigma**2 + 1 / 12)  # rounding adds 1/12
    assert abs(np.std(draws) / expected - 1) < 0.01
    assert abs(np.std(draws) / (0.95 * expected) - 1) > 0.03


# --- the orders ---------------------------------------------------------------------

@pytest.mark.parametrize("c, n", [(1, 1), (1, 2), (3, 5), (16, 300), (5, 1025)])
def test_numpy_orders_are_the_kernel_s(c, n):
    words = np.random.default_rng(n).integers(0, 2**64, (c, 4), dtype=np.uint64)
    words[0] = 0  # xoshiro's forbidden state, mended the same way
    expected = np.empty((c, n), np.int64)
    _orders.permutations_from_words(words, expected)
    assert_same_bits(_orders.permutations_numpy(words, n), expected)


# --- the set-up: gradient steps, the direction's objective, the line's table ----------

@pytest.mark.parametrize("trial", range(4))
def test_python_gradient_steps_are_the_kernel_s(trial):
    """Steps from several starts, clipped or not, with and without an L2
    term; margins from tiny to overflowing (exp(-|z|) at 0 and 1)."""
    rng = np.random.default_rng(trial)
    n = 50
    F = rng.normal(size=(n, 1, 1)) * 10.0 ** rng.uniform(-3, 3, size=(n, 1, 1))
    F[::9] = 1e200 if trial == 3 else 0.0
    T = rng.choice([-1.0, 1.0], size=(n, 1))
    weights = rng.uniform(0.1, 2.0, n)
    orders = np.stack([rng.permutation(n) for _ in range(4)])
    starts = rng.normal(size=(3, 1)) * (trial + 1)
    for l2 in (0.0, 0.37):
        for clip in (np.inf, 0.5):
            for rate in (1.0, 7.0):
                expected, got = np.empty((4, 1)), np.empty((4, 1))
                _subspace._gradient_steps(
                    F, T, weights, np.arange(n + 1), None, 0.0, l2,
                    np.array([[0.8]]), 0.0, np.zeros((1, 0)), clip, rate, starts,
                    orders, expected, np.empty((1, 1)), np.empty(1), np.empty(1),
                    None)
                _subspace._scalar_logistic_steps(F, T, weights, l2,
                                                 np.array([[0.8]]), clip, rate,
                                                 starts, orders, got)
                assert_same_bits(got, expected)


@pytest.mark.parametrize("n", [1, 3, 269, 1000])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 800.0])
def test_numpy_logistic_objective_is_the_kernel_s(n, scale):
    rng = np.random.default_rng(n)
    margins = rng.normal(size=(n, 1)) * scale
    margins[::5] = 0.0
    margins[1::7] = -0.0
    T = rng.choice([-1.0, 1.0], size=(n, 1))
    weights = rng.uniform(0.0, 2.0, n)
    expected, got = np.empty((n, 1)), np.empty((n, 1))
    total = _kernels.losses_and_gradients(None, margins, T, weights, 0.0, expected)
    assert_same_bits(
        _kernels.logistic_losses_and_gradients_numpy(margins, T, weights, got), total)
    assert_same_bits(got, expected)


@pytest.mark.parametrize("n_val", [1, 3, 4, 5, 269, 513])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 40.0])
def test_numpy_line_table_is_the_kernel_s(n_val, scale):
    rows = (np.random.default_rng(n_val).normal(size=n_val) * scale)[:, None]
    for lo, h, nodes in [(-3.0, 0.01, 190), (-50.0, 0.7, 150), (0.0, 1e-3, 3)]:
        expected, got = np.empty((nodes, 3)), np.empty((nodes, 3))
        _line._tabulate_logistic(rows, lo, h, expected, np.empty((4, n_val)))
        _line._tabulate_logistic_numpy(rows, lo, h, got)
        assert_same_bits(got, expected)


# --- the waves' merges ----------------------------------------------------------------

@pytest.mark.parametrize("c", [1, 2, 3, 5, 13, 16])
@pytest.mark.parametrize("counted", ["all", "none", "some"])
def test_numpy_merges_are_the_kernel_s(c, counted):
    rng = np.random.default_rng(c)
    raw = rng.normal(size=(c, 7))
    marginals = rng.normal(size=(c, 11)) * 10.0 ** rng.uniform(-5, 5, (c, 11))
    if c > 2:
        marginals[1, 3], marginals[2, 4] = np.nan, np.inf
    counts = {"all": np.ones(c, np.int64), "none": np.zeros(c, np.int64),
              "some": rng.integers(0, 2, c)}[counted]
    expected = [raw.copy(), marginals.copy(), np.zeros_like(marginals), counts.copy()]
    got = [a.copy() for a in expected]
    _reduction._merge_rows(*expected, _reduction.tree_merges(c))
    with np.errstate(all="ignore"):
        _reduction._merge_rows_numpy(*got, _reduction.tree_merges(c))
    for a, b in zip(got, expected):
        assert_same_bits(a, b)


# --- whole fits: twins against kernels ----------------------------------------------

def _fit_with(monkeypatch, twins, **params):
    choice = (lambda kernel, size, max_size, seconds=0.0: twins and size <= max_size)
    for module in TWIN_MODULES:
        monkeypatch.setattr(module, "use_twin", choice)
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPDataValuator(random_state=0, noise_seed=0, **params).fit(
            X[:300], y[:300], X_val=X[300:], y_val=y[300:]).values_


@pytest.mark.parametrize("params", [
    dict(n_permutations=40),
    dict(n_permutations=24, noise="iid", batch_permutations=5),
    dict(n_permutations=24, noise="none", semivalue="banzhaf", q=0.0),
    dict(n_permutations=20, learning_rate=30.0),  # walks leave the table
    dict(n_permutations=20, learning_rate=1e6, noise="iid"),  # and diverge
    dict(n_permutations=20, clip_norm=0.05, epsilon=10.0),
])
def test_a_fit_with_the_twins_is_the_fit_with_the_kernels(monkeypatch, params):
    twins = _fit_with(monkeypatch, True, **params)
    kernels = _fit_with(monkeypatch, False, **params)
    assert_same_bits(twins, kernels)


# --- when a twin stands in --------------------------------------------------------------

def test_a_twin_stands_in_only_while_its_kernel_is_absent_and_the_call_small(
        monkeypatch):
    monkeypatch.setattr(_first_use, "_spent", {})
    monkeypatch.setattr(_first_use, "_ready", set())
    kernel = types.SimpleNamespace(signatures=[])  # never compiled
    monkeypatch.setattr(_first_use, "_on_disk", {id(kernel): False})
    assert _first_use.use_twin(kernel, 10, 10)
    assert not _first_use.use_twin(kernel, 11, 10)  # too large: the kernel
    # the rent: a twin that ran RENT_SECONDS stands in no more
    assert not _first_use.use_twin(kernel, 10, 10, seconds=_first_use.RENT_SECONDS)
    _first_use._spent[id(kernel)] = _first_use.RENT_SECONDS
    assert not _first_use.use_twin(kernel, 10, 10)
    _first_use._spent.clear()
    _first_use._on_disk[id(kernel)] = True  # cached on disk: load it
    assert not _first_use.use_twin(kernel, 10, 10)
    _first_use._on_disk[id(kernel)] = False
    kernel.signatures.append("(float64,)")  # compiled in this process
    assert not _first_use.use_twin(kernel, 10, 10)


def test_a_compiled_kernel_is_used(monkeypatch):
    monkeypatch.setattr(_first_use, "_spent", {})
    monkeypatch.setattr(_first_use, "_ready", set())
    kernel = _reduction._merge_rows
    monkeypatch.setattr(_first_use, "_on_disk", {id(kernel): False})
    _reduction.reduce_walked(None, np.zeros((2, 3)), np.ones(2, bool))
    if not kernel.signatures:  # the twin ran: compile the kernel
        kernel(np.zeros((2, 0)), np.zeros((2, 3)), np.zeros((2, 3)),
               np.ones(2, np.int64), _reduction.tree_merges(2))
    assert not _first_use.use_twin(kernel, 1, 10)


def test_a_job_past_the_rent_compiles_at_once(monkeypatch):
    """plan: a twin that would run out of rent partway through a job is
    retired before it starts (the kernel then compiles at the first call)."""
    monkeypatch.setattr(_first_use, "_spent", {})
    monkeypatch.setattr(_first_use, "_ready", set())
    short, long = (types.SimpleNamespace(signatures=[]) for _ in range(2))
    monkeypatch.setattr(_first_use, "_on_disk", {id(short): False, id(long): False})
    assert _first_use.plan(short, 10, 10, seconds=0.01)
    assert _first_use.use_twin(short, 10, 10)
    assert not _first_use.plan(long, 10, 10, seconds=_first_use.RENT_SECONDS)
    assert not _first_use.use_twin(long, 1, 10)
