"""Differential test: `marl_llm.games.overcooked.OvercookedEnv` against the reference engine, overcooked-ai 1.1.0.

For every shipped layout we build many joint-action sequences — random ones biased towards `interact`
(so pots get filled, started, emptied) and sequences from a scripted greedy team with a little noise
(so soups are really cooked and delivered, including hand-offs over counters on
forced_coordination) — play them in both engines and require, at every step, equal positions,
orientations, held objects (soups with their recipe), pot contents and cooking ticks, items on
counters, sparse reward per agent and for the team, the timestep and `done`.

The reference runs in-process when `overcooked_ai_py` is importable, otherwise in a subprocess of the
python named by the env var OVERCOOKED_REF_PYTHON (this file doubles as that subprocess's script:
`python tests/test_overcooked_reference.py --reference < request.json`); without either the test is
skipped. Run with `pytest -s` to see the coverage table (sequences, steps and deliveries per layout).

    OVERCOOKED_REF_PYTHON=/tmp/ocvenv/bin/python python -m pytest -s tests/test_overcooked_reference.py
"""
import ast, json, os, subprocess, sys
from pathlib import Path

try:
    import pytest
except ImportError:          # the reference subprocess does not need pytest
    pytest = None

HERE = Path(__file__).resolve()
LAYOUT_DIR = HERE.parents[1] / "marl_llm" / "layouts"
# layout -> (random sequences, scripted sequences, steps per sequence)
PLAN = {"cramped_room": (40, 12, 400), "asymmetric_advantages": (30, 12, 400), "coordination_ring": (30, 12, 400),
        "forced_coordination": (30, 12, 400), "counter_circuit": (30, 12, 400),
        "counter_circuit_o_1order": (20, 8, 400), "multiplayer_schelling": (15, 6, 300), "long_cook_time": (10, 4, 400)}
EXTRA_AGENTS = [("cramped_room", 3), ("asymmetric_advantages", 4)]   # more agents than the layout has digits
MUST_DELIVER = ["cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination", "counter_circuit",
                "counter_circuit_o_1order", "multiplayer_schelling"]


# ---------------------------------------------------------------------------------------------------
# The reference side (only needs overcooked_ai_py; runs in-process or in the OVERCOOKED_REF_PYTHON venv)
# ---------------------------------------------------------------------------------------------------
def _ref_snapshot(state, mdp, info, reward, done):
    def obj(o):
        if o is None: return None
        return ["soup", sorted(o.ingredients)] if o.name == "soup" else o.name
    pots, counters = {}, {}
    pot_cells = set(mdp.get_pot_locations())
    for pos, o in state.objects.items():
        key = f"{pos[0]},{pos[1]}"
        if pos in pot_cells: pots[key] = [list(o.ingredients), o._cooking_tick]
        else: counters[key] = obj(o)
    return {"pos": [list(p.position) for p in state.players], "facing": [list(p.orientation) for p in state.players],
            "held": [obj(p.held_object) for p in state.players], "pots": pots, "counters": counters,
            "r_by_agent": [float(x) for x in info["sparse_r_by_agent"]], "r": float(reward),
            "t": state.timestep, "done": bool(done)}


def reference_run(request: dict) -> dict:
    "Play every case of `request` in overcooked-ai; also return the reference's own layout files, read raw."
    from overcooked_ai_py.mdp.overcooked_mdp import OvercookedGridworld
    from overcooked_ai_py.mdp.overcooked_env import OvercookedEnv
    from overcooked_ai_py.mdp.actions import Action
    from overcooked_ai_py.utils import load_dict_from_file
    import overcooked_ai_py
    layouts_dir = Path(overcooked_ai_py.__file__).parent / "data" / "layouts"
    files = {}
    for name in request.get("layout_files", []):
        f = layouts_dir / f"{name}.layout"
        files[name] = load_dict_from_file(str(f)) if f.exists() else None
    out = []
    for case in request["cases"]:
        params = {k: v for k, v in case["spec"].items() if k != "grid"}
        params["layout_name"] = case["name"]
        mdp = OvercookedGridworld.from_grid(case["grid"], params)
        env = OvercookedEnv.from_mdp(mdp, horizon=case["horizon"], info_level=0)
        env._mp = "unused"        # step() hands a motion planner to the MDP only for display_phi; skip computing one
        traj = []
        for joint in case["actions"]:
            state, r, done, info = env.step(tuple(Action.INDEX_TO_ACTION[a] for a in joint),
                                           [{} for _ in joint])   # the default info list is for 2 players
            traj.append(_ref_snapshot(state, mdp, info, r, done))
            if done: break
        out.append(traj)
    return {"trajectories": out, "layout_files": files}


