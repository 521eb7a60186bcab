"""The audits of tests/test_audit_paths.py at the claimed noise and halved.

Run from the repository root:

    PYTHONPATH=. python benchmarks/audit_paths.py

Prints one JSON object per audit and noise factor: the lower bound on the
replace-one GDP ``mu`` the audit finds, the claim (what the estimator, or
privacy_spent for the cleaning step, reports), and whether the audit finds
more than the claim (it must at x0.5, must not at x1.0). The noise is scaled
where it is drawn: every module of the package that holds
:func:`skdpval.privacy._noise.gaussian_noise` (the privacy mechanism's, where
every Gaussian draw is made: the walks', which the network walks share, the
federated rounds and the label score) gets a wrapper that scales its ``std``
argument, found by name in the function's own signature.
"""

import functools
import importlib
import inspect
import json
import os
import pkgutil
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import skdpval  # noqa: E402
from skdpval.privacy import _noise
from test_audit import audit  # noqa: E402
from test_audit_paths import AUDITS, N_FITS, claim  # noqa: E402

DRAW = _noise.gaussian_noise
# The sites the audits must reach; a rename or a new import path fails here.
EXPECTED_SITES = {"skdpval.privacy._mechanism"}


def draw_sites():
    """Every module of skdpval whose global ``gaussian_noise`` is the draw."""
    sites = []
    for info in pkgutil.walk_packages(skdpval.__path__, "skdpval."):
        module = importlib.import_module(info.name)
        sites += [(module, name) for name, value in vars(module).items()
                  if value is DRAW]
    missing = EXPECTED_SITES - {module.__name__ for module, _ in sites}
    assert not missing, f"no gaussian_noise to scale in {sorted(missing)}"
    return sites


def scaled(factor):
    """The draw with its ``std`` (by name, however it is passed) times ``factor``."""
    signature = inspect.signature(DRAW)

    @functools.wraps(DRAW)
    def draw(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.arguments["std"] = factor * bound.arguments["std"]
        return DRAW(*bound.args, **bound.kwargs)
    return draw


def main(cases=None):
    """Every audit (or the ``cases`` named: ``python benchmarks/audit_paths.py
    NAME ...``) at the claimed noise and at half of it."""
    warnings.simplefilter("ignore")
    sites = draw_sites()
    for factor in (1.0, 0.5):
        for module, name in sites:
            setattr(module, name, scaled(factor))
        for case, statistic in AUDITS.items():
            if cases and case not in cases:
                continue
            start = time.perf_counter()
            bounds = audit(statistic, n_fits=N_FITS)
            print(json.dumps(dict(
                case=case, noise=factor, n_fits=N_FITS, mu_lower=round(bounds.mu, 3),
                claimed_mu=round(claim(case), 3), fails=bool(bounds.mu > claim(case)),
                seconds=round(time.perf_counter() - start, 1))), flush=True)
    for module, name in sites:
        setattr(module, name, DRAW)


if __name__ == "__main__":
    main(sys.argv[1:])
