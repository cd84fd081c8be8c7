"""neardup's exceptions, one tree::

    NeardupError
     +-- ConfigError (also ValueError)      a setting is out of range or inconsistent
     |    +-- IndexSettingsError             an index and a signature, query or config differ in settings
     +-- InputError                          a file or record cannot be read
     |    +-- MissingColumnError             the text or id column is absent
     +-- OutputError                         results cannot be written
     +-- StorageError                        an index backend failed (names the file or URL)

Errors carry enough context (file, line, record) to act on; only the CLI
turns them into exit codes.
"""

from __future__ import annotations

import os
from typing import Any


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""


class ConfigError(NeardupError, ValueError):
    """A setting is out of range or inconsistent with another."""


class InputError(NeardupError):
    """An input file or record cannot be read.

    ``path``, ``line`` (1-based physical line) and ``record`` (1-based record
    number, used when the line is unknown) locate the problem; each may be
    ``None``. ``reason`` is the message without the location.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        record: int | None = None,
    ) -> None:
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.record = record
        self.reason = message
        if self.path is None:
            where = ""
        elif line is not None:
            where = f"{self.path}:{line}: "
        elif record is not None:
            where = f"{self.path}: record {record}: "
        else:
            where = f"{self.path}: "
        super().__init__(f"{where}{message}")

    def __reduce__(self) -> tuple[Any, ...]:
        # keep the location when the error crosses a process boundary
        return (_rebuild_input_error, (type(self), self.reason, self.path, self.line, self.record))


def _rebuild_input_error(
    cls: type[InputError], reason: str, path: str | None, line: int | None, record: int | None
) -> InputError:
    return cls(reason, path=path, line=line, record=record)


class MissingColumnError(InputError):
    """The text or id column is absent from an input."""


class OutputError(NeardupError):
    """Results cannot be written."""


class IndexSettingsError(ConfigError):
    """An index was built with settings other than those of a signature, query or config."""


class StorageError(NeardupError):
    """An index backend failed: the file or server cannot be opened, read or written."""
