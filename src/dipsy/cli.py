"""The ``dipsy`` command line: ``methods``, ``domain check``, ``synth``, ``budget show``.

Bad input ends with one line on standard error, ``error: <problem>; <fix>``, and exit code 2;
no output folder is left behind.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from . import __version__
from .api import synthesize
from .domain import Domain
from .engine import engine_for
from .errors import DipsyError
from .methods import NEIGHBOURINGS
from .methods import methods as list_methods
from .privacy import Ledger, default_ledger_path
from .release import FORMATS, check_target

out = Console(highlight=False, soft_wrap=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s", stream=sys.stderr)
    try:
        cli.main(args=argv, prog_name="dipsy", standalone_mode=False)
    except DipsyError as e:
        click.echo(f"error: {e}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("error: interrupted; nothing was released", err=True)
        return 130
    except click.ClickException as e:
        where = f" (see 'dipsy {e.ctx.command_path.split(' ', 1)[-1]} --help')" if getattr(e, "ctx", None) else ""
        click.echo(f"error: {e.format_message()}{where}", err=True)
        return 2
    return 0


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dipsy")
def cli() -> None:
    """Differentially private synthetic data with exact privacy statements."""


@cli.command()
def methods() -> None:
    """List the synthesis methods with their guarantees, one line each (options below)."""
    for m in list_methods():
        out.print(f"[bold]{m.name:<24}[/bold] {m.summary}")
        out.print(f"{'':24} {m.definition}; neighbours: {', '.join(m.neighbourings)}; releases: {', '.join(m.releases)}; {m.sets}")
        for option in m.options:
            out.print(f"{'':24} --option {option}")


@cli.group()
def domain() -> None:
    """Work with domain files."""


def _columns(values: tuple[str, ...]) -> list[str] | None:
    names = [c.strip() for v in values for c in v.split(",") if c.strip()]
    return names or None


@domain.command("check")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--domain", "domain_path", required=True, type=click.Path(path_type=Path), help="Domain file (YAML or JSON).")
@click.option("--columns", multiple=True, help="Columns to check (comma-separated or repeated); default all.")
@click.option("--on-invalid", type=click.Choice(["error", "drop"]), default="error", show_default=True, help="What to do with rows that do not match.")
def domain_check(data: Path, domain_path: Path, columns: tuple[str, ...], on_invalid: str) -> None:
    """Check DATA (CSV or Parquet) against a domain file."""
    scope = Domain.load(domain_path).project(_columns(columns))
    report = engine_for(data, scope, on_invalid).ensure_valid()
    if report.ok:
        out.print(f"ok: all {report.rows} rows match the domain ({len(scope)} columns)")
    else:
        out.print(f"{report.summary()}\n{report.invalid_rows} row(s) would be dropped; {report.valid_rows} kept")


@cli.command()
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--domain", "domain_path", required=True, type=click.Path(path_type=Path), help="Domain file (YAML or JSON).")
@click.option("--method", default="dirichlet-multinomial", show_default=True, help="Synthesis method (see 'dipsy methods').")
@click.option("--epsilon", default=None, help="Total privacy budget ε of the release (all sets together).")
@click.option("--delta", default=None, help="δ of an (ε, δ) budget, for zCDP and (ε, δ) methods (e.g. privsyn, dpsyn).")
@click.option("--rho", default=None, help="A ρ-zCDP budget instead of --epsilon/--delta, for zCDP methods.")
@click.option("--sets", default=1, show_default=True, type=click.IntRange(min=1), help="Number of synthetic sets m (each ε/m).")
@click.option("--columns", multiple=True, help="Columns to synthesize (comma-separated or repeated); default all.")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for reproducibility (recorded); default from the OS.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="parquet", show_default=True)
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE", help="Method option, e.g. alpha=10 (repeatable).")
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Folder to write the release into.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out folder.")
@click.option("--on-invalid", type=click.Choice(["error", "drop"]), default="error", show_default=True)
@click.option("--neighbouring", type=click.Choice(list(NEIGHBOURINGS)), default=None, help="Neighbouring relation, for methods private under either (default: the method's).")
@click.option("--release", "kind", type=click.Choice(["records", "table"]), default="records", show_default=True, help="Synthetic records, or the released table of cell counts.")
@click.option("--ledger", type=click.Path(path_type=Path), default=None, help="Budget ledger (SQLite); default $DIPSY_LEDGER or the user data folder.")
@click.option("--dataset-id", default=None, help="Name of the data set in the ledger; default the SHA-256 of DATA.")
@click.option("--budget-cap", default=None, help="What this data set may ever spend: ε, 'ε,δ' or 'rho=ρ' (stored in the ledger).")
def synth(
    data: Path,
    domain_path: Path,
    method: str,
    epsilon: str | None,
    delta: str | None,
    rho: str | None,
    sets: int,
    columns: tuple[str, ...],
    seed: int | None,
    fmt: str,
    options: tuple[str, ...],
    out_dir: Path,
    overwrite: bool,
    on_invalid: str,
    neighbouring: str | None,
    kind: str,
    ledger: Path | None,
    dataset_id: str | None,
    budget_cap: str | None,
) -> None:
    """Synthesize DATA (CSV or Parquet) under differential privacy and write a release to --out."""
    check_target(out_dir, overwrite)
    ledger_path = ledger or default_ledger_path()
    release = synthesize(
        data,
        domain_path,
        method=method,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        sets=sets,
        columns=_columns(columns),
        seed=seed,
        options=_options(options),
        ledger=Ledger(ledger_path),
        dataset_id=dataset_id,
        budget_cap=budget_cap,
        on_invalid=on_invalid,
        neighbouring=neighbouring,
        release=kind,
        progress=True,
        on_release=lambda r: r.save(out_dir, format=fmt, overwrite=overwrite),
    )
    s = release.statement
    params = ", ".join(f"{k} = {v:.6f}" if isinstance(v, float) else f"{k} = {v}" for k, v in release.parameters.items() if not isinstance(v, dict))
    out.print(f"{release.method}: {params}")
    noise = release.parameters.get("noise")
    if noise:
        out.print(f"noise: {noise['distribution']}, scale {noise['scale']}, sd {noise['sd']:.4g}; {noise['post_processing']}")
    equivalent = s.equivalent()
    also = f" (so (ε, δ)-DP with ε = {equivalent[0]:.4g}, δ = {equivalent[1]:g})" if equivalent else ""
    out.print(f"privacy: {s.definition}, {s.total} in total{also}, {s.per_set} per set, {s.sets} set(s); {s.neighbouring}")
    if release.dropped_rows:
        out.print(f"note: {release.dropped_rows} row(s) that did not match the domain were dropped (not written to the release)")
    what = "table(s) of" if release.kind == "table" else "set(s) of"
    out.print(f"wrote {len(release.tables)} {what} {len(release.tables[0])} rows to {out_dir} (ledger: {ledger_path})")


def _options(pairs: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise DipsyError(f"option {pair!r} is not NAME=VALUE", "write it as e.g. --option alpha=10")
        parsed[name.strip()] = value.strip()
    return parsed


@cli.command("evaluate")
@click.argument("data", type=click.Path(path_type=Path))
@click.argument("release_dir", type=click.Path(path_type=Path))
@click.option("--domain", "domain_path", type=click.Path(path_type=Path), default=None, help="Domain file; default the release's domain.yaml.")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None, help="Write the HTML report here.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write every metric as JSON here.")
@click.option("--formula", default=None, help="Regression to compare, e.g. 'Expenditure ~ Income + C(Race)'.")
@click.option("--model", type=click.Choice(["ols", "logit"]), default="ols", show_default=True, help="Regression model for --formula.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the metrics' own sampling.")
def evaluate_command(data: Path, release_dir: Path, domain_path: Path | None, report_path: Path | None,
                     json_path: Path | None, formula: str | None, model: str, seed: int) -> None:
    """Compare the release in RELEASE_DIR with the original DATA: metrics, plots, HTML report."""
    from .evaluation import evaluate, jsonable, load_release, read_original
    from .evaluation.report import write_report

    metrics = evaluate(data, release_dir, domain_path, formula=formula, model=model, seed=seed)
    marg = metrics["marginals"]
    out.print(f"marginal TVD, mean (worst): 1-way {marg['1-way']['mean_tvd']:.4f} ({marg['1-way']['worst_tvd']:.4f}), "
              f"2-way {marg['2-way']['mean_tvd']:.4f} ({marg['2-way']['worst_tvd']:.4f})")
    km = marg["k_marginal_score"]
    baselines = ", ".join(f"{b['fraction']:.0%} {b['score']:.0f}" for b in km["baselines"])
    out.print(f"k-marginal score {km['score']:.0f} of 1000 (subsamples of the original: {baselines})")
    logit = metrics["propensity"]["logistic"]
    out.print(f"pMSE (logistic), standardised: {', '.join(f'{z:.2f}' for z in logit['standardised'])}")
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(jsonable(metrics), indent=1, allow_nan=False) + "\n", encoding="utf-8")
        out.print(f"wrote {json_path}")
    if report_path:
        _, tables, release_domain = load_release(release_dir)
        domain = release_domain if domain_path is None else Domain.load(domain_path).project(release_domain.names)
        write_report(metrics, read_original(data, domain), tables, domain, report_path)
        out.print(f"wrote {report_path}")


@cli.group()
def budget() -> None:
    """Inspect the privacy budget ledger."""


@budget.command("show")
@click.option("--ledger", type=click.Path(path_type=Path), default=None, help="Budget ledger; default $DIPSY_LEDGER or the user data folder.")
@click.option("--dataset-id", default=None, help="Show every spend of this data set.")
def budget_show(ledger: Path | None, dataset_id: str | None) -> None:
    """What each data set has spent, in how many releases, against which cap."""
    path = ledger or default_ledger_path()
    led = Ledger(path)
    if dataset_id:
        table = Table("time", "release", "method", "spend", "budget", title=f"data set {dataset_id}")
        for r in led.spends(dataset_id):
            amount = ", ".join(f"{k} = {r[k]:g}" for k in ("epsilon", "delta", "rho") if r[k] is not None)
            if r["definition"] == "zCDP":
                amount = f"rho = {r['rho']:g}" + (f" (stated at δ = {r['delta']:g})" if r["delta"] is not None else "")
            table.add_row(r["created"], r["release_id"][:12], r["method"], r["label"], f"{r['definition']}: {amount}")
    else:
        table = Table("data set", "definition", "spent", "releases", "cap", title=f"ledger {path}")
        for t in led.totals():
            table.add_row(t.dataset_id, t.spent.definition, t.describe(), str(t.releases), str(t.cap) if t.cap else "none")
    out.print(table)
