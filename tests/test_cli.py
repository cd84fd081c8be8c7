"""The ``neardup`` command: exact messages, exit codes and the files it writes."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pa_json
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from neardup.cli import main

OUTPUTS = {
    "annotated.csv",
    "deduped.csv",
    "duplicates.csv",
    "clusters.csv",
    "candidate_pairs.csv",
    "lsh_buckets.csv",
    "summary.json",
}
GOLDEN = Path(__file__).parent / "golden" / "demo"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def test_demo_writes_all_seven_files(tmp_path: Path) -> None:
    result = run("dedup", "--demo", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert {p.name for p in (tmp_path / "out").iterdir()} == OUTPUTS
    assert "Duplicates removed" in result.stdout
    assert "LSH shape: " in result.stderr


@pytest.mark.parametrize("name", ["clusters.csv", "candidate_pairs.csv", "deduped.csv", "duplicates.csv"])
def test_demo_matches_golden_files(tmp_path: Path, name: str) -> None:
    assert run("dedup", "--demo", "-o", tmp_path, "-q").exit_code == 0
    assert (tmp_path / name).read_text(encoding="utf-8") == (GOLDEN / name).read_text(encoding="utf-8")


def test_demo_groups_the_seed_behaviours(tmp_path: Path) -> None:
    assert run("dedup", "--demo", "-o", tmp_path, "-q").exit_code == 0
    clusters = pacsv.read_csv(tmp_path / "clusters.csv").to_pylist()
    groups = {c["representative"]: json.loads(c["members"]) for c in clusters}
    assert groups["doc-01"] == ["doc-01", "doc-02", "doc-03"]  # exact duplicate + case/punctuation variant
    assert groups["doc-04"] == ["doc-04", "doc-05"]  # punctuation/whitespace variant
    assert groups["doc-11"] == ["doc-11", "doc-12"]  # Chinese punctuation variant
    kept = {r["id"] for r in pacsv.read_csv(tmp_path / "deduped.csv").to_pylist()}
    assert {"doc-07", "doc-08", "doc-13"} <= kept  # unrelated texts stay
    assert not {"doc-02", "doc-03", "doc-05", "doc-12", "doc-14"} & kept


def test_json_prints_the_summary(tmp_path: Path) -> None:
    result = run("dedup", "--demo", "-o", tmp_path, "--json")
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert summary == json.loads((tmp_path / "summary.json").read_text())
    for key in (
        "input_rows",
        "num_perm",
        "bands",
        "rows",
        "threshold",
        "buckets_with_collisions",
        "candidate_pairs",
        "verified_pairs",
        "clusters",
        "duplicates_removed",
        "kept_ratio",
        "seconds",
    ):
        assert key in summary
    assert summary["input_rows"] == 14
    assert summary["num_perm"] == 128 < summary["bands"] * summary["rows"] <= 2 * 128  # two layers
    assert set(summary["seconds"]) >= {"read", "signatures", "buckets", "verify", "clusters", "write"}


def test_quiet_prints_nothing(tmp_path: Path) -> None:
    result = run("dedup", "--demo", "-o", tmp_path, "--quiet")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == ""


def test_seed_settings_are_reachable(tmp_path: Path) -> None:
    result = run(
        "dedup",
        "--demo",
        "-o",
        tmp_path,
        "--json",
        "--shingle",
        "word",
        "--ngram",
        "5",
        "--num-perm",
        "64",
        "--seed",
        "42",
        "--no-nfkc",
    )
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert (summary["num_perm"], summary["seed"], summary["ngram"], summary["shingle"]) == (64, 42, 5, "word")


def test_bands_and_rows_override_the_shape(tmp_path: Path) -> None:
    result = run("dedup", "--demo", "-o", tmp_path, "--json", "--bands", "32", "--rows", "4")
    assert result.exit_code == 0
    assert (json.loads(result.stdout)["bands"], json.loads(result.stdout)["rows"]) == (32, 4)


def test_no_verify_reports_estimated_jaccard(tmp_path: Path) -> None:
    assert run("dedup", "--demo", "-o", tmp_path, "-q", "--no-verify").exit_code == 0
    pairs = pacsv.read_csv(tmp_path / "candidate_pairs.csv").to_pylist()
    assert pairs and {p["jaccard_kind"] for p in pairs} == {"estimated"}
    assert all(p["jaccard"] == p["estimated_jaccard"] for p in pairs)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["verified_pairs"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threshold", "1.5"], "neardup: error: --threshold must be in (0, 1], got 1.5\n"),
        (["--threshold", "0"], "neardup: error: --threshold must be in (0, 1], got 0.0\n"),
        (
            ["--bands", "7", "--rows", "3"],
            "neardup: error: --bands * --rows must equal --num-perm: 7 * 3 = 21, --num-perm = 128 (or, "
            "for a second layer, exceed it by at most --num-perm, where --rows divides --num-perm "
            "and --rows * --rows <= --num-perm)\n",
        ),
        (["--bands", "16"], "neardup: error: --bands and --rows must be given together\n"),
        (["--ngram", "0"], "neardup: error: --ngram must be a whole number from 1 to 64, got 0\n"),
    ],
)
def test_bad_settings_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = run("dedup", "--demo", "-o", tmp_path / "out", *args)
    assert result.exit_code == 2
    assert result.stderr == message
    assert not (tmp_path / "out").exists()


def test_demo_and_inputs_together_is_a_usage_error(tmp_path: Path) -> None:
    result = run("dedup", "--demo", "x.jsonl", "-o", tmp_path)
    assert (result.exit_code, result.stderr) == (
        2,
        "neardup: error: give either INPUT files or --demo, not both\n",
    )


def test_no_inputs_is_a_usage_error(tmp_path: Path) -> None:
    result = run("dedup", "-o", tmp_path)
    assert result.exit_code == 2
    assert result.stderr == "neardup: error: no INPUT given (try --demo for a built-in sample)\n"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "bad.jsonl",
            '{"text": "a"}\n{"text": oops}\n',
            "bad.jsonl:2: malformed JSON: Expecting value at column 10",
        ),
        (
            "nocol.jsonl",
            '{"body": "a"}\n',
            "nocol.jsonl: no column 'text' (columns: body); pass --text-column to choose the text column",
        ),
        ("empty.jsonl", "", "empty.jsonl: no records to deduplicate"),
        (
            "utf.jsonl",
            b'{"text": "ok"}\n{"text": "caf\xff"}\n',
            "utf.jsonl:2: invalid UTF-8 (byte 0xff at column 14)",
        ),
        ("num.jsonl", '{"text": 5}\n', "num.jsonl:1: field 'text' is not a string (got number)"),
        ("arr.jsonl", '["text"]\n', "arr.jsonl:1: expected a JSON object, got array"),
    ],
)
def test_bad_input_exits_1_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, data: str | bytes, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / name, data)
    out = tmp_path / "out"
    result = run("dedup", name, "-o", out)
    assert result.exit_code == 1
    assert result.stderr == f"neardup: error: {message}\n"
    assert not out.exists()


def test_missing_path(tmp_path: Path) -> None:
    result = run("dedup", tmp_path / "nope.jsonl", "-o", tmp_path / "out")
    assert result.exit_code == 1
    assert result.stderr == f"neardup: error: {tmp_path / 'nope.jsonl'}: no such file or directory\n"


def test_failed_run_keeps_previous_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("dedup", "--demo", "-o", out, "-q").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = write(tmp_path / "bad.jsonl", '{"text": "a"}\n{oops\n')
    assert run("dedup", bad, "-o", out, "-q").exit_code == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_skip_reports_and_continues(tmp_path: Path) -> None:
    src = write(
        tmp_path / "in.jsonl",
        '{"text": "the same words appear in this text"}\n{oops\n'
        '{"text": "the same words appear in this text"}\n',
    )
    result = run("dedup", src, "-o", tmp_path / "out", "--on-error", "skip", "--json")
    assert result.exit_code == 0
    assert f"neardup: skipped: {src}:2: malformed JSON" in result.stderr
    summary = json.loads(result.stdout)
    assert (summary["input_rows"], summary["skipped_records"], summary["duplicates_removed"]) == (2, 1, 1)


def test_csv_with_embedded_newlines(tmp_path: Path) -> None:
    src = write(
        tmp_path / "in.csv",
        'id,text\n1,"a line\nand another line of the same text"\n'
        '2,"A line, and another line of the same text!"\n'
        '3,"something else entirely"\n',
    )
    result = run("dedup", src, "-o", tmp_path / "out", "--id-column", "id", "--json")
    assert result.exit_code == 0, result.output
    dups = pacsv.read_csv(tmp_path / "out" / "duplicates.csv").to_pylist()
    assert [(d["id"], d["duplicate_of"]) for d in dups] == [(2, 1)]
    annotated = pacsv.read_csv(tmp_path / "out" / "annotated.csv").to_pylist()
    assert annotated[0]["text"] == "a line\nand another line of the same text"


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_output_formats(tmp_path: Path, fmt: str) -> None:
    result = run("dedup", "--demo", "-o", tmp_path, "-q", "--output-format", fmt)
    assert result.exit_code == 0
    assert {p.name for p in tmp_path.iterdir()} == {n.replace(".csv", f".{fmt}") for n in OUTPUTS}


@pytest.mark.parametrize(
    ("keep", "rep"), [("first", "doc-09"), ("longest", "doc-09"), ("shortest", "doc-10")]
)
def test_keep_policy(tmp_path: Path, keep: str, rep: str) -> None:
    assert run("dedup", "--demo", "-o", tmp_path, "-q", "--keep", keep).exit_code == 0
    clusters = pacsv.read_csv(tmp_path / "clusters.csv").to_pylist()
    boiler = next(c for c in clusters if "doc-10" in json.loads(c["members"]))
    assert boiler["representative"] == rep


def test_readme_documents_every_option() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    option_rows = "\n".join(line for line in readme.splitlines() if line.startswith("| `-"))
    documented = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", option_rows))
    command = main.commands["dedup"]  # type: ignore[attr-defined]
    flags = {f for p in command.params for f in [*p.opts, *p.secondary_opts] if f.startswith("--")}
    assert documented == flags - {"--help"}


def test_empty_documents_match_only_when_asked(tmp_path: Path) -> None:
    src = write(tmp_path / "in.jsonl", '{"text": "!!!"}\n{"text": ""}\n{"text": "some words here"}\n')
    plain = run("dedup", src, "-o", tmp_path / "a", "--json")
    assert plain.exit_code == 0
    assert (json.loads(plain.stdout)["empty_documents"], json.loads(plain.stdout)["duplicates_removed"]) == (
        2,
        0,
    )
    asked = run("dedup", src, "-o", tmp_path / "b", "--json", "--match-empty")
    assert json.loads(asked.stdout)["duplicates_removed"] == 1


def test_html_folder_and_text_lines(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    body = "<p>Near duplicate pages share most of their visible text, word for word.</p>"
    write(pages / "a.html", f"<html><head><style>p {{color: red}}</style></head><body>{body}</body></html>")
    write(pages / "b.htm", f"<html><body><script>var x = 1;</script>{body}<p>Footer.</p></body></html>")
    write(pages / "c.html", "<html><body><p>Something else entirely.</p></body></html>")
    result = run("dedup", pages, "-o", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["input_rows"], summary["duplicates_removed"], summary["output_format"]) == (3, 1, "csv")
    rows = pacsv.read_csv(tmp_path / "out" / "annotated.csv").to_pylist()
    assert all("color" not in r["text"] and "var x" not in r["text"] for r in rows)

    lines = write(tmp_path / "lines.txt", "first line of text here\nFirst line of text, here!\n\nanother\n")
    result = run("dedup", lines, "--lines", "-o", tmp_path / "out2", "--json")
    assert (json.loads(result.stdout)["input_rows"], json.loads(result.stdout)["duplicates_removed"]) == (
        3,
        1,
    )


def test_command_exit_codes_and_flushed_output(tmp_path: Path) -> None:
    """The command (``run``: ``main`` without the interpreter's teardown) keeps main's exit codes
    and writes all of standard output and error before it leaves."""
    import subprocess
    import sys

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "neardup.cli", *args], capture_output=True, text=True, check=False
        )

    done = command("dedup", "--demo", "-o", str(tmp_path / "out"), "--json", "-q")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["input_rows"] > 10  # the whole summary, flushed
    missing = tmp_path / "missing.jsonl"
    done = command("dedup", str(missing), "-o", str(tmp_path / "o2"))
    assert done.returncode == 1
    assert done.stderr == f"neardup: error: {missing}: no such file or directory\n"
    done = command("dedup", "--demo", "-o", str(tmp_path / "o3"), "--threshold", "2")
    assert (done.returncode, done.stderr) == (2, "neardup: error: --threshold must be in (0, 1], got 2.0\n")


def test_command_runs_without_pandas_and_the_library_keeps_it(tmp_path: Path) -> None:
    """pyarrow would import pandas (where installed) and dateutil at its first numpy conversion;
    the command hides them, deduplicates all the same (ids checked, JSON written) and never loads
    them."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("pandas") is None:
        pytest.skip("pandas is not installed: nothing to hide")
    texts = ["a cat sat on the warm mat", "rain fell over the quiet town", "ships sail at dawn from the bay"]
    rows = [{"id": f"d{i}", "text": texts[i % 3]} for i in range(12)]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    script = (
        "import os, sys\n"
        "real_exit = os._exit\n"
        "def report_and_exit(code):\n"
        "    loaded = [m for m in ('pandas', 'dateutil') if sys.modules.get(m) is not None]\n"
        "    print('loaded:', loaded, flush=True)\n"
        "    real_exit(code)\n"
        "os._exit = report_and_exit\n"
        "from neardup.cli import run\n"
        "run()\n"
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", script, "dedup", str(corpus), "-o", str(out), "--id-column", "id", "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "loaded: []"
    assert len((out / "deduped.jsonl").read_text(encoding="utf-8").splitlines()) == 3
    # the library, imported as usual, leaves pandas alone
    assert _pandas_after_a_numpy_conversion() is True


def test_command_never_imports_scipy_but_numba_in_the_library_does(tmp_path: Path) -> None:
    """numba's set-up imports ``scipy.linalg`` where scipy is installed (0.2 s before the first
    kernel loads); the command hides it and deduplicates all the same, while the library, imported
    as usual, leaves it to numba. A package named scipy on the path stands for an installed one:
    importing it writes a file."""
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    marker = tmp_path / "scipy-imported"
    (site / "scipy" / "linalg").mkdir(parents=True)
    (site / "scipy" / "__init__.py").write_text(
        f"__version__ = '1.17.0'\nopen({str(marker)!r}, 'a').write(__name__ + '\\n')\n", encoding="utf-8"
    )
    (site / "scipy" / "linalg" / "__init__.py").write_text("", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    texts = ["a cat sat on the warm mat today", "rain fell over the quiet town", "ships sail at dawn"]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": texts[i % 3]}) + "\n" for i in range(9)), encoding="utf-8")
    command = [sys.executable, "-c", "from neardup.cli import run; run()"]
    out = tmp_path / "out"
    done = subprocess.run(
        [*command, "dedup", str(corpus), "-o", str(out), "-q"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert len((out / "deduped.jsonl").read_text(encoding="utf-8").splitlines()) == 3
    assert not marker.exists()
    # imported as a library, numba looks for scipy as it always does
    script = "from neardup.core.text import tokenize; tokenize('warm up the kernels')"
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    assert marker.read_text(encoding="utf-8").splitlines() == ["scipy"]


def test_command_hides_cffi_and_yaml_from_numba_only(tmp_path: Path) -> None:
    """numba imports cffi (for kernels calling cffi functions) and PyYAML (to read a
    ``.numba_config.yaml``) as it starts; the command hides both from numba alone, and PyYAML only
    while the working folder has no such file. Stand-in packages on the path write a file when
    imported."""
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    marker = tmp_path / "imported"
    for name in ("cffi", "yaml"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
            "class FFI:\n    pass\n"
            "def safe_load(stream):\n    return {}\n",
            encoding="utf-8",
        )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    texts = ["a cat sat on the warm mat today", "rain fell over the quiet town", "ships sail at dawn"]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": texts[i % 3]}) + "\n" for i in range(9)), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()

    def dedup(out: str) -> None:
        command = [
            sys.executable,
            "-c",
            "from neardup.cli import run; run()",
            "dedup",
            str(corpus),
            "-o",
            out,
            "-q",
        ]
        done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert len((work / out / "deduped.jsonl").read_text(encoding="utf-8").splitlines()) == 3

    dedup("out")
    assert not marker.exists()
    # a numba config file in the working folder is read as numba reads it
    (work / ".numba_config.yaml").write_text("", encoding="utf-8")
    dedup("out2")
    assert marker.read_text(encoding="utf-8").splitlines() == ["yaml"]
    marker.unlink()
    # inside the command, every other module imports them as usual
    script = "from neardup.cli import _hide_unused; _hide_unused(); import cffi, yaml"
    subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, check=True, capture_output=True)
    assert marker.read_text(encoding="utf-8").splitlines() == ["cffi", "yaml"]


def _pandas_after_a_numpy_conversion() -> bool:
    import subprocess
    import sys

    script = (
        "import sys, pyarrow as pa, pyarrow.compute as pc, neardup\n"
        "pc.utf8_length(pa.nulls(2, pa.string())).to_numpy(zero_copy_only=False)\n"
        "print(sys.modules.get('pandas') is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


_BLAS_THREADS = """
import ctypes, os, sys
def blas_threads():
    # OpenBLAS's own count, from the copy numpy loaded (found in this process's mappings)
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    names = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for name in names:
            if hasattr(lib, name):
                return getattr(lib, name)()
    return None
"""


def _blas_threads_in(script: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _BLAS_THREADS + script], env=env, cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stderr.strip().splitlines()[-1]


def test_command_loads_numpy_with_one_blas_thread_and_leaves_the_environment_alone(tmp_path: Path) -> None:
    """OpenBLAS starts a thread per further core as numpy loads, each spinning for a while
    (neardup makes no BLAS calls): the command loads it on one thread, takes the variable that
    says so out again, and keeps a count the user chose."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    plain = _blas_threads_in("import numpy\nsys.stderr.write(f'{blas_threads()}\\n')", env, tmp_path)
    if plain == "None" or (os.cpu_count() or 1) < 2:
        pytest.skip("needs numpy's OpenBLAS and two cores")
    assert int(plain) > 1  # numpy alone starts more than one
    command = (
        "import neardup.cli as cli\n"
        "real = os._exit\n"
        "def out(code):\n"
        "    sys.stderr.write(f'{blas_threads()} {os.environ.get(\"OPENBLAS_NUM_THREADS\")}\\n')\n"
        "    sys.stderr.flush(); real(code)\n"
        "os._exit = out\n"
        "sys.argv = ['neardup', 'dedup', '--demo', '-o', 'out', '-q']\n"
        "cli.run()\n"
    )
    assert _blas_threads_in(command, env, tmp_path) == "1 None"
    assert (tmp_path / "out" / "summary.json").is_file()  # the run went through
    chosen = _blas_threads_in(command, {**env, "OPENBLAS_NUM_THREADS": "2"}, tmp_path)
    assert chosen == "2 2"


def test_percentages_never_round_a_change_away() -> None:
    from neardup.cli import _count, _percent

    assert [_percent(31_251, 31_252), _percent(1, 3), _percent(5, 5), _percent(0, 5)] == [
        "99.997%",
        "33.3%",
        "100.0%",
        "0.0%",
    ]
    assert _percent(1, 10**9) == ">0.0001%"
    assert (_count(1, "document"), _count(2_000, "document")) == ("1 document", "2,000 documents")


def test_shell_completion_completes_commands_and_options() -> None:
    """The README's completion lines work: click answers the shell's completion request."""
    import os

    env = {**os.environ, "_NEARDUP_COMPLETE": "bash_complete", "COMP_WORDS": "neardup de", "COMP_CWORD": "1"}
    command = [str(Path(sys.executable).with_name("neardup"))]  # the installed command
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert "plain,dedup" in done.stdout.splitlines()
    env.update(COMP_WORDS="neardup dedup --memory-", COMP_CWORD="2")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert "plain,--memory-limit" in done.stdout.splitlines()


@pytest.mark.parametrize(
    "mode_args",
    [[], ["--output-format", "csv"], ["--work-memory", "1MiB"], ["--work-dir", "WORK"]],
    ids=["passes", "in-memory", "streaming", "work-dir"],
)
def test_outputs_writes_only_the_tables_asked_for(tmp_path: Path, mode_args: list[str]) -> None:
    corpus = tmp_path / "in.jsonl"
    words = [f"w{i}" for i in range(400)]
    rows = [{"text": " ".join(words[(i * 37 + k * 11) % 400] for k in range(12))} for i in range(30)]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows + rows[:5]))
    out = tmp_path / "out"
    args = [str(tmp_path / "WORK") if a == "WORK" else a for a in mode_args]
    full = run("dedup", corpus, "-o", out, "-q", *args)
    assert full.exit_code == 0, full.output
    assert len([p for p in out.iterdir() if not p.name.startswith(".")]) == 7
    all_deduped = next(out.glob("deduped.*")).read_bytes()
    done = run("dedup", corpus, "-o", out, "-q", "--json", "--outputs", "duplicates,deduped", *args)
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["outputs"] == ["deduped", "duplicates"]
    assert summary["duplicates_removed"] == 5
    names = sorted(p.name.split(".")[0] for p in out.iterdir() if not p.name.startswith("."))
    assert names == ["deduped", "duplicates", "summary"]  # the earlier run's other tables are gone
    assert next(out.glob("deduped.*")).read_bytes() == all_deduped
    only_clusters = run("dedup", corpus, "-o", out, "-q", "--outputs", "clusters", *args)
    assert only_clusters.exit_code == 0
    assert sorted(p.name.split(".")[0] for p in out.iterdir() if not p.name.startswith(".")) == [
        "clusters",
        "summary",
    ]


def test_outputs_refuses_an_unknown_table(tmp_path: Path) -> None:
    done = run("dedup", "--demo", "-o", tmp_path / "out", "--outputs", "deduped,buckets")
    assert done.exit_code == 2
    assert done.stderr == (
        "neardup: error: unknown --outputs table 'buckets'; choose from annotated, deduped, duplicates, "
        "clusters, candidate_pairs, lsh_buckets\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("mode_args", [[], ["--work-memory", "1MiB"]], ids=["in-memory", "streaming"])
def test_rows_of_several_files_name_their_file(tmp_path: Path, mode_args: list[str]) -> None:
    """With more than one input file, annotated, deduped and duplicates say which file each row
    came from (source_file), so a sharded crawl can be traced back."""
    a, b = tmp_path / "shard-a.jsonl", tmp_path / "shard-b.csv"
    a.write_text(json.dumps({"text": "the harbour opens at dawn for the fishing boats"}) + "\n")
    b.write_text("text\nthe harbour opens at dawn for the fishing boats!\nan unrelated line about bread\n")
    out = tmp_path / "out"
    done = run("dedup", a, b, "-o", out, "-q", "--output-format", "jsonl", *mode_args)
    assert done.exit_code == 0, done.output
    annotated = [json.loads(line) for line in (out / "annotated.jsonl").read_text().splitlines()]
    assert [r["source_file"] for r in annotated] == [str(a), str(b), str(b)]
    duplicates = [json.loads(line) for line in (out / "duplicates.jsonl").read_text().splitlines()]
    assert [(r["source_file"], r["duplicate_of"]) for r in duplicates] == [(str(b), 0)]
    assert run("dedup", a, "-o", tmp_path / "one", "-q").exit_code == 0
    assert "source_file" not in (tmp_path / "one" / "annotated.jsonl").read_text()


def _crawl(tmp_path: Path) -> Path:
    crawl = tmp_path / "crawl"
    (crawl / "2024").mkdir(parents=True)
    (crawl / "2025").mkdir()
    words = [f"w{i}" for i in range(300)]
    texts = [" ".join(words[(i * 31 + k * 7) % 300] for k in range(10)) for i in range(12)]
    (crawl / "2024" / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[:6]))
    (crawl / "2025" / "b.jsonl").write_text("".join(json.dumps({"text": t + "!"}) + "\n" for t in texts[3:9]))
    (crawl / "2025" / "c.jsonl").write_text(json.dumps({"text": texts[0].upper()}) + "\n")
    return crawl


@pytest.mark.parametrize(
    "mode_args",
    [[], ["--work-memory", "1MiB"], ["--output-format", "csv"], ["--output-format", "parquet"]],
    ids=["in-memory", "streaming", "csv", "parquet"],
)
def test_keep_layout_writes_deduped_one_file_per_input(tmp_path: Path, mode_args: list[str]) -> None:
    """The kept rows of each input file, in its file under the same relative name, and nothing
    else: together they are the deduped table of a run without --keep-layout."""
    crawl = _crawl(tmp_path)
    flat, kept = tmp_path / "flat", tmp_path / "kept"
    assert run("dedup", crawl, "-o", flat, "-q", *mode_args).exit_code == 0
    done = run("dedup", crawl, "-o", kept, "-q", "--keep-layout", *mode_args)
    assert done.exit_code == 0, done.output
    fmt = "jsonl" if not mode_args or mode_args[0] == "--work-memory" else mode_args[1]
    files = sorted(str(p.relative_to(kept / "deduped")) for p in (kept / "deduped").rglob("*") if p.is_file())
    assert files == [f"2024/a.{fmt}", f"2025/b.{fmt}", f"2025/c.{fmt}"]
    assert not list(kept.glob("deduped.*"))
    readers = {"jsonl": pa_json.read_json, "csv": pacsv.read_csv, "parquet": pq.read_table}

    def read(path: Path) -> pa.Table:  # an input with no row kept has an empty JSON Lines file
        return pa.table({}) if fmt == "jsonl" and not path.stat().st_size else readers[fmt](path)

    whole = read(flat / f"deduped.{fmt}")
    parts = [read(kept / "deduped" / name) for name in files]
    by_file = [
        whole.filter(pc.equal(whole["source_file"], str(crawl / name.replace(f".{fmt}", ".jsonl"))))
        for name in files
    ]
    for part, want in zip(parts, by_file, strict=True):
        assert part.num_rows == want.num_rows
        if part.num_rows:
            assert part.column_names == [n for n in whole.column_names if n != "source_file"]
            assert part.column("text").to_pylist() == want.column("text").to_pylist()
    assert sum(p.num_rows for p in parts) == whole.num_rows < 13
    again = run("dedup", crawl, "-o", kept, "-q", *mode_args)  # without the layout: one file again
    assert again.exit_code == 0 and not (kept / "deduped").exists() and (kept / f"deduped.{fmt}").exists()


def test_keep_layout_refuses_two_inputs_of_one_name(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n')
    (tmp_path / "a.csv").write_text("text\ntwo\n")
    done = run("dedup", tmp_path / "a.jsonl", tmp_path / "a.csv", "-o", tmp_path / "out", "--keep-layout")
    assert done.exit_code == 2
    assert "would both be written as deduped/a.jsonl" in done.stderr and "--keep-layout" in done.stderr
    assert not (tmp_path / "out").exists()
    demo = run("dedup", "--demo", "-o", tmp_path / "demo", "--keep-layout")
    assert demo.exit_code == 2 and "--keep-layout writes a file per input file" in demo.stderr


def test_tables_fit_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every table the commands print fits an 80-column terminal, in each mode and against an
    index: no line is longer, no row wraps but one holding a path too long for it, and that one
    folds rather than being cut."""
    monkeypatch.chdir(tmp_path)
    write(
        Path("in.jsonl"),
        "".join(
            json.dumps({"id": f"d{i}", "text": f"row {i % 7} of a corpus of short texts"}) + "\n"
            for i in range(60)
        ),
    )
    work = tmp_path / ("a-rather-long-folder-name-" * 3) / "work"
    commands = [
        ("dedup", "--demo", "-o", "demo"),
        ("dedup", "in.jsonl", "-o", "passes"),
        ("dedup", "in.jsonl", "-o", "memory", "--output-format", "parquet"),
        ("dedup", "in.jsonl", "-o", "streamed", "--work-dir", work),
        ("index", "build", "in.jsonl", "--index", "idx.db", "--id-column", "id"),
        ("dedup", "in.jsonl", "-o", "against", "--against", "idx.db", "--id-column", "id"),
        ("index", "stats", "--index", "idx.db"),
    ]
    for command in commands:
        done = CliRunner(env={"COLUMNS": "80"}).invoke(main, [str(a) for a in command])
        assert done.exit_code == 0, done.output
        lines = done.stdout.splitlines()
        assert sum(line.startswith("│") for line in lines) >= 5 or command[:2] == ("index", "build")
        assert max(len(line) for line in lines) <= 80, done.stdout
        assert "…" not in done.stdout
        rows = [line for line in lines if line.startswith("│")]
        starts = [row for row in rows if not re.match(r"│ +│", row)]
        wrapped = [row for row, after in itertools.pairwise(rows) if row in starts and after not in starts]
        assert all(row.startswith(("│ Work dir", "│ Location", "│ Output")) for row in wrapped), done.stdout
        if "--work-dir" in command:
            assert wrapped  # the long work dir folds, and every character of it is there
            shown = "".join(row.split("│")[2].strip() for row in rows[rows.index(wrapped[0]) :])
            assert str(work) in shown
