"""The command's collector hold: off while modules load, then on with those objects frozen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import gc, json
from neardup.core import collector
before = gc.get_freeze_count()
collector.release()  # not held: nothing happens
untouched = (gc.isenabled(), gc.get_freeze_count() == before)
collector.hold()
held = gc.isenabled()
import numba  # objects made while held
collector.release()
collector.release()  # a second release changes nothing
print(json.dumps({"untouched": untouched, "held": held, "enabled": gc.isenabled(),
                  "frozen": gc.get_freeze_count() > before + 10000}))
"""


def test_hold_turns_collection_off_and_release_freezes_what_was_loaded() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got == {"untouched": [True, True], "held": False, "enabled": True, "frozen": True}


def test_the_command_runs_with_the_collector_back_on(tmp_path: Path) -> None:
    """A dedup run through the command's entry point turns the collector back on once its
    kernels are loaded (a run this small may end first), and another command at once."""
    probe = (
        "import gc, os, sys, threading\n"
        "import neardup.cli as cli\n"
        "real = os._exit\n"
        "def out(code):\n"
        "    for t in threading.enumerate():\n"
        "        if t.name == 'neardup-jit-setup': t.join()\n"
        "    sys.stdout.flush(); sys.stderr.write(f'collector {gc.isenabled()} {gc.get_freeze_count()}\\n')\n"
        "    sys.stderr.flush(); real(code)\n"
        "os._exit = out\n"
        "sys.argv = ['neardup'] + sys.argv[1:]\n"
        "cli.run()\n"
    )
    for args in (["dedup", "--demo", "-o", str(tmp_path / "out"), "-q"], ["index", "--help"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        enabled, frozen = done.stderr.strip().splitlines()[-1].split()[1:]
        assert enabled == "True", (args, done.stderr)
        if args[0] == "dedup":
            assert int(frozen) > 10000
