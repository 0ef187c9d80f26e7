"""Does PA-MAGRPO learn on a CPU? Trained vs untrained policy, random options and the low-level-action LLM.

    python benchmarks/train.py [--cpu-minutes 15] [--cases overcooked:cramped_room overcooked:asymmetric_advantages harvest:small]
    python benchmarks/train.py --plot train_a.json train_b.json     # one figure from several result files

For each case: synthesise feasibility guards from random burn-in (options/07_guards), train the tiny backbone's
per-agent adapters with PA-MAGRPO for at most `--cpu-minutes` of CPU time (and `--max-updates`),
then evaluate on held-out seeds (never used in training):

- trained: the trained adapters, sampling from the policy;
- untrained: the same model before its first update (fresh LoRA adapters are exactly the base);
- random options: uniform over the same guarded menus;
- low-level LLM: the untrained LLM choosing one of the six primitive actions at every step.

Also checks that two runs with the same seed give the same curve. Prints a table and writes
benchmarks/results/train.json plus each run's directory under benchmarks/results/runs/.
"""
from __future__ import annotations
import argparse, dataclasses, json, os, platform, shutil, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"


def team_of(env, rewards: dict) -> float:
    vals = list(rewards.values())
    return float(sum(vals) / len(vals) if getattr(env, "shared_reward", False) else sum(vals))


def low_level_llm(policy, game, layout, seeds, horizon):
    "Team reward per episode of the LLM choosing primitive actions every step (all envs batched per step)."
    from marl_llm.options.registry import make_game, option_library
    from marl_llm.models.policy import Request
    from marl_llm.games.grid import ACTIONS, DIRECTION_NAMES
    from marl_llm.options.rollout import compact_obs
    envs = [make_game(game, layout, horizon=horizon) for _ in seeds]
    lib = option_library(game)
    for e, s in zip(envs, seeds): e.reset(seed=s)
    totals = [0.0] * len(envs)
    while any(e.agents for e in envs):
        live = [(k, e) for k, e in enumerate(envs) if e.agents]
        reqs = [Request(a, f"at {e.pos[i][0]} {e.pos[i][1]} facing {DIRECTION_NAMES[tuple(e.facing[i])]}; "
                           + compact_obs(lib, e, i), list(ACTIONS))
                for k, e in live for i, a in enumerate(e.possible_agents)]
        out = policy.decide(reqs)
        j = 0
        for k, e in live:
            acts = {}
            for a in e.possible_agents: acts[a] = out[j].choice; j += 1
            _, rew, _, _, _ = e.step(acts)
            totals[k] += team_of(e, rew)
    return totals


def random_options(game, layout, seeds, horizon, guards):
    from marl_llm.options.env import OptionEnv, RandomOptionPolicy, play
    from marl_llm.options.rollout import team_total
    oenv = OptionEnv(game, layout, n_envs=len(seeds), horizon=horizon, menu_filter=guards, text_obs=False,
                     keep_start_state=False)
    oenv.reset(seeds=seeds)
    pol = RandomOptionPolicy(0)
    while oenv.pending: oenv.step(pol(oenv.pending)[0])
    return [team_total(oenv, b) for b in range(len(seeds))]


