"""Ctrl-C during a long run, taken at a safe point rather than wherever it lands.

Python raises ``KeyboardInterrupt`` at whatever bytecode the main thread is running when
SIGINT arrives. Inside numba's compiler or llvmlite's finalizers that can leave a lock taken
or swallow the interrupt ("Exception ignored in ... __del__"), and a run on a cold kernel
cache then hangs or goes on. :class:`DeferredInterrupt` records the first Ctrl-C and raises
``KeyboardInterrupt`` at the next :meth:`~DeferredInterrupt.check` (the command checks at
each progress report, between chunks); a second Ctrl-C stops the process at once, as the
default handler does, which leaves a streaming run's work dir as a kill does (resumable).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

_active: list[DeferredInterrupt] = []


def check() -> None:
    """:meth:`DeferredInterrupt.check` of the innermost active ``with DeferredInterrupt()``, if any."""
    if _active:
        _active[-1].check()


class DeferredInterrupt:
    """SIGINT as a request, raised as ``KeyboardInterrupt`` by :meth:`check` or the module's
    :func:`check` (``with`` block; does nothing outside the main thread, where signal handlers
    cannot be set)."""

    def __init__(self) -> None:
        self.pending = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> DeferredInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._request)
            self._installed = True
        _active.append(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _active.remove(self)
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _request(self, signum: int, frame: FrameType | None) -> None:
        self.pending = True
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C: at once

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` (in the main thread) once Ctrl-C has been pressed."""
        if self.pending and threading.current_thread() is threading.main_thread():
            self.pending = False
            raise KeyboardInterrupt
