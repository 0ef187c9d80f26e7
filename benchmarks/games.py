"""Speed of the spatial games: random-action steps/s of our envs against the reference engines, side by side.

    python benchmarks/games.py [--steps 30000] [--repeats 5] [--games overcooked]

Prints a table (game, layout, our steps/s, reference steps/s, ratio) and writes
benchmarks/results/games.json. Each game is one function in `GAMES` returning its rows, so a game is
added by writing one function and one entry.

Overcooked: ours is `marl_llm.games.overcooked.OvercookedEnv.step` through the full PettingZoo API
(dict of actions in; observations, rewards, flags, infos out), the reference is overcooked-ai 1.1.0's
`OvercookedEnv.step` (the engine people train on), both on the same pre-drawn uniform random joint
actions with `horizon=400` and a reset at every episode end. The reference lives in another venv, so
it runs in a subprocess of the python named by OVERCOOKED_REF_PYTHON (default /tmp/ocvenv/bin/python
when it exists); without it the reference column is skipped with a note. The two are timed one after
the other, never at the same time, in alternation (ours, reference, ours, ...) so that both see the same
machine load, and each number is the best of `--repeats` runs.
"""
from __future__ import annotations
import argparse, json, os, platform, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "games.json"
OVERCOOKED_LAYOUTS = ["cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination",
                      "counter_circuit"]


def _random_joint(n_agents: int, steps: int, seed: int = 0) -> list[list[int]]:
    import numpy as np
    return np.random.default_rng(seed).integers(0, 6, size=(steps, n_agents)).tolist()


def _best_rate(fn, steps: int, repeats: int) -> float:
    "Best steps/s over `repeats` runs of `fn()` (which performs `steps` steps)."
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t0)
    return steps / best


# -- the overcooked-ai reference, run inside its own venv ------------------------------------------
_OVERCOOKED_REF = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
from overcooked_ai_py.mdp.overcooked_mdp import OvercookedGridworld
from overcooked_ai_py.mdp.overcooked_env import OvercookedEnv
from overcooked_ai_py.mdp.actions import Action
req = json.load(sys.stdin)
out = {}
for name in req["layouts"]:
    mdp = OvercookedGridworld.from_layout_name(name)
    env = OvercookedEnv.from_mdp(mdp, horizon=400, info_level=0)
    env._mp = "unused"   # a motion planner is only read for display_phi; do not spend time building one
    A = Action.INDEX_TO_ACTION
    acts = [tuple(A[a] for a in j) for j in np.random.default_rng(0).integers(0, 6, size=(req["steps"], mdp.num_players)).tolist()]
    def run():
        env.reset()
        for j in acts:
            if env.is_done(): env.reset()
            env.step(j)
    best = float("inf")
    for _ in range(req["repeats"]):
        t0 = time.perf_counter(); run(); best = min(best, time.perf_counter() - t0)
    out[name] = req["steps"] / best
