"""Stable 64-bit hashing primitives, compiled with numba.

Everything that neardup hashes goes through XXH64 (the public xxHash 64-bit
algorithm, bit-identical to ``xxhash.xxh64_intdigest``) or SplitMix64, so a
signature is the same on every machine, Python version and run.

XXH64 comes in two forms: over a byte range (``xxh64_bytes``, ``xxh64_lanes``)
and streaming (``xxh64_short``, ``xxh64_stream_lane``, ``xxh64_stream_digest``),
so that the tokeniser can hash a token's normalised bytes as it produces them,
without writing them out.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neardup.core.jit import helper, hot_helper, kernel, njit

U64 = np.uint64
_P1 = U64(11400714785074694791)
_P2 = U64(14029467366897019727)
_P3 = U64(1609587929392839161)
_P4 = U64(9650029242287828579)
_P5 = U64(2870177450012600261)
_SM_GAMMA = U64(0x9E3779B97F4A7C15)
_SM_M1 = U64(0xBF58476D1CE4E5B9)
_SM_M2 = U64(0x94D049BB133111EB)


# The scalar helpers are small plain functions: numba compiles each once (rotation
# amounts are uint64, never int literals, so there is one specialisation) and LLVM
# inlines them wherever they are used.
@helper
def _rotl(x: np.uint64, r: np.uint64) -> np.uint64:
    return (x << r) | (x >> (U64(64) - r))


@helper
def _round(acc: np.uint64, lane: np.uint64) -> np.uint64:
    return _rotl(acc + lane * _P2, U64(31)) * _P1


@helper
def _merge(acc: np.uint64, val: np.uint64) -> np.uint64:
    return (acc ^ _round(U64(0), val)) * _P1 + _P4


@helper
def _converge(v1: np.uint64, v2: np.uint64, v3: np.uint64, v4: np.uint64) -> np.uint64:
    """XXH64's four accumulators (an input of 32 bytes or more) folded into one."""
    h = _rotl(v1, U64(1)) + _rotl(v2, U64(7)) + _rotl(v3, U64(12)) + _rotl(v4, U64(18))
    h = _merge(h, v1)
    h = _merge(h, v2)
    h = _merge(h, v3)
    return _merge(h, v4)


@helper
def _avalanche(h: np.uint64) -> np.uint64:
    h = h ^ (h >> U64(33))
    h = h * _P2
    h = h ^ (h >> U64(29))
    h = h * _P3
    return h ^ (h >> U64(32))


@helper
def _read64(data: np.ndarray, p: int) -> np.uint64:
    v = U64(0)
    for k in range(8):
        v |= U64(data[p + k]) << U64(8 * k)
    return v


@helper
def _read32(data: np.ndarray, p: int) -> np.uint64:
    v = U64(0)
    for k in range(4):
        v |= U64(data[p + k]) << U64(8 * k)
    return v


@kernel
def xxh64_bytes(data: np.ndarray, start: int, length: int, seed: np.uint64) -> np.uint64:
    """XXH64 of ``data[start:start + length]`` (a uint8 array)."""
    seed = U64(seed)  # a plain int seed would otherwise mix int64 into uint64 arithmetic
    p = start
    end = start + length
    if length >= 32:
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        limit = end - 32
        while p <= limit:
            v1 = _round(v1, _read64(data, p))
            v2 = _round(v2, _read64(data, p + 8))
            v3 = _round(v3, _read64(data, p + 16))
            v4 = _round(v4, _read64(data, p + 24))
            p += 32
        h = _converge(v1, v2, v3, v4)
    else:
        h = seed + _P5
    h = h + U64(length)
    while p + 8 <= end:
        h = h ^ _round(U64(0), _read64(data, p))
        h = _rotl(h, U64(27)) * _P1 + _P4
        p += 8
    if p + 4 <= end:
        h = h ^ (_read32(data, p) * _P1)
        h = _rotl(h, U64(23)) * _P2 + _P3
        p += 4
    while p < end:
        h = h ^ (U64(data[p]) * _P5)
        h = _rotl(h, U64(11)) * _P1
        p += 1
    return _avalanche(h)


