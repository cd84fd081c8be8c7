"""The compiled printer of ``clusters`` and ``lsh_buckets`` rows writes what the table writer
writes for the same rows, byte for byte, whatever the ids and numbers are."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.clusters import Clusters
from neardup.core.lsh import Buckets
from neardup.io.list_lines import HEX, ID, INT, IdTexts, ListRows, list_lines
from neardup.io.writers import jsonl_bytes
from neardup.outputs import bucket_lines, bucket_tables, cluster_lines, cluster_tables

# ids a JSON writer must escape: quotes, backslashes, control characters, non-ASCII, emoji
id_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def lines_of(pieces: list[tuple[np.ndarray, int]]) -> tuple[bytes, int]:
    return b"".join(data.tobytes() for data, _ in pieces), sum(rows for _, rows in pieces)


def table_text(tables: list[pa.Table]) -> bytes:
    return b"".join(jsonl_bytes(t) for t in tables)


@st.composite
def bucket_sets(draw: st.DrawFn) -> tuple[pa.Array, Buckets]:
    n = draw(st.integers(2, 30))
    if draw(st.booleans()):
        ids = pa.array(draw(st.lists(id_text, min_size=n, max_size=n, unique=True)), pa.string())
    else:
        ids = pa.array(draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n, unique=True)))
    rows = draw(st.integers(0, 20))
    sizes = draw(st.lists(st.integers(2, n), min_size=rows, max_size=rows))
    members = np.array([m for s in sizes for m in draw(st.permutations(range(n)))[:s]], dtype=np.int64)
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    band = np.array(draw(st.lists(st.integers(0, 2**31 - 1), min_size=rows, max_size=rows)), dtype=np.int32)
    key = np.array(draw(st.lists(st.integers(0, 2**64 - 1), min_size=rows, max_size=rows)), dtype=np.uint64)
    return ids, Buckets(band=band, key=key, offsets=offsets, members=members)


@settings(max_examples=200, deadline=None)
@given(bucket_sets(), st.integers(1, 40))
def test_bucket_lines_are_the_tables_text(case: tuple[pa.Array, Buckets], max_items: int) -> None:
    ids, buckets = case
    text, rows = lines_of(list(bucket_lines(IdTexts.of(ids), buckets, max_items=max_items)))
    assert text == table_text(list(bucket_tables(ids, buckets, max_items=max_items)))
    assert rows == len(buckets)


@settings(max_examples=200, deadline=None)
@given(st.lists(id_text, min_size=1, max_size=40, unique=True), st.data(), st.integers(1, 40))
def test_cluster_lines_are_the_tables_text(names: list[str], data: st.DataObject, max_items: int) -> None:
    n = len(names)
    cluster = np.array(data.draw(st.lists(st.integers(-1, 4), min_size=n, max_size=n)), dtype=np.int64)
    used = np.unique(cluster[cluster >= 0])
    cluster[cluster >= 0] = np.searchsorted(used, cluster[cluster >= 0])  # ids 0..k-1, each used
    representative = np.arange(n, dtype=np.int64)
    for c in range(used.size):
        members = np.flatnonzero(cluster == c)
        representative[members] = data.draw(st.sampled_from(members.tolist()))
    clusters = Clusters(cluster=cluster, representative=representative, keep=representative == np.arange(n))
    ids = pa.array(names, pa.string())
    text, rows = lines_of(list(cluster_lines(IdTexts.of(ids), clusters, max_items=max_items)))
    assert text == table_text(list(cluster_tables(ids, clusters, max_items=max_items)))
    assert rows == used.size


def test_numbers_print_as_json_does() -> None:
    """Integers of every width and sign, and hex keys of every high bit."""
    shape = ListRows((("n", INT), ("key", HEX), ("who", ID)), "items")
    numbers = np.array([0, 7, -1, 10, -10, 99, 2**63 - 1, -(2**63) + 1], dtype=np.int64)
    keys = np.array([0, 1, 2**64 - 1, 2**63, 0xABCDEF, 5, 6, 7], dtype=np.uint64).view(np.int64)
    who = np.arange(8, dtype=np.int64) % 3
    ids = ["plain", 'quo"te', "ümlaut\n"]
    offsets = np.array([0, 0, 1, 3, 3, 4, 5, 6, 8], dtype=np.int64)
    members = np.array([2, 0, 1, 1, 2, 0, 1, 2], dtype=np.int64)
    text = list_lines(shape, np.stack((numbers, keys, who)), offsets, members, IdTexts.of(pa.array(ids)))
    expected = "".join(
        json.dumps(
            {
                "n": int(numbers[r]),
                "key": f"{int(keys.view(np.uint64)[r]):016x}",
                "who": ids[who[r]],
                "items": [ids[m] for m in members[offsets[r] : offsets[r + 1]]],
            },
            ensure_ascii=False,
        )
        + "\n"
        for r in range(8)
    )
    assert text.tobytes().decode() == expected
