"""Running walks: waves of permutations, in threads or on a Dask cluster.

:func:`run_walks` runs any walk problem (a family's) in waves that give the
same values for any number of workers; :class:`SeededDraws` holds each
permutation's public order and the privacy layer's opaque noise;
:mod:`~skdpval.walks._dask` reads rows held by Dask where their chunks live.
Imports the families, the kernels and the privacy layer; the estimators
import it.
"""

from ._dask import (any_dask, map_on_workers, map_row_blocks, prepare_parties,
                    walk_client)
from ._runner import run_walks
from ._waves import SeededDraws

__all__ = ["SeededDraws", "any_dask", "map_on_workers", "map_row_blocks",
           "prepare_parties", "run_walks", "walk_client"]
