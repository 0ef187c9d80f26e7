"""`--report-to`: the trackers get what metrics.jsonl gets. TensorBoard's event files, read back with tensorboard's own
reader, hold exactly metrics.jsonl's values, also after a SIGKILL and `--resume` (no step twice); W&B writes its offline
run and a resumed run continues the same run id; trackio writes its local store."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
ARGS = ["--method", "pa-magrpo", "--game", "harvest", "--layout", "small", "--backbone", "tiny", "--envs", "1", "--group", "2",
        "--horizon", "20", "--eval-envs", "1", "--eval-every", "1", "--seed", "3"]


def cli(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "marl_llm.cli", *map(str, args)], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=timeout)


def rows(run):
    return [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines()]


def tb_scalars(run) -> dict:
    "{tag: [(step, value), ...]} as TensorBoard reads the run's event files (purged steps dropped)."
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0}); ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


def assert_tb_equals_metrics(run):
    want: dict = {}                                   # "time" is the row's wall clock: TensorBoard keeps its own
    for r in rows(run):
        for k, v in r.items():
            if k not in ("step", "time") and isinstance(v, (int, float)) and not isinstance(v, bool): want.setdefault(k, []).append((r["step"], v))
    got = tb_scalars(run)
    assert sorted(got) == sorted(want), set(got) ^ set(want)
    for k, pts in want.items():
        assert [s for s, _ in got[k]] == [s for s, _ in pts], (k, got[k], pts)          # every step once, in order
        assert all(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for (_, a), (_, b) in zip(got[k], pts)), (k, got[k], pts)


def test_tensorboard_events_equal_metrics_after_sigkill_and_resume(tmp_path):
    pytest.importorskip("tensorboard")
    run, n = tmp_path / "b", 6
    p = subprocess.Popen([sys.executable, "-m", "marl_llm.cli", "train", *ARGS, "--updates", str(n), "--checkpoint-every", "2",
                          "--report-to", "tensorboard", "--out", str(run)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    latest, t0 = run / "checkpoints" / "latest.json", time.time()
    while time.time() - t0 < 600:                     # kill once step 3 is logged: rows past the step-2 checkpoint exist
        try:
            if max(r["step"] for r in rows(run)) >= 3: break
        except (OSError, ValueError): pass
        if p.poll() is not None: break
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL); p.wait()
    killed = rows(run)
    assert max(r["step"] for r in killed) < n, "the run finished before it could be killed; the test would prove nothing"
    ckpt = json.loads(latest.read_text())["step"]
    before = tb_scalars(run)["team_reward"]
    assert max(s for s, _ in before) >= ckpt                           # the killed run logged its rows to TensorBoard
    r = cli("train", "--resume", "--out", run)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [x["step"] for x in rows(run)] == list(range(n + 1))
    assert_tb_equals_metrics(run)                                       # the recomputed steps replace the killed run's
    st = json.loads((run / "trackers.json").read_text())
    assert st == {"tensorboard": {"last_step": n}}, st
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(str(run / "tensorboard"), size_guidance={"images": 0}); ea.Reload()
    assert "config/text_summary" in ea.Tags()["tensors"]               # the config, and the audit page named at the end
    assert "figures/audit/text_summary" in ea.Tags()["tensors"]


def test_report_to_added_on_resume_gets_the_history(tmp_path):
    pytest.importorskip("tensorboard")
    run = tmp_path / "c"
    assert cli("train", *ARGS, "--updates", "2", "--checkpoint-every", "1", "--out", run).returncode == 0
    assert not (run / "tensorboard").exists() and not (run / "trackers.json").exists()   # report_to none writes nothing
    r = cli("train", "--resume", "--out", run, "--updates", "3", "--report-to", "tensorboard")
    assert r.returncode == 0, r.stderr[-2000:]
    assert_tb_equals_metrics(run)
    assert [s for s, _ in tb_scalars(run)["team_reward"]] == [1, 2, 3]


def test_wandb_offline_run_continues_on_resume(tmp_path):
    pytest.importorskip("wandb")
    run = tmp_path / "w"
    e = {**{k: v for k, v in ENV.items() if not k.startswith("WANDB_")}}
    r = subprocess.run([sys.executable, "-m", "marl_llm.cli", "train", *ARGS, "--updates", "2", "--checkpoint-every", "1",
                        "--report-to", "wandb", "--out", str(run)], capture_output=True, text=True, env=e, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rid = json.loads((run / "trackers.json").read_text())["wandb"]["id"]
    first = list((run / "wandb").glob(f"offline-run-*-{rid}/run-{rid}.wandb"))
    assert len(first) == 1 and first[0].stat().st_size > 0                        # offline: nothing left the machine
    assert (first[0].parent / "files" / "learning_curve.html").exists()
    r = subprocess.run([sys.executable, "-m", "marl_llm.cli", "train", "--resume", "--updates", "3", "--out", str(run)],
                       capture_output=True, text=True, env=e, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    st = json.loads((run / "trackers.json").read_text())["wandb"]
    assert st["id"] == rid and st["last_step"] == 3                              # the same W&B run, continued
    assert len(list((run / "wandb").glob(f"offline-run-*-{rid}/run-{rid}.wandb"))) == 2


def test_trackio_local_store(tmp_path):
    pytest.importorskip("trackio")
    run, store = tmp_path / "t", tmp_path / "store"
    r = cli("train", *ARGS, "--updates", "1", "--report-to", "trackio", "--out", run,
            env={"TRACKIO_DIR": str(store), "TRACKIO_PROJECT": "marl_llm_test"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((run / "trackers.json").read_text())["trackio"]["last_step"] == 1
    assert list(store.rglob("*marl_llm_test*")), sorted(str(p) for p in store.rglob("*"))
