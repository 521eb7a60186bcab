"""Numba kernels: losses, the walks, the line's tables, orders and reductions.

Plain functions on contiguous arrays and scalars (``_math``: the shared
arithmetic and compile flags; ``_losses`` and ``_margin_loss``: the losses
and the validation utility; ``_linear``, ``_subspace`` and ``_line``: the
linear family's walks; ``_network`` and ``_network_line``: a multilayer
perceptron's; ``_orders``, ``_reduction``: a wave's orders and sums), with
the thin Python wrappers that allocate their buffers. They import the
privacy layer (clipping and the release) and nothing above it; the families
import them.
"""

from ._line import LINE_MAX_INTERVALS
from ._margin_loss import MarginLoss

__all__ = ["LINE_MAX_INTERVALS", "MarginLoss"]
