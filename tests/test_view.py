"""`anvil view`: the drawings as plain functions, the page's rows and order, and the page
rendered in a headless Chromium: its rows, a DAG walk drawn for a DAG result, its filters
working, and no request leaving the page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local import GEval, LLMTestCase, SingleTurnParams, evaluate
from anvil_local.cli import main
from anvil_local.metrics import MetricResult
from anvil_local.metrics.likelihood import LikelihoodMetric
from anvil_local.run.output import ResultWriter
from anvil_local.run.pairs import pair_results
from anvil_local.run.records import ResultLine
from anvil_local.run.results import read_results, result_items
from anvil_local.spec import load_metrics
from anvil_local.view import write_view
from anvil_local.view.bars import score_bars
from anvil_local.view.dag import dag_svg, graph_from_definition, layout, walk_on
from anvil_local.view.page import render_page
from anvil_local.view.tokens import token_html
from tests.fakes import FakeJudge

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = ROOT / "examples" / "headings.toml"
MEETINGS = ROOT / "examples" / "meeting_summaries.jsonl"
P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]


def headings_results(tmp_path: Path) -> Path:
    """The code headings DAG on the example cases (no model needed): one pass, three fails."""
    out = tmp_path / "headings.jsonl"
    rows = [json.loads(x) for x in MEETINGS.read_text().splitlines()]
    cases = [LLMTestCase(**row) for row in rows]
    evaluate(cases, load_metrics(HEADINGS), model=FakeJudge(), out=out)
    return out


def mixed_results(tmp_path: Path) -> Path:
    """A DAG, a G-Eval and a likelihood metric on the example cases."""
    out = tmp_path / "mixed.jsonl"
    rows = [json.loads(x) for x in MEETINGS.read_text().splitlines()]
    cases = [LLMTestCase(**row) for row in rows]
    geval = GEval(name="Clarity", evaluation_params=P, evaluation_steps=["Read."])
    likely = LikelihoodMetric(name="Likely", normalise="min")
    judge = FakeJudge(scores={"Score (": [0.0] * 4 + [0.1, 0.2, 0.4, 0.2, 0.1, 0.0, 0.0]})
    metrics = [*load_metrics(HEADINGS), geval, likely]
    evaluate(cases, metrics, model=judge, out=out, include_reason=False)
    return out


def headings_definition() -> dict:
    return load_metrics(HEADINGS)[0].to_dict()


def trace_of(path: Path, case_id: str, metric: str = "Summary headings") -> dict:
    return next(
        x["trace"] for x in result_items(path) if x["case_id"] == case_id and x["metric"] == metric
    )


# -- the drawings -------------------------------------------------------------------------


def test_the_dag_graph_is_read_from_the_definition(tmp_path: Path):
    graph = graph_from_definition(headings_definition())
    assert graph.roots == ["extract"]
    assert set(graph.nodes) == {
        "extract",
        "headings",
        "order",
        "headings#0",
        "order#0",
        "order#1",
        "order#2",
    }
    assert graph.nodes["headings"].options == ["No", "Yes"]
    assert graph.nodes["order#1"].score == pytest.approx(0.4)
    walk = walk_on(graph, trace_of(headings_results(tmp_path), "swapped"))
    assert {(e.source, e.target, e.label) for e in walk.taken} == {
        ("extract", "headings", ""),
        ("headings", "order", "Yes"),
        ("order", "order#2", "All out of order"),
    }


def test_layers_follow_the_longest_path_and_never_overlap():
    graph = graph_from_definition(headings_definition())
    width, height = layout(graph)
    depth = {n.id: n.depth for n in graph.nodes.values()}
    assert depth == {
        "extract": 0,
        "headings": 1,
        "headings#0": 2,
        "order": 2,
        "order#0": 3,
        "order#1": 3,
        "order#2": 3,
    }
    for a in graph.nodes.values():
        assert a.x >= 0 and a.x + a.width <= width and a.y + a.height <= height
        for b in graph.nodes.values():
            if a is not b and a.depth == b.depth:
                assert a.x + a.width <= b.x or b.x + b.width <= a.x


def test_a_failing_walk_is_drawn_with_its_path_and_leaf(tmp_path: Path):
    svg = dag_svg(trace_of(headings_results(tmp_path), "missing-conclusion"), headings_definition())
    assert svg.startswith("<svg") and 'class="dag-walk"' in svg
    assert svg.count('<path class="edge taken"') == 2  # extract -> headings -> leaf 0.00
    assert 'class="node leaf fired"' in svg and ">score 0.00<" in svg
    assert 'class="node judge idle" data-node="order"' in svg  # never reached
    assert "100.0%" in svg and "computed value: False" in svg


def test_without_a_definition_the_path_alone_is_drawn(tmp_path: Path):
    svg = dag_svg(trace_of(headings_results(tmp_path), "ordered"))
    assert svg.count('<path class="edge taken"') == 3
    assert 'data-node="order"' in svg and 'data-node="leaf#0"' in svg


def test_a_geval_distribution_is_bars_with_the_weighted_mean_marked():
    svg = score_bars(
        {"1": 0.1, "2": 0.2, "3": 0.6, "4": 0.05, "5": 0.05}, weighted=2.75, most_likely=3
    )
    assert svg.count('class="bar"') == 4 and svg.count('class="bar top"') == 1
    assert 'class="marker"' in svg and "weighted 2.75" in svg


def test_likelihood_tokens_are_shaded_and_the_weakest_marked():
    page = token_html(
        {"tokens": [["<b>", -0.1], [" Paris", -7.5], [" is", -0.3]], "weakest_token": 1}
    )
    assert '<span class="tok weakest"' in page and "&lt;b&gt;" in page and "<b>" not in page
    assert "rgba(220,38,38,0.80)" in page  # -7.5 of -8 at 0.85 strength


def test_rows_failing_first_and_one_per_case_and_metric(tmp_path: Path):
    path = mixed_results(tmp_path)
    files = [read_results(path)]
    page = render_page(files, pair_results(files))
    order = re.findall(
        r'<tbody class="case" id="row-\d+" data-index="\d+" data-case="([^"]+)"'
        r' data-metric="Summary headings"',
        page,
    )
    assert order[-1] == "ordered"  # the one passing case last
    assert page.count('<tbody class="case"') == 12
    assert 'http-equiv="Content-Security-Policy" content="default-src \'none\'' in page


def test_text_from_a_results_file_is_escaped(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    writer = ResultWriter(path)
    bad = "<script>alert(1)</script>"
    result = MetricResult("m", 0.1, False, 0.5, reason=bad, trace={"type": "x", "v": bad})
    writer.write(ResultLine(0, bad, result, "judge", "a" * 64).to_dict())
    writer.close()
    files = [read_results(path)]
    page = render_page(files, pair_results(files))
    assert bad not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# -- in a browser ---------------------------------------------------------------------------


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _browser() -> str:
    browser = _chromium()
    if browser is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI installs chromium for this test (.ci/run)")
        pytest.skip("no chromium on this machine")
    return browser


def _flags(tmp_path: Path, net_log: Path | None = None) -> list[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    if net_log is not None:
        flags.append(f"--log-net-log={net_log}")
    return flags


def _dom(browser: str, flags: list[str], url: str) -> str:
    done = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    )
    return done.stdout


def page_requests(net_log: Path) -> list[str]:
    """The URLs a page (a file:// document) asked the network for, from Chromium's net log;
    the browser's own background requests (updates, accounts) are not the page's."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start
        and "file://" in str(event["params"].get("network_isolation_key", ""))
        and not event["params"]["url"].startswith(("file:", "data:"))
    ]


