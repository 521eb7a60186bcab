"""Quality benchmark: how close private values come to the privacy limit.

Flipping a label is a replace-one change, so at a per-party budget of
mu-GDP no mechanism finds independently flipped labels with an expected ROC
AUC above ``Phi(sqrt(2) mu)`` (``skdpval.metrics.detection_auc_limit``). The limit
fraction of a method is ``(AUC - 0.5) / (limit - 0.5)``: 0 is chance, 1 the
best any mechanism can do at that budget.

Protocol (``--suite limit``, the default): breast_cancer, diabetes (target
binarised at its median), digits 3 vs 8 and make_classification(600, 20,
5 informative); a stratified split of 75% training and 25% validation (the
public utility, clean labels); each training label flipped independently
with probability 0.3; delta = 5e-5; logistic regression; raw features (the
estimators standardise with validation statistics). Per seed, a new split
and new flips. Methods:

- ``no DP``: DPDataValuator(noise="none"), the reference;
- ``defaults``: DPDataValuator() (public subspace, clip_norm="auto",
  correlated noise, q="auto" = 0.9, k = 1000);
- ``paper``: the seed paper's mechanism, Algorithm 1 with Y*(q=0.9): the
  full gradient clipped to C = 1 (subspace=None, clip_norm=1.0), exact
  accounting, learning_rate="auto";
- ``iid q=0``: the defaults with i.i.d. releases (q="auto" = 0);
- ``label quality``: DPLabelQuality() (one release per party);
- ``label quality no DP``: DPLabelQuality(epsilon=np.inf).

One JSON object per (data set, method, epsilon) on stdout, then one
``summary`` object per (method, epsilon) with the mean over the data sets,
then ``unscaled``: raw breast_cancer features (up to ~4000), no noise,
defaults (the valuator standardises with validation statistics) against
``standardize=False``:

    python benchmarks/quality.py --seeds 20 > benchmarks/results/quality.jsonl

``--suite swing`` measures why: at the initial model, how far flipping a
label moves what the utility reads of a release, as a fraction of the
``2 C`` a replace-one change may move it. The full gradient clipped to
``C = 1`` is read along the unit validation-gradient direction ``u`` (the
noise, isotropic, is read there too); in the public direction ``b`` the
release, its noise and the utility's reading all lie along ``b``, so the
swing of the projected release itself counts (``alignment`` is ``b . u``,
which scales signal and noise alike).

``--suite semivalues``: the limit protocol at epsilon 3 for Banzhaf and
Beta(16, 1) in the default (projected) walk, correlated noise (q = 0.9)
against i.i.d. releases (q = 0): whether the default noise policy holds
beyond Shapley.

``--suite regression``: corrupted regression targets (diabetes and
make_regression(600, 20, n_informative=5, noise=10)), 30% of training
targets replaced independently by uniform draws over the target's range
(``skdpval.datasets.load_noisy_regression``), Ridge, 25% validation; the AUC
of low values for the corrupted targets and its fraction of the limit at
each epsilon, for the defaults, DPLabelQuality and both without noise (the
no-noise ceiling). Then why the walk stops short of the label score
(``REGRESSION_LIMITS``): the walk's first-order statistic at the zero model,
``clip((x . b) t)``, released once under the same budget (what its values
read); the residual's size read from a signed release as a squared norm (what
a second-order term could read); the walk in the plane of ``b`` and the
intercept axis, with the defaults and, without noise, with a large step (a
regime where its values read second-order terms). Last, ``regression_sign``: without noise, the AUC for the corrupted
targets whose first-order statistic turned negative and for those where it
kept its sign, each against the clean targets:

    python benchmarks/quality.py --suite regression --seeds 10 \
        > benchmarks/results/quality_regression.jsonl
``--suite fidelity``: how well private values track the no-noise values of
the same game (same permutations: ``random_state``), by
:func:`skdpval.metrics.value_fidelity` (Spearman, top- and bottom-decile
overlap), defaults otherwise (public subspace, k = 1000 for points, 500 for
groups), epsilon 1 / 3 / 10, delta 5e-5:

- ``points``: breast_cancer, 300 training samples (``--datasets`` picks
  others), labels clean or 30% flipped; also two no-noise runs with
  different permutations (``no DP, other permutations``): the Monte Carlo
  ceiling;
- ``groups``: make_classification(3600, 20, 5 informative), 3000 training
  rows in 100 groups of 30 (validation: the other 600, clean), each group
  flipping its labels independently at its own rate drawn from [0, 0.5];
  ``privacy_unit="group"`` and ``"record"``, each against its own no-noise
  game (``ground_truth_spearman``: the no-noise values against minus the
  flip rates);
- ``federated``: DPFederatedValuator with its defaults, 10 clients of a
  random split of make_classification(2000, 20, 5 informative) (25%
  validation), one client's labels all flipped: how often it ranks last,
  without noise, at record level and at group level (epsilon 3).

Each case records the machine's load average::

    python benchmarks/quality.py --suite fidelity --seeds 10 \
        > benchmarks/results/quality_fidelity.jsonl

``--suite mlp`` (issue 24): the limit protocol on breast_cancer and digits
3 vs 8 with ``MLPClassifier((32,))`` (relu, its defaults): no DP, the
defaults at each epsilon, the seed paper's mechanism on the same network
(every parameter clipped to C = 1 and noised; correlated with q = 0.9, and
i.i.d. with q = 0) at epsilon 3 only (each fit releases ~2,000 numbers a
step); then digits with 10 classes (n = 1000 training rows, the rest
validation) with the defaults at each epsilon:

    python benchmarks/quality.py --suite mlp --seeds 10 \
        --methods "no DP" defaults > benchmarks/results/quality_mlp.jsonl
    python benchmarks/quality.py --suite mlp --seeds 5 --datasets \
        breast_cancer digits_3_vs_8 --methods "paper correlated" "paper iid" \
        >> benchmarks/results/quality_mlp.jsonl

``--suite regime`` (issue 33): many noisy training rows, few clean
validation rows. The sets of ``benchmarks/regime_data.py``
(make_classification(50000, 20, n_informative=8, flip_y=0) at class_sep
0.8 and 1.2; diamonds, cps1988, rwm5yr, gss7402), ``n_val`` 50 and 200
clean validation rows drawn from a held-out part, 30% of training labels
flipped independently, epsilon 1 and 3, delta = 5e-5 passed explicitly,
LogisticRegression. Per (data set, n_val, epsilon, seed), the AUC of low
values for the flipped rows, its limit fraction and the fit time of:
DPLabelQuality with public_model "validation" / "private" / "auto" (the
default), DPDataValuator() (defaults: "auto") and DPDataValuator(
public_model="validation"); and the non-private reference ceiling
(``reference oof``): LogisticRegression fitted out-of-fold (2 folds) on the
noisy training rows (standardised with the validation statistics), each
row's margin scaled as DPLabelQuality scales a private model's (3 clips at
the validation rows' median), clipped to [-1, 1] and released with the
whole budget (Gaussian noise of std 1 / mu); its ``sign_diagnostic`` is 2
acc - 1, acc the out-of-fold model's accuracy on the clean training labels
(the LF of a released sign). ``public_model_accuracy`` is the clean
training accuracy of DPLabelQuality's public model. ``summary`` lines give
the mean over the data sets of each method's mean LF over the seeds::

    python benchmarks/quality.py --suite regime --seeds 5 \
        > benchmarks/results/quality_regime.jsonl

Runs split by method or seed (``--methods``, ``--first-seed``) are
concatenated and summarised with ``--suite regime_summary < lines``.
``--paired`` fixes every fit's noise streams (``noise_seed = 1000 + seed``,
benchmark only, not private), to compare two versions of the code on the
same noise (``benchmarks/results/quality_regime_fit.jsonl``: the private
fit of 100 plain steps against 20 preconditioned ones).

``--suite regime_small``: "auto" against "validation" where the validation
model is right (breast_cancer, digits 1 vs 7 and 3 vs 8, wine; 25%
validation, <= 1,000 training rows, 30% flips), DPLabelQuality and
DPDataValuator, paired on the same splits and noise streams (``noise_seed``,
benchmark only), 10 seeds; ``regime_time``:
the private fit's DPLabelQuality against today's at n = 50,000; and
``regime_rule``: the data behind ``public_model="auto"`` (the regime sets'
training rows subsampled to 250-20,000, n_val 50, DPLabelQuality "private"
minus "validation", paired, against the fit's noise index).

``--suite table2`` runs the seed paper's Table 2 protocol instead (its
mechanism only: the full-space walk with C = 1, the i.i.d. / X* / Y*
policies and four semivalues; results in
benchmarks/results/quality_table2.jsonl; ``--methods`` picks policies). Its
epsilon-10, k = 1000 rows were rerun once the sampler no longer refused
them (issue 45)::

    python benchmarks/quality.py --suite table2 --epsilons 10 --ks 1000 \
        --methods "i.i.d." "X*" "Y*(q=0.5)" "Y*(q=0.9)" \
        > benchmarks/results/quality_table2_eps10.jsonl

``--suite seed_paper``: the seed paper's noisy-label experiment (its Table 2
at epsilon 1, App. D.5 at 0.1 and 10: 30% of the training labels flipped,
k = 1000, Shapley, the paper's mechanism) at epsilon 0.1 / 1 / 10 on the
bundled breast_cancer, diabetes and digits 3 vs 8 (for MNIST)::

    python benchmarks/quality.py --suite seed_paper --epsilons 0.1 1 10 \
        --policies paper --trials 3 > benchmarks/results/quality_seed_paper.jsonl
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression, Ridge

from skdpval import DPDataValuator, DPFederatedValuator, DPLabelQuality
from skdpval.privacy._accounting import gdp_mu
from skdpval.valuation._walk_settings import AUTO_LEARNING_RATES
from skdpval.datasets import load_noisy_classification, load_noisy_regression
from skdpval.metrics import detection_auc_limit, noisy_label_auc, value_fidelity

DELTA = 5e-5
LIMIT_DATASETS = ("breast_cancer", "diabetes", "digits_3_vs_8", "classification")
LIMIT_METHODS = {
    "no DP": lambda eps, seed: DPDataValuator(noise="none", random_state=seed),
    "defaults": lambda eps, seed: DPDataValuator(epsilon=eps, random_state=seed),
    "paper": lambda eps, seed: DPDataValuator(
        epsilon=eps, subspace=None, clip_norm=1.0, q=0.9, random_state=seed),
    "iid q=0": lambda eps, seed: DPDataValuator(epsilon=eps, noise="iid",
                                                random_state=seed),
    "label quality": lambda eps, seed: DPLabelQuality(epsilon=eps,
                                                      random_state=seed),
    "label quality no DP": lambda eps, seed: DPLabelQuality(epsilon=np.inf,
                                                            random_state=seed),
}


def emit(**case):
    print(json.dumps(case), flush=True)


def limit_data(name, seeds, **options):
    """The limit protocol's splits of one data set, one per seed."""
    return [load_noisy_classification(name, flip_fraction=0.3, independent_flips=True,
                                      validation_size=0.25, test_size=0.0,
                                      random_state=seed, **options)
            for seed in range(seeds)]


