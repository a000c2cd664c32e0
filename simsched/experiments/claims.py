"""Point claims: which runner of a sweep simulates a point (docs/sweeps.md).

Two runners of one sweep (two ``sweep run`` commands, or cluster workers) must not
simulate a point twice.  A claim is an exclusive ``flock`` on ``<point>/claim``, held while
the point runs and dropped by the kernel when its process dies; the file says who holds
it, so ``sweep status`` can name a running point's host and process.  Apart from the
results store (:mod:`simsched.experiments.store`), which only reads and writes rows.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import socket
import time
from pathlib import Path
from typing import Any

from simsched.experiments.store import point_dir

__all__ = ["CLAIM_FILE", "PointClaim", "claim_holder", "is_claimed"]

CLAIM_FILE = "claim"


class PointClaim:
    """An exclusive claim on one point, held by this process while the point runs.

    Two runners of one sweep (two ``sweep run`` commands, or cluster workers) must not
    simulate a point twice.  The claim is an exclusive ``flock`` on ``<point>/claim``: taking
    it is atomic, it is held exactly as long as the process runs the point, and the kernel
    drops it when the process dies (even by SIGKILL), so a crashed runner never leaves a
    point claimed for ever and no staleness rule is needed.
    """

    def __init__(self, out_dir: str | Path, point_id: str) -> None:
        self.path = point_dir(out_dir, point_id) / CLAIM_FILE
        self._fd: int | None = None

    def acquire(self, *, note: bool = True) -> bool:
        """Take the claim; ``False`` when another live process holds it.

        With ``note`` the file then says who holds it (:func:`claim_holder`).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                # The holder before us may have removed the file after we opened it: a lock
                # on that orphan would be a second claim, so only the current file counts.
                try:
                    current = os.stat(self.path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    current = False
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            if current:
                self._fd = fd
                if note:
                    # For `sweep status`, which reads it without taking the lock
                    # (claim_holder); a full disk only leaves it unsaid.
                    holder = {
                        "pid": os.getpid(),
                        "host": socket.gethostname(),
                        "since": time.time(),
                    }
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, 0)
                        os.pwrite(fd, json.dumps(holder).encode(), 0)
                return True
            os.close(fd)

    def release(self, *, remove: bool = True) -> None:
        """Give the claim up (removing the file first, unless ``remove`` is false)."""
        if self._fd is None:
            return
        if remove:
            self.path.unlink(missing_ok=True)
        os.close(self._fd)  # closing drops the lock
        self._fd = None

    def __enter__(self) -> PointClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_claimed(out_dir: str | Path, point_id: str) -> bool:
    """True while another process holds the point's claim (it is running the point)."""
    claim = PointClaim(out_dir, point_id)
    if not claim.path.exists():
        return False
    if claim.acquire(note=False):
        claim.release(remove=False)  # we never ran it: just drop the probe
        return False
    return True


def claim_holder(out_dir: str | Path, point_id: str) -> dict[str, Any] | None:
    """Who claimed a point, as its claim file says, or ``None`` when it says nothing (no
    claim file: the point never started or has finished; or an unreadable one).

    The file is read without taking its lock: a probe holding the lock at the moment a
    runner tries to take it would make that runner pass the point by.  So the file can
    outlive its holder (a runner killed with SIGKILL leaves it; the kernel drops only the
    lock), and ``alive`` says whether the holder still runs, where this host can tell.

    Parameters
    ----------
    out_dir
        The store's folder.
    point_id
        The point.

    Returns
    -------
    dict or None
        ``{"pid", "host", "since", "alive"}``: the holder's process id and host name, when
        it took the claim (seconds since the epoch), and ``True``/``False`` whether that
        process still exists when it ran on this host, ``None`` on another host (a
        cluster's worker).  A process id reused since by another process reads as alive.
    """
    path = point_dir(out_dir, point_id) / CLAIM_FILE
    try:
        info = json.loads(path.read_bytes() or b"null")
    except (OSError, ValueError):
        return None
    if not (
        isinstance(info, dict)
        and type(info.get("pid")) is int
        and isinstance(info.get("host"), str)
        and type(info.get("since")) in (int, float)
        and math.isfinite(info["since"])
    ):
        return None
    alive = _process_exists(info["pid"]) if info["host"] == socket.gethostname() else None
    return {"pid": info["pid"], "host": info["host"], "since": float(info["since"]), "alive": alive}


def _process_exists(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.path.isdir("/proc/self"):
        # A killed worker whose parent has not reaped it yet is a zombie: gone for our
        # purpose, while a signal 0 would still find it.
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                return f.read().rpartition(")")[2].split()[:1] != ["Z"]
        except FileNotFoundError:
            return False
        except OSError:
            pass
    try:  # no /proc (macOS): signal 0 only checks that the process exists
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