@njit(inline="always", cache=True)
def xxh64_lanes(lanes: np.ndarray, start: int, count: int) -> np.uint64:
    """XXH64 (seed 0) of ``count`` uint64 values taken as little-endian bytes.

    Equal to ``xxh64_bytes`` over the same memory, without byte shuffling:
    this is how a shingle's hash is made from its tokens' hashes.
    """
    p = start
    end = start + count
    if count >= 4:
        v1 = _P1 + _P2
        v2 = _P2
        v3 = U64(0)
        v4 = U64(0) - _P1
        while p + 4 <= end:
            v1 = _round(v1, lanes[p])
            v2 = _round(v2, lanes[p + 1])
            v3 = _round(v3, lanes[p + 2])
            v4 = _round(v4, lanes[p + 3])
            p += 4
        h = _converge(v1, v2, v3, v4)
    else:
        h = _P5
    h = h + U64(8 * count)
    while p < end:
        h = h ^ _round(U64(0), lanes[p])
        h = _rotl(h, U64(27)) * _P1 + _P4
        p += 1
    return _avalanche(h)


WINDOW_SCRATCH = 4
"""Rows of scratch space (uint64[4, count]) :func:`xxh64_windows` needs for ``count`` windows."""


@helper
def xxh64_windows(
    lanes: np.ndarray, start: int, count: int, n: int, out: np.ndarray, pos: int, work: np.ndarray
) -> None:
    """``out[pos + j] = xxh64_lanes(lanes, start + j, n)`` for ``j < count``: the hashes of
    ``count`` overlapping windows of ``n`` lanes (the shingles of a run of token hashes).

    Computed a step of XXH64 at a time for all the windows (each step a loop over the windows
    with no branch, which LLVM turns into vector code) rather than one window after
    another, whose steps are a chain of dependent multiplications. ``work`` is
    uint64[``WINDOW_SCRATCH``, at least ``count``], of any content.
    """
    h = out[pos : pos + count]
    first = U64(start)  # unsigned indices: no negative-index check in the loops
    p = U64(0)
    nn = U64(n)
    if n >= 4:
        v1 = work[0, :count]
        v2 = work[1, :count]
        v3 = work[2, :count]
        v4 = work[3, :count]
        for j in range(count):
            v1[j] = _P1 + _P2
            v2[j] = _P2
            v3[j] = U64(0)
            v4[j] = U64(0) - _P1
        while p + U64(4) <= nn:
            at = first + p
            for j in range(count):
                k = at + U64(j)
                v1[j] = _round(v1[j], lanes[k])
                v2[j] = _round(v2[j], lanes[k + U64(1)])
                v3[j] = _round(v3[j], lanes[k + U64(2)])
                v4[j] = _round(v4[j], lanes[k + U64(3)])
            p += U64(4)
        for j in range(count):
            h[j] = _converge(v1[j], v2[j], v3[j], v4[j]) + U64(8 * n)
    else:
        for j in range(count):
            h[j] = _P5 + U64(8 * n)
    while p < nn:
        at = first + p
        for j in range(count):
            h[j] = _rotl(h[j] ^ _round(U64(0), lanes[at + U64(j)]), U64(27)) * _P1 + _P4
        p += U64(1)
    for j in range(count):
        h[j] = _avalanche(h[j])


