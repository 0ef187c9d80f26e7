"""The docs as a static site without Quarto: every notebook executed (papermill, its CI-sized parameters) and
rendered to HTML from its outputs, plotly figures drawn with a local plotly.js, math with a local MathJax
(the `jupyter-server-mathjax` package), an index with the notebook map. No CDN: the site opens offline.

    python tools/build_docs.py                      # all notebooks -> _docs/site/index.html (~25 min on 2 cores)
    python tools/build_docs.py options/02_library methods/05_teamtr # some notebooks (the index lists what was built)
    python tools/build_docs.py --no-execute         # render the executed copies already in _docs/executed

`make docs` runs `nbdev-docs` when Quarto is on PATH, this script otherwise.
"""
from __future__ import annotations

import argparse, html, importlib.util, json, re, shutil, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"
FOLDERS = ("", "core", "games", "models", "options", "learn", "analysis", "methods", "experiments", "tools")   # layer order
PLOTLY_MIME, WIDGET_MIME = "application/vnd.plotly.v1+json", "application/vnd.jupyter.widget-view+json"
MATHJAX_URL = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"   # the config the package ships


def _prepared(path: Path, out_dir: Path) -> Path:
    "The notebook with the cells tests skip (`#| gpu` without CUDA, `notest`, `eval: false`) turned into notes."
    spec = importlib.util.spec_from_file_location("_nbtests", ROOT / "tests" / "test_notebooks.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod.prepared(path, out_dir)


def notebooks() -> list[str]:
    "Every notebook under nbs/ as its path without `.ipynb` (`options/02_library`), folders in layer order."
    names = [p.relative_to(NBS).with_suffix("").as_posix() for p in NBS.rglob("*.ipynb")
             if not any(part.startswith(("_", ".")) for part in p.relative_to(NBS).parts)]
    return sorted(names, key=lambda n: (FOLDERS.index(n.rpartition("/")[0]) if n.rpartition("/")[0] in FOLDERS else len(FOLDERS), n))


def execute(name: str, out: Path, force: bool = False) -> Path:
    "Run `nbs/<name>.ipynb` with papermill (cwd: its folder) into `out/<name>.ipynb`, unless a newer copy is there."
    import papermill as pm
    src, dst = NBS / f"{name}.ipynb", out / f"{name}.ipynb"
    if dst.exists() and dst.stat().st_mtime > src.stat().st_mtime and not force: return dst
    dst.parent.mkdir(parents=True, exist_ok=True)
    prep_dir = (out / "_prep" / name).parent
    prep_dir.mkdir(parents=True, exist_ok=True)
    prep = _prepared(src, prep_dir)
    pm.execute_notebook(str(prep), str(dst), kernel_name="python3", cwd=str(src.parent), progress_bar=False, log_output=False)
    return dst


def static_outputs(nb) -> dict:
    "Every plotly output keeps (or gets) its HTML copy (`figure_html`: local plotly.js); widgets become a note; counts."
    from marl_llm.core.records import figure_html
    n_fig, n_widget = 0, 0
    for cell in nb.cells:
        if cell.cell_type != "code": continue
        for o in cell.get("outputs", []):
            d = o.get("data", {})
            if PLOTLY_MIME in d:
                if "Plotly.newPlot" not in d.get("text/html", ""): d["text/html"] = figure_html(d[PLOTLY_MIME])
                d.pop(PLOTLY_MIME); d.pop("image/png", None); n_fig += 1
            if WIDGET_MIME in d:
                d.pop(WIDGET_MIME); n_widget += 1
                if "text/html" not in d:
                    d["text/plain"] = "(an interactive widget: run the notebook in JupyterLab; the static figures above and below show its content)"
    nb.metadata.pop("widgets", None)                             # megabytes of widget state a static page cannot use
    return {"figures": n_fig, "widgets": n_widget}


def render(executed: Path, site: Path, name: str) -> dict:
    "One executed notebook -> `site/<name>.html` (nbconvert's lab template, local MathJax, local plotly.js beside it)."
    import nbformat
    from nbconvert import HTMLExporter
    from marl_llm.core.records import write_plotly_js
    nb = nbformat.read(executed, as_version=4)
    counts = static_outputs(nb)
    up = "../" * name.count("/")                                  # a page in a folder reaches the site's root
    ex = HTMLExporter(template_name="lab")
    ex.mathjax_url = up + MATHJAX_URL
    body, _ = ex.from_notebook_node(nb)
    body = re.sub(r"<script[^>]+src=\"https?://[^\"]+\"[^>]*>\s*</script>", "", body)     # nothing from a CDN:
    body = re.sub(r"<script type=\"module\">(?:(?!</script>).)*?cdnjs(?:(?!</script>).)*</script>", "", body, flags=re.S)  # mermaid
    # the packaged MathJax ships only the STIX-Web fonts: ask for them (its default TeX fonts fail as "Math Processing Error")
    body = body.replace("messageStyle: 'none',", "messageStyle: 'none', 'HTML-CSS': {availableFonts: [], preferredFont: null, "
                        "webFont: 'STIX-Web', imageFont: null},", 1)
    body = re.sub(r"(<body[^>]*>)", rf"\1<p style='margin:8px 16px'><a href='{up}index.html'>&larr; marl_llm notebooks</a></p>", body, 1)
    out = site / f"{name}.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_plotly_js(out.parent)                                   # figures load plotly.min.js from the page's folder
    out.write_text(body, encoding="utf-8")
    remote = sorted(set(re.findall(r"(?:src|href)=[\"'](https?://[^\"']+)", body)))
    return {**counts, "bytes": out.stat().st_size, "remote": remote}


def title_of(path: Path) -> tuple[str, str]:
    "A notebook's title and one-line summary (its first markdown cell: '# Title' and '> summary')."
    nb = json.loads(path.read_text())
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            src = "".join(c["source"])
            t = re.search(r"^#\s+(.+)$", src, re.M); s = re.search(r"^>\s*(.+)$", src, re.M)
            return (t.group(1).strip() if t else path.stem), (s.group(1).strip() if s else "")
    return path.stem, ""


def index_page(names: list[str], stats: dict) -> str:
    "The site's index: every built notebook, grouped by folder in layer order, with its title and summary."
    rows, folder = [], None
    for n in names:
        f = n.rpartition("/")[0]
        if f != folder:
            folder = f
            rows.append(f"<tr><th colspan='3' style='text-align:left;padding-top:14px'>{html.escape(f + '/' if f else 'nbs/')}</th></tr>")
        t, s = title_of(NBS / f"{n}.ipynb")
        st = stats.get(n, {})
        rows.append(f"<tr><td><a href='{n}.html'><code>{n}</code></a></td><td><b>{html.escape(t)}</b><br>"
                    f"<span style='color:#555'>{html.escape(s)}</span></td><td>{st.get('figures', 0)}</td></tr>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>marl_llm notebooks</title></head>"
            "<body style='font-family:sans-serif;max-width:1100px;margin:24px auto'>"
            "<h1>marl_llm</h1><p>Every notebook executed at its CI-sized parameters and rendered offline "
            "(local plotly.js and MathJax; no CDN). Built by <code>tools/build_docs.py</code>.</p>"
            "<table style='border-collapse:collapse' cellpadding='6'><tr><th>notebook</th><th>what it is</th><th>figures</th></tr>"
            + "".join(rows) + "</table></body></html>")


def mathjax_dir() -> Path:
    import jupyter_server_mathjax
    return Path(jupyter_server_mathjax.__file__).parent / "static"


def build(names: list[str] | None = None, out: Path = ROOT / "_docs", execute_first: bool = True, force: bool = False,
          quiet: bool = False) -> dict:
    "Execute (optionally) and render `names` (default: every notebook) into `out/site`; returns per-page stats."
    from marl_llm.core.records import write_plotly_js
    names = names or notebooks()
    site, executed = out / "site", out / "executed"
    site.mkdir(parents=True, exist_ok=True)
    write_plotly_js(site)
    if not (site / "mathjax" / "MathJax.js").exists(): shutil.copytree(mathjax_dir(), site / "mathjax", dirs_exist_ok=True)
    stats = {}
    for n in names:
        t0 = time.time()
        src = execute(n, executed, force) if execute_first else executed / f"{n}.ipynb"
        if not src.exists(): raise FileNotFoundError(f"no executed copy of {n} in {str(executed)!r}; run without --no-execute")
        stats[n] = render(src, site, n)
        if not quiet: print(f"{n:28s} {stats[n]['figures']:3d} figures {stats[n]['bytes'] / 1e6:6.2f} MB  {time.time() - t0:6.1f} s"
                            + (f"  remote: {stats[n]['remote']}" if stats[n]["remote"] else ""), flush=True)
    on_site = {p.relative_to(site).with_suffix("").as_posix() for p in site.rglob("*.html")}
    built = [n for n in notebooks() if n in on_site and n != "index"]
    (site / "index.html").write_text(index_page(built, stats), encoding="utf-8")
    return stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="notebooks (paths under nbs/, e.g. options/02_library); default: all")
    ap.add_argument("--out", default=str(ROOT / "_docs"))
    ap.add_argument("--no-execute", action="store_true", help="render the executed copies already there")
    ap.add_argument("--force", action="store_true", help="re-execute even when the executed copy is newer")
    a = ap.parse_args(argv)
    names = [n.removesuffix(".ipynb") for n in a.names]
    bad = [n for n in names if not (NBS / f"{n}.ipynb").exists()]
    if bad: ap.error(f"no notebook {bad[0]!r} in nbs/")
    build(names or None, Path(a.out), not a.no_execute, a.force)
    print(f"site: {Path(a.out) / 'site' / 'index.html'}")


if __name__ == "__main__":
    sys.exit(main())
