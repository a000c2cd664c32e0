"""The sweep file's schema: brace patterns, grids, the models' own checks."""

from __future__ import annotations

import re

import pytest

from simsched.errors import ConfigError
from simsched.experiments.schema import (
    SweepSpec,
    expand_braces,
    grid_product,
    grid_size,
)


def test_expand_braces():
    assert expand_braces("itrs-45nm-{2..8..2}") == [f"itrs-45nm-{i}" for i in (2, 4, 6, 8)]
    assert expand_braces("a{1,2}b{x,y}") == ["a1bx", "a1by", "a2bx", "a2by"]
    assert expand_braces("plain") == ["plain"]
    assert expand_braces("n{3..1}") == ["n3", "n2", "n1"]
    with pytest.raises(ConfigError):
        expand_braces("a{1..x}")
    with pytest.raises(ConfigError, match="step > 0"):
        expand_braces("a{1..4..0}")


def test_braces_inside_braces_expand_as_a_shell_expands_them():
    # the innermost group was expanded first, so the outer one split its text wrongly:
    # itrs-scaling-1, -2, -1, -4, and a sweep of them failed on a duplicate point
    assert expand_braces("itrs-scaling-{1,{2,4}}") == [f"itrs-scaling-{i}" for i in (1, 2, 4)]
    assert expand_braces("itrs-{scaling-{1,2},45nm-4}") == [
        "itrs-scaling-1",
        "itrs-scaling-2",
        "itrs-45nm-4",
    ]
    assert expand_braces("a{x{1..2},y}b") == ["ax1b", "ax2b", "ayb"]
    # the bound counts the names of uneven groups (a share per item refused this one)
    assert len(expand_braces("m{1,{2,3,4}}-{1..1000}")) == 4000
    assert expand_braces("x{a,{b,c}}", limit=3) == ["xa", "xb", "xc"]
    for text, message in [
        ("x{1..3}{", "1 '{' not closed"),
        ("a}b{", "'}' at 1 closes no '{'"),
        ("a{1,{2}", "1 '{' not closed"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(f"{text!r}: {message}")):
            expand_braces(text)


def test_brace_expansion_is_bounded_before_it_is_built():
    import time

    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="gives more than 4096 names"):
        expand_braces("itrs-scaling-{1..100000000}")
    with pytest.raises(ConfigError, match="more than"):
        expand_braces("a{1..100}{1..100}")
    assert time.perf_counter() - t0 < 1.0
    assert len(expand_braces("m{1..64}x{1..64}")) == 4096


def test_grid_product_keeps_the_order_written_and_its_size_is_known_before():
    grid = {"b": [1, 2], "a": ["x", "y", "z"]}
    combos = grid_product(grid)
    assert combos[:2] == [{"b": 1, "a": "x"}, {"b": 1, "a": "y"}]
    assert len(combos) == grid_size(grid) == 6
    assert grid_product({}) == [{}] and grid_size({}) == 1


def test_unknown_keys_are_errors():
    base = {
        "name": "t",
        "workloads": [{"generator": "fib"}],
        "machines": ["itrs-scaling-2"],
        "schedulers": ["ws"],
    }
    assert SweepSpec.model_validate(base).seeds == [0]
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        SweepSpec.model_validate({**base, "seed": [1]})


@pytest.mark.parametrize("name", [[], 1.5, {"a": 1}])
def test_a_machine_name_that_is_no_text_is_refused_as_such(name):
    # str() made it a preset name: name: [] was "machine '[]': no such preset or file".
    spec = {
        "name": "t",
        "workloads": [{"generator": "fib"}],
        "machines": [{"name": name}],
        "schedulers": ["ws"],
    }
    with pytest.raises(ValueError, match=r"machines\.0\.name\s+Input should be a valid string"):
        SweepSpec.model_validate(spec)


@pytest.mark.parametrize(
    ("where", "entry", "said"),
    [
        ("workloads.0.name", {"workloads": [{"generator": "fib", "name": "a\nb"}]}, "'\\n'"),
        ("machines.0.label", {"machines": [{"name": "itrs-scaling-2", "label": "x\ty"}]}, "'\\t'"),
        ("schedulers.0.label", {"schedulers": [{"name": "ws", "label": "ws\x00"}]}, "'\\x00'"),
    ],
)
def test_a_label_is_one_line_of_text(where, entry, said):
    # a newline in a label broke the results table's row in two
    spec = {
        "name": "t",
        "workloads": [{"generator": "fib"}],
        "machines": ["itrs-scaling-2"],
        "schedulers": ["ws"],
        **entry,
    }
    with pytest.raises(ValueError, match=re.escape(where)) as err:
        SweepSpec.model_validate(spec)
    assert f"holds the control character {said}: a label is one line of text" in str(err.value)


def test_a_label_is_not_empty_and_may_be_any_script():
    spec = {
        "name": "t",
        "workloads": [{"generator": "fib"}],
        "machines": ["itrs-scaling-2"],
        "schedulers": [{"name": "ws", "label": ""}],
    }
    # an empty one named nothing and was taken for the default
    with pytest.raises(ValueError, match=r"schedulers\.0\.label\s+an empty label"):
        SweepSpec.model_validate(spec)
    spec["schedulers"] = [{"name": "ws", "label": "wörk-stealing (π)"}]
    assert SweepSpec.model_validate(spec).schedulers[0].label == "wörk-stealing (π)"
