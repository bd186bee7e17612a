"""Shared test configuration: a deterministic hypothesis profile sized for a 2-core CI machine."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
# .ci/package-check runs the whole suite a second time, from the sdist against the installed wheel: fewer examples
settings.register_profile("sdist", max_examples=8, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
