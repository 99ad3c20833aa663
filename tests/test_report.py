"""The HTML report of ``dipsy evaluate``: complete, self-contained, robust, and sound in a browser."""

from __future__ import annotations

import html
import math
import os
import re
import shutil
import stat
from pathlib import Path

import pandas as pd
import pytest

import dipsy
from dipsy.domain import Domain
from dipsy.evaluation import evaluate
from dipsy.evaluation import plots
from dipsy.evaluation.report import SECTIONS, render, write_report

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"
ADULT_DATA = ROOT / "tests" / "data" / "adult.csv"
ADULT_DOMAIN = ROOT / "tests" / "data" / "adult-domain.json"
ADULT_COLUMNS = ["age", "workclass", "education-num", "sex", "hours-per-week", "income>50K"]
OUT = ROOT / "build" / "report"
HEADINGS = [f"{i}. {title}" for i, (_, title) in enumerate(SECTIONS, start=1)]
# Chromium on a machine without network: no background traffic, no GPU, no sandbox (root).
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


# -- cases ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ce():
    data = pd.read_csv(CE_DATA)
    release = dipsy.synthesize(data, CE_DOMAIN, epsilon=5, sets=3, seed=1, accept_noise=True)  # a page to render, not a release
    evaluation = evaluate(data, release, release.domain, formula="Expenditure ~ Income + C(Race)", seed=0)
    return evaluation, data, release.tables, release.domain


@pytest.fixture(scope="module")
def adult():
    data = pd.read_csv(ADULT_DATA)[ADULT_COLUMNS]
    domain = Domain.load(ADULT_DOMAIN)
    release = dipsy.synthesize(data, domain, epsilon=5, sets=3, seed=1, columns=ADULT_COLUMNS, accept_noise=True)
    formula = 'Q("hours-per-week") ~ age + C(sex) + Q("education-num")'
    evaluation = evaluate(data, release, release.domain, formula=formula, seed=0)
    return evaluation, data, release.tables, release.domain


@pytest.fixture(scope="module")
def ce_report(ce) -> Path:
    """The CE report, left in build/report/ for people to open."""
    return write_report(*ce, OUT / "ce_report.html")


@pytest.fixture(scope="module")
def adult_report(adult, tmp_path_factory) -> Path:
    return write_report(*adult, tmp_path_factory.mktemp("adult") / "adult_report.html")


def handmade(domain: Domain) -> dict:
    """An evaluation in the nested layout of the brief, with NaN and None where values can be missing."""
    nan = math.nan
    one = [{"columns": [c], "tvd": [0.1, nan, 0.2]} for c in domain.names]
    return {
        "privacy": {"definition": "pure-DP", "epsilon_total": 2.0, "epsilon_per_set": 1.0, "sets": 2,
                    "neighbouring": "add/remove <one> record", "public": ["the domain"], "mechanism": "m & n",
                    "composition": "sequential"},
        "release": {"method": "dirichlet-multinomial", "release_id": "abc123", "sets": 2, "seed": None},
        "dataset": {"rows_original": 10, "sets": 2, "rows_synthetic": [10, 10], "columns": list(domain.names)},
        "marginals": {
            "1-way": {"mean_tvd": 0.15, "worst_tvd": 0.2, "worst_columns": ["x"], "count": 1, "marginals": one},
            "2-way": {"mean_tvd": nan, "worst_tvd": nan, "worst_columns": [], "count": 1,
                      "marginals": [{"columns": ["x", "y"], "tvd": [0.3, nan]}, {"columns": ["x", "gone"], "tvd": [nan]}]},
            "k_marginal_score": {"score": 850.0, "per_set": [840.0, nan],
                                 "baselines": {"1%": 600.0, "5%": None, "10%": 900.0}},
        },
        "numeric": {"y": {"U_m": [0.1, nan], "U_a": [0.01, 0.02], "ks": [0.1, 0.12],
                          "mean": {"original": 2.0, "synthetic": [2.1, None]},
                          "quantiles": {"original": {"0.05": 0.5, "0.5": 2.0},
                                        "synthetic": [{"0.05": 0.4, "0.5": 1.9}, {"0.05": nan}]}}},
        "propensity": {"logistic": {"pmse": [0.01, nan], "null_mean": [0.005, 0.005], "null_sd": [0.001, 0.001],
                                    "standardised": [5.0, nan], "ratio": [2.0, nan]},
                       "caveat": "Trees <b>differ</b>.", "rows_used": 20},
        "relationships": {"indicators": {"pairs": [{"x": "x=0", "y": "y=1", "corr_original": 0.3,
                                                    "corr_synthetic": [0.2, nan], "slope_original": nan,
                                                    "slope_synthetic": [nan, nan]}],
                                         "corr_mean_abs_diff": 0.1, "slope_mean_abs_diff": nan},
                          "numeric": {}},
        "inference": {"formula": "y ~ x", "rule": "reiter2003-partial",
                      "coefficients": [{"term": "x", "original": {"estimate": 1.0, "se": 0.1, "lower": 0.8, "upper": 1.2},
                                        "synthetic": {"estimate": 1.1, "variance": 0.02, "df": nan, "lower": nan, "upper": 1.4},
                                        "ci_overlap": 0.7, "std_diff": 1.0}]},
    }


def small_case() -> tuple[pd.DataFrame, list[pd.DataFrame], Domain]:
    domain = Domain.from_dict({"columns": {"x": {"kind": "categorical", "categories": ["a", "b"], "labels": ["<A>", "B & C"]},
                                           "y": {"kind": "numeric", "lower": 0, "upper": 5}}})
    data = pd.DataFrame({"x": list("abababbbba"), "y": [0.5, 1, 2, 3, 2.5, 4, 1.5, 2, 2, 1]})
    return data, [data.sample(frac=1.0, random_state=k).reset_index(drop=True) for k in range(2)], domain


