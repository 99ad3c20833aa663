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
from dipsy.evaluation import evaluate, plots
from dipsy.evaluation.report import SECTIONS, render, write_report

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"
ADULT_DATA = ROOT / "tests" / "data" / "adult.csv"
ADULT_DOMAIN = ROOT / "tests" / "data" / "adult-domain.json"
#: The formula's columns, integer columns of 85, 16, 2 and 99 codes (workclass and income>50K, of 9 and 2 codes,
#: added two columns of the same kind for 4 CPU seconds more: their figures, and a release of 4.8 million cells)
ADULT_COLUMNS = ["age", "education-num", "sex", "hours-per-week"]
OUT = ROOT / "build" / "report"
HEADINGS = [f"{i}. {title}" for i, (_, title) in enumerate(SECTIONS, start=1)]
# Chromium on a machine without network: no background traffic, no GPU, no sandbox (root).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
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
    # 5,000 seeded rows of Adult's 48,842: the report's figures and sections come from the domain (age's 85
    # and hours-per-week's 99 codes, capped for the heat maps), not from n, and evaluating the whole file
    # took 10 CPU seconds against 3 (propensity trees and logistic fits). Two sets, as several as CE's three
    # (each set more is a pass of every metric and a line in every figure).
    data = pd.read_csv(ADULT_DATA)[ADULT_COLUMNS].sample(n=5000, random_state=0).reset_index(drop=True)
    domain = Domain.load(ADULT_DOMAIN)
    release = dipsy.synthesize(data, domain, epsilon=5, sets=2, seed=1, columns=ADULT_COLUMNS, accept_noise=True)
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
        "privacy": {
            "definition": "pure-DP",
            "epsilon_total": 2.0,
            "epsilon_per_set": 1.0,
            "sets": 2,
            "neighbouring": "add/remove <one> record",
            "public": ["the domain"],
            "mechanism": "m & n",
            "composition": "sequential",
        },
        "release": {"method": "dirichlet-multinomial", "release_id": "abc123", "sets": 2, "seed": None},
        "dataset": {"rows_original": 10, "sets": 2, "rows_synthetic": [10, 10], "columns": list(domain.names)},
        "marginals": {
            "1-way": {"mean_tvd": 0.15, "worst_tvd": 0.2, "worst_columns": ["x"], "count": 1, "marginals": one},
            "2-way": {
                "mean_tvd": nan,
                "worst_tvd": nan,
                "worst_columns": [],
                "count": 1,
                "marginals": [{"columns": ["x", "y"], "tvd": [0.3, nan]}, {"columns": ["x", "gone"], "tvd": [nan]}],
            },
            "k_marginal_score": {"score": 850.0, "per_set": [840.0, nan], "baselines": {"1%": 600.0, "5%": None, "10%": 900.0}},
        },
        "numeric": {
            "y": {
                "U_m": [0.1, nan],
                "U_a": [0.01, 0.02],
                "ks": [0.1, 0.12],
                "mean": {"original": 2.0, "synthetic": [2.1, None]},
                "quantiles": {"original": {"0.05": 0.5, "0.5": 2.0}, "synthetic": [{"0.05": 0.4, "0.5": 1.9}, {"0.05": nan}]},
            }
        },
        "propensity": {
            "logistic": {
                "pmse": [0.01, nan],
                "null_mean": [0.005, 0.005],
                "null_sd": [0.001, 0.001],
                "standardised": [5.0, nan],
                "ratio": [2.0, nan],
            },
            "caveat": "Trees <b>differ</b>.",
            "rows_used": 20,
        },
        "relationships": {
            "indicators": {
                "pairs": [
                    {
                        "x": "x=0",
                        "y": "y=1",
                        "corr_original": 0.3,
                        "corr_synthetic": [0.2, nan],
                        "slope_original": nan,
                        "slope_synthetic": [nan, nan],
                    }
                ],
                "corr_mean_abs_diff": 0.1,
                "slope_mean_abs_diff": nan,
            },
            "numeric": {},
        },
        "inference": {
            "formula": "y ~ x",
            "rule": "reiter2003-partial",
            "coefficients": [
                {
                    "term": "x",
                    "original": {"estimate": 1.0, "se": 0.1, "lower": 0.8, "upper": 1.2},
                    "synthetic": {"estimate": 1.1, "variance": 0.02, "df": nan, "lower": nan, "upper": 1.4},
                    "ci_overlap": 0.7,
                    "std_diff": 1.0,
                }
            ],
        },
    }