def detection_cases(suite, name, data, methods, epsilons, n_jobs):
    """One case per (method, epsilon): the AUC of low values for the noisy
    rows over the seeds' data sets, and its fraction of the limit."""
    for method, make in methods.items():
        for epsilon in ([None] if method.endswith("no DP") else epsilons):
            aucs = []
            started = time.perf_counter()
            try:
                for seed, d in enumerate(data):
                    estimator = make(epsilon, seed)
                    if isinstance(estimator, DPDataValuator):
                        estimator.set_params(n_jobs=n_jobs)
                    estimator.fit(d.X_train, d.y_train, X_val=d.X_val,
                                  y_val=d.y_val)
                    aucs.append(noisy_label_auc(estimator.values_, d.is_noisy))
            except ValueError as error:  # past the noise sampler's reach
                if "out of reach of the noise sampler" not in str(error):
                    raise
                yield dict(case=suite, dataset=name, method=method, epsilon=epsilon,
                           delta=DELTA, refused=str(error).split(":")[0])
                continue
            case = dict(case=suite, dataset=name, n=len(d.y_train),
                        n_val=len(d.y_val), method=method, epsilon=epsilon,
                        delta=DELTA, auc_mean=round(float(np.mean(aucs)), 4),
                        auc_std=round(float(np.std(aucs)), 4), seeds=len(data),
                        seconds_per_fit=round((time.perf_counter() - started)
                                              / len(data), 3))
            if epsilon is not None:
                limit = detection_auc_limit(epsilon, DELTA)
                case.update(limit=round(limit, 4), limit_fraction=round(
                    float((np.mean(aucs) - 0.5) / (limit - 0.5)), 4))
            yield case


def run_limit(datasets, methods, epsilons, seeds, n_jobs):
    limit_fractions = {}
    for name in datasets:
        for case in detection_cases("limit", name, limit_data(name, seeds),
                                    {m: LIMIT_METHODS[m] for m in methods},
                                    epsilons, n_jobs):
            if case["epsilon"] is not None and "refused" not in case:
                limit_fractions.setdefault((case["method"], case["epsilon"]),
                                           []).append(case["limit_fraction"])
            emit(**case)
    for (method, epsilon), fractions in limit_fractions.items():
        emit(case="summary", method=method, epsilon=epsilon,
             datasets=len(fractions),
             limit=round(detection_auc_limit(epsilon, DELTA), 4),
             mean_limit_fraction=round(float(np.mean(fractions)), 4))


REGRESSION_METHODS = {
    "no DP": lambda eps, seed: DPDataValuator(Ridge(), noise="none", random_state=seed),
    "defaults": lambda eps, seed: DPDataValuator(Ridge(), epsilon=eps,
                                                 random_state=seed),
    "label quality": lambda eps, seed: DPLabelQuality(Ridge(), epsilon=eps,
                                                      random_state=seed),
    "label quality no DP": lambda eps, seed: DPLabelQuality(Ridge(), epsilon=np.inf,
                                                            random_state=seed),
}


