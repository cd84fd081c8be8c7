"""Where the commands print: rich's console, or nothing for a quiet command without importing rich.

rich and what it imports took 20-30 ms of a run's start-up, which is spent on one core before
the first signature can start (benchmarks/RESULTS.md, section 25); ``-q`` shows nothing, so a
quiet command does not import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class QuietConsole:
    """A console that prints nothing (``quiet``, as rich's is when it is asked to be)."""

    quiet = True

    def print(self, *objects: object, **options: object) -> None:
        """Print nothing."""


def new_console(*, stderr: bool = False, quiet: bool = False, **options: Any) -> Console | QuietConsole:
    """rich's console (on standard error with ``stderr``), or a :class:`QuietConsole` when ``quiet``."""
    if quiet:
        return QuietConsole()
    from rich.console import Console

    return Console(stderr=stderr, **options)
