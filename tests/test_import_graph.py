"""The house stays as built: imports point down the layers only, no module imports itself back through others,
and no module is over the size bound.

Every module of `marl_llm/` is parsed (ast, nothing is imported), with its top-level *and* function-local imports.
A module may import from its own folder or a lower one:

    core < games < models < options < learn < analysis < methods < experiments < tools, cli (and the package's __init__)

Run `python tests/test_import_graph.py` to print the layer table (modules, lines and floors per folder).
"""
import ast, pathlib, sys
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "marl_llm"
LAYERS = ["core", "games", "models", "options", "learn", "analysis", "methods", "experiments", "tools", "cli", ""]
MAX_LINES = 400


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__": parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py")) if p.name != "_modidx.py"}


def layer(mod: str) -> int:
    "Index in LAYERS of a module's folder (`marl_llm.cli` is the `cli` layer, `marl_llm` itself the top)."
    parts = mod.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS) - 1


def targets(mod: str, node) -> list[str]:
    "The package modules an import statement of `mod` reaches (a name imported from a package counts as its submodule)."
    is_pkg = MODULES[mod].name == "__init__.py"
    if isinstance(node, ast.Import): cands = [a.name for a in node.names]
    else:
        if node.level:
            base = mod.split(".") if is_pkg else mod.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
            src = ".".join(base + ([node.module] if node.module else []))
        else: src = node.module or ""
        cands = [f"{src}.{a.name}" if f"{src}.{a.name}" in MODULES else src for a in node.names]
    out = []
    for c in cands:
        while c and c not in MODULES: c = c.rpartition(".")[0]
        if c and c != mod and c.startswith("marl_llm"): out.append(c)
    return out


def import_graph() -> dict[str, set[str]]:
    "{module: modules it imports}, top-level and function-local imports alike (`marl_llm` itself left out as a target)."
    g = {}
    for m, p in MODULES.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        g[m] = {t for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for t in targets(m, n)} - {"marl_llm"}
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    "Strongly connected components with more than one module (Tarjan)."
    idx, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        idx[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in g[v]:
            if w not in idx: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    sys.setrecursionlimit(max(1000, 10 * len(g)))
    for v in g:
        if v not in idx: visit(v)
    return out


def floors(g: dict[str, set[str]]) -> dict[str, int]:
    "Import floor of each module: 1 + the highest floor it imports (1: imports nothing of the package)."
    memo = {}
    def f(v, path=()):
        if v in memo: return memo[v]
        if v in path: return 0
        memo[v] = 1 + max((f(w, path + (v,)) for w in g[v]), default=0)
        return memo[v]
    return {v: f(v) for v in g}


def layer_table(g=None) -> str:
    g = g or import_graph()
    fl = floors(g)
    rows = [f"{'folder':12s} {'modules':>7s} {'lines':>6s} {'largest':>28s} {'floors':>7s}"]
    for L in LAYERS:
        ms = [m for m in MODULES if layer(m) == LAYERS.index(L) and MODULES[m].name != "__init__.py"]
        if not ms: continue
        lines = {m: len(MODULES[m].read_text(encoding="utf-8").splitlines()) for m in ms}
        big = max(ms, key=lines.get)
        rows.append(f"{L or '(top)':12s} {len(ms):7d} {sum(lines.values()):6d} {big.rpartition('.')[2] + ' ' + str(lines[big]):>28s} "
                    f"{min(fl[m] for m in ms):>3d}-{max(fl[m] for m in ms):<3d}")
    rows.append(f"longest import chain: {max(fl.values())} floors; cycles: {cycles(g) or 'none'}")
    return "\n".join(rows)


def test_every_module_is_parsed():
    assert "marl_llm.core.records" in MODULES and "marl_llm.cli" in MODULES
    assert all(layer(m) < len(LAYERS) - 1 for m in MODULES if m != "marl_llm"), \
        [m for m in MODULES if layer(m) == len(LAYERS) - 1 and m != "marl_llm"]


def test_imports_point_down():
    g = import_graph()
    up = [f"{m} (layer {LAYERS[layer(m)]}) imports {t} (layer {LAYERS[layer(t)]})"
          for m, ts in sorted(g.items()) for t in sorted(ts) if layer(t) > layer(m)]
    print(layer_table(g))
    assert not up, "imports from a higher layer:\n  " + "\n  ".join(up)


def test_no_cycles():
    cs = cycles(import_graph())
    assert not cs, f"import cycles (top-level or function-local): {cs}"


def test_no_module_over_bound():
    big = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"


# experiments with the shared API (experiments.common.API); the audit tool and the zero-shot harness are not experiments of that kind
NOT_EXPERIMENTS = {"marl_llm.experiments", "marl_llm.experiments.common", "marl_llm.experiments.run_audit", "marl_llm.experiments.zero_shot"}


def test_experiments_share_one_api():
    "Every experiment module defines `run`, `summarise` and `figure` (experiments/01_common)."
    missing = {}
    for m, p in MODULES.items():
        if not m.startswith("marl_llm.experiments") or m in NOT_EXPERIMENTS: continue
        defs = {n.name for n in ast.parse(p.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)}
        if lack := sorted({"run", "summarise", "figure"} - defs): missing[m] = lack
    assert not missing, f"experiment modules without the shared API: {missing}"


def test_checker_sees_local_and_relative_imports(tmp_path):
    "The parser resolves relative imports and finds imports inside functions."
    src = "from ..core.records import Turn\ndef f():\n    from ..learn import pipeline\n    import marl_llm.games.grid\n"
    tree = ast.parse(src)
    got = {t for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for t in targets("marl_llm.models.policy", n)}
    assert got == {"marl_llm.core.records", "marl_llm.learn.pipeline", "marl_llm.games.grid"}


if __name__ == "__main__":
    print(layer_table())


def defined_names(mod: str) -> set:
    "Names a module binds at top level (functions, classes, assignments, imports) and its submodules."
    names = {m.rsplit(".", 1)[1] for m in MODULES if m.startswith(mod + ".") and m.count(".") == mod.count(".") + 1}
    for n in ast.parse(MODULES[mod].read_text()).body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): names.add(n.name)
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                names |= {e.id for e in ast.walk(t) if isinstance(e, ast.Name)}
        elif isinstance(n, (ast.Import, ast.ImportFrom)): names |= {(a.asname or a.name).split(".")[0] for a in n.names}
    return names


