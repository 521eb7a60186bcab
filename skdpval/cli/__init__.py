"""The command line: ``skdpval`` (the main job on bundled data) and ``skdpval
value`` (a data file of your own). Imports the estimators."""

from ._demo import main

__all__ = ["main"]
