"""Lockstep `daskbench ab` end to end on real local clusters: one session per side measuring in
turn, rounds until decided; a planted slowdown is regressed while an untouched case is unchanged,
and the two sides can be two interpreters. (Exact rounds, Ctrl-C and a case one side cannot
measure: test_lockstep_rounds.py, a file of its own so the two run side by side under xdist.)"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from daskbench.errors import DaskbenchError
from daskbench.lockstep.sessions import Side, check_sides_differ
from daskbench.lockstep.turns import case_key
from daskbench.store import Store
from tests.helpers import LOCKSTEP_SESSION, run_ab, runtime_verdicts


def test_case_keys_name_the_benchmark_its_params_and_its_place_in_the_sweep() -> None:
    assert case_key("test_a.py", "test_x", {"n": 2, "kind": "p2p"}, 1) == "test_a.py::test_x[kind='p2p',n=2]#1"


def _second_interpreter(folder: Path) -> Path:
    """A real second virtualenv (its own python and prefix) that sees this one's packages."""
    venv = folder / "venv-b"
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = sysconfig.get_paths()["purelib"]
    found = list((venv / "lib").glob("python3*/site-packages"))
    (found[0] / "daskbench-parent.pth").write_text(purelib + "\n" + str(Path(__file__).resolve().parents[1]) + "\n")
    return venv / "bin" / "python"


def test_lockstep_finds_the_planted_slowdown_and_leaves_the_untouched_case_unchanged(
    bench_folder: Path, quiet_machine: None
) -> None:
    """B, a second interpreter, runs the sleepy case 1.5x slower: regressed within a few rounds;
    steady: unchanged; one run per side (a pair more if the change was repeated), each tagged with its interpreter and labelled with the part the
    progress names ("part 1": slow-A1, slow-B1). Measured time decides: on a quiet machine (`quiet_machine`)."""
    python_b = _second_interpreter(bench_folder)
    db = f"sqlite:///{bench_folder / 'slow.db'}"
    done = run_ab(bench_folder, db, "--group", "slow", "--b-python", str(python_b),
               "--b-env", "DASKBENCH_TEST_SLOWDOWN=1.5", *LOCKSTEP_SESSION)  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ab: mode lockstep" in done.stderr and "decided after" in done.stderr
    verdicts = runtime_verdicts(done.stdout)
    assert verdicts["sleepy"]["verdict"] == "regressed" and 1.3 < float(verdicts["sleepy"]["ratio"]) < 1.7
    assert verdicts["steady"]["verdict"] == "unchanged"
    assert "decided after" in str(verdicts["sleepy"]["note"])
    runs = Store(db).runs()
    assert {run.tags["ab_side"]: run.tags["ab_python"] for run in runs} == {"A": sys.executable, "B": str(python_b)}
    assert {run.tags["ab_mode"] for run in runs} == {"lockstep"}
    labels = sorted(run.label for run in runs)  # a second pair only if a noisy hour left 1.5x's interval within 1.20x
    assert "part 1" in done.stderr and labels in (["slow-A1", "slow-B1"], ["slow-A1", "slow-A2", "slow-B1", "slow-B2"])


def test_a_small_change_counts_only_once_a_fresh_pair_of_sessions_repeats_it(
    bench_folder: Path, quiet_machine: None
) -> None:
    """B sleeps 1.12x longer: part 1 finds it, within 1.20x of 1, so it stops "to repeat"; part 2, a new
    pair of sessions for that case alone, measures it from its own first round and agrees. The verdict read
    back from the store (`compare --group`) is the same: regressed, both readings in its note; the steady case,
    unchanged in part 1, is not measured again."""
    db = f"sqlite:///{bench_folder / 'repeat.db'}"
    done = run_ab(bench_folder, db, "--group", "rep", "--b-env", "DASKBENCH_TEST_SLOWDOWN=1.12", *LOCKSTEP_SESSION)
    said = done.stdout[-2000:] + done.stderr[-3000:]
    assert done.returncode == 1, said
    assert "regressed here, to repeat in fresh sessions" in done.stderr, said
    assert "ab: part 2: 1 change to repeat in a fresh pair of sessions (test_sleepy" in done.stderr, said
    assert "(repeat 3): B/A" in done.stderr, said
    verdicts = runtime_verdicts(done.stdout)
    assert verdicts["sleepy"]["verdict"] == "regressed" and 1.05 < float(verdicts["sleepy"]["ratio"]) < 1.2
    assert "repeated in a fresh pair of sessions" in str(verdicts["sleepy"]["note"])
    assert verdicts["steady"]["verdict"] == "unchanged"
    runs = Store(db).runs()
    assert sorted(run.label for run in runs) == ["rep-A1", "rep-A2", "rep-B1", "rep-B2"]
    assert {run.tags["ab_repeat_within"] for run in runs} == {"1.2"}


