"""A cold start's compiling, on two cores: part of it in a child process.

With an empty numba cache (a fresh install, a new numba, a changed kernel) a run compiles every
kernel it uses, one after another on one core: the tokeniser (with its helpers, each a compile
of its own) first, most of the time, then the kernels of the buckets, pairs, verification and
clusters stages and the JSON escaping of the outputs. :func:`start_if_cold` starts ``python -m
neardup.warm``, which compiles into numba's on-disk cache, on another core, the tokeniser's
helpers that its compile reaches late (:func:`compile_tokeniser_helpers`), the later stages'
kernels (:func:`compile_later_stages`, by running them on a few made-up signatures and shingle
sets), the JSON escaping (:func:`compile_output_kernels`) and the input's line kernels
(:func:`compile_input_kernels`); this process, compiling the
tokeniser meanwhile, loads each of them from the cache when it gets there.

Nothing depends on the child: if it fails, is slow, or finds the cache warm, this process
compiles or loads as it would have. It is started only when the tokeniser's cache entry (or the
first pass's reader's) is missing and no other child is compiling into the cache (it holds a lock
file there while it compiles), so a warm run starts no process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no lock, so a run may start a second child
    fcntl = None  # type: ignore[assignment]

import numpy as np


def _index_path(kernel: Any) -> str | None:
    """Where numba's on-disk cache keeps ``kernel``'s index, or None where that cannot be told."""
    try:  # numba's cache layout, not a public API
        index = kernel._cache._cache_file._index_path
    except AttributeError:
        return None
    return index if isinstance(index, str) else None


def in_cache(kernel: Any) -> bool:
    """Whether numba's on-disk cache holds an entry of ``kernel`` (True where that cannot be told)."""
    index = _index_path(kernel)
    return index is None or os.path.exists(index)


def cache_is_cold() -> bool:
    """Whether numba's on-disk cache holds no entry of the tokeniser's kernel (so this run compiles)."""
    from neardup.core.scan import scan_part

    return not in_cache(scan_part)


def first_pass_reader_cached() -> bool:
    """Whether the compiled reader of a JSON Lines first pass is in numba's cache: a run that
    would compile it (2.5 s, before its first signature) reads with pyarrow instead, and the
    child of :func:`start_if_cold` compiles it for the next run."""
    from neardup.io.json_records import _scan

    return in_cache(_scan)


LOCK_NAME = "neardup-warm.lock"
"""The file, beside the tokeniser's cache entry, that a compiling child holds locked."""


def _lock_file(create: bool) -> int | None:
    """An open descriptor of the lock file (made, with its folder, if ``create``), or None where
    there is none or locks are not available."""
    if fcntl is None:
        return None
    from neardup.core.scan import scan_part

    index = _index_path(scan_part)
    if index is None:
        return None
    folder = os.path.dirname(index)
    try:
        if create:
            os.makedirs(folder, exist_ok=True)
        return os.open(os.path.join(folder, LOCK_NAME), os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
    except OSError:
        return None


def compiling() -> bool:
    """Whether a child of :func:`start_if_cold` is compiling into this cache now."""
    fd = _lock_file(create=False)
    if fd is None or fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # and the lock with it, if this took it
    return False


def wait_until_compiled(timeout: float = 600.0) -> bool:
    """Wait for a compiling child of :func:`start_if_cold` to finish (at most ``timeout``
    seconds); whether none is compiling now. A benchmark calls it before timing warm runs."""
    deadline = time.monotonic() + timeout
    while compiling():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def start_if_cold() -> subprocess.Popen[bytes] | None:
    """Start compiling the later stages' kernels in a child process, if the cache is cold (or
    lacks the first pass's reader) and no child is compiling into it already."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") != "0":
        return None
    if not cache_is_cold() and first_pass_reader_cached():
        return None
    if compiling():  # a child started by an earlier run is still at work
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "neardup.warm"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # an interrupt of the command does not reach it
        )
    except OSError:
        return None


def load_kernels_and_release_compiler() -> None:
    """With a warm cache, load every kernel a run uses from it, then hand LLVM's pages back
    (:mod:`neardup.core.compiler_pages`): the run calls LLVM no more, and its library would
    otherwise hold about 100 MB of the run's resident memory to the end. Meant for the thread
    of numba's set-up, while the input is read. Does nothing on a cold cache (the kernels
    compile as the run reaches them); a kernel it does not foresee still loads when called."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") != "0" or cache_is_cold():
        return
    from neardup.core import compiler_pages
    from neardup.core.minhash import MinHasher
    from neardup.core.text import encode_texts

    try:
        MinHasher().signatures_with_counts(encode_texts(["load the tokeniser"]), parallel=False)
        compiler_pages.release()  # the signatures grow from here on; the loads below touch little
        compile_later_stages()
        compile_output_kernels()
        compile_input_kernels()
    except Exception:  # the run loads or compiles them itself when it gets there
        return
    compiler_pages.release()


