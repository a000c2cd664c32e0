"""A point function whose module ends any worker process that imports it: a worker dies
before its point starts, as when a fresh process cannot import the point function."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

if multiprocessing.parent_process() is not None:
    os._exit(3)


def point(point: Any, run_dir: Path) -> dict[str, Any]:
    """Never reached in a worker; in the runner's own process (``--workers 0``) a record."""
    return {"status": "ok", "makespan_cycles": 1}
