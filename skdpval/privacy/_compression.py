"""Clipping and compression of a release, applied before the noise.

Each option bounds the L2 sensitivity of one release differently (zero-out
adjacency: the party's slot releases pure noise; ``p`` parameters, clip
``c``; replace-one doubles it):

- clipping ``"l2"``: ``|g| <= c``, sensitivity ``c``; ``"coordinate"``:
  every ``|g_j| <= c``, sensitivity ``c sqrt(m)`` over ``m`` released
  coordinates;
- ``("randk", m)``: ``m`` coordinates chosen by a public random mask (drawn
  from ``random_state``, independent of the data, and visible in the
  release anyway): noise is added to those ``m`` coordinates, the others are
  released as exact zeros;
- ``("topk", m)``: the ``m`` largest coordinates, chosen from private data,
  so noise is added to *all* ``p`` coordinates (the positions of the ``m``
  are then hidden too); the sensitivity is that of the clipped vector, as
  keeping ``m`` coordinates never increases a norm;
- ``("quantize", levels)``: every coordinate clipped to ``[-c, c]`` and
  rounded stochastically (unbiased) to ``levels`` evenly spaced values:
  sensitivity ``c sqrt(p)``, whatever the rounding; the rounding coins are
  secret, drawn as the noise is by the fit's privacy mechanism (its ChaCha20
  key, stream kind ``ROUNDING``:
  :meth:`~skdpval.privacy._mechanism.PrivacyMechanism.uniforms`);
- ``"sign"``: the signs of the coordinates, sensitivity ``sqrt(p)``; the
  aggregate of ``T`` releases is the thresholded vote ``sign(sum)`` where
  ``|sum| >= beta T``, else 0 (the fragment's sign aggregation).
"""

from numbers import Integral

import numpy as np

from ._release import clip_l2


def check_compression(compression, n_params):
    """Return ``(kind, amount)``, or raise a ValueError naming the options."""
    if compression is None:
        return None, None
    if compression == "sign":
        return "sign", None
    if (isinstance(compression, tuple) and len(compression) == 2
            and compression[0] in ("randk", "topk", "quantize")
            and isinstance(compression[1], Integral)):
        kind, amount = compression
        if kind in ("randk", "topk") and not 1 <= amount <= n_params:
            raise ValueError(f"compression=({kind!r}, m) needs 1 <= m <= "
                             f"{n_params} (the number of parameters), got {amount}.")
        if kind == "quantize" and amount < 2:
            raise ValueError("compression=('quantize', levels) needs levels >= 2.")
        return kind, int(amount)
    raise ValueError(
        "compression must be None, ('randk', m), ('topk', m), ('quantize', "
        f"levels) or 'sign'; got {compression!r}.")


def sensitivity(compression, clipping, clip_norm, n_params):
    """L2 sensitivity of one release (zero-out one party)."""
    kind, amount = check_compression(compression, n_params)
    if kind == "sign":
        return float(np.sqrt(n_params))
    if kind == "quantize":
        return float(clip_norm * np.sqrt(n_params))
    released = amount if kind in ("randk", "topk") else n_params
    if clipping == "coordinate":
        return float(clip_norm * np.sqrt(released))
    return float(clip_norm)


def clip(g, clipping, clip_norm):
    """Clip a flat gradient: to L2 norm ``clip_norm`` or coordinate-wise.

    What is not finite (an overflow in a private row) becomes zero: the NaN
    coordinates, or under L2 clipping the whole gradient (as the walk's
    :func:`~skdpval.privacy._release.clip_l2` does), whose release is then pure
    noise (the zero-out slot).
    """
    if clipping == "coordinate":
        return np.clip(np.nan_to_num(g, nan=0.0), -clip_norm, clip_norm)
    clipped = np.array(g, dtype=np.float64).reshape(1, -1)
    clip_l2(clipped, clip_norm)
    return clipped.ravel()


def compress(g, compression, clip_norm, mask_rng, coins=None):
    """Compress a clipped flat gradient; return it and the coordinates to noise.

    ``mask_rng`` draws the public random-k mask; ``coins`` (secret: uniforms
    in ``[0, 1)``, one a coordinate) round stochastically (quantization only).
    """
    kind, amount = check_compression(compression, g.size)
    everything = np.ones(g.size, dtype=bool)
    if kind is None:
        return g, everything
    if kind == "sign":
        return np.sign(g), everything
    if kind == "quantize":
        bounded = np.clip(g, -clip_norm, clip_norm)
        step = 2 * clip_norm / (amount - 1)
        position = (bounded + clip_norm) / step
        lower = np.floor(position)
        up = coins < position - lower  # unbiased rounding
        return np.minimum(lower + up, amount - 1) * step - clip_norm, everything
    kept = np.zeros(g.size, dtype=bool)
    if kind == "randk":
        kept[mask_rng.choice(g.size, size=amount, replace=False)] = True
        return np.where(kept, g, 0.0), kept
    kept[np.argsort(-np.abs(g), kind="stable")[:amount]] = True
    return np.where(kept, g, 0.0), everything  # a private support: noise all


def sign_vote(releases, threshold):
    """Aggregate of ``T`` released sign vectors: sign(sum) where |sum| >= beta T."""
    total = np.sum(releases, axis=0)
    return np.where(np.abs(total) >= threshold * len(releases), np.sign(total), 0.0)
