"""Stable 64-bit hashing primitives, compiled with numba.

Everything that neardup hashes goes through XXH64 (the public xxHash 64-bit
algorithm, bit-identical to ``xxhash.xxh64_intdigest``) or SplitMix64, so a
signature is the same on every machine, Python version and run.
"""

from __future__ import annotations

import numpy as np
from numba import njit

U64 = np.uint64
_P1 = U64(11400714785074694791)
_P2 = U64(14029467366897019727)
_P3 = U64(1609587929392839161)
_P4 = U64(9650029242287828579)
_P5 = U64(2870177450012600261)
_SM_GAMMA = U64(0x9E3779B97F4A7C15)
_SM_M1 = U64(0xBF58476D1CE4E5B9)
_SM_M2 = U64(0x94D049BB133111EB)


@njit(inline="always", cache=True)
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << U64(r)) | (x >> U64(64 - r))


@njit(inline="always", cache=True)
def _round(acc: np.uint64, lane: np.uint64) -> np.uint64:
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@njit(inline="always", cache=True)
def _merge(acc: np.uint64, val: np.uint64) -> np.uint64:
    acc = acc ^ _round(U64(0), val)
    return acc * _P1 + _P4


@njit(inline="always", cache=True)
def _avalanche(h: np.uint64) -> np.uint64:
    h = h ^ (h >> U64(33))
    h = h * _P2
    h = h ^ (h >> U64(29))
    h = h * _P3
    return h ^ (h >> U64(32))


@njit(inline="always", cache=True)
def _read64(data: np.ndarray, p: int) -> np.uint64:
    v = U64(0)
    for k in range(8):
        v |= U64(data[p + k]) << U64(8 * k)
    return v


@njit(inline="always", cache=True)
def _read32(data: np.ndarray, p: int) -> np.uint64:
    v = U64(0)
    for k in range(4):
        v |= U64(data[p + k]) << U64(8 * k)
    return v


@njit(cache=True)
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
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = seed + _P5
    h = h + U64(length)
    while p + 8 <= end:
        h = h ^ _round(U64(0), _read64(data, p))
        h = _rotl(h, 27) * _P1 + _P4
        p += 8
    if p + 4 <= end:
        h = h ^ (_read32(data, p) * _P1)
        h = _rotl(h, 23) * _P2 + _P3
        p += 4
    while p < end:
        h = h ^ (U64(data[p]) * _P5)
        h = _rotl(h, 11) * _P1
        p += 1
    return _avalanche(h)


@njit(cache=True)
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
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = _P5
    h = h + U64(8 * count)
    while p < end:
        h = h ^ _round(U64(0), lanes[p])
        h = _rotl(h, 27) * _P1 + _P4
        p += 1
    return _avalanche(h)


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
