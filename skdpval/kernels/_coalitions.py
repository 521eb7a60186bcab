"""Layered Shapley's utility: an L2-regularised logistic regression fitted on
each coalition (Newton's method), scored on the validation rows."""

import numpy as np
from numba import njit

from ._math import _f64, _i64, _jit, _jit_alloc, softplus


@njit(**_jit)
def _coalition_objective(X, y, rows, size, w, lam):
    total = 0.0
    for r in range(size):
        j = rows[r]
        m = 0.0
        for c in range(X.shape[1]):
            m += w[c] * X[j, c]
        total += softplus(-y[j] * m)
    sq = 0.0
    for c in range(w.shape[0]):
        sq += w[c] * w[c]
    return total / size + lam * sq


@njit(**_jit_alloc)
def fit_coalition(X, y, rows, size, lam, w, tol=1e-12, max_iter=100):
    """Newton's method for ``min_w mean_j softplus(-y_j w.x_j) + lam |w|^2``.

    ``rows[:size]`` are the coalition's rows; ``w`` (a warm start) is
    updated in place. Strongly convex: a halving line search keeps every
    step a descent.
    """
    d = X.shape[1]
    gradient = np.empty(d)
    hessian = np.empty((d, d))
    trial = np.empty(d)
    current = _coalition_objective(X, y, rows, size, w, lam)
    for _ in range(max_iter):
        for a in range(d):
            gradient[a] = 2.0 * lam * w[a]
            for b in range(d):
                hessian[a, b] = 2.0 * lam if a == b else 0.0
        for r in range(size):
            j = rows[r]
            m = 0.0
            for c in range(d):
                m += w[c] * X[j, c]
            z = y[j] * m
            p = 1.0 / (1.0 + np.exp(z))  # sigma(-z)
            g_scale = -y[j] * p / size
            h_scale = p * (1.0 - p) / size
            for a in range(d):
                gradient[a] += g_scale * X[j, a]
                for b in range(a + 1):
                    hessian[a, b] += h_scale * X[j, a] * X[j, b]
        norm = 0.0
        for a in range(d):
            norm += gradient[a] * gradient[a]
            for b in range(a):
                hessian[b, a] = hessian[a, b]
        if np.sqrt(norm) < tol:
            break
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while True:
            for a in range(d):
                trial[a] = w[a] - scale * step[a]
            value = _coalition_objective(X, y, rows, size, trial, lam)
            if value <= current or scale < 1e-10:
                break
            scale *= 0.5
        for a in range(d):
            w[a] = trial[a]
        current = value


@njit(**_jit_alloc)
def _coalition_values(X, y, X_val, y_val, members, sizes, lam, out):
    d = X.shape[1]
    w = np.empty(d)
    for b in range(members.shape[0]):
        w[:] = 0.0  # the empty coalition keeps the zero model
        if sizes[b] > 0:
            fit_coalition(X, y, members[b], sizes[b], lam, w)
        total = 0.0
        for i in range(X_val.shape[0]):
            m = 0.0
            for c in range(d):
                m += w[c] * X_val[i, c]
            total += softplus(-y_val[i] * m)
        out[b] = -total / X_val.shape[0]


def coalition_values(X, y, X_val, y_val, members, sizes, lam):
    """Negative validation log loss of the model fitted on each coalition.

    ``members[b, :sizes[b]]`` are coalition ``b``'s rows of ``X``; labels
    are in {-1, +1}; an empty coalition gives the zero model.
    """
    out = np.empty(len(sizes))
    _coalition_values(_f64(X), _f64(y), _f64(X_val), _f64(y_val), _i64(members),
                      _i64(sizes), float(lam), out)
    return out
