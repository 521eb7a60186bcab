"""The joint threat model (issue 34): what each owner's value reads, what refuses.

The walk's joint marginal is checked against a reference written here from
its definition (numpy, the validation rows read exactly: no table), the
label score against margins computed here from a model fitted on the
standardised validation rows; the central path against itself with the
joint flag compiled in or out.
"""

import warnings

import numpy as np
import pytest
from scipy.special import expit, log1p
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.utils._param_validation import InvalidParameterError

from skdpval import (
    DPDataValuator,
    DPFilteredClassifier,
    DPLabelQuality,
    DPValueFilter,
    privacy_spent,
)
from skdpval.kernels import _linear, _losses, _subspace_problem
from skdpval.privacy._release import release_on_grid, release_stream
from skdpval.privacy._threat_model import THREAT_MODEL_DOC
from skdpval.datasets import flip_labels, make_2dplanes


@pytest.fixture(scope="module")
def planes():
    X, y = make_2dplanes(360, random_state=0)
    y_noisy, flipped = flip_labels(y[:300], 0.1, random_state=0)
    return X[:300], y_noisy, flipped, X[300:], y[300:]


def fit(estimator, data, groups=None, **params):
    X, y, _, X_val, y_val = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.set_params(**params).fit(X, y, X_val=X_val, y_val=y_val,
                                                  groups=groups)


# --- the walk ---------------------------------------------------------------

def _softplus(x):
    return np.maximum(x, 0) + log1p(np.exp(-np.abs(x)))


