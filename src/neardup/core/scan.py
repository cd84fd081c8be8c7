"""The compiled tokeniser: each document read once, into its signature or its shingles.

``scan_part`` decodes and normalises a document (``neardup.core.text``), feeds
each token's normalised UTF-8 bytes into a streaming XXH64 as it goes, gathers
the token hashes in a small buffer, makes the shingle hashes from it every few
hundred tokens (``neardup.core.shingles`` defines them) and, for signatures,
folds them into the MinHash minimums (``neardup.core.hashing.update_signature``).
No per-document array is allocated and no token is written out, except for
``tokenize``.

One kernel serves every use (signatures, exact shingle sets, shingles in text
order, tokens), so a cold start compiles the tokeniser once. A batch is split
into one strided part per thread (part t takes blocks t, t + parts, ... of 16
documents), so a batch sorted by length or language still gives every thread a
fair share, and each part allocates its work arrays once. Fewer than
``SERIAL_BELOW`` documents run on the calling thread.
"""

from __future__ import annotations

import numpy as np

from neardup.core.hashing import (
    U64,
    WINDOW_SCRATCH,
    Permutations,
    no_permutations,
    update_signature,
    xxh64_lanes,
    xxh64_short,
    xxh64_stream_digest,
    xxh64_stream_lane,
    xxh64_windows,
)
from neardup.core.jit import helper, hot_helper, in_threads, kernel, threads
from neardup.core.text import (
    _EXPANSION_CAP,
    _MAX_N,
    F_CHAR_MODE,
    F_COMPAT,
    F_LOWERCASE,
    F_SEGMENTED,
    F_STRIP_ACCENTS,
    F_STRIP_PUNCT,
    _decode,
    _expand,
)
from neardup.core.unicode_table import (
    DROP,
    HAS_CANON,
    HAS_COMPAT,
    HAS_LOWER,
    MARK_NONSPACING,
    PUNCT,
    SPACE,
    UNSPACED,
    WORD,
)
from neardup.errors import ConfigError

Tables = tuple[np.ndarray, np.ndarray, np.ndarray]  # the packed Unicode table: entries, records, pool

EMPTY_VALUE = np.uint32(0xFFFFFFFF)
SPACE_TOKEN_HASH = U64(0x079CF5CEB668638D)  # XXH64 of b" ", the char-mode space token

# what scan_part makes of each document k
SIGNATURES = 0  # sigs[k], counts[k] = raw shingle count
SETS = 1  # values[bounds[k]:][:lengths[k]] sorted and unique, counts[k] = raw count
SHINGLES = 2  # values[bounds[k]:][:lengths[k]] in text order, counts[k] = raw count
TOKENS = 3  # rec (bytes) and ends (token ends), counts[k] = bytes, lengths[k] = tokens

SERIAL_BELOW = 64  # fewer documents than this skip the thread pool
_FOLD = 512  # shingle hashes gathered before they are folded into a signature
_TOKENS = 1024  # token hashes gathered before their shingles are made
# one input code point adds at most two tokens per normalised code point
_FLUSH_AT = _TOKENS - 2 * _EXPANSION_CAP - 2
_BLOCK = 16  # documents a part takes at a time: no two threads write the same cache lines


_HIGH = U64(0x8080808080808080)
_ONES = U64(0x0101010101010101)


@hot_helper
def _bytes_in(w: np.uint64, lo: np.uint64, hi: np.uint64) -> np.uint64:
    """0x80 in each byte of ``w`` (all < 0x80) that lies in ``[lo, hi]``, 0 elsewhere."""
    return ((w | _HIGH) - _ONES * lo) & ((_ONES * hi | _HIGH) - w) & _HIGH


