"""The privacy layer: the one gate between private data and what is released.

Accounting (:mod:`~skdpval.privacy._accounting`), the mechanism of a fit
(calibration, composition, the draws and the report), the secure noise
(ChaCha20, the samplers, the rounded Gaussian's exact law, the grid), the
release arithmetic the kernels call
(clipping and the release on the grid, with an opaque stream), the noise
policies, the threat models and :func:`~skdpval.privacy_spent`. Nothing
outside this package reads the key, draws noise or a secret coin, or
releases on the grid (``tests/test_privacy_gate.py``). It imports nothing
else of skdpval but :mod:`skdpval.exceptions`; every other layer may import
it.
"""

from ._accounting import (chosen_epsilon, gdp_mu, log_delta, mean_release_noise_std,
                          noisy_label_auc_limit)
from ._compression import check_compression, clip, compress, sensitivity, sign_vote
from ._mechanism import (PRIVACY_CONSTRAINTS, PrivacyMechanism, resolve_delta,
                         share_privacy_docs, warn_if_default_epsilon)
from ._noise import (counted_permutations, noise_schedule, released_noise_std,
                     unseen_noise_factor)
from ._secure_noise import (FEDERATED, LABEL_SCORE, LAYERED, PUBLIC_FIT, ROUNDING,
                            WALK)
from ._spent import privacy_spent, step_privacy_report
from ._threat_model import (THREAT_MODEL_CONSTRAINT, OwnerValues, declare_joint,
                            refuse_in_joint_mode, with_threat_model_doc)

__all__ = ["FEDERATED", "LABEL_SCORE", "LAYERED", "PRIVACY_CONSTRAINTS",
           "PUBLIC_FIT", "PrivacyMechanism", "ROUNDING", "THREAT_MODEL_CONSTRAINT",
           "WALK", "OwnerValues", "check_compression", "chosen_epsilon", "clip",
           "compress", "counted_permutations", "declare_joint", "gdp_mu",
           "log_delta", "mean_release_noise_std", "noise_schedule",
           "noisy_label_auc_limit", "privacy_spent", "refuse_in_joint_mode",
           "released_noise_std", "resolve_delta", "sensitivity",
           "share_privacy_docs", "sign_vote", "step_privacy_report",
           "unseen_noise_factor", "warn_if_default_epsilon", "with_threat_model_doc"]
