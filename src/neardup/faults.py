"""Named points where a test may stop the process as a crash would, to prove what a crash there
leaves behind.

``NEARDUP_STOP_AT=<point>`` in the environment makes :func:`stop_point` kill the process with
SIGKILL when the run reaches that point; unset (always, outside tests), it does nothing. The
points of a ``dedup --against --update-index`` run, in order: ``outputs-written`` (every table
and ``summary.json`` staged, none moved in), ``outputs-committed`` (the outputs in place, the
index not yet told of the kept rows), ``index-updated`` (the kept rows stored). Inside the
commit of any output folder (:mod:`neardup.io.commit`): ``outputs-moving`` (the commit record
written, the first file moved in), ``outputs-aside`` (a folder in the way, such as an earlier
``deduped`` kept in the inputs' layout, renamed aside, the new one not yet in).
"""

from __future__ import annotations

import os
import signal

STOP_AT = "NEARDUP_STOP_AT"


def stop_point(name: str) -> None:
    """Die here, as ``kill -9`` would, if ``NEARDUP_STOP_AT`` names this point."""
    if os.environ.get(STOP_AT) == name:
        os.kill(os.getpid(), signal.SIGKILL)