@hot_helper
def _ascii_word(w: np.uint64, alnum: bool, lower: bool) -> tuple[int, np.uint64]:
    """The word at the start of eight ASCII bytes ``w`` (little-endian), eight at a time.

    Word bytes are ``[0-9A-Za-z]`` (``alnum``) or ``0x21-0x7E``; returns how many
    lead ``w`` (1-8 when the first is one) and those bytes, lower-cased if ``lower``.
    """
    if alnum:
        word = (
            _bytes_in(w, U64(48), U64(57)) | _bytes_in(w, U64(65), U64(90)) | _bytes_in(w, U64(97), U64(122))
        )
    else:
        word = _bytes_in(w, U64(0x21), U64(0x7E))
    if lower:
        w = w + (_bytes_in(w, U64(65), U64(90)) >> U64(2))  # 0x80 >> 2 is the case bit
    stop = ~word & _HIGH
    if stop == 0:
        return 8, w
    low = (stop & (~stop + U64(1))) >> U64(7)  # 1 << 8k for the first byte k not in the word
    # the top byte of low * 0x0001020304050607 is k
    run = np.int64((low * U64(0x0001020304050607)) >> U64(56))
    return run, w & (low - U64(1))  # type: ignore[return-value]  # np.int64 is numba's int


_HASHED = 9
"""``lens[i]`` of a token whose hash is already in ``tokens[i]`` (a short one's is ``0-8``: its
bytes are there, hashed by :func:`_hash_tokens` when its shingles are made)."""


@hot_helper
def _push_token(
    tokens: np.ndarray, lens: np.ndarray, nt: int, stream: np.ndarray, cur: np.uint64, nbits: int, tlen: int
) -> None:
    """The token just ended into ``tokens[nt]``: its last ``nbits / 8`` bytes are in ``cur``, the
    lanes before them (``tlen`` bytes in all past eight) already fed to ``stream``. A token of
    up to eight bytes is kept as its bytes, to be hashed later with the others."""
    if tlen <= 8:
        tokens[nt] = cur
        lens[nt] = tlen
    else:
        tokens[nt] = xxh64_stream_digest(stream, cur, nbits, tlen)
        lens[nt] = _HASHED


@hot_helper
def _hash_tokens(tokens: np.ndarray, lens: np.ndarray, lo: int, hi: int) -> None:
    """The XXH64 of each short token of ``tokens[lo:hi]`` in place of its bytes: one loop with no
    branch, which LLVM turns into vector code."""
    for i in range(U64(lo), U64(hi)):
        x = tokens[i]
        length = lens[i]
        h = xxh64_short(x, length)
        tokens[i] = h if length <= 8 else x


SMALL_SORT = 16
"""Values sorted by insertion: a run this short, or one bucket of the radix pass."""
SORT_SCRATCH = 513
"""int64 values of scratch space :func:`sort_unique` needs."""


@helper
def sort_unique(v: np.ndarray, lo: int, hi: int, scratch: np.ndarray) -> int:
    """Sort ``v[lo:hi]`` (uint64 hashes) in place, move its distinct values to the front;
    returns their count. ``scratch`` is int64[``SORT_SCRATCH``] of any content.

    One in-place radix pass on the top byte (an American flag sort) puts about ``size / 256``
    values in each bucket, since the values are hashes; each bucket is then sorted by
    insertion, or by a heap sort when it holds more than ``SMALL_SORT`` (repeated or
    colliding values), so no input makes it quadratic. Short runs are sorted by insertion
    alone. Scalar loops only: they compile in a fraction of the time of array operations.
    """
    size = hi - lo
    if size <= SMALL_SORT:
        _insertion_sort(v, lo, hi)
    else:
        # scratch[b]: where bucket b starts (scratch[256] = hi); scratch[257 + b]: its next slot
        for b in range(257):
            scratch[b] = 0
        for k in range(lo, hi):
            scratch[np.int64(v[k] >> U64(56)) + 1] += 1
        scratch[0] = lo
        for b in range(256):
            scratch[b + 1] += scratch[b]
            scratch[257 + b] = scratch[b]
        for b in range(256):
            end = scratch[b + 1]
            while scratch[257 + b] < end:
                x = v[scratch[257 + b]]
                top = np.int64(x >> U64(56))
                while top != b:  # put x where its bucket goes on, pick up what was there
                    slot = scratch[257 + top]
                    scratch[257 + top] = slot + 1
                    y = v[slot]
                    v[slot] = x
                    x = y
                    top = np.int64(x >> U64(56))
                v[scratch[257 + b]] = x
                scratch[257 + b] += 1
        for b in range(256):
            first, last = scratch[b], scratch[b + 1]
            if last - first > SMALL_SORT:
                _heap_sort(v, first, last)
            elif last - first > 1:
                _insertion_sort(v, first, last)
    w = 0
    for k in range(size):
        if k == 0 or v[lo + k] != v[lo + w - 1]:
            v[lo + w] = v[lo + k]
            w += 1
    return w


