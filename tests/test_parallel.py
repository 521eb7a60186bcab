"""Waves: values do not depend on n_jobs or the joblib backend."""

import sys

import distributed
import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import make_classification

from skdpval import DPDataValuator
from skdpval.privacy._secure_noise import WALK


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=50, n_features=5, random_state=0)
    return X, y


def values(data, **params):
    X, y = data
    params = {"n_permutations": 23, "batch_permutations": 5, "random_state": 0, "noise_seed": 0,
              **params}
    return DPDataValuator(**params).fit(X, y).values_


@pytest.fixture
def threads_for_small_jobs(monkeypatch):
    """These jobs are too small for threads to pay: run them on threads anyway."""
    import skdpval.walks._runner as runner_module

    monkeypatch.setattr(runner_module, "MIN_PARALLEL_WORK", 0)


@pytest.mark.parametrize("noise", ["correlated", "iid"])
def test_values_identical_for_any_n_jobs_and_backend(data, noise,
                                                     threads_for_small_jobs):
    serial = values(data, noise=noise, n_jobs=1)
    assert_array_equal(values(data, noise=noise, n_jobs=2), serial)
    assert_array_equal(values(data, noise=noise, n_jobs=3), serial)
    with parallel_config(backend="loky", n_jobs=2):
        assert_array_equal(values(data, noise=noise, n_jobs=None), serial)
    with parallel_config(backend="threading", n_jobs=2):
        assert_array_equal(values(data, noise=noise), serial)


def test_values_identical_on_a_dask_cluster(data):
    # i.i.d. waves do not wait for each other; one wave is both the first
    # and the last (its merge starts from and returns the bare state).
    cases = [{"noise": "correlated"}, {"noise": "iid"},
             {"noise": "correlated", "batch_permutations": 23}]
    serial = [values(data, n_jobs=1, **case) for case in cases]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            with parallel_config(backend="dask"):
                on_dask = [values(data, n_jobs=-1, **case) for case in cases]
    for got, expected in zip(on_dask, serial):
        assert_array_equal(got, expected)


