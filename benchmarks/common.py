"""Small helpers the benchmark scripts share: machine facts and Markdown tables."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence
from typing import Any


def cpu_model() -> str:
    """The CPU model name, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_details() -> dict[str, str]:
    """Where /proc/cpuinfo says: the CPU family and model numbers (a virtual machine often names
    its CPU only "AMD EPYC", and the figures move with the generation behind it), the widest
    vector extension, and what LLVM (numba's compiler) takes the CPU for."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = (part.strip() for part in line.partition(":"))
                if key in ("cpu family", "model", "flags") and key not in fields:
                    fields[key] = value
    except OSError:
        return {}
    flags = set(fields.get("flags", "").split())
    vectors = next((name for name in ("avx512f", "avx2", "avx", "sse4_2") if name in flags), "none")
    details = {
        "cpu_family_model": f"{fields.get('cpu family', '?')}/{fields.get('model', '?')}",
        "cpu_vectors": vectors,
    }
    try:
        import llvmlite.binding as llvm

        details["llvm_cpu"] = llvm.get_host_cpu_name()
    except (ImportError, RuntimeError):
        pass
    return details


def machine_info() -> dict[str, Any]:
    """CPU, cores, memory and the versions that matter for the figures."""
    import numba
    import numpy

    info: dict[str, Any] = {
        "cpu": cpu_model(),
        **cpu_details(),
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "platform": platform.platform(),
    }
    try:
        import psutil

        info["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
        info["physical_cores"] = psutil.cpu_count(logical=False)
    except ImportError:
        pass
    return info


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; floats are shown with three decimals."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