def stale_script_refs(path: pathlib.Path) -> list:
    "`from marl_llm.m import x` and `import marl_llm.m as a` ... `a.x` in a script where `m` no longer has `x`."
    tree, alias, bad = ast.parse(path.read_text()), {}, []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("marl_llm"):
            if n.module not in MODULES: bad.append(f"{path.name}:{n.lineno} no module {n.module}"); continue
            bad += [f"{path.name}:{n.lineno} {n.module} has no {a.name}" for a in n.names if a.name not in defined_names(n.module)]
        elif isinstance(n, ast.Import):
            for a in n.names:
                if a.name.startswith("marl_llm.") and a.asname: alias.setdefault(a.asname, set()).add(a.name)
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in alias:
            mods = alias[n.value.id]
            if all(m in MODULES and n.attr not in defined_names(m) for m in mods):
                bad.append(f"{path.name}:{n.lineno} {'/'.join(sorted(mods))} has no {n.attr}")
    return bad


def test_scripts_name_what_the_package_has():
    "Benchmarks and tools import by name: a renamed or moved function breaks them only when they run (not in CI's tests)."
    scripts = sorted((ROOT / "benchmarks").glob("*.py")) + sorted((ROOT / "tools").glob("*.py"))
    assert scripts
    bad = [b for p in scripts for b in stale_script_refs(p)]
    assert not bad, "\n".join(bad)


def test_stale_script_refs_are_seen(tmp_path):
    p = tmp_path / "bench.py"
    p.write_text("import marl_llm.models.decode as md\nfrom marl_llm.models.dnn import linear, nothere\n"
                 "def f():\n    return md.CPU_ONEDNN, md.Decoder\n")
    bad = stale_script_refs(p)
    assert any("no nothere" in b for b in bad) and any("no CPU_ONEDNN" in b for b in bad)
    assert not any("Decoder" in b or "no linear" in b for b in bad)
