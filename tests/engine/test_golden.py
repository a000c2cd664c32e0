"""The engine reproduces the golden WS and PDF results of the single-job engine bit for bit,
through :func:`simsched.run` and through the job-set path (one job under ``all``)."""

from __future__ import annotations

import json

import pytest

from tests.engine.golden_cases import CASES, GOLDEN, case_id, digest, run_case

_GOLDEN = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_single_job_matches_golden(case):
    got = digest(run_case(case))
    want = _GOLDEN[case_id(case)]
    assert got == want
