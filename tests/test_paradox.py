"""The paradox of Prop. 5.1 on a small case: more budget, no less uncertainty.

The estimation uncertainty of the seed paper (its Eq. 3) is the variance of
the values over the DP noise alone, with the permutations fixed. At a fixed
epsilon the per-release noise grows like sqrt(k), so with i.i.d. noise that
variance does not shrink as k grows (it grows, through the second-order
effect of the noise on the model), while correlated noise with a burn-in
keeps it lower and does not let it grow.
"""

import numpy as np
import pytest

from helpers import FixedDraws
from skdpval.kernels import _losses
from skdpval.privacy._accounting import noise_std_for_budget
from skdpval.privacy._noise import counted_permutations, noise_schedule
from skdpval.kernels._linear import make_problem
from skdpval.walks._runner import run_walks
from skdpval.datasets import load_noisy_classification


@pytest.fixture(scope="module")
def problem():
    data = load_noisy_classification("diabetes", n_train=100, flip_fraction=0.0,
                                     validation_size=0.3, test_size=0.0,
                                     random_state=0)
    ones = lambda A: np.hstack([A, np.ones((len(A), 1))])
    signs = lambda y: np.where(y == 1, 1.0, -1.0)[:, None]
    n = len(data.y_train)
    return make_problem(ones(data.X_train), signs(data.y_train), np.arange(n + 1),
                        ones(data.X_val), signs(data.y_val), data.y_val,
                        loss=_losses.LOGISTIC, utility=_losses.NEG_LOSS,
                        loss_param=0.0, l2=1.0 / n, n_penalized=10,
                        clip_norm=1.0, learning_rate=0.01, total_sum_squares=1.0,
                        weights=np.ones(n))


def value_variance(problem, noise, q, k, epsilon=1.0, repeats=30):
    """Mean over parties of Var[psi_j] over noise draws, permutations fixed."""
    n = problem.offsets.shape[0] - 1
    rng = np.random.default_rng(k)
    permutations = np.array([rng.permutation(n) for _ in range(k)])
    s = noise_std_for_budget(epsilon, 5e-5, k, clip_norm=1.0)
    x_tt, use_rolling, _ = noise_schedule(noise, k)
    values = [run_walks(problem, FixedDraws(permutations,
                                            s * rng.normal(size=(k, n, 1, 11))),
                        x_tt=x_tt, use_rolling=use_rolling,
                        counted=counted_permutations(q, k),
                        batch_permutations=1).marginal_mean
              for _ in range(repeats)]
    return np.var(values, axis=0).mean()


def test_iid_uncertainty_grows_with_k_and_correlated_does_not(problem):
    iid_50, iid_400 = (value_variance(problem, "iid", 0.0, k) for k in (50, 400))
    corr_50, corr_400 = (value_variance(problem, "correlated", 0.5, k)
                         for k in (50, 400))
    assert iid_400 > iid_50, (iid_50, iid_400)
    assert corr_400 < 2 * corr_50, (corr_50, corr_400)
    assert corr_400 < 0.75 * iid_400, (corr_400, iid_400)