def _walk_layout(X, y, X_val, y_val, seed):
    """The default walk's public direction and clip norm, and its layout:
    features and targets standardised with the validation statistics, an
    intercept column last."""
    walk = DPDataValuator(Ridge(), noise="none", n_permutations=2,
                          random_state=seed).fit(X, y, X_val=X_val, y_val=y_val)
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    ones = lambda A: np.hstack([(A - mean) / std, np.ones((len(A), 1))])
    scale = lambda T: (T - y_val.mean()) / y_val.std()
    return walk.subspace_[0], walk.clip_norm_, ones(X), scale(y), ones(X_val), scale(y_val)


def _plane(b):
    """``b`` and the intercept axis, orthonormalised: ``(2, len(b))``."""
    axis = np.eye(len(b))[-1] - b[-1] * b
    return np.vstack([b, axis / np.linalg.norm(axis)])


class _RegressionYardstick:
    """What a release of one party's statistic finds, the walk's ingredients aside.

    In the walk's own standardised layout (features and targets scaled with
    the validation statistics, intercept column last) and along its public
    direction ``b`` (``DPDataValuator(Ridge()).subspace_``, fitted on the
    validation set only), one Gaussian release per party of sensitivity
    ``C`` with noise std ``C / mu(epsilon, delta)``: what the mean of the
    walk's ``k`` releases carries under the same budget (numpy noise: a
    yardstick, not a mechanism of the library). ``statistic``:

    - ``"first-order"``: the walk's first-order reading, its projected
      gradient at the zero model, ``clip_C((x . b) t)``, ``C`` the walk's
      ``clip_norm_``; high is good;
    - ``"magnitude"``: the gradient's size read from a signed release, as a
      second-order (curvature) term of the walk would read it: at the public
      optimum, the gradient projected on ``b`` and the intercept axis
      (orthonormalised), clipped to the 90th percentile of the validation
      rows' norms (of 50 and 90 the better), noised in both coordinates,
      then minus its squared norm.
    """

    def __init__(self, statistic, epsilon, seed):
        self.statistic, self.epsilon, self.seed = statistic, epsilon, seed

    def fit(self, X, y, X_val, y_val):
        b, clip, X, t, X_val, t_val = _walk_layout(X, y, X_val, y_val, self.seed)
        if self.statistic == "first-order":
            release = (X @ b * t)[:, None]
        else:
            basis = _plane(b)
            optimum = Ridge().fit(X_val[:, :-1], t_val)
            z = basis @ np.append(optimum.coef_, optimum.intercept_)
            residual = lambda A, T: (T - A @ basis.T @ z)[:, None] * (A @ basis.T)
            clip = float(np.percentile(np.linalg.norm(residual(X_val, t_val), axis=1), 90))
            release = residual(X, t)
        release = release / np.maximum(1.0, np.linalg.norm(release, axis=1,
                                                           keepdims=True) / clip)
        if self.epsilon is not None:
            rng = np.random.default_rng(self.seed)
            release = release + clip / gdp_mu(self.epsilon, DELTA) * rng.standard_normal(
                release.shape)
        self.values_ = (release[:, 0] if self.statistic == "first-order"
                        else -np.sum(release**2, axis=1))
        return self


class _TwoDirectionWalk:
    """DPDataValuator(Ridge()) in the plane of the public direction and the
    intercept axis (orthonormalised), otherwise the defaults; with
    ``large_step``, the clip norm is the median validation gradient norm at
    the zero model and the learning rate 0.2154 (the no-noise "auto"
    choice): a regime where the walk's values read second-order terms (with
    noise such a step diverges, which the noise cap of "auto" prevents)."""

    def __init__(self, epsilon, seed, large_step=False):
        self.epsilon, self.seed, self.large_step = epsilon, seed, large_step

    def fit(self, X, y, X_val, y_val):
        b, _, _, _, scaled, t_val = _walk_layout(X, y, X_val, y_val, self.seed)
        basis = _plane(b)
        clip = float(np.median(np.linalg.norm(
            (scaled @ basis.T) * t_val[:, None], axis=1)))
        step = dict(clip_norm=clip, learning_rate=0.2154) if self.large_step else {}
        privacy = dict(noise="none") if self.epsilon is None else dict(epsilon=self.epsilon)
        self.values_ = DPDataValuator(
            Ridge(), subspace=basis, random_state=self.seed, **step, **privacy).fit(
            X, y, X_val=X_val, y_val=y_val).values_
        return self


# Why the walk's values stop short of the label score on corrupted targets.
REGRESSION_LIMITS = {
    "first-order score": lambda eps, seed: _RegressionYardstick("first-order", eps, seed),
    "first-order score no DP": lambda eps, seed: _RegressionYardstick(
        "first-order", None, seed),
    "magnitude score": lambda eps, seed: _RegressionYardstick("magnitude", eps, seed),
    "magnitude score no DP": lambda eps, seed: _RegressionYardstick(
        "magnitude", None, seed),
    "2-D walk": lambda eps, seed: _TwoDirectionWalk(eps, seed),
    "2-D walk no DP": lambda eps, seed: _TwoDirectionWalk(None, seed),
    "2-D walk, large step no DP": lambda eps, seed: _TwoDirectionWalk(
        None, seed, large_step=True),
}


def regression_sign_split(name, data):
    """No-noise AUCs on two halves of the corrupted targets: those whose
    first-order statistic ``(x . b) t`` turned negative (the sign along the
    public direction flipped) and those where it stayed positive, each
    against the clean targets; the defaults' walk and the label score."""
    aucs = {}
    for seed, d in enumerate(data):
        walk = REGRESSION_METHODS["no DP"](None, seed).fit(
            d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val)
        scores = REGRESSION_METHODS["label quality no DP"](None, seed).fit(
            d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val)
        b, _, X, t, _, _ = _walk_layout(d.X_train, d.y_train, d.X_val, d.y_val, seed)
        first_order = X @ b * t
        for half, corrupted in (("sign flipped", d.is_noisy & (first_order < 0)),
                                ("sign kept", d.is_noisy & (first_order >= 0))):
            rows = corrupted | ~d.is_noisy
            for method, values in (("no DP", walk.values_),
                                   ("label quality no DP", scores.values_)):
                aucs.setdefault((half, method), []).append(
                    noisy_label_auc(values[rows], corrupted[rows]))
            aucs.setdefault((half, "share"), []).append(
                corrupted.sum() / d.is_noisy.sum())
    for half in ("sign flipped", "sign kept"):
        emit(case="regression_sign", dataset=name, corrupted=half,
             share_of_corrupted=round(float(np.mean(aucs[half, "share"])), 4),
             **{f"auc_{method.replace(' ', '_')}": round(float(np.mean(
                 aucs[half, method])), 4) for method in ("no DP", "label quality no DP")},
             seeds=len(data))


def _mlp():
    from sklearn.neural_network import MLPClassifier
    return MLPClassifier((32,))


MLP_METHODS = {
    "no DP": lambda eps, seed: DPDataValuator(_mlp(), noise="none", random_state=seed),
    "defaults": lambda eps, seed: DPDataValuator(_mlp(), epsilon=eps,
                                                 random_state=seed),
    "paper correlated": lambda eps, seed: DPDataValuator(
        _mlp(), epsilon=eps, subspace=None, clip_norm=1.0, q=0.9, random_state=seed),
    "paper iid": lambda eps, seed: DPDataValuator(
        _mlp(), epsilon=eps, subspace=None, clip_norm=1.0, noise="iid", q=0.0,
        random_state=seed),
}


