"""What this host can give a run: the memory a new allocation may take.

One function shared by the checks that refuse a run too large for the host before it
allocates anything (a machine's simulated state, the engine's chunk buffers, a generated
trace's memory) and by the trace reader, which keeps decoded references only while they
leave room.
"""

from __future__ import annotations

import os


def available_bytes() -> int | None:
    """Bytes of memory this host can give a new allocation (Linux ``MemAvailable``, else
    free physical pages), or None when the host does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None
