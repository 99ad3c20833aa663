"""The risk-weighted pseudo-posterior mechanism with range-restricted privacy (S-001; METHODS.md §3).

:mod:`.synthesizer` (the method, its statement), :mod:`.mechanism` (fit, weights, Lipschitz bounds,
range standards), :mod:`.models` (record models on NumPyro), :mod:`.design` (the design matrix).
JAX and NumPyro are imported only when a release runs.
"""

from .synthesizer import PseudoPosteriorSynthesizer

__all__ = ["PseudoPosteriorSynthesizer"]