def digits10_data(seed, n_train=1000):
    """All ten digits: n_train training rows (30% of labels flipped to another
    class, independently), the rest validation; scaled by the validation set."""
    from sklearn.datasets import load_digits
    from skdpval.datasets import flip_labels
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    train, val = order[:n_train], order[n_train:]
    noisy_y, is_noisy = flip_labels(y[train], 0.3, random_state=seed,
                                    independent=True)
    mean, std = X[val].mean(axis=0), X[val].std(axis=0)
    std[std == 0] = 1.0
    from sklearn.utils import Bunch
    return Bunch(X_train=(X[train] - mean) / std, y_train=noisy_y,
                 X_val=(X[val] - mean) / std, y_val=y[val], is_noisy=is_noisy)


MLP_DATASETS = ("breast_cancer", "digits_3_vs_8", "digits_10_classes")


def run_mlp(datasets, methods, epsilons, seeds, n_jobs):
    for name in datasets:
        if name == "digits_10_classes":
            data = [digits10_data(seed) for seed in range(seeds)]
            methods_here = [m for m in methods if m == "defaults"]
        else:
            data, methods_here = limit_data(name, seeds), methods
        for method in methods_here:
            eps = [3.0] if method.startswith("paper") else epsilons
            yield from detection_cases("mlp", name, data,
                                       {method: MLP_METHODS[method]}, eps, n_jobs)


def run_regression(epsilons, seeds, n_jobs):
    for name in ("diabetes", "regression"):
        data = [load_noisy_regression(name, random_state=seed) for seed in range(seeds)]
        for case in detection_cases("regression", name, data,
                                    {**REGRESSION_METHODS, **REGRESSION_LIMITS},
                                    epsilons, n_jobs):
            emit(**case, load=round(os.getloadavg()[0], 2))
        regression_sign_split(name, data)


def run_swing(datasets, seeds):
    from scipy.special import expit

    for name in datasets:
        full, projected, alignment = [], [], []
        for seed in range(seeds):
            d = load_noisy_classification(name, flip_fraction=0.0,
                                          validation_size=0.25, test_size=0.0,
                                          random_state=seed)
            valuator = DPDataValuator(noise="none", n_permutations=1,
                                      random_state=seed).fit(
                d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val)
            ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
            X, X_val = ones(d.X_train), ones(d.X_val)  # already validation-scaled
            sign = lambda y: np.where(y == 1, 1.0, -1.0)
            # Logistic loss at theta = 0: grad = -t sigmoid(0) x = -t x / 2.
            utility_gradient = np.mean(sign(d.y_val)[:, None] * X_val / 2, axis=0)
            u = utility_gradient / np.linalg.norm(utility_gradient)
            g = -sign(d.y_train)[:, None] * X * expit(0.0)  # flipped: -g

            def clip(v, c):
                norms = np.linalg.norm(v, axis=-1, keepdims=True)
                return v / np.maximum(1.0, norms / c)

            full.append(np.mean(np.abs((clip(g, 1.0) - clip(-g, 1.0)) @ u) / 2.0))
            b, c = valuator.subspace_[0], valuator.clip_norm_
            release = clip((g @ b)[:, None], c)[:, 0]
            projected.append(np.mean(np.abs(2 * release) / (2 * c)))
            alignment.append(abs(b @ u))
        emit(case="swing", dataset=name, seeds=seeds,
             full_gradient_clipped=round(float(np.mean(full)), 4),
             projected_then_clipped=round(float(np.mean(projected)), 4),
             alignment=round(float(np.mean(alignment)), 4))


def run_semivalues(datasets, seeds, n_jobs):
    limit = detection_auc_limit(3.0, DELTA)
    for name in datasets:
        data = limit_data(name, seeds)
        for semivalue in ("banzhaf", ("beta", 16, 1)):
            for noise in ("correlated", "iid"):
                aucs = [noisy_label_auc(DPDataValuator(
                    epsilon=3.0, semivalue=semivalue, noise=noise, n_jobs=n_jobs,
                    random_state=seed).fit(d.X_train, d.y_train, X_val=d.X_val,
                                           y_val=d.y_val).values_, d.is_noisy)
                        for seed, d in enumerate(data)]
                emit(case="semivalues", dataset=name, epsilon=3.0,
                     semivalue=str(semivalue), noise=noise,
                     auc_mean=round(float(np.mean(aucs)), 4),
                     limit_fraction=round(float((np.mean(aucs) - 0.5)
                                                / (limit - 0.5)), 4),
                     seeds=seeds)


def run_unscaled(seeds):
    for standardize in (True, False):
        aucs = []
        for seed, d in enumerate(limit_data("breast_cancer", seeds, scale=False)):
            valuator = DPDataValuator(noise="none", standardize=standardize,
                                      random_state=seed)
            valuator.fit(d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val)
            aucs.append(noisy_label_auc(valuator.values_, d.is_noisy))
        emit(case="unscaled", dataset="breast_cancer", method="no DP",
             standardize=standardize, auc_mean=round(float(np.mean(aucs)), 4),
             auc_std=round(float(np.std(aucs)), 4), seeds=seeds)


# --- fidelity: private values against the no-noise values of the same game -----

def _fidelity_case(fidelities, **case):
    """One JSON object: mean, min and max of each fidelity measure over seeds."""
    for measure in ("spearman", "top_decile_overlap", "bottom_decile_overlap"):
        scores = [getattr(f, measure) for f in fidelities]
        case[f"{measure}_mean"] = round(float(np.mean(scores)), 4)
        if measure == "spearman":
            case.update(spearman_min=round(float(np.min(scores)), 4),
                        spearman_max=round(float(np.max(scores)), 4))
    case.update(seeds=len(fidelities), load_average=round(os.getloadavg()[0], 2))
    emit(**case)


def run_fidelity_points(datasets, epsilons, seeds, n_jobs):
    for name in datasets:
        for flip_fraction in (0.0, 0.3):
            data = [load_noisy_classification(
                name, n_train=300, flip_fraction=flip_fraction, independent_flips=True,
                validation_size=0.25, test_size=0.0, random_state=seed)
                for seed in range(seeds)]
            fit = lambda d, **params: DPDataValuator(n_jobs=n_jobs, **params).fit(
                d.X_train, d.y_train, X_val=d.X_val, y_val=d.y_val).values_
            started = time.perf_counter()
            references = [fit(d, noise="none", random_state=seed)
                          for seed, d in enumerate(data)]
            other = [value_fidelity(fit(d, noise="none", random_state=seed + 1000),
                                    references[seed]) for seed, d in enumerate(data)]
            common = dict(case="fidelity points", dataset=name,
                          n=len(data[0].y_train), flip_fraction=flip_fraction,
                          k=1000, delta=DELTA)
            _fidelity_case(other, method="no DP, other permutations", epsilon=None,
                           seconds_per_fit=round((time.perf_counter() - started)
                                                 / (2 * seeds), 2), **common)
            for epsilon in epsilons:
                started = time.perf_counter()
                private = [value_fidelity(fit(d, epsilon=epsilon, random_state=seed),
                                          references[seed])
                           for seed, d in enumerate(data)]
                _fidelity_case(private, method="defaults", epsilon=epsilon,
                               seconds_per_fit=round((time.perf_counter() - started)
                                                     / seeds, 2), **common)


