"""The command line: one parser (:mod:`._parser`, standard library only) with
the subcommands ``skdpval [demo]`` (:mod:`._demo`: the main job on bundled
data) and ``skdpval value`` (:mod:`._value`: a data file of your own, with
:mod:`._files`, :mod:`._table` and :mod:`._models`). A command's module, and
with it the estimators, is imported once the command line has parsed; it may
import every layer and the public helpers, and nothing imports it.
"""

from ._parser import build_parser, main

__all__ = ["build_parser", "main"]
