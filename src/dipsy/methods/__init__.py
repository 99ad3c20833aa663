"""The registry of synthesis methods, by name (what ``dipsy methods`` lists)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DipsyError
from .base import ADD_REMOVE, NEIGHBOURINGS, SUBSTITUTE, Model, Option, Plan, Statement, Synthesizer, build_statement
from .dirichlet_multinomial import BetaBinomial, DirichletMultinomial
from .dp_prior import DPPrior
from .exponential_ecdf import ExponentialECDF
from .gamma_poisson import GammaPoisson
from .histograms import PerturbedHistogram, SmoothedHistogram
from .laplace_sanitizer import LaplaceSanitizer
from .marginals.aim import AIM
from .marginals.dpsyn import DPSyn
from .marginals.mst import MST
from .marginals.privsyn import PrivSyn
from .modips import Modips
from .pseudo_posterior import PseudoPosteriorSynthesizer
from .rdt import RandomDecisionTrees

REGISTRY: dict[str, type[Synthesizer]] = {
    cls.name: cls
    for cls in (
        DirichletMultinomial,
        BetaBinomial,
        DPPrior,
        GammaPoisson,
        LaplaceSanitizer,
        PerturbedHistogram,
        SmoothedHistogram,
        ExponentialECDF,
        Modips,
        PrivSyn,
        DPSyn,
        MST,
        AIM,
        RandomDecisionTrees,
        PseudoPosteriorSynthesizer,
    )
}


@dataclass(frozen=True)
class MethodInfo:
    """One line of the registry: name, one-line summary, guarantee and options."""

    name: str
    summary: str
    definition: str
    neighbourings: tuple[str, ...]
    releases: tuple[str, ...]
    sets: str
    options: tuple[str, ...]


def get(name: str) -> type[Synthesizer]:
    """The method called ``name``, or an error that lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise DipsyError(f"unknown method {name!r}", f"choose one of: {', '.join(REGISTRY)} (see 'dipsy methods')") from None


#: The method of a release that names none. A budget of ε alone: the Dirichlet-multinomial over the
#: cross-tabulation (ε-DP; on a table too large for its budget the forecast refuses it before any
#: charge and names the marginal methods). A budget with δ or ρ: privsyn (ρ-zCDP), which measured the
#: closest two- and three-way marginals of dipsy's marginal methods and its peers' on Adult at
#: ε = 1, in seconds (docs/benchmarks/peers.md), and works on any number of columns.
DEFAULT_METHOD, DEFAULT_ZCDP_METHOD = "dirichlet-multinomial", "privsyn"


def default_method(delta: float | None = None, rho: float | None = None) -> str:
    """The method of a release that names none, from the kind of budget given (public input; see
    :data:`DEFAULT_METHOD`).

    >>> default_method(), default_method(delta=1e-9), default_method(rho=0.5)
    ('dirichlet-multinomial', 'privsyn', 'privsyn')
    """
    return DEFAULT_ZCDP_METHOD if delta is not None or rho is not None else DEFAULT_METHOD


def methods() -> list[MethodInfo]:
    """Every registered method.

    Examples
    --------
    >>> [m.name for m in methods()][:2]
    ['dirichlet-multinomial', 'beta-binomial']
    """
    return [
        MethodInfo(
            c.name,
            c.summary,
            c.definition,
            (c.neighbours_note,) if c.neighbours_note else tuple(r.name for r in c.relations),
            c.releases,
            c.sets_note(),
            tuple(f"{o.name}: {o.help}" for o in c.options),
        )
        for c in REGISTRY.values()
    ]


__all__ = [
    "ADD_REMOVE",
    "NEIGHBOURINGS",
    "SUBSTITUTE",
    "MethodInfo",
    "Model",
    "Option",
    "Plan",
    "Statement",
    "Synthesizer",
    "build_statement",
    "default_method",
    "get",
    "methods",
]
