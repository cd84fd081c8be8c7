"""A shuffle through the work location: each map task writes one Arrow IPC file holding a record
batch per destination partition, and each reduce task reads its partition's batch from every
map file.

One file per map task (not one per map task and partition) keeps the file count at the map
count on a corpus of any size; the reducer reads just its batch of each file (Arrow IPC files
are read at random). The files outlive the driver, so a run killed after a stage resumes from
them, and their sizes are the stage's bytes shuffled.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from neardup.engines.ray.location import Location

_PARTS_KEY = b"neardup.parts"


def map_file(map_id: int) -> str:
    return f"map-{map_id:06d}.arrow"


def write_map(location: Location, shuffle: str, map_id: int, parts: np.ndarray, table: pa.Table) -> int:
    """Write map task ``map_id``'s rows of ``table``, row k bound for partition ``parts[k]``
    (rows keep their order within a partition); returns the file's bytes."""
    parts = np.asarray(parts, dtype=np.int64)
    order = np.argsort(parts, kind="stable")
    ordered = table.take(pa.array(order, pa.int64())) if order.size else table
    sorted_parts = parts[order]
    present, starts = np.unique(sorted_parts, return_index=True)
    ends = np.append(starts[1:], sorted_parts.size).astype(np.int64)[: starts.size]
    schema = table.schema.with_metadata({_PARTS_KEY: json.dumps(present.tolist()).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, schema) as writer:
        for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
            (batch,) = ordered.slice(lo, hi - lo).combine_chunks().to_batches()  # one chunk: one batch
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))
    data = sink.getvalue()
    location.write_bytes(data.to_pybytes(), shuffle, map_file(map_id))
    return int(data.size)


def read_part(
    location: Location, shuffle: str, map_ids: Iterable[int], part: int, schema: pa.Schema
) -> pa.Table:
    """Partition ``part``'s rows from the map files of ``map_ids``, in map order (files not
    there held no rows: a map task with nothing to say writes none)."""
    tables = [table for _, table in read_parts(location, shuffle, map_ids, part, schema)]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables).combine_chunks()


def read_parts(
    location: Location, shuffle: str, map_ids: Iterable[int], part: int, schema: pa.Schema
) -> Iterator[tuple[int, pa.Table]]:
    """``(map_id, rows)`` of partition ``part`` from each map file that has some, in map order."""
    for map_id in map_ids:
        path = location.path(shuffle, map_file(map_id))
        try:
            source = location.fs.open_input_file(path)
        except FileNotFoundError:
            continue
        with source:
            reader = pa.ipc.open_file(source)
            present = json.loads((reader.schema.metadata or {}).get(_PARTS_KEY, b"[]"))
            at = int(np.searchsorted(present, part))
            if at < len(present) and present[at] == part:
                yield map_id, pa.Table.from_batches([reader.get_batch(at)]).cast(schema)
