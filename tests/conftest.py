"""Shared test settings: hypothesis profiles and small fixtures."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "simsched",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    max_examples=int(os.environ.get("SIMSCHED_HYPOTHESIS_EXAMPLES", "60")),
)
settings.load_profile("simsched")
