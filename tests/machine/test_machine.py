"""Machine schema, presets and loading."""

from __future__ import annotations

import re

import pytest

from simsched.cli import main
from simsched.errors import ConfigError
from simsched.machine import load_machine, parse_size, preset_names
from simsched.machine.presets import ITRS_45NM, ITRS_SCALING, ITRS_SCALING_EXTRAPOLATED

BASE = {
    "name": "m",
    "cores_per_socket": 2,
    "caches": [
        {"name": "L1", "scope": "core", "size": "32KB", "assoc": 8, "line": 64, "hit_latency": 2}
    ],
    "memory": {"latency": 100, "service_interval": 10},
}

_L2 = {"name": "L2", "scope": "core", "size": "256KB", "assoc": 8, "line": 64, "hit_latency": 9}


def test_inclusion_and_the_older_inclusive_flag():
    caches = [BASE["caches"][0], {**_L2, "inclusive": True}]
    assert load_machine({**BASE, "caches": caches}).caches[1].inclusion == "inclusive"
    caches = [BASE["caches"][0], {**_L2, "inclusive": False}]
    assert load_machine({**BASE, "caches": caches}).caches[1].inclusion == "non-inclusive"
    m = load_machine({**BASE, "caches": [BASE["caches"][0], {**_L2, "inclusion": "exclusive"}]})
    assert m.caches[1].exclusive and not m.caches[1].inclusive


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_loads_with_power_of_two_sets(name):
    m = load_machine(name)
    for c in m.caches:
        assert c.sets & (c.sets - 1) == 0 and c.sets * c.assoc * c.line == c.size
    assert m.cores == m.sockets * m.cores_per_socket


def test_itrs_tables_match_the_paper():
    assert sorted(ITRS_SCALING) == [1, 2, 4, 8, 16, 32]
    assert sorted(ITRS_45NM) == [1, 2, *range(4, 27, 2)]
    m = load_machine("itrs-scaling-16")
    l1, l2 = m.caches
    assert (m.cores, l2.size, l2.assoc, l2.line, l2.hit_latency, l2.scope) == (
        16,
        20 * 2**20,
        20,
        128,
        19,
        "socket",
    )
    assert (l1.size, l1.line, l1.assoc, l1.hit_latency) == (64 * 1024, 128, 4, 1)
    assert (m.memory.latency, m.memory.service_interval) == (300, 30)
    assert load_machine("itrs-45nm-26").caches[1].size == 2**20


