"""Prometheus metrics: requests, latency per route, texts checked, duplicates found, the index's
size and the process's memory.

With several workers, prometheus-client's multiprocess mode sums them: :func:`serve` points
``PROMETHEUS_MULTIPROC_DIR`` at a fresh folder before the workers start, and ``/metrics``
collects every worker's file.
"""

from __future__ import annotations

import os
import time

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter("neardup_http_requests", "HTTP requests answered", ["route", "method", "status"])
LATENCY = Histogram(
    "neardup_http_request_duration_seconds", "Time to answer a request", ["route"], buckets=_LATENCY_BUCKETS
)
ERRORS = Counter("neardup_errors", "Answers that were not a success, by kind", ["kind"])
TEXTS_CHECKED = Counter("neardup_texts_checked", "Texts checked against the index")
DUPLICATES_FOUND = Counter("neardup_duplicates_found", "Checked texts that matched an indexed document")
DOCUMENTS_INSERTED = Counter("neardup_documents_inserted", "Documents inserted (by checks and inserts)")
INDEX_DOCUMENTS = Gauge(
    "neardup_index_documents", "Documents in the index when last counted", multiprocess_mode="mostrecent"
)
RESIDENT_BYTES = Gauge(
    "neardup_process_resident_bytes", "Resident memory of the server's workers", multiprocess_mode="livesum"
)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


_noted = [0.0]


def note_memory(every_s: float = 1.0) -> None:
    """Record this worker's resident memory, at most once per ``every_s`` (Linux; elsewhere
    nothing)."""
    now = time.monotonic()
    if now - _noted[0] < every_s:
        return
    _noted[0] = now
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            RESIDENT_BYTES.set(int(fh.read().split()[1]) * _PAGE)
    except (OSError, ValueError, IndexError):
        pass


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus' text format, every worker's together, and the content type."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
