"""Numpy until compiled: which of a kernel and its numpy twin a call runs.

A few kernels of a default fit (its noise, orders, the wave sums, and set-up
done once a fit) have numpy twins that give the same bits. A kernel's first
call in a process with an empty numba cache compiles it (0.2-0.9 s each);
its twin costs nothing to start but more per call. So, as renting before
buying: a call runs the twin while the kernel is neither compiled in this
process nor in numba's disk cache, the call is small (``size`` at most the
twin's ``max_size``) and the twin has spent less than ``RENT_SECONDS`` in
this process; otherwise the kernel (compiled on that call if need be). A
job that would outlast the rent (:func:`plan`, a fit's walk) compiles at
once. A fit with a warm cache runs the kernels; a small first fit runs the
twins and compiles only what they do not cover. Either way the values are
the same.
"""

import time
from contextlib import contextmanager

# A twin stops standing in for its kernel once it has run this long in a
# process (about a small kernel's compilation: renting then costs at most
# about as much again as buying at once).
RENT_SECONDS = 0.3

_spent = {}
_on_disk = {}
_ready = set()


def _cached_on_disk(kernel):
    """Whether numba's disk cache holds a fresh compilation of ``kernel``
    (its index, for this source); True when that cannot be read."""
    if id(kernel) not in _on_disk:
        try:
            _on_disk[id(kernel)] = bool(kernel._cache._cache_file._load_index())
        except Exception:  # another numba: take the kernel
            _on_disk[id(kernel)] = True
    return _on_disk[id(kernel)]


def use_twin(kernel, size, max_size, seconds=0.0):
    """Whether a call of ``size`` should run ``kernel``'s numpy twin; with
    ``seconds``, whether the twin can also run that long more."""
    key = id(kernel)
    if key in _ready or size > max_size:
        return False
    if kernel.signatures or _cached_on_disk(kernel):
        # ready for good (numba's ``signatures`` costs 30 us a call: asked once)
        _ready.add(key)
        return False
    return _spent.get(key, 0.0) + seconds < RENT_SECONDS


def plan(kernel, size, max_size, seconds):
    """Before a job of calls of ``size`` at most and ``seconds`` of the twin
    in all: whether the twin will make all of them. If it would run out of
    rent partway, it is retired now, so that the kernel compiles at the
    first call (renting first would only add the rent)."""
    if use_twin(kernel, size, max_size, seconds):
        return True
    _spent[id(kernel)] = max(_spent.get(id(kernel), 0.0), RENT_SECONDS)
    return False


@contextmanager
def twin_of(kernel):
    """Count the time of a twin's call against ``kernel``'s rent."""
    started = time.perf_counter()
    try:
        yield
    finally:
        _spent[id(kernel)] = (_spent.get(id(kernel), 0.0)
                              + time.perf_counter() - started)
