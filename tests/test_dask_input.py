"""Dask collections as input: the numpy path's values, bit for bit, however chunked."""

import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge

from skdpval import DPDataValuator, DPFederatedValuator, DPLabelQuality

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")


def split(X, y, n_val):
    return X[n_val:], y[n_val:], X[:n_val], y[:n_val]


@pytest.fixture(scope="module")
def binary():
    return split(*make_classification(n_samples=260, n_features=6, random_state=0), 60)


@pytest.fixture(scope="module")
def three_classes():
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4,
                               n_classes=3, random_state=1)
    return split(X, y, 90)


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(n_samples=240, n_features=5, noise=5.0, random_state=2)
    return split(X, y + 50.0, 60)


def valuator(**params):
    # The validation model on both paths ("auto" keeps it at these sizes);
    # the private fit's tests ask for public_model="private".
    # LogisticRegression: these tests are about the Dask path, and the
    # default's network (chosen in memory on some of their data) has no
    # walk on Dask input.
    return DPDataValuator(**{"estimator": LogisticRegression(),
                             "n_permutations": 12, "batch_permutations": 4,
                             "epsilon": 1.0, "random_state": 0, "noise_seed": 3,
                             "public_model": "validation", **params})


def chunked(X, y, rows):
    return da.from_array(X, chunks=(rows, 2)), da.from_array(y, chunks=rows)


# Without noise the releases are not rounded to the noise's grid, which
# would absorb a difference in the last bits of a row's projection.
@pytest.mark.parametrize("noise", ["correlated", "none"])
@pytest.mark.parametrize("rows", [1, 7, 64, 1000])
@pytest.mark.parametrize("case", ["binary", "three_classes", "regression"])
def test_valuator_values_equal_the_numpy_path(case, rows, noise, request):
    X, y, X_val, y_val = request.getfixturevalue(case)
    params = {"estimator": Ridge()} if case == "regression" else {}
    params["noise"] = noise
    expected = valuator(**params).fit(X, y, X_val=X_val, y_val=y_val)
    got = valuator(**params).fit(*chunked(X, y, rows), X_val=X_val, y_val=y_val)
    assert_array_equal(got.values_, expected.values_)
    assert_array_equal(got.values_stderr_, expected.values_stderr_)
    assert got.privacy_report_ == expected.privacy_report_
    assert got.n_features_in_ == X.shape[1]


def test_rows_projected_on_the_blocks_equal_project_rows():
    """The projection itself, bit for bit: several outputs and directions,
    any chunking (the walk's values could hide a last-bit difference)."""
    from skdpval.walks._dask import DaskRows
    from skdpval.kernels._subspace_problem import project_rows

    rng = np.random.default_rng(0)
    X = rng.normal(size=(301, 9))
    for m, n_outputs in ((1, 1), (2, 1), (1, 3), (3, 4)):
        basis = rng.normal(size=(m, n_outputs * 10))
        expected = project_rows(basis, np.hstack([X, np.ones((len(X), 1))]), n_outputs)
        for rows in (1, 2, 50, 301):
            got = DaskRows(da.from_array(X, chunks=(rows, 9))).with_column(1.0)
            assert_array_equal(project_rows(basis, got, n_outputs), expected)


def test_valuator_with_a_basis_weights_and_a_data_frame(binary):
    """Two directions, Dask sample weights, a data frame with column names."""
    X, y, X_val, y_val = binary
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(X.shape[1] + 1, 2)))[0].T
    weights = rng.uniform(0.5, 2.0, len(y))
    names = [f"f{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    expected = valuator(subspace=basis).fit(frame, y, X_val=pd.DataFrame(X_val, columns=names),
                                            y_val=y_val, sample_weight=weights)
    got = valuator(subspace=basis).fit(
        dd.from_pandas(frame, npartitions=3), dd.from_pandas(pd.Series(y), npartitions=2),
        X_val=pd.DataFrame(X_val, columns=names), y_val=y_val,
        sample_weight=da.from_array(weights, chunks=50))
    assert_array_equal(got.values_, expected.values_)
    assert list(got.feature_names_in_) == names


