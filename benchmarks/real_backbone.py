"""Speed and memory on the real backbone: marl_llm next to transformers' own, on `tiny` and SmolLM2-135M-Instruct.

Three parts, each measured side by side in one run (the two systems timed alternately, a warm-up call of each
first, the median of `--repeats` counted), for every backbone of `--backbones` (default `tiny smollm2-135m`):

1. Menu scoring, decisions/s. The same batch of real Overcooked decision prompts (`OptionEnv('overcooked',
   'cramped_room', text_obs=True)` right after reset: 2 agents x envs; the game in words for a chat model, the
   compact features for `tiny`, as `option_rollout.rollout` builds them, `RULES['overcooked']` as the rules)
   answered by `MenuPolicy.decide` (one forward for every agent's request: the body with each agent's rows through
   its own LoRA, the LM head on the last column) and by transformers' plain forward of the same PEFT model
   (`model(input_ids, attention_mask, position_ids, adapter_names=..., logits_to_keep=1)`, PEFT's mixed-adapter
   batch) whose last-position logits are turned into the same menu distribution. Both tokenize the same way
   (`MenuPolicy.encode`) and choose greedily; the choices and the largest menu log-prob difference are reported.
2. Sampled tokens/s at 1, 16 and 64 rows (2 agents, the rows split between them; 1 row: agent_0 alone), 32 new
   tokens, greedy for both so the work is equal: `text_rl.sample_texts` (the toolkit's decoder, `marl_llm.models.decode`)
   against `generate` on the PEFT model (`adapter_names=` for a mixed batch, the agent's adapter active for one
   row), each from the same chat-formatted (`prompts.format_prompts`) GSM8K-style question per agent; both times
   include tokenizing the prompts and decoding the texts. By default each agent's rows share its question (a GRPO
   group), which the toolkit prefills once per distinct (agent, prompt) and transformers once per row;
   `--distinct-prompts` gives every row its own question (the numbers changed), so the prefill is equal work too.
   Tokens counted: each row's new tokens up to and with its first EOS; 'same' = rows whose tokens agree.
3. Peak RSS (VmHWM) with 1, 2 and 8 agents on one base: a fresh subprocess per cell loads the backbone, builds
   `AgentAdapters` with N agents, samples `--mem-rows` rows and runs one forward + backward of their completion
   log-probs (`text_rl.completion_logprobs`), greedy, adapters at PEFT's init. The work is the same for every N: the rows form `--mem-groups` groups,
   each its own question (a GRPO group: its prompt runs once), and the groups are split between the agents, so
   1 agent and 8 agents run the same distinct prompts and tokens and the ratio to 1 agent is what the extra
   adapters cost (not extra prompts). For the backbones of `--copies` (default tiny) also N
   independent model copies with one adapter each doing the same rows. 'growth' = peak minus the RSS after imports.

LoRA weights are random (small, seeded, different per agent), so routing each row to its own adapter matters and
the two systems' agreement checks it. Every backbone's timing runs in its own process too (the parent never
imports torch), with `--threads` torch threads (default 1).

Prints one markdown table per part (backbones side by side) and writes JSON (`--out`; default
`$OUT/real_backbone.json` when OUT is set, else benchmarks/results/real_backbone.json; `--quick`: *_quick.json).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/real_backbone.py            # tiny and smollm2-135m, ~8 min on 1 core
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/real_backbone.py --quick    # smoke run: tiny, small sizes, < 60 s
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/real_backbone.py --backbones smollm2-135m --requests 32 --repeats 3

Default sizes per backbone (SmolLM2's Overcooked prompt is ~320 tokens: one forward of 32 of them is ~2.2 TFLOP,
a minute or more on one shared core, hence 4 requests there, and one timed repeat of its sampling from 16 rows on
(`sample_repeats`; its 64 rows take transformers a minute or more; fewer rows get `repeats`); any size flag applies to all backbones, `--repeats` to both parts):
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {   # per backbone: requests (2 agents x envs), sampling rows, new tokens, repeats (menu / sampling), memory agents
    "tiny": dict(requests=32, rows=[1, 16, 64], new_tokens=32, repeats=3, sample_repeats=3, mem_agents=[1, 2, 8]),
    "smollm2-135m": dict(requests=4, rows=[1, 16, 64], new_tokens=32, repeats=3, sample_repeats=1, mem_agents=[1, 2, 8]),
}
DEFAULT_SIZES = SIZES["smollm2-135m"]          # any other (real) backbone
QUICK = dict(requests=4, rows=[1, 4], new_tokens=4, repeats=1, sample_repeats=1, mem_agents=[1, 2])
__doc__ += "".join(f"    {k}: {v}\n" for k, v in SIZES.items()) + f"    --quick: {QUICK}\n"
AGENTS = ["agent_0", "agent_1"]
QUESTIONS = [   # GSM8K-style, one per agent; {n} is changed per row with --distinct-prompts
    "Natalia sold clips to {n} of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "Weng earns ${n} an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?",
]
BASE_N = (48, 12)


def question(agent_index: int, row: int | None = None) -> str:
    "Agent `agent_index`'s question; with a row number, that row's own numbers (--distinct-prompts)."
    return QUESTIONS[agent_index % 2].format(n=BASE_N[agent_index % 2] + (0 if row is None else 2 * row))


def split_rows(rows: int, agents: list[str]) -> list[str]:
    "`rows` agent names, grouped by agent, as evenly as possible (1 row: the first agent)."
    k = min(rows, len(agents))
    return [a for i, a in enumerate(agents[:k]) for _ in range(rows // k + (i < rows % k))]


# ---------------------------------------------------------------- child: timing (parts 1 and 2)

def _setup(threads: int):
    import warnings
    import torch
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    return torch


def random_lora(ad, seed: int = 0, scale: float = 0.02):
    "Small, seeded, per-agent random LoRA weights (A and B), so each row's adapter changes its output."
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n in ad.names:
            for p in ad.parameters(n): p.copy_(torch.randn(p.shape, generator=g) * scale)


def timed(fns: dict, repeats: int) -> dict:
    "Median seconds of each of `fns` over `repeats` rounds, the order alternating between rounds (after warm-up)."
    ts = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for k in (names if r % 2 == 0 else names[::-1]):
            t = time.perf_counter(); fns[k](); ts[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in ts.items()} | {"all": ts}


def log(msg: str):
    print(f"  [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def menu_part(bb, ad, n_requests: int, repeats: int) -> dict:
    "Part 1: MenuPolicy.decide vs transformers' PEFT forward on the same Overcooked decision batch."
    import torch
    from marl_llm.models.base import position_ids_from_mask
    from marl_llm.options.env import OptionEnv
    from marl_llm.options.rollout import RULES, decision_requests
    from marl_llm.models.policy import MenuPolicy
    envs = max(1, -(-n_requests // 2))
    oenv = OptionEnv("overcooked", "cramped_room", n_envs=envs, seed=0, text_obs=True)
    ds = oenv.reset(seeds=list(range(envs)))[:n_requests]
    form = "text" if bb.prompt_format == "chat" else "compact"
    reqs = decision_requests(oenv, ds, form)
    pol = MenuPolicy(ad, rules=RULES["overcooked"], seed=0)
    model = ad.model

    @torch.no_grad()
    def hf_menu(rs):
        batch = pol.encode(rs)                      # the same prompts and tokens
        ad._eval()
        names = batch["agents"]
        if len(set(names)) > 1: route = {"adapter_names": names}
        else: ad.activate(names[0]); route = {}
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       position_ids=position_ids_from_mask(batch["attention_mask"]), use_cache=False,
                       logits_to_keep=1, **route).logits[:, -1].float()
        mask = batch["menu_mask"]
        lp = logits.log_softmax(-1)[:, pol.label_ids[:mask.shape[1]]].masked_fill(~mask, float("-inf")).log_softmax(-1)
        return lp.argmax(-1).tolist(), lp

    def ours(rs): return pol.decide(rs, greedy=True)
    warm = reqs[:2]                                  # one request per agent: the mixed path of both
    ours(warm); hf_menu(warm)
    out = {}                                         # the last timed call's answers (no extra forward to compare)
    t = timed({"marl_llm": lambda: out.__setitem__("marl_llm", ours(reqs)),
               "transformers": lambda: out.__setitem__("transformers", hf_menu(reqs))}, repeats)
    got, (hf_choice, hf_lp) = out["marl_llm"], out["transformers"]
    ours_lp = torch.tensor([[d.logprob] for d in got])
    hf_at = hf_lp.gather(1, torch.tensor([[d.choice] for d in got]))
    diff = max(abs(float(lp_a) - float(lp_b)) for lp_a, lp_b in zip(ours_lp.flatten(), hf_at.flatten()))
    n, lens = len(reqs), pol.encode(reqs)["attention_mask"].sum(1).tolist()
    return dict(requests=n, agents=len(set(r.agent for r in reqs)), envs=envs, obs_form=form,
                tokens_per_prompt_mean=sum(lens) / n, tokens_per_prompt_max=max(lens),
                marl_llm_s=t["marl_llm"], transformers_s=t["transformers"], times=t["all"],
                marl_llm_per_s=n / t["marl_llm"], transformers_per_s=n / t["transformers"],
                speedup=t["transformers"] / t["marl_llm"],
                same_choices=sum(d.choice == c for d, c in zip(got, hf_choice)), max_abs_logprob_diff=diff)


def sample_part(bb, ad, rows_list: list[int], new_tokens: int, repeats: int, big_repeats: int, distinct: bool) -> list[dict]:
    "Part 2: sample_texts vs transformers' generate, greedy, same rows and prompts (`big_repeats` from 16 rows on)."
    import torch
    from marl_llm.models.prompts import format_prompts
    from marl_llm.models.sampling import sample_texts
    tok = bb.tokenizer
    eos, pad = tok.eos_token_id, tok.pad_token_id

    def batch(rows):
        agents = split_rows(rows, AGENTS)
        prompts = [question(AGENTS.index(a), k if distinct else None) for k, a in enumerate(agents)]
        return agents, prompts

    def ours(agents, prompts, n):
        return [s.completion_ids for s in sample_texts(ad, agents, prompts, max_new_tokens=n, greedy=True)]

    @torch.no_grad()
    def hf(agents, prompts, n):
        enc = bb.encode(format_prompts(bb, prompts), pad_left=True)
        ad._eval()
        if len(set(agents)) > 1: route = {"adapter_names": list(agents)}
        else: ad.activate(agents[0]); route = {}
        out = ad.model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], max_new_tokens=n,
                                do_sample=False, eos_token_id=eos, pad_token_id=pad, **route)
        comps = []
        for row in out[:, enc["input_ids"].shape[1]:].tolist():
            c = row[:row.index(eos) + 1] if eos in row else row
            comps.append(c)
        tok.batch_decode(comps, skip_special_tokens=True)      # as sample_texts decodes its texts
        return comps

    a, p = batch(2)
    ours(a, p, 2); hf(a, p, 2)                                   # warm-up: both code paths, mixed adapters
    a, p = batch(1)
    ours(a, p, 2); hf(a, p, 2)                                   # and one agent alone
    res = []
    for rows in rows_list:
        agents, prompts = batch(rows)
        out = {}
        t = timed({"marl_llm": lambda: out.__setitem__("marl_llm", ours(agents, prompts, new_tokens)),
                   "transformers": lambda: out.__setitem__("transformers", hf(agents, prompts, new_tokens))},
                  repeats if rows < 16 else big_repeats)
        toks = {k: sum(len(c) for c in v) for k, v in out.items()}
        lens = bb.encode(format_prompts(bb, prompts))["attention_mask"].sum(1).tolist()
        res.append(dict(rows=rows, agents=len(set(agents)), new_tokens=new_tokens, prompt_tokens_max=max(lens),
                        distinct_prompts=len(set(zip(agents, prompts))),
                        marl_llm_s=t["marl_llm"], transformers_s=t["transformers"], times=t["all"],
                        marl_llm_tokens=toks["marl_llm"], transformers_tokens=toks["transformers"],
                        marl_llm_tok_per_s=toks["marl_llm"] / t["marl_llm"],
                        transformers_tok_per_s=toks["transformers"] / t["transformers"],
                        speedup=(toks["marl_llm"] / t["marl_llm"]) / (toks["transformers"] / t["transformers"]),
                        same_rows=sum(x == y for x, y in zip(out["marl_llm"], out["transformers"]))))
        log(f"{bb.name} sampling {rows} rows: {res[-1]['marl_llm_tok_per_s']:.1f} vs "
            f"{res[-1]['transformers_tok_per_s']:.1f} tok/s ({res[-1]['speedup']:.2f}x)")
    return res


def speed_child(a) -> dict:
    torch = _setup(a.threads)
    import peft, transformers
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import load_backbone
    t0 = time.perf_counter()
    bb = load_backbone(a.child[1])
    ad = AgentAdapters(bb, AGENTS)
    random_lora(ad)
    info = dict(backbone=a.child[1], params_m=bb.num_parameters / 1e6, prompt_format=bb.prompt_format,
                arch=bb.model.config.model_type, layers=bb.model.config.num_hidden_layers,
                hidden=bb.model.config.hidden_size, vocab=bb.model.config.vocab_size, load_s=time.perf_counter() - t0,
                threads=torch.get_num_threads(), libs=f"torch {torch.__version__}, transformers "
                f"{transformers.__version__}, peft {peft.__version__}")
    log(f"{bb.name}: loaded ({info['params_m']:.1f} M parameters) in {info['load_s']:.1f} s")
    out = dict(info)
    if not a.skip_menu:
        out["menu"] = menu_part(bb, ad, a.requests, a.repeats)
        log(f"{bb.name} menu scoring: {out['menu']['marl_llm_per_s']:.2f} vs {out['menu']['transformers_per_s']:.2f} "
            f"decisions/s ({out['menu']['speedup']:.2f}x)")
    if not a.skip_sampling:
        out["sampling"] = sample_part(bb, ad, a.rows, a.new_tokens, a.repeats, a.sample_repeats, a.distinct_prompts)
    out["child_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------- child: memory (part 3)

def mem_child(a) -> dict:
    "A fresh process: one base + N adapters (or N copies with one adapter each), sample, one forward + backward."
    torch = _setup(a.threads)
    import gc
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import load_backbone
    from marl_llm.core.records import peak_rss_mb, rss_mb
    from marl_llm.models.sampling import completion_logprobs, sample_texts
    import marl_llm.models.prompts, marl_llm.models.decode  # noqa: F401  (imported before the baseline)
    _, name, design, n = a.child
    n = int(n)
    gc.collect()
    base_peak, base_now = peak_rss_mb(), rss_mb()
    names = [f"agent_{i}" for i in range(n)]
    if design == "one base": groups = [(AgentAdapters(load_backbone(name), names), names)]
    else: groups = [(AgentAdapters(load_backbone(name), [x]), [x]) for x in names]
    with torch.no_grad():
        for ad, _ in groups: sum(float(p.sum()) for p in ad.model.parameters())   # touch every (memory-mapped) weight
    gc.collect()
    loaded = rss_mb() - base_now
    groups_of = split_rows(a.mem_groups, names)                  # group k -> its agent
    per = a.mem_rows // a.mem_groups
    rows = [(groups_of[k], k) for k in range(a.mem_groups) for _ in range(per)]   # (agent, group), grouped by agent
    t = time.perf_counter()
    done = 0
    for ad, who in groups:
        mine = [r for r in rows if r[0] in who]
        if not mine: continue
        agents, prompts = [x for x, _ in mine], [question(k, k) for _, k in mine]   # group k: its own question
        ss = sample_texts(ad, agents, prompts, max_new_tokens=a.mem_new_tokens, greedy=True)   # PEFT's init (B = 0):
        # every agent's adapter starts as the base, so greedy completions, and the work, are the same for every N
        lp, mask = completion_logprobs(ad, agents, [s.prompt_ids for s in ss], [s.completion_ids for s in ss])
        (lp * mask).sum().backward()
        done += len(ss)
    return dict(backbone=name, design=design, agents=n, models=len(groups), rows=done, groups=a.mem_groups,
                params_m=sum(sum(p.numel() for p in ad.model.parameters()) for ad, _ in groups) / 1e6,
                loaded_mb=loaded, peak_mb=peak_rss_mb(), growth_mb=peak_rss_mb() - base_peak,
                work_s=time.perf_counter() - t)


# ---------------------------------------------------------------- parent: cells, tables, JSON

def child_env(threads: int) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
            "TOKENIZERS_PARALLELISM": "false", "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "PYTHONWARNINGS": "ignore"}


def run_child(args: list[str], threads: int, timeout: float) -> tuple[dict | None, str]:
    "This file in a fresh process (progress on stderr passes through); its last stdout line is its JSON."
    try:
        p = subprocess.run([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                           env=child_env(threads), timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    if p.returncode: return None, f"exit {p.returncode} (its traceback is on stderr above)"
    return json.loads(p.stdout.strip().splitlines()[-1]), ""


def sizes_for(bb: str, a) -> dict:
    s = dict(QUICK if a.quick else SIZES.get(bb, DEFAULT_SIZES))
    for k in s:
        if getattr(a, k) is not None: s[k] = getattr(a, k)
    if a.repeats is not None: s["sample_repeats"] = a.repeats
    return s


def fmt(x, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def print_menu(res: dict):
    cols = [b for b in res if "menu" in res[b]]
    if not cols: return
    m = {b: res[b]["menu"] for b in cols}
    print("\n### 1. Menu scoring: Overcooked cramped_room decisions/s (median of repeats; greedy choice)\n")
    print("| | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    rows = [("parameters (M)", lambda b: f"{res[b]['params_m']:.1f}"),
            ("requests (agents x envs)", lambda b: f"{m[b]['requests']} ({m[b]['agents']} x {m[b]['envs']})"),
            ("observation form", lambda b: m[b]["obs_form"]),
            ("tokens per prompt (mean / max)", lambda b: f"{m[b]['tokens_per_prompt_mean']:.0f} / {m[b]['tokens_per_prompt_max']}"),
            ("repeats", lambda b: str(len(m[b]["times"]["marl_llm"]))),
            ("marl_llm `MenuPolicy.decide` decisions/s", lambda b: f"{m[b]['marl_llm_per_s']:.2f}"),
            ("transformers PEFT forward (`adapter_names`) decisions/s", lambda b: f"{m[b]['transformers_per_s']:.2f}"),
            ("ratio marl_llm / transformers", lambda b: f"{m[b]['speedup']:.2f}x"),
            ("seconds per batch (marl_llm / transformers)", lambda b: f"{m[b]['marl_llm_s']:.3f} / {m[b]['transformers_s']:.3f}"),
            ("same greedy choices", lambda b: f"{m[b]['same_choices']}/{m[b]['requests']}"),
            ("max abs diff of chosen log-prob", lambda b: f"{m[b]['max_abs_logprob_diff']:.1e}")]
    for label, f in rows: print(f"| {label} | " + " | ".join(f(b) for b in cols) + " |")


def print_sampling(res: dict):
    cols = [b for b in res if "sampling" in res[b]]
    if not cols: return
    s0 = res[cols[0]]["sampling"][0]
    print(f"\n### 2. Sampled tokens/s, greedy, {s0['new_tokens']} new tokens, 2 agents (rows split; 1 row: one agent), "
          f"median of repeats\n")
    print("| rows | " + " | ".join(f"{b}: marl_llm tok/s | {b}: transformers tok/s | {b}: ratio | {b}: same rows"
                                   for b in cols) + " |")
    print("|---|" + "---|---|---|---|" * len(cols))
    for rows in sorted({r["rows"] for b in cols for r in res[b]["sampling"]}):
        cells = []
        for b in cols:
            r = next((x for x in res[b]["sampling"] if x["rows"] == rows), None)
            cells.append("- | - | - | -" if r is None else
                         f"{r['marl_llm_tok_per_s']:.1f} | {r['transformers_tok_per_s']:.1f} | {r['speedup']:.2f}x | "
                         f"{r['same_rows']}/{r['rows']}")
        print(f"| {rows} | " + " | ".join(cells) + " |")
    for b in cols:
        r = res[b]["sampling"]
        print(f"\n{b}: prompt tokens (max) {max(x['prompt_tokens_max'] for x in r)}; distinct (agent, prompt) pairs "
              + ", ".join(f"{x['distinct_prompts']} of {x['rows']}" for x in r)
              + "; tokens counted " + ", ".join(f"{x['marl_llm_tokens']}/{x['transformers_tokens']}" for x in r)
              + "; seconds " + ", ".join(f"{x['marl_llm_s']:.2f}/{x['transformers_s']:.2f}" for x in r)
              + "; repeats " + ", ".join(str(len(x["times"]["marl_llm"])) for x in r))


def print_memory(mem: list, mem_rows: dict, new_tokens: dict, groups: dict):
    if not mem: return
    cols = list(dict.fromkeys(m["backbone"] for m in mem))
    print("\n### 3. Peak RSS (VmHWM, MiB), one fresh process per cell: load, N agents, sample, one forward + backward "
          "of completion log-probs; x1 = / the same backbone's 1 agent\n")
    print("work per cell, the same for every N: " + "; ".join(
        f"{b}: {mem_rows[b]} rows in {groups[b]} groups of one question each (groups split between the agents) "
        f"x {new_tokens[b]} new tokens (greedy)" for b in cols) + "\n")
    print("| N | design | " + " | ".join(f"{b}: peak | x1 | growth | x1" for b in cols) + " |")
    print("|---|---|" + "---|---|---|---|" * len(cols))
    keys = list(dict.fromkeys((m["agents"], m["design"]) for m in sorted(mem, key=lambda m: (m["design"] != "one base", m["agents"]))))
    for n, design in keys:
        cells = []
        for b in cols:
            one = next((x for x in mem if x["backbone"] == b and x["agents"] == 1), None)
            r = next((x for x in mem if x["backbone"] == b and x["agents"] == n and x["design"] == design), None)
            if r is None or "error" in r: cells.append("- | - | - | -"); continue
            x1 = lambda k: f"{r[k] / one[k]:.2f}x" if one and "error" not in one and one[k] > 0 else "-"
            cells.append(f"{r['peak_mb']:.0f} | {x1('peak_mb')} | {r['growth_mb']:.0f} | {x1('growth_mb')}")
        print(f"| {n} | {design} | " + " | ".join(cells) + " |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backbones", nargs="+", default=None, help="default: tiny smollm2-135m (--quick: tiny)")
    ap.add_argument("--requests", type=int, default=None, help="menu requests (2 agents x envs); default per backbone")
    ap.add_argument("--rows", type=int, nargs="+", default=None, help="sampling rows; default 1 16 64")
    ap.add_argument("--new-tokens", type=int, default=None, help="new tokens per sampled row; default 32")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed repeats (median) of both parts; default per backbone (menu / sampling)")
    ap.add_argument("--sample-repeats", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mem-agents", type=int, nargs="+", default=None, help="N of the memory part; default 1 2 8")
    ap.add_argument("--mem-rows", type=int, default=None, help="rows sampled and scored per memory cell (default 16)")
    ap.add_argument("--mem-groups", type=int, default=None,
                    help="distinct questions of a memory cell, split between the agents (default 8: the largest N)")
    ap.add_argument("--mem-new-tokens", type=int, default=None, help="new tokens per memory row (default 8)")
    ap.add_argument("--copies", nargs="*", default=None,
                    help="backbones whose memory part adds N model copies (default: tiny; --quick: none)")
    ap.add_argument("--distinct-prompts", action="store_true", help="sampling: every row its own question")
    ap.add_argument("--skip-menu", action="store_true")
    ap.add_argument("--skip-sampling", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny only, small sizes (< 60 s)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads in every child (default 1)")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per child process")
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(speed_child(a) if a.child[0] == "speed" else mem_child(a)))
        return
    t_start = time.perf_counter()
    backbones = a.backbones or (["tiny"] if a.quick else ["tiny", "smollm2-135m"])
    sizes = {b: sizes_for(b, a) for b in backbones}
    mem_rows = {b: a.mem_rows or (4 if a.quick else 16) for b in backbones}
    mem_tokens = {b: a.mem_new_tokens or (4 if a.quick else 8) for b in backbones}
    mem_groups = {b: a.mem_groups or max(sizes[b]["mem_agents"]) for b in backbones}
    for b in backbones:
        if mem_rows[b] % mem_groups[b] or mem_groups[b] < max(sizes[b]["mem_agents"]):
            ap.error(f"--mem-rows ({mem_rows[b]}) must be a multiple of --mem-groups ({mem_groups[b]}), "
                     f"which must be >= the largest --mem-agents ({max(sizes[b]['mem_agents'])})")
    out = Path(a.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "benchmarks" / "results")
               / ("real_backbone_quick.json" if a.quick else "real_backbone.json"))
    speed, mem = {}, []
    pass_on = (["--distinct-prompts"] if a.distinct_prompts else []) + (["--skip-menu"] if a.skip_menu else []) \
        + (["--skip-sampling"] if a.skip_sampling else [])
    for b in backbones:
        s = sizes[b]
        if not (a.skip_menu and a.skip_sampling):
            print(f"timing {b}: {s}", file=sys.stderr, flush=True)
            res, err = run_child(["--child", "speed", b, "--requests", str(s["requests"]), "--rows", *map(str, s["rows"]),
                                  "--new-tokens", str(s["new_tokens"]), "--repeats", str(s["repeats"]),
                                  "--sample-repeats", str(s["sample_repeats"]),
                                  "--threads", str(a.threads), *pass_on], a.threads, a.timeout)
            speed[b] = res or {"backbone": b, "error": err}
            if res is None: print(f"  timing {b} failed: {err}", file=sys.stderr)
        if not a.skip_memory:
            cells = [(n, "one base") for n in s["mem_agents"]]
            if b in (([] if a.quick else ["tiny"]) if a.copies is None else a.copies): cells += [(n, "N copies") for n in s["mem_agents"] if n > 1]
            for n, design in cells:
                res, err = run_child(["--child", "mem", b, design, str(n), "--mem-rows", str(mem_rows[b]),
                                      "--mem-new-tokens", str(mem_tokens[b]), "--mem-groups", str(mem_groups[b]),
                                      "--threads", str(a.threads)],
                                     a.threads, a.timeout)
                mem.append(res or {"backbone": b, "design": design, "agents": n, "error": err})
                print(f"  memory {b} N={n} {design}: " + (f"peak {res['peak_mb']:.0f} MiB ({res['work_s']:.1f} s work)"
                                                         if res else f"failed: {err}"), file=sys.stderr, flush=True)
    ok = {b: r for b, r in speed.items() if "error" not in r}
    print_menu(ok)
    print_sampling(ok)
    print_memory([m for m in mem if "error" not in m], mem_rows, mem_tokens, mem_groups)
    for b, r in speed.items():
        if "error" in r: print(f"\n{b}: timing failed: {r['error']}")
    for m in mem:
        if "error" in m: print(f"\n{m['backbone']} memory N={m['agents']} {m['design']}: failed: {m['error']}")
    wall = time.perf_counter() - t_start
    print(f"\nwall time {wall:.0f} s; threads {a.threads}; load average at end {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs" + (f"; {next(iter(ok.values()))['libs']}" if ok else ""))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(backbones=backbones, sizes=sizes, mem_rows=mem_rows, mem_new_tokens=mem_tokens,
                                   mem_groups=mem_groups,
                                   distinct_prompts=a.distinct_prompts, threads=a.threads, speed=speed, memory=mem,
                                   wall_s=wall, python=platform.python_version(), machine=platform.platform(),
                                   cpus=os.cpu_count(), load_avg_at_end=os.getloadavg()), indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
