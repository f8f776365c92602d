"""Hypothesis profiles for the property tests.

``ci`` (the default, and what ``make test`` and CI run): derandomized, a fixed number of examples
per property, no example database, so every run on every machine draws the same examples and gives
the same result.  ``deep`` (``make test-deep``): random draws, ``RECLAIM_DEEP_EXAMPLES`` (default
5,000) examples per property, failures kept in ``.hypothesis/`` to replay.  Every counterexample
either profile finds is kept as an ``@example`` or a hand-checked case.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("RECLAIM_HYPOTHESIS_PROFILE", "ci")
DEEP_EXAMPLES = int(os.environ.get("RECLAIM_DEEP_EXAMPLES", "5000"))


def register() -> None:
    quiet = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
    settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                              suppress_health_check=quiet)
    settings.register_profile("deep", derandomize=False, deadline=None, max_examples=DEEP_EXAMPLES,
                              print_blob=True, suppress_health_check=quiet)
    if PROFILE not in ("ci", "deep"):
        raise ValueError(f"RECLAIM_HYPOTHESIS_PROFILE must be 'ci' or 'deep', not {PROFILE!r}")
    settings.load_profile(PROFILE)


def examples(ci: int) -> int:
    """Examples per property: ``ci`` under the CI profile, the deep count under ``deep``."""
    return ci if PROFILE == "ci" else max(ci, DEEP_EXAMPLES)
