"""Incremental dedup against an index: the same decisions as one run over everything."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from neardup import DedupConfig, dedup, shingle_hashes
from neardup.core.minhash import MinHasher
from neardup.core.text import encode_texts
from neardup.errors import IndexSettingsError
from neardup.incremental import add_kept, dedup_against
from neardup.index import LSHIndex
from neardup.outputs import against_tables
from synthetic import planted_corpus

RECORDS = planted_corpus(400, seed=3)
TEXTS = [str(r["text"]) for r in RECORDS]
IDS = [str(r["id"]) for r in RECORDS]


def removed_whole(config: DedupConfig | None = None) -> set[str]:
    result = dedup(TEXTS, config)
    return {IDS[i] for i in np.flatnonzero(result.is_duplicate)}


def removed_in_halves(index: LSHIndex, config: DedupConfig | None = None) -> set[str]:
    removed: set[str] = set()
    for lo, hi in ((0, 200), (200, 400)):
        batch = encode_texts(TEXTS[lo:hi])
        result = dedup_against(batch, index, config)
        removed |= {IDS[lo + i] for i in np.flatnonzero(result.is_duplicate)}
        add_kept(index, batch, result, IDS[lo:hi])
    return removed


@pytest.mark.parametrize("keep_shingles", [False, True])
def test_two_halves_remove_the_same_rows_as_one_run(keep_shingles: bool) -> None:
    whole = removed_whole()
    assert len(whole) > 50  # the planted duplicates are found
    with LSHIndex.open("memory://", keep_shingles=keep_shingles) as index:
        assert removed_in_halves(index) == whole
        assert len(index) == 400 - len(whole)
        # the documents added carry their shingle counts: distinct ones where the sets are kept
        key = next(iter(index.storage.keys()))
        info = index.info(key)
        text = TEXTS[IDS.index(key)]
        config = index.settings.to_config()
        hasher = MinHasher(config.minhash, config.text, config.shingle)
        raw = int(hasher.signatures_with_counts(encode_texts([text]))[1][0])
        counted = len(shingle_hashes(text)) if keep_shingles else raw
        assert info is not None and info.shingles == counted


def test_two_halves_through_sqlite(tmp_path: Path) -> None:
    with LSHIndex.open(tmp_path / "idx.db") as index:
        assert removed_in_halves(index) == removed_whole()


def test_matches_report_the_kind_of_similarity() -> None:
    for keep_shingles, kind in ((False, False), (True, True)):
        with LSHIndex.open("memory://", keep_shingles=keep_shingles) as index:
            index.insert_many(IDS[:200], TEXTS[:200])
            result = dedup_against(encode_texts(TEXTS[200:]), index)
            assert len(result.matches) > 0
            assert result.matches.exact is kind
            assert np.all(result.matches.similarity >= index.settings.threshold)
            tables = against_tables(_table(200, 400), "id", result)
            pairs = tables["candidate_pairs"].to_pylist()
            index_pairs = [p for p in pairs if p["matched_index"]]
            assert len(index_pairs) == len(result.matches)
            assert {p["jaccard_kind"] for p in index_pairs} == {"exact" if kind else "estimated"}
            assert {p["id_b"] for p in index_pairs} <= set(IDS[:200])


def test_rerun_after_update_removes_everything() -> None:
    batch = encode_texts(TEXTS[:100])
    with LSHIndex.open("memory://") as index:
        first = dedup_against(batch, index)
        assert add_kept(index, batch, first, IDS[:100]) == int(first.keep.sum())
        again = dedup_against(batch, index)
        assert not again.keep.any()
        assert again.matched_index.all()
        assert add_kept(index, batch, again, IDS[:100]) == 0


def test_index_document_represents_its_cluster() -> None:
    old = "one two three four five six seven eight nine ten eleven twelve"
    near = "one two three four five six seven eight nine ten eleven twelve thirteen"
    nearer = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    with LSHIndex.open("memory://") as index:
        index.insert("old", old)
        for keep in ("first", "longest", "shortest"):
            config = DedupConfig.create(keep=keep)  # type: ignore[arg-type]
            result = dedup_against(encode_texts([nearer, near, "something else"]), index, config)
            assert result.keep.tolist() == [False, False, True]
            assert result.representative_keys(["a", "b", "c"]) == ["old", "old", "c"]
            assert result.summary()["index"]["rows_matching_index"] == 2


def test_other_settings_are_refused() -> None:
    with LSHIndex.open("memory://") as index, pytest.raises(IndexSettingsError) as info:
        dedup_against(encode_texts(["a b c"]), index, DedupConfig.create(seed=7))
    assert str(info.value) == "the index was built with seed=42 but this config uses seed=7"


def _table(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": IDS[lo:hi], "text": TEXTS[lo:hi]})
