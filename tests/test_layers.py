"""dipsy's modules in layers, each importing only from its own layer and those below it.

From the bottom: ``base`` (errors, paths, terminal, interrupts, permissions, version: what every
layer may use) → ``domain`` (the public domain, and the formula grammar its declared analyses are
written in) → ``engine`` (the only code that reads the confidential records) → ``privacy``
(budgets, mechanisms, sessions, the ledger) → ``methods`` (the synthesizers, and the DP discovery
of a domain) → ``release`` (a request, its forecast, the release written and the domain files
written) → ``evaluation`` (metrics and reports, with the combining rules they use) → ``api`` (the
Python API and the package's façade) → ``audit`` (the privacy audit, run by the command line) → ``cli``.

Every import counts, at the top of a module or inside a function or an ``if TYPE_CHECKING:``
block: an import hidden in a function still ties the two modules together. The map below places
every module; a new module fails :func:`test_every_module_is_placed` until it is placed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import dipsy

LAYERS = ("base", "domain", "engine", "privacy", "methods", "release", "evaluation", "api", "audit", "cli")

#: Every module of dipsy, by its layer.
PLACED = {
    "base": """errors interrupts paths permissions terminal version""",
    "domain": """domain domain.codec domain.columns domain.discovered domain.domain domain.limits domain.missing
                 domain.rules domain.validation domain.analyses formula""",
    "engine": """engine engine.agency engine.base engine.copies engine.duckdb_engine engine.files engine.fingerprint
                 engine.numpy_engine engine.owner engine.spark_codes engine.spark_engine""",
    "privacy": """privacy privacy.accountant privacy.audit privacy.budget privacy.composition privacy.conversions privacy.known
                  privacy.ledger privacy.ledger_records privacy.loss privacy.measurement privacy.relation privacy.rng
                  privacy.published privacy.samplers privacy.selection privacy.session""",
    "methods": """methods methods.base methods.counts methods.dirichlet_multinomial methods.discovery methods.dp_prior
                  methods.enforce methods.exponential_ecdf methods.gamma_poisson methods.histograms methods.laplace_sanitizer
                  methods.marginals methods.marginals.aim methods.marginals.consistency methods.marginals.declared methods.marginals.dpsyn
                  methods.marginals.descent methods.marginals.estimation methods.marginals.gum methods.marginals.junction
                  methods.marginals.marginal methods.marginals.mst
                  methods.marginals.nist_encoding methods.marginals.privsyn methods.marginals.refine methods.marginals.selection methods.marginals.sets methods.marginals.tree
                  methods.modips methods.modips.models methods.modips.noise methods.modips.synthesizer
                  methods.modips.vectorised methods.pseudo_posterior methods.pseudo_posterior.design
                  methods.pseudo_posterior.draws methods.pseudo_posterior.mechanism methods.pseudo_posterior.models
                  methods.pseudo_posterior.range_bound methods.pseudo_posterior.synthesizer methods.rdt
                  methods.rdt.calibration methods.rdt.features methods.rdt.sequential methods.rdt.synthesizer methods.rdt.trees""",
    "release": """authoring discovery_run forecast forecast_marginals forecast_noise release release_sets request""",
    "evaluation": """evaluation evaluation.compare evaluation.groups evaluation.marginals evaluation.missing evaluation.numeric evaluation.plots
                     evaluation.propensity evaluation.regressions evaluation.relationships evaluation.report evaluation.rules
                     evaluation.sdnist evaluation.sensitive evaluation.verdicts evaluation.yardsticks inference noise_aware""",
    "api": """dipsy api synthesizer""",
    "audit": """audit audit.cases audit.losses audit.record audit.runner""",
    "cli": """__main__ cli""",
}

#: Module name → layer ("dipsy" is the package itself).
LAYER = {(name if name == "dipsy" else f"dipsy.{name}"): layer for layer, names in PLACED.items() for name in names.split()}

SOURCE = Path(dipsy.__file__).parent


@dataclass(frozen=True)
class Import:
    """One import in ``module`` (line ``line``) of ``target`` (a dipsy module), naming ``name``
    (None for ``import dipsy.x``)."""

    module: str
    target: str
    name: str | None
    line: int


def modules(root: Path = SOURCE) -> dict[str, Path]:
    """Every module of the package at ``root``, by its dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(module: str, source: str, known: set[str], package: bool = False) -> list[Import]:
    """The imports of dipsy modules in ``source`` (the text of ``module``), wherever they stand.

    ``from P import n`` imports the module ``P.n`` when there is one, else the name ``n`` of ``P``.
    """
    found = []
    here = module.split(".") if package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dipsy":
                    found.append(Import(module, _nearest(alias.name, known), None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            origin = ".".join(base + ([node.module] if node.module else []))
            if origin.split(".")[0] != "dipsy":
                continue
            for alias in node.names:
                inner = f"{origin}.{alias.name}"
                if inner in known:
                    found.append(Import(module, inner, None, node.lineno))
                else:
                    found.append(Import(module, _nearest(origin, known), alias.name, node.lineno))
    return found


def _nearest(name: str, known: set[str]) -> str:
    """``name``, or the nearest package above it that is a known module."""
    parts = name.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def graph(root: Path = SOURCE) -> list[Import]:
    """Every import of a dipsy module in the package at ``root``."""
    found = modules(root)
    known = set(found)
    edges = []
    for name, path in found.items():
        edges += imports_of(name, path.read_text(encoding="utf-8"), known, package=path.name == "__init__.py")
    return edges


def backward(edges: list[Import], layer: dict[str, str]) -> list[str]:
    """The imports from a higher layer than the importing module's."""
    rank = {name: LAYERS.index(where) for name, where in layer.items()}
    return [
        f"{e.module} (layer {layer[e.module]}, line {e.line}) imports {e.target}"
        + (f".{e.name}" if e.name else "")
        + f" (layer {layer[e.target]})"
        for e in edges
        if e.module in rank and e.target in rank and rank[e.target] > rank[e.module]
    ]


def private(edges: list[Import]) -> list[str]:
    """The imports of another module's private names (``_x``; dunders such as ``__version__`` are public)."""

    def is_private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    return [
        f"{e.module} (line {e.line}) imports {e.name} from {e.target}"
        for e in edges
        if e.target != e.module and (e.name and is_private(e.name) or is_private(e.target.rsplit(".", 1)[-1]))
    ]


def circles(edges: list[Import]) -> list[list[str]]:
    """The modules that import each other, directly or through others (strongly connected components
    of two or more), by Tarjan's algorithm."""
    after: dict[str, set[str]] = {}
    for e in edges:
        if e.target != e.module:
            after.setdefault(e.module, set()).add(e.target)
            after.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(after[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(after):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def edges() -> list[Import]:
    return graph()


def test_every_module_is_placed():
    found = set(modules())
    assert sorted(found - set(LAYER)) == [], "place each new module in its layer in PLACED"
    assert sorted(set(LAYER) - found) == [], "remove modules that no longer exist from PLACED"


def test_no_import_from_a_higher_layer(edges):
    assert backward(edges, LAYER) == []


def test_no_private_name_crosses_modules(edges):
    assert private(edges) == []


def test_no_modules_import_each_other(edges):
    assert circles(edges) == []


def test_the_checks_can_fail(tmp_path):
    """A backward import inside a function, a private name and a circle are each found."""
    package = tmp_path / "dipsy"
    (package / "domain").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("from .domain import columns\n")
    (package / "domain" / "__init__.py").write_text("")
    (package / "domain" / "columns.py").write_text("from ..errors import _hidden\n\n\ndef f():\n    from ..api import run\n")
    (package / "api.py").write_text("import dipsy.domain.columns\n")
    found = graph(package)
    layer = {
        "dipsy": "api",
        "dipsy.errors": "base",
        "dipsy.domain": "domain",
        "dipsy.domain.columns": "domain",
        "dipsy.api": "api",
    }
    assert backward(found, layer) == [
        "dipsy.domain.columns (layer domain, line 5) imports dipsy.api.run (layer api)",
        "dipsy.errors (layer base, line 1) imports dipsy.domain.columns (layer domain)",
    ]
    assert private(found) == ["dipsy.domain.columns (line 1) imports _hidden from dipsy.errors"]
    assert circles(found) == [["dipsy.api", "dipsy.domain.columns", "dipsy.errors"]]
