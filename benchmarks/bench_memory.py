"""Benchmark of the memory model (issue 3 targets); prints ONE JSON line.

Stream (fixed seed): ``--refs`` references (default 40 M), alternating blocks of 256:
one half an 8-byte-stride sweep over a 64 MB array (wrapping around), the other half
uniformly random 8-byte-aligned 8-byte accesses in a 4 MB hot set; 25 % of all references
are writes.  Machines: (a) L1 32 KB 8-way 64-byte lines alone, (b) that L1 plus an L2 of
1 MB 16-way, one core.  simsched serves the stream through ``MemorySystem.access_batch``
(the public batch API, validation included) in chunks of 4 M references; pycachesim 0.3.1
serves the same addresses, all as loads, through its bulk ``load`` API on lists of Python
ints (its fastest input; building the lists is not timed).  Only simulation time counts.
Times are CPU time of the process (``time.process_time``), which a shared, oversubscribed
machine disturbs much less than wall time; each simulator runs ``--repeat`` times on
fresh caches, alternating with the other, and the best time is reported.  Also reported: the time to compile a
geometry never seen before (a fresh kernel cache folder), to load it from the cache, and to
build a variant that differs only in its memory latency (timing is a run-time value, so it
loads like a cached geometry), for the benchmark machine and for a preset (``--preset``,
by default the 3-level NUMA opteron-8380-4x4; the ``preset_*`` fields).

Targets: (a) >= 100 M refs/s, (b) >= 50 M refs/s, ratio to pycachesim >= 2.0 (a) and
>= 1.5 (b); a new geometry compiles in <= 5 s.

Preset stream (``preset_stream_*``): the replay speed of the preset's own kernel, which is
what a replay on that machine spends most of its time in.  Up to 4 of its cores (the
first of each socket first) each serve ``--refs`` / cores references through
``MemorySystem.access_batch``, in turns of 4096 references, each core from its own clock:
per core three streams of 8-byte references over 16 MB arrays, taken in turn as a triad
``a[i] = b[i] + c[i]`` does (the first two read, the third written), and 10 % random
8-byte reads in a 1 MB set of the core's own.  ``--stream-only`` runs just this.

Timing model v2 (docs/machine-model.md §6.1): machine (b) with an out-of-order core (8
MSHRs, 72-entry reorder buffer, as the K10 presets) serves the same stream, alternating
with the blocking (b) run; ``ooo_cost_ratio`` is its best CPU time over the blocking
one's (target <= 1.5).  ``--model-only`` runs just this comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

CHUNK = 1 << 22
BLOCK = 256
ARRAY = 64 << 20
HOT = 4 << 20
ARRAY_BASE = 0x1000_0000
HOT_BASE = 0x8000_0000


def make_stream(n: int, seed: int = 20240501) -> tuple[np.ndarray, np.ndarray]:
    """Addresses (uint64) and write flags of the benchmark stream."""
    rng = np.random.default_rng(seed)
    n_blocks = -(-n // BLOCK)
    blk = np.arange(n_blocks)
    addrs = np.empty((n_blocks, BLOCK), np.uint64)
    sweep_blocks = blk[blk % 2 == 0]
    # The sweep continues where its previous block stopped.
    pos = (np.arange(len(sweep_blocks))[:, None] * BLOCK + np.arange(BLOCK)) * 8 % ARRAY
    addrs[sweep_blocks] = (ARRAY_BASE + pos).astype(np.uint64)
    rand_blocks = blk[blk % 2 == 1]
    addrs[rand_blocks] = (
        HOT_BASE + rng.integers(0, HOT // 8, (len(rand_blocks), BLOCK)) * 8
    ).astype(np.uint64)
    addrs = addrs.reshape(-1)[:n]
    writes = rng.random(n) < 0.25
    return np.ascontiguousarray(addrs), writes


def machine_spec(with_l2: bool, core: dict | None = None) -> dict:
    """The benchmark machine: one core, L1 32 KB 8-way (+ L2 1 MB 16-way); ``core``: its
    core section (default blocking)."""
    caches = [dict(name="L1", scope="core", size="32KB", assoc=8, line=64, hit_latency=4)]
    if with_l2:
        caches.append(dict(name="L2", scope="core", size="1MB", assoc=16, line=64, hit_latency=12))
    spec = dict(
        name="bench-l2" if with_l2 else "bench-l1",
        cores_per_socket=1,
        caches=caches,
        memory=dict(latency=200, service_interval=10),
    )
    if core is not None:
        spec["core"] = core
    return spec


#: the out-of-order core of the timing-model comparison (the K10 presets' figures)
OOO_CORE = {"model": "out-of-order", "mshrs": 8, "rob": 72}


def model_costs(addrs: np.ndarray, writes: np.ndarray, repeat: int) -> dict:
    """Best CPU seconds of machine (b) blocking and out-of-order, runs alternating."""
    specs = {"blocking": machine_spec(True), "ooo": machine_spec(True, OOO_CORE)}
    for spec in specs.values():
        run_simsched(spec, addrs[:1000], writes[:1000], 1)  # compile / load outside timing
    best = dict.fromkeys(specs, float("inf"))
    misses = {}
    for _ in range(repeat):
        for key, spec in specs.items():
            t, m = run_simsched(spec, addrs, writes, 1)
            best[key] = min(best[key], t)
            misses[key] = m
    n = len(addrs)
    return {
        "b_blocking_refs_per_s": round(n / best["blocking"]),
        "b_ooo_refs_per_s": round(n / best["ooo"]),
        "ooo_cost_ratio": round(best["ooo"] / best["blocking"], 3),
        "ooo_misses_equal": misses["ooo"] == misses["blocking"],
    }


def run_simsched(spec: dict, addrs: np.ndarray, writes: np.ndarray, repeat: int):
    """Best simulation time over ``repeat`` runs and the per-level miss counts."""
    from simsched.machine import load_machine

    return serve_streams(load_machine(spec), [(0, addrs, writes)], CHUNK, repeat)


def serve_streams(
    machine, streams: list[tuple[int, np.ndarray, np.ndarray]], turn: int, repeat: int
) -> tuple[float, list[int]]:
    """Best CPU time over ``repeat`` runs, each on fresh caches, of ``streams`` (a core,
    its 8-byte references' addresses and write flags, all streams of one length) served
    through ``MemorySystem.access_batch`` in turns of ``turn`` references, the cores in
    the order given, each from its own clock; and the misses per level of the last run.
    Only the ``access_batch`` calls are timed."""
    from simsched.memory import MemorySystem

    n = len(streams[0][1])
    sizes = np.full(min(turn, n), 8, np.uint8)
    out = np.empty(min(turn, n), np.int64)
    best = float("inf")
    misses: list[int] = []
    for _ in range(repeat):
        ms = MemorySystem(machine)
        clock = {core: 0 for core, _, _ in streams}
        elapsed = 0.0
        for s in range(0, n, turn):
            for core, addrs, writes in streams:
                a = addrs[s : s + turn]
                t0 = time.process_time()
                ms.access_batch(
                    core, a, sizes[: len(a)], writes[s : s + turn], clock[core], out=out
                )
                elapsed += time.process_time() - t0
                clock[core] = ms.last_time
        best = min(best, elapsed)
        misses = [lvl["misses"] for lvl in ms.stats()["levels"]]
    return best, misses


def run_pycachesim(with_l2: bool, addrs: np.ndarray, repeat: int):
    """Best pycachesim time (all loads, bulk API) and per-level miss counts."""
    from cachesim import Cache, CacheSimulator, MainMemory

    best = float("inf")
    misses = None
    for _ in range(repeat):
        mem = MainMemory()
        l1 = Cache("L1", 64, 8, 64, "LRU")
        levels = [l1]
        if with_l2:
            l2 = Cache("L2", 1024, 16, 64, "LRU")
            l1.set_load_from(l2)
            l1.set_store_to(l2)
            levels.append(l2)
        mem.load_to(levels[-1])
        mem.store_from(levels[-1])
        cs = CacheSimulator(l1, mem)
        elapsed = 0.0
        for s in range(0, len(addrs), CHUNK):
            chunk = addrs[s : s + CHUNK].tolist()
            t0 = time.process_time()
            cs.load(chunk, length=8)
            elapsed += time.process_time() - t0
        best = min(best, elapsed)
        misses = [c.backend.MISS_count for c in levels]
    return best, misses


STREAM_TURN = 4096
STREAM_ARRAY = 16 << 20
STREAM_HOT = 1 << 20


def _core_stream(core: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One core's references of the preset stream: addresses (uint64) and write flags."""
    # Three arrays and the hot set per core, one page and one line apart beyond their
    # sizes, as an allocator's headers leave them: at exact multiples of 16 MB the three
    # elements of a step would fall in one set of every cache.
    stride = STREAM_ARRAY + 4096 + 64
    base = 0x1_0000_0000 + core * 4 * stride
    i = np.arange(n)
    k = i // 3  # the triad's element
    addrs = base + (i % 3) * stride + (k * 8) % STREAM_ARRAY
    writes = i % 3 == 2
    hot = rng.random(n) < 0.1
    addrs[hot] = base + 3 * stride + rng.integers(0, STREAM_HOT // 8, int(hot.sum())) * 8
    writes[hot] = False
    return addrs.astype(np.uint64), writes


def preset_stream(preset: str, refs: int, repeat: int) -> dict:
    """Best CPU time of the preset stream, as references per second, and the misses per
    level; the kernels are compiled or loaded before the timed runs."""
    from simsched.machine import load_machine

    machine = load_machine(preset)
    per_socket = machine.cores_per_socket
    order = [s * per_socket + c for c in range(per_socket) for s in range(machine.sockets)]
    cores = order[: min(4, machine.cores)]
    rng = np.random.default_rng(20261201)
    per_core = max(1, refs // len(cores))
    streams = [(c, *_core_stream(c, per_core, rng)) for c in cores]
    warm = min(STREAM_TURN, per_core)  # compile or load outside the timing
    serve_streams(machine, [(c, a[:warm], w[:warm]) for c, a, w in streams], STREAM_TURN, 1)
    best, misses = serve_streams(machine, streams, STREAM_TURN, repeat)
    return {
        "preset_stream_cores": len(cores),
        "preset_stream_refs": per_core * len(cores),
        "preset_stream_refs_per_s": round(per_core * len(cores) / best),
        "preset_stream_misses": misses,
    }


_COMPILE_SNIPPET = """
import json, sys, time
t0 = time.process_time()
from simsched.machine import load_machine
from simsched.memory import MemorySystem
m = load_machine(json.loads(sys.argv[1]))
t1 = time.process_time()
MemorySystem(m)
print(time.process_time() - t1)
"""


def compile_times(spec: dict | str) -> tuple[float, float, float, float]:
    """Seconds (CPU) to build ``spec``'s kernels in a fresh cache folder, then to load them
    from the cache, then to build a variant that differs only in timing (memory latency
    + 1 cycle), then one whose first cache is twice as large: timing values and set counts
    are run-time values, so both must load like a cached geometry."""
    from simsched.machine import load_machine

    base = json.loads(load_machine(spec).model_dump_json())
    variant = json.loads(json.dumps(base))
    variant["memory"]["latency"] += 1
    bigger = json.loads(json.dumps(base))
    bigger["caches"][0]["size"] *= 2
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, SIMSCHED_CACHE_DIR=tmp)
        out = []
        for m in (base, base, variant, bigger):
            res = subprocess.run(
                [sys.executable, "-c", _COMPILE_SNIPPET, json.dumps(m)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            out.append(float(res.stdout.strip()))
    return out[0], out[1], out[2], out[3]


def _positive(text: str) -> int:
    """``--refs`` and ``--repeat``: a positive integer (argparse reports a bad one)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print one JSON line."""
    from _bench import emit

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--refs", type=_positive, default=40_000_000, help="stream length")
    ap.add_argument("--repeat", type=_positive, default=2, help="runs per simulator (best kept)")
    ap.add_argument(
        "--model-only", action="store_true", help="only the blocking/out-of-order comparison"
    )
    ap.add_argument("--stream-only", action="store_true", help="only the preset stream")
    ap.add_argument(
        "--preset",
        default="opteron-8380-4x4",
        help="the preset machine whose compile and cache loads are timed besides the stream's",
    )
    args = ap.parse_args(argv)

    if args.stream_only:
        result: dict = {"bench": "memory-stream", "preset": args.preset}
        result["load_average"] = [round(x, 2) for x in os.getloadavg()]
        result.update(preset_stream(args.preset, args.refs, args.repeat))
        emit(result)
        return
    addrs, writes = make_stream(args.refs)
    n = len(addrs)
    result = {"bench": "memory", "refs": n, "write_fraction": round(float(writes.mean()), 4)}
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    result.update(model_costs(addrs, writes, args.repeat))
    if args.model_only:
        result["targets_met"] = {"ooo_cost_ratio": result["ooo_cost_ratio"] <= 1.5}
        emit(result)
        return
    for key, with_l2 in (("a", False), ("b", True)):
        spec = machine_spec(with_l2)
        run_simsched(spec, addrs[:1000], writes[:1000], 1)  # compile / load outside timing
        t_ss, m_ss = run_simsched(spec, addrs, writes, args.repeat)
        t_pc, m_pc = run_pycachesim(with_l2, addrs, args.repeat)
        # Same stream as loads only, for the per-level miss comparison.
        _, m_ss_loads = run_simsched(spec, addrs, np.zeros(n, bool), 1)
        result[f"{key}_simsched_refs_per_s"] = round(n / t_ss)
        result[f"{key}_pycachesim_refs_per_s"] = round(n / t_pc)
        result[f"{key}_ratio"] = round(t_pc / t_ss, 3)
        result[f"{key}_simsched_misses"] = m_ss
        result[f"{key}_simsched_misses_loads_only"] = m_ss_loads
        result[f"{key}_pycachesim_misses"] = m_pc
        result[f"{key}_loads_only_misses_equal"] = m_ss_loads == m_pc
    compile_s, cached_s, variant_s, size_s = compile_times(machine_spec(True))
    result["new_geometry_compile_s"] = round(compile_s, 3)
    result["cached_geometry_load_s"] = round(cached_s, 3)
    result["timing_variant_load_s"] = round(variant_s, 3)
    result["size_variant_load_s"] = round(size_s, 3)
    big_s, big_cached_s, big_variant_s, big_size_s = compile_times(args.preset)
    result["preset"] = args.preset
    result["preset_compile_s"] = round(big_s, 3)
    result["preset_cached_load_s"] = round(big_cached_s, 3)
    result["preset_timing_variant_load_s"] = round(big_variant_s, 3)
    result["preset_size_variant_load_s"] = round(big_size_s, 3)
    result.update(preset_stream(args.preset, args.refs, args.repeat))
    compile_s = max(compile_s, big_s)
    result["targets"] = {
        "a_refs_per_s": 100_000_000,
        "b_refs_per_s": 50_000_000,
        "a_ratio": 2.0,
        "b_ratio": 1.5,
        "compile_s": 5.0,
        "ooo_cost_ratio": 1.5,
    }
    result["targets_met"] = {
        "a_refs_per_s": result["a_simsched_refs_per_s"] >= 100_000_000,
        "b_refs_per_s": result["b_simsched_refs_per_s"] >= 50_000_000,
        "a_ratio": result["a_ratio"] >= 2.0,
        "b_ratio": result["b_ratio"] >= 1.5,
        "compile_s": compile_s <= 5.0,
        "ooo_cost_ratio": result["ooo_cost_ratio"] <= 1.5,
        "timing_variant_as_fast_as_cached": variant_s <= 2 * cached_s + 0.2
        and big_variant_s <= 2 * big_cached_s + 0.2,
        "size_variant_as_fast_as_cached": size_s <= 2 * cached_s + 0.2
        and big_size_s <= 2 * big_cached_s + 0.2,
    }
    emit(result)


if __name__ == "__main__":
    from _bench import run_main

    run_main(main)
