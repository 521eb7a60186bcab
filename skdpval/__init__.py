"""skdpval: differentially private data valuation for scikit-learn."""

from . import exceptions
from .valuation._federated import DPFederatedValuator
from .valuation._filter import DPFilteredClassifier, DPFilteredRegressor, DPValueFilter
from .valuation._label_quality import DPLabelQuality
from .valuation._layered import LayeredShapleyValuator
from .valuation._valuator import DPDataValuator
from .privacy._spent import privacy_spent

__all__ = [
    "DPDataValuator",
    "DPFederatedValuator",
    "DPFilteredClassifier",
    "DPFilteredRegressor",
    "DPLabelQuality",
    "DPValueFilter",
    "LayeredShapleyValuator",
    "exceptions",
    "privacy_spent",
]
__version__ = "0.1.0.dev0"
