"""The cold-start helper: the later stages' kernels compiled in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# the compiled functions of the stages after the signatures, with the argument types they were
# compiled or loaded for in the process
_SIGNATURES_SCRIPT = """
import json, sys
import numba
from neardup.core import clusters, lsh, minhash, verify
from neardup.io import _jsontext
{run}
out = {{}}
for module in (clusters, lsh, minhash, verify, _jsontext):
    for name, value in vars(module).items():
        if isinstance(value, numba.core.registry.CPUDispatcher) and value.signatures:
            out[module.__name__ + "." + name] = sorted(str(s) for s in value.signatures)
print(json.dumps(out))
"""

_PIPELINE = """
from neardup import DedupConfig, find_duplicates
from neardup.core.text import encode_texts
texts = ["the cat sat on the warm mat today", "the cat sat on the warm mat today!", "rain fell"] * 3
for keep in ("first", "longest", "shortest"):
    find_duplicates(encode_texts(texts), DedupConfig.create(keep=keep, threshold=0.5))
# a text column as Arrow's JSON reader gives it, written out as JSON (the compiled escaping)
import io, json
import pyarrow.json as pj
from neardup.io._jsontext import COMPILED_FROM_BYTES, json_values
lines = "".join(json.dumps({"text": "a line, " * 50 + str(i)}) + "\\n" for i in range(400)).encode()
column = pj.read_json(io.BytesIO(lines)).column("text").combine_chunks()
assert column.nbytes > COMPILED_FROM_BYTES
json_values(column)
"""


def _compiled_signatures(run: str, env: dict[str, str] | None = None) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _SIGNATURES_SCRIPT.format(run=run)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_child_compiles_every_later_kernel_for_the_types_the_pipeline_passes() -> None:
    """What ``python -m neardup.warm`` compiles covers every kernel, with every argument type,
    that ``find_duplicates`` calls after the signatures: else a cold run compiles them again."""
    used = _compiled_signatures(_PIPELINE)
    warmed = _compiled_signatures(
        "from neardup.warm import compile_later_stages, compile_output_kernels\n"
        "compile_later_stages()\n"
        "compile_output_kernels()"
    )
    assert len(used) >= 7  # buckets, pairs, estimates, verification, clusters, JSON escaping
    for name, signatures in used.items():
        assert set(signatures) <= set(warmed.get(name, [])), name


_COMPILED_BY_A_RUN = """
import json
from numba.core import event
from neardup import find_duplicates
from neardup.core.text import encode_texts
with event.install_recorder("numba:compile") as recorder:
    texts = ["the cat sat on the warm mat", "the cat sat on the warm mat!", "床前明月光 疑是地上霜"] * 3
    find_duplicates(encode_texts(texts))
names = {e.data["dispatcher"].py_func.__qualname__ for _, e in recorder.buffer if e.is_start}
print(json.dumps(sorted(names)))
"""


def test_a_cold_cache_starts_the_child_and_the_run_after_it_compiles_only_the_tokeniser(
    tmp_path: Path,
) -> None:
    """On an empty cache ``start_if_cold`` starts the child, and no second one while it compiles
    (it holds the cache's lock file); once it is done, a run compiles the tokeniser and the two
    helpers it reaches first, and loads everything else the child compiled. On a cache holding
    the tokeniser it starts nothing."""
    script = (
        "import sys\n"
        "from neardup.warm import start_if_cold\n"
        "if sys.argv[1] == 'warm':\n"
        "    from neardup.core.minhash import MinHasher\n"
        "    from neardup.core.text import encode_texts\n"
        "    MinHasher().signatures_with_counts(encode_texts(['a few words']))\n"
        "child = start_if_cold()\n"
        "print(child is not None)\n"
        "if child is not None:\n"
        "    import time\n"
        "    from neardup.warm import compiling, wait_until_compiled\n"
        "    deadline = time.monotonic() + 60\n"
        "    while not compiling() and child.poll() is None and time.monotonic() < deadline:\n"
        "        time.sleep(0.05)\n"
        "    print(compiling(), start_if_cold() is None)  # one child at a time\n"
        "    print(wait_until_compiled(), compiling())\n"
        "    print(child.wait())\n"
    )

    def run(code: str, env: dict[str, str] | None, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=env
        )
        return done.stdout

    cold = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    assert run(script, cold, "cold").split() == ["True", "True", "True", "True", "False", "0"]
    compiled = set(json.loads(run(_COMPILED_BY_A_RUN, cold).strip().splitlines()[-1]))
    ours = {name for name in compiled if not name.startswith(("ol_", "_ol_", "np_"))}  # numba's own
    assert "scan_part" in ours  # the tokeniser is compiled here, so the check can see a compile
    assert ours <= {"scan_part", "_flush", "_expand"}, ours
    assert run(script, None, "warm").split() == ["False"]  # the usual cache, tokeniser in it


def test_numba_is_set_up_on_a_thread_while_the_command_reads() -> None:
    # a fresh process: the set-up happens once per process, on the first compiled call
    script = """
from neardup.core import jit
assert not jit._first_compiled_call.signatures
thread = jit.set_up_in_background()
assert thread.name == "neardup-jit-setup" and thread.daemon
thread.join(120)
assert not thread.is_alive()
print(len(jit._first_compiled_call.signatures))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]  # compiled or loaded from the cache, on that thread


