"""Index files written by earlier versions of neardup (format 1) stay readable and unchanged.

``tests/golden/index/index-v1.db`` (SQLite layout 1) was written by ``make_index_v1.py`` next to it,
``index-v1-sqlite2.db`` (layout 2: insert times and shingle counts) by ``make_index_v1_sqlite2.py``.
If a change to the code makes this test fail, the change breaks existing users' index files: keep
the old format readable, or bump FORMAT_VERSION / HASH_VERSION and say so in CHANGELOG.md.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup import signatures
from neardup.cli import main
from neardup.core.minhash import MinHasher
from neardup.core.shingles import shingle_sets
from neardup.core.text import encode_texts
from neardup.index import DocumentInfo, LSHIndex

GOLDEN = Path(__file__).parent / "golden" / "index"
_spec = importlib.util.spec_from_file_location("make_index_v1", GOLDEN / "make_index_v1.py")
assert _spec is not None and _spec.loader is not None
_maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_maker)
TEXTS: dict[str, str] = _maker.TEXTS

SETTINGS = {
    "format_version": 1,
    "hash_version": 1,
    "num_perm": 128,
    "seed": 42,
    "shingle_mode": "char",
    "ngram": 3,
    "nfkc": True,
    "strip_accents": True,
    "lowercase": True,
    "strip_punctuation": True,
    "bands": 32,
    "rows": 4,
    "threshold": 0.5,
    "keep_shingles": True,
}


@pytest.fixture(params=["index-v1.db", "index-v1-sqlite2.db"])
def golden_copy(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A copy, so that opening (WAL files) or writing never touches the checked-in file."""
    path = tmp_path / request.param
    shutil.copy(GOLDEN / request.param, path)
    return path


def test_golden_index_opens_with_its_settings_and_documents(golden_copy: Path) -> None:
    with LSHIndex.open(golden_copy) as index:
        assert index.settings.to_dict() == SETTINGS
        # made before the stratified sketch: read as classic, and queried with it
        assert index.settings.sketch == "classic" and index.stats()["settings"]["sketch"] == "classic"
        assert index.settings.to_config().minhash.sketch == "classic"
        assert list(index.storage.keys()) == list(TEXTS)
        assert len(index) == len(TEXTS) and "zh-2" in index


def test_golden_signatures_and_shingles_equal_todays(golden_copy: Path) -> None:
    with LSHIndex.open(golden_copy) as index:
        config = index.settings.to_config()
        keys = list(TEXTS)
        np.testing.assert_array_equal(
            index.storage.get_signatures(keys), signatures(list(TEXTS.values()), config)
        )
        batch = encode_texts(list(TEXTS.values()))
        counts = MinHasher(config.minhash, config.text, config.shingle).signatures_with_counts(batch)[1]
        sets = shingle_sets(batch, np.arange(len(keys)), counts, config.text, config.shingle)
        for i, stored in enumerate(index.storage.get_shingles(keys)):
            assert stored is not None
            np.testing.assert_array_equal(stored, sets.get(i))


def test_golden_index_answers_queries_and_takes_writes(golden_copy: Path) -> None:
    with LSHIndex.open(golden_copy) as index:
        found = index.query("今天天气很好，我们一起去公园散步吧", exact=True)
        assert [m.key for m in found] == ["zh-1", "zh-2"]
        assert found[0].similarity == 1.0 and found[1].similarity == pytest.approx(13 / 14)
        assert [m.key for m in index.query(TEXTS["en-1"])] == ["en-1", "en-2"]
        assert index.query("") == []  # the stored empty document never matches
        index.insert("en-4", TEXTS["en-3"] + " Again.")
        assert index.remove("en-1")
    with LSHIndex.open(golden_copy) as index:
        assert [m.key for m in index.query(TEXTS["en-3"])] == ["en-3", "en-4"]
        assert "en-1" not in index and len(index) == len(TEXTS)


def test_golden_index_through_the_cli(golden_copy: Path) -> None:
    result = CliRunner().invoke(
        main, ["index", "query", "--index", str(golden_copy), "--text", TEXTS["en-2"]]
    )
    assert result.exit_code == 0, result.output
    assert "en-1" in result.output and "en-2" in result.output and "en-3" not in result.output


def test_golden_document_info(golden_copy: Path) -> None:
    with LSHIndex.open(golden_copy) as index:
        found = index.info_many(list(TEXTS))
    if golden_copy.name == "index-v1.db":  # layout 1 recorded neither
        assert found == [DocumentInfo(key, None, None) for key in TEXTS]
        return
    assert all(info is not None for info in found)
    times = {info.inserted_at for info in found if info is not None}
    assert len(times) == 1  # one batch, one time
    (when,) = times
    assert when is not None and 1.7e9 < when < 2.2e9
    assert [info.shingles for info in found if info is not None] == [53, 53, 65, 14, 13, 0]
