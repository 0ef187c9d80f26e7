"""Peers, side by side: TRL's `GRPOTrainer` (one LoRA adapter), CoMLRL's MAGRPO (2 agents, one model copy each,
one LoRA adapter each) and marl_llm's text method (2 agents as 2 LoRA adapters on ONE base), on the same
tiny Qwen2 model and tokenizer, doing the same work per update; then memory for 2, 4, 8 agents.

Work per update, the same for every system: 8 prompts x 8 completions = 64 completions of exactly 16 new
tokens (the saved model's generation config has `min_new_tokens=16` and suppresses the pad token, and every
system asks for at most 16), sampled at temperature 1 (no top-k/top-p), rewarded by one verifiable function
(how many letters 'e' a completion has), group-normalised advantages over each prompt's 8 completions, LoRA
r=8, alpha=16 on q_proj/v_proj, no KL, no reference model, and one optimiser step per trained adapter over all
the update's rows:
  * TRL (`GRPOTrainer`): 8 prompts x num_generations=8, per_device_train_batch_size=64, no gradient
    accumulation, num_iterations=1, beta=0, loss_type its default ('dapo'), use_cpu, fp32, no logging or eval.
    Run twice: with TRL's default gradient checkpointing (on) and with it off (the same FLOPs as the others).
  * CoMLRL (`MAGRPOTrainer`, PyPI `comlrl`): its own design, one model copy per agent (here a LoRA-wrapped
    copy of the same saved tiny model); each agent writes 8 completions for each of its 4 prompts (agent 0
    the prompts 0-3, agent 1 the prompts 4-7, through per-agent formatters); rollout_buffer_size=4, so one
    update is `train()` over 4 dataset items and one optimiser step per agent; joint ('aligned') reward =
    the two agents' letter counts summed, mean baseline with std normalisation (its defaults).
  * marl_llm: `AgentAdapters` with 2 agents on one base; one `sample_texts` over 2 agents x 4 prompts x 8
    completions (same prompt split as CoMLRL), then one `per_agent_update` (token-level clipped loss,
    minibatch 64: one forward, one backward, one optimiser step per agent).

What differs is each system's own code, not the work. The part of marl_llm's that matters most here: its own
forward (`marl_llm.models.decode`: sampling, and the scoring forward of shared-prompt rows) runs every frozen float32
linear layer on oneDNN (`dnn.linear`, what `torch.compile`'s CPU backend calls; 2x MKL's sgemm on an AMD CPU,
where MKL keeps to AVX2), while TRL and CoMLRL run transformers' forward, whose matmuls go to MKL
(`dnn.CPU_ONEDNN = False` turns it off; `benchmarks/text_update_ablation.py` measures it).

Each cell runs in a fresh subprocess (so peak RSS, VmHWM, does not mix; the parent never imports torch; a
marl_llm process fixes glibc's mmap threshold at 2 MiB when it builds `AgentAdapters` on a model at least 512
wide, `marl_llm.core.records.malloc_for`: the 768x12 model of the memory part; on the tiny model it keeps glibc's default,
as TRL's and CoMLRL's processes do): load,
1 warm-up update, then `--updates` timed updates; `--repeats` rounds run back to back, the systems interleaved
(TRL, TRL without checkpointing, CoMLRL, marl_llm, TRL, ...). Each update's wall time is split by wrapping,
identically for every system: `generate` (for marl_llm its own decoder, `marl_llm.models.decode`), the inner Qwen2 model's forward outside generate (no-grad / with
grad; for marl_llm also its own forward, `marl_llm.models.decode.Decoder.hidden`, which scores shared-prompt rows), autograd backward (it includes any checkpoint recompute), optimiser steps, and the rest (LM head and
loss, rewards, collation, Python).

Memory: for N agents, a fresh process that (a) loads one base + N adapters and runs one batched sample +
update over all N agents' rows, versus (b) N independent model copies with one LoRA adapter each doing the
same work (marl_llm code for both, so only the design differs); each agent writes 8 completions for each of 4
prompts, and the update takes 32 rows per forward/backward with gradients accumulated into the same single
optimiser step per agent, which bounds the activations (`--mem-minibatch K`; 0: all rows at once), and sampling
passes of at most 1,024 tokens, which bounds the KV cache (`--mem-decode-tokens T`; 0: all rows). N=1 (one
model, one adapter) is the reference. Run on the tiny model and on a larger random-init Qwen2 built locally
(`--hidden 768 --layers 12`, ~87M parameters) so the weights matter.

`--backbone smollm2-135m` times the same work on the real SmolLM2-135M-Instruct (float32, dequantised from its GGUF
file by `load_backbone`, saved to the temporary folder with the same generation config; every system gets the plain
PROMPTS, no chat template: marl_llm loads it with `prompt_format='raw'`), and its memory part runs N=1 and N=8 on it
(1 prompt x 8 completions per agent, no larger local model) with update passes of one agent's 8 rows for every N: on
a real model the activations of a pass outweigh the LoRA state, so the comparison holds the pass size equal
(`--mem-minibatch 32` lets N=8 run 4x larger passes than N=1: 1.57x one agent's peak, measured 2026-12-04).

Every timed process also reports the linear path it takes (printed under the timing table): the kernels that
transformers/PEFT's `F.linear` (MKL's sgemm) and marl_llm's `dnn.linear` (oneDNN, for frozen float32 weights)
reach in that process, named from MKL's and oneDNN's verbose output, whether MKL sees an Intel CPU, and both
paths' GFLOP/s on the backbone's MLP shape measured in that process before loading. marl_llm's ratio to TRL moves
with the oneDNN/MKL speed ratio of the machine (and with how busy it is): the table shows it per process.

Nothing is downloaded: the tiny model is built by marl_llm and saved to a temporary folder that all systems
load. CoMLRL pulls openai and wandb, so it lives in its own venv that reuses this venv's packages
(torch, transformers, peft, datasets) through a .pth file; make it with:

    python3.11 -m venv .venv-comlrl && echo '*' > .venv-comlrl/.gitignore
    echo "$PWD/.venv/lib/python3.11/site-packages" > .venv-comlrl/lib/python3.11/site-packages/_main_venv.pth
    .venv-comlrl/bin/pip install comlrl==1.4.3

Usage:

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/peers.py            # 3 repeats x 3 updates; memory N=2,4,8 (tiny, 768x12)
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/peers.py --quick    # smoke run: 1 repeat x 1 update, memory on tiny only
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/peers.py --skip-memory --repeats 5
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/peers.py --backbone smollm2-135m --repeats 1 --updates 1   # the real model
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/peers.py --skip-timing --mem-minibatch 0 --mem-decode-tokens 0 \
        --out benchmarks/results/peers_mem_unbounded.json           # memory with every row in one pass
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = [f"Question: {a} plus {b}? Answer:" for a, b in ((3, 4), (7, 2), (5, 5), (9, 1), (6, 8), (2, 2), (8, 3), (4, 9))]
GROUP, NEW_TOKENS, LETTER, LR = 8, 16, "e", 1e-4
LORA = dict(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
SYSTEMS = ("trl", "trl-nockpt", "comlrl", "marl_llm")
LABEL = {"trl": "TRL GRPOTrainer (LoRA, grad ckpt on: default)", "trl-nockpt": "TRL GRPOTrainer (LoRA, grad ckpt off)",
         "comlrl": "CoMLRL MAGRPO (2 agents, 2 models)", "marl_llm": "marl_llm text (2 agents, 1 base)"}
PARTS = ("generate", "forward (no grad)", "forward (grad)", "backward", "optimizer step")


sys.path.insert(0, str(ROOT))                                   # the CoMLRL venv sees the repo, not the editable install
from marl_llm.core.records import peak_rss_mb as peak_mb, rss_mb   # VmHWM / VmRSS: a child's own peak, not its parent's


def reward(text: str) -> float:
    "The one verifiable reward of every system: how many times LETTER occurs in the completion."
    return float(text.count(LETTER))


# ---------------------------------------------------------------- the shared models

def _save(model, tokenizer, folder: Path) -> Path:
    "Save with exactly-NEW_TOKENS generation (EOS held back until then, pad never sampled) for every system."
    model.generation_config.min_new_tokens = NEW_TOKENS
    model.generation_config.suppress_tokens = [tokenizer.pad_token_id]
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_models(tmp: Path, hidden: int, layers: int, backbone: str = "tiny") -> dict:
    """The timed backbone (`load_backbone(backbone)`: `tiny` or the real `smollm2-135m`, float32) and, if hidden > 0,
    a larger random-init Qwen2, saved locally; the first key is the timed one."""
    import torch
    from transformers import Qwen2ForCausalLM
    from marl_llm.models.base import TINY_CONFIG, _qwen2_config, build_tiny_tokenizer, load_backbone
    bb = load_backbone(backbone)
    out = {backbone: str(_save(bb.model, bb.tokenizer, tmp / backbone))}
    if hidden > 0:
        arch = {**TINY_CONFIG, "hidden_size": hidden, "intermediate_size": 3 * hidden, "num_hidden_layers": layers,
                "num_attention_heads": max(2, hidden // 64), "num_key_value_heads": max(1, hidden // 128)}
        torch.manual_seed(0)
        out[f"local {hidden}x{layers}"] = str(_save(Qwen2ForCausalLM(_qwen2_config(arch)), build_tiny_tokenizer(),
                                                    tmp / f"local{hidden}x{layers}"))
    return out


# ---------------------------------------------------------------- the same clock for every system

ACC: dict = defaultdict(float)      # seconds per part, and counters of the work done
_IN = {"gen": 0, "bwd": 0}


def instrument():
    "Wrap generate, the inner Qwen2 forward, autograd backward and optimiser steps with timers (all systems alike)."
    import torch
    from transformers.generation.utils import GenerationMixin
    from transformers.models.llama import modeling_llama as ml
    from transformers.models.qwen2 import modeling_qwen2 as mq
    gen0, bwd0 = GenerationMixin.generate, torch.autograd.backward
    bodies = {cls: cls.forward for cls in (mq.Qwen2Model, ml.LlamaModel)}   # tiny is a Qwen2, SmolLM2 a Llama

    def generate(self, *a, **k):
        if _IN["gen"]: return gen0(self, *a, **k)
        _IN["gen"] += 1
        t = time.perf_counter()
        try:
            out = gen0(self, *a, **k)
        finally:
            _IN["gen"] -= 1
            ACC["generate"] += time.perf_counter() - t
        seq = out.sequences if hasattr(out, "sequences") else out
        ids = k.get("input_ids", a[0] if a else None)
        ACC["rows generated"] += seq.shape[0]
        if ids is not None: ACC["new tokens"] += seq.shape[0] * (seq.shape[1] - ids.shape[1])
        return out

    def forward(self, *a, **k):
        fwd0 = bodies[type(self)]
        if _IN["gen"] or _IN["bwd"]: return fwd0(self, *a, **k)
        t = time.perf_counter()
        try: return fwd0(self, *a, **k)
        finally: ACC["forward (grad)" if torch.is_grad_enabled() else "forward (no grad)"] += time.perf_counter() - t

    def backward(*a, **k):
        _IN["bwd"] += 1
        t = time.perf_counter()
        try: return bwd0(*a, **k)
        finally:
            _IN["bwd"] -= 1
            ACC["backward"] += time.perf_counter() - t

    GenerationMixin.generate, torch.autograd.backward = generate, backward
    for cls in bodies: cls.forward = forward
    try:                                    # marl_llm's own decoder (marl_llm.models.decode) counts as generate too,
        import marl_llm.models.adapters as mb      # and its forward outside generate (its scoring forward) as forward
        import marl_llm.models.decode as md
        fast0, hidden0 = mb.fast_generate, md.Decoder.hidden

        def fast_generate(model, names, input_ids, *a, **k):
            _IN["gen"] += 1
            t = time.perf_counter()
            try:
                out = fast0(model, names, input_ids, *a, **k)
            finally:
                _IN["gen"] -= 1
                ACC["generate"] += time.perf_counter() - t
            ACC["rows generated"] += out.sequences.shape[0]
            ACC["new tokens"] += out.sequences.shape[0] * (out.sequences.shape[1] - input_ids.shape[1])
            return out

        def hidden(self, *a, **k):
            if _IN["gen"] or _IN["bwd"]: return hidden0(self, *a, **k)
            t = time.perf_counter()
            try: return hidden0(self, *a, **k)
            finally: ACC["forward (grad)" if torch.is_grad_enabled() else "forward (no grad)"] += time.perf_counter() - t
        mb.fast_generate, md.Decoder.hidden = fast_generate, hidden
    except ImportError:
        pass
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    t0 = {}
    register_optimizer_step_pre_hook(lambda opt, a, k: t0.__setitem__(id(opt), time.perf_counter()))

    def post(opt, a, k):
        ACC["optimizer step"] += time.perf_counter() - t0.pop(id(opt), time.perf_counter())
        ACC["optimizer steps"] += 1
    register_optimizer_step_post_hook(post)


def snap() -> dict:
    return {"t": time.perf_counter(), **ACC}


def per_update(marks: list, warmup: int = 1) -> list[dict]:
    "Differences between consecutive snapshots, the first `warmup` updates dropped."
    out = []
    for a, b in zip(marks, marks[1:]):
        d = {k: b.get(k, 0.0) - a.get(k, 0.0) for k in b if k != "t"}
        d["s"] = b["t"] - a["t"]
        out.append(d)
    return out[warmup:]


def _seed():
    import random
    import numpy as np
    import torch
    random.seed(0); np.random.seed(0); torch.manual_seed(0)
    torch.set_num_threads(1)


def _trainable(model) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ---------------------------------------------------------------- the three systems, one timed cell each

def run_trl(folder: str, updates: int, ckpt: bool) -> dict:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, TrainerCallback
    import trl
    from trl import GRPOConfig, GRPOTrainer
    tok = PreTrainedTokenizerFast.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    lengths = []

    def letter_reward(completions, completion_ids=None, **kw):
        if completion_ids is not None: lengths.extend(len(c) for c in completion_ids)
        return [reward(c) for c in completions]

    marks = []

    class Marks(TrainerCallback):
        def on_train_begin(self, *a, **k): marks.append(snap())
        def on_step_end(self, *a, **k): marks.append(snap())

    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(output_dir=out, per_device_train_batch_size=len(PROMPTS) * GROUP, gradient_accumulation_steps=1,
                          num_generations=GROUP, max_completion_length=NEW_TOKENS, num_iterations=1, beta=0.0,
                          learning_rate=LR, lr_scheduler_type="constant", max_steps=1 + updates, gradient_checkpointing=ckpt,
                          bf16=False, fp16=False, use_cpu=True, report_to=[], logging_strategy="no", save_strategy="no",
                          eval_strategy="no", disable_tqdm=True, shuffle_dataset=False, dataloader_num_workers=0,
                          temperature=1.0, top_p=1.0, top_k=0, seed=0,
                          generation_kwargs={"min_new_tokens": NEW_TOKENS, "suppress_tokens": [tok.pad_token_id]})
        trainer = GRPOTrainer(model=model, reward_funcs=letter_reward, args=args, processing_class=tok,
                              train_dataset=Dataset.from_dict({"prompt": PROMPTS}), peft_config=LoraConfig(**LORA),
                              callbacks=[Marks()])
        trainable = _trainable(trainer.model)
        trainer.train()
    return {"version": f"trl {trl.__version__}", "models": 1, "trainable": trainable, "updates": per_update(marks),
            "completion_lengths": sorted(set(lengths)), "completions": len(lengths)}


def run_comlrl(folder: str, updates: int) -> dict:
    import comlrl
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    from comlrl.trainers.reinforce import MAGRPOConfig, MAGRPOTrainer
    tok = PreTrainedTokenizerFast.from_pretrained(folder)
    agents = [get_peft_model(AutoModelForCausalLM.from_pretrained(folder), LoraConfig(**LORA)) for _ in range(2)]
    half = len(PROMPTS) // 2
    data = Dataset.from_dict({"p0": PROMPTS[:half], "p1": PROMPTS[half:]})   # one item = one prompt per agent
    def joint_reward(c0, c1):
        return [reward(a) + reward(b) for a, b in zip(c0, c1)]

    args = MAGRPOConfig(num_train_epochs=1, agent_learning_rate=LR, num_agents=2, num_generations=GROUP,
                        max_new_tokens=NEW_TOKENS, temperature=1.0, top_p=1.0, top_k=0, num_turns=1, eval_interval=0,
                        rollout_buffer_size=half, train_batch_size=half, early_termination_threshold=None,
                        agent_devices="cpu")
    trainer = MAGRPOTrainer(agents=agents, num_agents=2, tokenizer=tok, train_dataset=data, reward_func=joint_reward,
                            formatters=[lambda x: x["p0"], lambda x: x["p1"]], args=args)
    lengths, gen0 = [], trainer._generate_completions

    def generate(*a, **k):                                        # record each completion's length (up to its first pad)
        out = gen0(*a, **k)
        lengths.extend(out["response_lens"])
        return out
    trainer._generate_completions = generate
    marks = [snap()]
    for _ in range(1 + updates):
        trainer.train(min_new_tokens=NEW_TOKENS)                  # one pass over the 4 items: one step per agent
        marks.append(snap())
    return {"version": f"comlrl {comlrl.__version__}", "models": 2, "trainable": sum(_trainable(a) for a in agents),
            "updates": per_update(marks), "completions": len(lengths), "completion_lengths": sorted(set(lengths))}


def marl_update(groups: list, step: int, prompts_per_agent: int, generator, minibatch: int = 0) -> list:
    """One marl_llm update: per (adapters, agents) group one batched sample over all its agents' rows and one update
    (one forward/backward over all rows, or `minibatch` rows at a time with gradients accumulated: still one step)."""
    import numpy as np
    from marl_llm.core.config import RunConfig
    from marl_llm.core.records import Turn
    from marl_llm.models.sampling import sample_texts
    from marl_llm.learn.update import per_agent_update, text_logprob_fn
    lengths = []
    for ad, opt, who in groups:
        agents = [a for a in who for _ in range(prompts_per_agent * GROUP)]
        prompts = [PROMPTS[(int(a.split("_")[1]) * prompts_per_agent + k) % len(PROMPTS)] for a in who
                   for k in range(prompts_per_agent) for _ in range(GROUP)]
        ss = sample_texts(ad, agents, prompts, max_new_tokens=NEW_TOKENS, temperature=1.0, generator=generator,
                          score=False)                          # one epoch, one step: the detached current log-probs serve
        r = np.array([reward(s.text) for s in ss]).reshape(-1, GROUP)
        adv = ((r - r.mean(1, keepdims=True)) / (r.std(1, keepdims=True) + 1e-4)).ravel()   # TRL's group scaling
        turns = [Turn(s.agent, group=k // GROUP, prompt_ids=s.prompt_ids, completion_ids=s.completion_ids,
                      logprob=s.logprobs, info={"adv": float(adv[k])}) for k, s in enumerate(ss)]
        mb = min(minibatch or len(turns), len(turns))
        cfg = RunConfig(minibatch=mb, lr=LR).validate()           # epochs 1, token level, clip 0.2, kl 0, grad norm 1
        per_agent_update(turns, text_logprob_fn(ad, 1.0), opt, ad.parameters, cfg, step=step, accumulate=mb < len(turns))
        lengths += [len(s.completion_ids) for s in ss]
    return lengths


def run_marl(folder: str, updates: int) -> dict:
    import torch
    import marl_llm
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import load_backbone
    from marl_llm.learn.pipeline import make_optimizers
    names = ["agent_0", "agent_1"]
    ad = AgentAdapters(load_backbone(folder, prompt_format="raw"), names, r=LORA["r"], alpha=LORA["lora_alpha"],
                       target_modules=LORA["target_modules"])
    groups, g, lengths = [(ad, make_optimizers(ad, LR), names)], torch.Generator().manual_seed(0), []
    marks = [snap()]
    for step in range(1 + updates):
        lengths += marl_update(groups, step, len(PROMPTS) // len(names), g)
        marks.append(snap())
    return {"version": f"marl_llm {marl_llm.__version__} ({_git()})", "models": 1,
            "trainable": sum(ad.num_parameters(a) for a in names), "updates": per_update(marks),
            "completion_lengths": sorted(set(lengths)), "completions": len(lengths)}


def _git() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "marl_llm"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        return head + ("+dirty marl_llm/" if dirty else "")
    except OSError:
        return "?"


def _captured_stdout(fn) -> str:
    "What `fn()` writes to file descriptor 1 (MKL's and oneDNN's verbose lines come from C)."
    sys.stdout.flush()
    with tempfile.TemporaryFile("w+") as f:
        saved = os.dup(1); os.dup2(f.fileno(), 1)
        try: fn()
        finally: os.dup2(saved, 1); os.close(saved)
        f.seek(0); return f.read()


def linear_paths(system: str, folder: str, reps: int = 10) -> dict:
    """Which library this process's float32 linear layers reach and how fast each is here, on the backbone's MLP shape
    (512 rows): transformers/PEFT's `F.linear` (torch's addmm: MKL sgemm, oneDNN only if mkldnn's fp32 matmul precision
    is lowered) and marl_llm's `dnn.linear` (oneDNN for frozen weights). Verbose runs name the kernels each takes."""
    import ctypes, glob, re
    import torch
    import torch.nn.functional as F
    cfg = json.loads((Path(folder) / "config.json").read_text())
    x, w = torch.randn(512, cfg["hidden_size"]), torch.randn(cfg["intermediate_size"], cfg["hidden_size"])

    def gflops(f):
        f(); f(); t = time.perf_counter()
        for _ in range(reps): f()
        return 2 * x.shape[0] * w.shape[0] * w.shape[1] * reps / (time.perf_counter() - t) / 1e9
    out = {"cpu_capability": torch.backends.cpu.get_cpu_capability(),
           "mkldnn_fp32_matmul": str(getattr(getattr(torch.backends.mkldnn, "matmul", None), "fp32_precision", "?")),
           "F.linear_gflops": gflops(lambda: F.linear(x, w))}
    try:
        lib = ctypes.CDLL(glob.glob(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))[0])
        out["mkl_sees_intel_cpu"] = bool(lib.mkl_serv_intel_cpu_true())
    except (IndexError, OSError, AttributeError):
        out["mkl_sees_intel_cpu"] = None
    def mkl_call():
        with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON): F.linear(x, w)
    v = _captured_stdout(mkl_call)
    out["F.linear_kernel"] = ("MKL " + m.group(1)) if (m := re.search(r"MKL_VERBOSE (\w+)\(", v)) else "not MKL (no MKL_VERBOSE line)"
    try:
        import marl_llm.models.dnn as dnn
        out["marl_llm_onednn"] = bool(dnn.CPU_ONEDNN and dnn._dnn() is not None)
        out["dnn.linear_gflops"] = gflops(lambda: dnn.linear(x, w))
        def dnn_call():
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON): dnn.linear(x, w)
        v = _captured_stdout(dnn_call)
        impl = re.findall(r"primitive,exec,cpu,\w+,([\w:]+),", v)
        out["dnn.linear_kernel"] = f"oneDNN {impl[-1]}" if impl else "not oneDNN (no onednn_verbose exec line)"
    except ImportError:
        out["marl_llm_onednn"] = None
    uses = "dnn.linear" if system == "marl_llm" and out.get("marl_llm_onednn") else "F.linear"
    out["path"] = (f"frozen float32 weights (forward, and backward through them): {out['dnn.linear_kernel']}; "
                   f"LoRA and what torch runs itself: {out['F.linear_kernel']}"
                   if uses == "dnn.linear" else f"every linear: {out['F.linear_kernel']} (transformers/PEFT F.linear)")
    return out