@helper
def _insertion_sort(v: np.ndarray, lo: int, hi: int) -> None:
    """Sort ``v[lo:hi]`` in place by insertion (for a few values)."""
    for i in range(lo + 1, hi):
        x = v[i]
        j = i - 1
        while j >= lo and v[j] > x:
            v[j + 1] = v[j]
            j -= 1
        v[j + 1] = x


@helper
def _heap_sort(v: np.ndarray, lo: int, hi: int) -> None:
    """Sort ``v[lo:hi]`` in place: a heap sort with one sift loop for both phases (build, then
    pop), a few lines that compile in a fraction of the time of ``np.sort`` (numba's quicksort
    is a family of generated functions)."""
    size = hi - lo
    heap = size
    i = size // 2
    while True:
        if i > 0:  # building the heap: sift v[i - 1] down
            i -= 1
            x = v[lo + i]
        else:  # the root is the largest: swap it behind the heap, sift the new root down
            heap -= 1
            if heap <= 0:
                break
            x = v[lo + heap]
            v[lo + heap] = v[lo]
        parent = i
        child = 2 * i + 1
        while child < heap:
            if child + 1 < heap and v[lo + child + 1] > v[lo + child]:
                child += 1
            if v[lo + child] <= x:
                break
            v[lo + parent] = v[lo + child]
            parent = child
            child = 2 * parent + 1
        v[lo + parent] = x


@hot_helper
def _fold(
    sig: np.ndarray,
    out: np.ndarray,
    lo: int,
    pos: int,
    perms: Permutations,
    work: np.ndarray,
    digest: np.ndarray,
) -> None:
    """``out[lo:pos]`` folded into the signature ``sig``, and their mixed sum into ``digest[0]``."""
    digest[0] += update_signature(sig, out, lo, pos, perms, work)


@helper
def _flush(
    tokens: np.ndarray,
    lens: np.ndarray,
    nt: int,
    fresh: int,
    ntok: int,
    n: int,
    finished: bool,
    out: np.ndarray,
    lo: int,
    hi: int,
    pos: int,
    sig: np.ndarray,
    perms: Permutations,
    work: np.ndarray,
    digest: np.ndarray,
    windows: np.ndarray,
) -> tuple[int, int]:
    """The shingles that end at ``tokens[fresh:nt]`` (windows of n token hashes or, at
    the end of a document of fewer than n tokens, all of them) into ``out[pos:hi]``,
    folded into ``sig`` (and their :func:`~neardup.core.hashing.multiset_mix` added to
    ``digest[0]``) when it is not empty. ``tokens[fresh:nt]`` are first hashed where
    ``lens`` says they are still bytes (see :func:`_push_token`); ``windows`` is scratch
    space for :func:`~neardup.core.hashing.xxh64_windows`. Keeps the last ``n - 1`` token
    hashes at the front of ``tokens``; returns ``(how many that is, the new pos)``."""
    _hash_tokens(tokens, lens, fresh, nt)
    folding = sig.size > 0
    last = max(fresh, n - 1)  # the next window ends at tokens[last]
    while last < nt:
        if pos == hi:
            if not folding:
                break  # no room left: the rest are counted, not written
            _fold(sig, out, lo, pos, perms, work, digest)
            pos = lo
        stop = min(nt, last + hi - pos)
        xxh64_windows(tokens, last - n + 1, stop - last, n, out, pos, windows)
        pos += stop - last
        last = stop
    if finished and 0 < ntok < n:  # the whole of a short document, once
        if folding and pos == hi:
            _fold(sig, out, lo, pos, perms, work, digest)
            pos = lo
        if pos < hi:
            out[pos] = xxh64_lanes(tokens, 0, ntok)
            pos += 1
    if finished and folding and pos > lo:
        _fold(sig, out, lo, pos, perms, work, digest)
        pos = lo
    keep = min(nt, n - 1)  # the next windows start in these
    for i in range(keep):
        tokens[i] = tokens[nt - keep + i]
    return keep, pos


