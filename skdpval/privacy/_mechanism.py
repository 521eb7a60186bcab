"""One privacy mechanism per fit: calibration, composition, draws, the report.

Every valuator's template fit (:meth:`skdpval.valuation._base.BaseValuator._fit`) owns
one :class:`PrivacyMechanism`, built from the valuator's privacy parameters
(``epsilon``, ``delta``, ``noise_multiplier``, ``noise_seed``) before any data
is read. The valuator declares the parts it releases (``k`` walk releases,
one label score, ``n_rounds`` federated releases, a private fit of the public
model, Laplace values), each with its clipped statistic's bound and its grid;
the mechanism

- calibrates every part's noise: the Gaussian parts compose exactly in
  Gaussian DP (``mu^2 = sum_i k_i (Delta_i / s_i)^2``), each taking its
  ``share`` of ``mu^2``; ``mu`` comes from ``(epsilon, delta)`` net of the
  sampler's share of delta (:func:`skdpval.privacy._accounting.epsilon_net_of_sampler`),
  or each part's std is ``noise_multiplier`` times its sensitivity;
- draws every part's noise from one secret key, each part from its own
  ChaCha20 stream kind (:mod:`skdpval.privacy._secure_noise`), through the one draw
  site of each law (:meth:`NoiseStream.integers` for every Gaussian draw,
  walks included, :meth:`PrivacyMechanism.release_laplace`); and releases
  them (:mod:`skdpval.privacy._release`): the walks through the release
  stream of :meth:`PrivacyMechanism.noise_stream`, every other part through
  :meth:`PrivacyMechanism.release` and :meth:`PrivacyMechanism.release_each`.
  The mechanism is the only gate: no code outside the privacy layer reads
  the key or releases on the grid (``tests/test_privacy_gate.py``). The key
  is dropped with the mechanism at the end of the fit;
- writes one report schema (:data:`REPORT_KEYS`, plus a ``"details"`` dict of
  what is particular to a valuator) and the same public attributes on every
  valuator (``epsilon_``, ``delta_``, ``noise_multiplier_``, ``n_releases_``,
  ``privacy_unit_``, ``privacy_report_``).

:func:`skdpval.privacy_spent` reads only the reports and, for an unfitted
template, :meth:`PrivacyMechanism.plan` with the same code.
"""

import warnings
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ._accounting import (MAX_SAMPLER_SHARE, add_record_level, chosen_epsilon,
    composed_epsilon, composed_mu, epsilon_net_of_sampler, gaussian_noise_std, gdp_mu,
    largest_supported_epsilon, noisy_label_auc_limit, validation_set_statement)
from ._noise import gaussian_noise, laplace_noise, noise_source
from ._release import release_stream, releases_on_grid
from ._grid import Grid, check_noise_std
from ._secure_noise import (noise_key, rounded_gaussian_eta, sampler_delta, stream_nonce,
    uniform_coins)
from ..exceptions import DefaultEpsilonWarning, NoiseSeedWarning

# delta="auto": this, or 1 / (10 n) for n protected units when that is smaller.
DEFAULT_DELTA = 5e-5

# The privacy parameters every valuator shares, declared once.
PRIVACY_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0.0, None, closed="right"), None,
                StrOptions({"default"})],
    "delta": [Interval(Real, 0.0, 1.0, closed="neither"), StrOptions({"auto"})],
    "noise_multiplier": [Interval(Real, 0.0, None, closed="neither"), None],
    "noise_seed": [Interval(Integral, 0, None, closed="left"), None],
}

