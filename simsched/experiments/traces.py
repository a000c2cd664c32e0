"""Traces on demand for sweep points (the recipes themselves: :mod:`simsched.trace.recipes`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simsched.trace.recipes import (  # noqa: F401  (kept importable from here)
    SIMSCHED_CMD,
    TRACE_MAKING_PACKAGES,
    cached_trace_path,
    recipe_key,
)
from simsched.trace.recipes import ensure_trace as _ensure_trace


def ensure_trace(workload: dict[str, Any], cache_dir: str | Path, spec_dir: str | Path) -> Path:
    """:func:`simsched.trace.recipes.ensure_trace` with simsched's own generators."""
    from simsched.workloads import generate

    return _ensure_trace(workload, cache_dir, spec_dir, generate=generate)
