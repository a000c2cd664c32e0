"""Routes over a machine's socket links: hop distances and the links each transfer uses.

Link ``i`` of ``machine.links`` is two *directed* links: ``2 i`` carries data from its
``a`` to its ``b``, ``2 i + 1`` from ``b`` to ``a``.  A transfer from socket ``s`` to
socket ``t`` takes a shortest path (fewest links, breadth first from ``s``, neighbours
in the order of ``machine.links``: deterministic).  See docs/machine-model.md §5.

:func:`steal_costs` prices one scheduler operation on another core's deque or on a
socket's pool by the distance between the sockets, the one price list every policy uses
(docs/machine-model.md §1.1).
"""

from __future__ import annotations

from typing import NamedTuple

from simsched.machine.schema import Machine, link_interval


class Routes(NamedTuple):
    """``hops[s][t]``: links from socket s to t; ``path[s][t]``: their directed ids in
    order; ``latency[s][t]``: the sum of their latencies; ``interval[d]``: cycles
    directed link d is busy per last-level line."""

    hops: list[list[int]]
    path: list[list[list[int]]]
    latency: list[list[int]]
    interval: list[int]


def routes(machine: Machine) -> Routes | None:
    """Shortest routes between every pair of sockets, or None without links.

    Parameters
    ----------
    machine
        A validated machine (its links, if any, connect every socket).

    Returns
    -------
    Routes or None
    """
    if machine.links is None:
        return None
    assert machine.clock_ghz is not None  # the schema requires it with links
    S = machine.sockets
    nbrs: list[list[tuple[int, int]]] = [[] for _ in range(S)]
    for i, ln in enumerate(machine.links):
        nbrs[ln.a].append((ln.b, 2 * i))
        nbrs[ln.b].append((ln.a, 2 * i + 1))
    path: list[list[list[int]]] = []
    for s in range(S):
        via: dict[int, list[int]] = {s: []}
        frontier = [s]
        while frontier:
            nxt = []
            for u in frontier:
                for v, d in nbrs[u]:
                    if v not in via:
                        via[v] = [*via[u], d]
                        nxt.append(v)
            frontier = nxt
        path.append([via[t] for t in range(S)])
    lat = [machine.links[d // 2].latency for d in range(2 * len(machine.links))]
    line = machine.caches[-1].line
    interval = [
        link_interval(line, machine.clock_ghz, machine.links[d // 2].bandwidth)
        for d in range(2 * len(machine.links))
    ]
    return Routes(
        hops=[[len(p) for p in row] for row in path],
        path=path,
        latency=[[sum(lat[d] for d in p) for p in row] for row in path],
        interval=interval,
    )


def link_name(machine: Machine, d: int) -> tuple[int, int]:
    """(from socket, to socket) of directed link ``d``."""
    assert machine.links is not None
    ln = machine.links[d // 2]
    return (ln.a, ln.b) if d % 2 == 0 else (ln.b, ln.a)


def hop_matrix(machine: Machine) -> list[list[int]]:
    """Links between every pair of sockets: the routes' hops, or 1 between any two
    sockets of a machine without links (0 on the diagonal).

    Parameters
    ----------
    machine
        A validated machine.

    Returns
    -------
    list of list of int
        ``hops[s][t]``.
    """
    r = routes(machine)
    if r is not None:
        return [list(row) for row in r.hops]
    S = machine.sockets
    return [[int(s != t) for t in range(S)] for s in range(S)]


def steal_costs(machine: Machine) -> list[list[int]]:
    """Cycles of one steal attempt or pool operation by a core of socket ``s`` on a
    deque or pool of socket ``t``: ``cost[s][t]``.

    Same socket: ``costs.steal_attempt``.  Another socket ``h`` links away:
    ``costs.remote_pool_op + costs.remote_hop * (h - 1)`` — the operation moves the same
    few cache lines (the deque's or pool's lock and head) whatever the policy, and each
    further link adds its crossing to each of them.  On a machine without links every
    other socket is one hop away.

    Parameters
    ----------
    machine
        A validated machine.

    Returns
    -------
    list of list of int
    """
    c = machine.costs
    return [
        [c.steal_attempt if h == 0 else c.remote_pool_op + c.remote_hop * (h - 1) for h in row]
        for row in hop_matrix(machine)
    ]