@pytest.mark.parametrize("epsilon", [1.0, np.inf])  # inf: no noise, no grid
@pytest.mark.parametrize("case", ["binary", "three_classes", "regression"])
def test_label_quality_equals_the_numpy_path(case, epsilon, request):
    X, y, X_val, y_val = request.getfixturevalue(case)
    estimator = Ridge() if case == "regression" else LogisticRegression()
    scorer = lambda: DPLabelQuality(estimator, epsilon=epsilon, random_state=0,
                                    noise_seed=1, public_model="validation")
    expected = scorer().fit(X, y, X_val=X_val, y_val=y_val).values_
    for rows in (1, 13, 1000):
        got = scorer().fit(*chunked(X, y, rows), X_val=X_val, y_val=y_val).values_
        assert_array_equal(got, expected)


def test_label_quality_scores_aligned_blocks_past_one_block(monkeypatch):
    """Past SCORE_BLOCK_ROWS rows both paths score the same aligned blocks:
    chunks that straddle them give the same bits."""
    import skdpval.walks._dask as dask_module

    monkeypatch.setattr(dask_module, "SCORE_BLOCK_ROWS", 100)
    X, y, X_val, y_val = split(*make_classification(n_samples=1100, n_features=8,
                                                    random_state=4), 100)
    # No noise, no grid; the validation model on both paths (without noise
    # "auto" would fit the rows plainly: the score's blocks are the point here).
    scorer = lambda: DPLabelQuality(epsilon=np.inf, random_state=0,
                                    public_model="validation")
    expected = scorer().fit(X, y, X_val=X_val, y_val=y_val).values_
    for rows in (1, 37, 333):
        got = scorer().fit(*chunked(X, y, rows), X_val=X_val, y_val=y_val).values_
        assert_array_equal(got, expected)
    # Both paths scored blocks of 100 rows (the patch took effect).
    sizes = []
    original = DPLabelQuality._clipped_row_scores

    def recording(self, X, y):
        sizes.append(len(X))
        return original(self, X, y)

    monkeypatch.setattr(DPLabelQuality, "_clipped_row_scores", recording)
    scorer().fit(X, y, X_val=X_val, y_val=y_val)
    scorer().fit(*chunked(X, y, 37), X_val=X_val, y_val=y_val)
    assert sizes == [100] * 20


def no_release(monkeypatch):
    """Fail on any noise draw: errors must come before any release (every
    fit's key comes from its privacy mechanism)."""
    import skdpval.privacy._mechanism as mechanism_module

    def refuse(*args, **kwargs):
        raise AssertionError("noise was drawn before the error")

    monkeypatch.setattr(mechanism_module, "noise_key", refuse)


@pytest.mark.parametrize("public_model", ["auto", "private"])
@pytest.mark.parametrize("defect", ["nan", "inf", "nan and inf", "label", "y nan"])
@pytest.mark.parametrize("estimator", [DPDataValuator, DPLabelQuality])
def test_bad_input_in_a_chunk_gives_the_in_memory_error(binary, defect, estimator,
                                                        public_model, monkeypatch):
    X, y, X_val, y_val = binary
    X, y = X.copy(), y.astype(float)
    if "inf" in defect:
        X[45, 2] = np.inf
    if "nan" in defect and defect != "y nan":
        X[150, 1] = np.nan  # a later chunk than the infinity: NaN still wins
    if defect == "label":
        y[120] = 7
    if defect == "y nan":
        y[120] = np.nan
    make = lambda: estimator(epsilon=1.0, public_model=public_model)
    with pytest.raises(ValueError) as in_memory:
        make().fit(X, y, X_val=X_val, y_val=y_val)
    no_release(monkeypatch)
    with pytest.raises(ValueError) as on_dask:
        make().fit(*chunked(X, y, 40), X_val=X_val, y_val=y_val)
    assert str(on_dask.value) == str(in_memory.value)
    assert "private data" in str(on_dask.value) or "class set" in str(on_dask.value)


def test_text_in_a_chunk_is_refused_without_its_value(binary):
    X, y, X_val, y_val = binary
    X = X.astype(object)
    X[77, 0] = "salary=183000"
    with pytest.raises(ValueError) as error:
        DPDataValuator(epsilon=1.0).fit(da.from_array(X, chunks=(50, 6)), y,
                                        X_val=X_val, y_val=y_val)
    assert "could not convert" in str(error.value)
    assert "183000" not in str(error.value)


