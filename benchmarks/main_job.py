"""The main job as a user runs it: `make run` (the README's command: demo, guards, PA-MAGRPO training on
Overcooked cramped_room with the tiny backbone), timed from outside. Reports wall time, CPU time of all
its processes, the peak RSS of the largest one, where the training time went (the `time/` fields of
metrics.jsonl) and the held-out reward curve; writes `benchmarks/results/main_job.json`.

    python benchmarks/main_job.py            # one run on the defaults (goal: <= 5 min wall, <= 1.5 GB peak RSS)
    python benchmarks/main_job.py --repeats 2
"""
from __future__ import annotations

import argparse, json, os, resource, subprocess, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_once(out: Path) -> dict:
    "One `make run` into `out`; wall, CPU and peak RSS of its processes, and what its metrics say."
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(["make", "--no-print-directory", "run", f"RUN={out}"], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0: raise SystemExit(f"make run failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["step"] > 0 and "time/rollout_s" in r]
    ev = [(r["step"], r["eval/team_reward"]) for r in rows if "eval/team_reward" in r]
    tot = lambda k: round(sum(r.get(k, 0.0) for r in rows), 1)
    return {"wall_s": round(wall, 1), "cpu_s": round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1),
            "peak_rss_mb": round(after.ru_maxrss / 1024, 1),                  # the largest child (Linux: KiB)
            "train_peak_rss_mb": max(r.get("time/peak_rss_mb", 0) for r in rows),
            "updates": len(train), "rollout_s": tot("time/rollout_s"), "update_s": tot("time/update_s"), "eval_s": tot("time/eval_s"),
            "decisions_per_s": round(sum(r.get("time/decisions_per_s", 0) for r in train) / max(len(train), 1), 1),
            "tokens_per_decision": round(sum(r.get("time/tokens_per_decision", 0) for r in train) / max(len(train), 1), 1),
            "eval_curve": ev, "learned": bool(ev and ev[-1][1] > ev[0][1])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "main_job.json"))
    a = ap.parse_args(argv)
    res = []
    with tempfile.TemporaryDirectory() as d:
        for k in range(a.repeats):
            res.append(run_once(Path(d) / f"run{k}"))
            print(json.dumps(res[-1]), flush=True)
    print(f"\n| wall s | CPU s | peak RSS MB | updates | rollout s | update s | eval s | decisions/s | tokens/decision | held-out reward (step: reward) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in res:
        curve = ", ".join(f"{s}: {v:g}" for s, v in r["eval_curve"])
        print(f"| {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_mb']} | {r['updates']} | {r['rollout_s']} | {r['update_s']} | {r['eval_s']} | "
              f"{r['decisions_per_s']} | {r['tokens_per_decision']} | {curve} |")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"runs": res}, indent=1))
    print(f"written: {a.out}")


if __name__ == "__main__":
    main()