@kernel
def scan_part(
    data: np.ndarray,
    offsets: np.ndarray,
    docs: np.ndarray,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
    n: int,
    perms: Permutations,
    mode: int,
    sigs: np.ndarray,
    counts: np.ndarray,
    values: np.ndarray,
    bounds: np.ndarray,
    lengths: np.ndarray,
    digests: np.ndarray,
    rec: np.ndarray | None,
    ends: np.ndarray | None,
    first: int,
    step: int,
) -> None:
    """Blocks ``first, first + step, ...`` of ``_BLOCK`` documents of ``docs`` (document d
    is ``data[offsets[d]:offsets[d + 1]]``), made into what ``mode`` says
    (``SIGNATURES``, ``SETS``, ``SHINGLES``, ``TOKENS``).

    Signatures use the permutations ``perms`` and ``sigs[k]`` (``k`` the index in
    ``docs``), and write ``digests[k]`` unless ``digests`` is empty: the sum of the
    document's shingle hashes (repeats included) after ``multiset_mix``, equal for two
    documents with the same shingles the same number of times. The other modes write document k's shingles to
    ``values[bounds[k]:bounds[k + 1]]``; shingles past the end are counted, not
    written, and so are token bytes and ends past the end of ``rec`` and
    ``ends`` (only ``TOKENS`` passes arrays there; with None, numba compiles the
    recording away).
    """
    char_mode = (flags & F_CHAR_MODE) != 0
    # segmented text: a segmenter put spaces between words, so an unspaced letter is a word letter
    segmented = (flags & F_SEGMENTED) != 0
    strip_punct = (flags & F_STRIP_PUNCT) != 0
    strip = (flags & F_STRIP_ACCENTS) != 0
    mapped = HAS_CANON  # the table bits that mean "this code point changes"
    if flags & F_COMPAT:
        mapped |= HAS_COMPAT
    if flags & F_LOWERCASE:
        mapped |= HAS_LOWER
    folding = mode == SIGNATURES
    m = perms.a_lo.size
    tokens = np.empty(_TOKENS, dtype=np.uint64)
    windows = np.empty((WINDOW_SCRATCH, _TOKENS), dtype=np.uint64)
    lens = np.empty(_TOKENS, dtype=np.int64)  # see _push_token
    stream = np.empty(8, dtype=np.uint64)  # xxh64_stream_lane starts it afresh
    exp_cp = np.empty(_EXPANSION_CAP, dtype=np.int64)
    exp_cls = np.empty(_EXPANSION_CAP, dtype=np.int64)
    sig = np.empty(m if folding else 0, dtype=np.uint32)
    work = np.empty(m if folding else 0, dtype=np.uint64)
    digest = np.zeros(1, dtype=np.uint64)
    fold = np.empty(_FOLD if folding else 0, dtype=np.uint64)
    # An ASCII byte is one code point that normalises to at most one ASCII code point,
    # so for most text a 128-entry table (normalised byte | class << 8, punctuation
    # resolved) replaces decoding and the normalisation records.
    ascii = np.empty(128, dtype=np.int64)
    sort_scratch = np.empty(SORT_SCRATCH if mode == SETS else 0, dtype=np.int64)
    for c in range(128):
        count = _expand(c, entries, records, pool, flags, exp_cp, exp_cls)
        if count == 0:
            ascii[c] = DROP << 8
        elif count == 1 and exp_cp[0] < 0x80:
            cls = exp_cls[0]
            if cls == PUNCT:
                cls = SPACE if strip_punct else WORD
            ascii[c] = exp_cp[0] | (cls << 8)
        else:
            ascii[c] = -1  # never so in the shipped table; the general path copes
    # Eight ASCII bytes at a time (_ascii_word) when the table is one of the usual ones:
    # word bytes [0-9A-Za-z] (or all of 0x21-0x7E when punctuation is kept), each its
    # own normalised byte but for A-Z, which are lower-cased or not.
    lower = ascii[65] & 0xFF == 97
    swar = True
    for c in range(128):
        alnum = 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122
        if alnum if strip_punct else 0x21 <= c <= 0x7E:
            swar = swar and ascii[c] == ((c + 32 if lower and 65 <= c <= 90 else c) | (WORD << 8))
        else:
            swar = swar and ascii[c] >> 8 != WORD
    nbuf = data.size
    unspaced_fast = not char_mode and not segmented
    zero = U64(0)
    # counters start as np.int64(0), not 0: a literal reaching a compiled callee makes
    # numba compile that callee once more, for the literal (compile time)
    izero: int = np.int64(0)  # type: ignore[assignment]
    width = sigs.shape[1]
    blocks = (docs.size + _BLOCK - 1) // _BLOCK
    for block in range(first, blocks, step):
        for k in range(block * _BLOCK, min(docs.size, (block + 1) * _BLOCK)):
            d = docs[k]
            start = offsets[d]
            end = offsets[d + 1]
            if folding:
                out = fold
                lo = izero
                hi = fold.size
                for i in range(m):
                    sig[i] = EMPTY_VALUE
                digest[0] = zero
            else:
                out = values
                lo = bounds[k]
                hi = bounds[k + 1]
            pos = lo  # next free slot in out[lo:hi]
            shingles = izero
            nt = izero  # token hashes in ``tokens``
            fresh = izero  # the first of them that ends no shingle yet
            ntok = izero
            blen = izero
            # the current token: ``tlen`` bytes, the last ``nbits / 8`` of them (up to a
            # whole lane) in ``cur``, the lanes before them fed to ``stream``
            cur = zero
            nbits = izero
            tlen = izero
            in_tok = False
            tok_unspaced = False
            pending_space = False
            last_cls = -1
            p = start
            finished: bool = np.bool_(False)  # type: ignore[assignment]  # not a literal either
            while True:
                if nt >= _FLUSH_AT or finished:
                    shingles += max(0, nt - max(fresh, n - 1))
                    if finished and 0 < ntok < n:
                        shingles += 1
                    nt, pos = _flush(
                        tokens,
                        lens,
                        nt,
                        fresh,
                        ntok,
                        n,
                        finished,
                        out,
                        lo,
                        hi,
                        pos,
                        sig,
                        perms,
                        work,
                        digest,
                        windows,
                    )
                    fresh = nt
                    if finished:
                        break
                if not char_mode:
                    # ASCII words into the token's hash: eight bytes at a time at the start of a
                    # word and of each lane after it, else one table lookup a byte; the space
                    # after a word ends its token. Anything else leaves to the general path.
                    while p < end:
                        b0 = data[U64(p)]  # an unsigned index skips the negative-index check
                        if b0 >= 0x80:
                            break
                        t = ascii[b0]
                        tc = t >> 8
                        if tc == WORD:
                            if not in_tok:
                                in_tok = True
                                tok_unspaced = False
                                cur = zero
                                nbits = izero
                                tlen = izero
                            elif tok_unspaced:
                                break
                            elif nbits == 64:  # a whole lane: into the stream, and on
                                xxh64_stream_lane(stream, cur, tlen)
                                cur = zero
                                nbits = izero
                            if nbits == 0 and swar and p + 8 <= nbuf:
                                w = zero
                                for i in range(8):
                                    w |= U64(data[U64(p + i)]) << U64(8 * i)
                                if w & _HIGH == 0:
                                    run, cur = _ascii_word(w, strip_punct, lower)
                                    if run > end - p:  # the next document starts here
                                        run = end - p
                                        cur &= (U64(1) << U64(8 * run)) - U64(1)
                                    if rec is not None:
                                        for i in range(run):
                                            if blen < rec.size:
                                                rec[blen] = (cur >> U64(8 * i)) & U64(0xFF)
                                            blen += 1
                                    nbits = 8 * run
                                    tlen += run
                                    p += run
                                    continue
                            while True:  # the rest of the word, up to a whole lane
                                byte = t & 0xFF
                                if rec is not None:
                                    if blen < rec.size:
                                        rec[blen] = byte
                                    blen += 1
                                cur |= U64(byte) << U64(nbits)
                                nbits += 8
                                tlen += 1
                                p += 1
                                if nbits == 64 or p == end:
                                    break
                                b0 = data[U64(p)]
                                if b0 >= 0x80:
                                    break
                                t = ascii[b0]
                                if t >> 8 != WORD:
                                    break
                            continue
                        if tc == SPACE and in_tok:  # the end of a word
                            if nt >= _FLUSH_AT:
                                break
                            if ends is not None and ntok < ends.size:
                                ends[ntok] = blen
                            _push_token(tokens, lens, nt, stream, cur, nbits, tlen)
                            nt += 1
                            ntok += 1
                            in_tok = False
                        elif tc != SPACE and tc != DROP:
                            break
                        p += 1
                    # Chinese and Japanese: a three-byte character of an unspaced script that
                    # normalises to itself is a token of its own, its bytes as they are; it ends
                    # the token before it, and the next code point ends it
                    while unspaced_fast and p + 3 <= end and nt < _FLUSH_AT:
                        b0 = data[U64(p)]
                        if b0 < 0xE0 or b0 > 0xEF:
                            break
                        b1 = data[U64(p + 1)]
                        b2 = data[U64(p + 2)]
                        if b1 & 0xC0 != 0x80 or b2 & 0xC0 != 0x80:
                            break
                        c = ((int(b0) & 0x0F) << 12) | ((int(b1) & 0x3F) << 6) | (int(b2) & 0x3F)
                        # not overlong, no Hangul (the decoder composes jamo), no surrogates
                        if c < 0x800 or 0x1100 <= c <= 0x11FF or 0xAC00 <= c <= 0xDFFF:
                            break
                        entry = entries[c]
                        if entry & mapped or entry & 7 != UNSPACED:
                            break
                        if in_tok:
                            if ends is not None and ntok < ends.size:
                                ends[ntok] = blen
                            _push_token(tokens, lens, nt, stream, cur, nbits, tlen)
                            nt += 1
                            ntok += 1
                        if rec is not None:
                            for byte in (b0, b1, b2):
                                if blen < rec.size:
                                    rec[blen] = byte
                                blen += 1
                        in_tok = True
                        tok_unspaced = True
                        cur = U64(b0) | (U64(b1) << U64(8)) | (U64(b2) << U64(16))
                        nbits = izero + 24
                        tlen = izero + 3
                        p += 3
                # the general path: the next input code point, as ``count`` normalised ones
                # (``c, cls`` or ``exp_*[:count]``); past the end, a space that ends the last token
                count = 1
                expanded = False
                c = 32
                cls = SPACE
                if p >= end:
                    finished = True
                else:
                    b0 = data[U64(p)]
                    t = ascii[b0] if b0 < 0x80 else -1
                    if t >= 0:
                        p += 1
                        c = t & 0xFF
                        cls = t >> 8
                    else:
                        c, p = _decode(data, p, end)
                        entry = entries[c]
                        if entry & mapped:
                            count = _expand(c, entries, records, pool, flags, exp_cp, exp_cls)
                            expanded = True
                        else:
                            cls = entry & 7
                            if strip and cls == MARK_NONSPACING:
                                count = 0
                for q in range(count):
                    if expanded:
                        c = exp_cp[q]
                        cls = exp_cls[q]
                    if cls == PUNCT:
                        cls = SPACE if strip_punct else WORD
                    elif cls == UNSPACED and segmented:
                        cls = WORD
                    if cls == DROP:
                        continue
                    # in char mode every character ends the token before it
                    ends_token = cls in (SPACE, UNSPACED) or (cls == WORD and tok_unspaced)
                    if in_tok and (char_mode or ends_token):
                        if ends is not None and ntok < ends.size:
                            ends[ntok] = blen
                        _push_token(tokens, lens, nt, stream, cur, nbits, tlen)
                        nt += 1
                        ntok += 1
                        in_tok = False
                    if cls == SPACE:
                        if char_mode:
                            pending_space = ntok > 0
                        continue
                    if char_mode:
                        # no space token between two letters of unspaced scripts: a line
                        # break inside Chinese text is layout, not a word boundary
                        if pending_space and not (cls == UNSPACED and last_cls == UNSPACED):
                            if rec is not None:
                                if blen < rec.size:
                                    rec[blen] = 32
                                blen += 1
                            if ends is not None and ntok < ends.size:
                                ends[ntok] = blen
                            tokens[nt] = SPACE_TOKEN_HASH
                            lens[nt] = _HASHED
                            nt += 1
                            ntok += 1
                        pending_space = False
                        last_cls = cls
                    if not in_tok:
                        in_tok = True
                        tok_unspaced = cls == UNSPACED
                        cur = zero
                        nbits = izero
                        tlen = izero
                    # the UTF-8 bytes of ``c`` into the token's hash, little end first
                    if c < 0x80:
                        nb = 1
                        enc = c
                    elif c < 0x800:
                        nb = 2
                        enc = (0xC0 | (c >> 6)) | ((0x80 | (c & 0x3F)) << 8)
                    elif c < 0x10000:
                        nb = 3
                        enc = (
                            (0xE0 | (c >> 12))
                            | ((0x80 | ((c >> 6) & 0x3F)) << 8)
                            | ((0x80 | (c & 0x3F)) << 16)
                        )
                    else:
                        nb = 4
                        enc = (
                            (0xF0 | (c >> 18))
                            | ((0x80 | ((c >> 12) & 0x3F)) << 8)
                            | ((0x80 | ((c >> 6) & 0x3F)) << 16)
                            | ((0x80 | (c & 0x3F)) << 24)
                        )
                    for _ in range(nb):
                        if nbits == 64:
                            xxh64_stream_lane(stream, cur, tlen)
                            cur = zero
                            nbits = izero
                        byte = enc & 0xFF
                        enc >>= 8
                        if rec is not None:
                            if blen < rec.size:
                                rec[blen] = byte
                            blen += 1
                        cur |= U64(byte) << U64(nbits)
                        nbits += 8
                        tlen += 1
            if mode == SIGNATURES:
                row = sigs[k]
                for i in range(width):
                    row[i] = sig[i]
                counts[k] = shingles
                if digests.size:
                    digests[k] = digest[0]
            elif mode == SETS:
                lengths[k] = sort_unique(values, lo, min(hi, lo + shingles), sort_scratch)
                counts[k] = shingles
            elif mode == SHINGLES:
                lengths[k] = min(shingles, hi - lo)
                counts[k] = shingles
            else:
                lengths[k] = ntok
                counts[k] = blen


