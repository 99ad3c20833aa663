"""modips — model-based differentially private synthesis (Liu 2016, arXiv 1606.08052; Bowen & Liu, S-003).

- :mod:`.synthesizer`: the :class:`Modips` synthesizer (register it as ``"modips"``) and its model;
- :mod:`.models`: the four models — sufficient statistics, derived sensitivities and bounds,
  posterior and record draws;
- :mod:`.noise`: the Laplace mechanism, the budget inside a set (split / non-split), thresholding
  and truncation (and what truncation costs);
- :mod:`.vectorised`: array-level functions for simulation studies (``reps × m`` sets at once);
- :mod:`.data`: reading the needed columns through an engine.
"""

from .synthesizer import Modips, ModipsModel, choose_model
from .vectorised import bernoulli_sets, mixed_sets, multinomial_sets, normal_sets

__all__ = ["Modips", "ModipsModel", "bernoulli_sets", "choose_model", "mixed_sets", "multinomial_sets", "normal_sets"]
