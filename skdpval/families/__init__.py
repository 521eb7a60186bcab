"""Model families: how a scikit-learn estimator's objective reaches the kernels.

A family is one module with a :class:`Family` registered for the estimators
it reads (:func:`register_family`): the linear models
(:mod:`~skdpval.families.linear`) and the multilayer perceptrons
(:mod:`~skdpval.families.network`). The parties' layout lives here too
(:func:`prepare_parties`). Imports the kernels and the privacy layer; the
walks and the estimators import it.
"""

from ._base import (Family, FitProblem, Objective, Refused, View,
                    check_sample_weight, family_of, one_blas_thread, refuse,
                    register_family, registered)
from ._parties import (Parties, call_on_private_data, check_classes_parameter,
                       check_public_targets, check_validation_features,
                       flush_subnormals, prepare_parties, split_pipeline,
                       standardize_by_validation, validate_private_data)
from .linear import LinearFamily, check_basis
from .network import NetworkFamily

__all__ = ["Family", "FitProblem", "LinearFamily", "NetworkFamily", "Objective",
           "Parties", "Refused", "View", "call_on_private_data",
           "check_basis", "check_classes_parameter", "check_public_targets",
           "check_sample_weight", "check_validation_features", "family_of",
           "flush_subnormals", "one_blas_thread", "prepare_parties", "refuse",
           "register_family", "registered", "split_pipeline",
           "standardize_by_validation", "validate_private_data"]
