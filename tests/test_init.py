"""The top-level package: lazy names visible to help() and dir(), API errors are SimschedErrors."""

from __future__ import annotations

import pydoc

import pytest

import simsched
from simsched.errors import SimschedError


def test_help_lists_the_api_and_the_subpackages():
    text = pydoc.render_doc(simsched, renderer=pydoc.plaintext)
    for name in ("run(", "compare(", "class RunResult", "__version__"):
        assert name in text, name
    for pkg in ("trace (package)", "engine (package)", "experiments (package)", "identity"):
        assert pkg in text, pkg
    assert {"run", "compare", "RunResult", "__version__"} <= set(dir(simsched))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trace": "missing.sst"}, "missing.sst: no such trace file"),
        ({"seed": -1}, "seed=-1: must be between 0"),
        ({"seed": 1.5}, "seed=1.5: expected an integer"),
        ({"window": -5}, "window=-5: must be between 0"),
    ],
)
def test_api_errors_are_simsched_errors(tmp_path, kwargs, message):
    args = {"trace": tmp_path / "missing.sst", "machine": "itrs-scaling-2", **kwargs}
    if kwargs.get("trace") == "missing.sst":
        args["trace"] = "missing.sst"
    with pytest.raises(SimschedError, match=message):
        simsched.run(**args)
    with pytest.raises(SimschedError):
        simsched.compare(args["trace"], "itrs-scaling-2", "ws,", seeds=1)
