"""Marginal-based synthesis: measure low-order marginals with noise, make them consistent, and
update records until they match (PrivSyn, Zhang et al. 2021; DPSyn, Li, Li & Wang 2020)."""

from .marginal import Marginal

__all__ = ["Marginal"]
