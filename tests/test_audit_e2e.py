"""The privacy audit (dipsy.audit): every registered method's measurements stay within their stated
costs on its worst-case pair, the audit could have said otherwise (every ceiling above its claim),
it flags the broken variant (half the noise or half the prior, the statement unchanged) of every
method at its default settings, and the release of D' replaying D's answers is the release of D —
which a method that reads the data outside its measurements fails.

Everything is seeded: each figure here is a fixed number, so a test that passes once passes always.
The sampled bounds hold with confidence 95 % (Clopper–Pearson at α/2 each side).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
from pathlib import Path

import numpy as np
import pytest

from dipsy.api import synthesize
from dipsy.audit import CASES, DRAWS, NOT_AUDITED, Case, audit, ceiling, format_table, lower_bound
from dipsy.audit.cases import ADDED, BINARY
from dipsy.audit.losses import checks
from dipsy.audit.record import Recorded, files, recorded
from dipsy.cli import audit_command, main
from dipsy.methods import REGISTRY
from dipsy.methods.laplace_sanitizer import LaplaceSanitizer
from dipsy.methods.marginals.sets import Composed, Parts
from dipsy.privacy import ZCDP, ApproxDP
from dipsy.privacy.measurement import DiscreteGaussian, DiscreteLaplace, Measurement, Table, Total
from dipsy.privacy.relation import ADD_REMOVE

AUDIT_PAGE = Path(__file__).resolve().parents[1] / "docs" / "privacy" / "audit.md"  # holds the audit table
SRC = Path(__file__).resolve().parents[1] / "src" / "dipsy"


def test_every_registered_method_has_a_worst_case():
    assert set(CASES) | set(NOT_AUDITED) == set(REGISTRY) and not set(CASES) & set(NOT_AUDITED)
    # only a local guarantee may go unaudited: every DP method has its worst case
    assert {REGISTRY[m].definition for m in NOT_AUDITED} == {"local"}


@functools.cache
def honest_audit(method: str):
    """``audit(method)`` as released, at its defaults: seeded, so every call returns the same figures; run once
    for the two tests that read it (each audit is a few thousand seeded releases)."""
    return audit(method)


@pytest.mark.parametrize("method", sorted(CASES))
def test_the_release_path_stays_within_its_claim(method):
    result = honest_audit(method)
    assert not result.broken and result.checks and result.replay.measurements > 0
    assert result.testable, format_table([result])  # every check could have failed: its ceiling is above its claim
    assert all(c.ceiling > c.stated for c in result.checks + (result.composed,))
    assert not result.flagged, format_table([result])
    assert result.replay.same, result.replay.differences


@pytest.mark.parametrize("method", sorted(CASES))
def test_the_audit_flags_half_the_noise(method):
    result = audit(method, broken=True)  # the default draws: what 'dipsy audit METHOD --broken' runs
    assert result.draws == DRAWS
    assert result.flagged, format_table([result])
    assert result.largest.found > result.largest.stated
    assert result.replay.same, result.replay.differences  # the broken mechanism still runs only inside the measurements


@pytest.mark.parametrize("method", ["laplace-sanitizer", "modips", "privsyn"])
def test_worst_case_pairs_attain_the_cost(method):
    # an honest measurement at a worst-case pair loses exactly its cost: the pair is a worst case
    result = honest_audit(method)
    assert result.largest.found == pytest.approx(result.largest.stated, rel=1e-9)


@pytest.mark.parametrize("method", sorted(CASES))
def test_recording_draws_exactly_what_the_release_draws(method):
    # the recorder (and its reads of D') changes nothing: the recorded release is the seeded release
    case = CASES[method]
    with files(case) as folder:
        kwargs = dict(case.kwargs)
        options = {k: str(Path(folder) / v) if v in case.files else v for k, v in kwargs.pop("options", {}).items()}
        plain = synthesize(case.data, case.domain, case.method, seed=7, options=options, accept_noise=True, **kwargs)
        watched, log = recorded(case, 7, Path(folder))
    assert watched.tables[0].equals(plain.tables[0])
    assert watched.statement.claim() == plain.statement.claim() and len(log) == len(plain.statement.measurements)


def test_a_composed_measurement_is_checked_whole_and_part_by_part():
    g = DiscreteGaussian.for_budget(ZCDP(0.25))  # σ² = 2
    m = Measurement("set 1", Parts((Table(("x",)), Table(("y",)))), Composed((g, g), ZCDP(0.5), ("x", "y")), ADD_REMOVE)
    a, b = (np.array([1, 0]), np.array([0, 1])), (np.array([1, 1]), np.array([0, 1]))  # x moves by one, y not
    honest = checks(Recorded(m, m.mechanism, a, b))
    assert [c.label for c in honest] == ["set 1", "set 1 / x", "set 1 / y"]
    assert [c.found for c in honest] == pytest.approx([0.25, 0.25, 0.0], rel=1e-9) and not any(c.flagged for c in honest)
    broken = checks(Recorded(m, m.mechanism.weakened(0.5), a, b))
    assert [c.flagged for c in broken] == [True, True, False]  # ρ 1 against the whole's 0.5 and x's 0.25


def test_an_approximate_dp_cost_is_checked_by_its_privacy_profile():
    # dpsyn's adaptive step: a discrete Laplace and a discrete Gaussian charged as one (ε, δ)
    parts = (DiscreteLaplace.for_epsilon(1), DiscreteGaussian.for_budget(ZCDP(0.1)))
    m = Measurement("regime", Parts((Total(), Table(("x",)))), Composed(parts, ApproxDP(4.0, 1e-6), ("n", "x")), ADD_REMOVE)
    a, b = (np.array([1]), np.array([0, 1])), (np.array([2]), np.array([1, 1]))
    honest, broken = checks(Recorded(m, m.mechanism, a, b))[0], checks(Recorded(m, m.mechanism.weakened(0.5), a, b))[0]
    assert honest.measure == "δ(ε = 4)" and honest.found < 1e-9 and not honest.flagged
    assert broken.found > 1e-3 and broken.flagged


class Leaky(LaplaceSanitizer):
    """The Laplace sanitizer redrawing as many records as the data hold: n read outside any measurement."""

    name = "leaky"

    def fit(self, session, plan):
        model = super().fit(session, plan)
        return dataclasses.replace(model, n=int(session._engine.num_rows()))


def test_a_release_that_reads_the_data_outside_its_measurements_is_caught(monkeypatch):
    monkeypatch.setitem(REGISTRY, "leaky", Leaky)
    options = {"records": "redraw"}  # n records redrawn from the noisy table: the honest n is a noisy total
    case = Case(
        "leaky",
        BINARY,
        *ADDED,
        {"epsilon": 2.0, "neighbouring": "add-remove", "options": options},
        "reads n outside its measurements",
    )
    result = audit(case)
    assert not result.flagged  # its measurements are honest ...
    assert not result.replay.same and "the released tables differ" in result.replay.differences  # ... its release is not
    honest = audit(dataclasses.replace(case, method="laplace-sanitizer"))
    assert honest.replay.same


def _imports(path: Path) -> set[str]:
    """The dipsy modules ``path`` imports, as dotted names."""
    package = list(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            out.add(".".join(base + ([node.module] if node.module else [])))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_audit_sits_between_the_api_and_the_command_line():
    # DESIGN rule 9: the privacy core imports nothing above it; only the command line imports the audit
    above = ("methods", "release", "evaluation", "api", "audit", "cli")
    for path in (SRC / "privacy").glob("*.py"):
        assert not {m for m in _imports(path) if m.split(".")[1:2] and m.split(".")[1].startswith(above)}, path.name
    users = {
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*.py")
        if "audit" not in p.relative_to(SRC).parts[:1] and any(m.startswith("dipsy.audit") for m in _imports(p))
    }
    assert users == {"cli.py"}
    assert "dipsy.api" in _imports(SRC / "audit" / "record.py")


def test_clopper_pearson_bounds_and_their_ceiling():
    assert lower_bound(0, 0, 100) == -math.inf  # an event never seen proves nothing
    assert lower_bound(100, 0, 100) == pytest.approx(math.log(0.9637833 / 0.0362167), rel=1e-5)
    assert lower_bound(60, 40, 100, delta=0.6) == -math.inf  # δ swallows the difference
    assert ceiling(DRAWS) == lower_bound(DRAWS // 2, 0, DRAWS // 2) > 2 * 2.0  # far above the cases' ε = 2 claims
    old = ceiling(600, 1e-6)  # 600 whole releases at δ = 1e-6 could never refute privsyn's ε = 5.22
    assert old == pytest.approx(4.392, abs=1e-3) and old < 5.221


def test_the_command_line_audit_flags_the_broken_variant(capsys):
    assert main(["audit", "dp-prior", "--broken"]) == 0
    out = capsys.readouterr().out
    assert "| dp-prior | substitute | ε = 2 | broken (half the noise) |" in out and "| yes |" in out
    assert main(["audit", "pseudo-posterior"]) == 2 and "is not audited: local" in capsys.readouterr().err
    assert next(p.default for p in audit_command.params if p.name == "draws") == DRAWS


def test_the_docs_table_is_the_audit_of_every_method():
    rows = [
        r
        for r in AUDIT_PAGE.read_text(encoding="utf-8").splitlines()
        if r.startswith("| ") and ("| as released |" in r or "| broken (half the noise) |" in r)
    ]
    seen = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        seen[(cells[0], cells[3].startswith("broken"))] = cells[8]
    for method in CASES:
        assert seen.get((method, False)) == "no", f"docs/privacy/audit.md: {method} as released"
        assert seen.get((method, True)) == "yes", f"docs/privacy/audit.md: {method}'s broken variant is not shown caught"