def test_extrapolated_itrs_chips_follow_table_2s_rule():
    # The rule reproduces the paper's own 16- and 32-core columns ...
    for p in (16, 32):
        mb, hit = ITRS_SCALING[p][1], ITRS_SCALING[p][3]
        assert round(9 + (5 * mb) ** 0.5) == hit
    # ... and doubles the cores and the L2 per node beyond them.
    assert sorted(ITRS_SCALING_EXTRAPOLATED) == [64, 128, 256]
    for p, (_, mb, assoc, hit) in ITRS_SCALING_EXTRAPOLATED.items():
        m = load_machine(f"itrs-scaling-{p}")
        l1, l2 = m.caches
        assert (m.cores, l2.size, l2.assoc, l2.hit_latency) == (p, mb * 2**20, assoc, hit)
        assert mb == 40 * p // 32 and l1.size == 64 * 1024


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"bogus": 1}, "bogus: unknown key"),
        # the name heads messages and machine show's comment line (a newline broke its YAML)
        ({"name": "x\nsockets: 7"}, "name: 'x\\nsockets: 7': a name is one line of text"),
        ({"name": " "}, "name: empty"),
        ({"caches": [{**BASE["caches"][0], "size": "33KB"}]}, "caches.0"),
        ({"caches": [{**BASE["caches"][0], "scope": "chip"}]}, "caches.0.scope"),
        ({"caches": [{**BASE["caches"][0], "line": 48}]}, "line: 48 is not a power of two"),
        ({"memory": {"latency": 1}}, "memory.service_interval: required key missing"),
        ({"memory": {**BASE["memory"], "placement": "node:3"}}, "node 3 does not exist"),
        ({"memory": {**BASE["memory"], "placement": "random"}}, "placement"),
        ({"cores_per_socket": 0}, "cores_per_socket"),
        ({"caches": [{**BASE["caches"][0], "size": "lots"}]}, "caches.0.size"),
        ({"caches": [{**BASE["caches"][0], "inclusion": "mostly"}]}, "caches.0.inclusion"),
        (
            {"caches": [{**BASE["caches"][0], "inclusion": "exclusive"}]},
            "caches.0.inclusion (L1): the first level cannot be exclusive",
        ),
        (
            {"caches": [BASE["caches"][0], {**_L2, "line": 128, "inclusion": "exclusive"}]},
            "caches.1.inclusion (L2): an exclusive level needs the line of the level above (64)",
        ),
        (
            {"caches": [{**BASE["caches"][0], "inclusive": True, "inclusion": "inclusive"}]},
            "caches.0 (L1): inclusive: give inclusion",
        ),
        ({"caches": [{**BASE["caches"][0], "inclusive": 1}]}, "caches.0 (L1): inclusive: 1 is not"),
    ],
)
def test_errors_name_the_field(patch, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        load_machine({**BASE, **patch})


def test_a_failing_only_cache_is_one_error_not_also_an_empty_list():
    with pytest.raises(ConfigError) as info:
        load_machine({**BASE, "caches": [{**BASE["caches"][0], "size": "lots"}]})
    assert str(info.value) == (
        "machine: caches.0.size (L1): 'lots' is not a size (use bytes or a string such as '64KB', "
        "'20MB')"
    )
    with pytest.raises(ConfigError, match="caches: Tuple should have at least 1 item"):
        load_machine({**BASE, "caches": []})


def test_a_machine_has_at_most_eight_cache_levels():
    """32 levels were accepted and their generated kernel, a block nested per level, ended
    in Python's IndentationError and a traceback; 8 are accepted."""
    from simsched.machine.schema import MAX_LEVELS

    l1 = BASE["caches"][0]
    levels = [{**l1, "name": f"L{i + 1}", "hit_latency": i + 1} for i in range(32)]
    with pytest.raises(ConfigError, match="caches: Tuple should have at most 8 items.*not 32"):
        load_machine({**BASE, "caches": levels})
    assert len(load_machine({**BASE, "caches": levels[:MAX_LEVELS]}).caches) == MAX_LEVELS


def test_yaml_file_and_overrides(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_text(
        "name: x\ncores_per_socket: 4\ncaches:\n  - {name: L1, scope: core, size: 16KB, assoc: 4, line: 64, hit_latency: 1}\nmemory: {latency: 50, service_interval: 5}\n"
    )
    m = load_machine(p, {"caches.L1.size": "32KB", "cores": 8})
    assert m.caches[0].size == 32768 and m.cores == 8
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML at line"):
        load_machine(bad)
    with pytest.raises(ConfigError, match="no cache level 'L9'"):
        load_machine(p, {"caches.L9.size": 1})


def test_sizes():
    assert parse_size("64KB") == 65536 and parse_size("1.5 MB") == 3 * 2**19
    assert parse_size(4096) == 4096
    with pytest.raises(ValueError):
        parse_size("12 parsecs")
    # exact, not through a float: above 2^53 a float rounded the size, and a size a hair
    # off a whole byte was taken as the whole byte
    assert parse_size("9007199254740993") == 2**53 + 1
    assert parse_size("8589934593 KB") == (2**33 + 1) * 1024
    with pytest.raises(ValueError):
        parse_size("1.0000000000000001 KB")
    with pytest.raises(
        ConfigError, match=re.escape("caches.0.size (L1): Input should be less than or equal")
    ):
        load_machine("itrs-scaling-1", {"caches.L1.size": "9" * 400})
    # past Python's 4300 digits: no advice on sys.set_int_max_str_digits, no 5000-digit echo
    with pytest.raises(ValueError) as info:
        parse_size("9" * 5000 + "KB")
    assert str(info.value) == (
        f"{'9' * 40!r}... (5,002 characters) is not a size (use bytes or a string such as "
        "'64KB', '20MB')"
    )


def test_a_size_may_be_given_in_terabytes_up_to_the_cap():
    """1 TB is the largest size, yet '1TB' was "not a size"."""
    assert parse_size("1TB") == parse_size("1 TiB") == parse_size("1024GB") == 2**40
    assert load_machine("itrs-scaling-1", {"caches.L1.size": "1TB"}).caches[0].size == 2**40
    with pytest.raises(ConfigError, match=re.escape("caches.0.size (L1): Input should be less")):
        load_machine("itrs-scaling-1", {"caches.L1.size": "2TB"})


def test_a_field_error_names_the_cache_level_as_an_override_does():
    """An override names a level (caches.L2.size); its error said caches.1.size alone."""
    with pytest.raises(
        ConfigError, match=re.escape("caches.1.assoc (L2): Input should be greater")
    ):
        load_machine("itrs-scaling-2", {"caches.L2.assoc": 0})
    odd = {**BASE, "caches": [{**BASE["caches"][0], "name": "x\ny", "size": "lots"}]}
    with pytest.raises(ConfigError, match=re.escape("caches.0.size ('x\\ny'): 'lots'")):
        load_machine(odd)


def test_cli_show_json(capsys):
    import json

    with pytest.raises(SystemExit) as exc:
        main(["machine", "show", "itrs-scaling-16", "--json"])
    assert exc.value.code == 0

    d = json.loads(capsys.readouterr().out)
    assert d["cores"] == 16 and d["caches"][1]["size"] == 20 * 2**20


def test_cli_show_counts_one_core_in_the_singular(capsys):
    for name, head in (("itrs-scaling-1", "1 core (1 × 1)"), ("itrs-scaling-2", "2 cores (1 × 2)")):
        with pytest.raises(SystemExit) as exc:
            main(["machine", "show", name])
        assert exc.value.code == 0
        assert capsys.readouterr().out.splitlines()[0].startswith(f"# {name}: {head};")


def test_cli_unknown_machine_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["machine", "show", "itrs-scaling-17"])
    assert exc.value.code == 2
    assert "did you mean" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("OPTERON-8380-4x4", "(did you mean opteron-8380-4x4?)"),
        ("Opteron", "(did you mean opteron-8380-4x4?)"),
        ("Xeon", "(did you mean xeon-8380-2x40, xeon-x7560-4x8?)"),
        ("xe", "(see `simsched machine list`)"),
    ],
)
def test_a_preset_typed_in_another_case_or_begun_is_suggested(typed, hint):
    """A preset name typed as in a datasheet, or its first word, got no "did you mean": the
    close matches were sought in the case typed, and a word that begins a name is too short
    to be close to it."""
    with pytest.raises(ConfigError) as info:
        load_machine(typed)
    assert str(info.value) == f"machine {typed!r}: no such preset or file {hint}"


