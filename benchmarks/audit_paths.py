"""The audits of tests/test_audit_paths.py at the claimed noise and halved.

Run from the repository root:

    PYTHONPATH=. python benchmarks/audit_paths.py

Prints one JSON object per audit and noise factor: the lower bound on the
replace-one GDP ``mu`` the audit finds, the claim (what the estimator, or
privacy_spent for the cleaning step, reports), and whether the audit finds
more than the claim (it must at x0.5, must not at x1.0). The noise is scaled
where it is drawn, at every Gaussian draw site at once.
"""

import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import skdpval._federated as federated_module  # noqa: E402
import skdpval._label_quality as label_quality_module  # noqa: E402
import skdpval._walk as walk_module  # noqa: E402
from test_audit import audit  # noqa: E402
from test_audit_paths import AUDITS, N_FITS, claim  # noqa: E402

DRAW_SITES = [(walk_module, "gaussian_noise"), (federated_module, "gaussian_noise"),
              (label_quality_module, "gaussian_noise")]


def main():
    warnings.simplefilter("ignore")
    originals = [getattr(module, name) for module, name in DRAW_SITES]
    for factor in (1.0, 0.5):
        for (module, name), original in zip(DRAW_SITES, originals):
            setattr(module, name, lambda generator, scale, out, original=original:
                    original(generator, factor * scale, out))
        for case, statistic in AUDITS.items():
            start = time.perf_counter()
            bounds = audit(statistic, n_fits=N_FITS)
            print(json.dumps(dict(
                case=case, noise=factor, n_fits=N_FITS, mu_lower=round(bounds.mu, 3),
                claimed_mu=round(claim(case), 3), fails=bool(bounds.mu > claim(case)),
                seconds=round(time.perf_counter() - start, 1))), flush=True)
    for (module, name), original in zip(DRAW_SITES, originals):
        setattr(module, name, original)


if __name__ == "__main__":
    main()