@pytest.mark.parametrize("params, fit_params, match", [
    ({"subspace": None}, {}, "subspace=None"),
    ({}, {"groups": np.arange(200) // 10}, "groups"),
    ({}, {"X_val": None, "y_val": None}, "X_val"),
])
def test_what_dask_input_does_not_support_is_refused(binary, params, fit_params,
                                                      match, monkeypatch):
    X, y, X_val, y_val = binary
    no_release(monkeypatch)
    fit_params = {"X_val": X_val, "y_val": y_val, **fit_params}
    with pytest.raises(ValueError, match=match):
        DPDataValuator(epsilon=1.0, **params).fit(*chunked(X, y, 50), **fit_params)


def test_other_valuators_refuse_dask_input(binary):
    X, y, X_val, y_val = binary
    with pytest.raises(TypeError, match="DPDataValuator and DPLabelQuality"):
        DPFederatedValuator(epsilon=1.0).fit(*chunked(X, y, 50), X_val=X_val,
                                             y_val=y_val, groups=np.arange(200) // 20)


def test_the_walk_runs_on_the_cluster_with_the_same_values(binary):
    """With a distributed Client the rows are projected on its workers and the
    waves walked there; values as the numpy path's."""
    X, y, X_val, y_val = binary
    expected = valuator(noise="correlated").fit(X, y, X_val=X_val, y_val=y_val)
    import skdpval.walks._runner as runner_module

    walked_on = []
    original = runner_module._run_on_dask

    def recording(client, *args):
        walked_on.append(client)
        return original(client, *args)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        runner_module._run_on_dask = recording
        try:
            got = valuator(noise="correlated").fit(*chunked(X, y, 30), X_val=X_val,
                                                   y_val=y_val)
        finally:
            runner_module._run_on_dask = original
    assert walked_on == [client]
    assert_array_equal(got.values_, expected.values_)
    assert_array_equal(got.final_utilities_, expected.final_utilities_)


def test_the_learning_rate_search_runs_on_the_workers_with_the_same_rate(binary):
    """learning_rate="auto" on Dask rows with a distributed Client: the
    search's passes (validation rows only) run on the workers (issue 46,
    item 1), and the rate and the values are the numpy path's."""
    X, y, X_val, y_val = binary
    expected = valuator(learning_rate="auto").fit(X, y, X_val=X_val, y_val=y_val)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with distributed.get_task_stream() as stream:
            got = valuator(learning_rate="auto").fit(*chunked(X, y, 30), X_val=X_val,
                                                     y_val=y_val)
    passes = [task for task in stream.data if "_search_pass" in str(task["key"])]
    assert len(passes) == 26 and len({task["worker"] for task in passes}) == 2
    assert got.learning_rate_ == expected.learning_rate_
    assert_array_equal(got.values_, expected.values_)


def test_more_nodes_per_worker_change_no_value(binary, monkeypatch):
    """Two nodes a worker (a deeper tree of the same merges): the same bits."""
    import skdpval.walks._cluster as cluster_module

    X, y, X_val, y_val = binary
    expected = valuator().fit(X, y, X_val=X_val, y_val=y_val).values_
    monkeypatch.setattr(cluster_module, "DASK_NODES_PER_WORKER", 2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        got = valuator().fit(*chunked(X, y, 30), X_val=X_val, y_val=y_val).values_
    assert_array_equal(got, expected)


def test_dask_is_not_imported_for_numpy_input():
    code = ("import sys, numpy as np; from skdpval import DPDataValuator, DPLabelQuality\n"
            "X = np.random.default_rng(0).normal(size=(60, 3)); y = (X[:, 0] > 0) * 1\n"
            "DPLabelQuality(epsilon=1.0).fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:])\n"
            "DPDataValuator(epsilon=1.0, n_permutations=2).fit(X[:40], y[:40], "
            "X_val=X[40:], y_val=y[40:])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def _lost_worker_game(**params):
    """The data of the lost-worker tests and the numpy fit they must equal."""
    data = split(*make_classification(n_samples=1300, n_features=5, random_state=5),
                 300)
    return data, valuator(**params).fit(data[0], data[1], X_val=data[2], y_val=data[3])


@pytest.mark.parametrize("victim, retries", [(0, 3), (1, 3), (1, 0)])
def test_a_worker_killed_mid_fit_changes_no_value(monkeypatch, victim, retries):
    """A worker process killed after the second wave (every worker holds its
    own copy of the problem and of the rolling means): its data cannot be
    recomputed, so the walk starts again from the first wave, on the
    workers there are then, and the values are the same. Without retries
    left, a clear error with a remedy."""
    import os
    import signal

    import skdpval.walks._cluster as cluster_module
    import skdpval.walks._runner as runner_module

    params = dict(n_permutations=24, batch_permutations=4)
    (X, y, X_val, y_val), expected = _lost_worker_game(**params)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        target = pids[sorted(pids)[victim]]
        waves = []
        original = runner_module._Progress.update

        def kill_after_the_second_wave(self, n):
            waves.append(n)
            if len(waves) == 2:
                os.kill(target, signal.SIGKILL)
            return original(self, n)

        monkeypatch.setattr(runner_module._Progress, "update", kill_after_the_second_wave)
        monkeypatch.setattr(cluster_module, "LOST_WORKER_RETRIES", retries)
        if retries == 0:
            with pytest.raises(RuntimeError, match="cancelled each of the walk's 1 "
                                                   "tries.*lower batch_permutations"):
                valuator(**params).fit(*chunked(X, y, 250), X_val=X_val, y_val=y_val)
            return
        got = valuator(**params).fit(*chunked(X, y, 250), X_val=X_val, y_val=y_val)
        # Two waves, perhaps the third (done before the kill), then all six.
        assert len(waves) in (8, 9) and waves[-6:] == [4] * 6
        assert target not in client.run(os.getpid).values()  # it did die
        # The first walk's futures are released (its copy of the problem on
        # the worker left is freed): the cancelled future's error must not
        # keep the walk's frames alive.
        assert _tasks_left_on_the_scheduler(client) == []
    assert_array_equal(got.values_, expected.values_)
    assert_array_equal(got.final_utilities_, expected.final_utilities_)


def _tasks_left_on_the_scheduler(client, seconds=10):
    import time

    deadline = time.monotonic() + seconds
    while True:
        left = client.run_on_scheduler(
            lambda dask_scheduler: sorted(map(str, dask_scheduler.tasks)))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _fit_or_hang(fit, seconds=120):
    """``fit()`` in a thread: its result, or a failure if it does not end."""
    import threading

    out = []
    thread = threading.Thread(target=lambda: out.append(fit()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the fit did not end in {seconds} s"
    assert out, "the fit raised (see the thread's traceback)"
    return out[0]


def test_a_worker_retired_mid_walk_changes_no_value(monkeypatch):
    """A worker retired gracefully after the second wave (adaptive scaling,
    a graceful shutdown: Dask moves its data to the other worker, so no task
    is cancelled): the tasks pinned to it must not wait for it forever; the
    walk starts again on the worker left, with the same values."""
    import threading

    import skdpval.walks._runner as runner_module

    params = dict(n_permutations=24, batch_permutations=4, q=0.5)
    (X, y, X_val, y_val), expected = _lost_worker_game(**params)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        waves = []
        original = runner_module._Progress.update

        def retire_after_the_second_wave(self, n):
            waves.append(n)
            if len(waves) == 2:
                victim = sorted(client.scheduler_info()["workers"])[1]
                threading.Thread(target=client.retire_workers, args=([victim],)).start()
            return original(self, n)

        monkeypatch.setattr(runner_module._Progress, "update", retire_after_the_second_wave)
        got = _fit_or_hang(lambda: valuator(**params).fit(
            *chunked(X, y, 250), X_val=X_val, y_val=y_val))
        assert len(client.scheduler_info()["workers"]) == 1  # it did leave
        assert len(waves) > 6 and waves[-6:] == [4] * 6
    assert_array_equal(got.values_, expected.values_)
    assert_array_equal(got.final_utilities_, expected.final_utilities_)


def test_a_worker_killed_as_the_walk_sends_it_the_problem_changes_no_value():
    """A worker killed just before the walk sends it its copy of the problem
    (the connection is reset): the walk starts again on the workers there
    are then, with the same values."""
    import os
    import signal

    params = dict(n_permutations=24, batch_permutations=4, q=0.5)
    (X, y, X_val, y_val), expected = _lost_worker_game(**params)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        original = client.scatter
        sent_to = []

        def kill_before_the_first_copy(data, workers=None, **kwargs):
            if workers is not None and len(workers) == 1:
                if not sent_to:
                    os.kill(client.run(os.getpid, workers=workers)[workers[0]],
                            signal.SIGKILL)
                sent_to.append(workers[0])
            return original(data, workers=workers, **kwargs)

        client.scatter = kill_before_the_first_copy
        got = _fit_or_hang(lambda: valuator(**params).fit(
            *chunked(X, y, 250), X_val=X_val, y_val=y_val))
        # Its copy was never sent (the walk starts again without it).
        assert sent_to.count(sent_to[0]) == 1
        assert sent_to[0] not in client.scheduler_info()["workers"]
    assert_array_equal(got.values_, expected.values_)
    assert_array_equal(got.final_utilities_, expected.final_utilities_)


def test_each_worker_walks_its_own_copy_of_the_problem(binary, monkeypatch):
    """No walk task fetches the problem or the draws from another worker
    (one copy a worker, one replica a key: Dask's memory manager has no
    replica to drop, and no task moves): a worker receives only the other
    node's raw sums, once a wave, even when the memory manager runs between
    counted waves, when no task waits for the problem."""
    X, y, X_val, y_val = binary

    def incoming(dask_worker):
        return [str(key) for entry in dask_worker.transfer_incoming_log
                for key in entry["keys"]]

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        chunked_X, chunked_y = chunked(X, y, 30)
        client.run(lambda dask_worker: dask_worker.transfer_incoming_log.clear())
        import skdpval.walks._runner as runner_module

        original = runner_module._Progress.update

        def memory_manager_after_each_wave(self, n):
            client.amm.run_once()  # it would drop a key's extra replicas
            return original(self, n)

        monkeypatch.setattr(runner_module._Progress, "update",
                            memory_manager_after_each_wave)
        valuator(n_permutations=24, batch_permutations=4, q=0.5).fit(
            chunked_X, chunked_y, X_val=X_val, y_val=y_val)
        received = [key for keys in client.run(incoming).values() for key in keys]
    walk_keys = [key for key in received
                 if not key.startswith(("('", "_project_block", "_block_report",
                                        "_float_rows", "asarray"))]
    assert walk_keys and all(key.startswith("raw_part") for key in walk_keys)
    # Each wave, each worker the other's; the last wave, the first worker alone.
    assert len(walk_keys) == 2 * (24 // 4) - 1


def test_the_value_filter_keeps_the_same_rows_of_a_dask_array(binary):
    """DPValueFilter values Dask rows and returns the kept rows, still lazy."""
    from skdpval import DPValueFilter

    X, y, X_val, y_val = binary
    make = lambda: DPValueFilter(valuator(), drop_fraction=0.2)
    X_kept, y_kept = make().fit_resample(X, y, X_val=X_val, y_val=y_val)
    X_dask, y_dask = make().fit_resample(*chunked(X, y, 30), X_val=X_val, y_val=y_val)
    assert hasattr(X_dask, "dask")
    assert_array_equal(X_dask.compute(), X_kept)
    assert_array_equal(y_dask.compute(), y_kept)


@pytest.mark.parametrize("shape", [(200,), (200, 6, 1)])
def test_a_wrong_number_of_dimensions_gives_the_in_memory_error(binary, shape):
    X, y, X_val, y_val = binary
    bad = X.ravel()[:np.prod(shape)].reshape(shape)
    with pytest.raises(ValueError) as in_memory:
        DPDataValuator(epsilon=1.0).fit(bad, y, X_val=X_val, y_val=y_val)
    with pytest.raises(ValueError) as on_dask:
        DPDataValuator(epsilon=1.0).fit(da.from_array(bad), y, X_val=X_val, y_val=y_val)
    assert str(on_dask.value) == str(in_memory.value)


def test_per_row_results_are_gathered_in_groups_as_one_array(monkeypatch):
    """The client copies the blocks into one array a group at a time (rows
    in order, blocks of any sizes and mixed types upcast), and labels from
    a data frame's partitions equal its compute()."""
    import dask

    import skdpval.walks._dask as dask_module

    monkeypatch.setattr(dask_module, "GATHER_ROWS", 5)
    rng = np.random.default_rng(0)
    blocks = [rng.integers(0, 9, size=(3, 2)), rng.normal(size=(4, 2)),
              rng.integers(0, 9, size=(1, 2)), rng.normal(size=(7, 2))]
    starts = np.r_[0, np.cumsum([len(b) for b in blocks])]
    got = dask_module.gather_blocks([dask.delayed(b) for b in blocks], starts)
    assert got.dtype == np.float64
    assert_array_equal(got, np.concatenate(blocks))
    frame = dd.from_pandas(pd.DataFrame({"y": rng.integers(0, 3, size=50)}),
                           npartitions=6)
    labels = dask_module._in_memory(frame["y"][frame["y"] >= 0])  # lengths unknown
    assert_array_equal(labels, frame["y"].compute().to_numpy())


def test_values_equal_the_numpy_path_gathered_in_small_groups(binary, monkeypatch):
    import skdpval.walks._dask as dask_module

    monkeypatch.setattr(dask_module, "GATHER_ROWS", 7)
    X, y, X_val, y_val = binary
    for make in (valuator, lambda: DPLabelQuality(random_state=0, noise_seed=3)):
        expected = make().fit(X, y, X_val=X_val, y_val=y_val)
        got = make().fit(*chunked(X, y, 3), X_val=X_val, y_val=y_val)
        assert_array_equal(got.values_, expected.values_)
        assert_array_equal(got.values_stderr_, expected.values_stderr_)


# --- the public model fitted privately on the blocks ---------------------------------

def _same_fit(got, expected):
    assert_array_equal(got.values_, expected.values_)
    assert_array_equal(got.values_stderr_, expected.values_stderr_)
    assert got.privacy_report_ == expected.privacy_report_
    assert got.public_model_fitted_privately_
    assert expected.public_model_fitted_privately_


@pytest.mark.parametrize("epsilon", [1.0, np.inf])  # inf: a fit without noise
@pytest.mark.parametrize("case", ["binary", "three_classes", "regression"])
def test_label_quality_with_a_private_fit_equals_the_numpy_path(case, epsilon,
                                                                request):
    """The fit's 20 steps summed on the blocks: the public model and the
    values are the numpy path's, bit for bit, at two chunkings (the
    one-pass kernel, and the general one for three classes)."""
    X, y, X_val, y_val = request.getfixturevalue(case)
    estimator = Ridge() if case == "regression" else LogisticRegression()
    scorer = lambda: DPLabelQuality(estimator, epsilon=epsilon, random_state=0,
                                    noise_seed=1, public_model="private")
    expected = scorer().fit(X, y, X_val=X_val, y_val=y_val)
    assert not np.array_equal(expected.public_model_.coef_, expected.estimator_.coef_)
    for rows in (7, 64):
        got = scorer().fit(*chunked(X, y, rows), X_val=X_val, y_val=y_val)
        _same_fit(got, expected)
        assert_array_equal(got.public_model_.coef_, expected.public_model_.coef_)
        assert_array_equal(got.public_model_.intercept_,
                           expected.public_model_.intercept_)


@pytest.mark.parametrize("case", ["binary", "three_classes", "regression"])
def test_valuator_with_a_private_fit_equals_the_numpy_path(case, request):
    X, y, X_val, y_val = request.getfixturevalue(case)
    params = {"public_model": "private"}
    if case == "regression":
        params["estimator"] = Ridge()
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    expected = valuator(**params).fit(X, y, X_val=X_val, y_val=y_val,
                                      sample_weight=weights)
    for rows in (7, 64):
        got = valuator(**params).fit(*chunked(X, y, rows), X_val=X_val, y_val=y_val,
                                     sample_weight=da.from_array(weights, chunks=50))
        _same_fit(got, expected)
        assert_array_equal(got.public_model_, expected.public_model_)


def test_auto_decides_on_dask_input_as_in_memory():
    """Many rows: "auto" fits the public model privately on numpy input and
    on Dask input alike (the same public quantities), with the same values."""
    X, y = make_classification(n_samples=3040, n_features=4, random_state=5)
    X_val, y_val, X, y = X[:40], y[:40], X[40:], y[40:]
    for make in (DPLabelQuality, DPDataValuator):
        params = dict(epsilon=3.0, random_state=0, noise_seed=2)
        if make is DPDataValuator:
            params["n_permutations"] = 4
        in_memory = make(**params).fit(X, y, X_val=X_val, y_val=y_val)
        on_dask = make(**params).fit(*chunked(X, y, 1000), X_val=X_val, y_val=y_val)
        _same_fit(on_dask, in_memory)
        assert on_dask.public_model_reason_ == in_memory.public_model_reason_


@pytest.mark.parametrize("keep_rows", [True, False])
def test_the_private_fit_runs_on_the_cluster_with_the_same_values(binary, keep_rows,
                                                                   monkeypatch):
    """With a distributed Client each step's block sums are computed on its
    workers (labels and weights scattered once, the rows kept there when
    they fit the workers' memory, else read anew each step), the noise in
    the client."""
    import skdpval.walks._dask as dask_module

    X, y, X_val, y_val = binary
    if not keep_rows:
        monkeypatch.setattr(dask_module, "KEEP_ROWS_MEMORY_SHARE", 0.0)
    scattered, kept = [], []
    original_scatter = distributed.Client.scatter
    original_fit = dask_module._rows_fit_on_workers

    def recording_scatter(self, data, **kwargs):
        scattered.append(len(data))
        return original_scatter(self, data, **kwargs)

    def recording_fit(client, shape):
        kept.append(original_fit(client, shape))
        return kept[-1]

    monkeypatch.setattr(distributed.Client, "scatter", recording_scatter)
    monkeypatch.setattr(dask_module, "_rows_fit_on_workers", recording_fit)
    makers = (lambda: DPLabelQuality(LogisticRegression(), random_state=0,
                                     noise_seed=1, public_model="private"),
              lambda: valuator(public_model="private"))
    expected = [make().fit(X, y, X_val=X_val, y_val=y_val) for make in makers]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        got = [make().fit(*chunked(X, y, 30), X_val=X_val, y_val=y_val)
               for make in makers]
    assert scattered[:1] == [7]  # the fit's 7 blocks' labels and weights, once
    assert kept == [keep_rows, keep_rows]
    for fitted, reference in zip(got, expected):
        _same_fit(fitted, reference)


@pytest.mark.parametrize("keep_rows", [True, False])
def test_a_worker_killed_mid_private_fit_changes_no_value(monkeypatch, keep_rows):
    """A worker process killed after the fit's third step: a step whose
    data (labels and weights, kept rows) went with it sends them again and
    sums again, and the values are the same."""
    import os
    import signal

    import skdpval.walks._dask as dask_module
    from skdpval.privacy._mechanism import PrivacyMechanism

    if not keep_rows:
        monkeypatch.setattr(dask_module, "KEEP_ROWS_MEMORY_SHARE", 0.0)
    X, y, X_val, y_val = split(*make_classification(n_samples=1300, n_features=5,
                                                    random_state=5), 300)
    make = lambda: DPLabelQuality(LogisticRegression(), random_state=0, noise_seed=1,
                                  public_model="private")
    expected = make().fit(X, y, X_val=X_val, y_val=y_val)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        target = pids[sorted(pids)[0]]
        steps = []
        original = PrivacyMechanism.release

        def kill_after_the_third_step(self, part, *args, **kwargs):
            if part.name == "public model fit":
                steps.append(1)
                if len(steps) == 3:
                    os.kill(target, signal.SIGKILL)
            return original(self, part, *args, **kwargs)

        monkeypatch.setattr(PrivacyMechanism, "release", kill_after_the_third_step)
        got = make().fit(*chunked(X, y, 250), X_val=X_val, y_val=y_val)
        assert len(steps) == 20
        assert target not in client.run(os.getpid).values()  # it did die
    _same_fit(got, expected)


def test_the_problem_travels_packed_and_walks_the_same_bits(monkeypatch):
    """What workers receive: int8 targets, constant weights and unread offsets
    as a few numbers (packed again as small when a worker passes it on), and
    int32 orders; a node walked from it has the same sums, bit for bit."""
    import pickle

    import skdpval.valuation._data_valuator as valuator_module
    from skdpval.walks._waves import walk_node

    seen = []
    original = valuator_module.run_walks

    def recording(problem, draw, **kwargs):
        seen.append((problem[0] if isinstance(problem, list) else problem, draw))
        return original(problem, draw, **kwargs)

    monkeypatch.setattr(valuator_module, "run_walks", recording)
    X, y, X_val, y_val = split(*make_classification(n_samples=3000, n_features=4,
                                                    random_state=4), 500)
    valuator().fit(X, y, X_val=X_val, y_val=y_val)
    (problem, draw), = seen
    n = problem.n_parties
    sent = pickle.dumps(problem, protocol=5)
    empty = problem._replace(F=problem.F[:0], T=problem.T[:0],
                             offsets=problem.offsets[:1], weights=problem.weights[:0],
                             row_weights=problem.row_weights[:0])
    # F as it is, the targets in one byte, the rest a few numbers.
    assert len(sent) < len(pickle.dumps(empty)) + problem.F.nbytes + n + 1024
    received = pickle.loads(sent)
    assert received.T.dtype == np.int8
    assert received.weights.strides == received.offsets.strides == (0,)
    assert len(pickle.dumps(received, protocol=5)) < len(sent) + 1024  # passed on
    rng = np.random.default_rng(0)
    rolling_mean, x_tt = rng.normal(size=(n, 1)), np.full(12, 0.25)
    counted = np.arange(12) >= 6
    for lo, hi in [(0, 4), (4, 12)]:
        expected = walk_node(problem, draw, lo, hi, x_tt[lo:hi], counted[lo:hi],
                             rolling_mean)
        got = walk_node(received, draw.with_orders(np.int32), lo, hi, x_tt[lo:hi],
                        counted[lo:hi], rolling_mean)
        for field in ("raw_sum", "mean", "m2", "end_utility"):
            if getattr(expected, field) is None:
                assert getattr(got, field) is None
            else:
                assert_array_equal(getattr(got, field), getattr(expected, field))
    assert draw.with_orders(np.int32)(0, 2, None)[0].dtype == np.int32


def test_waiting_for_a_wave_keeps_no_walk_frame_alive(binary, monkeypatch):
    """The client waits for a wave's sums in turns of WORKER_CHECK_SECONDS
    (it checks the workers between turns): a turn must not leave the walk's
    frames in a reference cycle, which only a full garbage collection frees
    (with distributed.wait's timeout error they held a wave's gathered sums:
    n = 1e7, 300 MiB of the client's peak)."""
    import gc

    import skdpval.walks._cluster as cluster_module

    X, y, X_val, y_val = binary
    monkeypatch.setattr(cluster_module, "WORKER_CHECK_SECONDS", 1e-4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        chunked_X, chunked_y = chunked(X, y, 30)
        valuator().fit(chunked_X, chunked_y, X_val=X_val, y_val=y_val)  # compiled
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            valuator(n_permutations=24).fit(chunked_X, chunked_y, X_val=X_val,
                                              y_val=y_val)
            gc.collect()
            walk_frames = [item for item in gc.garbage
                           if type(item).__name__ == "frame"
                           and item.f_code.co_name in ("_gather_from",
                                                       "_walk_on_workers")]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert walk_frames == []


def test_the_default_choice_leaves_out_a_network_without_a_walk_on_dask(monkeypatch):
    """DPDataValuator() on Dask input: the network candidate, which has no walk
    there, is neither cross-validated nor chosen, and the choice says so."""
    from skdpval.valuation._validation_folds import ValidationFolds

    made = []
    fit = ValidationFolds._fit
    monkeypatch.setattr(ValidationFolds, "_fit",
                        lambda self, model: made.append(model) or fit(self, model))
    X, y = make_classification(n_samples=2300, n_features=4, random_state=5)
    X_val, y_val, X, y = X[:300], y[:300], X[300:], y[300:]
    fitted = DPDataValuator(n_permutations=4, epsilon=3.0, random_state=0,
                            noise_seed=2).fit(*chunked(X, y, 1000), X_val=X_val,
                                              y_val=y_val)
    # (the linear model's folds: "auto"'s keep rule)
    assert [type(model).__name__ for model in made] == ["LogisticRegression"]
    assert fitted.model_choice_["chosen"] == "LogisticRegression"
    assert fitted.model_choice_["candidates"] == ["LogisticRegression",
                                                  "MLPClassifier"]
    assert "MLPClassifier left out: no walk on Dask input" in fitted.model_choice_[
        "why"]
    assert fitted.privacy_report_["details"]["model_choice"] == fitted.model_choice_
