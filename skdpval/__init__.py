"""skdpval: differentially private data valuation for scikit-learn."""

from ._valuator import DPDataValuator

__all__ = ["DPDataValuator"]
__version__ = "0.1.0.dev0"