# ---------------------------------------------------------------------------------------------------
# Our side
# ---------------------------------------------------------------------------------------------------
def our_snapshot(env, rewards, done):
    def obj(h, recipe):
        return None if h is None else ["soup", sorted(recipe)] if h == "soup" else h
    pots = {f"{c[0]},{c[1]}": [list(p.ingredients), p.tick] for c, p in env.pots.items() if p.ingredients or p.tick >= 0}
    counters = {f"{c[0]},{c[1]}": obj(it, env.counter_soups.get(c)) for c, it in env.counter_items.items()}
    r = [float(rewards.get(a, 0.0)) for a in env.possible_agents]
    return {"pos": [list(p) for p in env.pos], "facing": [list(f) for f in env.facing],
            "held": [obj(h, s) for h, s in zip(env.held, env.held_soup)], "pots": pots, "counters": counters,
            "r_by_agent": r, "r": sum(r), "t": env.t, "done": bool(done)}


def play_ours(case):
    from marl_llm.games.overcooked import OvercookedEnv
    env = OvercookedEnv(case["layout"], n_agents=case["n"], horizon=case["horizon"], shared_reward=False)
    env.reset(seed=0)
    traj = []
    for joint in case["actions"]:
        _, rew, _, trunc, _ = env.step({a: x for a, x in zip(env.possible_agents, joint)})
        done = all(trunc.values())
        traj.append(our_snapshot(env, rew, done))
        if done: break
    return traj


def random_actions(rng, n, steps, p_interact):
    "Random joint actions, biased towards interact and towards repeating a move (so agents cross the map)."
    out, last = [], [4] * n
    for _ in range(steps):
        joint = []
        for i in range(n):
            u = rng.random()
            if u < p_interact: a = 5
            elif u < p_interact + 0.35: a = last[i] if last[i] < 4 else int(rng.integers(4))
            else: a = int(rng.integers(5))
            if a < 4: last[i] = a
            joint.append(a)
        out.append(joint)
    return out


def _target_recipe(layout):
    "The order the greedy team cooks: the most valuable one (3 onions in the classic layouts)."
    return max(layout.all_orders, key=lambda r: (layout.values[r], len(r)))


def _act_towards(env, i, goals, rng):
    "A primitive action bringing agent `i` to interact with the nearest reachable cell of `goals`."
    from marl_llm.games.grid import DIRECTIONS, INTERACT, STAY
    pos = env.pos[i]
    best = min(((env.dist.dist(pos, g), g) for g in goals if env.dist.dist(pos, g) > 0), default=None)
    if best is None: return None
    d, g = best
    if d == 1:
        delta = (g[0] - pos[0], g[1] - pos[1])
        return INTERACT if env.facing[i] == delta else DIRECTIONS.index(delta)
    others = [p for j, p in enumerate(env.pos) if j != i]
    a = env.dist.next_step(pos, g, blocked=others)
    return int(rng.integers(5)) if a is None else a


def greedy_action(env, i, rng, target):
    "What a simple cooperative cook does next (fetch, pot, start, plate, serve; hand items over counters)."
    from marl_llm.games.grid import STAY
    from collections import Counter
    h, pos, pots = env.held[i], env.pos[i], list(env.pots.values())
    reach = lambda c: env.dist.dist(pos, c) > 0
    counters = env.cells_of("X")
    def others_reach(c): return any(env.dist.dist(p, c) > 0 for j, p in enumerate(env.pos) if j != i)
    def handoff():   # an empty counter both this agent and a partner can reach
        return [c for c in counters if c not in env.counter_items and reach(c) and others_reach(c)]
    def fits(p, ing):
        return p.idle and len(p.ingredients) < env.max_ingredients and not (Counter(p.ingredients + [ing]) - Counter(target))
    if h == "soup":
        goals = [c for c in env.cells_of("S") if reach(c)] or handoff()
    elif h == "dish":
        goals = [p.pos for p in pots if p.ready and reach(p.pos)] or [p.pos for p in pots if p.cooking and reach(p.pos)]
        if not goals and not any(reach(p.pos) for p in pots): goals = handoff()
    elif h in ("onion", "tomato"):
        goals = [p.pos for p in pots if fits(p, h) and reach(p.pos)]
        if not goals and not any(reach(p.pos) for p in pots): goals = handoff()
        if not goals: goals = [c for c in counters if c not in env.counter_items and reach(c)]  # park it
    else:
        soups = [c for c, it in env.counter_items.items() if it == "soup" and reach(c)]
        start = [p.pos for p in pots if p.idle and p.ingredients and reach(p.pos)
                 and (sorted(p.ingredients) == sorted(target) or len(p.ingredients) == env.max_ingredients)]
        busy = sum(1 for p in pots if p.cooking or p.ready)
        dishes = sum(1 for x in env.held if x in ("dish", "soup")) + sum(1 for x in env.counter_items.values() if x == "dish")
        goals = soups or start
        if not goals and busy > dishes:
            goals = [c for c, it in env.counter_items.items() if it == "dish" and reach(c)] or \
                    [c for c in env.cells_of("D") if reach(c)]
        if not goals:
            need = Counter()
            for p in pots:
                if p.idle: need += Counter(target) - Counter(p.ingredients)
            held_ing = Counter(x for x in env.held if x in ("onion", "tomato"))
            need -= held_ing
            for ing in ("onion", "tomato"):
                if need[ing] > 0:
                    goals = [c for c, it in env.counter_items.items() if it == ing and reach(c)] or \
                            [c for c in env.cells_of("O" if ing == "onion" else "T") if reach(c)]
                    if goals: break
    a = _act_towards(env, i, goals, rng) if goals else None
    return STAY if a is None else a


