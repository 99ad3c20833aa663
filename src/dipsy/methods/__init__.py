"""The registry of synthesis methods, by name (what ``dipsy methods`` lists)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DipsyError
from .base import ADD_REMOVE, SUBSTITUTE, Model, Option, Plan, Statement, Synthesizer
from .dirichlet_multinomial import DirichletMultinomial

REGISTRY: dict[str, type[Synthesizer]] = {cls.name: cls for cls in (DirichletMultinomial,)}


@dataclass(frozen=True)
class MethodInfo:
    """One line of the registry: name, one-line summary, guarantee and options."""

    name: str
    summary: str
    definition: str
    neighbouring: str
    options: tuple[str, ...]


def get(name: str) -> type[Synthesizer]:
    """The method called ``name``, or an error that lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise DipsyError(f"unknown method {name!r}", f"choose one of: {', '.join(REGISTRY)} (see 'dipsy methods')") from None


def methods() -> list[MethodInfo]:
    """Every registered method.

    >>> [m.name for m in methods()]
    ['dirichlet-multinomial']
    """
    return [
        MethodInfo(c.name, c.summary, c.definition, c.neighbouring, tuple(f"{o.name}: {o.help}" for o in c.options))
        for c in REGISTRY.values()
    ]


__all__ = ["ADD_REMOVE", "SUBSTITUTE", "MethodInfo", "Model", "Option", "Plan", "Statement", "Synthesizer", "get", "methods"]
