"""Quality benchmark: how well private values find flipped labels.

The seed paper's Table 2 protocol on bundled data: 30% of the training labels
flipped, delta = 5e-5, clip norm 1, logistic regression, 3 trials; for
epsilon in {1, 3, 10} and k in {200, 1000} on breast_cancer and diabetes
(binarised at its median), for no DP, i.i.d. noise, X* (correlated, q = 0)
and Y* (q = 0.5, 0.9), and the Shapley, Banzhaf, Beta(4, 1) and Beta(16, 1)
semivalues. n = 400 training points where available: the validation set
(the utility) is the rest, and at least 142 rows, so diabetes (442 rows)
gets n = 300. Prints one JSON object per case on stdout:

    python benchmarks/quality.py > benchmarks/results/quality.jsonl

Two learning-rate policies are compared, each case under both:
``paper``: the paper's recipe, one rate for every method, chosen for the best
validation accuracy after one noiseless pass over the training data (this
reads the private data: a benchmark recipe, not something to ship);
``auto``: the library's default ``learning_rate="auto"``.
"""

import argparse
import json
import time

import numpy as np
from sklearn.linear_model import LogisticRegression

from skdpval import DPDataValuator
from skdpval._valuator import AUTO_LEARNING_RATES
from skdpval.datasets import load_noisy_classification
from skdpval.metrics import noisy_label_auc

DATASETS = {"breast_cancer": 569, "diabetes": 442}
METHODS = {
    "no DP": dict(noise="none", q=0.0),
    "i.i.d.": dict(noise="iid", q=0.0),
    "X*": dict(noise="correlated", q=0.0),
    "Y*(q=0.5)": dict(noise="correlated", q=0.5),
    "Y*(q=0.9)": dict(noise="correlated", q=0.9),
}
SEMIVALUES = {"shapley": "shapley", "banzhaf": "banzhaf",
              "beta(4,1)": ("beta", 4, 1), "beta(16,1)": ("beta", 16, 1)}


def load(name, trial):
    n_val = max(142, DATASETS[name] - 400)
    return load_noisy_classification(name, n_train=DATASETS[name] - n_val,
                                     validation_size=n_val / DATASETS[name],
                                     test_size=0.0, flip_fraction=0.3,
                                     random_state=trial)


def paper_learning_rate(data):
    """Best validation accuracy after one clipped noiseless pass over the training data."""
    from skdpval import _kernels

    T = np.where(data.y_train == 1, 1.0, -1.0)[:, None]
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    X, X_val = ones(data.X_train), ones(data.X_val)
    T_val = np.where(data.y_val == 1, 1.0, -1.0)[:, None]
    scores = []
    for rate in AUTO_LEARNING_RATES:
        theta = _kernels.sgd_pass(X, T, loss=_kernels.LOGISTIC, huber_epsilon=0.0,
                                  l2=1.0 / len(X), n_penalized=X.shape[1] - 1,
                                  clip_norm=1.0, learning_rate=rate,
                                  theta_init=np.zeros((1, X.shape[1])),
                                  order=np.arange(len(X)))
        scores.append(_kernels.utility_of_theta(
            theta, X_val, T_val, data.y_val, loss=_kernels.LOGISTIC,
            utility=_kernels.ACCURACY, huber_epsilon=0.0, total_sum_squares=1.0))
    return float(AUTO_LEARNING_RATES[int(np.argmax(scores))])


def run(datasets, epsilons, ks, trials, policies, n_jobs):
    for name in datasets:
        data = [load(name, trial) for trial in range(trials)]
        paper_rates = [paper_learning_rate(d) for d in data]
        for k in ks:
            for method, params in METHODS.items():
                for epsilon in ([None] if method == "no DP" else epsilons):
                    for semivalue_name, semivalue in SEMIVALUES.items():
                        for policy in policies:
                            aucs, rates = [], []
                            started = time.perf_counter()
                            for trial, d in enumerate(data):
                                lr = paper_rates[trial] if policy == "paper" else "auto"
                                valuator = DPDataValuator(
                                    LogisticRegression(), semivalue=semivalue,
                                    epsilon=epsilon if epsilon else 1.0,
                                    delta=5e-5, clip_norm=1.0, n_permutations=k,
                                    learning_rate=lr, n_jobs=n_jobs,
                                    random_state=trial, **params)
                                valuator.fit(d.X_train, d.y_train, X_val=d.X_val,
                                             y_val=d.y_val)
                                aucs.append(noisy_label_auc(valuator.values_, d.is_noisy))
                                rates.append(valuator.learning_rate_)
                            print(json.dumps(dict(
                                dataset=name, n=len(d.y_train), n_val=len(d.y_val),
                                epsilon=epsilon, k=k, method=method,
                                semivalue=semivalue_name, lr_policy=policy,
                                learning_rate=float(np.mean(rates)),
                                auc_mean=round(float(np.mean(aucs)), 4),
                                auc_std=round(float(np.std(aucs)), 4),
                                trials=trials,
                                seconds=round(time.perf_counter() - started, 2))),
                                flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 3.0, 10.0])
    parser.add_argument("--ks", nargs="+", type=int, default=[200, 1000])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--policies", nargs="+", default=["paper", "auto"])
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    run(args.datasets, args.epsilons, args.ks, args.trials, args.policies, args.n_jobs)
