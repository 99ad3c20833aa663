"""No method reads a confidential statistic before its spend is charged (every method in the registry).

The confidential engine that :func:`dipsy.synthesize` opens is turned into a spy: every statistic
query (``num_rows``, ``contingency``, ``values`` and the backends' ``_cell_counts``/``_values``),
every validation pass, and every read of the engine's own state (its DataFrame, codes, DuckDB
connection, file path, validation report) from outside those methods is recorded in order, and so
is the moment the ledger accepts the charge. Then, for each method:

- with a ledger cap too small for the request (a cap given with the request, or one stored and
  nearly spent by an earlier release), the run raises :class:`BudgetError` and the engine saw
  nothing but the one validation pass that gives ``plan`` its n;
- with room in the ledger (the positive control, so the spy is known to see reads), the run
  succeeds and every read comes after the charge.

The validation pass is the one read before the charge, by design (``api.synthesize``: rows are
checked against the domain and, under substitution, n is handed to ``plan``). For methods private
under add/remove neighbours n is not public, so a test checks that the plan receives None and
not depend on n.

A method added to the registry is covered automatically (``CONFIGS`` falls back to categorical CE
columns and the budget its definition asks for); if it needs options, add a line to ``CONFIGS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

import dipsy
import dipsy.api
from dipsy.domain import Domain
from dipsy.errors import BudgetError
from dipsy.methods import REGISTRY, Model, Plan, Synthesizer
from dipsy.privacy import ApproxDP, Ledger, PureDP, Spend
from dipsy.privacy.budget import LocalDP
from dipsy.privacy.measurement import DiscreteLaplace, Measurement, Total
from dipsy.privacy.relation import ADD_REMOVE

#: Engine methods that answer statistic queries: the public interface and the backends' hooks.
QUERIES = ("num_rows", "contingency", "values", "_cell_counts", "_values")
#: The validation pass (the api's, before the charge; a method's own later calls are reads too).
VALIDATION = ("ensure_valid", "_validate")
#: Engine methods that touch its state without reading data (DuckDB's connection is closed).
BOOKKEEPING = ("close",)
#: Engine state a method may read freely: the public domain and the invalid-row policy.
PUBLIC_STATE = {"domain", "on_invalid"}


# -- the spy -------------------------------------------------------------------------------------------


@dataclass
class Recorder:
    events: list[str] = field(default_factory=list)
    classes: dict[type, type] = field(default_factory=dict)

    def spy_on(self, engine):
        """Turn ``engine`` (already built) into a spy of its own backend, recording into self."""
        base = type(engine)
        if base not in self.classes:
            self.classes[base] = self._spy_class(base)
        engine.__dict__["_spy_depth"] = 0
        engine.__class__ = self.classes[base]
        return engine

    def _spy_class(self, base: type) -> type:
        recorder = self

        def recorded(name: str) -> Callable:
            original = getattr(base, name)

            def method(self, *args, **kwargs):
                recorder.events.append(name)
                state = object.__getattribute__(self, "__dict__")
                state["_spy_depth"] += 1
                try:
                    return original(self, *args, **kwargs)
                finally:
                    state["_spy_depth"] -= 1

            return method

        def _reopen(self, domain):  # a re-binned engine over the same data is spied on too
            recorder.events.append("_reopen")
            state = object.__getattribute__(self, "__dict__")
            state["_spy_depth"] += 1
            try:
                return recorder.spy_on(base._reopen(self, domain))
            finally:
                state["_spy_depth"] -= 1

        def __getattribute__(self, name):
            state = object.__getattribute__(self, "__dict__")
            if state.get("_spy_depth", 0) == 0 and name in state and name not in PUBLIC_STATE | {"_spy_depth"}:
                recorder.events.append(f"attribute {name}")
            return base.__getattribute__(self, name)

        namespace = {name: recorded(name) for name in QUERIES + VALIDATION + BOOKKEEPING if hasattr(base, name)}
        namespace.update(_reopen=_reopen, __getattribute__=__getattribute__)
        return type(f"Spy{base.__name__}", (base,), namespace)

    def reads(self) -> list[str]:
        """Every event but the ledger's and the api's first validation pass."""
        events = [e for e in self.events if not e.startswith("ledger")]
        if events[:2] == list(VALIDATION):
            events = events[2:]
        return events


@pytest.fixture
def recorder(monkeypatch):
    rec = Recorder()
    real_engine_for = dipsy.api.engine_for
    monkeypatch.setattr(dipsy.api, "engine_for", lambda *a, **k: rec.spy_on(real_engine_for(*a, **k)))
    real_reserve = Ledger.reserve

    def reserve(self, *args, **kwargs):
        rec.events.append("ledger: asked")
        total = real_reserve(self, *args, **kwargs)
        rec.events.append("ledger: charged")
        return total

    monkeypatch.setattr(Ledger, "reserve", reserve)
    return rec


# -- one working invocation per method --------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """How to run one method: its data, domain and the rest of :func:`dipsy.synthesize`'s arguments."""

    data: Callable[[Path], pd.DataFrame]
    domain: Callable[[Path], Domain]
    kwargs: Callable[[Path], dict[str, Any]]


