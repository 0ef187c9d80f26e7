"""`make gpu-check`'s script at tiny size on CPU (what CI can run): every section runs and is written to the JSON,
the mixed-adapter batch equals each agent alone, both methods' 3 updates are finite; a dtype the device cannot do
is a one-line error."""
import json, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def test_gpu_check_runs_at_tiny_size_on_cpu(tmp_path):
    out = tmp_path / "gpu_check.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, str(SCRIPT), "--backbone", "tiny", "--device", "cpu", "--quick", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["mixed_equals_alone"]["ok"] and r["mixed_equals_alone"]["adapter_effect"] > 0
    for m in ("pa-magrpo", "tracer"): assert r[m]["updates"] == 3 and r[m]["finite"], r[m]
    assert [d["agents"] for d in r["decisions"]] == [2, 4] and all(d["batched_per_s"] > 0 for d in r["decisions"])
    assert "| mixed batch = alone, float32 |" in p.stdout


def test_gpu_check_bfloat16_mixed_batch_is_judged_against_float32(tmp_path):
    "In bfloat16 both paths are compared with the float32 answer; --only-mixed stops after that check."
    out = tmp_path / "gpu_check.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--backbone", "tiny", "--device", "cpu", "--dtype", "bfloat16",
                        "--only-mixed", "--out", str(out)], capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r = json.loads(out.read_text())
    mix = r["mixed_equals_alone"]
    assert mix["dtype"] == "bfloat16" and mix["ok"] and mix["err_mixed"] <= 1.5 * mix["err_alone"] + mix["tolerance"]
    assert "pa-magrpo" not in r and "decisions" not in r


def test_gpu_check_bad_dtype_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), "--backbone", "tiny", "--device", "cpu", "--dtype", "float16"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "float16" in p.stderr and "use float32 or bfloat16" in p.stderr
