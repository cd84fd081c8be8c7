"""Stage 1: stream the input once; spill signatures, shingle counts, lengths and band keys.

Files (document ``i`` is row ``i`` of every file):

``signatures.u32``   uint32[n, num_perm], the MinHash signatures
``counts.i64``       shingles per document (0: empty, never in a bucket)
``lengths.i64``      characters per document (for ``keep=longest/shortest``)
``keys-JJJJ.u64``    band ``JJJJ``'s key of every document, one file per band

The stage commits after every chunk; a rerun skips the rows already committed.
"""

from __future__ import annotations

from neardup.core.lsh import band_keys
from neardup.core.minhash import MinHasher
from neardup.engines.context import Context, Lap
from neardup.engines.kernels import char_counts
from neardup.engines.source import text_chunks
from neardup.engines.spill import Journal

SIGNATURES = "signatures.u32"
COUNTS = "counts.i64"
LENGTHS = "lengths.i64"


def keys_file(band: int) -> str:
    return f"keys-{band:04d}.u64"


def run(ctx: Context) -> int:
    """Run (or finish) the stage; the number of documents."""
    files = [SIGNATURES, COUNTS, LENGTHS] + [keys_file(j) for j in range(ctx.bands)]
    with Journal(ctx.stage_dir("signatures"), files) as journal:
        return int(journal.state["rows"]) if journal.done else _run(ctx, journal)


def _run(ctx: Context, journal: Journal) -> int:
    ctx.ran.append("signatures")
    journal.begin()
    lap = Lap()
    cfg = ctx.config
    hasher = MinHasher(cfg.minhash, cfg.text, cfg.shingle)
    done = int(journal.state.get("rows", 0))
    ctx.progress("signatures", done, 0)
    chunks = text_chunks(
        ctx.source,
        ctx.text_column,
        skip=done,
        max_rows=ctx.plan.chunk_rows,
        max_bytes=ctx.plan.chunk_bytes,
    )
    for first, batch in chunks:
        sigs, counts = hasher.signatures_with_counts(batch)
        keys = band_keys(sigs, ctx.bands, ctx.rows).T  # one row per band
        journal.append(SIGNATURES, sigs)
        journal.append(COUNTS, counts)
        journal.append(LENGTHS, char_counts(batch.data, batch.offsets))
        for j in range(ctx.bands):
            journal.append(keys_file(j), keys[j])
        done = first + len(batch)
        journal.commit(seconds=lap(), rows=done)
        ctx.progress("signatures", done, 0)
    journal.commit(seconds=lap(), done=True, rows=done)
    return done
