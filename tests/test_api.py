"""The library API: what ``import neardup`` offers."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import neardup

TEXTS = [
    "MinHash estimates the Jaccard similarity of two sets of shingles quickly",
    "minhash estimates the jaccard similarity of two sets of shingles, quickly!",
    "An unrelated sentence about bread, flour, water and a long slow rise",
]


def test_all_is_sorted_and_complete() -> None:
    """Every public name is listed, typed for checkers, and resolves to the object it names."""
    tree = ast.parse(Path(neardup.__file__).read_text())
    typed = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("neardup.")
        for alias in node.names
    }
    assert neardup.__all__ == sorted(neardup.__all__)
    assert set(neardup.__all__) == typed | {"__version__"}
    for name in neardup.__all__:
        value = getattr(neardup, name)
        if name != "__version__":
            module = importlib.import_module(neardup._WHERE[name])
            assert value is getattr(module, name)


def test_import_and_help_load_no_numba() -> None:
    """``import neardup`` and ``neardup --help`` stay light: numba loads at the first real use."""
    code = (
        "import sys, neardup, neardup.cli\n"
        "from click.testing import CliRunner\n"
        "assert CliRunner().invoke(neardup.cli.main, ['--help']).exit_code == 0\n"
        "assert CliRunner().invoke(neardup.cli.main, ['--version']).exit_code == 0\n"
        "print(sorted(m for m in ('numba', 'pyarrow', 'numpy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_dedup_list_of_strings() -> None:
    result = neardup.dedup(TEXTS)
    assert result.keep.tolist() == [True, False, True]
    assert result.groups() == [[0, 1]]
    assert len(result.pairs) == 1
    assert result.pairs.exact and result.pairs.jaccard[0] == 1.0


def test_dedup_records_table_and_dataframe_agree() -> None:
    records = [{"id": i, "body": t} for i, t in enumerate(TEXTS)]
    by_records = neardup.dedup(records, text_column="body")
    by_table = neardup.dedup(pa.Table.from_pylist(records), text_column="body")
    by_frame = neardup.dedup(pd.DataFrame(records), text_column="body")
    for result in (by_records, by_table, by_frame):
        assert result.keep.tolist() == [True, False, True]


def test_missing_text_column_is_named() -> None:
    with pytest.raises(neardup.MissingColumnError, match="no column 'text'; the table has: id, body"):
        neardup.dedup(pa.table({"id": [1], "body": ["x"]}))
    with pytest.raises(neardup.MissingColumnError, match="record 1 has no field 'text'"):
        neardup.dedup([{"text": "a"}, {"body": "b"}])


def test_keep_policies() -> None:
    texts = ["short text about the same thing here", "Short text about the same thing here!!! And more"]
    cfg = neardup.DedupConfig.create(threshold=0.5, ngram=2)
    assert neardup.dedup(texts, cfg).keep.tolist() == [True, False]
    longest = neardup.DedupConfig.create(threshold=0.5, ngram=2, keep="longest")
    assert neardup.dedup(texts, longest).keep.tolist() == [False, True]


def test_signatures_estimate_and_exact_jaccard() -> None:
    sigs = neardup.signatures(TEXTS)
    assert sigs.shape == (3, 128) and sigs.dtype == np.uint32
    assert neardup.estimate_jaccard(sigs[0], sigs[1]) == 1.0
    assert neardup.estimate_jaccard(sigs[0], sigs[2]) < 0.2
    assert neardup.exact_jaccard(TEXTS[0], TEXTS[1]) == 1.0
    a = "one two three four five six seven eight nine ten"
    b = "one two three four five six seven eight nine eleven"
    # word 5-grams: 6 each, 5 shared -> 5 / 7
    cfg = neardup.DedupConfig.create(ngram=5)
    assert neardup.exact_jaccard(a, b, cfg) == pytest.approx(5 / 7)


def test_signatures_depend_on_seed_and_num_perm() -> None:
    base = neardup.signatures(TEXTS[:1])
    assert not np.array_equal(base, neardup.signatures(TEXTS[:1], neardup.DedupConfig.create(seed=1)))
    assert neardup.signatures(TEXTS[:1], neardup.DedupConfig.create(num_perm=64)).shape == (1, 64)
    with pytest.raises(neardup.ConfigError, match="different lengths"):
        neardup.estimate_jaccard(base[0], base[0][:64])


def test_config_validation_messages() -> None:
    with pytest.raises(neardup.ConfigError, match=r"threshold must be in \(0, 1\], got 1.5"):
        neardup.DedupConfig.create(threshold=1.5)
    with pytest.raises(neardup.ConfigError, match="bands \\* rows must equal num_perm"):
        neardup.DedupConfig.create(bands=10, rows=10)
    with pytest.raises(neardup.ConfigError, match="keep must be one of"):
        neardup.DedupConfig(keep="middle")  # type: ignore[arg-type]


def test_progress_callback_sees_every_stage() -> None:
    seen: list[str] = []
    neardup.dedup(TEXTS, progress=lambda stage, done, total: seen.append(stage))
    assert list(dict.fromkeys(seen)) == ["signatures", "buckets", "pairs", "verify", "clusters"]


def test_summary_figures() -> None:
    s = neardup.dedup(TEXTS).summary()
    assert (s["input_rows"], s["duplicates_removed"], s["kept_rows"], s["clusters"]) == (3, 1, 2, 1)
    assert (s["bands"], s["rows"], s["num_perm"]) == (61, 4, 128)  # 32 x 4 and a second layer of 29
    assert 0 <= s["s_curve"]["p_below"] <= s["s_curve"]["p_at"] <= s["s_curve"]["p_above"] <= 1


@pytest.mark.parametrize("keep", ["first", "longest"])
def test_find_duplicates_over_chunks_equals_one_batch(keep: str) -> None:
    """An Arrow column in many chunks (as the JSON reader gives it) dedups as one batch does,
    with duplicates whose texts sit in different chunks verified exactly."""
    from neardup.pipeline import arrow_to_batch, arrow_to_batches, find_duplicates
    from synthetic import planted_corpus

    texts = [r["text"] for r in planted_corpus(600, dup_fraction=0.4, seed=9)]
    texts[5] = None  # a null and an empty text in among the chunks
    texts[300] = ""
    column = pa.chunked_array([pa.array(texts[lo : lo + 37], pa.string()) for lo in range(0, len(texts), 37)])
    config = neardup.DedupConfig.create(keep=keep)
    whole = find_duplicates(arrow_to_batch(column), config)
    chunked = find_duplicates(arrow_to_batches(column), config)
    assert len(arrow_to_batches(column)) == column.num_chunks
    assert whole.pairs.left.size > 100
    np.testing.assert_array_equal(chunked.signatures, whole.signatures)
    np.testing.assert_array_equal(chunked.pairs.left, whole.pairs.left)
    np.testing.assert_array_equal(chunked.pairs.right, whole.pairs.right)
    np.testing.assert_array_equal(chunked.pairs.jaccard, whole.pairs.jaccard)
    np.testing.assert_array_equal(chunked.clusters.representative, whole.clusters.representative)
    np.testing.assert_array_equal(chunked.keep, whole.keep)


def test_find_duplicates_takes_a_list_of_texts() -> None:
    from neardup.core.text import encode_texts
    from neardup.pipeline import find_duplicates
    from synthetic import planted_corpus

    texts: list[str | None] = [r["text"] for r in planted_corpus(200, dup_fraction=0.3, seed=4)]
    texts[7] = None
    packed = find_duplicates(encode_texts(texts))
    listed = find_duplicates(texts)
    assert packed.pairs.left.size > 20
    np.testing.assert_array_equal(listed.signatures, packed.signatures)
    np.testing.assert_array_equal(listed.clusters.cluster, packed.clusters.cluster)
    assert find_duplicates([]).clusters.cluster.size == 0
    lean = find_duplicates(texts, keep_signatures=False)
    assert lean.signatures.shape == (0, 128)
    np.testing.assert_array_equal(lean.clusters.cluster, packed.clusters.cluster)
    np.testing.assert_array_equal(lean.pairs.estimated, packed.pairs.estimated)
    with pytest.raises(TypeError, match="not one str"):
        find_duplicates("one text")
    with pytest.raises(TypeError, match="text 1 is a int"):
        find_duplicates(["a", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not a mix"):
        find_duplicates([encode_texts(["a"]), "b"])  # type: ignore[list-item]


def test_a_quiet_json_lines_run_loads_no_html_parser_parquet_index_or_rich(tmp_path: Path) -> None:
    """Each import a run does not need is start-up time on one core: a quiet JSON Lines run with
    JSON Lines outputs loads no HTML parser (4-6 ms), no Parquet (25 ms), no index code (15-20 ms)
    and no rich (20-30 ms), as it shows nothing."""
    corpus = tmp_path / "in.jsonl"
    rows = [{"id": k, "text": f"words {k % 3} and more"} for k in range(9)]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
    argv = ["dedup", str(corpus), "-o", str(tmp_path / "out"), "-q"]
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "import neardup.cli\n"
        f"done = CliRunner().invoke(neardup.cli.main, {argv!r})\n"
        "assert done.exit_code == 0, done.output\n"
        "unused = ('selectolax', 'pyarrow.parquet', 'neardup.index', 'rich')\n"
        "print(sorted(m for m in unused if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "out" / "deduped.jsonl").exists()
