"""The cost of Shapley credit (see `nbs/learn/10_shapley.ipynb`, `nbs/experiments/09_shapley.ipynb`).

1. Rollouts per Shapley estimate, exact (all 2^n coalitions) vs Monte Carlo permutations, for teams of
   n = 3, 5, 8 scripted members (a solver, copiers, a corrupter) on `--tasks` two-number sums: coalition
   values computed, rollouts, seconds, the estimate's largest standard error and its largest error
   against the exact values.
2. Time per TeamTR update with the shared team reward vs Shapley credit (tiny backbone, n = 3, the same
   batches), measured side by side in this process.

Writes `nbs/data/shapley_cost.json` and prints both tables.

    OMP_NUM_THREADS=1 python benchmarks/shapley_cost.py
    python benchmarks/shapley_cost.py --sizes 3 5 8 10 --samples 16 64 256 --updates 3
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def scripted_team(n: int):
    "A solver (right 90% of the time), n-2 copiers, and a corrupter (adds 1 half the time), in a fixed order."
    from marl_llm.learn.teams import Team, Scripted
    from marl_llm.learn.shapley import pass_on

    def solver(task, outputs, rng): return f" {int(task.answer) + (0 if rng.random() < 0.9 else 1)}"

    def corrupter(task, outputs, rng):
        last = outputs[-1] if outputs else ""
        return f" {int(last) + 1}" if last.strip().lstrip("-").isdigit() and rng.random() < 0.5 else last
    return Team([Scripted("solver", solver)] + [Scripted(f"copier_{i}", pass_on) for i in range(n - 2)]
                + [Scripted("corrupter", corrupter)])


def estimates(sizes, samples, n_tasks: int, repeats: int = 10) -> list[dict]:
    from marl_llm.learn.shapley import shapley, team_game, EXACT_MAX
    from marl_llm.games.tasks import arithmetic_tasks
    tasks = arithmetic_tasks(n_tasks, terms=2, max_digit=9, template="plain", seed=0)
    rows = []
    for n in sizes:
        team = scripted_team(n)
        exact = None
        if n <= EXACT_MAX:
            g = team_game(team, tasks, "null", group=1, seed=0)
            t0 = time.perf_counter(); r = shapley(g); dt = time.perf_counter() - t0
            exact = r.phi
            rows.append(dict(n=n, how="exact", permutations=0, coalitions=r.evaluations, rollouts=r.evaluations * n_tasks,
                             seconds=dt, max_stderr=0.0, max_error=0.0, phi=r.phi.tolist()))
        for s in samples:                                    # averaged over `repeats` estimates (seeds 1..repeats)
            res, secs = [], []
            for k in range(1, repeats + 1):
                g = team_game(team, tasks, "null", group=1, seed=0)
                t0 = time.perf_counter(); res.append(shapley(g, samples=s, seed=k)); secs.append(time.perf_counter() - t0)
            rows.append(dict(n=n, how="monte carlo", permutations=s, coalitions=float(np.mean([r.evaluations for r in res])),
                             rollouts=float(np.mean([r.evaluations for r in res])) * n_tasks, seconds=float(np.mean(secs)),
                             max_stderr=float(np.mean([np.nanmax(r.stderr) for r in res])),
                             max_error=None if exact is None else float(np.mean([np.max(np.abs(r.phi - exact)) for r in res])),
                             phi=res[0].phi.tolist()))
    return rows


def update_times(updates: int) -> list[dict]:
    from marl_llm.methods.teamtr import TeamTRConfig, TeamTR
    from marl_llm.learn.pipeline import fit
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for credit in ("team", "shapley"):
            cfg = TeamTRConfig(n_components=3, terms=2, max_digit=5, schedule="simultaneous", budget="batch", updates=updates,
                               tasks_per_batch=8, group=4, eval_every=0, checkpoint_every=1000, credit=credit, seed=0)
            out = fit(TeamTR(cfg), Path(tmp) / credit, quiet=True)
            tr = [r for r in out if r["step"] > 0]
            rows.append(dict(credit=credit, update_s=float(np.mean([r["time/step_s"] for r in tr])),
                             coalitions=float(np.mean([r.get("credit/coalitions", 1) for r in tr]))))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 8])
    ap.add_argument("--samples", type=int, nargs="+", default=[16, 64, 256], help="permutations per Monte Carlo estimate")
    ap.add_argument("--tasks", type=int, default=50, help="rollouts per coalition value")
    ap.add_argument("--updates", type=int, default=3, help="TeamTR updates per credit arm for the timing")
    ap.add_argument("--out", default=str(ROOT / "nbs" / "data" / "shapley_cost.json"))
    args = ap.parse_args(argv)
    est, upd = estimates(args.sizes, args.samples, args.tasks), update_times(args.updates)
    print(f"\nShapley estimates on scripted teams ({args.tasks} rollouts per coalition value)")
    print("(Monte Carlo rows: means over 10 estimates with different permutation seeds)")
    print(f"{'n':>3} | {'estimate':>11} | {'perms':>5} | {'coalitions':>10} | {'rollouts':>8} | {'seconds':>7} | {'max s.e.':>8} | max |err|")
    for r in est:
        err = "—" if r["max_error"] is None else f"{r['max_error']:.3f}"
        print(f"{r['n']:>3} | {r['how']:>11} | {r['permutations']:>5} | {r['coalitions']:>10.0f} | {r['rollouts']:>8.0f} | "
              f"{r['seconds']:>7.2f} | {r['max_stderr']:>8.3f} | {err}")
    base = next(r for r in upd if r["credit"] == "team")["update_s"]
    print("\nTeamTR update time, tiny backbone, 3 components, 8 tasks x 4 episodes per batch (same batches)")
    print(f"{'credit':>8} | {'s / update':>10} | {'rollout batches':>15} | ratio")
    for r in upd:
        print(f"{r['credit']:>8} | {r['update_s']:>10.2f} | {r['coalitions']:>15.0f} | {r['update_s'] / base:.2f}x")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"estimates": est, "updates": upd, "tasks": args.tasks}, indent=1))


if __name__ == "__main__":
    main()
