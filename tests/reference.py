"""A plain-numpy reference of Algorithm 1, written from the seed paper.

Deliberately naive and independent of ``skdpval.kernels._linear``: losses are
vectorised numpy formulas, the utility is recomputed from ``X_val @ theta``
after every step, each party's releases are kept in a list and averaged, and
the values follow the paper's recursive mean (lines 15 and 19).
"""

import numpy as np
from scipy.special import expit, logsumexp, softmax

LOSSES = ("logistic", "multinomial", "squared", "hinge", "squared_hinge",
          "modified_huber", "huber", "perceptron", "epsilon_insensitive",
          "squared_epsilon_insensitive", "pinball", "poisson", "gamma", "tweedie")
# Losses whose loss_param is a power p (the Tweedie family, log link).
TWEEDIE_POWERS = {"poisson": 1.0, "gamma": 2.0}


def loss_and_dloss(loss, margins, target, loss_param=0.1):
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
        value = np.where(a <= loss_param, 0.5 * r ** 2,
                         loss_param * a - 0.5 * loss_param ** 2)
        return np.sum(value), np.clip(r, -loss_param, loss_param)
    if loss == "perceptron":
        z = t * m
        return np.sum(np.maximum(0.0, -z)), np.where(z <= 0, -t, 0.0)
    if loss == "epsilon_insensitive":
        r = m - t
        excess = np.abs(r) - loss_param
        return (np.sum(np.maximum(0.0, excess)),
                np.where(excess > 0, np.sign(r), 0.0))
    if loss == "squared_epsilon_insensitive":
        r = m - t
        excess = np.maximum(0.0, np.abs(r) - loss_param)
        return np.sum(excess ** 2), 2.0 * excess * np.sign(r)
    if loss == "pinball":
        q, r = loss_param, t - m  # r > 0: the prediction is below the target
        return (np.sum(np.where(r >= 0, q * r, (q - 1.0) * r)),
                np.where(r > 0, -q, 1.0 - q))
    if loss in ("poisson", "gamma", "tweedie"):
        # Half Tweedie deviance of mu = exp(m), dropping terms of t alone;
        # derivative by the chain rule, d mu / d m = mu.
        p = TWEEDIE_POWERS.get(loss, loss_param)
        mu = np.exp(m)
        if p == 1.0:
            value = mu - t * np.log(mu)
        elif p == 2.0:
            value = np.log(mu) + t / mu
        else:
            value = mu ** (2 - p) / (2 - p) - t * mu ** (1 - p) / (1 - p)
        return np.sum(value), mu * (mu ** (1 - p) - t * mu ** (-p))
    raise ValueError(loss)


def utility(name, loss, theta, X_val, T_val, labels_val, loss_param=0.1):
    """V(theta) on the validation set."""
    M = X_val @ theta.T
    if name == "neg_loss":
        return -np.mean([loss_and_dloss(loss, M[i], T_val[i], loss_param)[0]
                         for i in range(len(M))])
    if name == "accuracy":
        predicted = (M[:, 0] > 0).astype(int) if M.shape[1] == 1 else M.argmax(1)
        return np.mean(predicted == labels_val)
    predictions = M[:, 0]
    if loss in ("poisson", "gamma", "tweedie"):  # log link
        predictions = np.exp(predictions)
    sse = np.sum((predictions - T_val[:, 0]) ** 2)
    if name == "neg_mse":
        return -sse / len(M)
    if name == "r2":
        return 1 - sse / np.sum((T_val[:, 0] - T_val[:, 0].mean()) ** 2)
    raise ValueError(name)