def test_sides_told_apart_only_by_a_variable_a_flag_overrides_are_refused() -> None:
    """--b-env DASKBENCH_SATURATION=inf with --saturation 1.1 after --: both sides would run 1.1."""
    sides = {"A": Side("A"), "B": Side("B", env={"DASKBENCH_SATURATION": "inf"})}
    with pytest.raises(DaskbenchError, match=r"--saturation after -- overrides it on both"):
        check_sides_differ(sides, ["-k", "array", "--saturation", "1.1"])
    check_sides_differ(sides, ["-k", "array"])  # the variable decides: fine
    check_sides_differ({"A": Side("A"), "B": Side("B")}, ["--saturation", "1.1"])  # an A/A check on purpose


def test_a_budget_screens_both_cases_then_spends_the_rest_on_the_ones_still_open(
    bench_folder: Path, quiet_machine: None
) -> None:
    """--budget 4m: part 1 screens both cases for 3 rounds each (6 measurements a side); the cases not decided
    there get later parts of their own (the steady A/A pair needs more rounds to show it is within 5%), until
    both are decided (sleepy 1.5x slower regressed, steady unchanged) or the budget ends (beside other work, the
    CI's, steady may stay undecided, said as such with its interval: once in 4 CI runs). The closing lines say what the rounds
    cost and what the budget bought; round lines name each case as pytest does; a later part's runs are the group's next part (budget-A2, budget-B2)."""
    db = f"sqlite:///{bench_folder / 'budget.db'}"
    # floor 5%: the steady A/A pair cannot be shown within it by the screening's 3 rounds (its interval was
    # 0.76-1.34; at the default 10% it could be), so a later part is needed. At 3%, with the suite's share of the
    # false alarms (judge/suite.py), its interval reached 0.97-1.03 only after 15-18 of the 30 rounds a case may
    # take, and stayed undecided in 2 of 3 CI runs; 4% cost this test 94 s of CI, 5% needs about 0.6x the rounds
    done = run_ab(bench_folder, db, "--group", "budget", "--budget", "4m", "--b-env", "DASKBENCH_TEST_SLOWDOWN=1.5",
                  "--floor", "runtime=1.05", *LOCKSTEP_SESSION)  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    verdicts = runtime_verdicts(done.stdout)
    assert verdicts["sleepy"]["verdict"] == "regressed", done.stderr[-3000:]
    if verdicts["steady"]["verdict"] == "unchanged":
        assert "every case decided" in done.stderr, done.stderr[-3000:]
    else:  # beside other work (CI) the A/A pair may need more than the budget: said, with its interval
        assert verdicts["steady"]["verdict"] == "inconclusive", done.stderr[-3000:]
        assert "  undecided: test_steady[sat=inf-workers=1]: " in done.stderr, done.stderr[-3000:]
    store = Store(db)
    runs = {run.label: run for run in store.runs()}
    assert {"budget-A1", "budget-B1", "budget-A2", "budget-B2"} <= set(runs)
    assert len(store.measurements([runs["budget-A1"].run_id])) == 6, "the screening: 3 rounds of each case"
    assert "ab: part 2: " in done.stderr and "closest to deciding first" in done.stderr
    assert "ab: test_steady[sat=inf-workers=1] round 1: B/A " in done.stderr, "cases named as pytest names them"
    assert "budget: 4.0 min, used " in done.stderr
    cost = next(line for line in done.stderr.splitlines() if line.startswith("rounds: "))
    assert "of which compute" in cost and "start-up" in done.stderr