def test_values_identical_on_a_cluster_of_processes(data):
    """Worker processes: the problem, the draws and the states are pickled."""
    serial = values(data, n_jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            with parallel_config(backend="dask"):
                assert_array_equal(values(data, n_jobs=-1), serial)


def test_wave_size_changes_correlated_values_but_not_iid(data):
    """The wave size is part of the correlated algorithm; i.i.d. ignores it
    but for the order in which a wave's marginals are summed (its tree)."""
    assert not np.allclose(values(data, batch_permutations=1),
                           values(data, batch_permutations=5), rtol=1e-6)
    assert_allclose(values(data, noise="iid", batch_permutations=1),
                    values(data, noise="iid", batch_permutations=5), rtol=1e-12)


def test_progress_is_silent_by_default_and_reports_when_verbose(data, capfd,
                                                                monkeypatch):
    values(data)
    assert capfd.readouterr().err == ""
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # the plain fallback
    values(data, verbose=1)
    err = capfd.readouterr().err
    assert "23/23 permutations" in err and "ETA" in err


def test_verbose_shows_a_tqdm_bar_when_installed(data, capfd):
    pytest.importorskip("tqdm")
    values(data, verbose=1)
    err = capfd.readouterr().err
    assert "DPDataValuator" in err and "23/23" in err and "perm" in err


def test_verbose_says_once_how_long_numba_compiled(data, capfd, monkeypatch):
    from skdpval.walks._runner import COMPILE_CLOCK

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setattr(COMPILE_CLOCK, "seconds", 2.5)  # as after a first compilation
    monkeypatch.setattr(COMPILE_CLOCK, "reported", False)
    values(data, verbose=1)
    assert "numba compiled the kernels in 2.5 s" in capfd.readouterr().err
    values(data, verbose=1)
    assert "compiled" not in capfd.readouterr().err
    values(data)
    assert capfd.readouterr().err == ""


def track_alive_noise(monkeypatch):
    """Patch the noise draws to record the most noise elements alive at a draw."""
    import weakref

    import skdpval.privacy._mechanism as mechanism_module

    drawn, alive_most = [], [0]
    original = mechanism_module.gaussian_noise

    def tracking(key, kind, lo, hi, std, out):
        if kind != WALK:
            return original(key, kind, lo, hi, std, out)
        if not any(ref() is out.base for ref in drawn):
            drawn.append(weakref.ref(out.base))
        alive = sum(ref().size for ref in drawn if ref() is not None)
        alive_most[0] = max(alive_most[0], alive)
        return original(key, kind, lo, hi, std, out)

    monkeypatch.setattr(mechanism_module, "gaussian_noise", tracking)
    return drawn, alive_most


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_at_most_one_wave_of_noise_is_alive(data, monkeypatch, n_jobs,
                                           threads_for_small_jobs):
    """Every noise draw finds at most one wave's noise still allocated."""
    X, y = data
    n_parties, batch = 40, 5  # validation_fraction=0.2 holds out 10 of 50
    drawn, alive_most = track_alive_noise(monkeypatch)
    values(data, n_jobs=n_jobs, subspace=None)  # releases of d + 1 numbers
    one_wave = batch * n_parties * (X.shape[1] + 1)
    assert len(drawn) > 4  # several waves (and nodes) drew noise
    assert one_wave // 2 < alive_most[0] <= one_wave


def test_small_jobs_stay_on_one_thread(data, monkeypatch):
    """Below MIN_PARALLEL_WORK a fit never hands a node to another thread."""
    import skdpval.walks._runner as runner_module

    def no_pool(*args, **kwargs):
        raise AssertionError("a thread pool was started for a small job")

    monkeypatch.setattr(runner_module, "ThreadPoolExecutor", no_pool)
    values(data, n_jobs=2)
    monkeypatch.setattr(runner_module, "MIN_PARALLEL_WORK", 0)
    with pytest.raises(AssertionError, match="thread pool"):
        values(data, n_jobs=2)


def test_a_tabulated_line_walk_counts_no_validation_rows(monkeypatch):
    """Along a tabulated line a step reads no validation row: 100 parties stay
    on one thread with 3,000 validation rows (counting the rows, 6e5
    multiply-adds a permutation, would start a pool)."""
    import skdpval.walks._runner as runner_module

    def no_pool(*args, **kwargs):
        raise AssertionError("a thread pool was started for a small job")

    monkeypatch.setattr(runner_module, "ThreadPoolExecutor", no_pool)
    X, y = make_classification(n_samples=3100, n_features=5, random_state=0)
    valuator = DPDataValuator(n_permutations=4, n_jobs=2, random_state=0, epsilon=1.0)
    valuator.fit(X[:100], y[:100], X_val=X[100:], y_val=y[100:])
    assert np.all(np.isfinite(valuator.values_))


def test_threads_do_not_go_through_joblib(data, monkeypatch, threads_for_small_jobs):
    """The default threads run in a pool kept for the fit, not a joblib call a wave."""
    import skdpval.walks._runner as runner_module

    def no_joblib(*args, **kwargs):
        raise AssertionError("joblib.Parallel was called")

    serial = values(data, n_jobs=1)
    monkeypatch.setattr(runner_module, "Parallel", no_joblib)
    assert_array_equal(values(data, n_jobs=2), serial)


def test_big_releases_are_walked_one_permutation_at_a_time(data, monkeypatch):
    """With chunks of one permutation, a node keeps only its tree's pending sums."""
    import skdpval.walks._waves as waves_module

    serial = values(data, n_jobs=1, subspace=None)  # releases of d + 1 numbers
    monkeypatch.setattr(waves_module, "CHUNK_BYTES", 1)
    drawn, alive_most = track_alive_noise(monkeypatch)
    assert_array_equal(values(data, n_jobs=1, subspace=None), serial)
    one_permutation = 40 * (data[0].shape[1] + 1)
    # A wave of 5 is a tree of depth 3: 2 pending partial sums and the new one.
    assert alive_most[0] == 3 * one_permutation


def test_a_wave_sums_the_same_bits_whatever_its_split():
    """Merging a wave's nodes at any depth gives its statistics, bit for bit."""
    from skdpval.kernels._reduction import NodeSums, merge_sums, reduce_tree, tree_nodes
    from skdpval.walks._waves import WalkState, end_wave

    rng = np.random.default_rng(0)
    start, stop, n = 7, 20, 6  # a wave of 13 permutations after 7 others
    raw = rng.normal(size=(stop, n, 2))
    marginals = rng.normal(size=(stop, n)) * np.exp(rng.normal(size=(stop, 1)))
    counted = rng.random(stop) < 0.7
    ends = rng.normal(size=stop)

    def node(lo, hi):  # what a worker walking lo .. hi - 1 sends back
        leaf = lambda a, b: NodeSums(raw[a].copy(), int(counted[a]),
                                     marginals[a].copy() if counted[a] else None,
                                     None, ends[a:a + 1])
        return reduce_tree(lo, hi, np.inf, leaf,
                           lambda x, y: merge_sums(x, y, in_place=True))

    before = WalkState(rng.normal(size=(n, 2)), NodeSums(None, 0, None, None, np.empty(0)),
                       np.full(stop, np.nan))
    states = [end_wave(before, start, stop, depth,
                       *[node(lo, hi) for lo, hi in tree_nodes(start, stop, depth)])
              for depth in range(5)]
    for state in states[1:]:
        assert_array_equal(state.rolling_mean, states[0].rolling_mean)
        assert_array_equal(state.counted.mean, states[0].counted.mean)
        assert_array_equal(state.counted.m2, states[0].counted.m2)
        assert_array_equal(state.end_utility, states[0].end_utility)
    kept = marginals[start:stop][counted[start:stop]]
    assert states[0].counted.n_counted == len(kept)
    np.testing.assert_allclose(states[0].counted.mean, kept.mean(0), rtol=1e-13)
    np.testing.assert_allclose(states[0].counted.m2, kept.var(0) * len(kept), rtol=1e-12)
    np.testing.assert_allclose(states[0].rolling_mean,
                               (start * before.rolling_mean + raw[start:stop].sum(0)) / stop,
                               rtol=1e-13)
    assert_array_equal(states[0].end_utility[start:], ends[start:])


def test_a_dask_workers_means_are_end_waves_written_over_the_old_copy(monkeypatch):
    """A worker's copy of the rolling means (next_rolling_mean) is end_wave's,
    bit for bit, written over the old copy (no second array of n means), and
    over blocks that split the parties unevenly."""
    import skdpval.walks._waves as waves_module
    from skdpval.kernels._reduction import NodeSums, tree_nodes
    from skdpval.walks._cluster import next_rolling_mean
    from skdpval.walks._waves import WalkState, end_wave

    monkeypatch.setattr(waves_module, "MERGE_BLOCK", 4)
    rng = np.random.default_rng(1)
    n, depth, shape = 10, 1, (1,)
    copy = None
    state = WalkState.start(n, shape, 6)
    for start, stop in [(0, 2), (2, 4), (4, 6)]:
        nodes = [NodeSums(rng.normal(size=(n, *shape)) * (hi - lo), 0, None, None,
                          np.zeros(hi - lo))
                 for lo, hi in tree_nodes(start, stop, depth)]
        state = end_wave(state, start, stop, depth, *nodes)
        old = copy
        copy = next_rolling_mean(copy, start, stop, depth, n, shape, *nodes)
        assert old is None or copy is old
        assert_array_equal(copy, state.rolling_mean)


def test_the_walk_gives_back_the_memory_pyarrow_keeps(monkeypatch):
    """A Dask worker that read Parquet keeps pyarrow's freed memory (147 MiB
    at 10^6 rows): each walk task returns it first."""
    import types

    import skdpval.walks._cluster as cluster_module

    released = []
    pool = types.SimpleNamespace(release_unused=lambda: released.append(1))
    fake = types.SimpleNamespace(default_memory_pool=lambda: pool)
    monkeypatch.delitem(sys.modules, "pyarrow", raising=False)
    cluster_module.return_reader_memory()  # without pyarrow: nothing
    monkeypatch.setitem(sys.modules, "pyarrow", fake)
    monkeypatch.setattr(cluster_module, "walk_node", lambda *args: "walked")
    assert cluster_module.walk_node_of_mean(None, None, 0, 1, None, None, None,
                                            None) == "walked"
    assert released == [1]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 16])
