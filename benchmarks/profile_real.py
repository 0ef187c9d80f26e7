"""Where the time goes on SmolLM2-135M-Instruct (float32, 1 thread): (a) menu scoring of Overcooked option decisions
(`MenuPolicy.decide`, scoring mode, greedy), (b) sampling 16 rows x 32 tokens (`sample_texts`, greedy), (c) one
PA-MAGRPO-style update's forward + backward (`menu_logprobs` with gradients over a minibatch of decision turns).
Prints seconds per part (median of `--repeats`) and a torch.profiler table per part.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/profile_real.py [--requests 16] [--rows 16] [--tokens 32] [--dtype float32]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/profile_real.py --steps 12 --plain --table 0   # side by side, later states

`--plain` also times menu scoring and the update on the plain forward (transformers' body with per-agent LoRA hooks,
the full LM head: the path before `sampling.prompt_last_hidden`), alternating. Times are this process's CPU seconds.
Measured on the 2-core AMD EPYC (AVX-512, avx512_bf16), 1 thread, a shared machine, `--steps 12` (16 requests,
~392 prompt tokens each, 73 shared per agent): menu scoring 23.9 -> 13.1 CPU s (0.67 -> 1.22 decisions/s), the
update's forward + backward 61.7 -> 35.7 CPU s, sampling 2.54 CPU s (202 tokens/s, unchanged); in bfloat16 9.4 CPU s,
25.0 CPU s and 2.51 CPU s. At reset (observations nearly equal, a long shared prefix) scoring took 3.6 s instead of 42 s.
"""
from __future__ import annotations
import argparse, statistics, time, warnings

def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--backbone", default="smollm2-135m"); ap.add_argument("--dtype", default="float32")
    ap.add_argument("--requests", type=int, default=16); ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=32); ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parts", default="abc"); ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--plain", action="store_true", help="menu scoring on the plain forward (no shared prefix)"); ap.add_argument("--table", type=int, default=15)
    a = ap.parse_args(argv)
    import torch
    warnings.filterwarnings("ignore"); torch.set_num_threads(1)
    from torch.profiler import profile, ProfilerActivity
    from marl_llm.models.base import load_backbone
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.policy import MenuPolicy
    from marl_llm.models.sampling import sample_texts
    from marl_llm.options.env import OptionEnv
    from marl_llm.options.rollout import RULES, decision_requests
    bb = load_backbone(a.backbone, dtype=a.dtype)
    ad = AgentAdapters(bb, ["agent_0", "agent_1"])
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n in ad.names:
            for p in ad.parameters(n): p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    pol = MenuPolicy(ad, rules=RULES["overcooked"], seed=0)
    envs = max(1, a.requests // 2)
    oenv = OptionEnv("overcooked", "cramped_room", n_envs=envs, seed=0, text_obs=True)
    form = "text" if bb.prompt_format == "chat" else "compact"
    ds, pool, rng = oenv.reset(seeds=list(range(envs))), [], torch.Generator().manual_seed(1)
    for _ in range(a.steps):          # later decision points (random allowed choices): observations that differ more
        rs = decision_requests(oenv, ds, form); pool += rs
        ds = oenv.step([int(torch.multinomial(torch.tensor([float(x) for x in (r.allowed or [1] * len(r.menu))]), 1,
                                              generator=rng)) for r in rs])
        if not ds: break
    reqs = (pool + decision_requests(oenv, ds, form))[-a.requests:]
    import marl_llm.models.policy as mp
    fast_hidden = mp.prompt_last_hidden
    def plain(on: bool):   # the plain forward (no shared prefix, the full head) for `--plain`, side by side
        mp.prompt_last_hidden = (lambda *args: None) if on else fast_hidden
    from marl_llm.models.sampling import _common_cuts
    enc = pol.encode(reqs)
    rows = [r[m.bool()].tolist() for r, m in zip(enc["input_ids"], enc["attention_mask"])]
    cuts = _common_cuts([r.agent for r in reqs], rows)
    print(f"prompt tokens per row {sum(map(len, rows)) / len(rows):.0f}, shared prefix per agent {sum(cuts) / len(cuts):.0f}")
    print(f"menu batch: {tuple(enc['input_ids'].shape)}, real tokens {int(enc['attention_mask'].sum())}")
    qs = ["Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
          "How many clips did Natalia sell altogether in April and May?",
          "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?"]
    agents = [ad.names[k * 2 // a.rows] for k in range(a.rows)]
    prompts = [qs[ad.names.index(x)] for x in agents]
    choice = torch.tensor([d.choice for d in pol.decide(reqs, greedy=True)])

    def menu(): return pol.decide(reqs, greedy=True)
    def sample(): return sample_texts(ad, agents, prompts, max_new_tokens=a.tokens, greedy=True)
    def update():
        lp = pol.menu_logprobs(pol.encode(reqs))
        loss = -lp.gather(1, choice[:, None]).mean()
        loss.backward()
        for n in ad.names:
            for p in ad.parameters(n): p.grad = None
        return float(loss)
    parts = {"a": ("menu scoring", menu, a.requests, "decisions/s"),
             "b": ("sampling", sample, a.rows * a.tokens, "tokens/s"),
             "c": ("update fwd+bwd", update, None, "s/update")}
    if a.plain:
        for k in "ac":
            name, fn, n, unit = parts[k]
            parts[k + "0"] = (name + " (plain)", lambda fn=fn: (plain(True), fn(), plain(False)), n, unit)
    res = {}
    keys = [k for p in a.parts for k in (p, p + "0") if k in parts]
    for key in keys: parts[key][1]()                  # warm-up
    ts = {k: [] for k in keys}
    for r in range(a.repeats):                        # CPU seconds of this process (the machine may be shared)
        for key in keys if r % 2 == 0 else keys[::-1]:
            t = time.process_time(); parts[key][1](); ts[key].append(time.process_time() - t)
    for key in keys:
        name, fn, n, unit = parts[key]
        s = statistics.median(ts[key]); res[name] = (s, n, unit)
        print(f"\n### ({key}) {name}: {s:.3f} CPU s" + (f" = {n / s:.1f} {unit}" if n else f" {unit}"), flush=True)
        if a.table:
            with profile(activities=[ProfilerActivity.CPU]) as prof: fn()
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=a.table, max_name_column_width=40))
    print("\n| part | CPU s | rate |\n|---|---|---|")
    for name, (s, n, unit) in res.items():
        print(f"| {name} | {s:.3f} | " + (f"{n / s:.1f} {unit}" if n else f"{s:.3f} {unit}") + " |")

if __name__ == "__main__":
    main()