@hot_helper
def multiset_mix(h: np.uint64) -> np.uint64:
    """SplitMix64's finaliser of a shingle hash: a document's digest is the sum of its shingles'
    (repeats included, mod 2**64), so two documents with the same shingles the same number of
    times share it, and two without share it by chance alone (2**-64)."""
    z = (h ^ (h >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
    return z ^ (z >> U64(31))


@hot_helper
def xxh64_short(tail: np.uint64, length: int) -> np.uint64:
    """XXH64 (seed 0) of ``length`` <= 8 bytes, held little-endian in ``tail``.

    Every step is computed and the ones past the end are discarded with a
    select, not skipped with a branch: word lengths vary too much for a
    branch predictor, and the multiplications are cheaper than the misses.
    """
    h = _P5 + U64(length)
    lane = _rotl(h ^ _round(U64(0), tail), U64(27)) * _P1 + _P4
    four = length >= 4
    h4 = _rotl(h ^ ((tail & U64(0xFFFFFFFF)) * _P1), U64(23)) * _P2 + _P3
    h = h4 if four else h
    rest = tail >> U64(32) if four else tail
    r = length - 4 if four else length
    h1 = _rotl(h ^ ((rest & U64(0xFF)) * _P5), U64(11)) * _P1
    h = h1 if r >= 1 else h
    h2 = _rotl(h ^ (((rest >> U64(8)) & U64(0xFF)) * _P5), U64(11)) * _P1
    h = h2 if r >= 2 else h
    h3 = _rotl(h ^ (((rest >> U64(16)) & U64(0xFF)) * _P5), U64(11)) * _P1
    h = h3 if r >= 3 else h
    return _avalanche(lane if length == 8 else h)


@hot_helper
def xxh64_stream_lane(state: np.ndarray, lane: np.uint64, length: int) -> None:
    """Feed the next 8-byte lane of a stream into a streaming XXH64 (seed 0).

    ``state`` is uint64[8]: the accumulators v1..v4, up to three buffered lanes
    and their count. ``length`` is the stream's length so far, this lane
    included; the first lane (``length == 8``) starts the state afresh, so a
    state needs no reset between streams.
    """
    lanes = 0 if length == 8 else np.int64(state[7])
    if lanes == 3:
        if length == 32:  # the first stripe: the accumulators start
            state[0] = _P1 + _P2
            state[1] = _P2
            state[2] = U64(0)
            state[3] = U64(0) - _P1
        state[0] = _round(state[0], state[4])
        state[1] = _round(state[1], state[5])
        state[2] = _round(state[2], state[6])
        state[3] = _round(state[3], lane)
        state[7] = U64(0)
    else:
        state[4 + lanes] = lane
        state[7] = U64(lanes + 1)


@hot_helper
def xxh64_stream_digest(state: np.ndarray, tail: np.uint64, tail_bits: int, length: int) -> np.uint64:
    """XXH64 (seed 0) of a stream of ``length`` bytes: the lanes fed to ``state`` with
    ``xxh64_stream_lane``, then ``tail_bits / 8`` bytes (up to a whole lane) in ``tail``."""
    if tail_bits == 64:
        xxh64_stream_lane(state, tail, length)
        tail = U64(0)
        tail_bits = 0
    lanes = 0 if length < 8 else np.int64(state[7])
    if length >= 32:
        v1, v2, v3, v4 = state[0], state[1], state[2], state[3]
        h = _converge(v1, v2, v3, v4)
    else:
        h = _P5
    h = h + U64(length)
    for k in range(lanes):
        h = _rotl(h ^ _round(U64(0), state[4 + k]), U64(27)) * _P1 + _P4
    nbytes = tail_bits >> 3
    if nbytes >= 4:
        h = _rotl(h ^ ((tail & U64(0xFFFFFFFF)) * _P1), U64(23)) * _P2 + _P3
        tail = tail >> U64(32)
        nbytes -= 4
    for _ in range(nbytes):
        h = _rotl(h ^ ((tail & U64(0xFF)) * _P5), U64(11)) * _P1
        tail = tail >> U64(8)
    return _avalanche(h)


class Permutations(NamedTuple):
    """MinHash permutations ``(a, b)`` laid out for ``update_signature``.

    ``m`` is the number of permutations rounded up to a multiple of 8 (the
    extra ones have ``a = b = 0``, and their signature values are ignored).
    ``strata_bits`` is 0 for the classic sketch, else the ``t`` of the stratified one
    (see :func:`update_signature`).
    """

    a: np.ndarray  # uint64[m]: the multipliers
    b: np.ndarray  # uint64[m]: the offsets
    a_lo: np.ndarray  # uint32[m]: the low 32 bits of each a
    a_hi: np.ndarray  # uint32[m]: the high 32 bits
    a_lo_pairs: np.ndarray  # uint64[m / 2]: a_lo again, two to a uint64 (even, odd)
    b_even: np.ndarray  # uint64[m / 2]: b of the even permutations
    b_odd: np.ndarray  # uint64[m / 2]: b of the odd ones
    strata_bits: int  # t: 2**t strata, 0 for the classic sketch


def strata_bits(num_perm: int) -> int:
    """The ``t`` of the stratified sketch: the fewest bits with ``2**t >= num_perm``, so that a
    shingle's ``num_perm`` permutations fall in ``num_perm`` different strata.

    >>> strata_bits(128), strata_bits(129), strata_bits(1)
    (7, 8, 0)
    """
    return (num_perm - 1).bit_length()


def pack_permutations(a: np.ndarray, b: np.ndarray, *, stratified: bool = False) -> Permutations:
    """The ``Permutations`` of multipliers ``a`` and offsets ``b`` (uint64 each), for the
    stratified sketch when ``stratified``, else for the classic one."""
    m = -(-a.size // 8) * 8
    a_pad = np.zeros(m, dtype=np.uint64)
    b_pad = np.zeros(m, dtype=np.uint64)
    a_pad[: a.size] = a
    b_pad[: b.size] = b
    a_lo = (a_pad & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    a_hi = (a_pad >> np.uint64(32)).astype(np.uint32)
    return Permutations(
        a_pad,
        b_pad,
        a_lo,
        a_hi,
        a_lo.view(np.uint64).copy(),
        np.ascontiguousarray(b_pad[0::2]),
        np.ascontiguousarray(b_pad[1::2]),
        strata_bits(a.size) if stratified else 0,
    )


def no_permutations() -> Permutations:
    """Empty ``Permutations``, for a scan that makes no signatures."""
    u32 = np.empty(0, dtype=np.uint32)
    u64 = np.empty(0, dtype=np.uint64)
    return Permutations(u64, u64, u32, u32, u64, u64, u64, 0)


def _vector_multiply64() -> bool:
    """Whether numba compiles for a CPU with a 64-bit vector multiply (AVX-512DQ's ``vpmullq``):
    the features it targets are ``NUMBA_CPU_FEATURES`` when set, else the host's."""
    from llvmlite import binding  # type: ignore[import-untyped]
    from numba.core import config

    features = getattr(config, "CPU_FEATURES", None) or binding.get_host_cpu_features().flatten()
    return "+avx512dq" in features.split(",")


VECTOR_MULTIPLY64 = _vector_multiply64()
"""``update_signature`` multiplies 64-bit lanes directly (compiled in as a constant)."""


@hot_helper
def _strata(z: np.uint64, top: np.uint32, low: np.uint32) -> tuple[np.uint32, np.uint32]:
    """The stratum cycle of a shingle whose ``multiset_mix`` is ``z``: its first stratum and its
    step (odd), each in the top bits of a uint32 (``top`` masks them, ``low`` is their lowest
    bit), independent of the permutations' values."""
    # numba widens uint32 operations to 64 bits: each result is cast back, so that the strata
    # stay 32-bit values and LLVM multiplies them in 32-bit lanes
    start = np.uint32(np.uint32(z >> U64(32)) & top)
    step = np.uint32(np.uint32(np.uint32(z & U64(0xFFFFFFFF)) & top) | low)
    return start, step


@kernel  # compiled once, not copied into its three call sites in the tokeniser
def update_signature(
    sig: np.ndarray, shingles: np.ndarray, lo: int, hi: int, perms: Permutations, work: np.ndarray
) -> np.uint64:
    """Fold ``shingles[lo:hi]`` into the MinHash signature ``sig`` (uint32[m], see
    ``Permutations``): permutation i keeps the minimum of a value of each shingle ``x``.
    Returns the sum of their ``multiset_mix`` (mod 2**64), their part of the document's digest,
    which the stratified sketch mixes them for anyway.

    Classic sketch (``strata_bits == 0``): the value is ``((a_i * x + b_i) mod 2**64) >> 32``.
    Stratified sketch (``t = strata_bits``): its top ``t`` bits are the stratum
    ``(s_x + i * d_x) mod 2**t``, its other ``32 - t`` bits the top ones of the classic value;
    ``s_x`` and the odd ``d_x`` come from a hash of ``x``, so each shingle falls in a different
    stratum in every permutation, and the minimum comes from the lowest stratum any shingle
    of the document reaches. Each permutation still keeps a uniformly chosen shingle of the
    set (the estimate is unbiased), but the permutations are no longer independent: a
    shingle that is the minimum in one sits in a high stratum in most others, so the
    positions' agreements vary less about the Jaccard than independent ones do.

    With ``x = xh * 2**32 + xl`` and ``a = ah * 2**32 + al``, the classic value is
    ``(((al * xl + b) mod 2**64) >> 32) + al * xh + ah * xl``, mod ``2**32``: one
    32x32->64-bit product and two 32-bit ones instead of a 64-bit product (which
    AVX2 does not have). The first loop makes the 64-bit parts of two permutations
    in each uint64 lane, even ones in the low half; the second adds the 32-bit
    parts and takes the minimums, eight permutations to a vector. With
    ``VECTOR_MULTIPLY64`` the 64-bit products are taken as they are, in one loop. Two shingles go
    through each pass, so the coefficients are loaded half as often. The strata are
    computed in 32-bit lanes throughout, each permutation's from the one before it
    (``+ d_x``): an add per vector rather than a multiply. ``work`` is scratch space, uint64[m].
    """
    m = perms.a_lo.size
    t = perms.strata_bits
    top = np.uint32(np.uint32(0xFFFFFFFF) << np.uint32(32 - t)) if t > 0 else np.uint32(0)
    low = np.uint32(np.uint32(1) << np.uint32(32 - t)) if t > 0 else np.uint32(0)
    total = U64(0)
    if VECTOR_MULTIPLY64:
        a = perms.a
        b = perms.b
        if t == 0:
            for s in range(lo, hi, 2):
                x = shingles[s]
                y = shingles[s + 1] if s + 1 < hi else x
                total += multiset_mix(x) + (multiset_mix(y) if s + 1 < hi else U64(0))
                for i in range(m):
                    u = np.uint32((a[i] * x + b[i]) >> U64(32))
                    v = np.uint32((a[i] * y + b[i]) >> U64(32))
                    sig[i] = min(sig[i], min(u, v))
            return total
        drop = U64(32 + t)
        for s in range(lo, hi, 2):
            x = shingles[s]
            y = shingles[s + 1] if s + 1 < hi else x
            zx = multiset_mix(x)
            zy = multiset_mix(y)
            total += zx + (zy if s + 1 < hi else U64(0))
            sx, dx = _strata(zx, top, low)
            sy, dy = _strata(zy, top, low)
            for i in range(m):  # the strata step on (sx + i * dx): an add per vector, not a multiply
                u = np.uint32(np.uint32((a[i] * x + b[i]) >> drop) | sx)
                v = np.uint32(np.uint32((a[i] * y + b[i]) >> drop) | sy)
                sig[i] = min(sig[i], min(u, v))
                sx = np.uint32(sx + dx)
                sy = np.uint32(sy + dy)
        return total
    half = m // 2
    a_lo = perms.a_lo
    a_hi = perms.a_hi
    pairs = perms.a_lo_pairs
    b_even = perms.b_even
    b_odd = perms.b_odd
    high = work  # the 64-bit parts' high halves of two shingles, two to a uint64
    high32 = high.view(np.uint32)
    m32 = U64(0xFFFFFFFF)
    upper = U64(0xFFFFFFFF00000000)
    bits = np.uint32(t)
    for s in range(lo, hi, 2):
        x = shingles[s]
        y = shingles[s + 1] if s + 1 < hi else x
        xl = x & m32
        yl = y & m32
        for j in range(half):
            even = pairs[j] & m32
            odd = pairs[j] >> U64(32)
            high[j] = ((even * xl + b_even[j]) >> U64(32)) | ((odd * xl + b_odd[j]) & upper)
            high[half + j] = ((even * yl + b_even[j]) >> U64(32)) | ((odd * yl + b_odd[j]) & upper)
        xl32 = np.uint32(xl)
        xh32 = np.uint32(x >> U64(32))
        yl32 = np.uint32(yl)
        yh32 = np.uint32(y >> U64(32))
        zx = multiset_mix(x)
        zy = multiset_mix(y)
        total += zx + (zy if s + 1 < hi else U64(0))
        if t == 0:
            for i in range(m):
                u = np.uint32(high32[i] + np.uint32(a_hi[i] * xl32) + np.uint32(a_lo[i] * xh32))
                v = np.uint32(high32[m + i] + np.uint32(a_hi[i] * yl32) + np.uint32(a_lo[i] * yh32))
                # min() rather than a branch, so the loop vectorises
                sig[i] = min(sig[i], min(u, v))
        else:
            sx, dx = _strata(zx, top, low)
            sy, dy = _strata(zy, top, low)
            for i in range(m):
                u = np.uint32(high32[i] + np.uint32(a_hi[i] * xl32) + np.uint32(a_lo[i] * xh32))
                v = np.uint32(high32[m + i] + np.uint32(a_hi[i] * yl32) + np.uint32(a_lo[i] * yh32))
                u = np.uint32(sx | (u >> bits))
                v = np.uint32(sy | (v >> bits))
                sig[i] = min(sig[i], min(u, v))
                sx = np.uint32(sx + dx)
                sy = np.uint32(sy + dy)
    return total


def splitmix64_stream(seed: int, count: int) -> np.ndarray:
    """``count`` values of the SplitMix64 generator started at ``seed``."""
    state = np.uint64(seed % (1 << 64))
    out = np.empty(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(count):  # runs once per permutation at set-up, not per shingle
            state = state + _SM_GAMMA
            out[i] = _splitmix_py(state)
    return out


def _splitmix_py(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> U64(30))) * _SM_M1
    z = (z ^ (z >> U64(27))) * _SM_M2
    return z ^ (z >> U64(31))
