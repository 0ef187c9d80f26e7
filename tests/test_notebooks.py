"""Run every notebook under nbs/ (its folders too) through papermill with its CI-sized `parameters`, each in its own
folder as the working directory (so `../data/...` finds the committed results).

Cells flagged for nbdev to skip in tests are skipped here too: `#| gpu` (unless CUDA is available),
`#| notest` and `#| eval: false`. A failing cell fails the test with the notebook, the cell number and
its source in the message.
"""
import os, re, time, pathlib
import nbformat, papermill as pm, pytest

NBS = pathlib.Path(__file__).resolve().parents[1] / "nbs"
NOTEBOOKS = sorted(p.relative_to(NBS).as_posix() for p in NBS.rglob("*.ipynb")
                   if not any(part.startswith(("_", ".")) for part in p.relative_to(NBS).parts))
# Budgets that catch a hung or runaway notebook, not speed targets (those live in benchmarks/). On a 2-core AVX2-only
# machine methods/06_tracer takes ~1200 s under the two test workers (one TRACER fit ~285 s, at 7823c1f and after it alike).
CELL_TIMEOUT = int(os.environ.get("MARL_LLM_CELL_TIMEOUT", "1200"))    # seconds, any one cell
NB_TIMEOUT = int(os.environ.get("MARL_LLM_NB_TIMEOUT", "1800"))        # seconds, a whole notebook


def _has_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def skip_flags(source: str) -> set:
    "nbdev directives on a cell that mean 'do not run this in tests'."
    flags = set()
    for line in source.splitlines():
        m = re.match(r"^\s*#\s*\|\s*(.*)$", line)
        if not m:
            if line.strip(): break        # directives come first
            continue
        d = m.group(1).strip().lower()
        if d in ("gpu", "notest"): flags.add(d)
        if re.match(r"eval\s*:\s*false", d): flags.add("eval:false")
    return flags


def prepared(path: pathlib.Path, out_dir: pathlib.Path) -> pathlib.Path:
    "A copy of the notebook with skipped cells turned into markdown notes (so cell numbers stay put)."
    nb = nbformat.read(path, as_version=4)
    cuda = _has_cuda()
    for cell in nb.cells:
        if cell.cell_type != "code": continue
        flags = skip_flags(cell.source)
        if ("gpu" in flags and not cuda) or "notest" in flags or "eval:false" in flags:
            cell.cell_type, cell.source = "markdown", "*(skipped in tests: " + ", ".join(sorted(flags)) + ")*"
            for k in ("outputs", "execution_count"): cell.pop(k, None)
    dst = out_dir / path.name
    nbformat.write(nb, dst)
    return dst


def test_skip_flags():
    assert skip_flags("#| gpu\nx = 1") == {"gpu"}
    assert skip_flags("#| export\n#|notest\nx") == {"notest"}
    assert skip_flags("#| eval: false\n") == {"eval:false"}
    assert skip_flags("x = 1\n#| gpu") == set()          # not a directive after code


def test_every_notebook_is_found():
    assert "core/01_records.ipynb" in NOTEBOOKS and "index.ipynb" in NOTEBOOKS and "90_cli.ipynb" in NOTEBOOKS
    folders = {n.split("/")[0] for n in NOTEBOOKS if "/" in n}
    assert folders == {"core", "games", "models", "options", "learn", "analysis", "methods", "experiments", "tools"}, folders


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook(name, tmp_path):
    src = prepared(NBS / name, tmp_path)
    t0 = time.time()
    try:
        pm.execute_notebook(str(src), str(tmp_path / ("out_" + src.name)), kernel_name="python3",
                            cwd=str((NBS / name).parent), execution_timeout=CELL_TIMEOUT, progress_bar=False,
                            log_output=False)
    except pm.PapermillExecutionError as e:
        src_lines = (e.source or "").strip().splitlines()
        head = "\n    ".join(src_lines[:12])
        pytest.fail(f"{name}: cell {e.cell_index} (execution {e.exec_count}) raised {e.ename}: {e.evalue}\n"
                    f"  cell source:\n    {head}", pytrace=False)
    elapsed = time.time() - t0
    assert elapsed < NB_TIMEOUT, f"{name} took {elapsed:.0f}s, over the {NB_TIMEOUT}s notebook budget"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_has_one_parameters_cell(name):
    "papermill injects sweep values after the cell tagged `parameters`; every notebook has exactly one."
    nb = nbformat.read(NBS / name, as_version=4)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{name}: {len(tagged)} cells tagged 'parameters' (cells {tagged}); need exactly 1"
