"""Tests of the kernel source generator and the on-disk module cache."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simsched.errors import OutputError
from simsched.machine import load_machine
from simsched.memory import _kernels as K
from tests.memory._streams import machine

M = machine(
    [
        {"size": 2048, "assoc": 2, "line": 64},
        {"size": 8192, "assoc": 4, "line": 128, "inclusive": True},
    ],
    sockets=2,
    cores_per_socket=2,
    placement="first-touch",
)


def test_geometry_constants():
    g = K.geometry_of(M)
    assert g.sets == (16, 16) and g.ways == (2, 4) and g.shifts == (6, 7)
    assert g.private == (True, True) and g.inclusive == (False, True)
    assert g.placement == K.PLACE_FIRST_TOUCH and g.coherent
    # One socket: placement cannot matter, the page map is skipped.
    one = K.geometry_of(machine([{"size": 2048, "assoc": 2, "line": 64}]))
    assert one.placement == K.PLACE_FIXED and one.fixed_node == 0


def test_source_is_specialised_and_deterministic():
    g = K.geometry_of(M)
    src = K.generate_source(g)
    assert src.startswith("import numpy as np\nfrom numba import njit\n")
    assert src == K.generate_source(g)
    # Ways appear as literals; set counts are run-time values read from the arrays.
    assert "(S0 - 1)" in src and "range(4)" in src
    assert "S0 = T0.shape[0] //" in src

    assert "def _serve(st, core, addrs, sizes, writes, deps, gaps, use_gaps, t, out, i0, n," in src
    assert "def _binv1(" in src and "def _coherence(" in src and "def _page_node(" in src
    compile(src, "<generated>", "exec")
    plain = K.generate_source(K.geometry_of(machine([{"size": 2048, "assoc": 2, "line": 64}])))
    assert "_coherence" not in plain and "_page_node" not in plain
    assert K.generate_source(g, "x = 1\n").rstrip().endswith("x = 1")


def test_set_and_reference_indices_are_unsigned():
    """Numba guards every signed index against a negative value (counting from the end);
    the kernels' indices are never negative, so the set operations and the reads of a
    core's references index with unsigned values, which carry no guard."""
    for g in (K.geometry_of(M), K.geometry_of(load_machine("opteron-8380-4x4"))):
        src = K.generate_source(g)
        subs = re.findall(r"\b(T\d|addrs|sizes|gaps|writes|deps)\[([^\]]*)\]", src)
        code = [(a, i) for a, i in subs if i != "i"]  # ``addrs[i]`` of the docstring
        assert code and all(i.startswith("np.uint64(") for _, i in code), code


def test_window_loop_calls_serve_without_literals():
    """``run_cores`` calls ``_serve`` with run-time values only: Numba types a literal
    argument (``True``) as ``Literal[bool]`` and compiles ``_serve`` a second time for it,
    beside the plain ``bool`` of ``access_batch``, which doubled a new machine's compile."""
    import ast

    tree = ast.parse(K.generate_source(K.geometry_of(load_machine("opteron-8380-4x4"))))
    loop = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "run_cores")
    calls = [
        c
        for c in ast.walk(loop)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "_serve"
    ]
    assert len(calls) == 1
    literals = [ast.unparse(a) for a in calls[0].args if isinstance(a, ast.Constant)]
    assert not literals, literals


def test_cache_sizes_share_one_module():
    """Machines that differ only in cache sizes (set counts) load one generated module,
    so a sweep over cache sizes compiles once (issue 22, item 5)."""
    sizes = [machine([{"size": 1024 << i, "assoc": 2, "line": 64}]) for i in range(4)]
    names = {K.load_module(K.geometry_of(m)).__name__ for m in sizes}
    assert len(names) == 1
    other = machine([{"size": 2048, "assoc": 4, "line": 64}])
    assert K.load_module(K.geometry_of(other)).__name__ not in names