def compile_tokeniser_helpers() -> None:
    """Compile the tokeniser's helpers that its own compile reaches late (each one is a separate
    compile, cached on its own), for the argument types the tokeniser passes them: the
    signature fold first, then decoding, hashing and sorting. The tokeniser's compile, in the
    other process, loads each one it finds in the cache by the time it gets there."""
    from numba import typeof as numba_typeof
    from numba import types

    typeof: Any = numba_typeof  # untyped in numba's stubs

    from neardup.core.hashing import (
        multiset_mix,
        no_permutations,
        update_signature,
        xxh64_short,
        xxh64_stream_digest,
        xxh64_stream_lane,
        xxh64_windows,
    )
    from neardup.core.scan import _ascii_word, _fold, _hash_tokens, _push_token, readonly, sort_unique
    from neardup.core.text import _decode

    i64, u64, flag = types.int64, types.uint64, types.boolean
    u64s, u32s, i64s = (typeof(np.empty(1, t)) for t in (np.uint64, np.uint32, np.int64))
    text = typeof(readonly(np.empty(1, np.uint8)))
    perms = typeof(no_permutations())
    u64s_2d = typeof(np.empty((1, 1), np.uint64))
    helpers: list[tuple[Any, tuple[Any, ...]]] = [
        (update_signature, (u32s, u64s, i64, i64, perms, u64s)),
        (multiset_mix, (u64,)),
        (_fold, (u32s, u64s, i64, i64, perms, u64s, u64s)),
        (_decode, (text, i64, i64)),
        (xxh64_stream_digest, (u64s, u64, i64, i64)),
        (sort_unique, (u64s, i64, i64, i64s)),
        (xxh64_short, (u64, i64)),
        (_push_token, (u64s, i64s, i64, u64s, u64, i64, i64)),
        (_hash_tokens, (u64s, i64s, i64, i64)),
        (xxh64_windows, (u64s, i64, i64, i64, u64s, i64, u64s_2d)),
        (_ascii_word, (u64, flag, flag)),
        (xxh64_stream_lane, (u64s, u64, i64)),
    ]
    for dispatcher, signature in helpers:
        dispatcher.compile(signature)


def compile_later_stages() -> None:
    """Run buckets, candidate pairs, estimates, exact verification and clusters on made-up
    inputs of the types :func:`neardup.find_duplicates` passes them."""
    from neardup.core.clusters import assign_clusters
    from neardup.core.lsh import band_keys, build_buckets, candidate_pairs
    from neardup.core.minhash import estimate_pairs
    from neardup.core.shingles import ShingleSets
    from neardup.core.verify import exact_jaccard_pairs

    n, num_perm = 8, 16
    sigs = np.random.default_rng(0).integers(0, 1 << 32, (n, num_perm), dtype=np.uint32)
    sigs[1] = sigs[0]  # one candidate pair at least
    counts = np.full(n, 3, dtype=np.int64)
    buckets = build_buckets(band_keys(sigs, 4, 4), eligible=counts > 0)
    left, right = candidate_pairs(buckets, 100)
    estimate_pairs(sigs, left, right)
    sets = ShingleSets.from_sets([np.arange(k, k + 3, dtype=np.uint64) for k in range(n)])
    exact_jaccard_pairs(
        ShingleSets(np.arange(n, dtype=np.int64), sets.starts, sets.lengths, sets.values), n, left, right
    )
    assign_clusters(n, left, right)


def compile_output_kernels() -> None:
    """Escape a string column large enough for the compiled JSON escaping, splice a JSON Lines
    record and print a row of ids (the JSON Lines outputs)."""
    import pyarrow as pa

    from neardup.io._jsontext import COMPILED_FROM_BYTES, json_values

    line = b'a "quoted" line\n'
    count = COMPILED_FROM_BYTES // len(line) + 1
    offsets = np.arange(count + 1, dtype=np.int64) * len(line)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(line * count)]
    json_values(pa.Array.from_buffers(pa.large_string(), count, buffers))
    from neardup.io.jsonl_lines import splice_lines

    record = np.frombuffer(b'{"a": 1}', dtype=np.uint8).copy()  # writable, as the writer's buffers are
    ends = np.array([record.size], dtype=np.int64)
    none = np.zeros(2, dtype=np.int64)
    splice_lines(record, none[:1], ends, record, none, record, none, np.empty(2 * record.size, np.uint8))
    from neardup.io.list_lines import IdTexts, list_lines
    from neardup.outputs import BUCKET_ROWS

    values = np.zeros((3, 1), dtype=np.int64)
    list_lines(BUCKET_ROWS, values, np.array([0, 1]), np.zeros(1, np.int64), IdTexts.of(pa.array(["a"])))


def compile_input_kernels() -> None:
    """Count the record lines of a few bytes of JSON Lines (the whole-file reader), read a record's
    text and id (the first pass in passes), and read two lines of a file by their byte ranges and
    decode their text field (verification in passes)."""
    import tempfile

    from neardup.io.json_fields import string_field
    from neardup.io.jsonl import LineCount
    from neardup.io.spans import read_ranges

    LineCount().add(b'{"a": 1}\n\n{"a": 2}\n')
    with tempfile.TemporaryFile() as fh:
        fh.write(b'{"a": 1}\n{"a": 2}\n')
        fh.flush()
        read_ranges(fh.fileno(), np.array([[0, 8], [9, 17]], dtype=np.int64))
    line = b'{"text": "a\\n"}'  # an escape: the decoder's writing pass too
    string_field(np.frombuffer(line, dtype=np.uint8), np.zeros(1, np.int64), np.array([len(line)]), "text")
    import pyarrow as pa

    from neardup.io.json_records import record_fields

    record = b'{"id": 1, "text": "a\\n", "x": [1.5, {"y": null}]}'  # the first pass of JSON Lines
    bounds = np.zeros(1, np.int64), np.array([len(record)])
    record_fields(np.frombuffer(record, dtype=np.uint8), *bounds, "text", "id", pa.int64())


def _compile_holding_the_lock() -> None:
    """The child's work: every kernel above, holding the lock file while it compiles (another
    child already holding it is left to finish alone). The first pass's reader comes right after
    the tokeniser's helpers: the next run needs it first."""
    fd = _lock_file(create=True)
    if fd is not None and fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return
    compile_tokeniser_helpers()
    compile_input_kernels()
    compile_later_stages()
    compile_output_kernels()


if __name__ == "__main__":  # pragma: no cover (run as a child process)
    _compile_holding_the_lock()
