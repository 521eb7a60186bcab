"""Privacy audits and their mutation table: prints one JSON object per case.

Run from the repository root:

    python benchmarks/audit.py

For each audit of tests/test_audit.py, the lower bounds it finds (on the
GDP ``mu`` of a replace-one pair, and the epsilon that implies at delta
5e-5; for the Laplace release, on its pure epsilon) at the claimed noise and
with the noise halved where it is drawn, next to the claim. ``fails`` says
whether the audit then finds more than the claim. The Laplace release's
calibration audit reports the measured noise scale over the claimed one.
"""

import json
import os
import sys
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import skdpval.privacy._mechanism as mechanism_module  # noqa: E402
from skdpval.privacy._accounting import gdp_epsilon  # noqa: E402
from test_audit import (  # noqa: E402
    DELTA,
    GAUSSIAN_AUDITS,
    N_FITS,
    audit,
    claimed_mu,
    layered_fit,
    layered_noise_scale,
    layered_statistic,
    scaled_draw,
)


def emit(**case):
    print(json.dumps(case), flush=True)


@contextmanager
def scaled(draw_site, factor):
    module, name = draw_site
    original = getattr(module, name)
    setattr(module, name, scaled_draw(original, factor))
    try:
        yield
    finally:
        setattr(module, name, original)


def main():
    claim = claimed_mu()
    for name, entry in GAUSSIAN_AUDITS.items():
        sites = [None] + ([entry.draw_site] if entry.draw_site else [])
        for site in sites:
            factor = 1.0 if site is None else 0.5
            with scaled(site or entry.draw_site or (mechanism_module, "laplace_noise"),
                        factor):
                bounds = audit(entry.fit_statistic)
            emit(case=name, noise=factor, n_fits=N_FITS, mu_lower=round(bounds.mu, 3),
                 claimed_mu=round(claim, 3),
                 epsilon_lower=round(gdp_epsilon(max(bounds.mu, 0.0), DELTA), 3),
                 claimed_epsilon=round(gdp_epsilon(claim, DELTA), 3),
                 fails=bool(bounds.mu > claim))
    claimed = layered_fit(True, 0).privacy_report_["parts"][0]["epsilon_replace_one"]
    for factor in (1.0, 0.5):
        with scaled((mechanism_module, "laplace_noise"), factor):
            bounds = audit(layered_statistic, n_fits=N_FITS // 2, delta=0.0, pure=True)
            measured, scale = layered_noise_scale()
        emit(case="LayeredShapleyValuator", noise=factor, n_fits=N_FITS // 2,
             epsilon_lower=round(bounds.epsilon, 3), claimed_epsilon=claimed,
             fails=bool(bounds.epsilon > claimed))
        emit(case="LayeredShapleyValuator calibration", noise=factor,
             measured_over_claimed_scale=round(measured / scale, 3),
             fails=bool(not 0.8 < measured / scale < 1.25))


if __name__ == "__main__":
    main()
