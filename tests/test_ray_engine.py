"""The Ray engine on a real Ray (local mode, 2 CPUs): the local engine's clusters, representatives
and pairs, byte for byte, on the corpora that stress each stage; and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import RAY_GROUP
from neardup.errors import ConfigError, InputError, MissingColumnError, OutputError
from neardup.io import ReadOptions
from neardup.jobs import DedupJob, RayOptions, run_dedup
from ray_helpers import both_engines, chain, parts_of, planted, write_jsonl

pytestmark = [pytest.mark.xdist_group(RAY_GROUP), pytest.mark.usefixtures("local_ray")]


def _ray_job(inputs: list[Path], out: Path, **kwargs: object) -> DedupJob:
    return DedupJob(
        inputs=inputs,
        output_dir=out,
        read=ReadOptions(id_column="id"),
        engine="ray",
        ray=RayOptions(partitions=2, split_bytes=4096),
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("partitions", [1, 5])
def test_planted_near_duplicates_match_the_local_engine(tmp_path: Path, partitions: int) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", planted())
    summary = both_engines([corpus], tmp_path, partitions=partitions)
    assert summary["engine"]["mode"] == "ray"
    assert summary["engine"]["splits"] > 10  # documents cross split boundaries
    assert summary["engine"]["partitions"] == partitions
    assert summary["clusters"] >= 50 and summary["duplicates_removed"] >= 50
    shuffled = summary["engine"]["bytes_shuffled"]
    assert shuffled["signatures"] > 0 and shuffled["documents"] > 0


def test_a_bucket_larger_than_the_max_bucket_size_is_a_star(tmp_path: Path) -> None:
    same = "the very same text of a page that many sites copy word for word again"
    records = [
        {"id": f"s{i}", "text": same if i % 3 else f"{same} and {i} more words of its own"} for i in range(90)
    ]
    corpus = write_jsonl(tmp_path / "c.jsonl", records)
    summary = both_engines([corpus], tmp_path, settings={"max_bucket_size": 10})
    assert summary["clusters"] >= 1
    buckets = [json.loads(line) for line in parts_of(tmp_path / "ray" / "lsh_buckets").splitlines()]
    assert max(b["member_count"] for b in buckets) > 10


def test_a_chain_linked_only_transitively_is_one_cluster(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", chain())
    summary = both_engines([corpus], tmp_path, settings={"threshold": 0.75, "shingle": "word", "ngram": 3})
    rounds = [s for s in summary["engine"]["stages_run"] if s.startswith("large-star")]
    assert len(rounds) > 3  # the components took rounds, not one pass
    clusters = [json.loads(line)["members"] for line in parts_of(tmp_path / "ray" / "clusters").splitlines()]
    biggest = sorted(int(m[1:]) for m in max(clusters, key=len))
    assert len(biggest) > 50
    assert biggest[-1] - biggest[0] > 12  # its ends share no word: linked only through the others


def test_every_document_a_duplicate(tmp_path: Path) -> None:
    records = [
        {"id": f"x{i}", "text": "one text copied everywhere, with nothing changed at all"} for i in range(200)
    ]
    summary = both_engines([write_jsonl(tmp_path / "c.jsonl", records)], tmp_path)
    assert summary["clusters"] == 1 and summary["kept_rows"] == 1


def test_no_duplicates(tmp_path: Path) -> None:
    records = [{"id": f"u{i}", "text": f"unique words {i} {i * 7} {i * 13} here"} for i in range(300)]
    summary = both_engines([write_jsonl(tmp_path / "c.jsonl", records)], tmp_path)
    assert summary["clusters"] == 0 and summary["kept_rows"] == 300


@pytest.mark.parametrize("match_empty", [False, True])
def test_empty_documents(tmp_path: Path, match_empty: bool) -> None:
    records = planted(300)
    for i in range(0, 300, 17):
        records[i]["text"] = "" if i % 2 else "  ... !! "
    records[5]["text"] = None
    summary = both_engines(
        [write_jsonl(tmp_path / "c.jsonl", records)], tmp_path, settings={"match_empty": match_empty or None}
    )
    assert summary["empty_documents"] == 19


@pytest.mark.parametrize(
    "settings",
    [{"keep": "longest"}, {"keep": "shortest"}, {"verify": False}, {"shingle": "char", "ngram": 5}],
)
def test_settings_match_the_local_engine(tmp_path: Path, settings: dict[str, object]) -> None:
    both_engines([write_jsonl(tmp_path / "c.jsonl", planted(400))], tmp_path, settings=settings)


def test_jieba_words_match_the_local_engine(tmp_path: Path) -> None:
    """Ray's workers cut Chinese texts with jieba as the local engine does."""
    pytest.importorskip("jieba")
    texts = [json.loads(line)["text"] for line in (Path(__file__).parent / "data" / "zh_texts.jsonl").open()]
    rows = []
    for i, text in enumerate(texts):
        rows.append({"id": f"t{i}", "text": text})
        rows.append(
            {"id": f"t{i}-copy", "text": text[: len(text) // 2] + "，" + text[len(text) // 2 :] + "。"}
        )
    source = tmp_path / "zh.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    summary = both_engines([source], tmp_path, settings={"tokenizer": "jieba", "ngram": 1})
    assert summary["duplicates_removed"] == len(texts)


def test_generated_ids_and_several_files(tmp_path: Path) -> None:
    records = planted(500)
    a = write_jsonl(tmp_path / "a.jsonl", [{"text": r["text"]} for r in records[:250]])
    b = write_jsonl(tmp_path / "b.jsonl", [{"text": r["text"]} for r in records[250:]])
    summary = both_engines([a, b], tmp_path, id_column=None)
    assert summary["id_column"] == "row_id"
    first = json.loads(parts_of(tmp_path / "ray" / "annotated").splitlines()[0])
    assert list(first)[:2] == ["row_id", "text"] and first["source_file"] == str(a)


def test_parquet_in_parquet_out(tmp_path: Path) -> None:
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(planted(500)), path, row_group_size=60)
    summary = both_engines([path], tmp_path, split_bytes=1)  # a split per row group
    assert summary["engine"]["splits"] == 9
    assert summary["output_format"] == "parquet"


def test_gzipped_json_lines(tmp_path: Path) -> None:
    import gzip

    plain = write_jsonl(tmp_path / "c.jsonl", planted(300))
    packed = tmp_path / "c.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    both_engines([packed], tmp_path)


def test_the_cli_runs_on_ray(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", planted(300))
    neardup = str(Path(sys.executable).with_name("neardup"))
    base = [neardup, "dedup", str(corpus), "--id-column", "id", "-q"]
    subprocess.run([*base, "-o", str(tmp_path / "local")], check=True)
    done = subprocess.run(
        [*base, "-o", str(tmp_path / "ray"), "--engine", "ray", "--partitions", "3", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    summary = json.loads(done.stdout)
    assert summary["engine"]["ray"]["address"] == "local" and summary["engine"]["partitions"] == 3
    assert parts_of(tmp_path / "ray" / "clusters") == (tmp_path / "local" / "clusters.jsonl").read_bytes()
    assert not (tmp_path / "ray" / ".neardup-work").exists()  # removed once the run succeeded


def test_engine_options_are_refused_where_they_do_not_apply(tmp_path: Path) -> None:
    neardup = str(Path(sys.executable).with_name("neardup"))
    done = subprocess.run(
        [neardup, "dedup", "x.jsonl", "-o", str(tmp_path), "--partitions", "4"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--partitions is for --engine ray" in done.stderr
    done = subprocess.run(
        [neardup, "dedup", "x.jsonl", "-o", str(tmp_path), "--engine", "ray", "--memory-limit", "1GB"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--memory-limit sizes the local engine" in done.stderr


def test_a_bad_line_names_its_file_and_line(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in planted(200)]
    lines[150] = '{"id": "broken", "text": "no closing quote}'
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        run_dedup(_ray_job([corpus], tmp_path / "out"))
    assert caught.value.path == str(corpus) and caught.value.line == 151
    assert not (tmp_path / "out" / "summary.json").exists()


def test_two_objects_on_a_line_name_their_file_and_line(tmp_path: Path) -> None:
    """As on the local engine: a JSON Lines line is one record, though pyarrow reads two."""
    lines = [json.dumps(r) for r in planted(200)]
    lines[150] = '{"id": "a", "text": "one"} {"id": "b", "text": "two"}'
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        run_dedup(_ray_job([corpus], tmp_path / "out"))
    assert (caught.value.path, caught.value.line) == (str(corpus), 151)
    assert caught.value.reason == (
        "a second JSON value on the line (a JSON Lines line holds one record) at column 28"
    )


def test_a_missing_text_column_names_the_file(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "body": "text"}])
    with pytest.raises(MissingColumnError, match="no column 'text'"):
        run_dedup(_ray_job([corpus], tmp_path / "out"))


def test_formats_and_options_the_ray_engine_does_not_take(tmp_path: Path) -> None:
    csv = tmp_path / "c.csv"
    csv.write_text("id,text\na,b\n")
    with pytest.raises(ConfigError, match=r"reads JSON Lines .* and Parquet, not \.csv"):
        run_dedup(_ray_job([csv], tmp_path / "out"))
    corpus = write_jsonl(tmp_path / "c.jsonl", planted(20))
    skip = DedupJob(
        inputs=[corpus], output_dir=tmp_path / "o", read=ReadOptions(on_error="skip"), engine="ray"
    )
    with pytest.raises(ConfigError, match="on_error='skip' runs on the local engine"):
        run_dedup(skip)
    with pytest.raises(ConfigError, match="writes jsonl or parquet, not csv"):
        run_dedup(_ray_job([corpus], tmp_path / "out", output_format="csv"))


def test_a_run_resumes_from_its_finished_stages(tmp_path: Path) -> None:
    """The engine's stages run to the end but the job's last steps do not (as when the driver
    dies before the summary); the same job then takes every stage but the outputs from the work
    location."""
    from neardup.engines.ray.engine import RayDedup
    from neardup.engines.ray.location import Location
    from neardup.io.writers import OUTPUT_TABLES

    corpus = write_jsonl(tmp_path / "c.jsonl", planted(300))
    out, work = tmp_path / "out", tmp_path / "work"
    with pytest.raises(OutputError, match="exists and is not a directory"):
        out.write_text("in the way")
        run_dedup(_ray_job([corpus], out, work_dir=work))
    out.unlink()
    job = _ray_job([corpus], out, work_dir=work)
    RayDedup(
        [str(corpus)],
        options=job.read,
        config=job.config(),
        work=Location(str(work)),
        output=Location(str(out)),
        output_format=None,
        outputs=OUTPUT_TABLES,
        partitions=2,
        cpus=2,
        split_bytes=4096,
    ).run()
    assert (work / "stages" / "ranks.json").exists() and not (out / "summary.json").exists()
    summary = run_dedup(job)
    assert {"signatures", "buckets", "verify", "ranks"} <= set(summary["engine"]["stages_resumed"])
    assert summary["engine"]["stages_run"] == ["write"]
    run_dedup(DedupJob(inputs=[corpus], output_dir=tmp_path / "local", read=ReadOptions(id_column="id")))
    assert parts_of(out / "annotated") == (tmp_path / "local" / "annotated.jsonl").read_bytes()
    assert not work.exists()


def test_a_work_location_of_other_settings_is_refused(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", planted(100))
    work = tmp_path / "work"
    work.mkdir()
    (work / "manifest.json").write_text(json.dumps({"version": 1, "config": {}}))
    with pytest.raises(ConfigError, match="holds a run with other config"):
        run_dedup(_ray_job([corpus], tmp_path / "out", work_dir=work))
    summary = run_dedup(_ray_job([corpus], tmp_path / "out", work_dir=work, resume=False))
    assert summary["engine"]["stages_resumed"] == []


def test_without_ray_the_message_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys, importlib.abc\n"
        "class NoRay(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.partition('.')[0] == 'ray': raise ModuleNotFoundError(name=name)\n"
        "sys.meta_path.insert(0, NoRay())\n"
        "from neardup.cli import run\n"
        f"sys.argv = ['neardup', 'dedup', {str(tmp_path / 'c.jsonl')!r}, '-o', {str(tmp_path / 'o')!r},"
        " '--engine', 'ray']\n"
        "run()\n"
    )
    write_jsonl(tmp_path / "c.jsonl", planted(10))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert "the Ray engine needs Ray: pip install 'neardup[ray]'" in done.stderr


def test_a_repeated_id_names_both_records(tmp_path: Path) -> None:
    records = planted(300)
    records[250]["id"] = records[40]["id"]
    corpus = write_jsonl(tmp_path / "c.jsonl", records)
    with pytest.raises(InputError) as caught:
        run_dedup(_ray_job([corpus], tmp_path / "out"))
    assert caught.value.line == 251
    assert f"duplicate id 'd40' (first seen at {corpus}:41)" in str(caught.value)
    with pytest.raises(InputError) as local:  # the local engine's words
        run_dedup(DedupJob(inputs=[corpus], output_dir=tmp_path / "local", read=ReadOptions(id_column="id")))
    assert str(local.value) == str(caught.value)


def test_an_empty_id_names_its_record(tmp_path: Path) -> None:
    records = planted(100)
    records[70]["id"] = None
    with pytest.raises(InputError, match="id column 'id' is empty") as caught:
        run_dedup(_ray_job([write_jsonl(tmp_path / "c.jsonl", records)], tmp_path / "out"))
    assert caught.value.line == 71


def test_a_second_run_replaces_the_tables_and_summary(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", planted(200))
    out = tmp_path / "out"
    run_dedup(_ray_job([corpus], out))
    (out / "notes.txt").write_text("the user's own")
    summary = run_dedup(_ray_job([corpus], out, outputs="deduped"))
    assert sorted(p.name for p in out.iterdir()) == ["deduped", "notes.txt", "summary.json"]
    assert summary["outputs"] == ["deduped"]


def test_a_ray_run_over_a_local_runs_folder_leaves_only_its_own_tables(tmp_path: Path) -> None:
    """The parts go into a staging folder committed as the local engine's files are: the local
    run's files of every table go (readers would take them before a folder), no staging stays."""
    corpus = write_jsonl(tmp_path / "c.jsonl", planted(200))
    out = tmp_path / "out"
    local = DedupJob(inputs=[corpus], output_dir=out, read=ReadOptions(id_column="id"), output_format="csv")
    run_dedup(local)
    assert (out / "annotated.csv").is_file()
    run_dedup(_ray_job([corpus], out, outputs="deduped,clusters"))
    assert sorted(p.name for p in out.iterdir()) == ["clusters", "deduped", "summary.json"]
    assert parts_of(out / "deduped")


def test_null_texts_are_counted_and_noted_as_the_local_engine_counts_them(tmp_path: Path) -> None:
    from neardup.jobs import RunEvents

    class Notes(RunEvents):
        def __init__(self) -> None:
            self.said: list[str] = []

        def note(self, message: str) -> None:
            self.said.append(message)

    records: list[dict[str, object]] = list(planted(300))
    for k in (5, 150, 299):
        records[k]["text"] = None
    del records[77]["text"]
    corpus = write_jsonl(tmp_path / "c.jsonl", records)
    summary = both_engines([corpus], tmp_path)  # the same tables, and the same figures
    local = json.loads((tmp_path / "local" / "summary.json").read_text())
    assert summary["null_texts"] == local["null_texts"] == 4
    assert json.loads((tmp_path / "ray" / "summary.json").read_text())["null_texts"] == 4
    notes = Notes()
    run_dedup(_ray_job([corpus], tmp_path / "again"), notes)
    assert [n for n in notes.said if "null text" in n] == [
        "4 rows have a null text (null, or no text field): deduplicated as empty (null_texts in summary.json)"
    ]


def test_the_report_of_a_ray_run_is_the_local_engines(tmp_path: Path) -> None:
    from neardup.report.data import build_report
    from report_helpers import chain_records

    corpus = write_jsonl(tmp_path / "c.jsonl", chain_records())
    settings = {"threshold": 0.5, "bands": 64, "rows": 2}
    run_dedup(
        DedupJob(
            inputs=[corpus],
            output_dir=tmp_path / "local",
            read=ReadOptions(id_column="id"),
            settings=settings,
        )
    )
    run_dedup(_ray_job([corpus], tmp_path / "ray", settings=settings, report=True))
    assert (tmp_path / "ray" / "report.html").is_file()
    reports = [build_report(tmp_path / name) for name in ("local", "ray")]
    for r in reports:  # where, how fast, and on which engine the two ran
        for key in ("output_dir", "seconds", "engine"):
            del r["run"][key]
    assert reports[1] == reports[0]
    (cluster,) = reports[1]["clusters"]["largest"]
    assert cluster["chain"] and sum(reports[1]["candidates"]["dropped"]) == 2