def test_a_walked_chunk_reduces_as_merges_one_by_one(size):
    """The chunk's reduction (numpy) against merge_sums in place (its kernel)
    over the same tree, bit for bit."""
    from skdpval.kernels._reduction import reduce_walked
    from skdpval.kernels._reduction import NodeSums, merge_sums, reduce_tree

    rng = np.random.default_rng(size)
    n = 7
    for counted in (rng.random(size) < 0.5, np.zeros(size, bool), np.ones(size, bool),
                    np.arange(size) >= size // 2):  # a burn-in: a suffix counts
        raw = rng.normal(size=(size, n, 3))
        marginals = rng.normal(size=(size, n)) * np.exp(rng.normal(size=(size, 1)))

        def leaf(a, b, raw=raw, marginals=marginals, counted=counted):
            return NodeSums(raw[a].copy(), int(counted[a]),
                            marginals[a].copy() if counted[a] else None, None,
                            np.empty(0))

        expected = reduce_tree(0, size, np.inf, leaf,
                               lambda x, y: merge_sums(x, y, in_place=True))
        raw_sum, n_counted, mean, m2 = reduce_walked(raw.copy(), marginals.copy(),
                                                     counted)
        assert n_counted == expected.n_counted == counted.sum()
        assert_array_equal(raw_sum, expected.raw_sum)
        if n_counted == 0:
            assert mean is None and expected.mean is None
            continue
        assert_array_equal(mean, expected.mean)
        if n_counted == 1:  # nothing merged: no m2 (zeros)
            assert m2 is None and expected.m2 is None
            continue
        assert_array_equal(m2, expected.m2)


def test_the_public_direction_runs_on_one_blas_thread(data, monkeypatch):
    """OpenBLAS's threads would spin on the walk's cores after scipy's L-BFGS."""
    import skdpval.families.linear as family_module
    from threadpoolctl import threadpool_info

    seen = []
    original = family_module.minimize

    def recording(*args, **kwargs):
        seen.extend(info["num_threads"] for info in threadpool_info()
                    if info["user_api"] == "blas")
        return original(*args, **kwargs)

    blas_threads = lambda: [info["num_threads"] for info in threadpool_info()
                            if info["user_api"] == "blas"]
    before = blas_threads()
    monkeypatch.setattr(family_module, "minimize", recording)
    values(data, n_permutations=2)
    assert seen and set(seen) == {1}
    assert blas_threads() == before  # the limit ends with the search


def test_the_default_wave_size_is_read_from_the_number_of_parties():
    """``batch_permutations="auto"``: 16 up to 2**20 parties, halved while a
    wave walks more than 2**24 party steps, never below 2 (issue 46)."""
    from skdpval.valuation._walk_settings import wave_size

    assert [wave_size("auto", n) for n in (2, 10**5, 10**6, 2**20)] == [16] * 4
    assert [wave_size("auto", n) for n in (2**20 + 1, 2**21 + 1, 3 * 10**6,
                                           10**7, 10**9)] == [8, 4, 4, 2, 2]
    assert wave_size(5, 10**9) == 5


def test_the_auto_wave_size_is_the_wave_size_everywhere(data, monkeypatch):
    """A smaller auto wave (its threshold lowered) gives the values, standard
    errors and burn-in of that wave size passed by hand: the noise
    schedule, the burn-in and the runner all read it."""
    from sklearn.base import clone
    from skdpval.valuation import _walk_settings

    X, y = data  # 40 parties valued, 10 held out
    base = DPDataValuator(epsilon=1.0, n_permutations=23, random_state=0,
                          noise_seed=3)
    auto = clone(base).fit(X, y)
    assert auto.batch_permutations_ == 16
    assert_array_equal(auto.values_, clone(base).set_params(
        batch_permutations=16).fit(X, y).values_)
    monkeypatch.setattr(_walk_settings, "AUTO_WAVE_PARTY_STEPS", 4 * len(X))
    small = clone(base).fit(X, y)
    by_hand = clone(base).set_params(batch_permutations=4).fit(X, y)
    assert small.batch_permutations_ == 4
    assert_array_equal(small.values_, by_hand.values_)
    assert_array_equal(small.values_stderr_, by_hand.values_stderr_)
    assert small.q_ == by_hand.q_
    assert not np.array_equal(small.values_, auto.values_)
