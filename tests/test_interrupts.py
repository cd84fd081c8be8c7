"""Ctrl-C in a run is taken at the next progress report; a second one stops at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import neardup.pipeline
from neardup.cli import main
from neardup.interrupts import DeferredInterrupt


def test_the_first_ctrl_c_waits_for_the_next_check() -> None:
    before = signal.getsignal(signal.SIGINT)
    ran_on = False
    with DeferredInterrupt() as interrupt:
        os.kill(os.getpid(), signal.SIGINT)  # handled at once, between bytecodes: only recorded
        ran_on = True
        assert interrupt.pending
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
        interrupt.check()  # raised once
    assert ran_on
    assert signal.getsignal(signal.SIGINT) is before


def test_no_ctrl_c_no_interrupt() -> None:
    with DeferredInterrupt() as interrupt:
        interrupt.check()
    assert not interrupt.pending


SECOND = """
import os, signal, time
from neardup.interrupts import DeferredInterrupt
with DeferredInterrupt() as interrupt:
    os.kill(os.getpid(), signal.SIGINT)
    print("went on", flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    print("not reached", flush=True)
"""


def test_a_second_ctrl_c_stops_at_once() -> None:
    done = subprocess.run([sys.executable, "-c", SECOND], capture_output=True, text=True, timeout=60)
    assert done.stdout == "went on\n"
    assert done.returncode == -signal.SIGINT


def test_ctrl_c_in_an_in_memory_run_stops_it_at_the_next_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "in.csv"  # held in memory (one JSON Lines file would be read in passes)
    corpus.write_text("text\n" + "".join(f"document number {i} about things\n" for i in range(50)))
    real = neardup.pipeline.find_duplicates
    reached: list[str] = []

    def pressed_during(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)  # lands in the middle of the run, is only recorded
        reached.append("the run went on to its next progress report")
        return real(*args, **kwargs)

    monkeypatch.setattr(neardup.pipeline, "find_duplicates", pressed_during)
    before = signal.getsignal(signal.SIGINT)
    done = CliRunner().invoke(main, ["dedup", str(corpus), "-o", str(tmp_path / "out"), "-q"])
    assert reached
    assert (done.exit_code, done.stderr) == (130, "neardup: error: interrupted\n")
    assert not (tmp_path / "out").exists()
    assert signal.getsignal(signal.SIGINT) is before
