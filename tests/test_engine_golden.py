"""A work directory written by this version of the external engine (format 1) still resumes.

``tests/golden/engine/work-v1/`` is a finished run written by ``make_work_v1.py`` next to it.
Resuming it must do no work and give exactly what ``find_duplicates`` gives. If a change makes
this test fail, it changes the work-dir format: bump ``neardup.engines.manifest.VERSION`` (or
``HASH_VERSION``), regenerate the directory and say so in CHANGELOG.md.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from neardup import find_duplicates
from neardup.config import DedupConfig
from neardup.engines import dedup_external
from neardup.errors import ConfigError
from neardup.pipeline import arrow_to_batch
from test_engine_external import assert_same

GOLDEN = Path(__file__).parent / "golden" / "engine"
_spec = importlib.util.spec_from_file_location("make_work_v1", GOLDEN / "make_work_v1.py")
assert _spec is not None and _spec.loader is not None
_maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_maker)


def test_golden_work_dir_resumes_with_nothing_to_do(tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(GOLDEN / "work-v1", work)
    manifest = json.loads((work / "manifest.json").read_text())
    assert (manifest["format"], manifest["version"], manifest["hash_version"]) == ("neardup-external", 1, 1)
    got = dedup_external(_maker.table(), _maker.CONFIG, work_dir=work, memory_limit=_maker.MEMORY_LIMIT)
    assert got.ran == ()
    texts = pa.array(_maker.TEXTS, pa.string())
    assert_same(got, find_duplicates(arrow_to_batch(texts), _maker.CONFIG))
    assert got.groups() == [[0, 2, 5], [4, 9], [6, 7], [11, 3, 8]]  # "   " is the longest empty one


def test_golden_work_dir_of_the_classic_sketch_is_refused_by_name_under_the_stratified_one(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    shutil.copytree(GOLDEN / "work-v1", work)
    config = DedupConfig.create(keep="longest", match_empty=True)
    assert config.minhash.sketch == "stratified"
    with pytest.raises(ConfigError, match=re.escape('minhash.sketch: "classic" there, "stratified" here')):
        dedup_external(_maker.table(), config, work_dir=work, memory_limit=_maker.MEMORY_LIMIT)
    # so are the shape search's settings of the time, one band layer and fp weight 0.1
    with pytest.raises(ConfigError, match=re.escape("lsh.layers: 1 there, 2 here")) as refused:
        dedup_external(_maker.table(), config, work_dir=work, memory_limit=_maker.MEMORY_LIMIT)
    assert "lsh.fp_weight: 0.1 there, 0.03 here" in str(refused.value)
    assert json.loads((work / "manifest.json").read_text())["config"]["minhash"] == {
        "num_perm": 128,
        "seed": 42,
    }


def test_golden_spill_files_are_raw_little_endian_arrays() -> None:
    sig = GOLDEN / "work-v1" / "signatures"
    n = len(_maker.TEXTS)
    counts = np.fromfile(sig / "counts.i64", dtype="<i8")
    assert counts.size == n and counts[3] == 0 and counts[0] > 0
    assert np.fromfile(sig / "signatures.u32", dtype="<u4").size == n * 128
    progress = json.loads((sig / "progress.json").read_text())
    assert progress["done"] and progress["state"]["rows"] == n
    assert progress["sizes"]["signatures.u32"] == n * 128 * 4