_FIRST_PASS = """
import json, sys
from pathlib import Path
from neardup.io import ReadOptions
from neardup.io import json_records
from neardup.io.jsonl_passes import JsonlPasses
path = Path(sys.argv[1])
passes = JsonlPasses(path, ReadOptions(id_column="id"), all_columns=False)
rows = sum(t.num_rows for t in passes.first_pass())
compiled = bool(json_records._scan.signatures)
if sys.argv[2] == "compile":
    from neardup.warm import compile_input_kernels
    compile_input_kernels()
print(json.dumps({"rows": rows, "compiled_reader": compiled}))
"""


def test_a_cold_first_pass_reads_with_pyarrow_and_a_warm_one_with_the_compiled_reader(tmp_path: Path) -> None:
    """The compiled reader of a JSON Lines first pass would cost a cold run 2.5 s of compiling
    before its first signature: until it is in the cache (the child of ``start_if_cold``
    compiles it), pyarrow reads the file."""
    path = tmp_path / "in.jsonl"
    rows = [json.dumps({"id": f"d{k}", "text": f"some words {k} " * 8}) for k in range(20_000)]
    path.write_text("".join(r + "\n" for r in rows))  # past the first 1 MiB block
    cold = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}

    def first_pass(then: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_PASS, str(path), then], capture_output=True, text=True, env=cold
        )
        assert done.returncode == 0, done.stderr
        result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    assert first_pass("compile") == {"rows": 20_000, "compiled_reader": False}
    assert first_pass("") == {"rows": 20_000, "compiled_reader": True}


_LIGHT_LOAD = """
import sys
from numba import njit
from neardup.core import jit
if sys.argv[1] == "light":
    assert jit.load_from_cache_without_registries()
    assert jit.load_from_cache_without_registries()  # twice: patched once
registries = ("numba.cpython.unicode", "numba.np.random.generator_methods", "numba.np.linalg")
print(jit._first_compiled_call(), jit._first_compiled_call.stats.cache_hits.total())
print(sorted(m for m in registries if m in sys.modules))

@njit  # a new function needing one of those registries: compiled with them all the same
def shout(text):
    return text.upper() + "!"

print(shout("numba"), "numba.cpython.unicode" in sys.modules)
"""


def test_kernels_load_from_the_cache_without_numba_registries_and_compile_with_them(tmp_path: Path) -> None:
    """The command loads its cached kernels without numba's registries of implementations (0.08 s
    of imports and templates holding the GIL at its start): a cold cache still compiles, and a
    function compiled after a light load still finds every implementation."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(how: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", _LIGHT_LOAD, how], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()

    cold = run("light")  # nothing cached: compiled, with the registries the compiler loads
    assert cold[0] == "0 0"
    assert cold[2] == "NUMBA! True"
    warm = run("light")
    assert warm[0] == "0 1"  # loaded from the cache
    assert warm[1] == "[]"  # without the registries
    assert warm[2] == "NUMBA! True"  # which a later compile loads
    usual = run("usual")
    assert usual[0] == "0 1"
    assert usual[1] != "[]"  # numba's own cache load imports them