def ce(columns):
    return lambda tmp: pd.read_csv(CE_DATA)[columns]


def ce_domain(columns):
    return lambda tmp: Domain.load(CE_DOMAIN).project(columns)


def exposures(tmp: Path) -> str:
    path = tmp / "exposures.csv"
    pd.DataFrame({"Race": [1, 2, 3, 4, 5, 6], "exposure": [900.0, 80, 5, 40, 2, 10]}).to_csv(path, index=False)
    return str(path)


def public_half(columns, name="public.csv"):
    def make(tmp: Path) -> str:
        path = tmp / name
        pd.read_csv(CE_DATA)[columns].iloc[::2].to_csv(path, index=False)  # stands in for a public data set
        return str(path)

    return make


CATEGORICAL = ["UrbanRural", "Race"]
NUMERIC = ["Income", "Expenditure"]
MIXED = ["UrbanRural", "Race", "Income"]

CONFIGS: dict[str, Config] = {
    "dirichlet-multinomial": Config(ce(CATEGORICAL), ce_domain(CATEGORICAL), lambda t: {"epsilon": 5.0, "sets": 2}),
    "beta-binomial": Config(ce(["UrbanRural"]), ce_domain(["UrbanRural"]), lambda t: {"epsilon": 5.0}),
    "dp-prior": Config(ce(["Race"]), ce_domain(["Race"]), lambda t: {"epsilon": 5.0}),
    "gamma-poisson": Config(
        ce(["Race"]), ce_domain(["Race"]), lambda t: {"epsilon": 5.0, "options": {"exposures": exposures(t)}}
    ),
    "laplace-sanitizer": Config(ce(CATEGORICAL), ce_domain(CATEGORICAL), lambda t: {"epsilon": 1.0}),
    "perturbed-histogram": Config(ce(NUMERIC), ce_domain(NUMERIC), lambda t: {"epsilon": 1.0, "options": {"bins": 4}}),
    "smoothed-histogram": Config(ce(NUMERIC), ce_domain(NUMERIC), lambda t: {"epsilon": 1.0}),
    "exponential-ecdf": Config(
        lambda t: pd.DataFrame({"k": [5, 5, 7, 0, 10, 3]}),
        lambda t: Domain((dipsy.Column("k", "integer", lower=0, upper=10, bins=(0, 5, 10)),)),
        lambda t: {"epsilon": 1.0},
    ),
    "modips": Config(ce(["Income"]), ce_domain(["Income"]), lambda t: {"epsilon": 5.0, "options": {"model": "normal"}}),
    # few rounds and fitting steps (one round runs, after the one-way marginals): what is tested is the order
    # of reads, not the model; AIM's defaults (32 rounds here, 1000 steps) took 2 to 3 times the CPU a release
    "aim": Config(
        ce(CATEGORICAL),
        ce_domain(CATEGORICAL),
        lambda t: {"epsilon": 5.0, "delta": 1e-9, "options": {"rounds": 3, "iterations": 10, "final_iterations": 10}},
    ),
    # ρ directly: converting (ε, δ) to ρ is slow and not what is tested here
    "privsyn": Config(ce(MIXED), ce_domain(MIXED), lambda t: {"rho": 0.05, "delta": 1e-9, "options": {"iterations": 5}}),
    "dpsyn": Config(
        ce(MIXED), ce_domain(MIXED), lambda t: {"epsilon": 1.0, "delta": 1e-9, "options": {"public": public_half(MIXED)(t)}}
    ),
    "rdt": Config(
        ce(["UrbanRural", "Race"]),
        ce_domain(["UrbanRural", "Race"]),
        lambda t: {
            "epsilon": 1.0,
            "options": {"sensitive": "Race", "structure": public_half(["UrbanRural", "Race"])(t), "n_b": 50},
        },
    ),
    # short chains: what is tested is the order of reads, not the posterior
    "pseudo-posterior": Config(
        ce(["Expenditure", "UrbanRural"]),
        ce_domain(["Expenditure", "UrbanRural"]),
        lambda t: {"options": {"response": "log(Expenditure)", "chains": 2, "warmup": 300, "draws": 300}},
    ),
}