def time_child(system: str, folder: str, updates: int) -> dict:
    "Runs in a fresh process: one system, 1 warm-up + `updates` timed updates; times, work counters and peak RSS."
    _seed()
    instrument()
    import gc
    gc.collect()
    base = peak_mb()
    paths = linear_paths(system, folder)
    run = {"trl": lambda: run_trl(folder, updates, True), "trl-nockpt": lambda: run_trl(folder, updates, False),
           "comlrl": lambda: run_comlrl(folder, updates), "marl_llm": lambda: run_marl(folder, updates)}[system]
    out = run()
    import torch, transformers, peft
    out["libs"] = f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}"
    return {"system": system, **out, "peak_mb": peak_mb(), "growth_mb": peak_mb() - base, "linear_paths": paths}


# ---------------------------------------------------------------- memory: one base + N adapters vs N copies

def mem_child(design: str, n: int, folder: str, prompts_per_agent: int, minibatch: int = 0, decode_tokens: int = 0) -> dict:
    "Runs in a fresh process: load (one base + N adapters, or N copies with one adapter each), one sample + update."
    _seed()
    import gc
    import torch
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import load_backbone
    from marl_llm.learn.pipeline import make_optimizers
    import marl_llm.core.config, marl_llm.core.records, marl_llm.models.sampling, marl_llm.learn.update  # noqa: F401  (imports before the baseline)
    gc.collect()
    base, base_now = peak_mb(), rss_mb()
    names = [f"agent_{i}" for i in range(n)]
    kw = dict(r=LORA["r"], alpha=LORA["lora_alpha"], target_modules=LORA["target_modules"])
    if design == "one base": ads = [(AgentAdapters(load_backbone(folder, prompt_format="raw"), names, **kw), names)]
    else: ads = [(AgentAdapters(load_backbone(folder, prompt_format="raw"), [a], **kw), [a]) for a in names]
    for ad, _ in ads: ad.decode_tokens = decode_tokens   # the sampling passes' token budget (0: all rows at once)
    with torch.no_grad():                       # touch every weight: loading may only memory-map them
        for ad, _ in ads: sum(float(p.sum()) for p in ad.model.parameters())
    gc.collect()
    loaded = rss_mb() - base_now
    params = sum(sum(p.numel() for p in ad.model.parameters()) for ad, _ in ads)
    groups = [(ad, make_optimizers(ad, LR), who) for ad, who in ads]
    t = time.perf_counter()
    lengths = marl_update(groups, 0, prompts_per_agent, torch.Generator().manual_seed(0), minibatch)
    return {"design": design, "agents": n, "models": len(ads), "params_m": params / 1e6, "rows": len(lengths),
            "update_minibatch": minibatch or "all rows", "decode_tokens": decode_tokens or "all rows",
            "loaded_mb": loaded, "peak_mb": peak_mb(), "growth_mb": peak_mb() - base, "work_s": time.perf_counter() - t}


