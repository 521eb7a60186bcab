"""Model coverage benchmark: every supported estimator finds corrupted targets.

Protocol: every estimator the registry supports (``skdpval.families.registered()``),
with scikit-learn's default parameters, wrapped by ``DPDataValuator`` with its
own defaults (public subspace, ``clip_norm="auto"``, ``learning_rate="auto"``,
k = 1000 permutations). Classifiers: breast_cancer, 75% training / 25%
validation (stratified, features standardised by the validation split),
each training label flipped independently with probability 0.3. Regressors:
diabetes (raw target), the same split, 30% of the training targets replaced
by uniform draws over the target's range. Per seed a new split and new
corruption; delta = 5e-5. Measured: the ROC AUC with which low values find
the corrupted samples, without noise (``noise="none"``) and at epsilon 3,
and the clean-model AUC: the estimator fitted on the clean validation set
(features standardised by its statistics) scoring each training label by
its margin ``y f(x)`` (the true class's decision value minus the best
other's) or minus its absolute residual, with no privacy and no clipping.
Where that reference is near 0.5 the model itself cannot tell the
corruption, and no valuation of it will.

One JSON object per (estimator, method) on stdout:

    python benchmarks/models.py --seeds 3 > benchmarks/results/models.jsonl

The docs' coverage table (doc/user_guide/models.rst) reads the result file.
"""

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpval import DPDataValuator
from skdpval.datasets import load_noisy_classification
from skdpval.families import Refused, registered
from skdpval.metrics import noisy_label_auc

EPSILON = 3.0


def supported_estimators():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated PA classes
        return [cls() for cls, entry in registered().items()
                if not isinstance(entry, Refused)]


def classification_data(seed):
    d = load_noisy_classification("breast_cancer", flip_fraction=0.3,
                                  independent_flips=True, validation_size=0.25,
                                  test_size=0.0, random_state=seed)
    return d.X_train, d.y_train, d.X_val, d.y_val, d.is_noisy


def regression_data(seed, fraction=0.3):
    """diabetes, 30% of training targets replaced by uniform draws over the range."""
    X, y = load_diabetes(return_X_y=True)
    X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.25,
                                                      random_state=seed)
    rng = np.random.default_rng(seed)
    is_noisy = rng.random(len(y_train)) < fraction
    y_noisy = y_train.copy()
    y_noisy[is_noisy] = rng.uniform(y.min(), y.max(), size=is_noisy.sum())
    return X_train, y_noisy, X_val, y_val, is_noisy


class CleanModelScore:
    """The non-private reference: the model fitted on the validation set
    scores each training label (``values_``, low = suspect)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y, X_val, y_val):
        scaler = StandardScaler().fit(X_val)
        model = clone(self.estimator).fit(scaler.transform(X_val), y_val)
        X = scaler.transform(X)
        if is_classifier(model):
            scores = np.reshape(model.decision_function(X), (len(X), -1))
            index = np.searchsorted(model.classes_, y)
            if scores.shape[1] == 1:
                self.values_ = np.where(index == 1, 1.0, -1.0) * scores[:, 0]
            else:
                true = scores[np.arange(len(X)), index]
                scores[np.arange(len(X)), index] = -np.inf
                self.values_ = true - scores.max(axis=1)
        else:
            self.values_ = -np.abs(y - model.predict(X))
        return self


METHODS = {
    "no noise": lambda estimator, seed: DPDataValuator(
        estimator, noise="none", random_state=seed),
    f"eps {EPSILON:g}": lambda estimator, seed: DPDataValuator(
        estimator, epsilon=EPSILON, random_state=seed),
    "clean-model AUC": lambda estimator, seed: CleanModelScore(estimator),
}


def run(names, seeds):
    for estimator in supported_estimators():
        name = type(estimator).__name__
        if names and name not in names:
            continue
        make_data = classification_data if is_classifier(estimator) else (
            regression_data)
        data = [make_data(seed) for seed in range(seeds)]
        for method, make in METHODS.items():
            aucs, errors = [], []
            started = time.perf_counter()
            for seed, (X, y, X_val, y_val, is_noisy) in enumerate(data):
                valuator = make(estimator, seed)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        valuator.fit(X, y, X_val=X_val, y_val=y_val)
                except (ValueError, TypeError) as error:
                    errors.append(str(error)[:200])
                    continue
                aucs.append(noisy_label_auc(valuator.values_, is_noisy))
            print(json.dumps(dict(
                case="models", estimator=name,
                task="classification" if is_classifier(estimator) else "regression",
                dataset="breast_cancer" if is_classifier(estimator) else "diabetes",
                method=method, seeds=seeds, fitted=len(aucs),
                auc_mean=round(float(np.mean(aucs)), 4) if aucs else None,
                auc_std=round(float(np.std(aucs)), 4) if aucs else None,
                errors=sorted(set(errors)),
                seconds_per_fit=round((time.perf_counter() - started) / seeds, 3))),
                flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--estimators", nargs="*", default=None)
    args = parser.parse_args()
    run(args.estimators, args.seeds)
