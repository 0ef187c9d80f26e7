"""The grain of the lessons (issue 29 item 4), measured over `nbs/`: exported cells' sizes, the share followed within two
cells by an example that asserts, and docments (each parameter of a public function documented inline).

    .venv/bin/python tools/lesson_metrics.py            # the summary table
    .venv/bin/python tools/lesson_metrics.py --list 50  # also every exported cell over 50 lines, largest first
"""
from __future__ import annotations

import argparse, ast, json, re, statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSERTS = re.compile(r"\b(assert|test_eq|test_ne|test_close|test_fail|test_is|test_shuffled|test_stdout|test_warns)\b")


def cells(nb: Path) -> list[dict]:
    return [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]


def exported(src: str) -> bool:
    return bool(re.match(r"\s*#\|\s*export", src))


def documented(fn: ast.FunctionDef, lines: list[str]) -> bool:
    "Every parameter but self/cls/*args/**kwargs carries an inline comment on its line (docments)."
    args = [a for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs if a.arg not in ("self", "cls")]
    return all("#" in lines[a.lineno - 1][a.col_offset:] for a in args)


def public_functions(src: str):
    try: tree = ast.parse(src)
    except SyntaxError: return []
    lines = src.splitlines()
    out = []
    for node in tree.body:
        fns = [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
              [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] if isinstance(node, ast.ClassDef) and not node.name.startswith("_") else []
        for fn in fns:
            if fn.name.startswith("_"): continue
            args = [a for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs if a.arg not in ("self", "cls")]
            if args: out.append((fn.name, isinstance(node, ast.ClassDef) or any(
                isinstance(d, ast.Name) and d.id == "patch" for d in fn.decorator_list), documented(fn, lines)))
    return out


def measure(nbs: Path) -> dict:
    sizes, tested, big, funcs = [], [], [], []
    for nb in sorted(nbs.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in nb.parts: continue
        cs = cells(nb)
        for i, c in enumerate(cs):
            src = "".join(c["source"])
            if not exported(src): continue
            n = len(src.splitlines())
            sizes.append(n)
            nxt = [("".join(d["source"])) for d in cs[i + 1:i + 3]]
            tested.append(any(not exported(t) and ASSERTS.search(t) for t in nxt))
            big.append((n, f"{nb.relative_to(nbs)} cell {i}"))
            funcs += public_functions(src)
    plain = [f for f in funcs if not f[1]]
    return {"notebooks": len(list(nbs.rglob("*.ipynb"))), "exported_cells": len(sizes), "median_lines": statistics.median(sizes),
            "over_40": sum(s > 40 for s in sizes), "over_50": sum(s > 50 for s in sizes), "over_100": sum(s > 100 for s in sizes),
            "largest": max(sizes), "tested_share": round(sum(tested) / len(tested), 3),
            "docments_functions": round(sum(f[2] for f in plain) / max(len(plain), 1), 3),
            "docments_all": round(sum(f[2] for f in funcs) / max(len(funcs), 1), 3),
            "undocumented": sorted({f[0] for f in funcs if not f[2]}), "big": sorted(big, reverse=True)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nbs", default=str(ROOT / "nbs"))
    ap.add_argument("--list", type=int, default=None, help="list exported cells over this many lines")
    a = ap.parse_args(argv)
    m = measure(Path(a.nbs))
    print("| metric | value |\n|---|---|")
    for k in ("notebooks", "exported_cells", "median_lines", "over_40", "over_50", "over_100", "largest", "tested_share",
              "docments_functions", "docments_all"): print(f"| {k} | {m[k]} |")
    if a.list is not None:
        for n, where in m["big"]:
            if n > a.list: print(f"{n:4d}  {where}")
        print("undocumented:", ", ".join(m["undocumented"]))


if __name__ == "__main__":
    main()
