"""skdpval: differentially private data valuation for scikit-learn."""

from . import exceptions
from ._federated import DPFederatedValuator
from ._filter import DPFilteredClassifier, DPFilteredRegressor, DPValueFilter
from ._layered import LayeredShapleyValuator
from ._valuator import DPDataValuator

__all__ = [
    "DPDataValuator",
    "DPFederatedValuator",
    "DPFilteredClassifier",
    "DPFilteredRegressor",
    "DPValueFilter",
    "LayeredShapleyValuator",
]
__version__ = "0.1.0.dev0"