def group_data(seed, n_groups=100, group_size=30, n_val=600):
    """Training rows in groups, each flipping labels at its own rate in [0, 0.5]."""
    from sklearn.datasets import make_classification

    n = n_groups * group_size
    X, y = make_classification(n_samples=n + n_val, n_features=20, n_informative=5,
                               random_state=seed)
    rng = np.random.default_rng(seed)
    groups = rng.permutation(n) % n_groups
    flip_rates = rng.uniform(0.0, 0.5, size=n_groups)
    y_train = y[:n].copy()
    flipped = rng.random(n) < flip_rates[groups]
    y_train[flipped] = 1 - y_train[flipped]
    return X[:n], y_train, groups, X[n:], y[n:], flip_rates


def run_fidelity_groups(epsilons, seeds, units, n_jobs, k=500):
    from scipy.stats import spearmanr

    data = [group_data(seed) for seed in range(seeds)]
    for unit in units:
        def fit(seed, **params):
            X, y, groups, X_val, y_val, _ = data[seed]
            return DPDataValuator(n_permutations=k, privacy_unit=unit, n_jobs=n_jobs,
                                  random_state=seed, **params).fit(
                X, y, X_val=X_val, y_val=y_val, groups=groups).values_

        started = time.perf_counter()
        references = [fit(seed, noise="none") for seed in range(seeds)]
        truth = [spearmanr(ref, -d[5])[0] for ref, d in zip(references, data)]
        common = dict(case="fidelity groups", n_groups=100, group_size=30, k=k,
                      privacy_unit=unit, delta=DELTA,
                      ground_truth_spearman=round(float(np.mean(truth)), 4))
        emit(case="fidelity groups reference", privacy_unit=unit, k=k, seeds=seeds,
             ground_truth_spearman_mean=round(float(np.mean(truth)), 4),
             ground_truth_spearman_min=round(float(np.min(truth)), 4),
             seconds_per_fit=round((time.perf_counter() - started) / seeds, 2),
             load_average=round(os.getloadavg()[0], 2))
        for epsilon in epsilons:
            started = time.perf_counter()
            private = [value_fidelity(fit(seed, epsilon=epsilon), references[seed])
                       for seed in range(seeds)]
            _fidelity_case(private, method="defaults", epsilon=epsilon,
                           seconds_per_fit=round((time.perf_counter() - started)
                                                 / seeds, 2), **common)


def federated_data(seed, n_clients=10):
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(n_samples=2000, n_features=20, n_informative=5,
                               random_state=seed)
    X_train, X_val, y_train, y_val = train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=y)
    clients = np.random.default_rng(seed).permutation(len(X_train)) % n_clients
    y_train = np.where(clients == 0, 1 - y_train, y_train)  # client 0: all flipped
    return X_train, y_train, clients, X_val, y_val


def run_fidelity_federated(seeds):
    settings = {"no DP": dict(noise="none"),
                "record-level": dict(epsilon=3.0),
                "group-level": dict(epsilon=3.0, privacy_unit="group")}
    for method, params in settings.items():
        started = time.perf_counter()
        last = 0
        for seed in range(seeds):
            X, y, clients, X_val, y_val = federated_data(seed)
            fed = DPFederatedValuator(random_state=seed, **params).fit(
                X, y, groups=clients, X_val=X_val, y_val=y_val)
            last += int(fed.rank_[0] == len(fed.rank_))
        emit(case="fidelity federated", method=method, epsilon=params.get("epsilon"),
             n_clients=10, mislabelled_ranked_last=last, splits=seeds,
             learning_rate=fed.learning_rate, utility=fed.utility,
             seconds_per_fit=round((time.perf_counter() - started) / seeds, 2),
             load_average=round(os.getloadavg()[0], 2))


# --- the seed paper's Table 2 protocol ------------------------------------------

TABLE2_SIZES = {"breast_cancer": 569, "diabetes": 442}
TABLE2_METHODS = {
    "no DP": dict(noise="none", q=0.0),
    "i.i.d.": dict(noise="iid", q=0.0),
    "X*": dict(noise="correlated", q=0.0),
    "Y*(q=0.5)": dict(noise="correlated", q=0.5),
    "Y*(q=0.9)": dict(noise="correlated", q=0.9),
}
SEMIVALUES = {"shapley": "shapley", "banzhaf": "banzhaf",
              "beta(4,1)": ("beta", 4, 1), "beta(16,1)": ("beta", 16, 1)}


def table2_data(name, trial):
    """n = 400 training points where available; at least 142 validation rows
    (digits 3 vs 8, the seed paper's MNIST stand-in: 267 and 90)."""
    if name not in TABLE2_SIZES:
        return load_noisy_classification(name, validation_size=0.25, test_size=0.0,
                                         flip_fraction=0.3, random_state=trial)
    n_val = max(142, TABLE2_SIZES[name] - 400)
    return load_noisy_classification(name, n_train=TABLE2_SIZES[name] - n_val,
                                     validation_size=n_val / TABLE2_SIZES[name],
                                     test_size=0.0, flip_fraction=0.3,
                                     random_state=trial)


def paper_learning_rate(data):
    """The paper's recipe: best validation accuracy after one noiseless pass
    over the training data (it reads the private data: a benchmark recipe)."""
    from skdpval.kernels import _linear, _losses
    T = np.where(data.y_train == 1, 1.0, -1.0)[:, None]
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    X, X_val = ones(data.X_train), ones(data.X_val)
    T_val = np.where(data.y_val == 1, 1.0, -1.0)[:, None]
    scores = []
    for rate in AUTO_LEARNING_RATES:
        theta = _linear.sgd_pass(X, T, loss=_losses.LOGISTIC, loss_param=0.0,
                                  l2=1.0 / len(X), n_penalized=X.shape[1] - 1,
                                  clip_norm=1.0, learning_rate=rate,
                                  theta_init=np.zeros((1, X.shape[1])),
                                  order=np.arange(len(X)))
        scores.append(_linear.utility_of_theta(
            theta, X_val, T_val, data.y_val, loss=_losses.LOGISTIC,
            utility=_losses.ACCURACY, loss_param=0.0, total_sum_squares=1.0))
    return float(AUTO_LEARNING_RATES[int(np.argmax(scores))])