# Their documentation, declared once (numpydoc entries, class-docstring indent).
PRIVACY_DOCS = {
    "epsilon": """\
    epsilon : float > 0, np.inf, "default" or None, default="default"
        Privacy budget of everything one protected unit's data goes through
        in a fit. ``np.inf`` adds no privacy noise (no privacy: a reference,
        reported as not private). ``None`` only with ``noise_multiplier``.
        ``"default"`` means 1.0 and warns once per process
        (:class:`~skdpval.exceptions.DefaultEpsilonWarning`); any number,
        1.0 included, is taken as chosen and does not warn.
""",
    "delta": """\
    delta : float in (0, 1) or "auto", default="auto"
        Privacy parameter delta of the guarantee, the sampler's share
        included (``privacy_report_["sampler_delta"]``). ``"auto"`` is
        ``min(5e-5, 1 / (10 n))`` for ``n`` protected units (samples,
        groups, or records at record level; public): the default never
        exceeds ``1 / (10 n)``. A number is taken as given.
""",
    "noise_multiplier": """\
    noise_multiplier : float > 0 or None, default=None
        Noise std of each release divided by its sensitivity (the clip
        bound padded by the grid's rounding), instead of ``epsilon``
        (which must then be None); ``epsilon_`` reports the budget it gives.
""",
    "noise_seed": """\
    noise_seed : int >= 0 or None, default=None
        ``None`` draws the noise from ChaCha20 keyed with 32 bytes of fresh
        OS entropy, so that it stays secret. An int makes the noise
        reproducible (for tests and papers): the seed is in ``repr``,
        ``get_params()`` and every pickle, and a small seed can be found by
        brute force from the output, so a seeded fit is **reported as not
        private** (``privacy_report_["private"]`` False, a warning at fit,
        a leak in :func:`skdpval.privacy_spent`).
""",
}


def share_privacy_docs(cls):
    """Put the shared entries of :data:`PRIVACY_DOCS` into ``cls.__doc__``
    where it has a line ``%(name)s`` (imblearn's ``Substitution``, by hand)."""
    doc = cls.__doc__
    for name, text in PRIVACY_DOCS.items():
        doc = doc.replace(f"    %({name})s\n", text)
    cls.__doc__ = doc
    return cls


def resolve_delta(delta, n_units):
    """``delta``, or for ``"auto"`` ``min(DEFAULT_DELTA, 1 / (10 n_units))``."""
    if isinstance(delta, str):
        return float(min(DEFAULT_DELTA, 1.0 / (10.0 * max(int(n_units), 1))))
    return float(delta)


def check_budget(epsilon, noise_multiplier, adds_noise=True, delta=DEFAULT_DELTA):
    """Exactly one of ``epsilon`` and ``noise_multiplier`` (unless no noise is
    asked for); an ``epsilon`` the calibration supports. Errors name ``np.inf``,
    the one way to turn the noise off."""
    if noise_multiplier is not None and epsilon is not None:
        raise ValueError("Give either epsilon or noise_multiplier, not both: set "
                         "epsilon=None to use noise_multiplier.")
    if noise_multiplier is None and epsilon is None and adds_noise:
        raise ValueError("epsilon is None: give epsilon (np.inf for no privacy "
                         "noise) or noise_multiplier.")
    if adds_noise and delta is not None and epsilon is not None and np.isfinite(epsilon):
        gdp_mu(epsilon, DEFAULT_DELTA if isinstance(delta, str) else delta)


@dataclass
class GaussianPart:
    """A Gaussian release of every party, ``n_releases`` times, on ``grid``."""

    name: str
    kind: int               # the ChaCha20 stream kind of its draws
    n_releases: int         # releases per party
    clip: float             # bound of the clipped statistic (before the grid)
    grid: Grid
    share: float            # its share of mu^2, when calibrated from epsilon
    n_releases_param: str = None  # the parameter that sets n_releases, if any
    noise_std: float = 0.0

    @property
    def sensitivity(self):
        """L2 sensitivity of the rounded statistic, in data units (padded)."""
        return self.grid.gamma * self.grid.sensitivity

    @property
    def mu(self):
        if self.noise_std == 0:
            return np.inf
        return float(np.sqrt(self.n_releases) * self.sensitivity / self.noise_std)

    @property
    def grid_std(self):
        """The noise std in grid units (the sampler draws integers)."""
        return self.noise_std / self.grid.gamma

    @property
    def tv(self):
        """The sampler's total variation from the exact noise, over a party's
        draws: ``eta`` (:func:`~skdpval.privacy._secure_noise.rounded_gaussian_eta`,
        ``(29 sigma + 4) 2^-574``) times the draws."""
        if self.noise_std == 0:
            return 0.0
        eta = rounded_gaussian_eta(self.grid_std)
        return float(self.n_releases * self.grid.dimension * eta)

    def describe(self):
        return {"name": self.name, "law": "rounded Gaussian", "n_releases":
                int(self.n_releases), "dimension": int(self.grid.dimension),
                "clip": float(self.clip), "sensitivity": float(self.sensitivity),
                "noise_std": float(self.noise_std), "mu": self.mu,
                "share": float(self.share), "grid": float(self.grid.gamma),
                "zero_neighbour": bool(np.isfinite(self.grid.bound)),
                "n_releases_param": self.n_releases_param}