def test_module_cache_reuses_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(tmp_path))
    g = K.geometry_of(M)
    mod = K.load_module(g, "", "cachetest")
    assert K.load_module(g, "", "cachetest") is mod
    files = list((tmp_path / "kernels").glob("simsched_mem_cachetest_*.py"))
    assert len(files) == 1
    stamp = files[0].stat().st_mtime_ns
    other = K.load_module(g, "y = 2\n", "cachetest")
    assert other is not mod and other.y == 2
    # A new process finds the same file and does not rewrite it.
    code = (
        "from simsched.memory import _kernels as K\n"
        "from tests.memory.test_kernels import M\n"
        "print(K.load_module(K.geometry_of(M), '', 'cachetest').__file__)\n"
    )
    env = dict(os.environ, SIMSCHED_CACHE_DIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == str(files[0])
    assert files[0].stat().st_mtime_ns == stamp


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_new_module_compiles_in_one_process_at_a_time():
    """Two processes starting on a new machine at once each compiled its module (Numba
    writes its cache only when a compile ends).  The first use of a module in a process
    now waits for the module's lock, which another process holds while it compiles."""
    import fcntl
    import threading

    from simsched.memory import MemorySystem

    module = MemorySystem(M).module  # compiled or loaded: the lock is not held now
    K._READY.discard(module.__name__)  # as if this process had not used it yet
    done = threading.Event()

    def first_use() -> None:
        MemorySystem(M)
        done.set()

    with open(Path(module.__file__).with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process compiling it
        waiter = threading.Thread(target=first_use)
        waiter.start()
        assert not done.wait(0.5)
        fcntl.flock(lock, fcntl.LOCK_UN)
    waiter.join(120)
    assert done.is_set() and module.__name__ in K._READY
    # once used, the module is taken without the lock
    with open(Path(module.__file__).with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        MemorySystem(M)
        fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_file_system_without_locks_compiles_without_waiting(monkeypatch):
    import errno
    import fcntl

    from simsched.memory import MemorySystem

    module = MemorySystem(M).module
    K._READY.discard(module.__name__)

    def no_locks(fd: object, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    assert MemorySystem(M).module is module and module.__name__ in K._READY


def test_a_ctrl_c_during_a_first_compile_stops_the_run_after_it():
    """A SIGINT inside the block is held until the block has ended, then raised as the
    KeyboardInterrupt the CLI turns into exit 130 (in Numba's compile it could come out
    as a RuntimeError, or leave a lock taken); the handler before is back after it."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as the CLI has it
    try:
        done = []
        with pytest.raises(KeyboardInterrupt):
            with K.interrupt_after():
                signal.raise_signal(signal.SIGINT)
                done.append(True)
        assert done == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with K.interrupt_after():  # no SIGINT: nothing raised
            pass
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_handler_not_installed_from_python_is_left_in_place(monkeypatch):
    """``signal.signal`` cannot restore a handler that ``getsignal`` reports as ``None``
    (one installed by C code): the block then runs without touching SIGINT."""
    import signal

    monkeypatch.setattr(signal, "getsignal", lambda signum: None)
    installed: list[object] = []
    monkeypatch.setattr(signal, "signal", lambda signum, handler: installed.append(handler))
    done = []
    with K.interrupt_after():
        done.append(True)
    assert done == [True] and installed == []


def test_the_window_loop_compiles_on_its_first_use(monkeypatch):
    """A model used through ``access_batch`` alone never compiles the multi-core window
    loop (3-4 CPU-s of a new machine's compile); its first use compiles it once."""
    from simsched.memory import MemorySystem

    module = K.load_module(K.geometry_of(M))
    real = module.run_cores
    calls: list[int] = []

    def counted(*args: object) -> object:
        calls.append(len(args))
        return real(*args)

    monkeypatch.setattr(module, "run_cores", counted)
    ms = MemorySystem(M)
    ms.access_batch(0, np.arange(8, dtype=np.uint64) * 64, np.full(8, 8, np.uint8), None, 0)
    assert calls == []
    assert ms.run_cores is counted and calls == [12]  # the first use: one call, no work
    assert ms.run_cores is counted and calls == [12]


@pytest.mark.parametrize("cores", [4, 32, 256])
def test_coherence_directory_stays_small_at_many_cores(cores):
    """The directory's buckets shrink as holders grow: at most about 16 MB at any core
    count (a full-size one is 270 MB at 256 cores), its masks, which every write reads,
    within 1.3 MB and before the counters, its mask one bit per holder."""
    from simsched.machine import load_machine
    from simsched.memory._kernels import geometry_of

    g = geometry_of(load_machine("itrs-scaling-32", {"cores_per_socket": cores}))
    assert g.mask_words == -(-(cores + 1) // 64)
    size = (1 << g.filter_bits) * g.filter_stride * 8
    assert size <= 17 * 2**20
    assert g.filter_counts * 8 <= 1.3 * 2**20
    assert g.filter_counts == (1 << g.filter_bits) * g.mask_words
    assert g.filter_bits == 17 if cores <= 8 else g.filter_bits < 17


def test_a_kernels_path_that_is_a_file_is_one_error_naming_the_cache(tmp_path, monkeypatch):
    """The kernels' folder was made with a bare mkdir: a file in its place gave Python's
    FileExistsError ("File exists"), and a sweep point recorded it as such."""
    (tmp_path / "kernels").write_text("x")
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(tmp_path))
    with pytest.raises(OutputError) as info:
        K.load_module(K.geometry_of(M), "", "blockedcache")
    assert str(info.value) == (
        f"{tmp_path / 'kernels'}: cannot create the folder: {tmp_path / 'kernels'} is a file, "
        "not a folder; it is in simsched's cache folder: set SIMSCHED_CACHE_DIR to a "
        "writable folder"
    )
