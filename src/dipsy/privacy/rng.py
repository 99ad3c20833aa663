"""Randomness: one source per run, never module-level state.

A :class:`Randomness` carries two things:

- ``numpy``: a NumPy ``Generator`` for the floating-point draws (posterior gamma and multinomial
  draws, uniform draws inside bins). Without a seed its bit generator is ChaCha20 (``randomgen``;
  Bernstein 2008, 20 rounds) keyed with 256 bits from the operating system's CSPRNG: a stream
  cipher's output, which nobody without the key can predict or regenerate — unlike PCG64, whose
  state can be recovered from its output;
- :meth:`Randomness.below`: exact uniform integers for the exact noise samplers of
  :mod:`dipsy.privacy.samplers`, drawn from ``os.urandom`` unless a seed is given.

With a seed, both come from NumPy's PCG64 seeded with it: the run is reproducible, the seed is
recorded, and so anyone can regenerate the noise — a seeded release is a *test release*, not
differentially private, and its statement says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from randomgen import ChaCha

from ..errors import DipsyError

_WORD = 2**64


@dataclass(frozen=True, eq=False)
class Randomness:
    """The randomness of one run.

    >>> r = Randomness.from_seed(3)
    >>> bool(np.all(r.below(np.array([1, 2, 10**18], dtype=np.uint64)) < [1, 2, 10**18]))
    True
    """

    seed: int | None
    numpy: np.random.Generator

    @classmethod
    def from_seed(cls, seed: int | None = None) -> Randomness:
        if seed is None:
            return cls(None, np.random.Generator(ChaCha(key=int.from_bytes(os.urandom(32), "little"), rounds=20)))
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise DipsyError(f"seed must be a whole number >= 0, got {seed!r}", "pass --seed with e.g. 2026, or leave it out")
        return cls(int(seed), np.random.default_rng(int(seed)))

    @property
    def secure(self) -> bool:
        """Whether the exact samplers draw from the operating system's secure generator."""
        return self.seed is None

    def below(self, bound: np.ndarray | int, size: int | None = None) -> np.ndarray:
        """Uniform integers in ``[0, bound)``, exactly (``bound`` in ``[1, 2**64)``, per element).

        Secure mode uses rejection on 64-bit words from ``os.urandom``: a word ``w`` is kept when
        ``w < 2**64 - (2**64 mod bound)``, so ``w mod bound`` is exactly uniform.
        """
        bound = np.asarray(bound, dtype=np.uint64)
        if size is not None:
            bound = np.broadcast_to(bound, (size,))
        if np.any(bound == 0):
            raise ValueError("bound must be at least 1")
        if not self.secure:
            return self.numpy.integers(0, bound, dtype=np.uint64, endpoint=False)
        flat = bound.reshape(-1)
        out = np.empty(flat.shape, dtype=np.uint64)
        # (2**64 - b) mod b == 2**64 mod b, in uint64 arithmetic
        limit = np.uint64(0) - (np.uint64(0) - flat) % flat  # 2**64 - (2**64 mod b), 0 meaning 2**64
        pending = np.arange(flat.size)
        while pending.size:
            words = np.frombuffer(os.urandom(8 * pending.size), dtype=np.uint64)
            lim = limit[pending]
            keep = (lim == 0) | (words < lim)
            out[pending[keep]] = words[keep] % flat[pending[keep]]
            pending = pending[~keep]
        return out.reshape(bound.shape)


def make_rng(seed: int | None = None) -> np.random.Generator:
    """A fresh NumPy generator: from ``seed`` when given, else from the operating system.

    >>> int(make_rng(1).integers(10)) == int(make_rng(1).integers(10))
    True
    """
    return Randomness.from_seed(seed).numpy