@dataclass
class LaplacePart:
    """``n_releases`` values that each depend on one party's data, each
    ``epsilon``-DP by discrete Laplace noise on ``grid``."""

    name: str
    kind: int
    n_releases: int
    sensitivity_bound: float   # the values' sensitivity (before the grid)
    grid: Grid
    epsilon: float

    @property
    def grid_scale(self):
        """The Laplace scale in grid units: exactly ``Delta / epsilon``."""
        return Fraction(int(self.grid.sensitivity)) / Fraction(float(self.epsilon))

    @property
    def scale(self):
        return float(self.grid.gamma * self.grid_scale)

    def describe(self):
        return {"name": self.name, "law": "discrete Laplace",
                "n_releases": int(self.n_releases),
                "sensitivity": float(self.sensitivity_bound),
                "noise_scale": self.scale, "epsilon": float(self.epsilon),
                "epsilon_replace_one": 2 * float(self.epsilon),
                "grid": float(self.grid.gamma)}


class NoiseStream:
    """A Gaussian part's noise, drawn stream by stream from the fit's secret
    key: every Gaussian draw of a fit goes through :meth:`integers` (the one
    draw site of the law, which the audits scale).

    The walks draw from it (:class:`skdpval.walks._waves.SeededDraws`):
    :meth:`draw` fills a buffer with the noise of permutations ``lo .. hi -
    1`` (stream ``(kind, t)`` for permutation ``t``) and returns the
    release stream the walk kernels release from
    (:func:`skdpval.privacy._release.release_stream`). Picklable: it travels
    to Dask workers with the key, which it keeps private (no public
    attribute, not in its ``repr``).
    """

    def __init__(self, key, part):
        self._key = key
        self.kind = part.kind
        self.grid = part.grid
        self.std = part.grid_std
        self.has_noise = part.noise_std > 0

    def __repr__(self):
        return f"NoiseStream(kind={self.kind}, std={self.std!r} grid steps)"

    def integers(self, lo, hi, out):
        """Rounded Gaussian integers of streams ``lo .. hi - 1`` into ``out``
        (``(hi - lo, ...)``, C-contiguous), in grid units; returns ``out``."""
        gaussian_noise(self._key, self.kind, lo, hi, self.std, out.reshape(hi - lo, -1))
        return out

    def draw(self, lo, hi, releases):
        """The release stream of walks ``lo .. hi - 1``: their noise drawn into
        ``releases`` ``(hi - lo, n_parties, ...)`` (None, or a part without
        noise: a stream without noise)."""
        if releases is None or not self.has_noise:
            return release_stream()
        return release_stream(self.integers(lo, hi, releases), self.grid)


# Every valuator's privacy_report_ has exactly these keys.
REPORT_KEYS = (
    "unit", "adjacency", "threat_model", "parts", "n_releases", "clip_norm",
    "sensitivity", "noise_std", "noise_multiplier", "mu", "pure_epsilons",
    "epsilon", "epsilon_replace_one", "delta", "sampler_delta", "sampler_tv",
    "max_noisy_label_auc", "amplification", "method", "noise_source",
    "private", "leaks", "validation_set", "details")


