"""The external engine: dedup a corpus larger than memory, resumably, with bounded memory.

:func:`dedup_external` is the engine over a stream of Arrow batches;
:mod:`neardup.engines.streaming` runs it over input files for ``neardup dedup``.

>>> import pyarrow as pa, tempfile
>>> table = pa.table({"text": ["The cat sat on the mat.", "the cat sat on the mat", "Dogs bark."]})
>>> with tempfile.TemporaryDirectory() as work:
...     dedup_external(table, work_dir=work, memory_limit=1 << 26).keep.tolist()
[True, False, True]
"""

from neardup.engines.external import ExternalResult, dedup_external
from neardup.engines.manifest import STAGES
from neardup.engines.plan import MIN_MEMORY_LIMIT, Plan, default_memory_limit
from neardup.engines.source import Source, table_source

__all__ = [
    "MIN_MEMORY_LIMIT",
    "STAGES",
    "ExternalResult",
    "Plan",
    "Source",
    "dedup_external",
    "default_memory_limit",
    "table_source",
]
