"""Machine presets: the ITRS-projected CMPs of the PDF paper and four real servers.

The ITRS configurations are tables in the paper, so they are tables here
([PDF07] Tables 1-3), plus three many-core chips extrapolated from Table 2 by the rule
its 16- and 32-core columns follow (:data:`ITRS_SCALING_EXTRAPOLATED`); the servers are
commented YAML files in ``presets/`` beside this module.  Every value carries its source.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

# PDF paper ([PDF07]) Table 1: parameters common to all configurations.
# "Processor core: In-order scalar.  Private L1 cache: 64KB, 128-byte line, 4-way,
#  1-cycle hit latency.  Shared L2 cache: 128-byte line.  Main memory latency: 300;
#  service rate: 30 (cycles)."
ITRS_COMMON: dict[str, Any] = {
    "l1": {"size": "64KB", "line": 128, "assoc": 4, "hit_latency": 1},
    "l2_line": 128,
    "memory": {"latency": 300, "service_interval": 30},
}

# Table 2: default (scaling technology) configurations.
# cores: (technology nm, L2 MB, associativity, L2 hit cycles)
ITRS_SCALING: dict[int, tuple[int, int, int, int]] = {
    1: (90, 10, 20, 15),
    2: (90, 8, 16, 13),
    4: (90, 4, 16, 11),
    8: (65, 8, 16, 13),
    16: (45, 20, 20, 19),
    32: (32, 40, 20, 23),
}

# Many-core chips extrapolated from Table 2 ([PDF07] section 4.1: fixed 150 mm^2 for cores
# and L2, area factors per ITRS node).  One ITRS node (0.7x linear, half the area of a core
# and of a MB of SRAM) per doubling of cores keeps the area split, so cores and L2 double
# together -- exactly Table 2's step from 16 cores / 20 MB at 45 nm to 32 / 40 MB at 32 nm.
# The L2 is 2 MB banks (9-cycle access) on a 2-D mesh whose round trip to the furthest
# bank grows with the square root of the banks: hit = 9 + sqrt(5 * MB) cycles gives
# Table 2's 19 (20 MB) and 23 (40 MB).  Associativity stays at Table 2's 20; Table 1's
# memory (300 cycles, one line per 30) is common to every configuration, as in the paper.
# cores: (technology nm, L2 MB, associativity, L2 hit cycles)
ITRS_SCALING_EXTRAPOLATED: dict[int, tuple[int, int, int, int]] = {
    p: (nm, mb, 20, round(9 + (5 * mb) ** 0.5))
    for p, nm, mb in ((64, 22, 80), (128, 16, 160), (256, 11, 320))
}

# Table 3: single technology (45 nm) configurations.
# cores: (L2 MB, associativity, L2 hit cycles)
ITRS_45NM: dict[int, tuple[int, int, int]] = {
    1: (48, 24, 25),
    2: (44, 22, 25),
    4: (40, 20, 23),
    6: (36, 18, 23),
    8: (32, 16, 21),
    10: (32, 16, 21),
    12: (28, 28, 21),
    14: (24, 24, 19),
    16: (20, 20, 19),
    18: (16, 16, 17),
    20: (12, 24, 15),
    22: (9, 18, 15),
    24: (5, 20, 13),
    26: (1, 16, 7),
}

# The paper's simulator charges no scheduling costs it reports; these small in-order
# core costs (cycles) are simsched's defaults for the ITRS chips.
ITRS_COSTS = {"steal_attempt": 50, "deque_op": 5, "queue_op": 20}


def _itrs(name: str, desc: str, cores: int, l2_mb: int, assoc: int, hit: int) -> dict:
    return {
        "name": name,
        "description": desc,
        "sockets": 1,
        "cores_per_socket": cores,
        "caches": [
            {"name": "L1", "scope": "core", **ITRS_COMMON["l1"]},
            {
                "name": "L2",
                "scope": "socket",
                "size": f"{l2_mb}MB",
                "assoc": assoc,
                "line": ITRS_COMMON["l2_line"],
                "hit_latency": hit,
            },
        ],
        "memory": dict(ITRS_COMMON["memory"]),
        "costs": dict(ITRS_COSTS),
    }


def _builtin() -> dict[str, dict]:
    out: dict[str, dict] = {}
    scaling = [(t, "(PDF paper Tables 1, 2)") for t in ITRS_SCALING.items()] + [
        (t, "extrapolated by PDF paper Table 2's rule: one node and twice the L2 per doubling")
        for t in ITRS_SCALING_EXTRAPOLATED.items()
    ]
    for (p, (nm, mb, assoc, hit)), source in scaling:
        out[f"itrs-scaling-{p}"] = _itrs(
            f"itrs-scaling-{p}",
            f"ITRS scaling technology, {p} core(s) at {nm} nm, {mb} MB shared L2 {source}",
            p,
            mb,
            assoc,
            hit,
        )
    for p, (mb, assoc, hit) in ITRS_45NM.items():
        out[f"itrs-45nm-{p}"] = _itrs(
            f"itrs-45nm-{p}",
            f"ITRS 45 nm single technology, {p} core(s), {mb} MB shared L2 (PDF paper Tables 1, 3)",
            p,
            mb,
            assoc,
            hit,
        )
    return out


def _files() -> dict[str, str]:
    folder = resources.files("simsched.machine") / "presets"
    return {
        f.name.removesuffix(".yaml"): f.read_text(encoding="utf-8")
        for f in folder.iterdir()
        if f.name.endswith(".yaml")
    }


PRESET_DICTS: dict[str, dict] = _builtin()
PRESET_FILES: dict[str, str] = _files()


def preset_names() -> list[str]:
    """Names of every preset, ITRS first, in a stable order."""
    return list(PRESET_DICTS) + sorted(PRESET_FILES)