class PrivacyMechanism:
    """The privacy of one fit: its parts, their noise, the draws and the report.

    Parameters are the valuator's, as given (``epsilon`` may be
    ``"default"``, ``delta`` ``"auto"``, or None for a valuator of pure-DP
    parts only); ``adds_noise=False`` is a fit
    without privacy noise (``epsilon=np.inf``, or a valuator's own no-noise
    option).
    """

    def __init__(self, *, epsilon, delta, noise_multiplier=None, noise_seed=None,
                 adds_noise=True):
        self.epsilon = chosen_epsilon(epsilon)
        self.requested_delta = delta
        self.noise_multiplier = noise_multiplier
        self.noise_seed = noise_seed
        self.adds_noise = bool(adds_noise) and not (
            noise_multiplier is None and self.epsilon is not None
            and not np.isfinite(self.epsilon))
        check_budget(self.epsilon, noise_multiplier, self.adds_noise, delta)
        # A valuator without a delta parameter releases pure-DP parts only.
        self.delta = (None if isinstance(delta, str) else
                      0.0 if delta is None else float(delta))
        self.parts = []
        self.unit, self.n_units = "sample", None
        self.leaks, self.details = [], {}
        # Who may see the output: "central" (anyone: every output may be
        # published) unless a valuator says otherwise.
        self.threat_model = "central: every output may be published"
        self._record_sizes = None
        self._key = None

    @classmethod
    def of(cls, estimator, adds_noise=True):
        """The mechanism of a fit of ``estimator``, from its parameters."""
        params = estimator.get_params(deep=False)
        return cls(epsilon=params.get("epsilon"), delta=params.get("delta"),
                   noise_multiplier=params.get("noise_multiplier"),
                   noise_seed=params.get("noise_seed"), adds_noise=adds_noise)

    # --- the parts --------------------------------------------------------------

    def protect(self, unit, n_units, record_sizes=None, party="group"):
        """Whom the guarantee protects: ``n_units`` of ``unit`` (public);
        ``record_sizes`` (records per ``party``) at record level. Resolves
        ``delta="auto"``."""
        self.unit, self.n_units = unit, int(n_units)
        self.details["n_units"] = int(n_units)
        self._record_sizes = (None if record_sizes is None
                              else (np.asarray(record_sizes), party))
        if self.delta is None:
            self.delta = resolve_delta(self.requested_delta, n_units)

    def gaussian(self, name, kind, *, n_releases, clip, dimension,
                 zero_neighbour=True, share=1.0, n_releases_param=None):
        """Declare a Gaussian part: every party releases ``n_releases``
        statistics of ``dimension`` coordinates, of L2 norm at most ``clip``
        (``zero_neighbour``: a zeroed-out party's statistic is 0; else any two
        neighbouring statistics are ``clip`` apart). Returns the part; its
        ``noise_std`` is set by :meth:`calibrate`."""
        part = GaussianPart(name, kind, int(n_releases), float(clip),
                            Grid(clip, dimension, zero_neighbour), float(share),
                            n_releases_param)
        self.parts.append(part)
        return part

    def laplace(self, name, kind, *, n_releases, sensitivity, finer=0,
                parameters="the parameters"):
        """Declare a part of ``n_releases`` values, each ``epsilon``-DP by
        discrete Laplace noise for an L1 ``sensitivity`` (``epsilon`` the
        mechanism's, per value; pure DP); ``parameters`` name what set the
        sensitivity, for the error when the scale is not a positive float."""
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            scale = np.float64(sensitivity) / np.float64(self.epsilon)
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"{parameters} give a Laplace scale of {float(scale)!r}: "
                             "it must be finite and > 0.")
        part = LaplacePart(name, kind, int(n_releases), float(sensitivity),
                           Grid(sensitivity, 1, zero_neighbour=False, finer=finer),
                           float(self.epsilon))
        self.parts.append(part)
        return part

    @property
    def _gaussian_parts(self):
        return [p for p in self.parts if isinstance(p, GaussianPart)]

    # --- calibration ------------------------------------------------------------

    def calibrate(self):
        """Set every Gaussian part's noise std; refuse a budget whose
        sampler share of delta is out of reach (before any draw)."""
        parts = self._gaussian_parts
        if not parts:
            return self
        if self.delta is None:
            raise RuntimeError("PrivacyMechanism.protect must come before calibrate.")
        if not self.adds_noise:
            for part in parts:
                part.noise_std = 0.0
            return self
        if self.noise_multiplier is not None:
            for part in parts:
                part.noise_std = self._checked(self.noise_multiplier * part.sensitivity,
                                               part, "noise_multiplier")
            self._check_sampler_share()
            return self
        shares = np.array([p.share for p in parts], dtype=float)
        if np.any(shares <= 0) or not np.isclose(shares.sum(), 1.0, rtol=1e-12):
            raise ValueError(f"the parts' shares of mu^2 must be > 0 and sum to 1, "
                             f"got {shares.tolist()}.")
        # A provisional mu at half of delta gives noise at least the final
        # one, so its tables, and so the sampler's share, bound the final ones.
        self._set_stds(gdp_mu(self.epsilon, (1 - 0.5) * self.delta))
        provisional = sampler_delta(sum(p.tv for p in parts), 1, self.epsilon)
        self._check_sampler_share(provisional)
        self._set_stds(gdp_mu(self.epsilon, self.delta - provisional))
        return self

    def reclip(self, part, clip, dimension):
        """Give a declared Gaussian ``part`` its clip bound (and dimension) and
        calibrate again: a part whose bound depends on what an earlier part
        released (the walk's clip norm on a privately fitted line). A part's
        noise over its grid step does not depend on its clip, so the other
        parts' noise (already drawn) stays as it was: checked."""
        others = [(other, other.noise_std) for other in self._gaussian_parts
                  if other is not part]
        part.clip = float(clip)
        part.grid = Grid(clip, dimension, bool(np.isfinite(part.grid.bound)))
        self.calibrate()
        for other, noise_std in others:
            if not np.isclose(other.noise_std, noise_std, rtol=1e-9, atol=0):
                raise RuntimeError(f"the noise of {other.name!r} changed on "
                                   "recalibration")

    def _set_stds(self, mu):
        for part in self._gaussian_parts:
            part_mu = mu * np.sqrt(part.share)
            part.noise_std = self._checked(
                gaussian_noise_std(part.n_releases, part.sensitivity, part_mu), part,
                "epsilon")

    @staticmethod
    def _checked(noise_std, part, source):
        return check_noise_std(noise_std, part.grid,
                               f"{source} and a clip bound of {part.clip!r}")

    def _check_sampler_share(self, share=None):
        """Refuse when the sampler's share of delta exceeds what is allowed."""
        tv = sum(p.tv for p in self._gaussian_parts)
        epsilon = (self.epsilon if self.epsilon is not None else
                   epsilon_net_of_sampler(self.gaussian_mu, [], tv, self.delta))
        if share is None:
            share = (sampler_delta(tv, 1, epsilon) if np.isfinite(epsilon)
                     else np.inf)
        if share <= MAX_SAMPLER_SHARE * self.delta:
            return
        draws = sum(p.n_releases * p.grid.dimension for p in self._gaussian_parts)
        largest = largest_supported_epsilon(tv, self.delta)
        asked = ("epsilon=" + repr(self.epsilon) if self.epsilon is not None
                 else "noise_multiplier=" + repr(self.noise_multiplier))
        raise ValueError(
            f"{asked} at delta={self.delta!r} is out of reach of the noise "
            f"sampler: its {draws} draws per {self.unit} are each within "
            f"{tv / draws:.2g} (total variation) of the exact noise, which adds "
            f"(1 + e^epsilon) x {tv:.3g} to delta, more than half of delta. With "
            f"these releases the sampler supports epsilon up to {largest:.3g}: "
            f"lower epsilon (or raise noise_multiplier), release fewer times "
            f"(e.g. fewer n_permutations or n_rounds), or raise delta.")

    # --- the draws --------------------------------------------------------------

    def _secret_key(self):
        """The secret ChaCha20 key of this fit (one for all its parts)."""
        if self._key is None:
            self._key = noise_key(self.noise_seed)
        return self._key

    def noise_stream(self, part):
        """``part``'s noise as a :class:`NoiseStream` (the walks draw from it:
        picklable, it travels to Dask workers)."""
        return NoiseStream(self._secret_key(), part)

    def draw(self, part, lo, hi, out):
        """Rounded Gaussian integers of ``part`` for streams ``lo .. hi - 1``
        into ``out`` (``(hi - lo, ...)``), in its grid's units."""
        return self.noise_stream(part).integers(lo, hi, out)

    def release(self, part, statistics, stream=0):
        """``statistics`` (1-D) released once on ``part``'s grid with its noise
        (stream ``stream``); without noise, unchanged."""
        statistics = np.ascontiguousarray(statistics, dtype=np.float64)
        if part.noise_std == 0:
            return statistics.copy()
        m = self.draw(part, stream, stream + 1, np.empty((1, len(statistics))))
        return releases_on_grid(statistics, m[0], part.grid.gamma, part.grid.bound,
                                np.empty(len(statistics)))

    def release_each(self, part, statistics, stream=0):
        """Each party's ``statistics[i]`` (1-D, at most the part's dimension
        coordinates) released on ``part``'s grid with the noise of stream
        ``stream``: party ``i`` draws the ``i``-th block of ``dimension``
        numbers of the stream and uses its first ``len(statistics[i])``
        (fewer coordinates: a random-k release's); without noise, unchanged."""
        statistics = [np.ascontiguousarray(s, dtype=np.float64) for s in statistics]
        if part.noise_std == 0:
            return [s.copy() for s in statistics]
        dimension = part.grid.dimension
        m = self.draw(part, stream, stream + 1,
                      np.empty((1, len(statistics) * dimension)))
        m = m.reshape(len(statistics), dimension)
        return [releases_on_grid(s, m[i, :len(s)], part.grid.gamma, part.grid.bound,
                                 np.empty(len(s)))
                for i, s in enumerate(statistics)]

    def uniforms(self, kind, stream, size):
        """``size`` secret uniforms in ``[0, 1)`` from the fit's key, stream
        ``(kind, stream)`` (:func:`~skdpval.privacy._secure_noise.uniform_coins`):
        secret randomness that is not noise (the federated rounding coins,
        kind ``ROUNDING``), reproducible with ``noise_seed`` as the noise is."""
        return uniform_coins(self._secret_key(), stream_nonce(kind, stream), size)

    def release_laplace(self, part, values):
        """``values`` released on ``part``'s grid with discrete Laplace noise."""
        noise = laplace_noise(self._secret_key(), part.kind, part.grid_scale,
                              len(values))
        return releases_on_grid(np.ascontiguousarray(values, dtype=np.float64),
                                noise.astype(np.float64), part.grid.gamma,
                                part.grid.bound, np.empty(len(values)))

    # --- the guarantee ------------------------------------------------------------

    @property
    def gaussian_mu(self):
        return composed_mu([(p.mu, 1) for p in self._gaussian_parts])

    @property
    def pure_epsilons(self):
        return [(p.epsilon, p.n_releases) for p in self.parts
                if isinstance(p, LaplacePart)]

    def guarantee(self):
        """``(mu, epsilon, epsilon_replace_one, sampler_tv)`` of the fit."""
        gaussian = self._gaussian_parts
        if not self.adds_noise:
            return np.inf, np.inf, np.inf, 0.0
        tv = float(sum(p.tv for p in gaussian))
        mu = self.gaussian_mu
        pure = self.pure_epsilons
        if gaussian:
            epsilon = epsilon_net_of_sampler(mu, pure, tv, self.delta)
            replace_one = epsilon_net_of_sampler(
                2 * mu, [(2 * e, c) for e, c in pure], tv, self.delta)
        else:
            epsilon = composed_epsilon(0.0, pure, self.delta)
            replace_one = composed_epsilon(0.0, [(2 * e, c) for e, c in pure],
                                           self.delta)
        return composed_mu([(mu, 1)], pure), epsilon, replace_one, tv

    def leak(self, text):
        if text not in self.leaks:
            self.leaks.append(text)

    def report(self, n_unprotected):
        """The report (:data:`REPORT_KEYS`) of this fit."""
        mu, epsilon, replace_one, tv = self.guarantee()
        primary = self.parts[-1] if self.parts else None
        leaks = list(self.leaks)
        if self.adds_noise and self.noise_seed is not None:
            leaks.insert(0, f"noise_seed={self.noise_seed!r} makes the noise "
                            "reproducible: the seed is in repr, get_params() and "
                            "every pickle, and a small seed is found from the "
                            "output by brute force; the fit is not private")
        if not self.adds_noise:
            leaks.insert(0, "no privacy noise (epsilon=np.inf or noise='none'): "
                            "the output is not private")
        noise_std = getattr(primary, "noise_std", getattr(primary, "scale", 0.0))
        sensitivity = getattr(primary, "sensitivity",
                              getattr(primary, "sensitivity_bound", 0.0))
        report = {
            "unit": self.unit,
            "adjacency": (f"zero-out one {self.unit} (n public: the {self.unit}'s "
                          "slot releases pure noise); epsilon_replace_one is for "
                          f"replacing one {self.unit}'s data"),
            "threat_model": self.threat_model,
            "parts": [p.describe() for p in self.parts],
            "n_releases": int(getattr(primary, "n_releases", 0)),
            "clip_norm": float(getattr(primary, "clip", sensitivity)),
            "sensitivity": float(sensitivity),
            "noise_std": float(noise_std),
            "noise_multiplier": (float(noise_std / sensitivity)
                                 if sensitivity else np.inf),
            "mu": float(mu),
            "pure_epsilons": [(float(e), int(c)) for e, c in self.pure_epsilons],
            "epsilon": float(epsilon),
            "epsilon_replace_one": float(replace_one),
            "delta": float(self.delta) if self.adds_noise else float(self.delta or 0),
            "sampler_delta": (float(sampler_delta(tv, 1, epsilon))
                              if np.isfinite(epsilon) else 0.0),
            "sampler_tv": float(tv),
            "max_noisy_label_auc": (noisy_label_auc_limit(mu) if np.isfinite(mu)
                                    else 1.0),
            "amplification": "none: every party releases every time (no subsampling)",
            "method": ("none: no privacy noise" if not self.adds_noise else
                       "exact Gaussian DP of the parts' adaptive Gaussian releases, "
                       "composed in mu^2 (Dong, Roth and Su 2022; Balle and Wang "
                       "2018), pure-DP parts through randomized response; delta "
                       "includes the sampler's share (1 + e^eps) sampler_tv"),
            "noise_source": noise_source(self.noise_seed, self.adds_noise),
            "private": bool(self.adds_noise and not leaks),
            "leaks": leaks,
            "validation_set": validation_set_statement(n_unprotected),
            "details": dict(self.details),
        }
        if self._record_sizes is not None and self.adds_noise:
            sizes, party = self._record_sizes
            add_record_level(report, sizes, party)
        return report

    def write(self, estimator, n_unprotected):
        """Set the public privacy attributes of ``estimator`` and warn about a
        seeded fit. The key is dropped: a fitted estimator keeps no secret."""
        report = self.report(n_unprotected)
        estimator.privacy_report_ = report
        estimator.epsilon_ = report["epsilon"]
        estimator.delta_ = report["delta"]
        estimator.noise_multiplier_ = report["noise_multiplier"]
        estimator.n_releases_ = report["n_releases"]
        estimator.privacy_unit_ = report["unit"]
        self._key = None
        if self.adds_noise and self.noise_seed is not None:
            warnings.warn(
                f"{type(estimator).__name__}(noise_seed={self.noise_seed!r}): the "
                "noise is reproducible and the seed is public (repr, get_params, "
                "pickles): this fit is not private. Leave noise_seed=None for "
                "private output.", NoiseSeedWarning, stacklevel=4)
        return report

    # --- planning without data (privacy_spent of unfitted templates) ---------------

    @classmethod
    def plan(cls, params, parts, n_units=1, adds_noise=True):
        """``(mus, sampler_tv, delta)`` of a fit with parameters ``params`` whose
        parts are laid out as ``parts`` (dicts of :meth:`GaussianPart.describe`,
        e.g. from a fitted sibling's report): ``mus`` is each part's ``mu``, in
        the order of ``parts``, from the same calibration as the fit, so a
        planned fit reports the parts a fitted one does. ``n_units`` for ``delta="auto"``
        defaults to 1, which gives its cap (conservative: the largest delta,
        so the largest mu)."""
        mechanism = cls(epsilon=params.get("epsilon"), delta=params.get("delta"),
                        noise_multiplier=params.get("noise_multiplier"),
                        noise_seed=params.get("noise_seed"), adds_noise=adds_noise)
        mechanism.protect("sample", n_units)
        for part in parts:
            if part.get("law") != "rounded Gaussian":
                raise ValueError("its budget depends on the data (parts other than "
                                 "Gaussian releases, e.g. one Laplace value per "
                                 "other party). Count its fits one by one.")
            count_param = part.get("n_releases_param")
            n_releases = params[count_param] if count_param else part["n_releases"]
            mechanism.gaussian(part["name"], 0, n_releases=n_releases, clip=1.0,
                               dimension=part["dimension"],
                               zero_neighbour=part["zero_neighbour"],
                               share=part["share"])
        mechanism.calibrate()
        _, _, _, tv = mechanism.guarantee()
        return [part.mu for part in mechanism.parts], tv, mechanism.delta