# ---------------------------------------------------------------- the parent: cells, tables, JSON

def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
            "TQDM_DISABLE": "1", "WANDB_MODE": "disabled", "WANDB_SILENT": "true", "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
            "PYTHONWARNINGS": "ignore"}


def _child(python: str, args: list, timeout: float) -> tuple[dict | None, str]:
    "Run this file as a child; its last stdout line is its JSON result. Returns (result, error)."
    try:
        p = subprocess.run([python, __file__, *args], capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    if p.returncode:
        tail = [l for l in p.stderr.strip().splitlines() if l.strip()]
        return None, f"exit {p.returncode}: " + (tail[-1] if tail else "no output") + "\n" + p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), ""


def _comlrl_python(arg: str | None) -> tuple[str, str]:
    "(python that has comlrl, '') or ('', why it is unavailable)."
    cands = [arg] if arg else [str(ROOT / ".venv-comlrl" / "bin" / "python"), sys.executable]
    why = []
    for py in cands:
        if not Path(py).exists():
            why.append(f"{py} does not exist"); continue
        p = subprocess.run([py, "-c", "import comlrl.trainers.reinforce"], capture_output=True, text=True, env=_env())
        if p.returncode == 0: return py, ""
        why.append(f"{py}: " + (p.stderr.strip().splitlines() or ["import failed"])[-1])
    return "", "unavailable: comlrl cannot be imported (" + "; ".join(why) + "); see this script's docstring to install it"


