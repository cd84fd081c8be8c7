"""``tokenizer="jieba"``: Chinese cut into jieba's words, each word one token (real jieba, no mocks).

``data/zh_texts.jsonl`` is a sample of the shared benchmark corpus's Chinese texts (LibreOffice's
help in simplified Chinese, MPL-2.0; classical prose, poems and poets' lives from the
``chinese-poetry`` package, MIT), each cut to at most 400 characters.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import unicodedata
from pathlib import Path

import jieba
import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from neardup import dedup, dedup_external, find_duplicates, signatures
from neardup.cli import main
from neardup.config import HASH_VERSION, DedupConfig, ShingleConfig
from neardup.core.minhash import MinHasher
from neardup.core.shingles import shingle_hashes, shingle_sets
from neardup.core.text import encode_texts, normalize, tokenize
from neardup.errors import ConfigError, IndexSettingsError
from neardup.index import LSHIndex
from neardup.index.memory import MemoryStorage
from neardup.index.settings import IndexSettings
from neardup.report.diff import tokens_of

TEXTS: list[str] = [
    json.loads(line)["text"]
    for line in (Path(__file__).parent / "data" / "zh_texts.jsonl").read_text(encoding="utf-8").splitlines()
]
JIEBA = DedupConfig.create(tokenizer="jieba")


def jieba_words(text: str) -> list[str]:
    """jieba's own words of ``text`` (NFKC-folded, as neardup gives it to jieba) after neardup's
    normalisation of each word: a word that is only spaces or punctuation goes, and one that
    punctuation splits ("3.5") is its parts."""
    jieba.setLogLevel(logging.WARNING)
    words = jieba.cut(unicodedata.normalize("NFKC", text))
    return [part for word in words for part in normalize(word).split(" ") if part]


def planted(text: str) -> str:
    """A near-duplicate of ``text``: a few characters changed, punctuation and spacing altered."""
    chars = list(text.replace("，", ", "))
    for k in range(len(chars) // 3, len(chars), len(chars) // 3):
        chars[k] = "的"
    return "".join(chars) + "！"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def jsonl(path: Path, texts: list[str]) -> Path:
    lines = (json.dumps({"id": f"d{k}", "text": t}, ensure_ascii=False) for k, t in enumerate(texts))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("k", range(len(TEXTS)))
def test_tokens_are_jiebas_words(k: int) -> None:
    assert tokenize(TEXTS[k], tokenizer="jieba") == jieba_words(TEXTS[k])


def test_a_word_of_several_characters_is_one_token() -> None:
    assert tokenize("我来到北京清华大学，Ｈello 世界！", tokenizer="jieba") == [
        "我",
        "来到",
        "北京",
        "清华大学",
        "hello",
        "世界",
    ]
    assert tokenize("我来到北京清华大学") == list("我来到北京清华大学")


def test_every_path_makes_the_same_shingles_of_the_words() -> None:
    scfg = ShingleConfig(n=2, tokenizer="jieba")
    batch = encode_texts(TEXTS)
    sigs, counts = MinHasher(shingle=scfg).signatures_with_counts(batch)
    some = np.array([3, 0, 7], dtype=np.int64)
    sets = shingle_sets(batch, some, counts, JIEBA.text, scfg)
    for k, d in enumerate(some.tolist()):
        alone = shingle_hashes(TEXTS[d], shingle_config=scfg)
        np.testing.assert_array_equal(sets.get(k), alone)
        assert counts[d] == max(len(jieba_words(TEXTS[d])) - 1, 1)
    np.testing.assert_array_equal(sigs, signatures(TEXTS, JIEBA))
    assert tokens_of(TEXTS[0], JIEBA.text, JIEBA.shingle, 5) == jieba_words(TEXTS[0])[:5]


def test_dedup_with_jieba_finds_the_planted_pair_on_every_engine(tmp_path: Path) -> None:
    texts = [*TEXTS, planted(TEXTS[0])]
    got = dedup(texts, JIEBA)
    assert got.groups() == [[0, len(TEXTS)]]
    assert got.summary()["config"]["shingle"] == {"mode": "word", "n": 2, "tokenizer": "jieba"}
    table = pa.table({"text": pa.array(texts, pa.string())})
    streamed = dedup_external(table, JIEBA, work_dir=tmp_path / "work", memory_limit="64MB")
    assert streamed.groups() == got.groups()
    np.testing.assert_array_equal(streamed.pairs.jaccard, got.pairs.jaccard)
    np.testing.assert_array_equal(
        find_duplicates(encode_texts(texts), JIEBA).pairs.jaccard, got.pairs.jaccard
    )


def test_builtin_signatures_are_unchanged() -> None:
    assert HASH_VERSION == 1
    builtin = DedupConfig.create(tokenizer="builtin")
    assert builtin == DedupConfig() and builtin.to_dict() == DedupConfig().to_dict()
    assert "tokenizer" not in builtin.to_dict()["shingle"]  # work dirs and summaries as before
    np.testing.assert_array_equal(signatures(TEXTS, builtin), signatures(TEXTS))
    # the words are other shingles than the characters
    assert not np.array_equal(signatures(TEXTS, JIEBA), signatures(TEXTS))


def test_char_mode_refuses_jieba() -> None:
    with pytest.raises(ConfigError) as caught:
        DedupConfig.create(shingle="char", tokenizer="jieba")
    assert str(caught.value) == (
        "tokenizer 'jieba' makes words, so it needs shingle mode 'word', not 'char'; "
        "character shingles take tokenizer 'builtin'"
    )
    with pytest.raises(ConfigError, match="tokenizer must be 'builtin' or 'jieba', got 'spacy'"):
        ShingleConfig(tokenizer="spacy")  # type: ignore[arg-type]
    result = run("dedup", "--demo", "-o", "out", "--shingle", "char", "--tokenizer", "jieba")
    assert result.exit_code == 2
    assert result.stderr == (
        "neardup: error: --tokenizer 'jieba' makes words, so it needs shingle mode 'word', not 'char'; "
        "character shingles take --tokenizer 'builtin'\n"
    )


def test_an_index_refuses_another_tokenizer() -> None:
    storage = MemoryStorage()
    with LSHIndex(storage, JIEBA) as index:
        index.insert_many(["a", "b"], TEXTS[:2])
        assert index.query(TEXTS[0])[0].key == "a"
        assert index.settings.to_dict()["tokenizer"] == "jieba"
        assert index.check_many([planted(TEXTS[1])])[0].matches[0].key == "b"
    with pytest.raises(IndexSettingsError) as caught:
        LSHIndex(storage, DedupConfig())
    assert (
        str(caught.value)
        == "the index was built with tokenizer='jieba' but this config uses tokenizer='builtin'"
    )
    with LSHIndex(storage) as again:  # the stored tokenizer is the index's
        assert again.query(TEXTS[1])[0].key == "b"
    builtin = IndexSettings.from_config(DedupConfig())
    with pytest.raises(IndexSettingsError, match="tokenizer='builtin' but this query uses tokenizer='jieba'"):
        builtin.check_compatible(IndexSettings.from_config(JIEBA), what="query")


def test_an_index_stored_without_a_tokenizer_is_builtin() -> None:
    old = IndexSettings.from_config(DedupConfig()).to_dict()
    assert "tokenizer" not in old  # as earlier versions wrote it, and still read it
    assert IndexSettings.from_dict(old).tokenizer == "builtin"
    storage = MemoryStorage()
    storage.write_settings(old)
    with LSHIndex(storage) as index:
        index.insert_many(["a"], TEXTS[:1])
        assert index.settings.tokenizer == "builtin" and index.query(TEXTS[0])[0].key == "a"
    with pytest.raises(IndexSettingsError, match="built with tokenizer='builtin' but this config uses"):
        LSHIndex(storage, JIEBA)


def test_the_command_refuses_another_tokenizer_than_the_index(tmp_path: Path) -> None:
    docs = jsonl(tmp_path / "docs.jsonl", TEXTS[:4])
    idx = tmp_path / "idx.db"
    built = run("index", "build", docs, "--index", idx, "--id-column", "id", "-q", "--tokenizer", "jieba")
    assert built.exit_code == 0, built.output
    stats = run("index", "stats", "--index", idx)
    assert "word 2-grams of jieba words" in stats.stdout
    more = jsonl(tmp_path / "more.jsonl", TEXTS[4:6])
    added = run("index", "add", more, "--index", idx, "--id-column", "id", "-q")
    assert added.exit_code == 0, added.output
    other = run("index", "add", more, "--index", idx, "--id-column", "id", "--tokenizer", "builtin")
    assert other.exit_code == 2
    assert other.stderr == (
        "neardup: error: the index was built with --tokenizer='jieba' "
        "but this config uses --tokenizer='builtin'\n"
    )
    found = run("index", "query", "--index", idx, "--text", planted(TEXTS[2]), "--json")
    assert found.exit_code == 0 and json.loads(found.stdout.splitlines()[0])["key"] == "d2"
    against = run("dedup", more, "-o", tmp_path / "out", "--against", idx, "--tokenizer", "builtin", "-q")
    assert against.exit_code == 2
    assert against.stderr == other.stderr


def test_dedup_command_with_jieba(tmp_path: Path) -> None:
    corpus = jsonl(tmp_path / "zh.jsonl", [*TEXTS, planted(TEXTS[5])])
    out = tmp_path / "out"
    result = run("dedup", corpus, "-o", out, "--tokenizer", "jieba", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["config"]["shingle"]["tokenizer"] == "jieba"
    assert (summary["input_rows"], summary["duplicates_removed"], summary["clusters"]) == (
        len(TEXTS) + 1,
        1,
        1,
    )
    table = run("dedup", corpus, "-o", tmp_path / "again", "--tokenizer", "jieba")
    assert table.exit_code == 0 and "word 2-grams of jieba words" in table.stdout
    assert "--tokenizer [builtin|jieba]" in run("dedup", "--help").stdout


def test_without_jieba_the_error_names_the_extra() -> None:
    program = (
        "import sys; sys.modules['jieba'] = None\n"  # jieba not importable, as when not installed
        "import neardup\n"
        "try:\n"
        "    neardup.tokenize('你好', tokenizer='jieba')\n"
        "except neardup.ConfigError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout == "tokenizer 'jieba' needs jieba: pip install 'neardup[zh]'\n"
