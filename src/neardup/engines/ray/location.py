"""Where a Ray run keeps its files: a local folder or any URI pyarrow's filesystems open.

A :class:`Location` is a filesystem and a root path under it; it pickles to its URI, so each
Ray task opens its own connection. A local path is a folder on every node (shared storage on a
cluster of several machines); ``s3://``, ``gs://`` and ``hdfs://`` URIs reach object stores,
with the credentials and options (``?endpoint_override=...``) that pyarrow reads from the URI
and the environment.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from neardup.errors import InputError, OutputError
from neardup.io.page_cache import WINDOW, WriteBehind

_USER_PART = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@?#\s'\"]*@")


def shown(uri: str) -> str:
    """A URI as neardup shows it (in messages, ``summary.json``, ``source_file``): without the
    credentials its user part may carry (``s3://KEY:SECRET@bucket/key`` -> ``s3://bucket/key``);
    also every URI in a message."""
    return _USER_PART.sub(r"\1", uri)


def is_uri(text: str) -> bool:
    """Whether ``text`` names a filesystem URI (``scheme://...``) rather than a local path."""
    return "://" in text and not os.path.exists(text)


def open_uri(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and path a URI or local path names; an unknown scheme is an InputError."""
    if not is_uri(uri):
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise InputError(f"cannot open the filesystem: {shown(str(exc))}", path=shown(uri)) from exc
    return fs, str(path)


class Location:
    """A folder on a filesystem, given as a local path or URI, that a run writes (its output or
    work): a URI that opens no filesystem is an OutputError."""

    def __init__(self, uri: str) -> None:
        self.uri = uri if is_uri(uri) else os.path.abspath(uri)  # tasks run in other folders
        try:
            self.fs, self.root = open_uri(self.uri)
        except InputError as exc:
            raise OutputError(f"{shown(uri)}: {exc.reason}") from exc.__cause__
        self.local = isinstance(self.fs, pafs.LocalFileSystem)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Location, (self.uri,))

    def __str__(self) -> str:
        return shown(self.uri)

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def child(self, name: str) -> Location:
        """The location of a sub-folder, as a URI of its own."""
        if not is_uri(self.uri):
            return Location(os.path.join(self.uri, name))
        base, _, query = self.uri.partition("?")
        return Location(base.rstrip("/") + "/" + name + (f"?{query}" if query else ""))

    def exists(self, *parts: str) -> bool:
        return bool(self.fs.get_file_info(self.path(*parts)).type != pafs.FileType.NotFound)

    def make_dirs(self, *parts: str) -> None:
        self.fs.create_dir(self.path(*parts), recursive=True)

    def delete(self, *parts: str) -> None:
        """Remove a file or folder, if there."""
        info = self.fs.get_file_info(self.path(*parts))
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(info.path)
        elif info.type == pafs.FileType.File:
            self.fs.delete_file(info.path)

    def write_bytes(self, data: bytes, *parts: str) -> None:
        """Write a file whole: on a local disk through a temporary name and a rename, so a task
        killed midway leaves no half-written file (object stores publish an object whole)."""
        self._written(lambda sink: sink.write(data), *parts)

    def write_output(self, data: Any, *parts: str) -> None:
        """:meth:`write_bytes` for a file that is written and not read again (an output part): on a
        local disk its pages are handed back to the system as it is written
        (:class:`~neardup.io.page_cache.WriteBehind`), rather than filling the page cache."""
        if not self.local:
            self.write_bytes(bytes(data), *parts)
            return
        target = self.path(*parts)
        folder = target.rsplit("/", 1)[0]
        temporary = f"{folder}/.{uuid.uuid4().hex}.tmp"
        view = memoryview(data).cast("B")
        try:
            os.makedirs(folder, exist_ok=True)
            with open(temporary, "wb") as fh:
                behind = WriteBehind(Path(temporary))
                for at in range(0, len(view), WINDOW):
                    fh.write(view[at : at + WINDOW])
                    fh.flush()
                    behind.wrote()
            behind.close()
            os.replace(temporary, target)
        except OSError as exc:
            raise OutputError(f"{self}: cannot write {'/'.join(parts)}: {shown(str(exc))}") from exc

    def write_parquet(self, table: pa.Table, *parts: str) -> None:
        self._written(lambda sink: pq.write_table(table, sink), *parts)

    def write_json(self, data: Any, *parts: str) -> None:
        self.write_bytes(json.dumps(data, indent=1, sort_keys=True).encode(), *parts)

    def _written(self, write: Any, *parts: str) -> None:
        target = self.path(*parts)
        folder = target.rsplit("/", 1)[0]
        try:
            self.fs.create_dir(folder, recursive=True)
            temporary = f"{folder}/.{uuid.uuid4().hex}.tmp" if self.local else target
            with self.fs.open_output_stream(temporary) as sink:
                write(sink)
            if temporary != target:
                self.fs.move(temporary, target)
        except OSError as exc:
            raise OutputError(f"{self}: cannot write {'/'.join(parts)}: {shown(str(exc))}") from exc

    def read_json(self, *parts: str) -> Any | None:
        """The JSON a file holds, or None when there is none."""
        if not self.exists(*parts):
            return None
        with self.fs.open_input_stream(self.path(*parts)) as source:
            return json.loads(source.read())

    def read_parquet(self, *parts: str, columns: list[str] | None = None) -> pa.Table:
        with self.fs.open_input_file(self.path(*parts)) as source:
            return pq.read_table(source, columns=columns)
