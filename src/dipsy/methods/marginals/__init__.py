"""Marginal-based synthesis: measure low-order marginals with noise, make them consistent, and
update records until they match (PrivSyn, Zhang et al. 2021; DPSyn, Li, Li & Wang 2020).

- :mod:`.marginal` — the value object, one marginal's counts;
- :mod:`.selection` — dependency scores, greedy choice of pairs, clique merging (PrivSyn §4);
- :mod:`.consistency` — consistent, non-negative marginals (PrivSyn §4.3);
- :mod:`.gum` — records updated toward the marginals (GUM, PrivSyn §5);
- :mod:`.privsyn` — the ``privsyn`` method;
- :mod:`.dpsyn` — the ``dpsyn`` method.

Both measure through a session (:mod:`dipsy.privacy.session`): what is fixed in their plans, and
an adaptive total for what noisy values choose; their models keep only noisy outputs.
"""

from .consistency import make_consistent
from .gum import StepDecay, initial_records, update_records
from .marginal import Marginal

__all__ = ["Marginal", "StepDecay", "initial_records", "make_consistent", "update_records"]
