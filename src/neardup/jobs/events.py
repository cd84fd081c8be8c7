"""What a job tells its caller while it runs: a shell draws it, a library caller may ignore it."""

from __future__ import annotations

from collections.abc import Sequence

from neardup.config import DedupConfig
from neardup.errors import InputError


class RunEvents:
    """Callbacks of a running job; every method does nothing unless a subclass draws it.

    The order is: :meth:`shape` (once the settings are final), then :meth:`progress` reports
    per stage, with :meth:`skipped` (once, after the inputs are read) and :meth:`note` (a
    sentence a person should see) where they happen.
    """

    def shape(self, config: DedupConfig) -> None:
        """The settings the run decides with (its LSH shape is ``lsh_shape(config.lsh, config.minhash)``)."""

    def progress(self, stage: str, done: int, total: int) -> None:
        """``done`` of ``total`` units of ``stage`` (``read``, ``signatures``, ..., ``write``)."""

    def skipped(self, problems: Sequence[InputError]) -> None:
        """The bad records dropped under ``on_error="skip"``."""

    def note(self, message: str) -> None:
        """Something the person running the job should know (a file read again, say)."""