# -- content -------------------------------------------------------------------------------------


def images(page: str) -> list[str]:
    return re.findall(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", page)


@pytest.mark.parametrize("case", ["ce_report", "adult_report"])
def test_report_is_complete_and_self_contained(case, request):
    path = request.getfixturevalue(case)
    page = path.read_text(encoding="utf-8")
    positions = [page.find(f">{h}</h2>") for h in HEADINGS]
    assert all(p >= 0 for p in positions), [h for h, p in zip(HEADINGS, positions) if p < 0]
    assert positions == sorted(positions)  # the privacy statement comes first
    srcs = images(page)
    assert len(srcs) >= 8 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert not re.search(r"https?://|<script|<link|@import|url\(", page, re.I)
    rest = page[:page.find('id="sensitive"')] + page[page.find('id="inference"'):]
    assert "Not applicable" not in rest  # every section has content for these releases (no sensitive columns named)
    assert path.stat().st_size < 5_000_000


def test_privacy_statement_is_at_the_top(ce, ce_report):
    page = ce_report.read_text(encoding="utf-8")
    top = page[: page.find(">2. Summary</h2>")]
    release = ce[0]["release"]
    for text in ("pure-DP", "ε = 5 in total", "dirichlet-multinomial", release["release_id"], "sequential composition", "n = 994"):
        assert text in top, text


def test_heat_maps_use_the_domain_labels(ce_report):
    page = ce_report.read_text(encoding="utf-8")
    section = page[page.find(">3. Marginals</h2>"): page.find(">4. Numeric columns</h2>")]
    assert section.count("<img") == 1 + 3 + 1  # one-way bars, three worst two-way marginals, k-marginal score
    assert "heat maps of" in section and "subsample" in section


def test_caveat_is_verbatim_and_numbers_are_shown(ce, ce_report):
    page = ce_report.read_text(encoding="utf-8")
    assert html.escape(ce[0]["propensity"]["caveat"]) in page
    assert "Income" in page and "Expenditure" in page and "C(Race)[T.2]" in page


# -- robustness ----------------------------------------------------------------------------------


def test_missing_sections_say_not_applicable():
    data, tables, domain = small_case()
    page = render({}, data, tables, domain)
    assert all(f">{h}</h2>" in page for h in HEADINGS)
    assert page.count('class="na"') >= len(SECTIONS)
    assert "<img" not in page


def test_nested_layout_nan_and_escaping():
    data, tables, domain = small_case()
    evaluation = handmade(domain)
    evaluation["release"]["method"] = "<script>alert(1)</script>"
    page = render(evaluation, data, tables, domain)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "add/remove &lt;one&gt; record" in page and "Trees &lt;b&gt;differ&lt;/b&gt;." in page
    assert not re.search(r"\bnan\b", re.sub(r"data:image/png;base64,[^\"]*", "", page), re.I)
    assert "quantile 0.05" in page and "10% subsample" in page and "none (randomness" in page
    assert all(s.startswith("data:image/png;base64,") for s in images(page))
    assert len(images(page)) == 7  # bars, one heat map, k-score, histogram, ECDF, scatter, coefficients
    assert "x × gone cannot be drawn" in page


def test_written_atomically_and_readable(tmp_path, monkeypatch):
    data, tables, domain = small_case()
    target = tmp_path / "deep" / "report.html"
    assert write_report({}, data, tables, domain, target) == target
    first = target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) & stat.S_IRGRP  # mkstemp's 0600 is not kept

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_report(handmade(domain), data, tables, domain, target)
    assert target.read_text(encoding="utf-8") == first
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]  # no temporary file left


def test_large_domains_are_capped_for_heat_maps():
    cats = [f"c{k}" for k in range(40)]
    domain = Domain.from_dict({"columns": {
        "c": {"kind": "categorical", "categories": cats},
        "n": {"kind": "integer", "lower": 0, "upper": 10**9},
    }})
    data = pd.DataFrame({"c": [cats[k % 40] for k in range(400)], "n": [k * 2_000_000 for k in range(400)]})
    codes, labels = plots.column_codes(data["n"], domain["n"])
    assert len(labels) == plots.MAX_LEVELS and codes.max() < plots.MAX_LEVELS
    codes, labels = plots.column_codes(data["c"], domain["c"])
    (capped,), kept = plots.cap_levels([codes], labels, domain["c"], codes)
    assert len(kept) == plots.MAX_LEVELS and kept[-1] == "other" and set(capped) <= set(range(plots.MAX_LEVELS))
    assert plots.marginal_heatmaps(data, data, ["c", "n"], domain, 0.0).startswith("data:image/png;base64,")


# -- a real browser ------------------------------------------------------------------------------


def test_report_renders_in_chromium(ce_report, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium executable on PATH (install Debian's 'chromium' package)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the Python package 'playwright' is not installed")
    problems, requests = [], []
    with sync_api.sync_playwright() as p:
        # A persistent context on a new folder: the fresh --user-data-dir the machine notes ask for.
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(ce_report.as_uri(), wait_until="load")
            state = page.evaluate("Array.from(document.images, i => [i.complete, i.naturalWidth])")
            page.screenshot(path=str(OUT / "ce_report.png"), full_page=True)
            page.emulate_media(media="print")
            page.set_viewport_size({"width": 700, "height": 1000})  # about A4's printable width at 96 dpi
            widest = page.evaluate("Math.max(...Array.from(document.images, i => i.getBoundingClientRect().right))")
        finally:
            context.close()
    assert state and all(complete and width > 0 for complete, width in state), state
    assert problems == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    assert widest <= 700
    assert (OUT / "ce_report.png").stat().st_size > 10_000