def run_table2(epsilons, ks, trials, policies, n_jobs, methods=None,
               datasets=tuple(TABLE2_SIZES), semivalues=tuple(SEMIVALUES),
               case_name="table2"):
    for name in datasets:
        data = [table2_data(name, trial) for trial in range(trials)]
        paper_rates = [paper_learning_rate(d) for d in data]
        for k in ks:
            for method, params in TABLE2_METHODS.items():
                if methods is not None and method not in methods:
                    continue
                for epsilon in ([None] if method == "no DP" else epsilons):
                    for semivalue_name in semivalues:
                        semivalue = SEMIVALUES[semivalue_name]
                        for policy in policies:
                            aucs, rates = [], []
                            started = time.perf_counter()
                            for trial, d in enumerate(data):
                                lr = paper_rates[trial] if policy == "paper" else "auto"
                                valuator = DPDataValuator(
                                    LogisticRegression(), semivalue=semivalue,
                                    epsilon=epsilon if epsilon else 1.0,
                                    delta=DELTA, clip_norm=1.0, subspace=None,
                                    n_permutations=k, learning_rate=lr,
                                    n_jobs=n_jobs, random_state=trial, **params)
                                valuator.fit(d.X_train, d.y_train, X_val=d.X_val,
                                             y_val=d.y_val)
                                aucs.append(noisy_label_auc(valuator.values_, d.is_noisy))
                                rates.append(valuator.learning_rate_)
                            emit(case=case_name, dataset=name, n=len(d.y_train),
                                 n_val=len(d.y_val), epsilon=epsilon, k=k,
                                 method=method, semivalue=semivalue_name,
                                 lr_policy=policy,
                                 learning_rate=float(np.mean(rates)),
                                 auc_mean=round(float(np.mean(aucs)), 4),
                                 auc_std=round(float(np.std(aucs)), 4),
                                 trials=trials,
                                 seconds=round(time.perf_counter() - started, 2))


# --- suite regime (issue 33) ---------------------------------------------------

REGIME_METHODS = {
    "label quality validation": lambda eps, seed: DPLabelQuality(
        epsilon=eps, delta=DELTA, public_model="validation", random_state=seed),
    "label quality private": lambda eps, seed: DPLabelQuality(
        epsilon=eps, delta=DELTA, public_model="private", random_state=seed),
    "label quality auto": lambda eps, seed: DPLabelQuality(
        epsilon=eps, delta=DELTA, random_state=seed),
    "defaults": lambda eps, seed: DPDataValuator(epsilon=eps, delta=DELTA,
                                                 random_state=seed),
    "defaults validation": lambda eps, seed: DPDataValuator(
        epsilon=eps, delta=DELTA, public_model="validation", random_state=seed),
    # Issue 44: the network family (the default candidates' network).
    "label quality network validation": lambda eps, seed: DPLabelQuality(
        _network(), epsilon=eps, delta=DELTA, public_model="validation",
        random_state=seed),
    "label quality network private": lambda eps, seed: DPLabelQuality(
        _network(), epsilon=eps, delta=DELTA, public_model="private",
        random_state=seed),
}


def _network():
    from sklearn.neural_network import MLPClassifier
    return MLPClassifier((64,))


def _standardized(X, X_val):
    mean, std = X_val.mean(axis=0), X_val.std(axis=0)
    return (X - mean) / np.where(std > 0, std, 1.0)


def regime_reference(d, epsilon, seed):
    """The non-private out-of-fold reference: ``(auc, sign_diagnostic, acc)``."""
    from scipy.stats import norm
    from sklearn.model_selection import StratifiedKFold
    from skdpval.valuation._label_quality import PRIVATE_MARGIN_CLIPS
    X, X_val = _standardized(d["X_train"], d["X_val"]), _standardized(d["X_val"], d["X_val"])
    y = d["y_train"]
    decision = np.empty(len(y))
    val_margins = []
    for train, test in StratifiedKFold(2, shuffle=True, random_state=seed).split(X, y):
        model = LogisticRegression(max_iter=1000).fit(X[train], y[train])
        decision[test] = model.decision_function(X[test])
        val_margins.append(np.abs(model.decision_function(X_val)))
    scale = PRIVATE_MARGIN_CLIPS / np.median(np.concatenate(val_margins))
    margins = np.clip(scale * np.where(y == 1, 1.0, -1.0) * decision, -1, 1)
    mu = gdp_mu(epsilon, DELTA)
    released = margins + np.random.default_rng([seed, 7]).normal(0, 1 / mu, len(y))
    accuracy = float(np.mean((decision > 0) == (d["y_train_clean"] == 1)))
    return noisy_label_auc(released, d["flipped"]), 2 * accuracy - 1, accuracy


def run_regime(datasets, methods, epsilons, seeds, n_vals, first_seed=0,
               paired=False, flip_rate=0.3):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from regime_data import regime_split
    fractions = {}
    for name in datasets:
        for n_val in n_vals:
            for seed in range(first_seed, first_seed + seeds):
                d = regime_split(name, seed, n_val, flip_rate=flip_rate)
                base = dict(case="regime", dataset=name, n=len(d["y_train"]),
                            flip_rate=flip_rate,
                            n_features=d["X_train"].shape[1], n_val=n_val,
                            seed=seed, delta=DELTA)
                for epsilon in epsilons:
                    limit = detection_auc_limit(epsilon, DELTA)
                    lf = lambda auc: round(float((auc - 0.5) / (limit - 0.5)), 4)
                    if "reference oof" in methods:
                        started = time.perf_counter()
                        auc, sign, accuracy = regime_reference(d, epsilon, seed)
                        emit(**base, method="reference oof", epsilon=epsilon,
                             auc=round(auc, 4), limit=round(limit, 4),
                             limit_fraction=lf(auc), sign_diagnostic=round(sign, 4),
                             oof_accuracy=round(accuracy, 4),
                             seconds=round(time.perf_counter() - started, 3),
                             load=round(os.getloadavg()[0], 2))
                        fractions.setdefault(("reference oof", n_val, epsilon, name),
                                             []).append(lf(auc))
                        fractions.setdefault(("reference sign 2acc-1", n_val, epsilon,
                                              name), []).append(sign)
                    for method in methods:
                        if method == "reference oof":
                            continue
                        estimator = REGIME_METHODS[method](epsilon, seed)
                        if paired:  # the same noise streams for every code version
                            estimator.set_params(noise_seed=1000 + seed)
                        started = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")  # noise_seed's warning
                            estimator.fit(d["X_train"], d["y_train"], X_val=d["X_val"],
                                          y_val=d["y_val"])
                        seconds = time.perf_counter() - started
                        auc = noisy_label_auc(estimator.values_, d["flipped"])
                        case = dict(base, method=method, epsilon=epsilon,
                                    auc=round(auc, 4), limit=round(limit, 4),
                                    limit_fraction=lf(auc),
                                    public_model_private=bool(
                                        estimator.public_model_fitted_privately_),
                                    seconds=round(seconds, 3), paired=paired,
                                    load=round(os.getloadavg()[0], 2))
                        fit = estimator.privacy_report_["details"].get(
                            "public_model_fit", {})
                        if fit.get("rule"):  # the "auto" rule's public statistic
                            case.update(rule_difference=round(
                                fit["rule"]["difference"], 4),
                                rule_se=round(fit["rule"]["standard_error"], 4))
                        if isinstance(estimator, DPLabelQuality):
                            predicted = estimator.public_model_.predict(
                                _standardized(d["X_train"], d["X_val"]))
                            case["public_model_accuracy"] = round(float(np.mean(
                                predicted == d["y_train_clean"])), 4)
                        emit(**case)
                        fractions.setdefault((method, n_val, epsilon, name),
                                             []).append(lf(auc))
    emit_regime_summaries(fractions)