def summarise(cells: list) -> list[dict]:
    rows = []
    for system in SYSTEMS:
        mine = [c for c in cells if c["system"] == system]
        ok = [c for c in mine if "error" not in c]
        if not ok:
            rows.append({"system": system, "label": LABEL[system], "error": mine[0]["error"] if mine else "not run"})
            continue
        ups = [u for c in ok for u in c["updates"]]
        s = [u["s"] for u in ups]
        rows.append({"system": system, "label": LABEL[system], "version": ok[0]["version"], "models": ok[0]["models"],
                     "trainable": ok[0]["trainable"], "timed_updates": len(s), "mean_s": sum(s) / len(s), "min_s": min(s),
                     "repeat_means": [sum(u["s"] for u in c["updates"]) / len(c["updates"]) for c in ok],
                     "parts_s": {p: sum(u.get(p, 0.0) for u in ups) / len(ups) for p in PARTS},
                     "rows_per_update": sum(u.get("rows generated", 0) for u in ups) / len(ups),
                     "new_tokens_per_update": sum(u.get("new tokens", 0) for u in ups) / len(ups),
                     "optimizer_steps_per_update": sum(u.get("optimizer steps", 0) for u in ups) / len(ups),
                     "completion_lengths": ok[0]["completion_lengths"], "peak_mb": max(c["peak_mb"] for c in ok),
                     "growth_mb": max(c["growth_mb"] for c in ok), "libs": ok[0]["libs"],
                     **({"failed_repeats": [c["error"] for c in mine if "error" in c]} if len(ok) < len(mine) else {})})
    return rows


