"""No cyclic garbage collection while the command loads its modules and kernels.

A run of the command imports numba, pyarrow and neardup's modules and loads its kernels from
numba's cache: about 160,000 objects that live to its end. Python's collector walks all of
them in each full collection it starts while they are being made: two in a run on the
duplicate-heavy corpus, 0.06-0.12 s with the GIL held, which the kernels' loading and the read
wait for. :func:`hold` turns the collector off before the imports; :func:`release` moves every
object made so far out of its sight (``gc.freeze``) and turns it back on, so the collections
after walk only the run's own objects. It is for the command: a program that imports neardup
keeps its collector as it is.
"""

from __future__ import annotations

import gc
import threading

_held = False
_lock = threading.Lock()


def hold() -> None:
    """Turn the collector off until :func:`release`, if it is on."""
    global _held
    with _lock:
        if gc.isenabled():
            gc.disable()
            _held = True


def release() -> None:
    """Freeze the objects made so far and turn the collector back on, if :func:`hold` turned it
    off; from any thread, any number of times."""
    global _held
    with _lock:
        if not _held:
            return
        _held = False
        gc.freeze()
        gc.enable()
