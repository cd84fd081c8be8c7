"""LLVM's pages handed back once the kernels are loaded (``neardup.core.compiler_pages``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")

_LLVM_RESIDENT = """
def llvm_resident_mb():
    total, current = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:
                current = "libllvmlite" in line
            elif current and head[0] == "Rss:":
                total += int(head[1])
    return total / 1024
"""


def _run(script: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _LLVM_RESIDENT + script], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_release_drops_llvm_from_the_process_and_kernels_still_run_and_compile() -> None:
    """After ``release`` the library's pages are out of the resident set; a loaded kernel gives the
    same signatures, and LLVM still compiles a new function (its pages fault back in, its
    modified data was left alone)."""
    result = _run(
        """
import json
import numba
from neardup.core import compiler_pages
from neardup.core.minhash import MinHasher
texts = ["the cat sat on the warm mat", "rain fell over the quiet town"]
before = MinHasher().signatures(texts)
resident = llvm_resident_mb()
released = compiler_pages.release()
after_release = llvm_resident_mb()
again = MinHasher().signatures(texts)

@numba.njit
def affine(x):
    return 3 * x + 1

print(json.dumps({
    "resident": resident, "released": released, "after_release": after_release,
    "same": bool((before == again).all()), "compiled": affine(14),
}))
"""
    )
    resident, after_release = float(str(result["resident"])), float(str(result["after_release"]))
    assert resident > 10  # loading a kernel touches tens of MB of LLVM
    assert int(str(result["released"])) > 0
    assert after_release < resident / 4
    assert result["same"] is True
    assert result["compiled"] == 43


def test_regions_are_read_only_mappings_of_the_library_with_no_modified_page() -> None:
    """The relocated, read-only data of the library (modified pages) and its writable data are
    never advised: only clean, read-only mappings of the file."""
    result = _run(
        """
import json
import llvmlite.binding
from neardup.core.compiler_pages import _regions
chosen = _regions(("libllvmlite",))
maps = {}
with open("/proc/self/smaps") as smaps:
    key = None
    for line in smaps:
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:
            key = None
            if "libllvmlite" in line:
                start, end = (int(p, 16) for p in head[0].split("-"))
                key = (start, end)
                maps[key] = {"perms": head[1]}
        elif key is not None and head[0] == "Anonymous:":
            maps[key]["anonymous_kb"] = int(head[1])
print(json.dumps({
    "chosen": [list(r) for r in chosen],
    "maps": [[list(k), v] for k, v in maps.items()],
}))
"""
    )
    chosen = {tuple(region) for region in result["chosen"]}  # type: ignore[union-attr]
    maps = {tuple(key): value for key, value in result["maps"]}  # type: ignore[union-attr]
    assert chosen, "the library's code is a read-only mapping"
    assert chosen <= set(maps)
    for key, info in maps.items():
        clean_and_read_only = "w" not in info["perms"] and info["anonymous_kb"] == 0
        assert (key in chosen) == clean_and_read_only, (key, info)
    assert any(info["anonymous_kb"] > 0 for info in maps.values())  # relocated data: left alone


_SET_UP_THEN_LOAD = """
import json
from neardup.core import jit, lsh, scan, verify
from neardup.io import _jsontext
from neardup.warm import load_kernels_and_release_compiler
thread = jit.set_up_in_background(then=load_kernels_and_release_compiler)
thread.join(600)
loaded = [k.__name__ for k in (scan.scan_part, lsh._band_keys_lanes, verify._pairs_range,
                               _jsontext._quote_rows) if k.signatures]
print(json.dumps({"loaded": loaded, "llvm": llvm_resident_mb()}))
"""


def test_with_a_warm_cache_the_set_up_thread_loads_the_kernels_then_releases_llvm() -> None:
    result = _run(_SET_UP_THEN_LOAD)
    assert result["loaded"] == ["scan_part", "_band_keys_lanes", "_pairs_range", "_quote_rows"]
    assert float(str(result["llvm"])) < 10


def test_with_a_cold_cache_the_set_up_thread_loads_nothing_and_keeps_llvm(tmp_path: Path) -> None:
    """On a cold cache the run compiles each kernel when it reaches it (with the child of
    ``start_if_cold``): nothing is compiled ahead on the thread, and LLVM stays mapped."""
    cold = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    result = _run(_SET_UP_THEN_LOAD, env=cold)
    assert result["loaded"] == []
    assert float(str(result["llvm"])) > 10


_LATE_LOADS = """
import json, sys
import numba
from neardup.core import compiler_pages

def dispatchers():
    for name, module in list(sys.modules.items()):
        if name.startswith("neardup"):
            for attr, value in vars(module).items():
                if isinstance(value, numba.core.registry.CPUDispatcher):
                    yield f"{name}.{attr}", value

at_release = {}
release = compiler_pages.release
def recorded_release(*args, **kwargs):
    at_release.update({name: len(d.signatures) for name, d in dispatchers()})
    return release(*args, **kwargs)
compiler_pages.release = recorded_release

from neardup.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
late = sorted(n for n, d in dispatchers() if at_release and len(d.signatures) > at_release.get(n, 0))
print(json.dumps({"released": bool(at_release), "late": late, "llvm": llvm_resident_mb()}))
"""


@pytest.mark.parametrize("output_format", ["jsonl", "parquet"])
def test_a_run_loads_no_kernel_after_llvm_is_released(tmp_path: Path, output_format: str) -> None:
    """Every kernel a ``neardup dedup`` run of JSON Lines calls is loaded, for the argument types the
    run passes, before LLVM's pages are handed back: one loaded later brings about 50 MB of them back
    into the run's resident memory, during its writing."""
    corpus = tmp_path / "corpus.jsonl"
    # past the first 1 MiB block, which pyarrow reads, to the compiled reader of the rest
    texts = [f"the quick brown fox {k % 7} jumps over the lazy dog {k % 5}" for k in range(24_000)]
    corpus.write_text("".join(json.dumps({"id": f"d{k}", "text": t}) + "\n" for k, t in enumerate(texts)))
    argv = [str(corpus), "-q", "--id-column", "id", "--output-format", output_format, "--threshold", "0.5"]
    script = _LLVM_RESIDENT + _LATE_LOADS
    for attempt in range(2):  # the first run may fill an empty cache, whose run releases nothing
        done = subprocess.run(
            [sys.executable, "-c", script, "dedup", *argv, "-o", str(tmp_path / f"out{attempt}")],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["released"]
    assert result["late"] == []
    assert float(result["llvm"]) < 10
