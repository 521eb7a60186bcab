"""Record-level privacy for groups: per-record clipping, a noisy sum, its mean.

A group's release is ``(sum of its records' clipped gradients + noise) / n_g``:
one record moves it by at most ``C / n_g`` (zero-out; ``2 C / n_g``
replace-one) and its noise std is ``s / n_g``, ``s`` calibrated for
sensitivity ``C``. The kernels are checked against the plain-numpy
reference (``reference.algorithm1`` with ``offsets`` and ``record_level``).
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression

from helpers import FixedDraws
from reference import algorithm1
from skdpval import DPDataValuator, DPFederatedValuator, DPLabelQuality
from skdpval.kernels import _linear, _losses, _subspace_problem
from skdpval.privacy._accounting import gdp_epsilon, noise_std_for_budget
from skdpval.privacy._noise import gaussian_noise
from skdpval.privacy._release import release_stream
from skdpval.privacy._grid import Grid
from skdpval.privacy._secure_noise import FEDERATED, LABEL_SCORE, noise_key
from skdpval.valuation._semivalues import semivalue_weights
from skdpval.kernels._linear import make_problem
from skdpval.walks._runner import run_walks
from test_kernels import HUBER_EPSILON, LOSS_CODES, UTILITY_CODES, make_data
from test_subspace import orthonormal_rows

SIZES = [1, 3, 4, 2]  # rows per group
OFFSETS = np.r_[0, np.cumsum(SIZES)]


@pytest.mark.parametrize("record_level", [False, True])
@pytest.mark.parametrize("m", [None, 1, 2])  # None: the full-space walk
@pytest.mark.parametrize("noise_mode", ["iid", "correlated"])
@pytest.mark.parametrize("loss", ["logistic", "multinomial", "squared", "hinge"])
def test_grouped_walk_matches_reference(loss, noise_mode, m, record_level):
    X, T, X_val, T_val, labels = make_data(loss, n=int(OFFSETS[-1]), seed=3)
    n_parties, k = len(SIZES), 4
    n_columns, n_outputs = X.shape[1], T.shape[1]
    rng = np.random.default_rng(4)
    permutations = np.array([rng.permutation(n_parties) for _ in range(k)])
    basis = None if m is None else orthonormal_rows(m, n_outputs * n_columns, 5)
    shape = (n_outputs, n_columns) if m is None else (m,)
    noise = 0.7 * rng.normal(size=(k, n_parties, *shape))
    t = np.arange(1, k + 1)
    x_tt = 1.0 / t if noise_mode == "correlated" else np.ones(k)
    weights = semivalue_weights("shapley", n_parties)
    # clip_norm 0.3: most rows (and groups) are clipped.
    common = dict(learning_rate=0.4, l2=0.1, n_penalized=n_columns - 1, clip_norm=0.3)
    psi, end_ref = algorithm1(
        X, T, X_val, T_val, labels, loss=loss, utility_name="neg_loss",
        permutations=permutations, noise=noise, x_tt=x_tt, q=0.0, weights=weights,
        loss_param=HUBER_EPSILON, basis=basis, offsets=OFFSETS,
        record_level=record_level, **common)
    settings = dict(loss=LOSS_CODES[loss], utility=UTILITY_CODES["neg_loss"],
                    loss_param=HUBER_EPSILON, total_sum_squares=1.0,
                    weights=weights, record_level=record_level, **common)
    if m is None:
        problem = make_problem(X, T, OFFSETS, X_val, T_val, labels, **settings)
    else:
        problem = _subspace_problem.make_subspace_problem(basis, X, T, OFFSETS, X_val, T_val,
                                                  labels, **settings)
    result = run_walks(problem, FixedDraws(permutations, noise), x_tt=x_tt,
                       use_rolling=noise_mode == "correlated",
                       counted=np.ones(k, dtype=bool), batch_permutations=1)
    assert np.any(psi != 0)
    assert_allclose(result.marginal_mean, psi, rtol=1e-10, atol=1e-12)
    assert_allclose(result.end_utility, end_ref, rtol=1e-10, atol=1e-12)


def release(X, T, offsets, party, *, clip_norm, noise=None, basis=None,
            record_level=True):
    """Party ``party``'s release at theta = 0: one step of rate 1 (logistic, no
    L2, no intercept)."""
    n_outputs, n_columns = T.shape[1], X.shape[1]
    settings = dict(loss=_losses.LOGISTIC, utility=_losses.NEG_LOSS,
                    loss_param=0.0, l2=0.0, clip_norm=clip_norm, learning_rate=1.0,
                    total_sum_squares=1.0, weights=np.zeros(1),
                    permutations=np.array([[party]]), record_level=record_level)
    n_parties = len(offsets) - 1
    if basis is None:
        if noise is not None:
            noise = np.array(np.broadcast_to(noise, (1, n_parties, n_outputs,
                                                     n_columns)), dtype=np.float64)
        _, _, theta = _linear._run_walk(
            X, T, np.asarray(offsets), np.zeros((n_columns, 0)),
            np.zeros((n_outputs, 0)), np.empty(0, np.int64),
            n_penalized=0, starts=np.zeros((1, n_outputs, n_columns)),
            stream=None if noise is None else release_stream(noise), **settings)
        return -theta.ravel()
    if noise is not None:
        noise = np.array(np.broadcast_to(noise, (1, n_parties, len(basis))),
                         dtype=np.float64)
    _, _, ends = _subspace_problem._run_walk(
        _subspace_problem.project_rows(basis, X, n_outputs), T, np.asarray(offsets),
        *_subspace_problem._no_validation(len(basis), n_outputs), penalty=np.zeros(
            (len(basis), len(basis))),
        stream=None if noise is None else release_stream(noise), **settings)
    return -ends[0]


@pytest.mark.parametrize("subspace", [False, True])
def test_record_level_release_has_sensitivity_clip_over_group_size(subspace):
    """One record changes a group's release by at most C / n_g (zero-out) or
    2 C / n_g (replace-one), and the worst-case record reaches it."""
    rng = np.random.default_rng(0)
    n_g, d, C = 5, 3, 0.4
    X = rng.normal(size=(n_g, d))
    X[0] = [10.0, 0.0, 0.0]  # its gradient at 0, -t x / 2, is clipped: norm C
    T = np.ones((n_g, 1))
    offsets = np.array([0, n_g])
    basis = np.array([[1.0, 0.0, 0.0]]) if subspace else None
    base = release(X, T, offsets, 0, clip_norm=C, basis=basis)

    flipped = T.copy()
    flipped[0] = -1.0  # the clipped gradient turns from -C e1 to +C e1
    worst = np.linalg.norm(release(X, flipped, offsets, 0, clip_norm=C, basis=basis)
                           - base)
    assert worst == pytest.approx(2 * C / n_g, rel=1e-12)
    zeroed = X.copy()
    zeroed[0] = 0.0  # zero-out: the record's gradient is 0
    assert np.linalg.norm(release(zeroed, T, offsets, 0, clip_norm=C, basis=basis)
                          - base) == pytest.approx(C / n_g, rel=1e-12)
    # Any other replacement of the record moves it less.
    for _ in range(200):
        other_X, other_T = X.copy(), T.copy()
        other_X[0] = 10 * rng.normal(size=d)
        other_T[0] = rng.choice([-1.0, 1.0])
        change = release(other_X, other_T, offsets, 0, clip_norm=C, basis=basis) - base
        assert np.linalg.norm(change) <= 2 * C / n_g * (1 + 1e-12)
    # Group-level: the group's mean gradient clipped once moves by up to 2 C.
    group = [release(X, labels, offsets, 0, clip_norm=C, basis=basis,
                     record_level=False) for labels in (T, -T)]
    assert np.linalg.norm(group[0] - group[1]) == pytest.approx(2 * C, rel=1e-12)


@pytest.mark.parametrize("subspace", [False, True])
def test_record_level_noise_of_a_group_is_the_sums_over_its_size(subspace):
    """The noise reaches a group's release divided by n_g: std s / n_g exactly."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(int(OFFSETS[-1]), 3))
    T = rng.choice([-1.0, 1.0], size=(len(X), 1))
    basis = orthonormal_rows(2, 3, 0) if subspace else None
    shape = (2,) if subspace else (1, 3)
    noise = rng.normal(size=(len(SIZES), *shape))
    for party, size in enumerate(SIZES):
        clean = release(X, T, OFFSETS, party, clip_norm=0.5, basis=basis)
        noisy = release(X, T, OFFSETS, party, clip_norm=0.5, basis=basis,
                        noise=noise[None])
        assert_allclose(noisy - clean, noise[party].ravel() / size, rtol=1e-9,
                        atol=1e-14)


