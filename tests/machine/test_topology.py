"""Socket links: validation, shortest routes and the hop matrix."""

from __future__ import annotations

import pytest

from simsched.cli import main
from simsched.errors import ConfigError
from simsched.machine import load_machine
from simsched.machine.topology import hop_matrix, link_name, routes, steal_costs


def four(links):
    return {
        "name": "four",
        "sockets": 4,
        "cores_per_socket": 1,
        "clock_ghz": 2.0,
        "caches": [
            {"name": "L1", "scope": "core", "size": 1024, "assoc": 2, "line": 64, "hit_latency": 2}
        ],
        "memory": {"latency": 100, "service_interval": 10},
        "links": links,
    }


CHAIN = [
    {"a": 0, "b": 1, "bandwidth": 8, "latency": 20},
    {"a": 1, "b": 2, "bandwidth": 8, "latency": 30},
    {"a": 2, "b": 3, "bandwidth": 4.0, "latency": 40},
]


def test_chain_routes_by_hand():
    r = routes(load_machine(four(CHAIN)))
    assert r is not None
    assert r.hops == [[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]]
    assert r.latency[0][3] == r.latency[3][0] == 90
    assert r.path[0][3] == [0, 2, 4]  # a -> b directions
    assert r.path[3][0] == [5, 3, 1]
    # 64 B at 2 GHz: 8 GB/s = 16 cycles per line, 4 GB/s = 32.
    assert r.interval == [16, 16, 16, 16, 32, 32]
    m = load_machine(four(CHAIN))
    assert link_name(m, 5) == (3, 2)


def test_shortest_path_takes_the_diagonal():
    ring = [{"a": i, "b": (i + 1) % 4, "bandwidth": 4} for i in range(4)]
    r = routes(load_machine(four(ring)))
    assert r is not None and r.hops[0][2] == 2
    r = routes(load_machine(four([*ring, {"a": 0, "b": 2, "bandwidth": 4}])))
    assert r is not None and r.hops[0][2] == 1 and r.hops[1][3] == 2


def test_presets_wiring():
    r = routes(load_machine("opteron-8380-4x4"))
    assert r is not None and r.hops[0][3] == 2 and r.latency[0][3] == 200
    r = routes(load_machine("xeon-x7560-4x8"))
    assert r is not None and all(h <= 1 for row in r.hops for h in row)
    assert r.interval == [11] * 12  # 64 B x 2.27 GHz / 12.8 GB/s = 11.35 cycles


def test_no_links_no_routes():
    m = load_machine("itrs-scaling-16")
    assert m.links is None and routes(m) is None
    assert "links" not in m.as_dict()


def test_sunfire_ladder_has_at_most_three_hops():
    """The X4600 M2's twisted ladder: three coherent links per Opteron at most, every
    route within the white paper's three hops."""
    m = load_machine("sunfire-x4600-8x4")
    r = routes(m)
    assert r is not None
    assert max(max(row) for row in r.hops) == 3
    degree = [sum(1 for ln in m.links or () if s in (ln.a, ln.b)) for s in range(m.sockets)]
    assert max(degree) <= 3


@pytest.mark.parametrize(
    ("links", "needle"),
    [
        (
            [{"a": 0, "b": 1, "bandwidth": 4}, {"a": 2, "b": 3, "bandwidth": 4}],
            "links: socket 2 is unreachable from socket 0",
        ),
        ([*CHAIN[:2], {"a": 2, "b": 3, "bandwidth": 0}], "links.2.bandwidth"),
        ([*CHAIN, {"a": 3, "b": 4, "bandwidth": 4}], "links.3.b: socket 4 does not exist"),
        ([*CHAIN, {"a": 1, "b": 1, "bandwidth": 4}], "links.3: joins socket 1 to itself"),
        ([*CHAIN, {"a": 1, "b": 0, "bandwidth": 4}], "links.3: sockets 0 and 1 are linked twice"),
        ([{**CHAIN[0], "speed": 3}, *CHAIN[1:]], "links.0.speed"),
        # a bandwidth so low that a line's cycles overflowed the engine's int64 clock
        ([*CHAIN[:2], {"a": 2, "b": 3, "bandwidth": 1e-300}], "links.2.bandwidth: 1e-300"),
        ([*CHAIN[:2], {"a": 2, "b": 3, "bandwidth": 1e-15}], "at least 7.63e-06 GB/s"),
        # one message, not the union's two ("bandwidth.float: ...; bandwidth.int: ...")
        ([*CHAIN[:2], {"a": 2, "b": 3, "bandwidth": "fast"}], "links.2.bandwidth: 'fast' is not"),
        ([*CHAIN[:2], {"a": 2, "b": 3, "bandwidth": True}], "links.2.bandwidth: True is not"),
        (
            [*CHAIN[:2], {"a": 2, "b": 3, "bandwidth": "1e9"}],
            "unless it has a dot and a signed exponent: 1.0e+9",
        ),
    ],
)
def test_bad_links_name_the_field(links, needle):
    with pytest.raises(ConfigError) as info:
        load_machine(four(links))
    msg = str(info.value)
    assert needle in msg and "\n" not in msg