def test_joint_line_walk_equals_its_definition():
    """Each marginal is U(z + own clipped step) - U(z), z the state moved by
    the noisy releases; the states (end utilities) are the central walk's."""
    rng = np.random.default_rng(0)
    n, d, n_walks = 12, 3, 4
    X = np.c_[rng.normal(size=(n, d)), np.ones(n)]
    T = rng.choice([-1.0, 1.0], size=(n, 1))
    X_val = np.c_[rng.normal(size=(20, d)), np.ones(20)]
    T_val = np.sign(X_val[:, :1] + 0.3)
    basis = rng.normal(size=(1, d + 1))
    basis /= np.linalg.norm(basis)
    clip, lr, l2 = 0.4, 0.3, 0.01
    weights = rng.uniform(0.5, 1.5, size=n)
    settings = dict(loss=_losses.LOGISTIC, utility=_losses.NEG_LOSS, loss_param=0.0, l2=l2,
                    n_penalized=d, clip_norm=clip, learning_rate=lr,
                    total_sum_squares=1.0, weights=weights)
    labels_val = (T_val[:, 0] > 0).astype(np.int64)
    problems = {joint: _subspace_problem.make_subspace_problem(
        basis, X, T, np.arange(n + 1), X_val, T_val, labels_val, **settings,
        line_range=(-5.0, 5.0), joint=joint) for joint in (False, True)}
    permutations = np.array([rng.permutation(n) for _ in range(n_walks)])
    noise = rng.normal(scale=0.5, size=(n_walks, n, 1))
    (central, central_end), (joint, joint_end) = (
        problems[j].walk(permutations, release_stream(noise.copy()), None, None)
        for j in (False, True))

    c, c_val = (X @ basis[0]), (X_val @ basis[0])
    penalty = float(np.sum(basis[0, :d] ** 2))

    def utility(z):
        return -np.mean(_softplus(-T_val[:, 0] * c_val * z))

    reference = np.empty((n_walks, n))
    for b in range(n_walks):
        z = 0.0
        for position, j in enumerate(permutations[b]):
            gradient = -T[j, 0] * c[j] * expit(-T[j, 0] * c[j] * z) + l2 * penalty * z
            clipped = gradient / max(1.0, abs(gradient) / clip)
            reference[b, j] = weights[position] * (utility(z - lr * clipped) - utility(z))
            z -= lr * release_on_grid(clipped, noise[b, j, 0], 0.0, np.inf)
        assert joint_end[b] == pytest.approx(utility(z), abs=1e-12)
    np.testing.assert_allclose(joint, reference, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(joint_end, central_end)
    assert not np.allclose(central, reference, atol=1e-6)  # the noise reaches central


@pytest.mark.parametrize("estimator", [
    LogisticRegression(), MLPClassifier((8,), random_state=0)], ids=["LR", "MLP"])
def test_joint_without_noise_is_the_central_walk(planes, estimator):
    """No noise: the own step is the release, so both models value alike,
    bit for bit (one state, one formula)."""
    central = fit(DPDataValuator(estimator, noise="none", n_permutations=20,
                                 random_state=0), planes)
    joint = fit(DPDataValuator(estimator, noise="none", n_permutations=20,
                               random_state=0, threat_model="joint"), planes)
    np.testing.assert_array_equal(joint.values_, central.values_)


def test_joint_record_level_without_noise_is_the_central_walk(planes):
    groups = np.arange(300) // 3
    values = [fit(DPDataValuator(noise="none", n_permutations=10, random_state=0,
                                 threat_model=threat), planes, groups=groups).values_
              for threat in ("central", "joint")]
    np.testing.assert_array_equal(values[0], values[1])


@pytest.mark.filterwarnings("ignore::skdpval.exceptions.NoiseSeedWarning")
def test_joint_walk_finds_flips_where_central_cannot(planes):
    """At epsilon 0.1 the noisy releases drown a central value; the joint
    values read each owner's own step and keep most of the no-noise AUC.
    The noise is seeded: with fresh noise the central AUC has a tail past
    0.65 (0.38-0.59 over 12 seeds, 0.66 once in a suite run)."""
    from skdpval.metrics import noisy_label_auc
    flipped = planes[2]
    aucs = {threat: noisy_label_auc(fit(DPDataValuator(
        epsilon=0.1, delta=1e-4, n_permutations=200, random_state=0,
        noise_seed=0, threat_model=threat), planes).values_, flipped)
        for threat in ("central", "joint")}
    assert aucs["joint"] > 0.75 > aucs["central"] + 0.1, aucs


def test_joint_report(planes):
    valuator = fit(DPDataValuator(epsilon=1.0, n_permutations=10, random_state=0,
                                  threat_model="joint"), planes)
    report = valuator.privacy_report_
    assert report["threat_model"].startswith("joint: a trusted curator")
    joint = report["details"]["joint"]
    assert "walks' states" in joint["billboard"]
    assert joint["billboard_guarantee"] == {
        "mu": report["mu"], "epsilon": report["epsilon"], "delta": report["delta"]}
    assert "trusted" in joint["curator"]
    assert "other owners" in joint["owner_value_private_against"]
    assert valuator.threat_model_ == "joint"
    central = fit(DPDataValuator(epsilon=1.0, n_permutations=10, random_state=0),
                  planes)
    assert central.privacy_report_["threat_model"].startswith("central")
    assert "joint" not in central.privacy_report_["details"]
    # the same report schema, and the same billboard: the joint fit spends
    # what the central one does
    assert report.keys() == central.privacy_report_.keys()
    assert report["mu"] == central.privacy_report_["mu"]
    assert report["parts"] == central.privacy_report_["parts"]


# --- the label score ----------------------------------------------------------

def _own_margins(X, y, X_val, y_val):
    """Margins under a LogisticRegression fitted on the validation rows
    standardised by their own mean and std."""
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    model = LogisticRegression().fit((X_val - mean) / std, y_val)
    return np.where(y == 1, 1.0, -1.0) * model.decision_function((X - mean) / std)


def test_joint_label_score_is_the_own_margin_without_noise(planes):
    """Not clipped: exactly the central score without noise where that is
    within the clip, and the margin itself everywhere."""
    X, y, _, X_val, y_val = planes
    joint = fit(DPLabelQuality(epsilon=0.1, delta=1e-4, threat_model="joint",
                               random_state=0), planes)
    no_noise = fit(DPLabelQuality(epsilon=np.inf, public_model="validation",
                                  random_state=0), planes)
    margins = _own_margins(X, y, X_val, y_val)
    np.testing.assert_allclose(joint.values_, margins, rtol=1e-9, atol=1e-12)
    inside = np.abs(joint.values_) < 1.0
    assert 0 < inside.sum() < len(inside)  # some margins pass the clip
    np.testing.assert_array_equal(joint.values_[inside], no_noise.values_[inside])
    np.testing.assert_array_equal(np.clip(joint.values_, -1, 1), no_noise.values_)
    report = joint.privacy_report_
    # an empty billboard: nothing released, the other owners' values are 0-DP
    assert (joint.epsilon_, report["mu"], joint.n_releases_) == (0.0, 0.0, 0)
    assert report["parts"] == [] and report["private"]
    np.testing.assert_array_equal(joint.values_stderr_, 0.0)  # exact: no noise
    assert report["threat_model"].startswith("joint")
    assert report["details"]["joint"]["billboard"].startswith("empty")
    assert report["details"]["joint"]["billboard_guarantee"]["mu"] == 0.0


def test_joint_label_score_groups(planes):
    X, y, _, X_val, y_val = planes
    groups = np.arange(300) // 4
    joint = fit(DPLabelQuality(epsilon=0.5, threat_model="joint"), planes,
                groups=groups)
    own = _own_margins(X, y, X_val, y_val)
    np.testing.assert_allclose(joint.values_, np.add.reduceat(own, np.arange(0, 300, 4))
                               / 4, rtol=1e-9, atol=1e-12)


def test_joint_label_score_keeps_an_unseen_class_finite(planes):
    """A class the public model never saw scores -inf: kept finite."""
    X, y, flipped, X_val, y_val = planes
    y3 = y.copy()
    y3[:5] = 2
    joint = fit(DPLabelQuality(epsilon=1.0, threat_model="joint", classes=[0, 1, 2]),
                (X, y3, flipped, X_val, y_val))
    assert np.all(np.isfinite(joint.values_))
    assert np.all(joint.values_[:5] < joint.values_[5:].min())


def test_joint_label_score_of_others_ignores_an_owner_row(planes):
    """An empty billboard: changing owner 0's label moves no other value."""
    X, y, flipped, X_val, y_val = planes
    other = y.copy()
    other[0] = 1 - other[0]
    values = [fit(DPLabelQuality(epsilon=1.0, threat_model="joint"),
                  (X, labels, flipped, X_val, y_val)).values_ for labels in (y, other)]
    assert values[0][0] != values[1][0]
    np.testing.assert_array_equal(values[0][1:], values[1][1:])


# --- who sees what ---------------------------------------------------------------

def test_owner_value(planes):
    valuator = fit(DPLabelQuality(epsilon=1.0, threat_model="joint"), planes)
    assert valuator.owner_value(7) == valuator.values_[7]
    with pytest.raises(IndexError, match="owner must be an integer index in"):
        valuator.owner_value(300)
    with pytest.raises(IndexError, match="owner must be an integer index in"):
        valuator.owner_value(1.5)
    X, y, *_ = planes
    held_out = DPLabelQuality(epsilon=1.0, threat_model="joint", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        held_out.fit(X, y)
    with pytest.raises(ValueError, match="held out as the validation set"):
        held_out.owner_value(int(np.flatnonzero(np.isnan(held_out.values_))[0]))


def test_aggregates_refuse_in_joint_mode(planes):
    valuator = fit(DPLabelQuality(epsilon=1.0, threat_model="joint"), planes)
    with pytest.raises(AttributeError, match="rank_ is a central release"):
        valuator.rank_
    assert not hasattr(valuator, "rank_")
    with pytest.raises(ValueError, match="privacy_spent"):
        privacy_spent(valuator)
    with pytest.raises(ValueError, match="to_frame is a central release"):
        valuator.to_frame()
    with pytest.raises(ValueError, match="to_pydvl is a central release"):
        valuator.to_pydvl()
    pytest.importorskip("matplotlib")
    from skdpval.plotting import plot_values
    with pytest.raises(ValueError, match="plot_values is a central release"):
        plot_values(valuator)
    central = fit(DPLabelQuality(epsilon=1.0), planes)
    assert central.rank_.shape == (300,)


@pytest.mark.parametrize("make", [
    lambda v: DPValueFilter(v), lambda v: DPFilteredClassifier(v)])
def test_filters_refuse_a_joint_valuator_before_fitting(planes, make, monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("fitted")

    monkeypatch.setattr(DPLabelQuality, "fit", no_fit)
    X, y, _, X_val, y_val = planes
    filter_ = make(DPLabelQuality(epsilon=1.0, threat_model="joint"))
    with pytest.raises(ValueError, match="threat_model='joint'"):
        if hasattr(filter_, "fit_resample"):
            filter_.fit_resample(X, y, X_val=X_val, y_val=y_val)
        else:
            filter_.fit(X, y, X_val=X_val, y_val=y_val)


def test_privacy_spent_refuses_a_nested_joint_valuator(planes):
    X, y, _, X_val, y_val = planes
    model = DPFilteredClassifier(DPLabelQuality(epsilon=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, X_val=X_val, y_val=y_val)
    model.set_params(valuator__threat_model="joint")
    with pytest.raises(ValueError, match="valuator__threat_model='joint'"):
        privacy_spent(model)


# --- bad input ---------------------------------------------------------------

@pytest.mark.parametrize("Valuator", [DPDataValuator, DPLabelQuality])
def test_misspelt_threat_model(Valuator, planes):
    with pytest.raises(InvalidParameterError, match="threat_model"):
        fit(Valuator(threat_model="jiont"), planes)


@pytest.mark.parametrize("params, match", [
    (dict(subspace=None), "subspace='public'"),
    (dict(subspace=np.eye(11)[:2]), "subspace='public'"),
    (dict(utility="accuracy"), "utility='accuracy'"),
])
def test_joint_refuses_other_walks_before_any_work(params, match):
    """Refused before the data are read: NaN features would be an error too."""
    X = np.full((10, 10), np.nan)
    with pytest.raises(ValueError, match=match):
        DPDataValuator(threat_model="joint", **params).fit(X, np.arange(10) % 2)


def test_joint_refuses_a_walk_without_a_line(planes):
    """One-vs-rest outputs have no tabulated line: refused before the walk."""
    from sklearn.linear_model import SGDClassifier
    X, y, _, X_val, y_val = planes
    y3, y_val3 = y + (X[:, 1] > 0), y_val + (X_val[:, 1] > 0)
    with pytest.raises(ValueError, match="tabulated public line"):
        fit(DPDataValuator(SGDClassifier(), threat_model="joint", n_permutations=5),
            (X, y3, None, X_val, y_val3))


def test_threat_model_documented_once():
    from skdpval import DPFederatedValuator
    for Valuator in (DPDataValuator, DPLabelQuality, DPFederatedValuator):
        assert "%(threat_model)s" not in Valuator.__doc__
        flat = " ".join(Valuator.__doc__.split())
        assert " ".join(THREAT_MODEL_DOC.split()) in flat


# --- federated clients ------------------------------------------------------

def _clients(planes):
    X, y, flipped, X_val, y_val = planes
    return X, y, X_val, y_val, np.arange(len(y)) // 30


@pytest.mark.parametrize("params", [dict(), dict(privacy_unit="group")])
def test_federated_joint_without_noise_is_central(planes, params):
    from skdpval import DPFederatedValuator
    X, y, X_val, y_val, groups = _clients(planes)
    values = [DPFederatedValuator(n_rounds=5, n_permutations_per_round=6,
                                  random_state=0, threat_model=threat,
                                  noise="none", **params).fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups).values_
        for threat in ("central", "joint")]
    np.testing.assert_array_equal(values[0], values[1])


def test_federated_joint_round_equals_its_definition():
    """A round's joint Shapley value over all permutations of 3 clients,
    against the sum over permutations written out."""
    import itertools
    from skdpval import DPFederatedValuator
    from skdpval.families import View
    from skdpval.families.linear import FullSpace
    from skdpval.valuation._federated import _FederatedGame
    rng = np.random.default_rng(1)
    X_val = np.c_[rng.normal(size=(10, 2)), np.ones(10)]
    T_val = np.sign(X_val[:, :1])
    labels_val = (T_val[:, 0] > 0).astype(np.int64)
    args = dict(loss=_losses.LOGISTIC, utility=_losses.NEG_LOSS, loss_param=0.0,
                total_sum_squares=1.0)
    theta = rng.normal(size=(1, 3))
    released, own = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    valuator = DPFederatedValuator(n_permutations_per_round="all", learning_rate=0.3)
    # The round reads the validation set of the game's view, in its full space.
    view = View(*[None] * len(View._fields))._replace(X_val=X_val, T_val=T_val,
                                                      labels_val=labels_val)
    game = _FederatedGame(view, FullSpace(), theta.shape, args)
    values = valuator._round_shapley(theta, released, game, None, own)

    def utility(step):
        return _linear.utility_of_theta(theta - 0.3 * step.reshape(1, 3), X_val, T_val,
                                  labels_val, **args)

    reference = np.zeros(3)
    for order in itertools.permutations(range(3)):
        for position, client in enumerate(order):
            before = released[list(order[:position])]
            base = utility(before.mean(axis=0)) if position else utility(np.zeros(3))
            reference[client] += utility(
                (before.sum(axis=0) + own[client]) / (position + 1)) - base
    np.testing.assert_allclose(values, reference / 6, rtol=0, atol=1e-12)


def test_federated_joint_report(planes):
    from skdpval import DPFederatedValuator
    X, y, X_val, y_val, groups = _clients(planes)
    valuator = DPFederatedValuator(n_rounds=3, n_permutations_per_round=4,
                                   epsilon=1.0, random_state=0,
                                   threat_model="joint").fit(
        X, y, X_val=X_val, y_val=y_val, groups=groups)
    report = valuator.privacy_report_
    assert report["threat_model"].startswith("joint")
    assert "global model" in report["details"]["joint"]["billboard"]
    assert valuator.owner_value(2) == valuator.values_[2]
    assert not hasattr(valuator, "rank_")


# --- a privately fitted public model ------------------------------------------

def test_joint_label_score_with_a_private_public_model(planes):
    """The private fit is the whole billboard (all of mu^2); each owner's
    value is its own margin under that model, without noise or clip."""
    X, y, *_ = planes
    joint = fit(DPLabelQuality(epsilon=1.0, threat_model="joint",
                               public_model="private", random_state=0), planes)
    report = joint.privacy_report_
    assert [part["name"] for part in report["parts"]] == ["public model fit"]
    assert report["parts"][0]["share"] == 1.0
    assert "fitted privately" in report["details"]["joint"]["billboard"]
    central = fit(DPLabelQuality(epsilon=1.0, public_model="private",
                                 random_state=0), planes)
    assert report["mu"] == pytest.approx(central.privacy_report_["mu"])
    model = joint.public_model_
    margins = np.where(y == 1, 1.0, -1.0) * model.decision_function(
        (X - planes[3].mean(axis=0)) / planes[3].std(axis=0))
    np.testing.assert_allclose(joint.values_, margins * joint.margin_scale_,
                               rtol=1e-9, atol=1e-12)


def test_joint_walk_with_a_private_public_model(planes):
    valuator = fit(DPDataValuator(epsilon=1.0, n_permutations=10, random_state=0,
                                  threat_model="joint", public_model="private"),
                   planes)
    report = valuator.privacy_report_
    assert [part["name"] for part in report["parts"]] == ["public model fit", "walk"]
    assert "private fit" in report["details"]["joint"]["billboard"]


def test_joint_on_dask_input_equals_the_numpy_path(planes):
    """The rows' own work (the projection, the scores) runs on the blocks,
    the joint marginals and unclipped scores alike."""
    da = pytest.importorskip("dask.array")
    X, y, _, X_val, y_val = planes
    for valuator in (DPDataValuator(n_permutations=10, noise_seed=1),
                     DPLabelQuality(noise_seed=1)):
        valuator.set_params(threat_model="joint", epsilon=1.0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            in_memory = valuator.fit(X, y, X_val=X_val, y_val=y_val).values_
            blocks = valuator.fit(da.from_array(X, chunks=70),
                                  da.from_array(y, chunks=70),
                                  X_val=X_val, y_val=y_val).values_
        np.testing.assert_array_equal(blocks, in_memory)
