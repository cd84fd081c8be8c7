"""Pure algorithms: normalisation, shingles, MinHash, LSH, verification, clusters.

Only the standard library, numpy, numba, ``neardup.config`` and
``neardup.errors`` are used here; no I/O happens in this package.
"""
