"""Tables held in memory by other libraries, as one Arrow table: the library's input beside files.

:func:`arrow_table` takes anything that exports Arrow's C stream interface
(``__arrow_c_stream__``: a pyarrow ``Table`` or ``RecordBatchReader``, a polars
``DataFrame``, a duckdb relation, a pandas >= 2.2 ``DataFrame``), a Hugging Face
``datasets.Dataset`` (which holds a pyarrow table), and any pandas ``DataFrame``.
Arrow data is imported, not copied: the table's buffers are the frame's own where
its layout is Arrow's (pyarrow, duckdb's result, a dataset, a pandas frame of Arrow
strings). A stream is read a batch at a time keeping only the columns asked for.
None of these libraries is imported here: each object is recognised by its type's
module and its methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from neardup.errors import InputError, MissingColumnError

ACCEPTED = (
    "a pyarrow Table, RecordBatch or RecordBatchReader, any object with __arrow_c_stream__ "
    "(polars DataFrame, duckdb relation, pandas >= 2.2 DataFrame), a datasets.Dataset or a pandas DataFrame"
)


def is_frame(data: object) -> bool:
    """Whether :func:`arrow_table` takes ``data`` (rather than it being a list of texts or records)."""
    return (
        isinstance(data, pa.Table | pa.RecordBatch | pa.RecordBatchReader)
        or hasattr(data, "__arrow_c_stream__")
        or hasattr(data, "__arrow_c_array__")
        or _kind(data) in ("dataset", "dataset_dict", "iterable_dataset", "pandas")
    )


def arrow_table(data: object, *, columns: Sequence[str] | None = None) -> pa.Table:
    """``data`` (see the module's docstring) as a pyarrow table of its ``columns`` (all when
    ``None``), in its rows' order.

    A missing column is a :class:`~neardup.errors.MissingColumnError` naming the columns
    there are; an object of another kind a :class:`TypeError` naming those accepted.
    """
    want = None if columns is None else list(columns)
    kind = _kind(data)
    if isinstance(data, pa.Table):
        return _select(data, want)
    if isinstance(data, pa.RecordBatch):
        return _select(pa.Table.from_batches([data]), want)
    if isinstance(data, pa.RecordBatchReader):
        return _read_stream(data, want)
    if kind == "dataset":
        return _dataset(data, want)
    if kind == "dataset_dict":
        splits = ", ".join(repr(k) for k in data)  # type: ignore[attr-defined]
        raise TypeError(f"a DatasetDict holds several splits ({splits}); pass one, e.g. data['train']")
    if kind == "iterable_dataset":
        raise TypeError(
            "an IterableDataset is read lazily; load it (datasets.load_dataset(..., streaming=False)) "
            "or pass Dataset.from_generator(...)"
        )
    if kind == "pandas":
        return _pandas(data, want)
    if hasattr(data, "__arrow_c_stream__"):
        try:
            reader = pa.RecordBatchReader.from_stream(data)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InputError(f"cannot import the {_name(data)} as an Arrow stream: {exc}") from exc
        return _read_stream(reader, want)
    if hasattr(data, "__arrow_c_array__"):
        try:
            batch = pa.record_batch(data)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InputError(f"cannot import the {_name(data)} as an Arrow record batch: {exc}") from exc
        return _select(pa.Table.from_batches([batch]), want)
    raise TypeError(f"cannot read a {_name(data)} as a table; pass {ACCEPTED}")


def _kind(data: object) -> str | None:
    cls = type(data)
    module = cls.__module__ or ""
    if module.startswith("datasets."):
        names = {c.__name__ for c in cls.__mro__}
        for name, kind in (
            ("Dataset", "dataset"),
            ("DatasetDict", "dataset_dict"),
            ("IterableDatasetDict", "dataset_dict"),
            ("IterableDataset", "iterable_dataset"),
        ):
            if name in names:
                return kind
    if module.startswith("pandas.") and cls.__name__ == "DataFrame":
        return "pandas"
    return None


def _name(data: object) -> str:
    cls = type(data)
    return f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__qualname__


def _missing(want: list[str] | None, names: Sequence[str]) -> None:
    for name in want or []:
        if name not in names:
            raise MissingColumnError(f"no column {name!r}; the table has: {', '.join(map(str, names))}")


def _select(table: pa.Table, want: list[str] | None) -> pa.Table:
    _missing(want, table.column_names)
    return table if want is None else table.select(want)


def _read_stream(reader: pa.RecordBatchReader, want: list[str] | None) -> pa.Table:
    """The stream's batches, only the ``want`` columns kept as each is read."""
    _missing(want, reader.schema.names)
    schema = reader.schema if want is None else pa.schema([reader.schema.field(n) for n in want])
    batches: list[pa.RecordBatch] = []
    try:
        for batch in reader:
            batches.append(batch if want is None else batch.select(want))
    except pa.ArrowException as exc:
        raise InputError(f"cannot read the Arrow stream: {exc}") from exc
    return pa.Table.from_batches(batches, schema=schema)


def _dataset(data: Any, want: list[str] | None) -> pa.Table:
    """A ``datasets.Dataset``'s rows as a table: its own Arrow table (memory-mapped, or in memory)
    when its rows are in order; taken in its order (a copy) after ``select`` or ``shuffle``."""
    _missing(want, data.column_names)
    if want is not None:
        data = data.select_columns(want)
    table: pa.Table = data.with_format("arrow")[:]
    return table


def _pandas(data: Any, want: list[str] | None) -> pa.Table:
    """A pandas frame's ``want`` columns converted alone (Arrow-backed strings are not copied)."""
    _missing(want, [str(c) for c in data.columns])
    frame = data if want is None else data[want]
    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise InputError(f"cannot convert the DataFrame to Arrow: {exc}") from exc
