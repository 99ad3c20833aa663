"""The summary of benchmarks/peers.py: means over seeds per tool and ε, as a markdown table and a plot.

A cell's means are over the seeds that finished; a cell none of whose seeds finished shows
"timeout" (or "error"), and the plot leaves it out and says so in the legend.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

MEASURES = ("wall_s", "peak_mb", "tvd_1", "tvd_2", "tvd_3")


def summarize(runs: list[dict], order: list[str], out: Path) -> list[dict]:
    """Means per (tool, ε, δ); writes ``table.md`` and ``error_vs_epsilon.png`` into ``out``."""
    cells = defaultdict(list)
    for run in runs:
        cells[run["tool"], run["epsilon"], run["delta"]].append(run)
    rank = {tool: i for i, tool in enumerate(order)}
    rows = [row for key in cells for row in [cell(key, cells[key]), *variant_cells(key, cells[key])]]
    # each tool's own rows over ε, then its variants' rows
    rows.sort(
        key=lambda r: (rank.get(r["base"], len(rank)), r["base"], r["tool"] != r["base"], r["tool"], r["epsilon"], r["delta"])
    )
    (out / "table.md").write_text(table(rows, runs))
    plot(rows, out / "error_vs_epsilon.png")
    return rows


def cell(key: tuple, runs: list[dict]) -> dict:
    tool, epsilon, delta = key
    ok = [r for r in runs if r["status"] == "ok"]
    statuses = {s: sum(r["status"] == s for r in runs) for s in ("ok", "timeout", "error")}
    row = {"tool": tool, "base": tool, "epsilon": epsilon, "delta": delta, "seeds": len(runs), **statuses}
    if ok:
        row.update({m: float(np.mean([r[m] for r in ok])) for m in MEASURES})
        timed = [r["cpu_s"] for r in ok if r.get("cpu_s") is not None]  # older records lack it
        row["cpu_s"] = float(np.mean(timed)) if timed else None
    else:
        row["status"] = "timeout" if statuses["timeout"] else "error"
    return row


def variant_cells(key: tuple, runs: list[dict]) -> list[dict]:
    """Rows for other draws from the same runs' models: scores only, the cost being the run's."""
    tool, epsilon, delta = key
    scored = defaultdict(list)
    for run in runs:
        for name, scores in run.get("variants", {}).items():
            if "error" not in scores:
                scored[name].append(scores)
    return [
        {
            "tool": f"{tool} (method={name})",
            "base": tool,
            "epsilon": epsilon,
            "delta": delta,
            "seeds": len(runs),
            "ok": len(found),
            "variant": True,
            **{m: float(np.mean([f[m] for f in found])) for m in MEASURES[2:]},
        }
        for name, found in scored.items()
    ]


def table(rows: list[dict], runs: list[dict]) -> str:
    lines = [
        "# dipsy and peers on Adult: error and cost against ε",
        "",
        "Mean total variation distance over all 1-way and 2-way marginals and 256 three-way marginals; "
        "wall and CPU seconds and peak resident memory of one child process on one core (CPU time, unlike "
        "wall time, is not inflated by other work on the machine). Means over the seeds run (column n). "
        "Rows marked (method=…) are other draws from the models fitted in the tool's own rows.",
        "",
        "| tool / method | ε | n | wall s | CPU s | peak MB | 1-way TVD | 2-way TVD | 3-way TVD |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    partial = False
    for row in rows:
        if "status" in row:
            values = [row["status"]] * (len(MEASURES) + 1)
        elif row.get("variant"):
            values = ["same run"] * 3 + [f"{row[m]:.4f}" for m in MEASURES[2:]]
        else:
            cpu = "–" if row.get("cpu_s") is None else f"{row['cpu_s']:.1f}"
            values = [f"{row['wall_s']:.1f}", cpu, f"{row['peak_mb']:.0f}"] + [f"{row[m]:.4f}" for m in MEASURES[2:]]
        mark = "" if row["ok"] in (0, row["seeds"]) else " *"
        partial |= bool(mark)
        lines.append(f"| {row['tool']} | {row['epsilon']:g}{mark} | {row['seeds']} | " + " | ".join(values) + " |")
    if partial:
        lines += ["", "\\* mean over the seeds that finished; the others timed out or failed."]
    lines += ["", "Versions: " + "; ".join(versions(runs)) + "."] if versions(runs) else []
    machine = next((r["machine"] for r in reversed(runs) if r.get("machine")), None)  # the latest run's
    if machine:
        lines += [
            "",
            f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gb']} GB; "
            f"Python {machine['python']}; dipsy {machine['dipsy_commit']}.",
        ]
    return "\n".join(lines) + "\n"


def versions(runs: list[dict]) -> list[str]:
    """The package versions the tools' latest finished runs reported, tools with the same ones together."""
    latest = {r["tool"]: ", ".join(f"{k} {v}" for k, v in r["versions"].items()) for r in runs if r.get("versions")}
    shared = defaultdict(list)
    for tool, found in latest.items():
        shared[found].append(tool)
    return [f"{', '.join(tools)}: {found}" for found, tools in shared.items()]


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullLocator

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharex=True, sharey=True)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    bases = list(dict.fromkeys(row["base"] for row in rows))
    for tool in dict.fromkeys(row["tool"] for row in rows):
        mine = sorted((r for r in rows if r["tool"] == tool), key=lambda r: r["epsilon"])
        shown = [r for r in mine if "status" not in r]
        variant = bool(mine[0].get("variant"))  # drawn like its tool, dashed and hollow
        style = {
            "color": palette[bases.index(mine[0]["base"]) % len(palette)],
            "marker": "o",
            "linestyle": "--" if variant else "-",
            "markerfacecolor": "none" if variant else None,
        }
        for ax, measure in zip(axes, ("tvd_2", "tvd_3")):
            ax.plot([r["epsilon"] for r in shown], [r[measure] for r in shown], label=tool + missing(mine), **style)
    epsilons = sorted({row["epsilon"] for row in rows})
    for ax, title in zip(axes, ("all 2-way marginals", "the 256 listed 3-way marginals")):
        ax.set(xscale="log", yscale="log", xlabel=f"ε (δ = {rows[0]['delta']:g})" if rows else "ε", title=title)
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("mean total variation distance")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def missing(rows: list[dict]) -> str:
    """The legend's note of the points left out, e.g. " (timeout at ε = 10)"."""
    notes = []
    for status in ("timeout", "error"):
        where = [f"{r['epsilon']:g}" for r in rows if r.get("status") == status]
        if where:
            notes.append(f" ({status} at ε = {', '.join(where)})")
    return "".join(notes)