print("\nRESULT " + json.dumps(out))   # gym prints a banner on stdout: mark our line
"""


def _overcooked_reference(layouts, steps, repeats):
    "Reference steps/s per layout, or (None, why) when the reference python is not available."
    py = os.environ.get("OVERCOOKED_REF_PYTHON") or ("/tmp/ocvenv/bin/python" if Path("/tmp/ocvenv/bin/python").exists() else None)
    if not py: return None, "reference skipped: set OVERCOOKED_REF_PYTHON to a python with overcooked-ai 1.1.0"
    try:
        p = subprocess.run([py, "-c", _OVERCOOKED_REF], input=json.dumps(dict(layouts=layouts, steps=steps, repeats=repeats)),
                           capture_output=True, text=True)
    except OSError as e:
        return None, f"reference skipped: cannot run {py} ({e})"
    if p.returncode != 0:
        return None, f"reference skipped: {py} could not run overcooked-ai ({p.stderr.strip().splitlines()[-1:]})"
    line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):]), f"reference: overcooked-ai 1.1.0 OvercookedEnv.step via {py}"


def overcooked_rows(steps: int, repeats: int) -> tuple[list[dict], list[str]]:
    "Rows for Overcooked: our env through the PettingZoo API vs overcooked-ai's OvercookedEnv, timed in turns."
    from marl_llm.games.overcooked import OvercookedEnv
    runs = {}
    for name in OVERCOOKED_LAYOUTS:
        env = OvercookedEnv(name, horizon=400, seed=0)
        acts = [dict(zip(env.possible_agents, j)) for j in _random_joint(len(env.possible_agents), steps)]
        def run(env=env, acts=acts):
            env.reset(seed=0)
            for a in acts:
                if not env.agents: env.reset()
                env.step(a)
        runs[name] = run
    ours, ref, note = {}, {}, None
    for _ in range(repeats):       # alternate the engines so both see the same machine load
        for name, run in runs.items():
            ours[name] = max(ours.get(name, 0.0), _best_rate(run, steps, 1))
        got, note = _overcooked_reference(OVERCOOKED_LAYOUTS, steps, 1)
        if got is None: ref = None; break
        for name, rate in got.items(): ref[name] = max(ref.get(name, 0.0), rate)
    rows = [dict(game="overcooked", layout=name, ours=ours[name], reference=(ref or {}).get(name),
                 ratio=(ours[name] / ref[name]) if ref else None) for name in OVERCOOKED_LAYOUTS]
    return rows, [note]


def commons_rows(steps: int, repeats: int) -> tuple[list[dict], list[str]]:
    "Rows for Cleanup and Commons Harvest (no reference engine: Melting Pot is not pip-installable here)."
    from marl_llm.games.commons import benchmark_rows
    best = {}
    for _ in range(repeats):
        for r in benchmark_rows(seconds=max(0.5, steps / 100_000), layouts=("small", "default")):
            k = (r["game"], r["layout"]); best[k] = max(best.get(k, 0), r["steps_per_s"])
    rows = [dict(game=g, layout=l, ours=v, reference=None, ratio=None) for (g, l), v in best.items()]
    return rows, ["cleanup/harvest: no reference engine (Melting Pot substrates are not comparable step for step)"]


GAMES = {"overcooked": overcooked_rows, "commons": commons_rows}
"game name -> function(steps, repeats) returning (rows, notes)."

OPTION_CASES = [("overcooked", "cramped_room"), ("overcooked", "asymmetric_advantages"),
                ("cleanup", "small"), ("harvest", "small")]


def option_rows(seconds: float, n_envs: int = 8) -> list[dict]:
    "Option decisions/s under a uniformly random option policy, over `n_envs` envs of `OptionEnv`."
    from marl_llm.options.env import option_decisions_per_s
    return [option_decisions_per_s(g, l, n_envs=n_envs, seconds=seconds) for g, l in OPTION_CASES]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30000, help="random-action steps per timed run")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per engine and layout (the best counts)")
    ap.add_argument("--games", nargs="*", default=list(GAMES), help=f"which of {list(GAMES)}")
    ap.add_argument("--option-seconds", type=float, default=2.0, help="seconds per option-decision measurement (0: skip)")
    args = ap.parse_args(argv)
    unknown = [g for g in args.games if g not in GAMES]
    if unknown: ap.error(f"unknown game(s) {unknown}; valid: {list(GAMES)}")
    rows, notes = [], []
    for g in args.games:
        r, n = GAMES[g](args.steps, args.repeats)
        rows += r; notes += n
    fmt = lambda x, spec: "-" if x is None else format(x, spec)
    print(f"{'game':<16} {'layout':<24} {'ours steps/s':>13} {'ref steps/s':>12} {'ratio':>7}")
    for r in rows:
        print(f"{r['game']:<16} {r['layout']:<24} {fmt(r['ours'], ',.0f'):>13} {fmt(r['reference'], ',.0f'):>12} "
              f"{fmt(r['ratio'], '.1f'):>7}")
    for n in notes: print(n)
    opts = option_rows(args.option_seconds) if args.option_seconds > 0 else []
    if opts:
        print(f"\n{'game':<12} {'layout':<24} {'option decisions/s':>19} {'primitive steps/s':>18}  (random options, 8 envs)")
        for r in opts:
            print(f"{r['game']:<12} {r['layout']:<24} {r['decisions_per_s']:>19,.0f} {r['steps_per_s']:>18,.0f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(dict(rows=rows, options=opts, notes=notes, steps=args.steps, repeats=args.repeats,
                                       python=sys.version.split()[0], machine=platform.platform(),
                                       cpus=os.cpu_count()), indent=2))
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return rows


if __name__ == "__main__":
    main()
