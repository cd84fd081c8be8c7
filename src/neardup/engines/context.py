"""What every stage of one external run needs: settings, sizes, paths, the source, a clock."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from neardup.config import DedupConfig
from neardup.engines.plan import Plan
from neardup.engines.source import Source
from neardup.pipeline import Progress


@dataclass
class Context:
    config: DedupConfig
    bands: int
    rows: int
    plan: Plan
    work_dir: Path
    source: Source
    text_column: str
    progress: Progress
    ran: list[str] = field(default_factory=list)
    """Stages that did work in this call (the others were finished before)."""

    def stage_dir(self, stage: str) -> Path:
        return self.work_dir / stage


class Lap:
    """Seconds since the last call; a stage adds each lap to its journal at a commit."""

    def __init__(self) -> None:
        self._t = time.perf_counter()

    def __call__(self) -> float:
        now = time.perf_counter()
        lap, self._t = now - self._t, now
        return lap
