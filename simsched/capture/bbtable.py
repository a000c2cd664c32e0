"""Static per-basic-block instruction counts for the gcc backend's gap estimate.

``simsched cc`` builds with ``-fsanitize-coverage=trace-pc``, so every basic block starts
with a call to ``__sanitizer_cov_trace_pc``.  After linking, :func:`write_block_table`
disassembles the program (``objdump -d``) and, for every such call, counts the
instructions of the block that would exist without instrumentation: up to the next
``trace_pc`` call, leaving out

* the calls into the runtime (``__tsan_*``, ``__sanitizer_*``) and the instruction that
  loads their argument register ``%rdi`` just before them,
* ``mov`` instructions to or from ``(%rsp)`` -- the spills and reloads the instrumentation
  calls force around themselves (native code at ``-O2`` rarely spills in hot blocks),
* padding ``nop`` instructions,

and subtracts the block's instrumented memory accesses (each becomes a reference record,
which counts as one instruction by itself).  A function's prologue before its first
``trace_pc`` call is added to its first block.

The table, ``PROGRAM.ssbb`` beside the program, maps the return address of each
``trace_pc`` call (relative to ``__executable_start``, so it holds for PIE programs) to
that count (capped at 255).  The runtime loads it at start-up and adds the count of every
block entered to the pending gap; blocks outside the table (other instrumented shared
objects) and programs without a table fall back to ``SIMSCHED_BB_INSNS`` per block.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from simsched.files import write_bytes_atomic

MAGIC = b"SSBB0001"
_FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_ACCESS = re.compile(r"<__tsan_(?:unaligned_)?(?:volatile_)?(?:read|write)\d+(?:_pc)?>")
_RUNTIME = re.compile(r"<__(?:tsan|sanitizer)_\w+>")
_RSP_SLOT = re.compile(r"\(%rsp\)")


def block_counts(disassembly: str, exe_start: int) -> dict[int, int]:
    """Count each block's non-memory instructions from ``objdump -d -w`` output.

    Parameters
    ----------
    disassembly
        Text of ``objdump -d -w --no-show-raw-insn`` of the program.
    exe_start
        Address of ``__executable_start`` in the same listing.

    Returns
    -------
    dict
        Offset of each ``trace_pc`` return address from ``exe_start`` -> count.
    """
    out: dict[int, int] = {}
    key: int | None = None
    pending_key = False
    count = refs = 0
    last_sets_rdi = False

    def close() -> None:
        if key is not None:
            out[key - exe_start] = max(0, min(255, count - refs))

    for line in disassembly.splitlines():
        if _FUNC.match(line):
            close()
            key, pending_key = None, False
            count = refs = 0
            last_sets_rdi = False
            continue
        m = _INSN.match(line)
        if not m:
            continue
        addr, mnem, ops = int(m.group(1), 16), m.group(2), m.group(3)
        if pending_key:  # the instruction after a trace_pc call: its return address
            key, pending_key = addr, False
        if mnem.startswith("call") and "<__sanitizer_cov_trace_pc>" in ops:
            if key is not None:
                close()
                count = refs = 0
            # else: the prologue so far stays in count, added to the first block
            pending_key = True
            last_sets_rdi = False
            continue
        if mnem.startswith("call") and _RUNTIME.search(ops):
            if _ACCESS.search(ops):
                refs += 1
            if last_sets_rdi:
                count -= 1
            last_sets_rdi = False
            continue
        if mnem.startswith("nop") or mnem in ("data16", "cs") or ops == "%ax,%ax":
            continue
        if mnem.startswith("mov") and _RSP_SLOT.search(ops):
            last_sets_rdi = False
            continue
        count += 1
        last_sets_rdi = mnem in ("mov", "lea", "movq") and ops.endswith(",%rdi")
    close()
    return out


def write_block_table(binary: str | os.PathLike) -> Path | None:
    """Write ``BINARY.ssbb`` for a program built by ``simsched cc``.

    Parameters
    ----------
    binary
        The linked program.

    Returns
    -------
    Path or None
        The table written, or ``None`` when ``objdump``/``nm`` are missing or the program
        has no instrumented blocks (the runtime then uses its constant estimate).
    """
    binary = Path(binary)
    if shutil.which("objdump") is None or shutil.which("nm") is None:
        return None
    syms = subprocess.run(["nm", str(binary)], capture_output=True, text=True).stdout
    m = re.search(r"^([0-9a-f]+) \w __executable_start$", syms, re.M)
    if not m:
        return None
    dis = subprocess.run(
        ["objdump", "-d", "-w", "--no-show-raw-insn", "-j", ".text", str(binary)],
        capture_output=True,
        text=True,
    )
    if dis.returncode != 0:
        return None
    counts = block_counts(dis.stdout, int(m.group(1), 16))
    if not counts:
        return None
    table = np.zeros(max(counts) + 1, np.uint8)
    table[np.fromiter(counts.keys(), np.int64)] = np.fromiter(counts.values(), np.int64)
    dest = binary.with_name(binary.name + ".ssbb")
    write_bytes_atomic(dest, MAGIC + np.uint64(table.shape[0]).tobytes() + table.tobytes())
    return dest