def test_the_viewer_in_a_browser(tmp_path: Path):
    browser = _browser()
    path = mixed_results(tmp_path)
    report = tmp_path / "report.html"
    assert write_view([path], report) == 12
    page = report.read_text()
    for fetch in ('src="', 'href="http', "url(", "<link", "@import", "fetch(", "XMLHttpRequest"):
        assert fetch not in page, fetch
    url = report.resolve().as_uri()
    net_log = tmp_path / "net.json"
    (row,) = re.findall(
        r'id="row-(\d+)" data-index="\d+" data-case="missing-conclusion" '
        r'data-metric="Summary headings"',
        page,
    )
    dom = _dom(browser, _flags(tmp_path, net_log), f"{url}#open={row}")
    bodies = re.findall(r'<tbody class="case[ "][^>]*>', dom)
    assert len(bodies) == 12 and all("hidden" not in b for b in bodies)
    assert "showing 12 of 12" in dom  # the script ran
    start = dom.index('data-case="missing-conclusion" data-metric="Summary headings"')
    case = dom[start : dom.index("</tbody>", start)]
    assert 'aria-expanded="true"' in case and "<svg" in case and 'class="dag-walk"' in case
    assert '<path class="edge taken"' in case
    assert page_requests(net_log) == []
    failing = _dom(browser, _flags(tmp_path), url + "#status=failing")
    shown = [b for b in re.findall(r'<tbody class="case[ "][^>]*>', failing) if "hidden" not in b]
    expected = len(re.findall(r"data-tags=\"(?:fail|error) failing", page))
    assert len(shown) == expected and 3 <= expected < 12  # the 3 headings failures, at least
    shot = tmp_path / "view.png"
    subprocess.run(
        [browser, *_flags(tmp_path), "--window-size=1400,1000", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=120,
    )
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one


def test_the_request_check_sees_a_page_that_fetches(tmp_path: Path):
    """The check above is no formality: a page that fetches is caught."""
    browser = _browser()
    leak = tmp_path / "leak.html"
    leak.write_text('<!DOCTYPE html><img src="http://127.0.0.1:9/x.png">')
    net_log = tmp_path / "net.json"
    _dom(browser, _flags(tmp_path, net_log), leak.resolve().as_uri())
    assert page_requests(net_log) == ["http://127.0.0.1:9/x.png"]


def test_two_files_side_by_side(tmp_path: Path):
    browser = _browser()
    base = headings_results(tmp_path)
    new = tmp_path / "new.jsonl"
    text = base.read_text().replace(
        '"score": 0.0, "success": false', '"score": 0.6, "success": true'
    )
    new.write_text(text)
    report = tmp_path / "pair.html"
    result = CliRunner().invoke(main, ["view", str(base), str(new), "--out", str(report)])
    assert result.exit_code == 0, result.output
    dom = _dom(browser, _flags(tmp_path), report.resolve().as_uri() + "#status=to-pass")
    shown = [b for b in re.findall(r'<tbody class="case[ "][^>]*>', dom) if "hidden" not in b]
    assert len(shown) == 2  # missing-conclusion and no-headings went from 0.0 to 0.6
    assert dom.count('class="sides n2"') == 4 and "Δ B−A" in dom


def test_view_errors_are_one_line(tmp_path: Path):
    result = CliRunner().invoke(
        main, ["view", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "v.html")]
    )
    assert result.exit_code == 2 and result.output.startswith("Error: ")
    assert "nope.jsonl: cannot read" in result.output


