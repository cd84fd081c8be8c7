"""neardup's exceptions, one tree::

    NeardupError
     +-- ConfigError (also ValueError)      a setting is out of range or inconsistent
     +-- InputError                          a file or record cannot be read
     |    +-- MissingColumnError             the text or id column is absent
     +-- OutputError                         results cannot be written

Errors carry enough context (file, line, record) to act on; only the CLI
turns them into exit codes.
"""

from __future__ import annotations


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""


class ConfigError(NeardupError, ValueError):
    """A setting is out of range or inconsistent with another."""


class InputError(NeardupError):
    """An input file or record cannot be read.

    ``path`` and ``line`` (1-based, or ``None``) locate the problem.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")


class MissingColumnError(InputError):
    """The text or id column is absent from an input."""


class OutputError(NeardupError):
    """Results cannot be written."""