def small_case() -> tuple[pd.DataFrame, list[pd.DataFrame], Domain]:
    domain = Domain.from_dict(
        {
            "columns": {
                "x": {"kind": "categorical", "categories": ["a", "b"], "labels": ["<A>", "B & C"]},
                "y": {"kind": "numeric", "lower": 0, "upper": 5},
            }
        }
    )
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
    rest = page[: page.find('id="sensitive"')] + page[page.find('id="inference"') :]
    assert "Not applicable" not in rest  # every section has content for these releases (no sensitive columns named)
    assert path.stat().st_size < 5_000_000


def test_privacy_statement_is_at_the_top(ce, ce_report):
    page = ce_report.read_text(encoding="utf-8")
    top = page[: page.find(">2. Summary</h2>")]
    release = ce[0]["release"]
    for text in (
        "pure-DP",
        "ε = 5 in total",
        "dirichlet-multinomial",
        release["release_id"],
        "sequential composition",
        "n = 994",
    ):
        assert text in top, text


def test_heat_maps_use_the_domain_labels(ce_report):
    page = ce_report.read_text(encoding="utf-8")
    section = page[page.find(">3. Marginals</h2>") : page.find(">4. Numeric columns</h2>")]
    assert section.count("<img") == 1 + 3 + 1  # one-way bars, three worst two-way marginals, k-marginal score
    assert "heat maps of" in section and "subsample" in section


def test_caveat_is_verbatim_and_numbers_are_shown(ce, ce_report):
    page = ce_report.read_text(encoding="utf-8")
    assert html.escape(ce[0]["propensity"]["caveat"]) in page
    assert "Income" in page and "Expenditure" in page and "C(Race)[T.2]" in page


def section(page: str, key: str) -> str:
    """The HTML of one section of a page."""
    start = page.find(f'<section id="{key}"')
    return page[start : page.find("</section>", start)]


def test_banner_says_the_report_is_confidential_before_anything_else(ce_report):
    page = ce_report.read_text(encoding="utf-8")
    banner = page.find('class="banner"')
    assert 0 < banner < page.find(">1. Privacy statement</h2>") and page.find("<header>") < banner
    text = page[banner : page.find("</div>", banner)]
    assert "statistics of the confidential original data" in text and "not covered by the release's privacy guarantee" in text
    assert "Do not publish it" in text


def test_sections_open_with_their_verdict_and_the_summary_lists_them(ce, ce_report):
    evaluation = ce[0]
    page = ce_report.read_text(encoding="utf-8")
    judged = evaluation["verdicts"]
    assert set(judged) >= {"marginals", "numeric", "propensity", "relationships", "inference"}
    for key, verdict in judged.items():
        body = section(page, key)
        start = body.find('class="verdict ')
        assert 0 < start < body.find("</h2>") + 40, key  # right under the heading
        assert html.escape(verdict["text"]) in body and f"verdict {verdict['level']}" in body
    summary = section(page, "summary")
    assert summary.count("<tr class=") == len(judged) and "Verdicts" in summary


