"""Waves: values do not depend on n_jobs or the joblib backend."""

import sys

import distributed
import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification

from skdpval import DPDataValuator


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=50, n_features=5, random_state=0)
    return X, y


def values(data, **params):
    X, y = data
    params = {"n_permutations": 23, "batch_permutations": 5, "random_state": 0, "noise_seed": 0,
              **params}
    return DPDataValuator(**params).fit(X, y).values_


@pytest.mark.parametrize("noise", ["correlated", "iid"])
def test_values_identical_for_any_n_jobs_and_backend(data, noise):
    serial = values(data, noise=noise, n_jobs=1)
    assert_array_equal(values(data, noise=noise, n_jobs=2), serial)
    assert_array_equal(values(data, noise=noise, n_jobs=3), serial)
    with parallel_config(backend="loky", n_jobs=2):
        assert_array_equal(values(data, noise=noise, n_jobs=None), serial)
    with parallel_config(backend="threading", n_jobs=2):
        assert_array_equal(values(data, noise=noise), serial)


def test_values_identical_on_a_dask_cluster(data):
    serial = values(data, n_jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            with parallel_config(backend="dask"):
                on_dask = values(data, n_jobs=-1)
    assert_array_equal(on_dask, serial)


def test_wave_size_changes_correlated_values_but_not_iid(data):
    """The wave size is part of the correlated algorithm; i.i.d. ignores it."""
    assert not np.array_equal(values(data, batch_permutations=1),
                              values(data, batch_permutations=5))
    assert_array_equal(values(data, noise="iid", batch_permutations=1),
                       values(data, noise="iid", batch_permutations=5))


def test_progress_is_silent_by_default_and_reports_when_verbose(data, capfd,
                                                                monkeypatch):
    values(data)
    assert capfd.readouterr().err == ""
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # the plain fallback
    values(data, verbose=1)
    err = capfd.readouterr().err
    assert "23/23 permutations" in err and "ETA" in err
