"""A plain-numpy reference of Algorithm 1, written from the seed paper.

Deliberately naive and independent of ``skdpval._kernels``: losses are
vectorised numpy formulas, the utility is recomputed from ``X_val @ theta``
after every step, each party's releases are kept in a list and averaged, and
the values follow the paper's recursive mean (lines 15 and 19).
"""

import numpy as np
from scipy.special import expit, logsumexp, softmax

LOSSES = ("logistic", "multinomial", "squared", "hinge", "squared_hinge",
          "modified_huber", "huber")


def loss_and_dloss(loss, margins, target, huber_epsilon=0.1):
    """Loss of one sample and its derivative with respect to the margins."""
    m, t = np.asarray(margins, float), np.asarray(target, float)
    if loss == "logistic":
        return np.sum(np.logaddexp(0.0, -t * m)), -t * expit(-t * m)
    if loss == "multinomial":
        return logsumexp(m) - t @ m, softmax(m) - t
    if loss == "squared":
        return np.sum(0.5 * (m - t) ** 2), m - t
    if loss == "hinge":
        z = t * m
        return np.sum(np.maximum(0.0, 1.0 - z)), np.where(z < 1, -t, 0.0)
    if loss == "squared_hinge":
        h = np.maximum(0.0, 1.0 - t * m)
        return np.sum(h ** 2), -2.0 * t * h
    if loss == "modified_huber":
        z = t * m
        value = np.where(z >= 1, 0.0, np.where(z >= -1, (1 - z) ** 2, -4 * z))
        slope = np.where(z >= 1, 0.0, np.where(z >= -1, -2 * (1 - z), -4.0))
        return np.sum(value), slope * t
    if loss == "huber":
        r = m - t
        a = np.abs(r)
        value = np.where(a <= huber_epsilon, 0.5 * r ** 2,
                         huber_epsilon * a - 0.5 * huber_epsilon ** 2)
        return np.sum(value), np.clip(r, -huber_epsilon, huber_epsilon)
    raise ValueError(loss)


def utility(name, loss, theta, X_val, T_val, labels_val, huber_epsilon=0.1):
    """V(theta) on the validation set."""
    M = X_val @ theta.T
    if name == "neg_loss":
        return -np.mean([loss_and_dloss(loss, M[i], T_val[i], huber_epsilon)[0]
                         for i in range(len(M))])
    if name == "accuracy":
        predicted = (M[:, 0] > 0).astype(int) if M.shape[1] == 1 else M.argmax(1)
        return np.mean(predicted == labels_val)
    sse = np.sum((M[:, 0] - T_val[:, 0]) ** 2)
    if name == "neg_mse":
        return -sse / len(M)
    if name == "r2":
        return 1 - sse / np.sum((T_val[:, 0] - T_val[:, 0].mean()) ** 2)
    raise ValueError(name)


def algorithm1(X, T, X_val, T_val, labels_val, *, loss, utility_name,
               learning_rate, l2, n_penalized, clip_norm, permutations, noise,
               x_tt, q, weights, huber_epsilon=0.1, basis=None, grid=None):
    """Semivalue estimates psi of Algorithm 1 for fixed permutations and noise.

    ``noise[t, j]`` is party j's Gaussian noise at permutation t (zeros for no
    noise); ``x_tt[t]`` the weight of the fresh release (1 for i.i.d.).
    With ``basis`` (m, n_params), orthonormal rows: the full gradient is
    projected on it, then clipped and noised in m dimensions
    (``noise[t, j]`` of shape (m,)), and theta moves by ``basis.T`` times the
    released combination. With ``grid = (gamma, bound)`` the noise is
    integer and a release is ``gamma * (clip(rint(g_hat / gamma), -bound,
    bound) + noise)`` (the rounded statistic on the grid).
    Returns ``(psi, end_utilities)``.
    """
    k, n = permutations.shape
    n_outputs, n_columns = T.shape[1], X.shape[1]
    releases = [[] for _ in range(n)]
    psi = np.zeros(n)
    burn_in = int(np.floor(k * q))
    end_utilities = []

    def V(theta):
        return utility(utility_name, loss, theta, X_val, T_val, labels_val,
                       huber_epsilon)

    for t in range(1, k + 1):
        theta = np.zeros((n_outputs, n_columns))
        v_before = V(theta)
        for position, j in enumerate(permutations[t - 1]):
            _, dloss = loss_and_dloss(loss, theta @ X[j], T[j], huber_epsilon)
            g = np.outer(dloss, X[j])
            g[:, :n_penalized] += l2 * theta[:, :n_penalized]
            if basis is not None:
                g = basis @ g.ravel()
            g_hat = g / max(1.0, np.linalg.norm(g) / clip_norm)
            if grid is None:
                g_tilde = g_hat + noise[t - 1, j]
            else:
                gamma, bound = grid
                on_grid = np.clip(np.rint(g_hat / gamma), -bound, bound)
                g_tilde = gamma * (on_grid + noise[t - 1, j])
            past = (np.mean(releases[j], axis=0) if releases[j]
                    else np.zeros_like(g_tilde))
            released = x_tt[t - 1] * g_tilde + (1 - x_tt[t - 1]) * past
            releases[j].append(g_tilde)
            if basis is not None:
                released = (basis.T @ released).reshape(theta.shape)
            theta = theta - learning_rate * released
            v_after = V(theta)
            if t > burn_in:
                tau = t - burn_in
                psi[j] = ((tau - 1) / tau * psi[j]
                          + weights[position] * (v_after - v_before) / tau)
            v_before = v_after
        end_utilities.append(v_before)
    return psi, np.array(end_utilities)


def xoshiro_permutation(words, n):
    """Fisher-Yates driven by xoshiro256** (Blackman and Vigna's reference
    code, in Python integers), the top bits of an output rejected until
    below the bound: what ``skdpval._orders`` must draw."""
    mask = (1 << 64) - 1
    s = [int(w) for w in words]
    if not any(s):
        s[0] = 1
    rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & mask

    def next_output():
        result = (rotl((s[1] * 5) & mask, 7) * 9) & mask
        t = (s[1] << 17) & mask
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    order = list(range(n))
    for i in range(n - 1, 0, -1):
        bits = i.bit_length()  # of the largest value, i
        while True:
            j = next_output() >> (64 - bits)
            if j <= i:
                break
        order[i], order[j] = order[j], order[i]
    return order