def scripted_actions(layout_name, n, steps, rng, eps):
    "Play the greedy team (with probability `eps` a random action) in our env; return the joint actions."
    from marl_llm.games.overcooked import OvercookedEnv
    env = OvercookedEnv(layout_name, n_agents=n, horizon=steps + 1)
    env.reset(seed=0)
    target = _target_recipe(env.layout)
    out = []
    for _ in range(steps):
        joint = [int(rng.integers(6)) if rng.random() < eps else greedy_action(env, i, rng, target) for i in range(n)]
        out.append(joint)
        env.step({a: x for a, x in zip(env.possible_agents, joint)})
    return out


def build_cases(seed=0):
    import numpy as np
    from marl_llm.games.overcooked import OvercookedEnv
    from marl_llm.games.overcooked_layout import load_layout
    rng = np.random.default_rng(seed)
    cases = []
    variants = [(name, None) for name in PLAN] + [(name, k) for name, k in EXTRA_AGENTS if name in PLAN]
    for name, n in variants:
        n_rand, n_script, steps = PLAN[name]
        if n is not None: n_rand, n_script = 6, 4          # extra agents placed by OvercookedEnv
        env = OvercookedEnv(name, n_agents=n)
        n_agents = len(env.possible_agents)
        spec = ast.literal_eval((LAYOUT_DIR / f"{name}.layout").read_text())
        # the reference gets the same grid, with digits where our env starts its agents
        rows = [list(r) for r in env.terrain]
        for k, (x, y) in enumerate(env.pos): rows[y][x] = str(k + 1)
        grid = ["".join(r) for r in rows]
        base = dict(layout=name, name=name if n is None else f"{name}_{n}p", n=n_agents, spec=spec, grid=grid)
        for k in range(n_rand):
            p = (0.15, 0.3, 0.45)[k % 3]
            # horizon < steps for some cases so `done` is exercised mid-sequence
            cases.append(dict(base, kind="random", horizon=steps if k % 4 else steps // 2,
                              actions=random_actions(rng, n_agents, steps, p)))
        for k in range(n_script):
            eps = (0.0, 0.05, 0.1, 0.2)[k % 4]
            cases.append(dict(base, kind="scripted", horizon=steps,
                              actions=scripted_actions(name, n_agents, steps, rng, eps)))
    return cases


# ---------------------------------------------------------------------------------------------------
# The harness
# ---------------------------------------------------------------------------------------------------
def _runner():
    "A function request -> response that runs the reference, or None when it is not available."
    try:
        import overcooked_ai_py.mdp.overcooked_mdp  # noqa: F401
        return reference_run
    except Exception:
        pass
    py = os.environ.get("OVERCOOKED_REF_PYTHON")
    if not py: return None
    try: ok = subprocess.run([py, "-c", "import overcooked_ai_py.mdp.overcooked_mdp"], capture_output=True)
    except OSError: return None                      # no such python
    if ok.returncode != 0: return None
    def run(request):
        p = subprocess.run([py, str(HERE), "--reference"], input=json.dumps(request), capture_output=True, text=True)
        if p.returncode != 0: raise RuntimeError(f"reference subprocess failed:\n{p.stderr[-3000:]}")
        line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1]   # gym may print a banner
        return json.loads(line[len("RESULT "):])
    return run