def test_the_binning_floor_is_shown_beside_the_synthetic_figures(ce_report):
    numeric = section(ce_report.read_text(encoding="utf-8"), "numeric")
    assert "mean (binning floor)" in numeric and '<th class="num">binning floor</th>' in numeric
    # CE Income's top bin, 250k–1M, moves the mean of a bin-uniform redraw most
    note = numeric[numeric.find("The bins bias the mean of Income") :]
    assert note and "from the bin 250k–1M" in note[: note.find("</p>")]
    assert "binning floor" in numeric[numeric.find("empirical CDFs of Income") :]


def test_pmse_headline_says_which_model_it_is(ce_report):
    part = section(ce_report.read_text(encoding="utf-8"), "propensity")
    assert "Headline: the logistic with interactions model" in part and "pairwise interactions of all 6 pairs" in part
    assert "original, columns shuffled independently" in part and "original, redrawn inside its bins" in part


def test_relationships_carry_one_indicator_of_a_two_category_column(ce, ce_report):
    pairs = ce[0]["relationships"]["indicators"]["pairs"]
    names = {p["x"] for p in pairs} | {p["y"] for p in pairs}
    assert sum(n.startswith("UrbanRural=") for n in names) == 1  # Urban and Rural mirror each other
    assert "its mirror image" in section(ce_report.read_text(encoding="utf-8"), "relationships")


def without_figures(evaluation: dict) -> dict:
    """``evaluation`` without the two sections that draw figures from the data (marginals, numeric),
    for a test that reads only other sections: their figures are most of a render's time."""
    return {k: v for k, v in evaluation.items() if k not in ("marginals", "numeric")}


def test_public_parameters_are_shown_readably_whatever_the_method():
    data, tables, domain = small_case()
    evaluation = without_figures(handmade(domain))
    evaluation["release"]["parameters"] = {
        "one_way_sigma2": {"x": "465881/512", "y": "3/4"},
        "selected_marginals": [["x", "y"], ["y", "z"]],
        "regime": {"name": "two-way", "total_epsilon": 0.0007142857142857143, "group_epsilon": 0.04},
        "warnings": ["R-hat <1.1> for tau"],
        "trees": [{"nodes": 267, "splits": {"x": 1, "y": 6}}, {"nodes": 419, "splits": {"x": 2}}],
        "structure_seed": 5807283045624118978,
        "shuffle": True,
    }
    privacy = section(render(evaluation, data, tables, domain), "privacy")
    part = privacy[privacy.find("What the method chose / public parameters") :]
    assert part, "the heading is in the privacy section"
    assert "909.9" in part and 'title="465881/512 exactly"' in part and "0.75" in part  # fractions as decimals
    assert "0.0007143" in part and "<dt>total epsilon</dt>" in part  # nested mappings as definition lists
    assert "<li>x, y</li><li>y, z</li>" in part  # a list of column lists, one a line
    assert "<td>267</td>" in part and "x 1; y 6" in part  # a list of records as a table
    assert "R-hat &lt;1.1&gt; for tau" in part and "5807283045624118978" in part and "yes" in part
    assert not re.search(r"\{'|\[\[|': ", html.unescape(re.sub(r"<[^>]+>", " ", part)))  # no Python reprs


def test_one_set_intervals_are_labelled_as_ignoring_synthesis_and_noise(ce_report):
    several = section(ce_report.read_text(encoding="utf-8"), "inference")  # three sets, Reiter's rule
    assert "reiter2003-partial" in several and "ignores synthesis and noise variance" not in several
    data, tables, domain = small_case()
    evaluation = without_figures(handmade(domain))  # the inference section and the summary are read
    evaluation["inference"]["rule"] = "single"
    page = render(evaluation, data, tables, domain)
    one = section(page, "inference")
    assert "synthetic 95% CI (one set: ignores synthesis and noise variance)" in one
    assert "One synthetic set." in one and "variance of synthesis and of the privacy noise" in one
    assert "ignore synthesis and noise variance" in section(page, "summary")  # the CI overlap row


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
    with pytest.raises(OSError, match="disk full"):  # another page (a new title), drawn without figures
        write_report(without_figures(handmade(domain)), data, tables, domain, target)
    assert target.read_text(encoding="utf-8") == first
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]  # no temporary file left


