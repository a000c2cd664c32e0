"""Memory hierarchy model: exact LRU caches, NUMA placement and memory bandwidth.

:class:`MemorySystem` models a :class:`simsched.machine.Machine`'s caches (any number of
levels, per core or per socket, set-associative true LRU, write-back, write-allocate,
inclusive with back-invalidation, non-inclusive or exclusive (victim) levels,
write-invalidate coherence) and its NUMA memory (page placement, local/remote latency,
one controller per node serving one line per service interval).  The hot path is Numba code generated per cache geometry
(:mod:`simsched.memory._kernels`).  Semantics: ``docs/machine-model.md``.
"""

from simsched.memory._kernels import kernel_cache_dir
from simsched.memory.system import MemorySystem

__all__ = ["MemorySystem", "kernel_cache_dir"]
