"""Cheap point functions for the sweep runner's tests (importable by spawned workers).

They stand in for a simulation: a deterministic record computed from the point, optional
sleeping and failing driven by the workload's parameters, and a log line per execution so
tests can count how often each point really ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any


def _log(point_id: str, event: str) -> None:
    path = os.environ.get("SIMSCHED_TEST_POINT_LOG")
    if path:
        # O_APPEND writes of one short line are atomic between processes.
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{event} {point_id}\n")


def fake_point(point, run_dir: Path) -> dict[str, Any]:
    """Deterministic record from the point; ``sleep`` and ``fail`` workload params act."""
    params = point.workload.get("params", {})
    _log(point.id, "start")
    if params.get("sleep"):
        time.sleep(float(params["sleep"]))
    if params.get("fail") and point.seed % 2 == 1:
        raise ValueError(f"point {point.id} was told to fail")
    digest = hashlib.sha256(f"{point.id}".encode()).digest()
    cores = point.machine["resolved"]["cores_per_socket"] * point.machine["resolved"]["sockets"]
    record = {
        "status": "ok",
        "makespan_cycles": int.from_bytes(digest[:4], "little") // cores,
        "instructions": int(params.get("n", 1)) * 10,
        "L2_misses": digest[4],
        "mpki": digest[4] / 10.0,
        "speedup": float(cores) * (0.9 if point.scheduler["name"] == "ws" else 1.0),
        "wall_s": 0.001,
        "seed": point.seed,
    }
    (run_dir / "result.json").write_text(json.dumps(record))
    _log(point.id, "end")
    return record


def identity_point(point, run_dir: Path) -> dict[str, Any]:
    """fake_point's record with the running code's identity, as simsched.run records it."""
    from simsched import identity

    return {**fake_point(point, run_dir), "code_identity": identity.results_identity()}


def busy_point(point, run_dir: Path) -> dict[str, Any]:
    """Burn CPU for ``work`` million loop iterations (equal points for speed-up checks)."""
    n = int(point.workload.get("params", {}).get("work", 1)) * 1_000_000
    acc = 0
    for i in range(n):
        acc ^= i
    return {"status": "ok", "acc": acc, "wall_s": 0.0}


def full_disk_point(point, run_dir: Path) -> dict[str, Any]:
    """fake_point, but odd seeds meet a full disk while there is a file ``$SIMSCHED_TEST_FULL``."""
    import errno

    flag = os.environ.get("SIMSCHED_TEST_FULL")
    if flag and os.path.exists(flag) and point.seed % 2 == 1:
        from simsched.files import write_text_atomic

        def full(*args: Any, **kwargs: Any) -> None:
            raise OSError(errno.ENOSPC, "No space left on device", str(run_dir / "x"))

        import tempfile

        real, tempfile.mkstemp = tempfile.mkstemp, full  # this write meets the full disk
        try:
            write_text_atomic(run_dir / "result.json", "{}")
        finally:
            tempfile.mkstemp = real
    return fake_point(point, run_dir)
