"""Machines and reference streams shared by the memory-model tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from simsched.machine import Machine, load_machine


def machine(
    caches: list[dict],
    *,
    sockets: int = 1,
    cores_per_socket: int = 1,
    latency: int = 100,
    remote_latency: int = 0,
    service_interval: int = 0,
    page_size: int = 4096,
    placement: str = "first-touch",
    coherence: bool | None = None,
) -> Machine:
    """A machine from a short description (cache dicts need name/scope/size/assoc/line)."""
    full = []
    for i, c in enumerate(caches):
        d = {"name": f"L{i + 1}", "scope": "core", "hit_latency": i + 1, **c}
        full.append(d)
    spec = {
        "name": "test",
        "sockets": sockets,
        "cores_per_socket": cores_per_socket,
        "caches": full,
        "memory": {
            "latency": latency,
            "remote_latency": remote_latency,
            "service_interval": service_interval,
            "page_size": page_size,
            "placement": placement,
        },
    }
    if coherence is not None:
        spec["coherence"] = coherence
    return load_machine(spec)


@st.composite
def machine_specs(draw) -> dict:
    """Random small machines: 1-4 levels, 1-16 ways, 1-64 sets, 1-4 sockets, every
    placement, coherence on or off, every inclusion, line sizes growing downwards."""
    levels = draw(st.integers(1, 4))
    sockets = draw(st.integers(1, 4))
    cps = draw(st.integers(1, 2))
    n_shared = draw(st.integers(0, levels))
    line = 2 ** draw(st.integers(4, 6))
    caches = []
    for k in range(levels):
        grow = 2 ** draw(st.integers(0, 1)) if k else 1
        line *= grow
        inclusion = draw(st.sampled_from(["non-inclusive", "inclusive", "exclusive"]))
        if inclusion == "exclusive" and (k == 0 or grow > 1):
            # An exclusive level takes the victims of the level above: same line size.
            inclusion = "non-inclusive"
        ways = draw(st.integers(1, 16))
        sets = 2 ** draw(st.integers(0, 6))
        caches.append(
            {
                "name": f"L{k + 1}",
                "scope": "socket" if k >= levels - n_shared else "core",
                "size": sets * ways * line,
                "assoc": ways,
                "line": line,
                "hit_latency": draw(st.integers(0, 30)),
                "inclusion": inclusion,
            }
        )
    placement = draw(
        st.sampled_from(["first-touch", "interleave", *[f"node:{n}" for n in range(sockets)]])
    )
    return {
        "name": "random",
        "sockets": sockets,
        "cores_per_socket": cps,
        "caches": caches,
        "memory": {
            "latency": draw(st.integers(0, 300)),
            "remote_latency": draw(st.integers(0, 150)),
            "service_interval": draw(st.integers(0, 40)),
            "page_size": max(line, 2 ** draw(st.integers(6, 13))),
            "placement": placement,
        },
        "coherence": draw(st.booleans()),
    }


def random_stream(rng: np.random.Generator, n: int, kind: str):
    """A stream of ``n`` references (addrs uint64, sizes uint8, writes bool, gaps uint32).

    ``kind``: ``random`` (uniform over a footprint of a few KB to 1 MB), ``sweep``
    (strided sweeps, possibly repeated), ``hot`` (a few lines reused), ``straddle``
    (unaligned, large sizes), ``far`` (addresses spread over the 48-bit space).
    """
    if kind == "random":
        foot = 1 << int(rng.integers(8, 21))
        addrs = rng.integers(0, foot, n)
    elif kind == "sweep":
        stride = int(rng.choice([1, 4, 8, 16, 64, 100, 128, 4096]))
        period = max(1, int(rng.integers(1, n + 1)))
        addrs = (np.arange(n) % period) * stride + int(rng.integers(0, 1 << 16))
    elif kind == "hot":
        lines = rng.integers(0, 8, n) * int(rng.choice([64, 128, 1024, 4096]))
        addrs = lines + rng.integers(0, 64, n)
    elif kind == "straddle":
        addrs = rng.integers(0, 1 << 14, n)
    else:
        addrs = rng.integers(0, 1 << 48, n) & ~np.int64(7)
        addrs = np.minimum(addrs, (1 << 48) - 256)
    if kind == "straddle":
        sizes = rng.integers(1, 256, n)
    else:
        sizes = rng.choice([1, 2, 4, 8, 8, 8, 16], n)
    writes = rng.random(n) < rng.choice([0.0, 0.25, 0.5, 1.0])
    gaps = rng.integers(0, 20, n)
    return (
        addrs.astype(np.uint64),
        sizes.astype(np.uint8),
        writes.astype(bool),
        gaps.astype(np.uint32),
    )


STREAM_KINDS = ("random", "sweep", "hot", "straddle", "far")


def compare(ms, orc, core, a, s, w, t, g, deps=None) -> None:
    """Serve one stream on the model and on its oracle: equal latencies and end time."""
    lat = ms.access_batch(core, a, s, w, t, g, deps=deps).tolist()
    assert lat == orc.access_batch(core, a, s, w, t, g, deps=deps)
    assert ms.last_time == orc.last_time
