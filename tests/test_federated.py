"""DPFederatedValuator: per-round Shapley values, accounting, compression."""

import itertools
import warnings
from math import factorial

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdpval import DPFederatedValuator

from skdpval.kernels import _linear, _losses
from skdpval.privacy._accounting import noise_std_for_budget
from skdpval.privacy._compression import compress, sensitivity, sign_vote
from skdpval.privacy._secure_noise import (ROUNDING, noise_key, stream_nonce,
    uniform_coins)
from skdpval.valuation._federated import federated_schedule


@parametrize_with_checks([
    DPFederatedValuator(n_rounds=2, n_permutations_per_round=3, validation_fraction=0.5,
                        random_state=0),
    DPFederatedValuator(Ridge(), utility="neg_mse", noise="iid", n_rounds=2,
                        n_permutations_per_round=3, random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def clients():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X @ [1.0, -1.0, 0.5] + 0.5 * rng.normal(size=120) > 0).astype(int)
    groups = np.arange(90) % 6
    y_train = y[:90].copy()
    y_train[groups == 0] = 1 - y_train[groups == 0]  # one bad client
    return X[:90], y_train, groups, X[90:], y[90:]


@pytest.mark.parametrize("compression", [None, "sign"])
def test_one_noiseless_round_with_all_permutations_is_exact_shapley(clients,
                                                                    compression):
    X, y, groups, X_val, y_val = clients
    lr, C, beta = 0.8, 0.5, 0.4
    fed = DPFederatedValuator(LogisticRegression(C=2.0), n_rounds=1,
                              n_permutations_per_round="all", noise="none",
                              learning_rate=lr, clip_norm=C, utility="neg_loss",
                              compression=compression, sign_threshold=beta,
                              privacy_unit="group", standardize=False)
    fed.fit(X, y, groups=groups, X_val=X_val, y_val=y_val)

    # The game, written out: v(S) = V(0 - lr * mean of S's clipped gradients).
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    order = np.argsort(groups, kind="stable")
    offsets = np.r_[0, np.cumsum(np.bincount(groups))]
    T = np.where(y[order] == 1, 1.0, -1.0)[:, None]
    gradients = _linear.party_gradients(
        np.zeros((1, 4)), ones(X)[order], T, offsets, loss=_losses.LOGISTIC,
        loss_param=0.0, l2=1 / (2.0 * 6), n_penalized=3).reshape(6, -1)
    clipped = [g / max(1, np.linalg.norm(g) / C) for g in gradients]
    T_val = np.where(y_val == 1, 1.0, -1.0)[:, None]

    def v(S):
        if not S:
            step = np.zeros(4)
        elif compression == "sign":  # the thresholded vote of the fragment
            total = np.sum([np.sign(clipped[i]) for i in S], axis=0)
            step = np.where(np.abs(total) >= beta * len(S), np.sign(total), 0.0)
        else:
            step = np.mean([clipped[i] for i in S], axis=0)
        margins = ones(X_val) @ (-lr * step)
        return -np.mean(np.logaddexp(0, -T_val[:, 0] * margins))

    n = 6
    exact = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            for S in itertools.combinations(others, size):
                weight = factorial(size) * factorial(n - size - 1) / factorial(n)
                exact[i] += weight * (v(set(S) | {i}) - v(set(S)))
    assert_allclose(fed.round_values_[0], exact, rtol=1e-9, atol=1e-12)
    assert_allclose(fed.values_, exact, rtol=1e-9, atol=1e-12)
    assert np.argmin(exact) == 0  # the bad client is worth least


def test_accounting_uses_the_sensitivity_of_the_release(clients):
    X, y, groups, X_val, y_val = clients
    for compression, clipping, expected in [
        (None, "l2", 0.5), (None, "coordinate", 0.5 * 2.0),
        (("randk", 2), "l2", 0.5), (("randk", 2), "coordinate", 0.5 * np.sqrt(2)),
        (("quantize", 4), "l2", 0.5 * 2.0), ("sign", "l2", 2.0),
    ]:
        assert sensitivity(compression, clipping, 0.5, 4) == pytest.approx(expected)
        fed = DPFederatedValuator(n_rounds=5, n_permutations_per_round=2,
                                  compression=compression, clipping=clipping,
                                  clip_norm=0.5, epsilon=2.0, privacy_unit="group",
                                  random_state=0)
        fed.fit(X, y, groups=groups, X_val=X_val, y_val=y_val)
        report = fed.privacy_report_
        # On the grid gamma = S / 2**9 (4 coordinates), each rounded coordinate
        # moves a difference by up to one step: 2 steps over 2**9 in L2.
        padded = expected * (1 + (2 + 2**-20) / 2**9)
        assert report["sensitivity"] == pytest.approx(padded, rel=1e-12)
        assert report["parts"][0]["grid"] == pytest.approx(expected / 2**9, rel=1e-12)
        assert report["noise_std"] == pytest.approx(
            noise_std_for_budget(2.0, 5e-5, 5, padded), rel=1e-6)
        assert fed.epsilon_ == pytest.approx(2.0)
        assert report["unit"] == "client" and report["details"]["private_support"]
        if compression in (None, ("randk", 2)):  # record-level: the same sensitivity
            fed.set_params(privacy_unit="record").fit(X, y, groups=groups,
                                                      X_val=X_val, y_val=y_val)
            assert fed.privacy_report_["sensitivity"] == pytest.approx(padded)
            assert fed.privacy_report_["unit"] == "record"


def record_releases(monkeypatch):
    """The released matrix of every round, as _round_shapley receives it."""
    releases = []
    original = DPFederatedValuator._round_shapley

    def recording(self, theta, released, *args):
        releases.append(released.copy())
        return original(self, theta, released, *args)

    monkeypatch.setattr(DPFederatedValuator, "_round_shapley", recording)
    return releases


def test_topk_noises_every_coordinate(clients, monkeypatch):
    """Top-k picks its support from private data: no coordinate is released bare."""
    X, y, groups, X_val, y_val = clients
    releases = record_releases(monkeypatch)
    fed = DPFederatedValuator(n_rounds=3, n_permutations_per_round=2, noise="iid",
                              compression=("topk", 2), privacy_unit="group",
                              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left to warn about
        fed.fit(X, y, groups=groups, X_val=X_val, y_val=y_val)
    assert np.all(np.concatenate(releases) != 0)
    report = fed.privacy_report_
    assert report["details"]["private_support"] and fed.epsilon_ == pytest.approx(1.0)
    # top-k keeps |g| <= c; the grid's rounding pads it by (2 + 2**-20) / 2**9
    assert report["sensitivity"] == pytest.approx(1.0 * (1 + (2 + 2**-20) / 2**9))
    # Random-k's mask is public: the m coordinates are noised, the rest 0.
    releases.clear()
    fed.set_params(compression=("randk", 2)).fit(X, y, groups=groups, X_val=X_val,
                                                  y_val=y_val)
    assert np.all(np.sum(np.concatenate(releases) != 0, axis=1) == 2)


def test_noise_is_drawn_at_the_calibrated_std(clients, monkeypatch):
    import skdpval.privacy._mechanism as federated_module  # the draws of every part but the walk

    X, y, groups, X_val, y_val = clients
    drawn = []
    original = federated_module.gaussian_noise

    def recording(key, kind, lo, hi, std, out):
        drawn.append(original(key, kind, lo, hi, std, out).copy())
        return drawn[-1]

    monkeypatch.setattr(federated_module, "gaussian_noise", recording)
    fed = DPFederatedValuator(n_rounds=40, n_permutations_per_round=2, epsilon=2.0,
                              random_state=0).fit(X, y, groups=groups, X_val=X_val,
                                                  y_val=y_val)
    # One draw a round: 6 clients x 4 coordinates, integers on the grid
    # gamma = clip_norm / 2**9.
    assert len(drawn) == 40 and all(z.shape == (1, 6 * 4) for z in drawn)
    assert np.all(np.array(drawn) == np.rint(drawn))
    gamma = fed.clip_norm / 2**9
    assert gamma * np.std(drawn) == pytest.approx(fed.privacy_report_["noise_std"],
                                                  rel=0.1)


def test_noise_and_rounding_are_secret_masks_and_permutations_public(clients):
    X, y, groups, X_val, y_val = clients
    fit = lambda **params: DPFederatedValuator(
        n_rounds=3, n_permutations_per_round=4, random_state=0, **params).fit(
        X, y, groups=groups, X_val=X_val, y_val=y_val).round_values_
    # A known random_state does not fix the noise: it comes from OS entropy.
    assert not np.array_equal(fit(), fit())
    assert_allclose(fit(noise_seed=3), fit(noise_seed=3), rtol=0, atol=0)
    # The rounding coins are secret too; masks and permutations are not.
    quantised = dict(noise="none", compression=("quantize", 3), privacy_unit="group")
    assert not np.array_equal(fit(**quantised), fit(**quantised))
    masked = dict(noise="none", compression=("randk", 2))
    assert_allclose(fit(**masked), fit(**masked), rtol=0, atol=0)
    fed = DPFederatedValuator(n_rounds=2).fit(X, y, groups=groups, X_val=X_val,
                                               y_val=y_val)
    assert "entropy" in fed.privacy_report_["noise_source"]


def test_rounding_coins_come_from_the_mechanism_s_stream(clients, monkeypatch):
    """The quantization's rounding coins: uniforms from the fit's ChaCha20
    key, stream (ROUNDING, round), one a client's coordinate; reproducible
    with noise_seed (another seed: other coins), fresh without."""
    import skdpval.privacy._mechanism as mechanism_module

    X, y, groups, X_val, y_val = clients
    drawn = []
    original = mechanism_module.PrivacyMechanism.uniforms

    def recording(self, kind, stream, size):
        coins = original(self, kind, stream, size)
        drawn.append((kind, stream, size, coins.copy()))
        return coins

    monkeypatch.setattr(mechanism_module.PrivacyMechanism, "uniforms", recording)
    fit = lambda **params: DPFederatedValuator(
        n_rounds=3, n_permutations_per_round=2, random_state=0, noise="none",
        privacy_unit="group", **{"compression": ("quantize", 3), **params}).fit(
        X, y, groups=groups, X_val=X_val, y_val=y_val).round_values_
    seeded = fit(noise_seed=5)
    # 6 clients x 4 coordinates (3 features, the intercept) a round.
    assert [d[:3] for d in drawn] == [(ROUNDING, t, 24) for t in range(3)]
    assert_array_equal(drawn[1][3],
                       uniform_coins(noise_key(5), stream_nonce(ROUNDING, 1), 24))
    assert_array_equal(fit(noise_seed=5), seeded)
    assert not np.array_equal(fit(noise_seed=6), seeded)
    drawn.clear()
    fit(), fit()
    assert not np.array_equal(drawn[0][3], drawn[3][3])  # fresh OS entropy
    # Without quantization no coin is drawn.
    drawn.clear()
    fit(compression=("randk", 2))
    assert drawn == []


def test_without_X_val_whole_clients_are_held_out_without_reading_labels(clients):
    X, y, groups, _, _ = clients
    make = lambda labels: DPFederatedValuator(
        n_rounds=2, n_permutations_per_round=2, validation_fraction=0.3,
        random_state=0).fit(X, labels, groups=groups)
    fed = make(y)
    held_out = np.isnan(fed.values_)
    assert held_out.sum() == 2 and fed.values_.shape == (6,)
    assert np.all(np.isnan(fed.round_values_[:, held_out]))
    # The held-out clients' samples are counted as unprotected, all of them.
    n_rows = np.isin(groups, fed.groups_[held_out]).sum()
    assert n_rows == 30
    assert f"{n_rows} samples held out" in fed.privacy_report_["validation_set"]
    # Flipping a training label moves no client in or out of the validation set.
    flipped = y.copy()
    flipped[np.flatnonzero(~held_out[groups])[0]] ^= 1
    assert_array_equal(np.isnan(make(flipped).values_), held_out)


def test_classes_come_from_y_val_or_the_classes_parameter(clients):
    X, y, groups, X_val, y_val = clients
    relabelled = y.copy()
    relabelled[0] = 2
    fed = DPFederatedValuator(n_rounds=2, n_permutations_per_round=2, random_state=0)
    with pytest.raises(ValueError, match="classes=\\[...\\]"):
        fed.fit(X, relabelled, groups=groups, X_val=X_val, y_val=y_val)
    fed.set_params(classes=[0, 1, 2]).fit(X, relabelled, groups=groups, X_val=X_val,
                                         y_val=y_val)
    assert_array_equal(fed.classes_, [0, 1, 2])
    # The class set, not the labels, fixes the model: the same with y.
    assert_array_equal(fed.fit(X, y, groups=groups, X_val=X_val, y_val=y_val).classes_,
                       [0, 1, 2])


def test_compression_operators():
    rng = np.random.default_rng(0)
    g = np.array([0.3, -2.0, 0.0, 1.0])
    top, kept = compress(g, ("topk", 2), 1.0, rng)
    assert_allclose(top, [0, -2.0, 0, 1.0]) and kept.all()  # noise everywhere
    rand, kept = compress(g, ("randk", 3), 1.0, rng)
    assert kept.sum() == 3 and np.all(rand[~kept] == 0) and np.all(rand[kept] == g[kept])
    quantised = np.mean([compress(np.array([0.3]), ("quantize", 3), 1.0, rng,
                                  rng.random(1))[0] for _ in range(4000)])
    assert quantised == pytest.approx(0.3, abs=0.03)  # unbiased
    assert set(np.unique(compress(np.array([0.3, -0.7]), ("quantize", 3), 1.0,
                                  rng, rng.random(2))[0])) <= {-1.0, 0.0, 1.0}
    assert_allclose(compress(g, "sign", 1.0, rng)[0], [1, -1, 0, 1])
    votes = np.array([[1, 1, -1], [1, -1, -1], [1, 1, 1]], dtype=float)
    assert_allclose(sign_vote(votes, 0.5), [1, 0, 0])  # |sum| >= 1.5 only for the first
    assert_allclose(sign_vote(votes, 0.0), [1, 1, -1])


def test_schedules():
    assert_allclose(federated_schedule("correlated", 10),
                    0.75 - 0.07 * np.arange(1, 11))
    assert_allclose(federated_schedule("iid", 3), 1.0)
    assert_allclose(federated_schedule(lambda t, k: np.full(k, 0.5), 4), 0.5)
    with pytest.raises(ValueError, match="x_t"):
        federated_schedule(np.zeros(3), 3)


def test_reproducible_and_shaped(clients):
    X, y, groups, X_val, y_val = clients
    make = lambda: DPFederatedValuator(n_rounds=6, n_permutations_per_round=5,
                                       q=0.5, epsilon=3.0, random_state=1, noise_seed=1).fit(
        X, y, groups=groups, X_val=X_val, y_val=y_val)
    first, second = make(), make()
    assert_allclose(first.round_values_, second.round_values_, rtol=0, atol=0)
    assert first.round_values_.shape == (6, 6) and first.history_.shape == (6,)
    assert_allclose(first.values_, first.round_values_[3:].mean(axis=0))


@pytest.mark.parametrize("params, fit_args, match", [
    ({}, dict(groups=np.arange(89)), "one label per sample"),
    ({}, dict(groups=np.zeros(90)), "single group"),
    ({}, dict(groups=np.r_[np.nan, np.arange(89.0)]), "NaN"),
    ({"n_rounds": 0}, {}, "'n_rounds'"),
    ({"q": 1.0}, {}, "'q'"),
    ({"q": -0.5}, {}, "'q'"),
    ({"compression": ("randk", 99)}, {}, "randk"),
    ({"compression": ("zip", 2)}, {}, "compression must be"),
    ({"n_permutations_per_round": "all"}, dict(groups=np.arange(90) % 9),
     "at most 8 clients"),
    ({"utility": "r2"}, {}, "utility='r2'"),
])
def test_bad_input(clients, params, fit_args, match):
    X, y, groups, X_val, y_val = clients
    args = dict(groups=groups, X_val=X_val, y_val=y_val)
    args.update(fit_args)
    with pytest.raises(ValueError, match=match):
        DPFederatedValuator(**{"n_rounds": 2, **params}).fit(X, y, **args)
