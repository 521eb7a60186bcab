"""The estimators: the template fit, the valuators, semivalues, the public
model and the filters. Imports every layer below it (privacy, kernels
through the families, families, walks); the command line imports it.
"""

from ._data_valuator import DPDataValuator
from ._federated import DPFederatedValuator
from ._filter import DPFilteredClassifier, DPFilteredRegressor, DPValueFilter
from ._label_quality import DPLabelQuality
from ._layered import LayeredShapleyValuator

__all__ = ["DPDataValuator", "DPFederatedValuator", "DPFilteredClassifier",
           "DPFilteredRegressor", "DPLabelQuality", "DPValueFilter",
           "LayeredShapleyValuator"]
