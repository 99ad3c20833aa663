"""modips — model-based differentially private synthesis (Liu 2016, arXiv 1606.08052; Bowen & Liu, S-003).

- :mod:`.synthesizer`: the :class:`Modips` synthesizer (registered as ``"modips"``): its plan (one
  measurement of the sanitized sufficient statistics per set), the query that reads them through
  the engine, and its model (the measured statistics; posterior and records by post-processing);
- :mod:`.models`: the four models — sufficient statistics, derived sensitivities and bounds,
  posterior and record draws;
- :mod:`.noise`: the mechanism (:class:`~.noise.Sanitization`): Laplace noise, the budget inside a
  set (split / non-split), thresholding and truncation (and what truncation costs, in its declared
  cost);
- :mod:`.vectorised`: array-level functions for simulation studies (``reps × m`` sets at once, the
  same mechanism on statistics the caller passes).
"""

from .synthesizer import Modips, ModipsModel, choose_model
from .vectorised import bernoulli_sets, mixed_sets, multinomial_sets, normal_sets

__all__ = ["Modips", "ModipsModel", "bernoulli_sets", "choose_model", "mixed_sets", "multinomial_sets", "normal_sets"]
