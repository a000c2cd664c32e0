"""One coercion routine for every kind of parameter (generators, schedulers)."""

from __future__ import annotations

import pytest

from simsched.errors import ConfigError
from simsched.params import coerce
from simsched.schedulers import get_scheduler
from simsched.workloads import WORKLOADS


@pytest.mark.parametrize(
    "value,kind,want",
    [
        ("2^20", int, 1 << 20),
        ("1<<4", int, 16),
        (8.0, int, 8),
        ("yes", bool, True),
        (0, bool, False),
        ("2.5", float, 2.5),
        ("auto", str, "auto"),
    ],
)
def test_accepted_spellings(value, kind, want):
    assert coerce(value, kind, "p") == want


@pytest.mark.parametrize(
    "value,kind", [(True, int), (2.5, int), ("x", int), ("maybe", bool), ("inf", float)]
)
def test_refused_values_name_the_parameter(value, kind):
    with pytest.raises(ConfigError, match="^p: expected"):
        coerce(value, kind, "p")


def test_schedulers_and_workloads_refuse_the_same_spellings():
    """An integer parameter given as 2.5 is refused by a generator and by a scheduler."""
    with pytest.raises(ConfigError, match="mergesort: parameter n: expected an integer"):
        WORKLOADS["mergesort"].resolve({"n": 2.5})
    cls = get_scheduler("cab")
    ints = [k for k, v in cls.param_defaults.items() if type(v) is int]
    assert ints, "cab declares an integer parameter"
    with pytest.raises(ConfigError, match=f"scheduler 'cab': {ints[0]}: expected an integer"):
        cls.resolve_params({ints[0]: 2.5})
    assert cls.resolve_params({ints[0]: "2^3"})[ints[0]] == 8
