"""Shared test configuration."""

from hypothesis import HealthCheck, settings

# Shared machines are slow and uneven: no per-example deadlines, fixed example counts.
settings.register_profile(
    "project",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile("project")