def run_case(game, layout, a, out_dir):
    import numpy as np
    from marl_llm.options.burnin import burn_in
    from marl_llm.options.guards import synthesize
    from marl_llm.methods.pa_magrpo import PAMAGRPOConfig, PAMAGRPO
    from marl_llm.options.rollout import rollout
    from marl_llm.learn.pipeline import Pipeline
    gpath = out_dir / f"guards_{game}_{layout}.json"
    t0 = time.perf_counter()
    gs = synthesize(burn_in(game, layout, episodes=a.burn_in, seeds=(0,), horizon=a.horizon), m=3)
    gs.save(gpath)
    t_guards = time.perf_counter() - t0
    shaping = {"overcooked": "overcooked", "cleanup": "cleanup"}.get(game)
    cfg = PAMAGRPOConfig(game=game, layout=layout, method="pa-magrpo", backbone=a.backbone, updates=a.max_updates, envs=a.envs, group=a.group,
                      horizon=a.horizon, seed=a.seed, lr=a.lr, epochs=a.epochs, rules=False, guards=str(gpath),
                      shaping=shaping, eval_every=a.eval_every, eval_envs=a.eval_envs, checkpoint_every=10_000,
                      record_episodes=0)
    run = out_dir / "runs" / f"{game}_{layout}_s{a.seed}"
    if run.exists(): shutil.rmtree(run)
    pipe = Pipeline(PAMAGRPO(cfg), run, quiet=True)
    tr = pipe.method
    seeds = [cfg.eval_seed + k for k in range(cfg.eval_envs)]
    untrained = [ep.meta["task_reward"] for ep in rollout(tr.eval_env, tr.policy, seeds, obs=cfg.obs)]
    c0, t0 = time.process_time(), time.perf_counter()
    u = 0
    while u < a.max_updates and time.process_time() - c0 < a.cpu_minutes * 60:
        u += 1
        pipe.fit(until=u)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    tr.policy.generator.manual_seed(12345)
    trained = [ep.meta["task_reward"] for ep in rollout(tr.eval_env, tr.policy, seeds, obs=cfg.obs)]
    rand = random_options(game, layout, seeds, cfg.horizon, tr.filter)
    low = low_level_llm(_fresh_policy(cfg), game, layout, seeds, cfg.horizon)
    m = lambda x: (float(np.mean(x)), float(np.std(x)))
    row = dict(game=game, layout=layout, seed=a.seed, updates=u, wall_s=round(wall, 1), cpu_s=round(cpu, 1), guards=len(gs.guards),
               guard_s=round(t_guards, 1), untrained=m(untrained), trained=m(trained), random_options=m(rand),
               low_level_llm=m(low), eval_episodes=len(seeds),
               ratio=(m(trained)[0] / m(untrained)[0]) if m(untrained)[0] > 0 else None,
               curve=[(r["step"], r.get("eval/team_reward")) for r in pipe.run.metrics() if "eval/team_reward" in r])
    return row


def _fresh_policy(cfg):
    "An untrained policy (fresh adapters are exactly the base) for the low-level baseline."
    from marl_llm.models.base import load_backbone
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.policy import MenuPolicy
    from marl_llm.options.registry import make_game
    bb = load_backbone(cfg.backbone, seed=cfg.seed)
    ad = AgentAdapters(bb, make_game(cfg.game, cfg.layout).possible_agents, seed=cfg.seed)
    return MenuPolicy(ad, seed=cfg.seed)