def emit_regime_summaries(fractions):
    """One ``regime summary`` per (method, n_val, epsilon): the mean over the
    data sets of each set's mean LF over its seeds."""
    summaries = {}
    for (method, n_val, epsilon, name), values in fractions.items():
        summaries.setdefault((method, n_val, epsilon), []).append(
            (name, np.mean(values), len(values)))
    for (method, n_val, epsilon), per_set in sorted(summaries.items()):
        emit(case="regime summary", method=method, n_val=n_val, epsilon=epsilon,
             datasets=len(per_set), seeds=min(n for _, _, n in per_set),
             mean_limit_fraction=round(float(np.mean([v for _, v, _ in per_set])), 4))


def summarize_regime(lines):
    """``regime summary`` lines of the ``regime`` cases among ``lines``
    (runs split by method or seed, concatenated)."""
    fractions = {}
    for line in lines:
        case = json.loads(line)
        if case.get("case") != "regime":
            continue
        key = (case["method"], case["n_val"], case["epsilon"], case["dataset"])
        fractions.setdefault(key, []).append(case["limit_fraction"])
        if "sign_diagnostic" in case:
            fractions.setdefault(("reference sign 2acc-1",) + key[1:], []).append(
                case["sign_diagnostic"])
    emit_regime_summaries(fractions)


def _digits_pair(a, b):
    from sklearn.datasets import load_digits
    digits = load_digits()
    keep = np.isin(digits.target, (a, b))
    return digits.data[keep], (digits.target[keep] == b).astype(int)


REGIME_SMALL = ("breast_cancer", "digits_1_vs_7", "digits_3_vs_8", "wine")


def regime_small_data(name, seed):
    """25% clean validation, the rest training with 30% independent flips."""
    from sklearn.datasets import load_breast_cancer, load_wine
    from sklearn.model_selection import train_test_split
    from skdpval.datasets import flip_labels
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "wine":
        X, y = load_wine(return_X_y=True)
    else:
        X, y = _digits_pair(*(int(c) for c in name.split("_")[1::2]))
    X_train, X_val, y_clean, y_val = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=seed)
    y_train, _ = flip_labels(y_clean, 0.3, random_state=seed, independent=True)
    return dict(X_train=X_train, y_train=y_train, y_train_clean=y_clean,
                flipped=y_train != y_clean, X_val=X_val, y_val=y_val)


def run_regime_small(epsilons, seeds, methods):
    pairs = {"label quality": ("label quality auto", "label quality validation"),
             "defaults": ("defaults", "defaults validation")}
    for name in REGIME_SMALL:
        for epsilon in epsilons:
            limit = detection_auc_limit(epsilon, DELTA)
            for family, (auto, validation) in pairs.items():
                if auto not in methods:
                    continue
                differences, fits_privately, lfs = [], 0, {auto: [], validation: []}
                for seed in range(seeds):
                    d = regime_small_data(name, seed)
                    for method in (auto, validation):
                        # Paired: the same split and the same noise streams
                        # (noise_seed, a benchmark-only opt-in), so that where
                        # "auto" keeps the validation model the two agree.
                        estimator = REGIME_METHODS[method](epsilon, seed).set_params(
                            noise_seed=1000 + seed)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            estimator.fit(d["X_train"], d["y_train"],
                                          X_val=d["X_val"], y_val=d["y_val"])
                        auc = noisy_label_auc(estimator.values_, d["flipped"])
                        lfs[method].append((auc - 0.5) / (limit - 0.5))
                        if method == auto:
                            fits_privately += estimator.public_model_fitted_privately_
                    differences.append(lfs[auto][-1] - lfs[validation][-1])
                emit(case="regime small", dataset=name, n=len(d["y_train"]),
                     n_val=len(d["y_val"]), epsilon=epsilon, delta=DELTA,
                     family=family, seeds=seeds,
                     auto_limit_fraction=round(float(np.mean(lfs[auto])), 4),
                     validation_limit_fraction=round(float(np.mean(lfs[validation])), 4),
                     paired_difference=round(float(np.mean(differences)), 4),
                     paired_difference_se=round(float(np.std(differences)
                                                      / np.sqrt(seeds)), 4),
                     auto_fitted_privately=int(fits_privately))


