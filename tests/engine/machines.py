"""Small machines for engine tests (tiny caches so that a few thousand refs matter)."""

TWO_BY_TWO = {
    "name": "test-2x2",
    "sockets": 2,
    "cores_per_socket": 2,
    "caches": [
        {"name": "L1", "scope": "core", "size": 1024, "assoc": 2, "line": 64, "hit_latency": 1},
        {"name": "L2", "scope": "socket", "size": 8192, "assoc": 4, "line": 64, "hit_latency": 8},
    ],
    "memory": {"latency": 60, "remote_latency": 40, "service_interval": 12, "page_size": 4096},
    # remote_pool_op: the default (100); core_move scaled down with the jobs of the tests
    # (a few thousand cycles), so that a move delays a core without dwarfing its job
    "costs": {"steal_attempt": 20, "deque_op": 3, "queue_op": 7, "core_move": 150},
}

ONE_BY_THREE = {
    "name": "test-1x3",
    "sockets": 1,
    "cores_per_socket": 3,
    "caches": [
        {"name": "L1", "scope": "core", "size": 512, "assoc": 2, "line": 64, "hit_latency": 1},
        {"name": "L2", "scope": "socket", "size": 4096, "assoc": 4, "line": 128, "hit_latency": 6},
    ],
    "memory": {"latency": 50, "service_interval": 10},
    "costs": {"steal_attempt": 15, "deque_op": 2, "queue_op": 5, "core_move": 150},
}

#: Four one-core sockets on a chain of links (0-1-2-3): steal prices 20 on the socket,
#: then 100, 160, 220 for one, two and three hops (remote_pool_op + remote_hop per hop).
CHAIN_4X1 = {
    **TWO_BY_TWO,
    "name": "t-chain",
    "sockets": 4,
    "cores_per_socket": 1,
    "clock_ghz": 2.0,
    "links": [{"a": i, "b": i + 1, "bandwidth": 8, "latency": 30} for i in range(3)],
    "costs": {**TWO_BY_TWO["costs"], "remote_pool_op": 100, "remote_hop": 60},
}


def out_of_order(spec: dict, mshrs: int, rob: int) -> dict:
    """``spec`` with out-of-order cores (docs/machine-model.md §6.1)."""
    core = {"model": "out-of-order", "mshrs": mshrs, "rob": rob}
    return {**spec, "name": spec["name"] + "-ooo", "core": core}
