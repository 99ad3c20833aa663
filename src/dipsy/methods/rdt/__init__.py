"""Random decision trees for synthetic sensitive columns (S-004; METHODS.md §5): the method, its
trees, and the leaf-size calibration of S-004 §5."""

from .synthesizer import RandomDecisionTrees

__all__ = ["RandomDecisionTrees"]
