"""Running a domain discovery: charge first, read inside charged measurements, write the domain.

The order is :func:`dipsy.api.run`'s:

1. before any read of a value: the columns to count are checked against the data's header or schema
   (metadata), and the bins columns — fully declared once their public grid is their bins — are
   validated against the domain, the one read before the charge that a release also makes (a bad
   row stops the run; with ``on_invalid="drop"`` such rows are left out of the histograms);
2. the plan's spends are reserved in the ledger under method ``domain-discovery`` (``guarantee``
   ``"test"`` when seeded), before anything is read;
3. each measurement runs in a :class:`~dipsy.privacy.session.Session`, which charges it, then reads
   (value counts from an engine over the raw columns, histograms from one over the gridded ones);
4. the domain is built from the noisy outputs only (post-processing), written by ``on_result``,
   and the reservation confirmed; a failure before the file is in place (``on_result.visible``,
   :class:`~dipsy.authoring.DomainFile`) cancels it, a kill leaves it counted.
"""

from __future__ import annotations

import copy
import textwrap
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from .domain.discovered import DiscoveredColumn, Discovery
from .domain.domain import Domain, load_yaml
from .domain.missing import Missing, code_key
from .engine import engine_for
from .errors import DataError, DipsyError, DomainError
from .interrupts import held
from .methods.discovery import METHOD, DiscoveryPlan, PartitionSelection, ValueCountsQuery, quantile_edges
from .privacy.accountant import Spend
from .privacy.budget import ApproxDP, Budget, PureDP
from .privacy.composition import total_as
from .privacy.ledger import take_back
from .privacy.measurement import DiscreteLaplace
from .privacy.rng import Randomness
from .privacy.session import Session
from .version import __version__


@dataclass(frozen=True)
class DiscoveryResult:
    """What a discovery released and charged.

    ``categories`` and ``bins`` map each column to what was released (an empty tuple of categories:
    no value passed the threshold, and the column's categories stay TODO); ``text`` is the domain
    file, ``domain`` its :class:`Domain` (None while a TODO is left); ``spends`` what was charged
    under ``relation`` (their composed ``total``); ``measurements`` as a release states them.
    """

    release_id: str
    dataset_id: str
    categories: dict
    bins: dict
    discovery: Discovery | None
    text: str
    domain: Domain | None
    spends: tuple[Spend, ...]
    total: Budget
    measurements: tuple[dict, ...]
    seed: int | None

    @property
    def left(self) -> tuple[str, ...]:
        """Columns whose categories stay TODO (no value passed the threshold)."""
        return tuple(c for c, v in self.categories.items() if not v)


def run_discovery(
    data: Any,
    plan: DiscoveryPlan,
    *,
    dataset_id: str,
    ledger: Any = None,
    seed: int | None = None,
    on_invalid: str = "error",
    source: str = "",
    on_result: Callable[[DiscoveryResult], Any] | None = None,
) -> DiscoveryResult:
    """Run ``plan`` against ``data`` (a CSV/Parquet path or a DataFrame), charged to ``ledger``.

    ``dataset_id`` names the data set in the ledger and in the domain's ``discovered`` block (never
    a hash of the file: the domain is published with every release). ``on_result`` writes the
    domain before the reservation is confirmed.
    """
    rand = Randomness.from_seed(seed)
    raw = engine_for(data, plan.raw, "error") if plan.raw is not None else None
    gridded = engine_for(data, plan.grid, on_invalid) if plan.grid is not None else None
    try:
        for m in plan.categories:  # metadata only: the header, or the Parquet schema
            column = m.query_as(ValueCountsQuery).column
            if raw is None:  # plan_discovery gives a raw domain whenever it counts categories
                raise DipsyError("the discovery plan counts categories and has no raw domain", "build it with plan_discovery")
            if not raw.has_column(column):
                raise DataError(f"the data have no column {column!r}", "check the skeleton's column names against the data")
        if gridded is not None:
            gridded.ensure_valid()  # the one read before the charge, as a release's (rows against the public grid)
        release_id = uuid.uuid4().hex
        spends = tuple(Spend(m.label, m.cost) for m in plan.measurements)
        charged = writing = False
        try:
            if ledger is not None:  # committed before any read: a killed run may over-count, never under-count
                with held():  # the charge and the note of it: an interruption comes after both or neither
                    ledger.reserve(
                        dataset_id,
                        release_id,
                        METHOD,
                        spends,
                        plan.relation,
                        guarantee="test" if seed is not None else "dp",
                        dataset_id_given=True,
                    )
                    charged = True
            found = _measured(raw, plan.categories, plan, rand)
            noisy = _measured(gridded, plan.bins, plan, rand)
            result = _result(plan, found, noisy, release_id, dataset_id, ledger, seed, __version__, source, spends)
            writing = True  # from here the file may reach its place: on_result's ``visible`` says (without one, it may have)
            if on_result is not None:
                on_result(result)
        except BaseException as e:
            if charged and not (writing and getattr(on_result, "visible", True)):
                take_back(ledger, release_id, e)
            raise
    finally:
        for engine in (raw, gridded):
            getattr(engine, "close", lambda: None)()
    if ledger is not None:
        ledger.confirm(release_id)
    return result


