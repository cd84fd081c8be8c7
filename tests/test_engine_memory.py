"""The external engine's peak memory does not grow with the corpus beyond a few values per document.

Two fresh processes (run side by side) dedup 10,000 and 40,000 small generated documents
under the same memory limit; each measures its peak resident memory (``ru_maxrss``) over
its own baseline after start-up and a warm-up run. The in-memory pipeline would grow by
about 1 kB per extra document (signature, band keys, text: 30 MB here); the engine may grow
only by its arrays of one value per document (shingle counts, lengths, clusters: ~100
bytes). Measured when this was written: 20.4 MB and 18.6 MB over the baseline (20,000 and
80,000 documents: 21.2 and 21.5 MB), the chunks' working set, whatever the corpus size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = """
import json, resource, sys, tempfile
import numpy as np
import pyarrow as pa
from neardup import DedupConfig
from neardup.engines import dedup_external

n, limit = int(sys.argv[1]), int(sys.argv[2])
rng0 = np.random.default_rng(0)
vocab = np.array(["w%x" % i for i in rng0.permutation(4000)], dtype=object)

def source():
    for b, lo in enumerate(range(0, n, 4000)):
        rng = np.random.default_rng(b)
        m = min(4000, n - lo)
        words = vocab[rng.integers(0, vocab.size, size=(m, 24))]
        copy = rng.random(m) < 0.1
        words[copy] = words[np.maximum(np.flatnonzero(copy) - 1, 0)]
        words[copy, 5] = "edited"
        yield pa.record_batch({"text": [" ".join(row) for row in words.tolist()]})

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096

config = DedupConfig.create(keep="longest")
with tempfile.TemporaryDirectory() as work:  # warm up: load every kernel
    dedup_external(pa.table({"text": ["a b c d", "a b c d e", ""]}), config, work_dir=work)
base = rss()
with tempfile.TemporaryDirectory() as work:
    r = dedup_external(source, config, work_dir=work, memory_limit=limit)
    dups = int((~r.keep).sum())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"base": base, "peak": peak, "dups": dups}))
"""

LIMIT = 8 << 20


def _growth(sizes: list[int]) -> list[tuple[int, int]]:
    """(peak over baseline, duplicates found) of a run on each corpus size, in parallel processes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(n), str(LIMIT)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in sizes
    ]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate()
        assert proc.returncode == 0, stderr
        got = json.loads(stdout.strip().splitlines()[-1])
        out.append((int(got["peak"]) - int(got["base"]), int(got["dups"])))
    return out


def test_peak_memory_does_not_grow_with_the_corpus() -> None:
    sizes = [10_000, 40_000]
    (small, dups_small), (large, dups_large) = _growth(sizes)
    # the runs did their work: about a tenth of each corpus is planted copies
    assert dups_small > sizes[0] // 20 and dups_large > sizes[1] // 20
    extra_docs = sizes[1] - sizes[0]
    # at most ~150 bytes per extra document (its n-sized arrays) plus allocator noise; the
    # in-memory pipeline would need about 1 kB per extra document
    assert large - small < 150 * extra_docs + (8 << 20), (small, large)
