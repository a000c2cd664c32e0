"""Whether a machine's simulated state fits in this host's memory, checked before a run.

The memory model keeps one 8-byte tag per line of every cache instance (per core for a
private level, per socket for a shared one), so a 64 GB L2 or 64 sockets of 256 cores asks
for more memory than the host has.  Allocating it would end in a ``MemoryError`` traceback
(or the kernel's OOM killer) minutes later; this estimate refuses it in one line first.
"""

from __future__ import annotations

from simsched.errors import ConfigError
from simsched.host import available_bytes
from simsched.machine.schema import Machine

#: Bytes of model state per cache line slot (one int64 tag).
BYTES_PER_LINE = 8


def state_bytes(machine: Machine) -> int:
    """Bytes the memory model allocates for ``machine``'s caches (the dominant part)."""
    total = 0
    for c in machine.caches:
        instances = machine.cores if c.scope == "core" else machine.sockets
        total += instances * (c.size // c.line) * BYTES_PER_LINE
    return total


def check_fits(machine: Machine, source: str | None = None) -> None:
    """Refuse a machine whose simulated caches need more memory than the host has.

    Raises
    ------
    ConfigError
        Naming the machine, what it needs and what is available.
    """
    need = state_bytes(machine)
    have = available_bytes()
    if have is not None and need > have:
        raise ConfigError(
            f"{source or machine.name}: simulating its caches needs about {need / 2**30:,.1f} GB "
            f"of memory, this host has {have / 2**30:,.1f} GB available (smaller caches or "
            "fewer cores?)"
        )
