"""Source generator of the per-geometry Numba memory kernels.

The memory model is specialised per machine by *generating Python source* in which every
geometry parameter (ways, line shifts, scopes, inclusion flags, core and socket counts,
page shift, placement, coherence, core model, prefetcher) is a literal constant.  Numba
then sees loop bounds as compile-time constants and unrolls the way searches, which is
what lets the kernels run at C speed (a generic kernel with run-time geometry runs about
three times slower).  Two kinds of values stay run-time: timing (the TIMING array) and
the set counts, read from each level's array (``_gen_sets._sets``), which cost 2 % and let a
sweep over cache sizes share one compiled module.

The generator is split by what it emits: the state's layout and the geometry
(:mod:`~simsched.memory._geometry`), indexing and the set operations
(:mod:`~simsched.memory._gen_sets`), what happens below a miss
(:mod:`~simsched.memory._gen_memory`), a core's access, the prefetcher and the entry points
(:mod:`~simsched.memory._gen_core`); this module assembles them and caches the result.
The set operations (find, move to MRU, insert at MRU, remove), the coherence filter's
updates and the links' reservation are small generated functions (``_find_w{w}``,
``_f_in``, ``_links`` ...), each written once and called wherever ``_serve`` needs it:
the compiler inlines most of them back, and Numba types and lowers each once instead of
at every place, which took a third off a new three-level machine's compile
(docs/performance.md).  The generated module (see :func:`generate_source`) contains,
per cache level ``k``:

``_binv{k}``
    back-invalidation of the levels above an inclusive level ``k``;

per associativity ``w`` > 1 of its levels, ``_find_w{w}`` / ``_touch_w{w}`` /
``_insert_w{w}`` / ``_remove_w{w}`` (the set operations, shared by levels of equal
ways); and, where the machine has them, ``_f_in`` / ``_f_out`` and ``_coherence`` (the
coherence filter's counts and a write's search of the other caches) and ``_links`` (the
socket links).  Demand fills, victims and write-backs are emitted in place in ``_serve``;

an *exclusive* (victim) level ``k`` is never demand-filled: every victim of level ``k-1``,
clean or dirty, arrives there like a write-back carrying its dirty bit
(``_g_victim_down``), and a demand hit there removes the line and hands its dirty bit
to the level-0 fill (``_g_take``), so the line lives above it only;

and the entry points ``_serve`` (references of one core up to a time bound, looping
inside Numba with the core's statistics in registers), ``run_cores`` (the multi-core window
loop of :mod:`simsched.memory.window`) and ``_page_node`` (NUMA placement).

Sets are stored MRU-first: a set is ``W`` consecutive int64 entries ``line << 1 | dirty``,
``-1`` for an empty way.  Empty ways always sit at the LRU end, so the victim of an
insertion is simply the last entry.  A hit shifts the entries in front of it down by one;
with temporal locality most hits are found in the first way.

All mutable state is the tuple ``st`` documented in :mod:`simsched.memory.system`; its
layout constants (``LVL_*``, ``NST``, ...) are defined once in
:mod:`~simsched.memory._geometry` and re-exported here, where the Python side reads them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import astuple, replace
from pathlib import Path
from types import ModuleType

from simsched.files import cache_dir, cache_output, make_output_dir, write_text_atomic
from simsched.memory._gen_core import _drain, _entry
from simsched.memory._gen_memory import (
    _binv,
    _coherence,
    _links_source,
    _page_table,
)
from simsched.memory._gen_sets import _filter_source, _sets_source

# The state's layout and the geometry, read as ``K.*`` by the Python side and the tests.
from simsched.memory._geometry import *  # noqa: F403
from simsched.memory._geometry import (
    _DEBRUIJN_TABLE,
    MISC_PAGES,
    MISC_PMISS,
    MISC_STATUS,
    MISC_TIME,
    PLACE_FIRST_TOUCH,
    Geometry,
)
from simsched.memory.window import driver_source

#: Version of the generated code layout; part of every module hash.
TEMPLATE_VERSION = 7

#: The generator's source files: a change to any of them names a new kernel module.
GENERATOR_FILES = (
    "_kernels.py",
    "_geometry.py",
    "_gen_sets.py",
    "_gen_memory.py",
    "_gen_core.py",
    "window.py",
    "_hostcache.py",
    "_branch.py",
)


def generate_source(g: Geometry, extra_source: str = "") -> str:
    """Python source of the kernel module specialised on ``g``.

    Parameters
    ----------
    g
        The geometry constants.
    extra_source
        Source appended verbatim (e.g. another package's kernels calling ``access``).

    Returns
    -------
    str
        Module source; it starts with ``import numpy as np`` and ``from numba import njit``.
    """
    parts = [
        "import numpy as np\nfrom numba import njit\n\n"
        "from simsched.memory._branch import likely, unlikely\n"
        "from simsched.memory._hostcache import host_prefetch, host_prefetch_span\n",
        # No reference counting: the kernels allocate nothing, and NRT's atomic
        # increments on every array argument would cost more than a window's work.
        "_jit = njit(cache=True, nogil=True, _nrt=False)\n"
        '_jit_inline = njit(cache=True, nogil=True, _nrt=False, inline="always")\n',
        f'"""simsched memory kernels generated for {replace(g, sets=())!r} (any set counts)."""\n',
    ]
    parts.append(_sets_source(g))
    parts.append(_filter_source(g))
    for k in range(1, g.levels):
        if g.inclusive[k]:
            parts.append(_binv(g, k))
    if g.coherent:
        parts.append(f"_DEBRUIJN = np.array({list(_DEBRUIJN_TABLE)}, dtype=np.int64)\n")
        parts.append(_coherence(g))
    parts.append(_page_table(g))
    parts.append(_links_source(g))
    parts.append(_entry(g))
    parts.append(_drain(g))
    misc = {
        "MISC_PAGES": MISC_PAGES,
        "MISC_TIME": MISC_TIME,
        "MISC_STATUS": MISC_STATUS,
        "MISC_PMISS": MISC_PMISS,
    }
    parts.append(driver_source(g.st_misc, g.placement == PLACE_FIRST_TOUCH, misc, ooo=g.mshrs > 0))
    if extra_source:
        parts.append("\n\n# ---- extra source\n" + extra_source.rstrip() + "\n")
    return "\n".join(parts)


# --------------------------------------------------------------------------- module cache


def kernel_cache_dir() -> Path:
    """Folder of generated kernel modules: ``kernels`` in :func:`simsched.files.cache_dir`."""
    return cache_dir("kernels")


def _generator_text() -> str:
    here = Path(__file__).parent
    return "".join((here / f).read_text(encoding="utf-8") for f in GENERATOR_FILES)


def load_module(g: Geometry, extra_source: str = "", extra_name: str = "") -> ModuleType:
    """Generate (if needed), write and import the kernel module for ``g``.

    The module name is a hash of the geometry, this generator's source, ``extra_source``
    and ``extra_name``, so any change to one of them yields a new module (and a new Numba
    on-disk cache); an unchanged module is never rewritten, which keeps Numba's cache
    valid across processes.

    Parameters
    ----------
    g
        Geometry constants.
    extra_source, extra_name
        Appended source and a name for it (both enter the hash).

    Returns
    -------
    module
        The imported module (functions compile on first call, or load from Numba's cache).
    """
    h = hashlib.sha256()
    for part in (
        # The set counts are run-time values (:func:`_base`): not part of the name.
        repr(astuple(replace(g, sets=()))),
        str(TEMPLATE_VERSION),
        _generator_text(),
        extra_source,
        extra_name,
    ):
        h.update(part.encode())
        h.update(b"\0")
    tag = "".join(ch if ch.isalnum() else "_" for ch in extra_name)[:32]
    name = f"simsched_mem_{tag + '_' if tag else ''}{h.hexdigest()[:20]}"
    if name in sys.modules:
        return sys.modules[name]
    with cache_output():
        folder = make_output_dir(kernel_cache_dir())
        path = folder / f"{name}.py"
        if not path.exists():
            write_text_atomic(path, generate_source(g, extra_source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


#: Generated modules whose kernels this process has compiled or loaded already.
_READY: set[str] = set()


@contextlib.contextmanager
def first_compile(module: ModuleType, part: str = "") -> Iterator[None]:
    """Hold an exclusive lock on ``module``'s lock file while its kernels (or the entry
    point ``part`` names) first compile or load in this process.

    Numba writes its on-disk cache only when a compile ends, so processes that start on a
    new machine at the same moment (a sweep's workers, the test suite's) each compiled
    the same module, about a minute of CPU each for a three-level preset.  Under the lock
    the first one compiles and the others wait, then load its cache.  ``fcntl.flock`` is
    enough here, and needs no package: the kernel cache is a local folder, and the
    operating system drops the lock with the process, so a compiler that is killed never
    leaves it taken.  Where there is no ``flock``, the lock file cannot be opened (a
    read-only cache of compiled kernels) or the file system keeps no locks, the kernels
    compile side by side, as before.
    """
    name = f"{module.__name__}:{part}" if part else module.__name__
    if name in _READY or module.__file__ is None:
        yield
        return
    with contextlib.ExitStack() as held:
        try:
            import fcntl

            lock = held.enter_context(open(Path(module.__file__).with_suffix(".lock"), "a"))
            fcntl.flock(lock, fcntl.LOCK_EX)
            held.callback(fcntl.flock, lock, fcntl.LOCK_UN)
        except (ImportError, OSError):  # no flock, no lock file, or no locks (ENOLCK)
            pass
        held.enter_context(interrupt_after())
        yield
        _READY.add(name)


@contextlib.contextmanager
def interrupt_after() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) that arrives in the block until the block has ended, then
    deliver it to the handler that was there before.

    Numba's compiler is not safe to interrupt: a KeyboardInterrupt in the compile of a
    function another one calls came out of Numba's cache as "RuntimeError: no compiled
    object yet", and one left a lock taken that the trace's decoding threads then waited
    on for ever.  A first compile of a machine therefore finishes before the interrupt
    stops the run.  Outside the main thread (where no signal arrives), or where the handler
    in place was not installed from Python (``signal.getsignal`` gives ``None``, and
    ``signal.signal`` could not put it back), it does nothing."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is None
    ):
        yield
        return
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if got:
            signal.raise_signal(signal.SIGINT)