@pytest.fixture(scope="module")
def grouped():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=150) > 0).astype(int)
    groups = np.repeat(np.arange(6), [5, 10, 15, 20, 20, 30])
    return X[:100], y[:100], groups, X[100:], y[100:]


def test_valuator_reports_the_record_level_guarantee(grouped):
    X, y, groups, X_val, y_val = grouped
    k, epsilon, C = 20, 2.0, 0.5
    valuator = DPDataValuator(n_permutations=k, epsilon=epsilon, clip_norm=C,
                              random_state=0).fit(X, y, X_val=X_val, y_val=y_val,
                                                  groups=groups)
    report = valuator.privacy_report_
    # A sum's neighbour is one record away: its rounding to the grid can move
    # the difference by one grid unit, 1 / 2**8 of C (one coordinate).
    sensitivity = C * (2**8 + 1 + 2**-20) / 2**8
    s = noise_std_for_budget(epsilon, 5e-5, k, sensitivity)
    assert valuator.privacy_unit_ == report["unit"] == "record"
    details = report["details"]
    assert details["valuation_unit"] == "group"
    # Calibrated at delta net of the sampler's share: within 1e-6 of it.
    assert report["noise_std"] == pytest.approx(s, rel=1e-6)
    assert report["sensitivity"] == pytest.approx(sensitivity, rel=1e-15)
    assert valuator.epsilon_ == pytest.approx(epsilon)
    assert details["mean_release_noise_std"] == pytest.approx((s / 30, s / 5))
    assert report["mu"] == pytest.approx(np.sqrt(k) * sensitivity / s)
    assert details["group_mu"] == pytest.approx(30 * report["mu"])
    assert details["group_epsilon"] == pytest.approx(
        gdp_epsilon(30 * report["mu"], 5e-5))
    assert "public" in details["group_sizes"] and "5 to 30" in details["group_sizes"]
    group_level = DPDataValuator(n_permutations=k, epsilon=epsilon, clip_norm=C,
                                 privacy_unit="group", random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups)
    assert group_level.privacy_report_["unit"] == "group"
    assert "group_mu" not in group_level.privacy_report_["details"]
    # Without groups the unit is the sample, whatever privacy_unit says.
    for unit in ("record", "group"):
        plain = DPDataValuator(n_permutations=2, privacy_unit=unit, epsilon=1.0,
                               random_state=0).fit(X, y, X_val=X_val, y_val=y_val)
        assert plain.privacy_unit_ == plain.privacy_report_["unit"] == "sample"


