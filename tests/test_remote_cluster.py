"""The fit's secret noise key never passes through a Dask scheduler.

The walk's draws hold the key (the privacy layer's NoiseStream). A client
whose scheduler runs in another process (a remote cluster) scatters, by
Dask's default, through the scheduler; the walk sends its data to each
worker directly instead, or refuses (issue 43, item 8). Here the scheduler
and its workers run in a subprocess whose Scheduler records every scatter
routed through it.
"""

import select
import subprocess
import sys
import textwrap
import time

import dask
import distributed
import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification

from skdpval import DPDataValuator
from skdpval.exceptions import DirectScatterError
from skdpval.walks import _cluster

CLUSTER = textwrap.dedent("""
    import asyncio, sys
    import distributed.scheduler as scheduler_module
    from distributed import Scheduler, Worker

    record, contact = sys.argv[1], sys.argv[2]
    routed = scheduler_module.Scheduler.scatter

    async def scatter(self, *args, **kwargs):  # a scatter through the scheduler
        with open(record, "a") as out:
            out.write("scatter through the scheduler\\n")
        return await routed(self, *args, **kwargs)

    scheduler_module.Scheduler.scatter = scatter

    async def main():
        async with Scheduler(host="127.0.0.1", port=0, dashboard_address=None) as s:
            first, second = [None, None] if contact == "-" else contact.split(",")
            async with Worker(s.address, nthreads=1, host="127.0.0.1",
                              contact_address=first), \\
                    Worker(s.address, nthreads=1, host="127.0.0.1",
                           contact_address=second):
                print(s.address, flush=True)
                await asyncio.sleep(600)

    asyncio.run(main())
""")


@pytest.fixture
def remote_cluster(tmp_path):
    """``start(contact)``: a scheduler with two workers in another process
    (``contact``: the two addresses, comma-separated, the workers give the
    scheduler for them, "-" for their own); returns its address and the
    file its scatters go to."""
    processes = []

    def start(contact="-"):
        record = tmp_path / "scatters.txt"
        record.write_text("")
        process = subprocess.Popen([sys.executable, "-c", CLUSTER, str(record), contact],
                                   stdout=subprocess.PIPE, text=True)
        processes.append(process)
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "the cluster did not start in 120 s"
        address = process.stdout.readline().strip()
        assert address.startswith("tcp://"), address
        return address, record

    yield start
    for process in processes:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    return X[:40], y[:40], X[40:], y[40:]


def _fit(data):
    X, y, X_val, y_val = data
    return DPDataValuator(epsilon=3.0, n_permutations=12, batch_permutations=4,
                          random_state=0, noise_seed=0).fit(
        X, y, X_val=X_val, y_val=y_val)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_remote_scheduler_never_receives_the_draws(data, remote_cluster):
    address, record = remote_cluster()
    expected = _fit(data).values_
    with distributed.Client(address) as client:
        assert client.cluster is None  # the scheduler is not in this process
        with parallel_config(backend="dask"):
            got = _fit(data).values_
    assert_array_equal(got, expected)
    assert record.read_text() == ""


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_workers_the_client_cannot_reach_are_refused(data, remote_cluster):
    """The workers give the scheduler an address where nothing listens (as a
    remote cluster's private addresses are, from outside): the direct scatter
    fails, and the fit says why instead of sending the key elsewhere."""
    address, record = remote_cluster("tcp://127.0.0.1:9,tcp://127.0.0.1:19")
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        with distributed.Client(address) as client:
            started = time.perf_counter()
            with parallel_config(backend="dask"):
                with pytest.raises(DirectScatterError,
                                   match="never through the scheduler"):
                    _fit(data)
            assert time.perf_counter() - started < 60
            assert client.scheduler_info()["workers"]
    assert record.read_text() == ""


class StubClient:
    """What the walk asks of a distributed Client when it scatters."""

    def __init__(self, error=None, workers=("tcp://a", "tcp://b")):
        self.error, self.workers, self.calls = error, list(workers), []

    def scatter(self, data, **kwargs):
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        return data

    def scheduler_info(self):
        return {"workers": {worker: {} for worker in self.workers}}


def test_the_draws_are_scattered_directly_to_one_worker():
    client = StubClient()
    assert _cluster._scatter(client, ["problem", "draws"], "tcp://a") == [
        "problem", "draws"]
    assert client.calls == [dict(workers=["tcp://a"], hash=False, direct=True)]


def test_an_unreachable_worker_is_refused_a_lost_one_walked_again():
    unreachable = StubClient(OSError("Timed out trying to connect"))
    with pytest.raises(DirectScatterError, match="tcp://a directly"):
        _cluster._scatter(unreachable, ["draws"], "tcp://a")
    lost = StubClient(OSError("closed"), workers=["tcp://b"])
    with pytest.raises(_cluster.WorkerLeftError):
        _cluster._scatter(lost, ["draws"], "tcp://a")
    assert issubclass(_cluster.WorkerLeftError, Exception)
    assert np.all([call["direct"] is True for call in unreachable.calls + lost.calls])
