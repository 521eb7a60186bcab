"""Error rates of skdpval.testing.dp_test: prints one JSON object per case.

Run from the repository root:

    PYTHONPATH=. python benchmarks/dp_test.py [--repetitions 10] [--quick]

- ``power``: rounded Gaussian releases (the library's grid and sampler) of a
  sensitivity-1 statistic calibrated to ``(epsilon, 1e-5)``, 10^6 per
  neighbour, the noise scaled by 1 (the rejection rate is then a false
  rejection rate), 0.9, 0.8 and 0.5; the claim tested is the point
  ``(epsilon, 1e-5)`` or the mechanism's GDP profile at epsilon 0, 0.25,
  0.5, 1, 2. ``rejections`` of ``repetitions`` independent noise draws.
- ``power_1e7``: the same at 10^7 per neighbour, epsilon 1, one draw.
- ``false_rejection``: randomized response, exactly ln 3-DP and tight on
  its event, 10^5 per neighbour, many repetitions at several ``alpha``: the
  rejection rate against the bound ``alpha``.
- ``laplace``: the exact discrete Laplace (slow sampler: 2 x 20,000 draws)
  at pure epsilon 1, scale times 1, 0.9, 0.8, 0.5.

Every line carries the load average (1 min) at its end.
"""

import argparse
import json
import os
import time
from fractions import Fraction

import numpy as np

from skdpval.privacy._accounting import gdp_mu, noise_std_for_budget
from skdpval.privacy._noise import gaussian_noise, laplace_noise
from skdpval.privacy._release import releases_on_grid
from skdpval.privacy._grid import Grid
from skdpval.privacy._secure_noise import noise_key
from skdpval.testing import dp_test, gdp_delta

DELTA = 1e-5
PROFILE_EPSILONS = np.array([0.0, 0.25, 0.5, 1.0, 2.0])


def emit(**case):
    case["load"] = round(os.getloadavg()[0], 2)
    print(json.dumps(case), flush=True)


def gaussian_pair(n, epsilon, factor, seed):
    """``n`` releases of statistic 1 and of 0 (clip 1, grid 1/64), noise
    calibrated to ``(epsilon, DELTA)`` times ``factor``."""
    grid = Grid(1.0, 1)
    std = factor * noise_std_for_budget(epsilon, DELTA, 1, 1.0) / grid.gamma
    noise = gaussian_noise(noise_key(seed), 1, 0, 2, std, np.empty((2, n)))
    return [releases_on_grid(np.full(n, statistic), row, grid.gamma, grid.bound,
                             np.empty(n)) for statistic, row in zip((1.0, 0.0), noise)]


def median(bounds, which):
    """The median over repetitions of each claim's lower bound, rounded."""
    return rounded(np.median([np.atleast_1d(b[which]) for b in bounds], axis=0))


def rounded(values):
    return [float(f"{value:.4g}") for value in values]


def power(epsilons, factors, n, repetitions, seed0, case):
    for epsilon in epsilons:
        mu = gdp_mu(epsilon, DELTA)
        claims = {"point": (epsilon, DELTA),
                  "profile": (PROFILE_EPSILONS, gdp_delta(PROFILE_EPSILONS, mu))}
        for factor in factors:
            start = time.perf_counter()
            rejections = dict.fromkeys(claims, 0)
            bounds = {name: [] for name in claims}
            for r in range(repetitions):
                seed = seed0 + 1000 * r + int(100 * factor)
                x, y = gaussian_pair(n, epsilon, factor, seed)
                for name, claim in claims.items():
                    result = dp_test(x, y, *claim, random_state=seed)
                    rejections[name] += not result.passed
                    bounds[name].append((result.epsilon_lower, result.delta_lower))
            seconds = time.perf_counter() - start
            for name in claims:
                emit(case=case, mechanism="rounded Gaussian", epsilon=epsilon,
                     delta=DELTA, claim=name, noise_factor=factor, n_samples=n,
                     repetitions=repetitions, rejections=rejections[name],
                     rate=rejections[name] / repetitions,
                     claimed_delta=rounded(np.atleast_1d(claims[name][1])),
                     median_delta_lower=median(bounds[name], 1),
                     median_epsilon_lower=median(bounds[name], 0),
                     seconds=round(seconds, 1))


def false_rejection(alphas, n, repetitions):
    keep = 0.75
    for alpha in alphas:
        start = time.perf_counter()
        rejections = 0
        for r in range(repetitions):
            rng = np.random.default_rng(r)
            x, y = rng.random(n) < keep, rng.random(n) < 1 - keep
            rejections += not dp_test(x, y, np.log(3), 0.0, alpha=alpha,
                                      random_state=r).passed
        emit(case="false_rejection", mechanism="randomized response (tight)",
             epsilon=float(np.log(3)), delta=0.0, n_samples=n, alpha=alpha,
             repetitions=repetitions, rejections=rejections,
             rate=rejections / repetitions,
             seconds=round(time.perf_counter() - start, 1))


def laplace(factors, n, repetitions):
    for factor in factors:
        start = time.perf_counter()
        rejections, lowers = 0, []
        scale = Fraction(16) * Fraction(factor).limit_denominator(100)
        for r in range(repetitions):
            key = noise_key(10_000 + r)
            x = 16 + laplace_noise(key, 1, scale, n)
            y = laplace_noise(key, 2, scale, n)
            result = dp_test(x, y, 1.0, 0.0, random_state=r)
            rejections += not result.passed
            lowers.append(result.epsilon_lower)
        emit(case="laplace", mechanism="discrete Laplace, sensitivity 16 steps",
             epsilon=1.0, delta=0.0, noise_factor=factor, true_epsilon=1.0 / factor,
             n_samples=n, repetitions=repetitions, rejections=rejections,
             rate=rejections / repetitions,
             median_epsilon_lower=float(np.median(lowers)),
             seconds=round(time.perf_counter() - start, 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    reps, n = (2, 10**5) if args.quick else (args.repetitions, 10**6)
    power([1.0], [1.0], n, 3 * reps, 0, "false_rejection_gaussian")
    power([0.5, 1.0, 2.0], [0.9, 0.8, 0.5], n, reps, 1, "power")
    if not args.quick:
        power([1.0], [1.0, 0.8], 10**7, 1, 2, "power_1e7")
    false_rejection([1e-3, 0.05, 0.2], 10**4 if args.quick else 10**5,
                    50 if args.quick else 1000)
    laplace([1.0, 0.9, 0.8, 0.5], 2000 if args.quick else 20_000,
            1 if args.quick else 5)


if __name__ == "__main__":
    main()