def test_large_domains_are_capped_for_heat_maps():
    cats = [f"c{k}" for k in range(40)]
    domain = Domain.from_dict(
        {
            "columns": {
                "c": {"kind": "categorical", "categories": cats},
                "n": {"kind": "integer", "lower": 0, "upper": 10**9},
            }
        }
    )
    data = pd.DataFrame({"c": [cats[k % 40] for k in range(400)], "n": [k * 2_000_000 for k in range(400)]})
    codes, labels = plots.column_codes(data["n"], domain["n"])
    assert len(labels) == plots.MAX_LEVELS and codes.max() < plots.MAX_LEVELS
    codes, labels = plots.column_codes(data["c"], domain["c"])
    (capped,), kept = plots.cap_levels([codes], labels, domain["c"], codes)
    assert len(kept) == plots.MAX_LEVELS and kept[-1] == "other" and set(capped) <= set(range(plots.MAX_LEVELS))
    assert plots.marginal_heatmaps(data, data, ["c", "n"], domain, 0.0).startswith("data:image/png;base64,")


def heat_labels(column, values):
    codes, labels = plots.column_codes(pd.Series(values), column)
    (capped,), shown = plots.cap_levels([codes], labels, column, codes)
    return capped, shown


def test_integer_heat_map_labels_never_merge_values_silently():
    # One code per value, 21 values: every value its own cell and label.
    small = Domain.from_dict({"columns": {"k": {"kind": "integer", "lower": 0, "upper": 20}}})["k"]
    capped, shown = heat_labels(small, range(21))
    assert shown == [str(k) for k in range(21)] and list(capped) == list(range(21))
    # Bins of 5 years, 20 of them (ACS AGEP): one cell per bin, labelled by its integers.
    agep = Domain.from_dict({"columns": {"a": {"kind": "integer", "lower": 0, "upper": 99, "bins": [*range(0, 100, 5), 99]}}})[
        "a"
    ]
    capped, shown = heat_labels(agep, range(100))
    assert len(shown) == 20 and shown[:2] == ["0–4", "5–9"] and shown[-1] == "95–99"
    # 74 values (17–90) are too many: runs of 5 values on multiples of 5, each label the run's
    # exact range, and every value in the cell whose label covers it.
    age = Domain.from_dict({"columns": {"age": {"kind": "integer", "lower": 17, "upper": 90}}})["age"]
    capped, shown = heat_labels(age, range(17, 91))
    assert shown[:3] == ["17–19", "20–24", "25–29"] and shown[-1] == "90"
    for value, cell in zip(range(17, 91), capped):
        low, _, high = shown[cell].partition("–")
        assert int(low) <= value <= int(high or low)
    sizes = [len(range(int(a), int(b or a) + 1)) for a, _, b in (label.partition("–") for label in shown)]
    assert set(sizes[1:-1]) == {5}  # equal cells, only the ends cut by the bounds


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
            str(tmp_path / "profile"),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(ce_report.as_uri(), wait_until="load")
            state = page.evaluate("Array.from(document.images, i => [i.complete, i.naturalWidth])")
            summary_top = page.evaluate("document.getElementById('summary').getBoundingClientRect().top")
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
    assert summary_top < 1100  # about a screen down (900 px), where it was 2,016 px: the statement's details are folded
    assert (OUT / "ce_report.png").stat().st_size > 10_000


def test_the_forecast_is_shown_with_its_verdict(tmp_path):
    from dipsy.evaluation.report import _forecast

    release = dipsy.synthesize(CE_DATA, CE_DOMAIN, epsilon=0.5, seed=1, accept_noise=True)
    page = _forecast(release.metadata()["forecast"])
    assert (
        "Forecast before any measurement" in page and "NOISE" in page and "--accept-noise" in page and "prior outweighs" in page
    )
    assert _forecast(None) == ""