def _measured(engine: Any, measurements: tuple, plan: DiscoveryPlan, rand: Randomness) -> list:
    """Run ``measurements`` in one session over ``engine``: each charged, then read."""
    if not measurements:
        return []
    zero = ApproxDP(0.0, 0.0) if any(isinstance(m.cost, ApproxDP) for m in measurements) else PureDP(0.0)
    session = Session(engine, total_as(zero, [m.cost for m in measurements]), plan.relation, rand, measurements)
    try:
        return [session.measure(m) for m in measurements]
    finally:
        session.close()


def _without_codes(values: list, spec: Any) -> list:
    """The discovered values less the column's declared missing codes (post-processing by the
    public declaration): a code may not also be a category, and a code is no value to list."""
    declared = spec.get("missing") if isinstance(spec, dict) else None
    if declared is None:
        return values
    try:
        missing = Missing.from_dict(declared)
    except DomainError:
        return values  # the written domain's own check reports it, naming the column
    codes = {code_key(code) for code, _ in missing.codes}
    return [v for v in values if (v if isinstance(v, str) else float(v)) not in codes]


def _result(
    plan: DiscoveryPlan,
    found: list,
    noisy: list,
    release_id: str,
    dataset_id: str,
    ledger: Any,
    seed: int | None,
    version: str,
    source: str,
    spends: tuple[Spend, ...],
) -> DiscoveryResult:
    """The domain from the noisy outputs (post-processing only) and its ``discovered`` block."""
    spec = copy.deepcopy(dict(plan.spec))
    columns = spec["columns"] = dict(spec["columns"])
    key = {str(k): k for k in columns}
    categories, bins, recorded = {}, {}, []
    for m, values in zip(plan.categories, found):
        name = m.query_as(ValueCountsQuery).column
        selection = m.mechanism_as(PartitionSelection)
        values = _without_codes(values, columns[key[name]])
        categories[name] = values
        if values:
            columns[key[name]] = {**columns[key[name]], "categories": [_Quoted(v) if isinstance(v, str) else v for v in values]}
            recorded.append(
                _recorded(
                    name,
                    "categories",
                    m,
                    f"DP partition selection (Korolova et al. 2009; Gopi et al. 2020; "
                    f"Desfontaines et al. 2022): discrete Laplace noise of scale {selection.scale} on the count "
                    f"of each value that occurs, the values whose noisy count exceeds {selection.threshold} released",
                )
            )
    for r, m, counts in zip(plan.requests, plan.bins, noisy):
        name = r.column.name
        bins[name] = quantile_edges(counts, r.grid, r.k)
        columns[key[name]] = {**columns[key[name]], "bins": list(bins[name])}
        recorded.append(
            _recorded(
                name,
                "bins",
                m,
                f"DP quantiles: a noisy histogram on {len(r.grid) - 1} "
                f"{'log-spaced' if r.log else 'equal-width'} cells of [{r.column.lower}, {r.column.upper}] "
                f"(discrete Laplace, scale {m.mechanism_as(DiscreteLaplace).scale}), {r.k} bins at equal noisy mass, edges on the grid",
            )
        )
    discovery = None
    if recorded:
        discovery = Discovery(
            release_id,
            dataset_id,
            Path(ledger.path).name if ledger is not None else None,
            seed,
            version,
            datetime.now(UTC).isoformat(timespec="seconds"),
            tuple(recorded),
        )
        spec["discovered"] = discovery.to_dict()
    left = [c for c, v in categories.items() if not v]
    text = _header(source, discovery, left) + yaml.dump(spec, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    domain = None if left else Domain.from_dict(load_yaml(text, Path(source or "discovered.yaml")))  # as Domain.load reads it
    return DiscoveryResult(
        release_id,
        dataset_id,
        categories,
        bins,
        discovery,
        text,
        domain,
        spends,
        total_as(plan.total, [s.budget for s in spends]),
        tuple(m.describe() for m in plan.measurements),
        seed,
    )


def _recorded(name: str, field: str, m: Any, mechanism: str) -> DiscoveredColumn:
    cost = m.cost
    return DiscoveredColumn(
        name, field, cost.definition, cost.epsilon, getattr(cost, "delta", 0.0), m.relation.kind, m.relation.theta, mechanism
    )


def _header(source: str, discovery: Discovery | None, left: list[str]) -> str:
    text = f"Domain written by 'dipsy domain discover'{f' for {source}' if source else ''}."
    if discovery is not None:
        what = discovery.what()
        test = " It is a SEEDED TEST discovery, not private: never publish a release that uses it." if discovery.seeded else ""
        text += (
            f" {what[0].upper()}{what[1:]} were released by DP discovery {discovery.release_id} ({discovery.cost()}), "
            f"charged to data set {discovery.dataset_id!r}.{test} The 'discovered:' block at the end records it, and "
            "every release that uses these columns states it. Values held by few records are not discovered: rows "
            "holding them do not match this domain (--on-invalid error stops a release on them; --on-invalid drop "
            "leaves them out)."
        )
    if left:
        text += f" No value of {', '.join(left)} passed the threshold: its categories are still TODO, to declare from public knowledge."
    return "".join(f"# {line}\n" for line in textwrap.wrap(text, 96)) + "\n"


class _Quoted(str):
    """A category that is text: written quoted, so YAML reads it back as the same text."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Quoted, lambda dumper, v: dumper.represent_scalar("tag:yaml.org,2002:str", str(v), style="'"))
_Dumper.add_representer(list, lambda dumper, v: dumper.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))