if pytest is not None:
    @pytest.fixture(scope="module")
    def played():
        run = _runner()
        if run is None:
            pytest.skip("overcooked-ai not importable and OVERCOOKED_REF_PYTHON not set to a python that has it")
        cases = build_cases()
        ref = run({"cases": [{k: c[k] for k in ("name", "spec", "grid", "horizon", "actions")} for c in cases],
                   "layout_files": sorted(PLAN)})
        ours = [play_ours(c) for c in cases]
        return cases, ours, ref


def _first_diff(a, b):
    for k in a:
        if a[k] != b.get(k): return k, a[k], b.get(k)
    return None


def test_shipped_layout_files_equal_reference(played):
    from marl_llm.games.overcooked_layout import load_layout
    _, _, ref = played
    for name in PLAN:
        theirs = ref["layout_files"][name]
        assert theirs is not None, f"{name} is not a reference layout"
        mine = ast.literal_eval((LAYOUT_DIR / f"{name}.layout").read_text())
        clean = lambda g: [r.strip() for r in g.split("\n")]
        assert clean(mine["grid"]) == clean(theirs["grid"]), name
        assert {k: v for k, v in mine.items() if k != "grid"} == {k: v for k, v in theirs.items() if k != "grid"}, name
        assert list(load_layout(name).grid) == clean(theirs["grid"])


def test_trajectories_equal_reference(played):
    cases, ours, ref = played
    stats = {}
    for case, mine, theirs in zip(cases, ours, ref["trajectories"]):
        assert len(mine) == len(theirs), (case["name"], case["kind"], len(mine), len(theirs))
        for t, (a, b) in enumerate(zip(mine, theirs)):
            diff = _first_diff(b, a)
            if diff:
                key, want, got = diff
                raise AssertionError(f"{case['name']} ({case['kind']} sequence) step {t} joint action "
                                     f"{case['actions'][t]}: {key} is {got}, reference has {want}\n"
                                     f"ours: {a}\nreference: {b}")
        s = stats.setdefault((case["name"], case["kind"]), dict(seq=0, steps=0, deliveries=0, reward=0.0, potted=0, cooks=0,
                                                                  partial=0, zero=0, counter=0, soup_counter=0))
        s["seq"] += 1; s["steps"] += len(theirs)
        s["reward"] += sum(x["r"] for x in theirs)
        s["cooks"] += sum(1 for x, y in zip([{"pots": {}}] + theirs, theirs)
                          for k, v in y["pots"].items() if v[1] == 1 and x["pots"].get(k, [None, -1])[1] <= 0)
    # count deliveries from our event log (same trajectories, so the same deliveries)
    from marl_llm.games.overcooked import OvercookedEnv
    for case in cases:
        env = OvercookedEnv(case["layout"], n_agents=case["n"], horizon=case["horizon"])
        env.reset(seed=0)
        for joint in case["actions"][:case["horizon"]]:
            env.step({a: x for a, x in zip(env.possible_agents, joint)})
        log = env.event_log
        kinds = [e["kind"] for e in log]
        s = stats[(case["name"], case["kind"])]
        s["deliveries"] += kinds.count("soup_delivered")
        s["zero"] += sum(1 for e in log if e["kind"] == "soup_delivered" and e["reward"] == 0)
        s["potted"] += kinds.count("onion_potted") + kinds.count("tomato_potted")
        s["partial"] += sum(1 for e in log if e["kind"] == "cook_started" and len(e["recipe"]) < env.max_ingredients)
        s["counter"] += kinds.count("item_placed_on_counter") + kinds.count("item_picked_from_counter")
        s["soup_counter"] += sum(1 for e in log if "counter" in e["kind"] and e["item"] == "soup")
    print("\nlayout                     kind     seqs  steps potted cooks (<3 ingr.) counter (soup) delivered (worth 0) reward")
    for (name, kind), s in sorted(stats.items()):
        print(f"{name:<26} {kind:<8} {s['seq']:>4} {s['steps']:>6} {s['potted']:>6} {s['cooks']:>5} {s['partial']:>10} "
              f"{s['counter']:>7} {s['soup_counter']:>6} {s['deliveries']:>9} {s['zero']:>10} {s['reward']:>6g}")
    total = sum(s["steps"] for s in stats.values())
    print(f"total: {sum(s['seq'] for s in stats.values())} sequences, {total} steps compared step by step")
    for name in MUST_DELIVER:
        s = stats[(name, "scripted")]
        assert s["deliveries"] > 0 and s["reward"] > 0, f"no soup delivered in the scripted sequences on {name}"
    assert any(s["cooks"] for (n, k), s in stats.items() if k == "random"), "random sequences never started a cook"


if __name__ == "__main__" and "--reference" in sys.argv:
    print("\nRESULT " + json.dumps(reference_run(json.load(sys.stdin))))
