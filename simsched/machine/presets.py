"""Machine presets: the ITRS-projected CMPs of the PDF paper and three real servers.

The ITRS configurations are tables in the paper, so they are tables here
([PDF07] Tables 1-3); the servers are commented YAML files in
``presets/`` beside this module.  Every value carries its source.
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
    for p, (nm, mb, assoc, hit) in ITRS_SCALING.items():
        out[f"itrs-scaling-{p}"] = _itrs(
            f"itrs-scaling-{p}",
            f"ITRS scaling technology, {p} core(s) at {nm} nm, {mb} MB shared L2 "
            "(PDF paper Tables 1, 2)",
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
