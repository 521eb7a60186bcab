"""skdpval: differentially private data valuation for scikit-learn.

The public names load on first use (PEP 562): ``import skdpval`` itself
imports nothing heavy, so that the command line (:mod:`skdpval.cli`) can
refuse a bad command line before numpy, numba and scikit-learn load.
``from skdpval import DPDataValuator`` works as usual.
"""

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


def __getattr__(name):
    """A public name, imported on first use."""
    if name == "exceptions":
        from . import exceptions as value
    elif name == "privacy_spent":
        from .privacy import privacy_spent as value
    elif name in __all__:
        from . import valuation
        value = getattr(valuation, name)
    else:
        raise AttributeError(f"module 'skdpval' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