def same_seed_same_curve(tmp: Path) -> bool:
    from marl_llm.methods.pa_magrpo import PAMAGRPOConfig, PAMAGRPO
    from marl_llm.learn.pipeline import fit
    cfg = PAMAGRPOConfig(game="harvest", layout="small", updates=2, envs=1, group=2, horizon=40, eval_envs=2, eval_every=1,
                      record_episodes=0)
    rows = []
    for k in range(2):
        d = tmp / f"repeat{k}"
        if d.exists(): shutil.rmtree(d)
        rows.append([{x: v for x, v in r.items() if not x.startswith("time")} for r in fit(PAMAGRPO(cfg), d, quiet=True)])
    return rows[0] == rows[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*", default=["overcooked:cramped_room", "overcooked:asymmetric_advantages", "harvest:small"])
    ap.add_argument("--cpu-minutes", type=float, default=15.0,
                    help="training budget per case in CPU minutes of this process (all its threads)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: CPU time ~ wall time on a free core)")
    ap.add_argument("--json", default="train.json", help="file name under benchmarks/results/")
    ap.add_argument("--max-updates", type=int, default=200)
    ap.add_argument("--backbone", default="tiny")
    ap.add_argument("--envs", type=int, default=2)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--horizon", type=int, default=120)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--eval-envs", type=int, default=16)
    ap.add_argument("--burn-in", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", nargs="+", metavar="JSON",
                    help="only redraw the figure from these result files (under benchmarks/results/) into train_all.*")
    a = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if a.plot:
        rows = []
        for f in a.plot:
            d = json.loads((OUT / f).read_text())
            rows += [{"seed": d["args"]["seed"], **r} for r in d["rows"]]
        figure(rows, OUT / "train_all")
        print(f"wrote {(OUT / 'train_all.html').relative_to(ROOT)} (and .png where kaleido can)")
        return
    import torch
    torch.set_num_threads(a.threads)
    rows = []
    for case in a.cases:
        game, layout = case.split(":")
        print(f"== {game}/{layout}: guards, then up to {a.cpu_minutes} CPU min of PA-MAGRPO ...", flush=True)
        rows.append(run_case(game, layout, a, OUT))
        r = rows[-1]
        print(f"   {r['updates']} updates in {r['wall_s']} s wall / {r['cpu_s']} s CPU; held-out team reward "
              f"trained {r['trained'][0]:.2f} vs untrained {r['untrained'][0]:.2f}", flush=True)
    same = same_seed_same_curve(OUT / "runs" / Path(a.json).stem)      # per result file: parallel runs never collide
    f = lambda x: f"{x[0]:6.2f} ± {x[1]:5.2f}"
    print(f"\n{'case':<36} {'updates':>7} {'wall s':>7} {'trained':>15} {'untrained':>15} {'random opts':>15} "
          f"{'low-level LLM':>15} {'trained/untrained':>18}")
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        print(f"{r['game'] + '/' + r['layout']:<36} {r['updates']:>7} {r['wall_s']:>7} {f(r['trained']):>15} "
              f"{f(r['untrained']):>15} {f(r['random_options']):>15} {f(r['low_level_llm']):>15} {ratio:>18}")
    print(f"same seed, same curve: {same}")
    (OUT / a.json).write_text(json.dumps(dict(rows=rows, same_seed_same_curve=same, args=vars(a),
                                                    python=sys.version.split()[0], machine=platform.platform(),
                                                    cpus=os.cpu_count()), indent=2))
    print(f"wrote {(OUT / a.json).relative_to(ROOT)}")
    figure(rows, OUT / Path(a.json).with_suffix("").name)


def figure(rows, stem: Path):
    "Held-out team reward over updates per case, with the untrained / random-options / low-level LLM levels."
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    ncol = min(3, len(rows)); nrow = -(-len(rows) // ncol)
    fig = make_subplots(rows=nrow, cols=ncol, vertical_spacing=0.18, subplot_titles=[f"{r['game']}/{r['layout']}, seed {r.get('seed', 0)}, {r['cpu_s'] / 60:.0f} CPU min"
                                                            for r in rows])
    for k, r in enumerate(rows):
        at = dict(row=k // ncol + 1, col=k % ncol + 1)
        curve = [tuple(x) for x in r["curve"]]
        if curve[-1][0] != r["updates"]: curve.append((r["updates"], r["trained"][0]))   # the final evaluation
        steps, vals = zip(*curve)
        fig.add_trace(go.Scatter(x=steps, y=vals, mode="lines+markers", name="PA-MAGRPO (held-out)",
                                 line=dict(color="#1f77b4"), showlegend=k == 0), **at)
        for key, name, color in (("untrained", "untrained", "#7f7f7f"), ("random_options", "random options", "#2ca02c"),
                                 ("low_level_llm", "low-level LLM", "#d62728")):
            fig.add_trace(go.Scatter(x=[steps[0], steps[-1]], y=[r[key][0]] * 2, mode="lines", name=name,
                                     line=dict(color=color, dash="dash"), showlegend=k == 0), **at)
        fig.update_xaxes(title_text="update", **at)
    for r_ in range(1, nrow + 1): fig.update_yaxes(title_text="held-out team reward", row=r_, col=1)
    fig.update_layout(title="PA-MAGRPO on CPU (tiny backbone)", width=440 * ncol + 160,
                      height=360 * nrow + 60)
    from marl_llm.core.records import write_figure_html
    write_figure_html(stem.with_suffix(".html"), fig)                     # opens offline: plotly.min.js beside it
    try:
        fig.write_image(stem.with_suffix(".png"))
    except Exception as e:                       # kaleido needs a Chromium; the HTML is always written
        print(f"(no PNG: {e})")


if __name__ == "__main__":
    main()
