"""Seeded fuzzing of sweep specs through ``sweep status``.

Every case mutates one valid spec, either as data (a key dropped, added, duplicated or
given a value of another type; a grid or seed axis emptied or multiplied past the point
limit; filters and zips bent) or as text (truncated, junk inserted, bytes that are not
UTF-8, tags, aliases of aliases, deep nesting).  Through the command line each case must
end in exit status 0 (a valid spec: its points are counted) or in exactly one line on
stderr and exit status 2, never a traceback; the classes that can only be wrong (duplicate
keys, empty axes, sweeps above the point limit, alias bombs) must be the latter, fast.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from simsched.cli import main

BASE: dict[str, Any] = {
    "name": "fz",
    "workloads": [
        {"name": "f", "generator": "fib", "params": {"cutoff": 2}, "grid": {"n": [5, 6]}},
        {"generator": "mergesort", "params": {"n": 256, "grain": 32}},
    ],
    "machines": [
        "itrs-scaling-{1,2}",
        {"name": "itrs-scaling-4", "grid": {"caches.L1.hit_latency": [1, 2]}},
    ],
    "schedulers": ["ws", {"name": "pdf", "seeds": [0]}],
    "seeds": [0, 1],
    "exclude": [{"workload": "mergesort", "machine": "itrs-scaling-1"}],
    "small": {"seeds": [0]},
}

ODD_VALUES: list[Any] = [
    None,
    True,
    -1,
    0,
    2**64,
    1e308,
    float("nan"),
    "",
    "x" * 300,
    [],
    [[1]],
    {},
    {"a": 1},
    "{1..100000000}",
]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside ``node`` (keys and list indices)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _parent(data: Any, path: tuple) -> Any:
    for step in path[:-1]:
        data = data[step]
    return data


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=10_000)


# Each mutator: (rng, base data) -> (spec text, must_fail).


def m_value(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    paths = _paths(data)
    path = paths[rng.integers(len(paths))]
    _parent(data, path)[path[-1]] = copy.deepcopy(ODD_VALUES[rng.integers(len(ODD_VALUES))])
    return _dump(data), False


def m_drop(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    paths = [p for p in _paths(data) if isinstance(_parent(data, p), dict)]
    path = paths[rng.integers(len(paths))]
    del _parent(data, path)[path[-1]]
    return _dump(data), False


def m_unknown_key(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    maps = [data] + [
        _parent(data, p)[p[-1]]
        for p in _paths(data)
        if isinstance(_parent(data, p)[p[-1]], dict) and p[0] != "small"
    ]
    target = maps[rng.integers(len(maps))]
    target[f"bogus{rng.integers(100)}"] = 1
    # params/grid/overrides take free keys: the spec may still be valid there
    return _dump(data), False


def m_duplicate_key(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    """A key written twice, at the top or in a nested block mapping."""
    lines = _dump(data).splitlines()
    keyed = [i for i, ln in enumerate(lines) if ":" in ln and not ln.lstrip().startswith("-")]
    i = keyed[rng.integers(len(keyed))]
    line = lines[i]
    indent = len(line) - len(line.lstrip())
    key = line.strip().split(":")[0]
    lines.insert(i + 1, " " * indent + f"{key}: 1")
    # a block value below the original line now belongs to nobody or to the duplicate
    return "\n".join(lines) + "\n", True


def m_grid_product(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    """Axes that multiply past the point limit (each within its own cap)."""
    n = int(rng.integers(400, 1000))
    data["workloads"][0]["grid"] = {"n": list(range(5, 5 + n))}
    choice = rng.integers(3)
    if choice == 0:
        data["seeds"] = {"count": int(rng.integers(200, 1_000_001))}
    elif choice == 1:
        data["schedulers"] = [{"name": "ws", "grid": {"spawn_policy": ["child-first"] * 1}}]
        data["seeds"] = {"count": 1000}
    else:
        data["machines"] = [
            {"name": "itrs-scaling-1", "grid": {"caches.L1.hit_latency": list(range(1, 300))}}
        ]
    data.pop("small", None)
    return _dump(data), True


def m_empty_axis(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    where = rng.integers(3)
    if where == 0:
        data["workloads"][0]["grid"]["n"] = []
    elif where == 1:
        data["machines"][1]["grid"]["caches.L1.hit_latency"] = []
    else:
        data["schedulers"][0] = {"name": "ws", "grid": {"spawn_policy": []}}
    return _dump(data), True


def m_filters(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    key = ["workload", "machine", "scheduler", "seed", "cores", "sockets", "nope"][rng.integers(7)]
    value = ODD_VALUES[rng.integers(len(ODD_VALUES))]
    data["include" if rng.integers(2) else "exclude"] = [{key: copy.deepcopy(value)}]
    if rng.integers(2):
        data["zip"] = [["workloads", "machines", "seeds"][: int(rng.integers(1, 4))]]
    return _dump(data), False


def m_text(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    text = _dump(data)
    kind = rng.integers(4)
    if kind == 0:
        return text[: rng.integers(len(text))], False
    pos = int(rng.integers(len(text)))
    junk = ["\t", "{", "}", "[", ":", "- ", "&a ", "*a", "!!python/object:os.system ", "%", "'"]
    return text[:pos] + junk[rng.integers(len(junk))] + text[pos:], False


def m_bytes(rng: np.random.Generator, data: dict) -> tuple[bytes, bool]:
    raw = bytearray(_dump(data).encode())
    for _ in range(int(rng.integers(1, 4))):
        raw[rng.integers(len(raw))] = int(rng.integers(128, 256))
    return bytes(raw), False


def m_alias_bomb(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    """Ten lines of aliases of aliases: a billion laughs, wherever they land."""
    depth = int(rng.integers(7, 10))
    lines = ["  - {seed: &l0 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}"]
    for i in range(1, depth):
        lines.append(f"  - {{seed: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]}}")
    data.pop("include", None)
    return _dump(data) + "include:\n" + "\n".join(lines) + "\n", True


def m_deep(rng: np.random.Generator, data: dict) -> tuple[str, bool]:
    n = int(rng.integers(2000, 6000))
    return _dump(data) + "description: " + "[" * n + "]" * n + "\n", True


MUTATORS: dict[str, tuple[Callable, int]] = {
    "value": (m_value, 40),
    "drop": (m_drop, 15),
    "unknown_key": (m_unknown_key, 15),
    "duplicate_key": (m_duplicate_key, 20),
    "grid_product": (m_grid_product, 9),
    "empty_axis": (m_empty_axis, 6),
    "filters": (m_filters, 20),
    "text": (m_text, 25),
    "bytes": (m_bytes, 8),
    "alias_bomb": (m_alias_bomb, 3),
    "deep": (m_deep, 2),
}

# SIMSCHED_FUZZ_SCALE=10 runs ten times the cases (new seeds) for a deeper search.
SCALE = max(1, int(os.environ.get("SIMSCHED_FUZZ_SCALE", "1")))
CASES = [(name, i) for name, (_, n) in MUTATORS.items() for i in range(n * SCALE)]


def test_the_base_spec_is_valid(tmp_path, capsys):
    path = tmp_path / "fz.yaml"
    path.write_text(_dump(BASE))
    with pytest.raises(SystemExit) as info:
        main(["sweep", "status", str(path), "--small"])
    assert info.value.code == 0, capsys.readouterr().err
    assert "points: 0 done" in capsys.readouterr().out


@pytest.mark.parametrize(("mutator", "case"), CASES, ids=[f"{m}-{i}" for m, i in CASES])
def test_mutated_spec_is_one_line_or_valid(tmp_path, capsys, mutator, case):
    fn, _ = MUTATORS[mutator]
    rng = np.random.default_rng([sorted(MUTATORS).index(mutator), case])
    content, must_fail = fn(rng, copy.deepcopy(BASE))
    path = tmp_path / "fz.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    t0 = time.perf_counter()
    with pytest.raises(SystemExit) as info:
        main(["sweep", "status", str(path), "--small"])
    took = time.perf_counter() - t0
    out = capsys.readouterr()
    code = info.value.code or 0
    assert "Traceback" not in out.err, out.err
    assert code in (0, 2), (code, out.err)
    # a mutant without the small section is run as written, which --small says first
    said = [ln for ln in out.err.splitlines() if not ln.startswith("warning: --small: ")]
    if code == 2:
        lines = said
        assert len(lines) == 1 and lines[0].startswith("simsched: error: "), out.err
        assert str(path) in lines[0] or str(Path(path).resolve()) in lines[0], lines[0]
    else:
        assert said == [] and "points:" in out.out, out.err
    if must_fail:
        assert code == 2, f"accepted:\n{content!r}"[:2000]
        assert took < 5.0, f"refused only after {took:.1f} s"


def test_grid_product_error_names_the_product_and_factors(tmp_path, capsys):
    data = copy.deepcopy(BASE)
    data["workloads"][0]["grid"] = {"n": list(range(10))}
    data["seeds"] = {"count": 1_000_000}
    data.pop("small")
    path = tmp_path / "big.yaml"
    path.write_text(_dump(data))
    with pytest.raises(SystemExit) as info:
        main(["sweep", "status", str(path)])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2
    assert (
        "the sweep's axes multiply to 88,000,000 points (workloads 11 × machines 4 × schedulers 2 × "
        in err
    )
    assert "seeds 1,000,000), more than the 100,000 a sweep may have" in err