def print_timing(rows: list, repeats: int, updates: int, backbone: str = "tiny"):
    print(f"\nTime per update on {backbone} ({len(PROMPTS)} prompts x {GROUP} completions x {NEW_TOKENS} new tokens, one optimiser step per "
          f"adapter; {repeats} repeat(s) x {updates} timed update(s) after 1 warm-up, fresh process per cell, 1 thread).")
    print("Parts are the mean seconds per update inside generate / the model body's (Qwen2, Llama) forward outside generate / autograd "
          "backward / optimiser steps; 'rest' = LM head, loss, rewards, collation, Python.")
    print("| system | version | models | trainable | s/update mean | min | x TRL | x TRL no-ckpt | generate | fwd no-grad | "
          "fwd grad | backward | opt | rest | rows/upd | opt steps/upd | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ref = {r["system"]: r for r in rows if "error" not in r}
    for r in rows:
        if "error" in r:
            print(f"| {r['label']} | {r['error'].splitlines()[0][:160]} |" + " |" * 15); continue
        ratio = lambda k: f"{r['mean_s'] / ref[k]['mean_s']:.2f}" if k in ref else "-"
        p = r["parts_s"]
        rest = r["mean_s"] - sum(p.values())
        print(f"| {r['label']} | {r['version']} | {r['models']} | {r['trainable']:,} | {r['mean_s']:.3f} | {r['min_s']:.3f} | "
              f"{ratio('trl')} | {ratio('trl-nockpt')} | {p['generate']:.3f} | {p['forward (no grad)']:.3f} | "
              f"{p['forward (grad)']:.3f} | {p['backward']:.3f} | {p['optimizer step']:.3f} | {rest:.3f} | "
              f"{r['rows_per_update']:.0f} | {r['optimizer_steps_per_update']:.0f} | {r['peak_mb']:.0f} |")
    if "marl_llm" in ref and "trl" in ref:
        m = ref["marl_llm"]["mean_s"]
        print(f"\nGoal marl_llm <= 0.5x TRL s/update: {m / ref['trl']['mean_s']:.2f}x TRL default"
              + (f", {m / ref['trl-nockpt']['mean_s']:.2f}x TRL without checkpointing" if "trl-nockpt" in ref else "")
              + (" -> met" if m <= 0.5 * min(x["mean_s"] for k, x in ref.items() if k.startswith("trl")) else " -> NOT met"))


def print_paths(cells: list):
    "Which linear path each timed process took, and each path's speed there (the x TRL figure moves with their ratio)."
    print("\nLinear paths, per timed process (float32 matmul of the backbone's MLP shape, 512 rows, measured in that process "
          "before loading; GFLOP/s):")
    print("| system | repeat | path | cpu capability | MKL sees an Intel CPU | F.linear GFLOP/s | dnn.linear (oneDNN) GFLOP/s | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cells:
        p = c.get("linear_paths")
        if not p: continue
        f, d = p["F.linear_gflops"], p.get("dnn.linear_gflops")
        print(f"| {LABEL[c['system']]} | {c['repeat'] + 1} | {p['path']} | {p['cpu_capability']} | {p['mkl_sees_intel_cpu']} | "
              f"{f:.1f} | {'-' if d is None else f'{d:.1f}'} | {'-' if d is None else f'{d / f:.2f}x'} |")


def print_memory(rows: list):
    print("\nMemory (MiB), one fresh process per row: 'loaded' = resident after loading models + adapters (every weight "
          "touched), 'peak' = VmHWM after one batched sample + update, 'growth' = peak over the size after imports; "
          "ratios vs the same backbone's N=1 (one model, one adapter).")
    print("| backbone | N | design | models | params (M) | rows | loaded | x1 | peak | x1 | growth | x1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        one = next((x for x in rows if x["backbone"] == r["backbone"] and x["agents"] == 1), r)
        x = lambda k: f"{r[k] / max(one[k], 1e-9):.2f}"
        print(f"| {r['backbone']} | {r['agents']} | {r['design']} | {r['models']} | {r['params_m']:.1f} | {r['rows']} | "
              f"{r['loaded_mb']:.0f} | {x('loaded_mb')} | {r['peak_mb']:.0f} | {x('peak_mb')} | {r['growth_mb']:.0f} | "
              f"{x('growth_mb')} |")
    for bb in dict.fromkeys(r["backbone"] for r in rows):
        one = next((x for x in rows if x["backbone"] == bb and x["agents"] == 1), None)
        top = max((x for x in rows if x["backbone"] == bb and x["design"] == "one base"), key=lambda x: x["agents"])
        if one and top is not one:
            print(f"Goal {top['agents']} agents <= 1.15x one model ({bb}): peak {top['peak_mb'] / one['peak_mb']:.2f}x, "
                  f"growth {top['growth_mb'] / one['growth_mb']:.2f}x, loaded {top['loaded_mb'] / one['loaded_mb']:.2f}x")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="rounds of all systems, back to back, interleaved")
    ap.add_argument("--updates", type=int, default=3, help="timed updates per cell (after 1 warm-up)")
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    ap.add_argument("--agents", type=int, nargs="+", default=None,
                    help="team sizes N of the memory part (default 2 4 8; smollm2-135m: 8)")
    ap.add_argument("--backbone", default="tiny", choices=["tiny", "smollm2-135m"],
                    help="the timed model, also the memory part's first (smollm2-135m: the real SmolLM2-135M-Instruct, float32)")
    ap.add_argument("--hidden", type=int, default=None,
                    help="hidden size of the locally built larger model of the memory part (default 768 with tiny, 0: none)")
    ap.add_argument("--layers", type=int, default=12, help="layers of the locally built larger model")
    ap.add_argument("--mem-prompts", type=int, default=None,
                    help="prompts per agent in the memory part (x 8 completions; default 4, smollm2-135m: 1)")
    ap.add_argument("--mem-minibatch", type=int, default=None,
                    help="rows per forward/backward of the memory part's update, gradients accumulated into one step "
                         "(0: all rows; default 32, smollm2-135m: one agent's rows, so every N runs passes of the same size)")
    ap.add_argument("--mem-decode-tokens", type=int, default=1024,
                    help="the memory part's sampling token budget per pass (AgentAdapters.decode_tokens; 0: all rows at once)")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--comlrl-python", default=None, help="python with comlrl installed (default: .venv-comlrl, then this one)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 repeat x 1 update; memory on tiny only")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per cell")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "peers.json"))
    ap.add_argument("--_child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        kind, *rest = args._child
        res = (time_child(rest[0], rest[1], int(rest[2])) if kind == "time"
               else build_models(Path(rest[0]), int(rest[1]), int(rest[2]), rest[3]) if kind == "build"
               else mem_child(rest[0], int(rest[1]), rest[2], int(rest[3]), int(rest[4]), int(rest[5])))
        print(json.dumps(res))
        return
    tiny = args.backbone == "tiny"
    if args.hidden is None: args.hidden = 768 if tiny else 0
    if args.agents is None: args.agents = [2, 4, 8] if tiny else [8]
    if args.mem_prompts is None: args.mem_prompts = 4 if tiny else 1
    if args.mem_minibatch is None: args.mem_minibatch = 32 if tiny else 8 * args.mem_prompts   # 8 completions per prompt
    if args.quick: args.repeats, args.updates, args.hidden = 1, 1, 0
    result = {"work": {"prompts": len(PROMPTS), "completions_per_prompt": GROUP, "new_tokens": NEW_TOKENS, "lora": LORA,
                       "lr": LR, "reward": f"count of {LETTER!r} in the completion text", "threads": 1,
                       "backbone": args.backbone},
              "repeats": args.repeats, "updates": args.updates}
    with tempfile.TemporaryDirectory() as tmp:
        models, err = _child(sys.executable, ["--_child", "build", tmp, str(0 if args.skip_memory else args.hidden),
                                              str(args.layers), args.backbone], args.timeout)   # the parent never imports torch
        if models is None: raise RuntimeError(f"building the models failed: {err}")
        if not args.skip_timing:
            cpy, why = _comlrl_python(args.comlrl_python) if "comlrl" in args.systems else ("", "")
            cells = []
            for rep in range(args.repeats):
                for system in args.systems:
                    if system == "comlrl" and not cpy:
                        cells.append({"system": system, "repeat": rep, "error": why}); continue
                    res, err = _child(cpy if system == "comlrl" else sys.executable,
                                      ["--_child", "time", system, models[args.backbone], str(args.updates)], args.timeout)
                    if res is None and system != "comlrl": raise RuntimeError(f"{system} failed: {err}")
                    cells.append({"system": system, "repeat": rep, **(res or {"error": "unavailable: " + err})})
                    print(f"  timed {system} repeat {rep + 1}/{args.repeats}: "
                          + (f"{sum(u['s'] for u in res['updates']) / len(res['updates']):.3f} s/update" if res else
                             err.splitlines()[0]), file=sys.stderr)
            result["timing_cells"], result["timing"] = cells, summarise(cells)
        if not args.skip_memory:
            mem = []
            for label, folder in models.items():
                for n, design in [(1, "one base")] + [(n, d) for n in args.agents for d in ("one base", "N copies")]:
                    res, err = _child(sys.executable, ["--_child", "mem", design, str(n), folder, str(args.mem_prompts),
                                                       str(args.mem_minibatch), str(args.mem_decode_tokens)],
                                      args.timeout)
                    if res is None: raise RuntimeError(f"memory {label} N={n} {design} failed: {err}")
                    mem.append({"backbone": label, **res})
                    print(f"  measured memory {label} N={n} {design}: peak {res['peak_mb']:.0f} MiB", file=sys.stderr)
            result["memory"] = mem
    if "timing" in result:
        print_timing(result["timing"], args.repeats, args.updates, args.backbone)
        print_paths(result["timing_cells"])
    if "memory" in result: print_memory(result["memory"])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