def check_n(n: int) -> None:
    """The shingle sizes the tokeniser's buffer of token hashes can hold."""
    if not 1 <= n <= _MAX_N:
        raise ConfigError(f"ngram must be between 1 and {_MAX_N}, got {n}")


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only view: the kernels are compiled for read-only text and offsets
    only, whether they came from Python strings (writable) or Arrow buffers (read-only)."""
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def scan_batch(
    data: np.ndarray,
    offsets: np.ndarray,
    docs: np.ndarray,
    tables: Tables,
    flags: int,
    n: int,
    perms: Permutations,
    *,
    mode: int,
    sigs: np.ndarray,
    counts: np.ndarray,
    values: np.ndarray,
    bounds: np.ndarray,
    lengths: np.ndarray,
    digests: np.ndarray | None = None,
    parallel: bool = True,
) -> None:
    """``scan_part`` over all of ``docs``: on this thread for a few documents (or when not
    ``parallel``: the caller runs several scans side by side), else on the kernel threads.
    ``digests`` (uint64 per document of ``docs``), if given, takes the signatures' digests."""
    check_n(n)
    args = (
        readonly(data),
        readonly(np.require(offsets, dtype=np.int64, requirements=["C", "A"])),
        np.require(docs, dtype=np.int64, requirements=["C", "A"]),
        *tables,
        flags,
        n,
        perms,
        mode,
        sigs,
        counts,
        values,
        bounds,
        lengths,
        np.empty(0, dtype=np.uint64) if digests is None else digests,
    )
    m = docs.size
    blocks = -(-m // _BLOCK)
    parts = 1 if m < SERIAL_BELOW or not parallel else min(blocks, threads())
    in_threads(lambda part: scan_part(*args, None, None, part, parts), parts)


def no_sigs() -> np.ndarray:
    """The ``sigs`` argument of a scan that makes no signatures."""
    return np.empty((0, 1), dtype=np.uint32)


def scan_shingles(data: np.ndarray, start: int, end: int, tables: Tables, flags: int, n: int) -> np.ndarray:
    """The shingle hashes of ``data[start:end]`` in text order, repeats kept."""
    offsets = np.array([start, end], dtype=np.int64)
    counts = np.zeros(1, dtype=np.int64)
    lengths = np.zeros(1, dtype=np.int64)
    cap = max(1, end - start)
    while True:
        values = np.empty(cap, dtype=np.uint64)
        bounds = np.array([0, cap], dtype=np.int64)
        scan_batch(
            data,
            offsets,
            np.zeros(1, dtype=np.int64),
            tables,
            flags,
            n,
            no_permutations(),
            mode=SHINGLES,
            sigs=no_sigs(),
            counts=counts,
            values=values,
            bounds=bounds,
            lengths=lengths,
        )
        if counts[0] <= cap:
            return values[: counts[0]]
        cap = int(counts[0])  # normalisation made more tokens than bytes: again, with room


def scan_tokens(data: np.ndarray, length: int, tables: Tables, flags: int) -> tuple[np.ndarray, np.ndarray]:
    """The normalised bytes of the tokens of ``data[:length]``, back to back, and where each ends."""
    counts = np.zeros(1, dtype=np.int64)
    lengths = np.zeros(1, dtype=np.int64)
    args = (
        readonly(data),
        readonly(np.array([0, length], dtype=np.int64)),
        np.zeros(1, dtype=np.int64),
        *tables,
        flags,
        1,
        no_permutations(),
        TOKENS,
        no_sigs(),
        counts,
        np.empty(0, dtype=np.uint64),
        np.zeros(2, dtype=np.int64),
        lengths,
        np.empty(0, dtype=np.uint64),
    )
    rec = np.empty(4 * length + 16, dtype=np.uint8)
    ends = np.empty(length + 1, dtype=np.int64)
    while True:
        scan_part(*args, rec, ends, 0, 1)
        nbytes, ntok = int(counts[0]), int(lengths[0])
        if nbytes <= rec.size and ntok <= ends.size:
            return rec[:nbytes], ends[:ntok]
        rec = np.empty(nbytes, dtype=np.uint8)  # normalisation grew the text: again, with room
        ends = np.empty(ntok, dtype=np.int64)
