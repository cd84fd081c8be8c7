"""The CPU features neardup's kernels are compiled for."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numba
import pytest
from llvmlite import binding  # type: ignore[import-untyped]

from neardup.core.jit import WIDE_VECTOR_CPUS, wide_vector_features

AVX512 = "+64bit,+avx,+avx2,+avx512f,+avx512dq,+avx512vl,+fma"


def test_wide_vectors_on_intel_cpus_whose_tuning_prefers_256_bits() -> None:
    for cpu in ("icelake-server", "rocketlake", "sapphirerapids", "emeraldrapids"):
        assert cpu in WIDE_VECTOR_CPUS
        assert wide_vector_features(cpu, AVX512) == AVX512 + ",-prefer-256-bit"


@pytest.mark.parametrize(
    ("cpu", "features"),
    [
        ("skylake-avx512", AVX512),  # its clock drops further under 512-bit multiplies
        ("cascadelake", AVX512),
        ("znver4", AVX512),  # LLVM's own choice
        ("haswell", "+64bit,+avx,+avx2,+fma"),
        ("rocketlake", "+64bit,+avx,+avx2,-avx512f,-avx512dq"),  # AVX-512 turned off
    ],
)
def test_llvm_chooses_elsewhere(cpu: str, features: str) -> None:
    assert wide_vector_features(cpu, features) is None


def test_this_process_compiles_for_the_hosts_choice() -> None:
    if os.environ.get("NUMBA_CPU_NAME") or os.environ.get("NUMBA_CPU_FEATURES"):
        pytest.skip("the environment chooses the CPU features")
    host = wide_vector_features(binding.get_host_cpu_name(), binding.get_host_cpu_features().flatten())
    config: Any = numba.config
    assert host == config.CPU_FEATURES


def test_the_users_features_stand() -> None:
    script = "import neardup.core.jit, numba; print(numba.config.CPU_FEATURES)"
    env = {**os.environ, "NUMBA_CPU_FEATURES": "+64bit,+avx,+avx2"}
    env.pop("NUMBA_CPU_NAME", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "+64bit,+avx,+avx2"
    env = {**os.environ, "NUMBA_CPU_NAME": "haswell"}
    env.pop("NUMBA_CPU_FEATURES", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "None"


@pytest.mark.parametrize(
    "first",
    [
        "neardup.core.clusters",
        "neardup.core.lsh",
        "neardup.core.verify",
        "neardup.engines.kernels",
        "neardup.pipeline",
    ],
)
def test_kernels_compile_for_the_chosen_features_whatever_is_imported_first(first: str) -> None:
    """numba fixes its CPU features when the first function is decorated: a module decorating
    its kernels before the choice was made would leave a run compiling for other features
    than the warm-up child, which compiled for the chosen ones, and the cache would not serve it."""
    script = (
        f"import {first}\n"
        "from numba.core.registry import cpu_target\n"
        "print(cpu_target.target_context.codegen().magic_tuple()[2])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    host = binding.get_host_cpu_features().flatten()
    assert done.stdout.strip() == (wide_vector_features(binding.get_host_cpu_name(), host) or host)
