"""One library call per user task, what the command, the service and every engine call.

- :func:`run_dedup` runs a :class:`DedupJob`: inputs, settings, the mode, the outputs, the summary;
- :func:`open_index` opens an index from a URL with settings as a user gives them, and
  :func:`build_index` makes a new one; :func:`index_corpus` adds a corpus to one;
- :func:`backup_index` copies an index consistently while it is in use, :func:`restore_index`
  copies a backup back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neardup.lazy_names import lazy_names

_WHERE = {
    "BackupNotFoundError": "neardup.index.backup",
    "DedupJob": "neardup.jobs.dedup",
    "IndexExistsError": "neardup.index.opening",
    "IndexNotFoundError": "neardup.index.opening",
    "Mode": "neardup.jobs.dedup",
    "RayOptions": "neardup.jobs.on_ray",
    "RunEvents": "neardup.jobs.events",
    "backup_index": "neardup.index.backup",
    "build_index": "neardup.index.opening",
    "choose_mode": "neardup.jobs.dedup",
    "index_corpus": "neardup.jobs.indexing",
    "open_index": "neardup.index.opening",
    "restore_index": "neardup.index.backup",
    "run_dedup": "neardup.jobs.dedup",
}
"""Where each name is: imported when first used, so a run without an index loads none of the
index code (20 ms of a command's start-up)."""

__all__ = [
    "BackupNotFoundError",
    "DedupJob",
    "IndexExistsError",
    "IndexNotFoundError",
    "Mode",
    "RayOptions",
    "RunEvents",
    "backup_index",
    "build_index",
    "choose_mode",
    "index_corpus",
    "open_index",
    "restore_index",
    "run_dedup",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__, globals())


if TYPE_CHECKING:
    from neardup.index.backup import BackupNotFoundError, backup_index, restore_index
    from neardup.index.opening import IndexExistsError, IndexNotFoundError, build_index, open_index
    from neardup.jobs.dedup import DedupJob, Mode, choose_mode, run_dedup
    from neardup.jobs.events import RunEvents
    from neardup.jobs.indexing import index_corpus
    from neardup.jobs.on_ray import RayOptions