def run_regime_rule(datasets, epsilons, seeds, n_trains=(250, 500, 1000, 2000, 5000,
                                                     20000)):
    """Where the private fit pays (the data of public_model="auto"): the
    regime sets' training rows subsampled to ``n_trains``, n_val 50,
    DPLabelQuality "private" against "validation" on the same splits; each
    case with the rule's noise index ``n mu_fit / sqrt(100 d)``."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from regime_data import regime_split
    from skdpval.valuation._public_model import DEFAULT_SHARE, fit_noise_index
    for name in datasets:
        for n_train in n_trains:
            for epsilon in epsilons:
                limit = detection_auc_limit(epsilon, DELTA)
                differences = []
                for seed in range(seeds):
                    d = regime_split(name, seed, 50)
                    keep = np.random.default_rng(seed).permutation(
                        len(d["y_train"]))[:n_train]
                    lfs = []
                    for method in ("label quality private", "label quality validation"):
                        estimator = REGIME_METHODS[method](epsilon, seed).fit(
                            d["X_train"][keep], d["y_train"][keep], X_val=d["X_val"],
                            y_val=d["y_val"])
                        auc = noisy_label_auc(estimator.values_, d["flipped"][keep])
                        lfs.append((auc - 0.5) / (limit - 0.5))
                    differences.append(lfs[0] - lfs[1])
                n_params = d["X_train"].shape[1] + 1
                emit(case="regime rule", dataset=name, n=len(keep), n_val=50,
                     n_params=n_params, epsilon=epsilon, seeds=seeds,
                     noise_index=round(fit_noise_index(
                         len(keep), np.sqrt(DEFAULT_SHARE) * gdp_mu(epsilon, DELTA),
                         n_params), 3),
                     private_minus_validation=round(float(np.mean(differences)), 4),
                     se=round(float(np.std(differences) / np.sqrt(seeds)), 4))


def run_regime_time(seeds):
    """DPLabelQuality at n = 50,000 (sep_1.2, n_val 200, eps 1): today's
    (validation model) against the private fit, best of ``seeds`` fits, by
    the wall clock and by the process's CPU time (steadier on a shared
    machine); ``private_first_seconds``: best of fits that each build the
    fit's noise table anew (``rounded_gaussian_table``'s cache cleared), as
    a process's first fit at a new budget does. Under load, threaded BLAS
    (the validation model's fit) slows far more than the fit's one-thread
    kernel: ``OPENBLAS_NUM_THREADS=1`` gives steadier ratios."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from regime_data import regime_split
    from threadpoolctl import threadpool_info

    from skdpval.privacy._secure_noise import rounded_gaussian_table
    d = regime_split("sep_1.2", 0, 200, n_test=0)
    X, y = d["X_train"], d["y_train"]
    wall, cpu = {}, {}
    runs = [("label quality validation", False), ("label quality private", False),
            ("label quality private", True)]
    for method, first in runs:
        REGIME_METHODS[method](1.0, 0).fit(X[:2000], y[:2000], X_val=d["X_val"],
                                           y_val=d["y_val"])  # compile
        wall[method, first] = cpu[method, first] = np.inf
        for seed in range(seeds):
            if first:
                rounded_gaussian_table.cache_clear()
            started, started_cpu = time.perf_counter(), time.process_time()
            REGIME_METHODS[method](1.0, seed).fit(X, y, X_val=d["X_val"],
                                                  y_val=d["y_val"])
            wall[method, first] = min(wall[method, first],
                                      time.perf_counter() - started)
            cpu[method, first] = min(cpu[method, first],
                                     time.process_time() - started_cpu)
    validation = ("label quality validation", False)
    private = ("label quality private", False)
    blas_threads = max([info["num_threads"] for info in threadpool_info()
                        if info["user_api"] == "blas"], default=None)
    emit(case="regime time", n=len(y), n_features=X.shape[1], n_val=200,
         validation_seconds=round(wall[validation], 3),
         private_seconds=round(wall[private], 3),
         ratio=round(wall[private] / wall[validation], 2),
         validation_cpu_seconds=round(cpu[validation], 3),
         private_cpu_seconds=round(cpu[private], 3),
         cpu_ratio=round(cpu[private] / cpu[validation], 2),
         private_first_seconds=round(wall["label quality private", True], 3),
         private_first_cpu_seconds=round(cpu["label quality private", True], 3),
         seeds=seeds, blas_threads=blas_threads, load=round(os.getloadavg()[0], 2))


def run_default_time(datasets, seeds):
    """DPLabelQuality() as a user runs it (library defaults, epsilon 1, n_val
    200) on each table's n training rows: best of ``seeds`` fits by the wall
    clock and by CPU time, after one compiling fit on 2,000 rows. Run with
    each code version to compare (``code`` in the lines)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from regime_data import regime_split
    for name in datasets:
        d = regime_split(name, 0, 200, n_test=0)
        X, y = d["X_train"], d["y_train"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            DPLabelQuality(epsilon=1.0, random_state=0).fit(
                X[:2000], y[:2000], X_val=d["X_val"], y_val=d["y_val"])
            wall = cpu = np.inf
            for seed in range(seeds):
                started, started_cpu = time.perf_counter(), time.process_time()
                fitted = DPLabelQuality(epsilon=1.0, random_state=seed).fit(
                    X, y, X_val=d["X_val"], y_val=d["y_val"])
                wall = min(wall, time.perf_counter() - started)
                cpu = min(cpu, time.process_time() - started_cpu)
        emit(case="default time", dataset=name, n=len(y), n_val=200,
             seconds=round(wall, 3), cpu_seconds=round(cpu, 3), seeds=seeds,
             model=type(fitted.estimator_).__name__,
             fitted_privately=bool(fitted.public_model_fitted_privately_),
             load=round(os.getloadavg()[0], 2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=["limit", "swing", "semivalues",
                                            "regression", "fidelity", "table2", "mlp",
                                            "seed_paper",
                                            "regime", "regime_small", "regime_time",
                                            "regime_rule", "regime_summary",
                                            "default_time"],
                        default="limit")
    parser.add_argument("--parts", nargs="+", default=["groups", "federated", "points"],
                        help="fidelity only: which parts, in this order")
    parser.add_argument("--datasets", nargs="+", default=list(LIMIT_DATASETS))
    parser.add_argument("--methods", nargs="+", default=list(LIMIT_METHODS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 3.0, 10.0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--ks", nargs="+", type=int, default=[200, 1000],
                        help="table2 only")
    parser.add_argument("--trials", type=int, default=3, help="table2 only")
    parser.add_argument("--policies", nargs="+", default=["paper", "auto"],
                        help="table2 only")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--n-vals", nargs="+", type=int, default=[50, 200],
                        help="regime only")
    parser.add_argument("--first-seed", type=int, default=0, help="regime only")
    parser.add_argument("--paired", action="store_true",
                        help="regime only: fixed noise streams (noise_seed, not "
                             "private) to compare code versions on the same noise")
    parser.add_argument("--flip-rates", nargs="+", type=float, default=[0.3],
                        help="regime only: the training labels' flip rate, or "
                             "those of class 0 and class 1 (class-dependent)")
    args = parser.parse_args()
    if args.suite == "regime_summary":  # lines of regime runs on stdin
        summarize_regime(sys.stdin)
    elif args.suite == "default_time":
        run_default_time(args.datasets, args.seeds)
    elif args.suite in ("regime", "regime_small", "regime_time", "regime_rule"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from regime_data import REGIME_DATASETS
        datasets = (list(REGIME_DATASETS) if args.datasets == list(LIMIT_DATASETS)
                    else args.datasets)
        methods = (["reference oof", *REGIME_METHODS]
                   if args.methods == list(LIMIT_METHODS) else args.methods)
        epsilons = [1.0, 3.0] if args.epsilons == [1.0, 3.0, 10.0] else args.epsilons
        if args.suite == "regime":
            run_regime(datasets, methods, epsilons, args.seeds, args.n_vals,
                       args.first_seed, args.paired,
                       args.flip_rates[0] if len(args.flip_rates) == 1
                       else tuple(args.flip_rates))
        elif args.suite == "regime_rule":
            run_regime_rule(datasets, epsilons, args.seeds)
        elif args.suite == "regime_small":
            run_regime_small(epsilons, args.seeds, methods)
        else:
            run_regime_time(args.seeds)
    elif args.suite == "limit":
        run_limit(args.datasets, args.methods, args.epsilons, args.seeds, args.n_jobs)
        run_unscaled(args.seeds)
    elif args.suite == "mlp":
        warnings.simplefilter("ignore")  # default-epsilon notices
        datasets = (MLP_DATASETS if args.datasets == list(LIMIT_DATASETS)
                    else args.datasets)
        methods = (list(MLP_METHODS) if args.methods == list(LIMIT_METHODS)
                   else args.methods)
        for case in run_mlp(datasets, methods, args.epsilons, args.seeds,
                            args.n_jobs):
            emit(**case)
    elif args.suite == "swing":
        run_swing(args.datasets, args.seeds)
    elif args.suite == "semivalues":
        run_semivalues(args.datasets, args.seeds, args.n_jobs)
    elif args.suite == "regression":
        run_regression(args.epsilons, args.seeds, args.n_jobs)
    elif args.suite == "fidelity":
        warnings.simplefilter("ignore")  # default-epsilon and held-out notices
        datasets = (["breast_cancer"] if args.datasets == list(LIMIT_DATASETS)
                    else args.datasets)
        for part in args.parts:
            if part == "groups":
                run_fidelity_groups(args.epsilons, args.seeds, ("record", "group"),
                                    args.n_jobs)
            elif part == "federated":
                run_fidelity_federated(args.seeds)
            else:
                run_fidelity_points(datasets, args.epsilons, args.seeds, args.n_jobs)
    elif args.suite == "seed_paper":
        # The seed paper's noisy-label experiment (its Table 2 and App. D.5:
        # 30% of the training labels flipped, k = 1000, Shapley, the full-space
        # walk with C = 1) at epsilon 0.1 / 1 / 10 on the bundled sets.
        run_table2(args.epsilons, [1000], args.trials, args.policies, args.n_jobs,
                   datasets=("breast_cancer", "diabetes", "digits_3_vs_8"),
                   semivalues=("shapley",), case_name="seed_paper")
    else:
        methods = (None if args.methods == list(LIMIT_METHODS) else args.methods)
        run_table2(args.epsilons, args.ks, args.trials, args.policies, args.n_jobs,
                   methods)
