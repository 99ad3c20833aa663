"""Randomness: one NumPy ``Generator`` per run, never module-level state.

Without a seed the generator is seeded from the operating system's entropy source; a seed makes a
run reproducible and is recorded in the release.
"""

from __future__ import annotations

import numpy as np

from ..errors import DipsyError


def make_rng(seed: int | None = None) -> np.random.Generator:
    """A fresh generator: from ``seed`` when given, else from the operating system.

    >>> int(make_rng(1).integers(10)) == int(make_rng(1).integers(10))
    True
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise DipsyError(f"seed must be a whole number >= 0, got {seed!r}", "pass --seed with e.g. 2026, or leave it out")
    return np.random.default_rng(seed)
