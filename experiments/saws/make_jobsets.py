"""Write the SAWS study's job sets and sweep specs ([SAWS12] §5, Figs. 7-9).

    python experiments/saws/make_jobsets.py

Deterministic: the same script writes the same files (Fig. 9's programs and arrivals come
from a seeded generator).  Everything is scaled the same way (README.md):

* Table 1 programs: captured samples (CK, FFT, LU, Heat, Strassen) and the ``fib``
  generator (Fib), each far smaller than the paper's inputs;
* time: one "ms-equivalent" is ``MS_EQ`` cycles (5 000, so the paper's 10 ms quantum is
  50 000 cycles, 1/540 of 10 ms at 2.7 GHz), keeping the quantum a similar fraction of a
  job's run;
* Fig. 9's arrival rate ``lambda`` is in jobs per ``TAU`` cycles, ``TAU`` = 1/16 of the
  mean makespan of a Table 1 program alone on the machine under WS (measured, README),
  so that lambda = 1/16 spaces arrivals by about one job's run and lambda = 1 releases
  all 16 jobs within about one.

The published-length study (``published.yaml``) keeps that time scale but gives every
Table 1 program an input that runs alone for 50-340 quanta (``PUBLISHED``), as the
paper's inputs run for hundreds of its 10 ms quanta, and replays ``MIXES`` job mixes of
16 jobs (two per lambda) on three seeds, with cores allotted by count
(``placement: any``), as [SAWS12]'s runtime does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from simsched.files import write_text_atomic

HERE = Path(__file__).resolve().parent
JOBSETS = HERE / "jobsets"
SAMPLES = "../../../traces/samples"

#: Table 1 ([SAWS12] §5), scaled: a job-set group without scheduler and arrival.
PROGRAMS: dict[str, dict] = {
    "ck": {"trace": f"{SAMPLES}/ck-5-2-2.valgrind.sst"},
    "fib": {"generator": "fib", "params": {"n": 24, "cutoff": 8}},
    "fft": {"trace": f"{SAMPLES}/fft-8192-512.valgrind.sst"},
    "lu": {"trace": f"{SAMPLES}/lu-128-16.valgrind.sst"},
    "heat": {"trace": f"{SAMPLES}/heat-128-4-8.valgrind.sst"},
    "strassen": {"trace": f"{SAMPLES}/strassen-128-32.valgrind.sst"},
}
#: Makespan (cycles) of each program alone on sunfire-x4600-8x4 under WS, seed 0 (README).
ALONE = {
    "ck": 1_465_359,
    "fib": 111_159,
    "fft": 16_897_707,
    "lu": 1_648_214,
    "heat": 176_091,
    "strassen": 2_478_348,
}
MS_EQ = 5_000
QUANTUM = 10 * MS_EQ
#: A core move (one context switch, 3.8 us: docs/jobs.md "Moves") scaled like the
#: quantum: 3.8 us in ms-equivalents, so a move is the same fraction of a quantum as on
#: the paper's machine (10 260 of 27 M cycles).
CORE_MOVE = round(3.8e-3 * MS_EQ)
TAU = round(sum(ALONE.values()) / len(ALONE) / 16)
LAMBDAS = {"1_16": 1 / 16, "1_8": 1 / 8, "1_4": 1 / 4, "1_2": 1 / 2, "1": 1.0}
COPIES = (2, 4, 6, 8, 10, 12)
QUANTA_MS = (1, 2, 5, 10, 20, 50)

MACHINES = [
    {
        "name": "sunfire-x4600-8x4",
        "label": "caches",
        "overrides": {"costs.core_move": CORE_MOVE},
    },
    {
        # every reference costs one cycle per line: no cache, memory or NUMA effect
        "name": "sunfire-x4600-8x4",
        "label": "nocache",
        "overrides": {
            "costs.core_move": CORE_MOVE,
            "caches.L1.hit_latency": 1,
            "caches.L2.hit_latency": 1,
            "caches.L3.hit_latency": 1,
            "memory.latency": 1,
            "memory.remote_latency": 0,
            "memory.service_interval": 0,
        },
    },
]
#: Table 1 at published job lengths (README "Published job lengths"): inputs that run
#: alone for 50-340 quanta of 10 ms-equivalents, as Table 1's inputs run for hundreds of
#: the paper's 10 ms quanta.  Fib's cutoff 12 keeps its strand count replayable.
PUBLISHED: dict[str, dict] = {
    "ck": {"trace": f"{SAMPLES}/ck-7-3-6.valgrind.sst"},
    "fib": {"generator": "fib", "params": {"n": 31, "cutoff": 12}},
    "fft": {"trace": f"{SAMPLES}/fft-8192-512.valgrind.sst"},
    "lu": {"trace": f"{SAMPLES}/lu-256-16.valgrind.sst"},
    "heat": {"trace": f"{SAMPLES}/heat-512-16-16.valgrind.sst"},
    "strassen": {"trace": f"{SAMPLES}/strassen-128-32.valgrind.sst"},
}
#: Makespan (cycles) of each published-length program alone, as ``ALONE``.
ALONE_PUBLISHED = {
    "ck": 4_346_321,
    "fib": 2_765_741,
    "fft": 16_897_707,
    "lu": 5_749_301,
    "heat": 6_485_492,
    "strassen": 2_478_348,
}
TAU_PUBLISHED = round(sum(ALONE_PUBLISHED.values()) / len(ALONE_PUBLISHED) / 16)
#: Job mixes of the published-length study: two per lambda, each its own draw.
MIXES = 10

SCHEDULERS = [
    {"name": "saws", "params": {"beta": 2.0}},
    {"name": "asteal", "params": {"rho": 2.0, "delta": 0.8}},
    "ws-equi",
]


def dump(path: Path, data: dict, header: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    write_text_atomic(path, header + body)


def jobset(groups: list[dict], seed: int = 0) -> dict:
    return {"seed": seed, "controller": "deq", "quantum": QUANTUM, "jobs": groups}


def fig8_sets() -> list[str]:
    names = []
    for prog, g in PROGRAMS.items():
        for k in COPIES:
            name = f"fig8-{prog}-{k}"
            dump(
                JOBSETS / f"{name}.yaml",
                jobset([{"name": prog, **g, "scheduler": "saws", "copies": k}]),
                f"# [SAWS12] Fig. 8: {k} copies of {prog} released at once (make_jobsets.py)\n",
            )
            names.append(name)
    return names


class PoissonMix:
    """16 jobs drawn from ``programs`` with ``rng``, and their Poisson arrivals at any
    lambda: one draw of programs and unit gaps, scaled by ``tau / lambda``."""

    def __init__(self, programs: dict[str, dict], rng: np.random.Generator) -> None:
        self.programs = programs
        self.progs = [list(programs)[i] for i in rng.integers(len(programs), size=16)]
        self.unit_gaps = rng.exponential(1.0, size=16)

    def groups(self, tau: int, lam: float) -> list[dict]:
        # one Poisson process of rate lam per tau; the first job arrives at 0
        t = np.concatenate([[0.0], np.cumsum(self.unit_gaps[1:])]) * tau / lam
        return [
            {"name": f"{p}-{i}", **self.programs[p], "scheduler": "saws", "arrival": int(a)}
            for i, (p, a) in enumerate(zip(self.progs, t, strict=True))
        ]


def fig9_sets(seed: int = 9) -> list[str]:
    mix = PoissonMix(PROGRAMS, np.random.default_rng(seed))
    names = []
    for tag, lam in LAMBDAS.items():
        name = f"fig9-lambda-{tag}"
        dump(
            JOBSETS / f"{name}.yaml",
            jobset(mix.groups(TAU, lam)),
            f"# [SAWS12] Fig. 9: 16 jobs drawn from Table 1, Poisson arrivals, lambda = "
            f"{lam:g} per {TAU} cycles (make_jobsets.py, seed {seed})\n",
        )
        names.append(name)
    return names


def published_sets(base_seed: int = 100) -> list[tuple[str, str]]:
    """``MIXES`` job sets of 16 jobs, mix ``m`` drawn from ``base_seed + m``: its programs,
    and Poisson gaps at the lambda it is assigned (the five lambdas in turn)."""
    names = []
    for m in range(MIXES):
        mix = PoissonMix(PUBLISHED, np.random.default_rng(base_seed + m))
        tag, lam = list(LAMBDAS.items())[m % len(LAMBDAS)]
        name = f"published-mix{m}"
        data = jobset(mix.groups(TAU_PUBLISHED, lam))
        data["controller_params"] = {"placement": "any"}
        dump(
            JOBSETS / f"{name}.yaml",
            data,
            f"# [SAWS12] Fig. 9 at published job lengths: mix {m}, 16 jobs drawn from Table 1, "
            f"Poisson arrivals,\n# lambda = {lam:g} per {TAU_PUBLISHED} cycles, cores allotted "
            f"by count (make_jobsets.py, seed {base_seed + m})\n",
        )
        names.append((name, tag))
    return names


def fig7_sets() -> list[str]:
    names = []
    for prog in ("strassen", "lu"):
        name = f"fig7-{prog}"
        dump(
            JOBSETS / f"{name}.yaml",
            jobset([{"name": prog, **PROGRAMS[prog], "scheduler": "saws"}]),
            f"# [SAWS12] Fig. 7: {prog} alone; the sweep varies the quantum\n",
        )
        names.append(name)
    return names


def sweep(name: str, description: str, workloads: list[dict], out: str, seeds=(0,)) -> dict:
    return {
        "name": name,
        "description": description,
        "out": out,
        "trace_cache": "results/traces",
        "workloads": workloads,
        "machines": MACHINES,
        "schedulers": SCHEDULERS,
        "seeds": list(seeds),
    }


HEADER = (
    "# SAWS study ([SAWS12] §5) on sunfire-x4600-8x4, caches on and off; written by\n"
    "# make_jobsets.py.  Every point replays a job set under DEQ with every job under the\n"
    "# point's scheduler (WS-EQUI reports no desire: DEQ gives it EQUI's equal shares).\n"
)


def main() -> None:
    f7, f8, f9 = fig7_sets(), fig8_sets(), fig9_sets()
    wl7 = [
        {"name": f"{n[5:]}-q{q}ms", "jobs": f"jobsets/{n}.yaml", "quantum": q * MS_EQ}
        for n in f7
        for q in QUANTA_MS
    ]
    dump(
        HERE / "fig7.yaml",
        sweep("saws_fig7", "quantum 1-50 ms-equivalent, one job", wl7, "results/fig7"),
        HEADER,
    )
    wl8 = [{"name": n[5:], "jobs": f"jobsets/{n}.yaml"} for n in f8]
    dump(
        HERE / "fig8.yaml",
        sweep("saws_fig8", "batched: 2-12 copies of one program", wl8, "results/fig8"),
        HEADER,
    )
    wl9 = [{"name": n[5:], "jobs": f"jobsets/{n}.yaml"} for n in f9]
    dump(
        HERE / "fig9.yaml",
        sweep(
            "saws_fig9", "16 random Table 1 jobs, Poisson arrivals", wl9, "results/fig9", (0, 1, 2)
        ),
        HEADER,
    )
    pub = [
        {"name": f"{n[10:]}-lambda-{tag}", "jobs": f"jobsets/{n}.yaml"}
        for n, tag in published_sets()
    ]
    spec = sweep(
        "saws_published",
        "published job lengths: 10 mixes of 16 Table 1 jobs, Poisson arrivals",
        pub,
        "results/published",
        (0, 1, 2),
    )
    spec["machines"] = MACHINES[:1]
    caches_only = HEADER.replace(", caches on and off", "")
    dump(HERE / "published.yaml", spec, caches_only)
    # Sensitivity, not calibration: [SAWS12] §5.1 says only that at 1 ms quanta the
    # reallocation overhead is "too large to be ignored"; how much would a move have to
    # cost (0.1 and 1 ms-equivalent) for SAWS's steadier desires to pay?
    spec = sweep(
        "saws_published_moves",
        "published job lengths, seed 0, a core move costing 0.1 or 1 ms-equivalent",
        pub,
        "results/published_moves",
    )
    spec["machines"] = [
        {"name": "sunfire-x4600-8x4", "label": f"move-{ms:g}ms",
         "overrides": {"costs.core_move": round(ms * MS_EQ)}}
        for ms in (0.1, 1.0)
    ]  # fmt: skip
    dump(HERE / "published_moves.yaml", spec, caches_only)
    small = [
        {"name": "heat-2", "jobs": "jobsets/small-heat-2.yaml"},
        {"name": "mix-4", "jobs": "jobsets/small-mix-4.yaml"},
    ]
    dump(
        JOBSETS / "small-heat-2.yaml",
        jobset([{"name": "heat", **PROGRAMS["heat"], "scheduler": "saws", "copies": 2}]),
        "# small (CI): Fig. 8's shape, 2 copies of heat\n",
    )
    mix = [
        {"name": f"{p}-{i}", **PROGRAMS[p], "scheduler": "saws", "arrival": a}
        for i, (p, a) in enumerate(
            (("heat", 0), ("ck", 150_000), ("lu", 400_000), ("heat", 700_000))
        )
    ]
    dump(
        JOBSETS / "small-mix-4.yaml",
        jobset(mix),
        "# small (CI): Fig. 9's shape, 4 jobs arriving over time\n",
    )
    dump(
        HERE / "small.yaml",
        sweep("saws_small", "SAWS study, CI size", small, "results/small"),
        HEADER,
    )


if __name__ == "__main__":
    main()
