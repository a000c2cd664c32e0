"""Tests of the static per-block instruction counts (simsched.capture.bbtable)."""

from __future__ import annotations

import numpy as np

from simsched.capture import compile_program
from simsched.capture.bbtable import MAGIC, block_counts

from .conftest import PROGRAMS, needs_gcc

LISTING = """
0000000000001000 <f>:
    1000:\tpush   %rbx
    1001:\tmov    0x8(%rsp),%rdi
    1006:\tcall   2000 <__tsan_func_entry>
    100b:\tcall   2100 <__sanitizer_cov_trace_pc>
    1010:\ttest   %rsi,%rsi
    1013:\tjle    1040 <f+0x40>
    1015:\tcall   2100 <__sanitizer_cov_trace_pc>
    101a:\tlea    (%rax,%rbx,4),%r12
    101e:\tmov    %r12,%rdi
    1021:\tcall   2200 <__tsan_read4>
    1026:\tmov    (%r12),%eax
    102a:\tmov    %eax,0x8(%rsp)
    102e:\tnopw   0x0(%rax,%rax,1)
    1034:\tadd    $0x1,%rbx
    1038:\tjmp    1015 <f+0x15>
0000000000001040 <g>:
    1040:\tcall   2100 <__sanitizer_cov_trace_pc>
    1045:\tret
"""


def test_block_counts_leave_out_instrumentation_spills_and_padding():
    counts = block_counts(LISTING, exe_start=0x1000)
    # f's entry block: push (prologue) + test + jle = 3; the rsp reload that sets %rdi
    # for func_entry and the calls are instrumentation
    assert counts[0x10] == 3
    # loop block: lea, mov (the reference), add, jmp = 4 instructions, one of them the
    # reference itself -> 3; the %rdi set-up, the call, the spill and the nop are left out
    assert counts[0x1A] == 3
    assert counts[0x45] == 1  # g: ret
    assert set(counts) == {0x10, 0x1A, 0x45}


@needs_gcc
def test_simsched_cc_writes_a_table_beside_the_program(cache, tmp_path):
    out = tmp_path / "ms"
    assert compile_program(["-O2", str(PROGRAMS / "mergesort.c"), "-o", str(out)]) == 0
    data = (tmp_path / "ms.ssbb").read_bytes()
    assert data[:8] == MAGIC
    n = int(np.frombuffer(data[8:16], "<u8")[0])
    table = np.frombuffer(data[16:], np.uint8)
    assert table.shape[0] == n and int((table > 0).sum()) > 20


def test_output_of_finds_the_linked_program():
    from pathlib import Path

    from simsched.capture.run import output_of

    assert output_of(["-O2", "x.c", "-o", "prog"]) == Path("prog")
    assert output_of(["-oprog2", "x.c"]) == Path("prog2")
    assert output_of(["x.c"]) == Path("a.out")
    # gcc's long spelling: the table was not written, and every block counted the default
    assert output_of(["x.c", "--output=prog3"]) == Path("prog3")
    assert output_of(["x.c", "--output", "prog4"]) == Path("prog4")
