"""One library call per user task, what the command, the service and every engine call.

- :func:`run_dedup` runs a :class:`DedupJob`: inputs, settings, the mode, the outputs, the summary;
- :func:`open_index` opens an index from a URL with settings as a user gives them, and
  :func:`build_index` makes a new one; :func:`index_corpus` adds a corpus to one.
"""

from neardup.index.opening import IndexExistsError, IndexNotFoundError, build_index, open_index
from neardup.jobs.dedup import DedupJob, Mode, choose_mode, run_dedup
from neardup.jobs.events import RunEvents
from neardup.jobs.indexing import index_corpus

__all__ = [
    "DedupJob",
    "IndexExistsError",
    "IndexNotFoundError",
    "Mode",
    "RunEvents",
    "build_index",
    "choose_mode",
    "index_corpus",
    "open_index",
    "run_dedup",
]