def algorithm1(X, T, X_val, T_val, labels_val, *, loss, utility_name,
               learning_rate, l2, n_penalized, clip_norm, permutations, noise,
               x_tt, q, weights, loss_param=0.1, basis=None, offsets=None,
               record_level=False, l1=0.0, row_weights=None, grid=None):
    """Semivalue estimates psi of Algorithm 1 for fixed permutations and noise.

    ``noise[t, j]`` is party j's Gaussian noise at permutation t (zeros for no
    noise); ``x_tt[t]`` the weight of the fresh release (1 for i.i.d.).
    With ``basis`` (m, n_params), orthonormal rows: the full gradient is
    projected on it, then clipped and noised in m dimensions
    (``noise[t, j]`` of shape (m,)), and theta moves by ``basis.T`` times the
    released combination.
    With ``offsets``, party j owns rows ``offsets[j]:offsets[j + 1]``: its
    gradient is that of its mean loss (plus the penalty), clipped once, or
    with ``record_level`` each row's gradient (its loss plus the penalty) is
    clipped, the clipped rows are summed, the noise is added to the sum and
    the result divided by the number of rows.
    ``l1`` adds ``l1 * sign(theta)`` on the penalised columns (a
    subgradient of ``l1 ||W||_1``); ``row_weights[r]`` multiplies row r's
    loss gradient (default 1). With ``grid = (gamma, bound)`` the noise is
    integer and a release is ``gamma * (clip(rint(s / gamma), -bound,
    bound) + noise)``, ``s`` the clipped statistic (at record level, the
    sum) on the grid.
    Returns ``(psi, end_utilities)``.
    """
    k, n = permutations.shape
    if offsets is None:
        offsets = np.arange(n + 1)
    n_outputs, n_columns = T.shape[1], X.shape[1]
    releases = [[] for _ in range(n)]
    psi = np.zeros(n)
    burn_in = int(np.floor(k * q))
    end_utilities = []

    def V(theta):
        return utility(utility_name, loss, theta, X_val, T_val, labels_val,
                       loss_param)

    for t in range(1, k + 1):
        theta = np.zeros((n_outputs, n_columns))
        v_before = V(theta)
        for position, j in enumerate(permutations[t - 1]):
            row_gradients = []
            for r in range(offsets[j], offsets[j + 1]):
                _, dloss = loss_and_dloss(loss, theta @ X[r], T[r], loss_param)
                weight = 1.0 if row_weights is None else row_weights[r]
                row_gradients.append(weight * np.outer(dloss, X[r]))

            def penalised_projection(g):
                g = g.copy()
                g[:, :n_penalized] += (l2 * theta[:, :n_penalized]
                                       + l1 * np.sign(theta[:, :n_penalized]))
                return basis @ g.ravel() if basis is not None else g

            def clipped(g):
                return g / max(1.0, np.linalg.norm(g) / clip_norm)

            def release(statistic):
                if grid is None:
                    return statistic + noise[t - 1, j]
                gamma, bound = grid
                on_grid = np.clip(np.rint(statistic / gamma), -bound, bound)
                return gamma * (on_grid + noise[t - 1, j])

            if record_level:
                total = sum(clipped(penalised_projection(g)) for g in row_gradients)
                g_tilde = release(total) / len(row_gradients)
            else:
                g_tilde = release(clipped(penalised_projection(
                    np.mean(row_gradients, axis=0))))
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
    below the bound: what ``skdpval.kernels._orders`` must draw."""
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


# --- a multilayer perceptron (skdpval.kernels._network), written from scikit-learn's formulas ---

def mlp_unpack(theta, sizes):
    """``(coefs, intercepts)`` of a packed ``theta`` (scikit-learn's ``_pack``)."""
    coefs, intercepts, at = [], [], 0
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        coefs.append(theta[at:at + fan_in * fan_out].reshape(fan_in, fan_out))
        at += fan_in * fan_out
    for fan_out in sizes[1:]:
        intercepts.append(theta[at:at + fan_out])
        at += fan_out
    return coefs, intercepts


_HIDDEN = {"identity": (lambda u: u, lambda h: np.ones_like(h)),
           "logistic": (expit, lambda h: h * (1 - h)),
           "tanh": (np.tanh, lambda h: 1 - h ** 2),
           "relu": (lambda u: np.maximum(u, 0), lambda h: (h > 0).astype(float))}


def mlp_outputs(theta, sizes, activation, X):
    """Every layer's outputs (the last before the output's activation)."""
    coefs, intercepts = mlp_unpack(theta, sizes)
    layers = [np.asarray(X, float)]
    for i, (W, b) in enumerate(zip(coefs, intercepts)):
        u = layers[-1] @ W + b
        layers.append(u if i == len(coefs) - 1 else _HIDDEN[activation][0](u))
    return layers


def mlp_objective(theta, sizes, activation, loss, X, T, l2, weights=None):
    """Weighted mean loss + ``l2 / 2 ||W||^2`` and its gradient, by backpropagation."""
    layers = mlp_outputs(theta, sizes, activation, X)
    coefs, _ = mlp_unpack(theta, sizes)
    n = len(X)
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    values, deltas = zip(*(loss_and_dloss(loss, o, t) for o, t in zip(layers[-1], T)))
    delta = np.array(deltas) * w[:, None] / n
    coef_grads, intercept_grads = [], []
    for i in range(len(coefs) - 1, -1, -1):
        coef_grads.insert(0, layers[i].T @ delta)
        intercept_grads.insert(0, delta.sum(axis=0))
        if i > 0:
            delta = (delta @ coefs[i].T) * _HIDDEN[activation][1](layers[i])
    penalty = sum(np.sum(W ** 2) for W in coefs)
    grad = np.concatenate([(g + l2 * W).ravel() for g, W in zip(coef_grads, coefs)]
                          + intercept_grads)
    return np.dot(w, values) / n + 0.5 * l2 * penalty, grad


def clipped_gradient_sum(theta, X, T, offsets, *, loss, l2, n_penalized, clip,
                         row_weights=None, l1=0.0, loss_param=0.1):
    """The private fit's statistic: the sum over parties (rows
    ``offsets[j]:offsets[j + 1]``) of each party's gradient (its rows'
    weighted loss derivatives times the rows, over its row count, plus
    ``l2 theta + l1 sign(theta)`` on the first ``n_penalized`` columns)
    scaled to L2 norm at most ``clip``; a gradient that is not finite adds
    nothing."""
    theta = np.asarray(theta, float)
    w = np.ones(len(X)) if row_weights is None else np.asarray(row_weights, float)
    penalty = np.zeros_like(theta)
    penalty[:, :n_penalized] = (l2 * theta[:, :n_penalized]
                                + l1 * np.sign(theta[:, :n_penalized]))
    total = np.zeros_like(theta)
    for start, stop in zip(offsets[:-1], offsets[1:]):
        gradient = penalty.copy()
        with np.errstate(over="ignore", invalid="ignore"):
            for row in range(start, stop):
                _, dloss = loss_and_dloss(loss, theta @ X[row], T[row], loss_param)
                gradient += w[row] * np.outer(dloss, X[row]) / (stop - start)
            norm = np.sqrt(np.sum(gradient ** 2))
        if not np.isfinite(norm):
            continue
        total += gradient * min(1.0, clip / norm) if norm > 0 else gradient
    return total