def test_a_check_of_the_whole_file_names_its_field_without_a_placeholder():
    """The links checks run on the whole machine (no one field's location): the message
    is the field they name, not "(top level): links: ..."."""
    with pytest.raises(ConfigError) as info:
        load_machine(four([CHAIN[0]]))
    assert str(info.value) == "machine: links: socket 2 is unreachable from socket 0"


def test_lowest_link_bandwidth_is_accepted_with_its_interval():
    # 64 B at 2 GHz: the bound is 64 * 2 / 2**24 GB/s; just above it the interval fits
    bw = 64 * 2.0 / (1 << 24) * 1.001
    r = routes(load_machine(four([*CHAIN[:2], {"a": 2, "b": 3, "bandwidth": bw}])))
    assert r is not None and max(r.interval) == round(64 * 2.0 / bw) < 1 << 24


def test_links_need_a_clock():
    d = four(CHAIN)
    del d["clock_ghz"]
    with pytest.raises(ConfigError, match="links: need clock_ghz"):
        load_machine(d)


def test_machine_show_prints_hops(tmp_path, capsys):
    import yaml

    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(four(CHAIN)))
    with pytest.raises(SystemExit) as info:
        main(["machine", "show", str(p)])
    assert info.value.code in (0, None)
    out = capsys.readouterr().out
    assert "#   0 1 2 3\n#   1 0 1 2\n" in out
    with pytest.raises(SystemExit):
        main(["machine", "show", str(p), "--json"])
    import json

    shown = json.loads(capsys.readouterr().out)
    assert shown["hops"][0] == [0, 1, 2, 3]
    # default costs, no remote_hop: every other socket at remote_pool_op
    assert shown["steal_costs"][0] == [50, 100, 100, 100]
    assert "#   50 100 100 100\n" in out


# -- the price of a steal by distance ------------------------------------------------------

COSTS = {"steal_attempt": 30, "remote_pool_op": 200, "remote_hop": 50}


def test_steal_costs_by_distance_on_a_chain():
    """Same socket: steal_attempt; 1 hop: remote_pool_op; 2 and 3 hops: + remote_hop each."""
    m = load_machine({**four(CHAIN), "costs": COSTS})
    c = steal_costs(m)
    assert c[0][0] == c[2][2] == 30
    assert c[0][1] == c[1][0] == c[2][3] == 200
    assert c[0][2] == c[3][1] == 250
    assert c[0][3] == c[3][0] == 300


def test_steal_costs_without_links_every_other_socket_one_hop():
    spec = four(CHAIN)
    del spec["links"]
    m = load_machine({**spec, "costs": COSTS})
    assert hop_matrix(m) == [[int(s != t) for t in range(4)] for s in range(4)]
    assert steal_costs(m) == [[30 if s == t else 200 for t in range(4)] for s in range(4)]


def test_steal_costs_default_keeps_remote_flat_and_presets_price_hops():
    """remote_hop defaults to 0 (every remote socket at remote_pool_op, as before); the
    wired Opteron preset's sockets 0 and 3 are two HyperTransport hops apart."""
    m = load_machine(four(CHAIN))
    assert m.costs.remote_hop == 0
    assert {x for row in steal_costs(m) for x in row} == {
        m.costs.steal_attempt,
        m.costs.remote_pool_op,
    }
    o = load_machine("opteron-8380-4x4")
    assert hop_matrix(o)[0][3] == 2
    assert steal_costs(o)[0][3] == o.costs.remote_pool_op + o.costs.remote_hop == 440
    assert steal_costs(o)[0][1] == 240 and steal_costs(o)[1][1] == 100
