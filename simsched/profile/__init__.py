"""Working-set profiling and automatic task coarsening (docs/profiler.md, [PDF07] §6).

* :func:`profile_trace` — LruTree, the one-pass profiler (§6.1): per-strand 2-D histograms
  of stack distance × task-id distance, and from them the miss curve and working set of every
  task group (:mod:`simsched.profile.groups`).
* :func:`setassoc_misses` — SetAssoc, the straightforward per-group replay (baseline, oracle).
* :func:`coarsen` — the top-down stop rule W ≤ K × cache/(cores × 2) (§6.2) and the
  parallelization table (:func:`write_table`, :func:`read_table`).
* :func:`regrain` — a new trace with the chosen groups merged into single strands.
"""

from simsched.profile.coarsen import (
    CoarsenResult,
    cache_share,
    coarsen,
    read_table,
    write_table,
)
from simsched.profile.groups import GroupTree, build_groups
from simsched.profile.lrutree import DEFAULT_SIZES, LruTree, profile_trace
from simsched.profile.regrain import regrain, regrain_from_table
from simsched.profile.result import Profile, ProfileFormatError, bucket_bounds
from simsched.profile.setassoc import replay_groups, setassoc_misses

__all__ = [
    "DEFAULT_SIZES",
    "CoarsenResult",
    "GroupTree",
    "LruTree",
    "Profile",
    "ProfileFormatError",
    "bucket_bounds",
    "build_groups",
    "cache_share",
    "coarsen",
    "profile_trace",
    "read_table",
    "regrain",
    "regrain_from_table",
    "replay_groups",
    "setassoc_misses",
    "write_table",
]
