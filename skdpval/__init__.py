"""skdpval: differentially private data valuation for scikit-learn."""

from . import exceptions
from .privacy import privacy_spent
from .valuation import (DPDataValuator, DPFederatedValuator, DPFilteredClassifier,
                        DPFilteredRegressor, DPLabelQuality, DPValueFilter,
                        LayeredShapleyValuator)

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