def primary_release_statement(report, text):
    """Add what the primary release is, in words, to ``report["details"]``."""
    report["details"]["release"] = text


# Whether the default epsilon has warned in this process (it warns once).
_default_epsilon_warned = False


def warn_if_default_epsilon(estimator, *, delta=None, stacklevel=2):
    """Warn, once per process, that ``estimator`` runs at its default epsilon.

    Quiet when the estimator adds no noise (``noise="none"``), is given a
    ``noise_multiplier`` instead of a budget, or has any ``epsilon`` other
    than ``"default"``: a number the user wrote, even 1.0, is a choice.

    Parameters
    ----------
    estimator : estimator object
        Has an ``epsilon`` parameter with a default, and ``delta``.
    delta : float, default=None
        The fit's own delta (``delta="auto"`` resolved for its number of
        protected units): quoted, with the limit at it. None: the parameter,
        ``"auto"`` read as its cap (5e-5).
    stacklevel : int, default=2
        Which frame the warning points at (see the module docstring).

    Returns
    -------
    fired : bool
    """
    global _default_epsilon_warned
    params = estimator.get_params(deep=False)
    left_at_default = (isinstance(params["epsilon"], str)
                       and params["epsilon"] == "default")
    no_noise = isinstance(params.get("noise"), str) and params["noise"] == "none"
    if (_default_epsilon_warned or no_noise or not left_at_default
            or params.get("noise_multiplier") is not None):
        return False
    _default_epsilon_warned = True
    epsilon = chosen_epsilon(params["epsilon"])
    if delta is None:
        delta = params["delta"]
    if isinstance(delta, str):  # "auto": its cap, before n is known
        delta = DEFAULT_DELTA
    ceilings = ", ".join(
        f"epsilon={e:g} allows {noisy_label_auc_limit(gdp_mu(e, delta)):.3f}"
        for e in (3.0, 10.0))
    warnings.warn(
        f"{type(estimator).__name__} runs at the default epsilon={epsilon:g} "
        f"(delta={delta:g}): at this budget no method can find flipped labels "
        f"with an expected ROC AUC above "
        f"{noisy_label_auc_limit(gdp_mu(epsilon, delta)):.3f}. Set epsilon "
        f"explicitly (epsilon={epsilon:g} keeps this budget without this "
        f"warning; {ceilings}); privacy_report_['max_noisy_label_auc'] "
        "gives the ceiling of any budget. (Shown once per process.)",
        DefaultEpsilonWarning, stacklevel=stacklevel + 1)
    return True