@pytest.mark.parametrize("value", [True, False, "2.5"])
def test_clock_ghz_is_a_number_not_a_bool(value):
    """``clock_ghz: true`` used to become 1.0 GHz."""
    with pytest.raises(ConfigError, match="clock_ghz: Input should be a valid number"):
        load_machine("itrs-scaling-1", {"clock_ghz": value})
    assert load_machine("itrs-scaling-1", {"clock_ghz": 2}).clock_ghz == 2.0


def test_a_long_value_is_quoted_shortened():
    """A 5000-character text given as a count was quoted whole: a one-line message of
    5000 characters."""
    with pytest.raises(ConfigError) as info:
        load_machine("itrs-scaling-1", {"memory.latency": "x" * 5000})
    msg = str(info.value)
    assert "got the text 'xxxxxxxx" in msg and "...xxx" in msg and len(msg) < 200, msg


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"clock_ghz": "2e0"}, "clock_ghz: Input should be a valid number, got the text '2e0' ("),
        ({"memory.latency": 2.5}, "memory.latency: Input should be a valid integer, got 2.5"),
        ({"coherence": 3}, "coherence: Input should be a valid boolean, got 3"),
        ({"memory.latency": "fast"}, "got the text 'fast'"),
    ],
)
def test_a_value_of_the_wrong_type_is_quoted(overrides, says):
    """YAML reads ``clock_ghz: 2e0`` as text; the message said "should be a valid number"
    without a word of what it got."""
    with pytest.raises(ConfigError) as info:
        load_machine("itrs-scaling-1", overrides)
    assert says in str(info.value)
    assert ("1.0e+9" in str(info.value)) == ("2e0" in says)