def test_auto_learning_rate_cap_scales_with_the_group_noise(grouped):
    """With heavy noise the 'auto' rate is capped by the noise of n steps: at
    record level party j's step noise is s / n_j, so the cap grows by
    sqrt(n) / sqrt(sum 1 / n_j^2)."""
    X, y, groups, X_val, y_val = grouped
    sizes = np.bincount(groups)
    rates = {unit: DPDataValuator(n_permutations=20, epsilon=0.1, privacy_unit=unit,
                                  random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups).learning_rate_
        for unit in ("group", "record")}
    # (a record-level sum's grid pads its sensitivity by one grid unit in 2**8)
    assert rates["record"] / rates["group"] == pytest.approx(
        np.sqrt(len(sizes) / np.sum(1.0 / sizes**2)) / Grid(1.0, 1, False).padding,
        rel=1e-7)  # (each calibrated net of its sampler's share of delta)


def test_record_level_values_track_the_noiseless_values_better(grouped):
    """Large groups: record-level values at eps 1 follow the noiseless ones;
    group-level values at the same budget barely do."""
    X, y, groups, X_val, y_val = grouped
    y = y.copy()
    y[groups == 3] = 1 - y[groups == 3]  # a mislabelled group of 20
    fits = {}
    for unit in ("record", "group"):
        values = [DPDataValuator(n_permutations=40, epsilon=1.0, privacy_unit=unit,
                                 random_state=0, noise_seed=seed).fit(
            X, y, X_val=X_val, y_val=y_val, groups=groups).values_
            for seed in range(5)]
        fits[unit] = np.mean([np.argmin(v) == 3 for v in values])
    assert fits["record"] == 1.0
    assert fits["group"] < 1.0


