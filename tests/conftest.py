"""Shared fixtures: every random test draws from a seeded RNG and prints the seed.

Set BLOOMKIT_TEST_SEED to replay a failure.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest


def pytest_report_header(config: pytest.Config) -> str:
    return f"bloomkit test seed base: {_base_seed()} (set BLOOMKIT_TEST_SEED to replay)"


def _base_seed() -> int:
    env = os.environ.get("BLOOMKIT_TEST_SEED")
    return int(env) if env else random.SystemRandom().randrange(2**32)


_BASE = _base_seed()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> Iterator[random.Random]:
    """A random.Random seeded per test; the seed is printed when the test fails."""
    seed = (_BASE + sum(map(ord, request.node.nodeid))) % 2**32
    print(f"[rng seed {seed} = BLOOMKIT_TEST_SEED={_BASE} for {request.node.nodeid}]")
    yield random.Random(seed)