#: What a method the table does not know gets: categorical CE columns and its definition's budget.
BUDGETS = {
    "pure-DP": {"epsilon": 5.0},
    "zCDP": {"epsilon": 5.0, "delta": 1e-9},
    "approximate-DP": {"epsilon": 5.0, "delta": 1e-9},
}


#: Where the add/remove relation needs another invocation than the default one.
ADD_REMOVE_CONFIGS: dict[str, Config] = {
    "modips": Config(ce(["Race"]), ce_domain(["Race"]), lambda t: {"epsilon": 5.0, "options": {"model": "multinomial"}}),
    # targets from a public file: the confidential records' own public columns would show who is in the data
    "rdt": Config(
        ce(["UrbanRural", "Race"]),
        ce_domain(["UrbanRural", "Race"]),
        lambda t: {
            "epsilon": 1.0,
            "options": {
                "sensitive": "Race",
                "structure": public_half(["UrbanRural", "Race"])(t),
                "targets": public_half(["UrbanRural"], "targets.csv")(t),
                "n_b": 50,
            },
        },
    ),
}


def config(name: str, table: dict[str, Config] = CONFIGS) -> Config:
    if name in table:
        return table[name]
    if name in CONFIGS:
        return CONFIGS[name]
    return Config(ce(CATEGORICAL), ce_domain(CATEGORICAL), lambda t: dict(BUDGETS[REGISTRY[name].definition]))


def invocation(name: str, tmp: Path, backend: str):
    c = config(name)
    data, domain, kwargs = c.data(tmp), c.domain(tmp), c.kwargs(tmp)
    if backend == "duckdb":
        path = tmp / "confidential.csv"
        data.to_csv(path, index=False)
        data = path
    return data, domain, kwargs


METHODS = sorted(REGISTRY)
BACKENDS = ["numpy", "duckdb"]
#: Methods that may be run under add/remove neighbours, where n is not public.
ADD_REMOVE_METHODS = [m for m in METHODS if any(not r.fixes_n for r in REGISTRY[m].relations)]
GIVEN, STORED = "cap given with the request", "cap stored and nearly spent"
#: Methods whose guarantee is local (its cost measured from the data after the read, never counted
#: against a cap): their order of events is tested apart, below.
LOCAL_METHODS = [m for m in METHODS if REGISTRY[m].definition == "local"]
DP_METHODS = [m for m in METHODS if m not in LOCAL_METHODS]


# -- the tests ------------------------------------------------------------------------------------------


def earlier_release_leaving_little(ledger: Path) -> None:
    """A cap of (1, 1e-6) stored with an earlier release that spent ε = 0.999 of it."""
    led = Ledger(ledger)
    led.reserve("ds", "earlier", "test", [Spend("earlier release", PureDP(0.999))], ADD_REMOVE, cap=ApproxDP(1.0, 1e-6))
    led.confirm("earlier")