def test_label_quality_record_level(grouped):
    X, y, groups, X_val, y_val = grouped
    clip, epsilon = 1.5, 1.0
    scorer = DPLabelQuality(LogisticRegression(), epsilon=epsilon, clip=clip,
                            random_state=0, noise_seed=0)
    noisy = scorer.fit(X, y, X_val=X_val, y_val=y_val, groups=groups).values_
    clean = DPLabelQuality(LogisticRegression(), epsilon=np.inf, clip=clip,
                           random_state=0).fit(X, y, X_val=X_val, y_val=y_val,
                                               groups=groups).values_
    sizes = np.bincount(groups)
    # Record level: a group's sum of clipped scores on the grid (no clamp: a
    # neighbour is one record away), plus the integer noise, over its size.
    grid = Grid(clip, 1, zero_neighbour=False)
    s = noise_std_for_budget(epsilon, 5e-5, 1, clip * grid.padding)
    m = gaussian_noise(noise_key(0), LABEL_SCORE, 0, 1, s / grid.gamma,
                       np.empty((1, 6)))[0]
    expected = grid.gamma * (np.rint(clean * sizes / grid.gamma) + m) / sizes
    assert_allclose(noisy, expected, rtol=1e-9)
    report = scorer.privacy_report_
    assert report["unit"] == "record" and report["noise_std"] == pytest.approx(s)
    assert report["details"]["group_mu"] == pytest.approx(30 * report["mu"])
    # Group level: a group's mean score, clamped to the clip on its grid.
    group_level = scorer.set_params(privacy_unit="group").fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups)
    grid = Grid(clip, 1)
    s = noise_std_for_budget(epsilon, 5e-5, 1, clip)
    m = gaussian_noise(noise_key(0), LABEL_SCORE, 0, 1, s / grid.gamma,
                       np.empty((1, 6)))[0]
    expected = grid.gamma * (np.clip(np.rint(clean / grid.gamma), -grid.bound,
                                     grid.bound) + m)
    assert_allclose(group_level.values_, expected, rtol=1e-9)
    assert group_level.privacy_report_["unit"] == "group"


def test_federated_record_level_releases(grouped, monkeypatch):
    """A client's release: the sum of its records' clipped gradients plus the
    noise, over its size (checked in round 1, at theta = 0)."""
    X, y, groups, X_val, y_val = grouped
    C = 0.3
    released = []
    original = DPFederatedValuator._round_shapley

    def recording(self, theta, releases, *args):
        released.append(releases.copy())
        return original(self, theta, releases, *args)

    monkeypatch.setattr(DPFederatedValuator, "_round_shapley", recording)
    fits = {}
    for noise in ("none", "iid"):
        released.clear()
        fed = DPFederatedValuator(n_rounds=1, n_permutations_per_round=2, noise=noise,
                                  clip_norm=C, epsilon=None,
                                  noise_multiplier=None if noise == "none" else 2.0,
                                  standardize=False, random_state=0, noise_seed=0)
        fed.fit(X, y, groups=groups, X_val=X_val, y_val=y_val)
        fits[noise] = released[0]
    ones = np.hstack([X, np.ones((len(X), 1))])
    t = np.where(y == 1, 1.0, -1.0)
    rows = -t[:, None] * ones * 0.5  # logistic gradient at theta = 0
    clipped = rows / np.maximum(1, np.linalg.norm(rows, axis=1) / C)[:, None]
    sizes = np.bincount(groups)
    expected = np.array([clipped[groups == g].sum(axis=0) for g in range(6)])
    assert_allclose(fits["none"], expected / sizes[:, None], rtol=1e-12)
    # The noise goes on each client's sum on the grid (4 coordinates, no clamp).
    grid = Grid(C, 4, zero_neighbour=False)
    m = gaussian_noise(noise_key(0), FEDERATED, 0, 1, 2.0 * C * grid.padding
                       / grid.gamma, np.empty((1, 24))).reshape(6, 4)
    on_grid = grid.gamma * (np.rint(expected / grid.gamma) + m)
    assert_allclose(fits["iid"], on_grid / sizes[:, None], rtol=1e-9)
    assert fed.privacy_report_["unit"] == "record"
    assert fed.privacy_report_["noise_std"] == pytest.approx(2.0 * C * grid.padding)


def test_federated_warns_without_groups_and_refuses_private_compression(grouped):
    X, y, groups, X_val, y_val = grouped
    fed = DPFederatedValuator(n_rounds=1, n_permutations_per_round=2, epsilon=2.0,
                              random_state=0)
    with pytest.warns(UserWarning, match="no groups: every sample is taken as a"):
        fed.fit(X[:20], y[:20], X_val=X_val, y_val=y_val)
    assert fed.privacy_unit_ == "sample"
    assert sorted(fed.rank_) == list(range(1, 21))
    for compression in (("topk", 1), ("quantize", 4), "sign"):
        with pytest.raises(ValueError, match="privacy_unit='group'"):
            fed.set_params(compression=compression).fit(
                X, y, groups=groups, X_val=X_val, y_val=y_val)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fed.set_params(privacy_unit="group").fit(X, y, groups=groups, X_val=X_val,
                                                     y_val=y_val)
        fed.set_params(privacy_unit="record")
    fed.set_params(compression=("randk", 2)).fit(X, y, groups=groups, X_val=X_val,
                                                 y_val=y_val)
    assert fed.privacy_report_["unit"] == "record"