def test_clock_and_page_must_be_physical():
    # a 1e-300 GHz clock turned cycles into 1e300 microseconds in records and figures; a
    # page smaller than a line put a line on several NUMA pages
    with pytest.raises(ConfigError, match="clock_ghz: Input should be greater than or equal"):
        load_machine("itrs-scaling-1", {"clock_ghz": 1e-300})
    assert load_machine("itrs-scaling-1", {"clock_ghz": 0.001}).clock_ghz == 0.001
    with pytest.raises(
        ConfigError, match=r"memory.page_size: 32 is smaller than the line of caches.0 \(L1, 128\)"
    ):
        load_machine("itrs-scaling-1", {"memory.page_size": 32})
    assert load_machine("itrs-scaling-1", {"memory.page_size": 128}).memory.page_size == 128


def test_duplicate_key_in_a_machine_file_is_an_error(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_text(
        "name: x\ncores_per_socket: 4\ncores_per_socket: 8\ncaches:\n"
        "  - {name: L1, scope: core, size: 16KB, assoc: 4, line: 64, hit_latency: 1}\n"
        "memory: {latency: 50, service_interval: 5}\n"
    )
    with pytest.raises(ConfigError, match=r"line 3, column 1: duplicate key 'cores_per_socket'"):
        load_machine(p)


def test_overrides_must_be_a_mapping_of_dotted_names():
    """Before: AttributeError ('str' object has no attribute 'items'; 'int' object has no
    attribute 'split')."""
    with pytest.raises(ConfigError, match="^overrides='cores=2': expected a mapping"):
        load_machine("itrs-scaling-4", "cores=2")
    with pytest.raises(ConfigError, match="^overrides: key 1 is not a string"):
        load_machine("itrs-scaling-4", {1: 2})
    # an empty key or segment went on to the schema, which said only "unknown key"
    for key in ("", "caches..size"):
        with pytest.raises(ConfigError, match=f"override '{key}': expected a dotted key"):
            load_machine("itrs-scaling-4", {key: 2})


def test_a_read_only_mapping_is_a_machine_too():
    """MappingProxyType was refused as "expected a preset name, a machine file, a mapping"."""
    import types

    from simsched.machine.loader import machine_config

    good = machine_config(load_machine("itrs-scaling-2"))
    assert load_machine(types.MappingProxyType(good)) == load_machine("itrs-scaling-2")


def test_a_long_unknown_machine_name_is_cut_short():
    with pytest.raises(ConfigError, match=r"^machine 'x{100}'\.\.\. \(5,000 characters\): no"):
        load_machine("x" * 5000)


def test_an_override_of_a_missing_link_names_the_links():
    with pytest.raises(
        ConfigError, match=r"override links\.9\.a: links has no item '9' \(0 to 4\)$"
    ):
        load_machine("opteron-8380-4x4", {"links.9.a": 1})
    with pytest.raises(ConfigError, match=r"override caches\.L9\.size: no cache level 'L9'$"):
        load_machine("opteron-8380-4x4", {"caches.L9.size": 1})


def test_an_override_inside_a_value_names_the_value():
    with pytest.raises(
        ConfigError, match=r"caches\.L1\.size\.x: caches\.L1\.size is .*, not a mapping"
    ):
        load_machine("itrs-scaling-4", {"caches.L1.size.x": 1})
    with pytest.raises(ConfigError, match=r"memory\.latency\.x\.y: memory\.latency is 300, not a"):
        load_machine("itrs-scaling-4", {"memory.latency.x.y": 1})


def test_a_nested_override_says_how_to_set_one_field():
    """Before: 'caches: Input should be a valid tuple' for a mapping given for the list of
    levels, and 'memory.latency: required key missing' with no word on why."""
    with pytest.raises(ConfigError) as info:
        load_machine("opteron-8380-4x4", {"caches": {"L2": {"size": "1MB"}}})
    assert str(info.value) == (
        "opteron-8380-4x4: override caches: a mapping cannot replace the list 'caches'; "
        "set one field with a dotted key, e.g. caches.L2.size: 1MB"
    )
    with pytest.raises(ConfigError, match=r"override links: a mapping cannot replace"):
        load_machine("opteron-8380-4x4", {"links": {"0": {"bandwidth": 8.8}}})
    with pytest.raises(ConfigError) as info:
        load_machine("opteron-8380-4x4", {"memory": {"placement": "interleave"}})
    assert str(info.value).endswith(
        "(override memory replaces the whole section; to change one field and keep the "
        "others use a dotted key, e.g. memory.placement: interleave)"
    )
    # a whole section given in full is still a replacement, and a dotted key a change
    full = load_machine("opteron-8380-4x4").as_dict()["memory"] | {"placement": "interleave"}
    assert load_machine("opteron-8380-4x4", {"memory": full}) == load_machine(
        "opteron-8380-4x4", {"memory.placement": "interleave"}
    )


def test_an_override_indexing_a_list_the_machine_lacks_says_so():
    """Before: 'links: Input should be a valid tuple' for links.0.a on a machine without
    links."""
    with pytest.raises(ConfigError) as info:
        load_machine("itrs-scaling-4", {"links.0.a": 1})
    assert str(info.value) == (
        "itrs-scaling-4: override links.0.a: the machine has no 'links' to index; give the "
        "whole list (e.g. in a machine file)"
    )
    assert load_machine("opteron-8380-4x4", {"links.0.bandwidth": 8.8}).links[0].bandwidth == 8.8


def test_a_machine_that_is_no_name_path_mapping_or_machine_is_refused_as_such():
    """Before: "machine 'None': no such preset or file", str(None) taken for a name."""
    for bad in (None, 5, ["itrs-scaling-1"]):
        with pytest.raises(ConfigError) as info:
            load_machine(bad)
        assert str(info.value) == (
            f"machine={bad!r}: expected a preset name, a machine file, a mapping of machine "
            "fields or a Machine"
        )


def test_numpy_scalars_are_accepted_in_machine_dicts_and_overrides():
    """Before: 'cores_per_socket: Input should be a valid integer' for np.int64(2), and
    'np.int64(1048576) is not a size' for a cache size computed with numpy."""
    import numpy as np

    m = load_machine("itrs-scaling-4", {"cores": np.int64(2), "caches.L2.size": np.int64(2**20)})
    assert m.cores == 2 and m.caches[1].size == 2**20
    d = load_machine("itrs-scaling-4").as_dict()
    assert load_machine({**d, "cores_per_socket": np.int64(2)}).cores == 2


def test_an_override_of_a_prefetcher_field_needs_a_prefetcher():
    """Before: caches.L1.prefetch.distance on a level without a prefetcher added one (16
    streams, degree 2), so a study of the distance turned prefetching on silently."""
    for machine, level in (("itrs-45nm-2", "L1"), ("opteron-8380-4x4", "L2")):
        with pytest.raises(ConfigError) as info:
            load_machine(machine, {f"caches.{level}.prefetch.distance": 8})
        assert str(info.value) == (
            f"{machine}: override caches.{level}.prefetch.distance: cache level '{level}' has "
            "no prefetcher to change; add one as a whole: prefetch: {streams: 16, distance: 4, "
            "degree: 2} in a machine file, or that mapping as the value of "
            f"caches.{level}.prefetch in a sweep spec's overrides or the Python API (--set "
            "takes no mapping)"
        )
    with pytest.raises(ConfigError, match=r"caches\.0\.prefetch\.degree: cache level 'L1' has"):
        load_machine("itrs-45nm-2", {"caches.0.prefetch.degree": 3})
    # a prefetcher the level has is changed, and one given whole is added
    pf = load_machine("opteron-8380-4x4", {"caches.L1.prefetch.distance": 8}).caches[0].prefetch
    assert (pf.streams, pf.distance, pf.degree) == (8, 8, 2)
    pf = load_machine("itrs-45nm-2", {"caches.L1.prefetch": {"distance": 8}}).caches[0].prefetch
    assert (pf.streams, pf.distance, pf.degree) == (16, 8, 2)
    spec = {**load_machine("itrs-45nm-2").as_dict(), "name": "pf"}
    spec["caches"][0]["prefetch"] = {}
    assert load_machine(spec, {"caches.0.prefetch.degree": 3}).caches[0].prefetch.degree == 3


@pytest.mark.parametrize("key", ["clock_ghz", "links.0.bandwidth"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_clock_or_bandwidth_that_is_no_finite_number_is_refused_as_such(key, value):
    """Before: YAML's .nan was refused as "Input should be less than or equal to 100"
    (clock_ghz) or "greater than 0" (bandwidth), which named a bound it had not crossed."""
    with pytest.raises(ConfigError) as info:
        load_machine("opteron-8380-4x4", {key: value})
    assert str(info.value) == f"opteron-8380-4x4: {key}: Input should be a finite number"


def test_a_blocking_model_on_an_out_of_order_preset_says_how_to_get_one():
    """Before: core.model=blocking on an out-of-order preset was refused because mshrs and
    rob stayed, with no word of core=blocking, the override that does it."""
    with pytest.raises(ConfigError) as info:
        load_machine("opteron-8380-4x4", {"core.model": "blocking"})
    assert str(info.value) == (
        "opteron-8380-4x4: core: mshrs and rob apply to model: out-of-order, not to a "
        "blocking core (core: blocking alone, or --set core=blocking, makes the cores "
        "blocking)"
    )
    assert load_machine("opteron-8380-4x4", {"core": "blocking"}).out_of_order is None


def test_the_one_core_machine_leaves_out_coherence_with_the_same_results():
    """One core on one socket: a write finds no other holder, so the one-core baseline's
    memory model is generated without coherence (less to compile) and must serve every
    reference as the coherent one-core machine does: same latencies, same counters."""
    import numpy as np

    from simsched.machine import Machine
    from simsched.machine.loader import machine_config, one_core_machine
    from simsched.memory import MemorySystem

    caches = [
        {**BASE["caches"][0], "size": "4KB", "assoc": 2},
        {**_L2, "scope": "socket", "size": "16KB", "assoc": 4, "inclusion": "inclusive"},
    ]
    m = load_machine({**BASE, "sockets": 2, "caches": caches})
    one = one_core_machine(m)
    assert m.coherent and not one.coherent and one.cores == 1
    coherent_one = Machine.model_validate({**machine_config(one), "coherence": True})
    rng = np.random.default_rng(7)
    n = 4000
    addrs = rng.integers(0, 64 * 1024, n).astype(np.uint64)
    sizes = rng.choice(np.array([1, 8, 16, 64], np.uint8), n)
    writes = rng.random(n) < 0.5
    gaps = rng.integers(0, 20, n).astype(np.uint32)
    served = []
    for machine in (one, coherent_one):
        ms = MemorySystem(machine)
        lat = ms.access_batch(0, addrs, sizes, writes, 0, gaps=gaps).tolist()
        served.append((lat, ms.stats()))
    assert served[0] == served[1]
    assert served[0][1]["levels"][0]["misses"] > 0


@pytest.mark.parametrize("bad", ["12 parsecs", "7EiB", True, None, 2.5, "1.0000000000000001 KB"])
def test_a_value_that_is_no_size_is_a_config_error(bad):
    """parse_size raised a bare ValueError, which the command line reports as a bug (with
    its traceback) and a Python caller could not catch as simsched's own; it is a
    ConfigError now, and still a ValueError for the callers (and pydantic's validators)
    that catch one."""
    with pytest.raises(ConfigError) as info:
        parse_size(bad)
    assert isinstance(info.value, ValueError)
    assert "\n" not in str(info.value) and repr(bad) in str(info.value)
    # in a machine, the field is still named, by pydantic's error
    with pytest.raises(ConfigError, match=r"caches\.0\.size \(L1\)"):
        load_machine("itrs-scaling-1", {"caches.L1.size": bad})


def test_an_empty_machine_name_is_said_to_be_empty():
    # Path("") is the current folder: it was ".: is a folder, expected a YAML file".
    with pytest.raises(ConfigError, match=r"^machine '': an empty name; give a preset name"):
        load_machine("")


@pytest.mark.parametrize("value", [[1], {"x": 1}, None])
def test_a_parameter_value_of_no_scalar_type_is_one_clause(value):
    # A sweep spec's params: {n: [1]} was four clauses, one per branch of a parameter's
    # type (params.n.str: Input should be a valid string; params.n.int: ...).
    from pydantic import BaseModel, ValidationError

    from simsched.experiments.schema import Scalar
    from simsched.machine.loader import format_validation_error

    class Entry(BaseModel):
        params: dict[str, Scalar]

    with pytest.raises(ValidationError) as info:
        Entry.model_validate({"params": {"n": value}})
    said = format_validation_error("s.yaml", info.value)
    assert said == (f"s.yaml: params.n: expected a number, text or true/false, got {value!r}")
