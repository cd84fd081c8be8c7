"""One library call per user task, what the command, the service and every engine call.

- :func:`run_dedup` runs a :class:`DedupJob`: inputs, settings, the mode, the outputs, the summary;
- :func:`open_index` opens an index from a URL with settings as a user gives them, and
  :func:`build_index` makes a new one; :func:`index_corpus` adds a corpus to one;
- :func:`backup_index` copies an index consistently while it is in use, :func:`restore_index`
  copies a backup back.
"""

from neardup.index.backup import BackupNotFoundError, backup_index, restore_index
from neardup.index.opening import IndexExistsError, IndexNotFoundError, build_index, open_index
from neardup.jobs.dedup import DedupJob, Mode, choose_mode, run_dedup
from neardup.jobs.events import RunEvents
from neardup.jobs.indexing import index_corpus
from neardup.jobs.on_ray import RayOptions

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
