"""A loss of your own, for the kernels: :class:`MarginLoss`.

The linear family's losses are integer codes that the kernels dispatch on
(:mod:`skdpval.kernels._losses`). A family may bring a loss of its own
instead: three numba-compiled functions of one output's margin ``m``, its
target ``t`` and the loss's parameter ``p`` (the value, the first and the
second derivative in ``m``), wrapped in a :class:`MarginLoss`. To numba a
``MarginLoss`` is a type of its own: a kernel that takes it is compiled for
it, its functions inlined where the kernel calls the loss, so the walks run
it at the speed of a built-in loss, and numba's cache keeps that kernel
(its key holds a digest of the functions' code, so that an edited loss is
compiled again, never read stale from the cache).

The kernels reach a loss through the generic functions of
:mod:`skdpval.kernels._losses` (``sample_loss``, ``sample_dloss``,
``output_loss``, ...), overloaded here for a ``MarginLoss``; nothing else in
the package needs to know it.
"""

import hashlib
import marshal

from numba import types
from numba.extending import (NativeValue, models, register_model, typeof_impl,
                             unbox)

_LOSSES = {}


class MarginLossType(types.Type):
    """The numba type of one :class:`MarginLoss` (by its key)."""

    def __init__(self, key):
        super().__init__(name=f"MarginLoss({key})")
        self.loss_key = key


@register_model(MarginLossType)
class _MarginLossModel(models.OpaqueModel):
    """A loss carries no data at run time: its type is all a kernel needs."""


def _digest(*functions):
    code = b"".join(marshal.dumps(f.py_func.__code__) for f in functions)
    return hashlib.sha256(code).hexdigest()[:16]


class MarginLoss:
    """A loss of one output's margin, as numba-compiled functions.

    Parameters
    ----------
    name : str
        Its name in messages and in numba's cache.
    value, derivative, second : numba-compiled functions ``f(m, t, p)``
        The loss of margin ``m`` at target ``t`` with parameter ``p``, and
        its first and second derivative in ``m`` (the second reads the line
        table's curvature).
    curvature : float, default=1.0
        A bound on the second derivative in the margin (the private fit's
        preconditioner); a loss without one (e.g. an exponential) states a
        typical value.
    classification : bool, default=True
        Whether targets are +-1 (a classifier's margins) or real values.

    Examples
    --------
    >>> from numba import njit
    >>> from skdpval.kernels import MarginLoss
    >>> @njit
    ... def value(m, t, p):
    ...     return 0.5 * (m - t) ** 2
    >>> @njit
    ... def derivative(m, t, p):
    ...     return m - t
    >>> @njit
    ... def second(m, t, p):
    ...     return 1.0
    >>> half_square = MarginLoss("half square", value, derivative, second,
    ...                          classification=False)
    >>> half_square.name
    'half square'
    """

    def __init__(self, name, value, derivative, second, *, curvature=1.0,
                 classification=True):
        self.name = name
        self.value, self.derivative, self.second = value, derivative, second
        self.curvature = float(curvature)
        self.classification = bool(classification)
        self.loss_key = f"{name}:{_digest(value, derivative, second)}"
        self.numba_type = MarginLossType(self.loss_key)
        _LOSSES[self.loss_key] = self

    def __repr__(self):
        return f"MarginLoss({self.name!r})"

    def __reduce__(self):
        # Sent to workers by the functions' module (re-registered there).
        return (MarginLoss, (self.name, self.value, self.derivative, self.second),
                {"curvature": self.curvature, "classification": self.classification})

    def __setstate__(self, state):
        self.__dict__.update(state)


@typeof_impl.register(MarginLoss)
def _typeof_margin_loss(value, context):
    return value.numba_type


@unbox(MarginLossType)
def _unbox_margin_loss(typ, obj, context):
    return NativeValue(context.context.get_dummy_value())


def loss_of(loss_type):
    """The :class:`MarginLoss` of a numba type (when a kernel compiles)."""
    return _LOSSES[loss_type.loss_key]