# -- a real run -----------------------------------------------------------------------------


@pytest.mark.model
def test_a_real_dag_run_is_viewed_and_compared(tmp_path: Path, default_model_path: Path):
    from anvil_local.judge.native import llama_cpp_version

    data = tmp_path / "two.jsonl"
    data.write_text("".join(MEETINGS.read_text().splitlines(keepends=True)[:2]))
    runs = {}
    for name, metric in (("code", HEADINGS), ("model", ROOT / "examples" / "headings_llm.toml")):
        runs[name] = tmp_path / f"{name}.jsonl"
        args = ["eval", "--metric", str(metric), "--data", str(data), "--out", str(runs[name])]
        args += ["--model", str(default_model_path), "--no-reason", "--no-progress"]
        ran = CliRunner().invoke(main, args)
        assert ran.exit_code in (0, 1), ran.output
    meta = read_results(runs["model"]).meta
    assert meta is not None and meta.last_run is not None
    assert meta.last_run.llama_cpp == llama_cpp_version()
    assert meta.model_sha256 == result_items(runs["model"])[0]["model_sha256"]
    pair = ["--pair", "Summary headings=Summary headings (model)"]
    report = tmp_path / "view.html"
    viewed = CliRunner().invoke(
        main, ["view", str(runs["code"]), str(runs["model"]), "--out", str(report), *pair]
    )
    assert viewed.exit_code == 0, viewed.output
    page = report.read_text()
    assert page.count('class="dag-walk"') == 4 and "binary" in page and "non_binary" in page
    compared = CliRunner().invoke(main, ["compare", str(runs["code"]), str(runs["model"]), *pair])
    assert compared.exit_code in (0, 1), compared.output
    assert "| Summary headings → Summary headings (model) | 2 |" in compared.stdout
