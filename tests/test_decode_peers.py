"""`benchmarks/decode_peers.py --quick` at tiny size on CPU: one table with the f32 torch systems, their ratio columns
and greedy agreement; llama-cpp-python missing is one line naming why, and the run still succeeds."""
import json, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "decode_peers.py"


def test_decode_peers_quick_table_and_llama_skip_line(tmp_path):
    out = tmp_path / "decode_peers.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--llama-python", str(tmp_path / "no-venv" / "python"),
                        "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = p.stdout.splitlines()
    skips = [l for l in lines if "llama" in l and "skipped" in l]
    assert len(skips) == 1 and skips[0].startswith("llama.cpp columns skipped: no python at") and "make llama-venv" in skips[0]
    head = next(k for k, l in enumerate(lines) if l.startswith("| threads |"))
    cols = [c.strip() for c in lines[head].strip("|").split("|")]
    assert cols == ["threads", "prompts", "rows", "prompt tokens", "marl_llm-f32 pp / tg", "transformers-f32 pp / tg",
                    "tg: marl_llm-f32 / transformers-f32", "pp: marl_llm-f32 / transformers-f32"]
    rows = [[c.strip() for c in l.strip("|").split("|")] for l in lines[head + 2:] if l.startswith("|")]
    assert [(r[0], r[1], r[2]) for r in rows] == [("1", "overcooked", "1"), ("1", "tasks", "4")]
    for r in rows:
        assert all(float(x) > 0 for c in r[4:6] for x in c.split(" / "))
        assert all(c.endswith("x") and float(c[:-1]) > 0 for c in r[6:])
    assert any(l.startswith("rows whose greedy tokens equal marl_llm-f32's: transformers-f32") for l in lines)
    r = json.loads(out.read_text())
    assert r["skipped"] == skips and not r["errors"]
    assert sorted(x["system"] for x in r["results"]) == ["marl_llm-f32", "transformers-f32"]
    for x in r["results"]:
        assert [(c["family"], c["rows"], len(c["tokens"]), len(c["tokens"][0])) for c in x["cells"]] == \
            [("overcooked", 1, 1, 4), ("tasks", 4, 4, 4)]
