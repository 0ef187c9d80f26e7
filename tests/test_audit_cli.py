"""`marl-llm audit` end to end: a tiny training run in a subprocess, then the audit CLI on its run directory
(audit.json / audit.html contents, what is printed) and the errors for paths that are not run directories."""
import json, os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
       "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

TRAIN = """
import sys
from marl_llm.methods.pa_magrpo import PAMAGRPOConfig, PAMAGRPO
from marl_llm.learn.pipeline import fit
cfg = PAMAGRPOConfig(game="harvest", layout="small", backbone="tiny", updates=2, envs=1, group=2, horizon=30, seed=1,
                     checkpoint_every=1, eval_every=1, eval_envs=2, record_episodes=1)
fit(PAMAGRPO(cfg), sys.argv[1], quiet=True)
"""


def audit(*args, timeout=600):
    "Run `python -m marl_llm.experiments.run_audit ARGS` (what `marl-llm audit ARGS` dispatches to)."
    return subprocess.run([sys.executable, "-m", "marl_llm.experiments.run_audit", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=ENV)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run = tmp_path_factory.mktemp("audit") / "run"
    p = subprocess.run([sys.executable, "-c", TRAIN, str(run)], capture_output=True, text=True, timeout=600, cwd=ROOT, env=ENV)
    assert p.returncode == 0, p.stderr[-3000:]
    (run / "audit.json").unlink(missing_ok=True); (run / "audit.html").unlink(missing_ok=True)   # once the trainer writes its own
    return run


@pytest.fixture(scope="module")
def audited(run_dir):
    p = audit(run_dir)
    assert p.returncode == 0, p.stderr[-3000:]
    return run_dir, p, json.loads((run_dir / "audit.json").read_text())


def test_audit_json_per_checkpoint(audited):
    run, _, a = audited
    assert (a["game"], a["layout"], a["agents"]) == ("harvest", "small", ["agent_0", "agent_1"])
    assert [r["step"] for r in a["checkpoints"]] == [0, 1, 2]                # initial adapters + the kept checkpoints
    assert a["checkpoints"][0]["source"] == "initial adapters"
    assert a["eval"]["episodes"] == 2 and a["eval"]["seeds"] == [100_000, 100_001]   # the run's held-out seeds
    for r in a["checkpoints"]:
        ag = r["agents"]
        assert r["episodes"] == 2 and set(ag) == {"agent_0", "agent_1"}
        shares = [ag[x]["share"] for x in ag]
        if r["solo_carry"] is not None:                                        # shares of a team sum to 1
            assert abs(sum(shares) - 1) < 1e-9
            assert abs(r["solo_carry"] - (1 - min(shares) / max(shares))) < 1e-9
        assert all(0 <= ag[x]["idle_fraction"] <= 1 for x in ag)
        assert all(abs(sum(ag[x]["options"].values()) - 1) < 1e-9 for x in ag if ag[x]["options"])
        assert set(ag["agent_0"]["progress"]) == {"apple_eaten", "patch_depleted"}
        assert r["joint_events"] == {}                                          # Harvest has no joint events
        assert ("ablation" in r) == (r["step"] == 2)                            # ablation at the last checkpoint only
    ab = a["checkpoints"][-1]["ablation"]
    assert ab["team_reward"] == a["checkpoints"][-1]["team_reward"]
    for x in ("agent_0", "agent_1"):
        for kind in ("idle", "random"):
            d = ab["agents"][x][kind]
            assert abs(d["drop"] - (ab["team_reward"] - d["team_reward"])) < 1e-9
    # the reward curve is the run's metrics.jsonl
    rows = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["eval/team_reward"] for r in a["reward_curve"] if "eval/team_reward" in r] == \
           [r["eval/team_reward"] for r in rows if "eval/team_reward" in r]
    assert a["recorded"]["episodes"] == 1 and a["recorded_episodes"][0].endswith(".json")
    assert isinstance(a["flags"], list)


def test_audit_prints_table_and_writes_html(audited):
    run, p, a = audited
    assert "solo-carry" in p.stdout and "partner ablation at step 2" in p.stdout, p.stdout
    assert "idle stand-in" in p.stdout and ("no flags" in p.stdout or "FLAG" in p.stdout)
    page = (run / "audit.html").read_text()
    assert "plotly" in page.lower() and "solo-carry" in page and "<table" in page


def test_no_write_json_output(audited):
    run, _, a = audited
    before = (run / "audit.json").stat().st_mtime_ns
    p = audit(run, "--no-write", "--json", "--checkpoints", "0,2", "--ablate", "none", "--episodes", "1")
    assert p.returncode == 0, p.stderr[-2000:]
    b = json.loads(p.stdout)
    assert [r["step"] for r in b["checkpoints"]] == [0, 2] and b["eval"]["episodes"] == 1
    assert not any("ablation" in r for r in b["checkpoints"])
    assert (run / "audit.json").stat().st_mtime_ns == before


def test_not_a_run_directory(tmp_path, audited):
    run = audited[0]
    missing = tmp_path / "no_such_run"
    p = audit(missing)
    assert p.returncode == 2 and str(missing) in p.stderr and "does not exist" in p.stderr
    empty = tmp_path / "empty_dir"; empty.mkdir()
    p = audit(empty)
    assert p.returncode == 2 and f"{str(empty)!r} is not a run directory" in p.stderr and "config.json" in p.stderr
    f = tmp_path / "a_file.txt"; f.write_text("hello")
    p = audit(f)
    assert p.returncode == 2 and str(f) in p.stderr and "not a run directory" in p.stderr
    bad = tmp_path / "bad_json"; bad.mkdir(); (bad / "config.json").write_text("{not json")
    p = audit(bad)
    assert p.returncode == 2 and "not valid JSON" in p.stderr and str(bad) in p.stderr
    other = tmp_path / "other_trainer"; other.mkdir(); (other / "config.json").write_text(json.dumps({"game": "math", "rounds": 3}))
    p = audit(other)
    assert p.returncode == 2 and "'rounds'" in p.stderr and str(other) in p.stderr
    p = audit(run, "--checkpoints", "99")
    assert p.returncode == 2 and "no checkpoint at step(s) [99]" in p.stderr and "[0, 1, 2]" in p.stderr
    p = audit(run, "--checkpoints", "last_one")
    assert p.returncode == 2 and "'last_one'" in p.stderr
    p = audit(run, "--episodes", "0")
    assert p.returncode == 2 and "--episodes must be >= 1" in p.stderr
    p = audit(run, "--ablate", "sometimes")
    assert p.returncode == 2 and "invalid choice" in p.stderr


def _cli_has_audit() -> bool:
    try:
        from marl_llm.cli import COMMANDS
    except ImportError:
        return False
    return "audit" in COMMANDS


@pytest.mark.skipif(not _cli_has_audit(), reason="`marl-llm audit` is not wired into marl_llm.cli yet")
def test_marl_llm_cli_dispatches_audit(audited):
    run = audited[0]
    p = subprocess.run([sys.executable, "-m", "marl_llm.cli", "audit", str(run), "--no-write", "--checkpoints", "last",
                        "--ablate", "none"], capture_output=True, text=True, timeout=600, cwd=ROOT, env=ENV)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "solo-carry" in p.stdout
    p = subprocess.run([sys.executable, "-m", "marl_llm.cli", "audit", str(run / "nope")], capture_output=True, text=True,
                       timeout=600, cwd=ROOT, env=ENV)
    assert p.returncode == 2 and "nope" in p.stderr
