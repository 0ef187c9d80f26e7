"""What a user sees in a real browser, offline: a fresh run's `learning_curve.html` and `audit.html`, and the static
docs pages of `options/02_library`, `methods/05_teamtr` and `learn/09_regret_matching` (`tools/build_docs.py`), opened in headless Chromium with the network blocked. Each
figure must have drawn its traces (SVG paths with data) and math must be typeset. Screenshots go to the test's
tmp dir. Skips, saying why, where Chromium is not installed (`.ci/run` installs it from Debian packages when it can).
"""
import importlib.util, os, re, shutil, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium); "
                                                          "the browser checks need a real browser")
OFFLINE = ["--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]     # any http(s) request fails


def chromium(page: Path, *args, budget_ms: int = 15000) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *OFFLINE, f"--virtual-time-budget={budget_ms}", *args,
           page.resolve().as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def rendered(page: Path, shot: Path) -> str:
    "The page's DOM after its scripts ran (offline), and a screenshot of it."
    chromium(page, f"--screenshot={shot}", "--window-size=1200,1600")
    assert shot.exists() and shot.stat().st_size > 5000, f"no screenshot of {page.name}"
    return chromium(page, "--dump-dom").stdout


def drawn_figures(dom: str) -> list[int]:
    "For each plotly figure in the DOM, how many of its traces drew something (a path with data, or a heatmap image)."
    out = []
    for fig in re.split(r'class="[^"]*plot-container plotly', dom)[1:]:
        traces = re.split(r'<g class="(?:trace[ "]|hm")', fig)[1:]           # not the legend's "traces"
        out.append(sum(bool(re.search(r'd="M-?[\d.]+[, ]-?[\d.]+[^"]*[LHVCZAlhvcza]', t) or "<image" in t) for t in traces))
    return out


def figure_divs(html: str) -> int:
    return len(re.findall(r'class="plotly-graph-div"', html))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    "A fresh PA-MAGRPO run (learning curve + audit), small."
    from marl_llm.methods.pa_magrpo import PAMAGRPO, PAMAGRPOConfig
    from marl_llm.learn.pipeline import fit
    from marl_llm.experiments.run_audit import write_audit
    out = tmp_path_factory.mktemp("run") / "run"
    m = PAMAGRPO(PAMAGRPOConfig(game="harvest", layout="small", updates=2, envs=1, group=2, horizon=30, eval_every=1,
                                eval_envs=2, record_episodes=1))
    fit(m, out, quiet=True)
    write_audit(out, trainer=m)                       # what `marl-llm train` does at the end of a finished run
    return out


@pytest.mark.parametrize("name", ["learning_curve.html", "audit.html"])
def test_run_reports_draw_offline(run_dir, name, tmp_path):
    page = run_dir / name
    html = page.read_text()
    assert not re.search(r"<script[^>]+src=[\"']https?://", html), f"{name} loads a script from the network"
    assert "https://" not in re.sub(r"https://(www\.)?(w3|plotly)\.[a-z]+[^\"' ]*", "", html)    # only namespace/attribution URLs
    dom = rendered(page, tmp_path / f"{page.stem}.png")
    counts = drawn_figures(dom)
    assert counts and len(counts) == figure_divs(html), (name, counts)
    assert all(c > 0 for c in counts), f"{name}: figures without drawn traces: {counts}"


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory):
    "The static docs of options/02_library, methods/05_teamtr and learn/09_regret_matching (executed at their CI parameters, rendered offline)."
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "tools" / "build_docs.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    out = tmp_path_factory.mktemp("docs")
    stats = mod.build(["options/02_library", "methods/05_teamtr", "learn/09_regret_matching"], out=out, quiet=True)
    return out / "site", stats


@pytest.mark.parametrize("name,math", [("options/02_library", False), ("methods/05_teamtr", True), ("learn/09_regret_matching", True)])
def test_docs_pages_draw_offline(docs_site, name, math, tmp_path):
    site, stats = docs_site
    page = site / f"{name}.html"
    assert not stats[name]["remote"], f"{name} loads from the network: {stats[name]['remote']}"
    dom = rendered(page, tmp_path / f"{name.replace('/', '_')}.png")
    counts = drawn_figures(dom)
    assert stats[name]["figures"] >= 1 and len(counts) == stats[name]["figures"], (name, counts, stats[name])
    assert all(c > 0 for c in counts), f"{name}: figures without drawn traces: {counts}"
    if math:
        assert len(re.findall(r'class="MathJax(?:_Display)?"', dom)) > 0, f"{name}: no typeset math"
        assert "Math Processing Error" not in dom, f"{name}: MathJax failed on a formula (a font it could not load?)"
    index = (site / "index.html").read_text()
    assert f"href='{name}.html'" in index


def test_static_stepper_steps_offline(tmp_path):
    "The stepper's static page: clicking ▶ changes the step header and moves the markers to the recorded positions."
    pw = pytest.importorskip("playwright.sync_api", reason="playwright (pip) drives Chromium for the click test")
    from marl_llm.options.env import OptionEnv, RandomOptionPolicy
    from marl_llm.analysis.stepper import EpisodeStepper, StaticStepper
    o = OptionEnv("overcooked", "cramped_room", n_envs=1, seed=0, horizon=40, record=True)
    pol = RandomOptionPolicy(0)
    o.reset()
    while o.pending: o.step(pol(o.pending)[0])
    ep = o.episodes[0]
    page_path = StaticStepper(EpisodeStepper(ep)).save(tmp_path / "stepper.html")
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.route("http*://**", lambda route: route.abort())               # offline: any network request fails
        page.goto(page_path.resolve().as_uri())
        page.wait_for_selector("#stepper .grid .main-svg")
        markers = lambda: page.evaluate("() => { const d = document.querySelector('#stepper .grid').data;"
                                        f" return d.slice(-{len(ep.agents)}).map(t => [t.x[0], t.y[0]]); }}")
        header = lambda: page.inner_text("#stepper .hdr")
        assert header().startswith(f"step {ep.frames[0]['t']}") and markers() == ep.frames[0]["state"]["pos"]
        moved = False
        for k in range(1, 12):
            before = markers()
            page.click("#stepper button[data-go=next]")
            assert header().startswith(f"step {ep.frames[k]['t']} (frame {k + 1}/"), header()
            assert markers() == ep.frames[k]["state"]["pos"], k
            moved |= markers() != before
        assert moved, "no marker moved in 11 steps"
        page.click("#stepper button[data-go=first]")
        assert header().startswith(f"step {ep.frames[0]['t']} (frame 1/")
        page.screenshot(path=str(tmp_path / "stepper.png"), full_page=True)
        browser.close()


def test_plain_nbconvert_keeps_the_figures(docs_site, tmp_path):
    "An executed notebook converted by plain nbconvert (no marl_llm post-processing) still draws its figures offline."
    import nbformat
    from nbconvert import HTMLExporter
    from marl_llm.core.records import write_plotly_js
    site, _ = docs_site
    nb = nbformat.read(site.parent / "executed" / "options/02_library.ipynb", as_version=4)
    html_copies = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert html_copies and all("Plotly.newPlot" in o["data"].get("text/html", "") for o in html_copies)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    page = tmp_path / "02_library.html"
    page.write_text(body, encoding="utf-8"); write_plotly_js(tmp_path)
    counts = drawn_figures(rendered(page, tmp_path / "02_library_plain.png"))
    assert len(counts) == len(html_copies) and all(c > 0 for c in counts), counts