@pytest.mark.parametrize("how, backend", [(GIVEN, "numpy"), (STORED, "numpy"), (GIVEN, "duckdb")])
@pytest.mark.parametrize("method", DP_METHODS)
def test_a_refused_release_reads_nothing(method, how, backend, recorder, tmp_path):
    data, domain, kwargs = invocation(method, tmp_path, backend)
    ledger = tmp_path / "spy-ledger.sqlite"
    if how == GIVEN:
        kwargs["budget_cap"] = "1e-3,1e-10"  # (ε, δ): every definition counts against it, none fits
    else:
        earlier_release_leaving_little(ledger)
    recorder.events.clear()
    with pytest.raises(BudgetError, match="cap"):  # unseeded: a seeded (test) release is never checked against a cap
        dipsy.synthesize(data, domain, method=method, ledger=ledger, dataset_id="ds", accept_noise=True, **kwargs)
    assert "ledger: asked" in recorder.events and "ledger: charged" not in recorder.events
    reads = [e for e in recorder.events if e not in BOOKKEEPING]  # the refused run closes its engine
    assert reads == [*VALIDATION, "ledger: asked"], recorder.events  # validation, then the refusal
    earlier = [] if how == GIVEN else ["earlier"]
    assert [s["release_id"] for s in Ledger(ledger).spends("ds")] == earlier  # nothing more was recorded


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", DP_METHODS)
def test_with_room_every_read_comes_after_the_charge(method, backend, recorder, tmp_path):
    """The positive control: the spy sees the method's reads, and all of them follow the charge."""
    data, domain, kwargs = invocation(method, tmp_path, backend)
    ledger = tmp_path / "spy-ledger.sqlite"
    recorder.events.clear()
    release = dipsy.synthesize(data, domain, method=method, seed=1, ledger=ledger, dataset_id="ds", accept_noise=True, **kwargs)
    assert len(release.tables) >= 1
    events = recorder.events
    assert events[:4] == [*VALIDATION, "ledger: asked", "ledger: charged"], events[:6]
    reads = events[4:]
    assert any(e in QUERIES for e in reads), events  # the spy does see the method's reads
    assert not [e for e in reads if e.startswith("attribute ")], reads  # and nothing bypasses the engine's interface
    assert Ledger(ledger).spends("ds")


@pytest.mark.parametrize("method", LOCAL_METHODS)
def test_a_local_release_given_a_cap_is_refused_before_any_read(method, recorder, tmp_path):
    data, domain, kwargs = invocation(method, tmp_path, "numpy")
    ledger = tmp_path / "spy-ledger.sqlite"
    recorder.events.clear()
    with pytest.raises(BudgetError, match="the cap ε = 1 is a DP one"):
        dipsy.synthesize(data, domain, method=method, ledger=ledger, dataset_id="ds", budget_cap="1", accept_noise=True, **kwargs)
    assert recorder.events == [*VALIDATION], recorder.events
    assert not ledger.exists()


@pytest.mark.parametrize("method", LOCAL_METHODS)
def test_a_local_release_is_recorded_after_its_reads_and_never_counted(method, recorder, tmp_path):
    """Its ε_x is measured from the data, so it is recorded after the read — as ``local``, outside
    the DP total, which a nearly spent cap shows unchanged — against the data set's local cap (a
    data set with a DP cap refuses it, before any read, without one)."""
    data, domain, kwargs = invocation(method, tmp_path, "numpy")
    ledger = tmp_path / "spy-ledger.sqlite"
    earlier_release_leaving_little(ledger)
    recorder.events.clear()
    with pytest.raises(BudgetError, match="no cap for local releases"):
        dipsy.synthesize(data, domain, method=method, ledger=ledger, dataset_id="ds", accept_noise=True, **kwargs)
    assert recorder.events == [*VALIDATION], recorder.events
    recorder.events.clear()
    release = dipsy.synthesize(
        data, domain, method=method, ledger=ledger, dataset_id="ds", accept_noise=True, budget_cap="local=1000", **kwargs
    )
    events = recorder.events
    assert events[:2] == [*VALIDATION] and events[-2:] == ["ledger: asked", "ledger: charged"], events
    assert any(e in QUERIES for e in events[2:-2]), events
    assert release.statement.guarantee == "local" and release.statement.total.epsilon > 0
    rows = [r for r in Ledger(ledger).spends("ds") if r["release_id"] != "earlier"]
    assert rows and {r["guarantee"] for r in rows} == {"local"} and {r["definition"] for r in rows} == {"local"}
    total, local = Ledger(ledger).totals()
    assert total.spent == ApproxDP(0.999, 0.0) and total.local == 1
    assert local.spent == release.statement.total and local.cap == LocalDP(1000.0)


