"""The core-assignment rule of ``simsched.engine.controllers.assign_cores`` as first
written: every choice of a core looks at every free core.  Quadratic in the cores, and
the rule's plainest statement; the engine's version chooses a socket, then its lowest
free core, and must give the same cores."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence


def _per_socket(cores, socket_of):
    d: dict[int, int] = {}
    for c in cores:
        d[socket_of[c]] = d.get(socket_of[c], 0) + 1
    return d


def assign_cores_naive(
    current: Mapping[int, Collection[int]],
    targets: Mapping[int, int | tuple[int, ...]],
    socket_of: Sequence[int],
    busy: Collection[int] = (),
) -> dict[int, set[int]]:
    """``assign_cores``, one free core at a time by the full key."""
    P = len(socket_of)
    out: dict[int, set[int]] = {j: set(c) for j, c in current.items()}
    for j in targets:
        out.setdefault(j, set())
    explicit = {j: set(v) for j, v in targets.items() if isinstance(v, tuple)}
    counts = {j: v for j, v in targets.items() if isinstance(v, int)}
    for j in out:
        if j in explicit:
            out[j] = set(explicit[j])
            continue
        want = counts.get(j, 0)
        have = out[j]
        if len(have) > want:
            per = _per_socket(have, socket_of)
            order = sorted(have, key=lambda c: (c in busy, per[socket_of[c]], -c))
            for c in order[: len(have) - want]:
                have.discard(c)
    taken = set().union(*out.values()) if out else set()
    for j in sorted(out):
        if j in explicit:
            continue
        want = counts.get(j, 0)
        have = out[j]
        while len(have) < want:
            free = [c for c in range(P) if c not in taken]
            if not free:
                break
            mine = _per_socket(have, socket_of)
            fsock = _per_socket(free, socket_of)
            c = min(free, key=lambda c: (-mine.get(socket_of[c], 0), -fsock[socket_of[c]], c))
            have.add(c)
            taken.add(c)
    return out
