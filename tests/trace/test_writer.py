"""simsched.trace.writer: a trace whose file cannot be written fails in one line naming it
and leaves nothing behind."""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: Writes a trace of 64 chunks (a few MB) under a file size limit of ``limit`` bytes, with
#: SIGXFSZ ignored so that a write past it fails (EFBIG) as one on a full disk would.
_SCRIPT = textwrap.dedent(
    """
    import os, resource, signal, sys
    import numpy as np
    from simsched.errors import SimschedError
    from simsched.trace import TraceBuilder

    path, limit = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        with TraceBuilder(path, chunk_refs=4096) as b:
            for i in range(64):
                b.spawn()
                addr = np.random.default_rng(i).integers(0, 2**40, 4096).astype(np.uint64)
                b.refs(addr * 8, 8, False)
                b.ret()
            b.sync()
        print("written")
    except SimschedError as exc:
        print(type(exc).__name__, exc)
    print(sorted(os.listdir(os.path.dirname(path))))
    """
)


def test_a_write_that_fails_names_the_trace_and_leaves_nothing(tmp_path):
    """The writer's OSError named no file: ``trace import`` and ``regrain`` said "file too
    large", or blamed standard output ("standard output: no space left on the device")."""
    path = tmp_path / "t.sst"
    for limit in (100_000, 10):  # in a chunk, and at the header the file starts with
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(path), str(limit)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout.splitlines() == [
            f"OutputError {path}: cannot write (file too large)",
            "[]",
        ], done.stderr
