"""skdpval: differentially private data valuation for scikit-learn."""

from . import exceptions
from ._federated import DPFederatedValuator
from ._filter import DPFilteredClassifier, DPFilteredRegressor, DPValueFilter
from ._label_quality import DPLabelQuality
from ._layered import LayeredShapleyValuator
from ._valuator import DPDataValuator
from ._workflow import privacy_spent

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