def test_some_methods_are_private_under_add_remove():
    assert {"privsyn", "laplace-sanitizer", "modips"} <= set(ADD_REMOVE_METHODS)


@pytest.mark.parametrize("method", ADD_REMOVE_METHODS)
def test_under_add_remove_the_plan_never_sees_n(method, tmp_path, monkeypatch):
    """n is not public under add/remove: the release path hands the plan None, and the plan needs no n."""
    kind = REGISTRY[method]
    c = config(method, ADD_REMOVE_CONFIGS)
    data, domain, kwargs = c.data(tmp_path), c.domain(tmp_path), c.kwargs(tmp_path)
    if kind.relations[0].fixes_n:
        kwargs["neighbouring"] = "add-remove"
    seen = []
    real_plan = kind.plan
    monkeypatch.setattr(kind, "plan", lambda self, n, d: seen.append(n) or real_plan(self, n, d))
    release = dipsy.synthesize(data, domain, method=method, seed=1, accept_noise=True, **kwargs)
    assert seen == [None]
    assert not any(p.startswith("n =") for p in release.statement.public)


class Leaky(Synthesizer):
    """A method that reads the engine's DataFrame behind its interface (what the spy must catch)."""

    name = "leaky"
    summary = "test only"
    definition = "pure-DP"

    def plan(self, n, domain):
        declared = Measurement(
            "leaky: a total it never measures", Total(), DiscreteLaplace.for_budget(self.budget), self.relation
        )
        return Plan((declared,), self.relation, self.public(n), "none", parameters={})

    def fit(self, session, plan):
        engine = session._engine
        rows = len(engine.frame)

        class Drawn(Model):
            sets = 1

            def sample(self, k, rand):
                return {name: np.zeros(rows, dtype=np.int64) for name in engine.domain.names}

        return Drawn()


def test_the_spy_sees_a_read_behind_the_engine_interface(recorder, tmp_path, monkeypatch):
    monkeypatch.setitem(REGISTRY, "leaky", Leaky)
    data, domain, _ = invocation("dirichlet-multinomial", tmp_path, "numpy")
    dipsy.synthesize(data, domain, method="leaky", epsilon=1.0, ledger=tmp_path / "l.sqlite", dataset_id="ds")
    assert recorder.events == [*VALIDATION, "ledger: asked", "ledger: charged", "attribute frame"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_release_forecast_to_be_noise_is_refused_before_the_charge(backend, recorder, tmp_path):
    """The forecast is made from the plan: the one validation pass (n for substitution), then the
    refusal — no read of a statistic, nothing asked of the ledger."""
    from dipsy.errors import NoiseError

    data, domain, kwargs = invocation("dirichlet-multinomial", tmp_path, backend)
    kwargs["epsilon"] = 0.05  # every CE categorical column: the prior outweighs the data
    ledger = tmp_path / "spy-ledger.sqlite"
    recorder.events.clear()
    with pytest.raises(NoiseError, match="essentially noise"):
        dipsy.synthesize(data, domain, method="dirichlet-multinomial", ledger=ledger, dataset_id="ds", **kwargs)
    assert recorder.events == [*VALIDATION], recorder.events
    assert not ledger.exists() or not Ledger(ledger).spends("ds")


@pytest.mark.parametrize("method", [m for m in DP_METHODS if not REGISTRY[m].relations[0].fixes_n])
def test_a_forecast_under_add_remove_reads_nothing(method, recorder, tmp_path):
    """Where n is not public the forecast opens no engine at all: the data may even be absent."""
    from dipsy.api import plan_forecast

    _, domain, kwargs = invocation(method, tmp_path, "numpy")
    kwargs.pop("seed", None)
    recorder.events.clear()
    result = plan_forecast(None, domain, method, **kwargs)  # the method's own relation: add/remove
    assert recorder.events == [] and result.verdict in ("useful", "weak", "noise", "unknown")
