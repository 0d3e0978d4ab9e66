"""Shared test configuration: hypothesis profiles.

``pytest --hypothesis-profile=deep`` runs twenty times more random cases.
"""
from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("default")
