"""`daskbench confirm`: a suspect regression confirmed side by side, the last good run's environment against tonight's.

The end-to-end test stores three good nights (``standin`` 1.0 recorded) and a slow night (``standin`` 1.1)
of the case ``standin_work``, then runs ``daskbench confirm`` in an overlay environment holding standin 1.1
(the night's): it rebuilds the good run's standin 1.0 as an overlay from a folder of wheels and runs a real
lockstep A/B of the benchmark, where 1.1 sleeps 3x longer. The rest are the pieces, with stored records.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from daskbench import alerts, confirm, envs, provenance
from daskbench.bisect import search as bisect
from daskbench.config import resolve
from daskbench.errors import DaskbenchError
from daskbench.judge import bisected
from daskbench.judge import confirmed as confirm_tags
from daskbench.judge.compare import compare_runs
from daskbench.model import Case, ClusterSpec
from daskbench.store import Store
from daskbench.verdicts import Comparison, Verdict
from testing.standin import STANDIN_BENCH, standin_wheel
from tests.helpers import add_results, add_run, daskbench_cli

#: The case the benchmark measures on one 1-thread worker at saturation inf (its memory: the machine's share).
CASE = Case("standin_work", {}, ClusterSpec("local", 1, 1, 2**30, float("inf")))
SESSION = ["--", "--workers", "1", "--saturation", "inf"]


def _nights(store: Store, slow: float, *, good: str = "1.0", tonight: str = "1.1", slow_last: float = 1.0) -> str:
    """Three finished good nights (the last ``slow_last`` times slower) and tonight, ``slow`` times slower;
    baseline main is the good nights. Returns tonight's run id."""
    runs = []
    for night in range(3):
        run = add_run(store, night, versions={"standin": good, "python": "3.11.7"})
        add_results(store, run, CASE, 0.2 * (slow_last if night == 2 else 1.0))
        runs.append(run.run_id)
    store.set_baseline("main", runs)
    run = add_run(store, 3, label="tonight", versions={"standin": tonight, "python": "3.11.7"})
    add_results(store, run, CASE, 0.2 * slow)
    return run.run_id


@pytest.fixture(scope="module")
def confirmed(tmp_path_factory: pytest.TempPathFactory, quiet_machine: None) -> tuple[Path, str, subprocess.CompletedProcess[str]]:  # fmt: skip
    """``daskbench confirm`` of a 3x slower night, run by the night's interpreter (standin 1.1)."""
    root = tmp_path_factory.mktemp("confirm")
    (root / "test_bench.py").write_text(STANDIN_BENCH)
    wheels = root / "wheels"
    wheels.mkdir()
    for version, seconds in (("1.0", 0.2), ("1.1", 0.6)):
        standin_wheel(wheels, version, seconds)
    db = f"sqlite:///{root / 'confirm.db'}"
    candidate = _nights(Store(db), 3.0)
    index = envs.Index(find_links=(str(wheels),), no_index=True)
    spec = envs.spec_from_pins({"standin": "1.1"}, with_daskbench=False)
    tonight = envs.build(spec, envs.BuildOptions(root / "cache", index), inherit=True, say=lambda _line: None)
    command = [str(tonight), "-m", "daskbench", "confirm", "--baseline", "main", "--candidate", candidate,
               "--group", "confirm-tonight", "--max-rounds", "4", "--floor", "runtime=1.5", "--find-links",
               str(wheels), "--no-index", "--cache-dir", str(root / "cache"), "--db", db, *SESSION]  # fmt: skip
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    return root, candidate, done


def test_a_slower_release_is_confirmed_side_by_side_with_its_evidence(
    confirmed: tuple[Path, str, subprocess.CompletedProcess[str]],
) -> None:
    """Exit 1; the case's line carries the A/B's effect, interval, rounds and per-round ratios; the group's runs
    are tagged with the candidate, the good run and both versions."""
    root, candidate, done = confirmed
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    out = " ".join(done.stdout.split())
    assert "standin_work" in out and "side by side: " in out and "slower (95% CI" in out
    assert "per-round ratios" in out and "round" in out
    assert "confirmed side by side: 1 of 1 regression" in out
    assert all(len(line) <= 120 for line in done.stdout.splitlines())
    found = confirm_tags.stored(Store(f"sqlite:///{root / 'confirm.db'}"), "confirm-tonight")
    assert (found.candidate, found.pins, found.tonight) == (candidate, "standin 1.0", "standin 1.1")
    assert found.good == "run002-nightly" and found.floors == {"runtime_s": 1.5}
    assert "Traceback" not in done.stderr


def test_the_alert_carries_the_side_by_side_evidence_and_the_report_shows_it(
    confirmed: tuple[Path, str, subprocess.CompletedProcess[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``alert --group GROUP``: exit 1, one regression whose Markdown names the group, the good run and
    the A/B evidence; the report of that run shows the confirmation with its verdict."""
    root, candidate, _ = confirmed
    db = f"sqlite:///{root / 'confirm.db'}"
    summary = tmp_path / "summary.md"
    done = daskbench_cli("alert", "--baseline", "main", "--candidate", candidate, "--group", "confirm-tonight",
                         "--summary", str(summary), "--db", db, capsys=capsys)  # fmt: skip
    assert done.returncode == 1, done.stderr
    text = " ".join(summary.read_text().split())
    assert text.count("### daskbench:") == 1 and "Confirmed side by side: A/B group `confirm-tonight`" in text
    assert "last good run `run002-n`" in text and "standin 1.0 against standin 1.1" in text
    assert "side by side: " in text and "per\\-round ratios" in text
    html = daskbench_cli("report", "--baseline", "main", "--candidate", candidate, "-o", str(tmp_path / "r.html"),
                         "--db", db, capsys=capsys)  # fmt: skip
    assert html.returncode == 0, html.stderr
    page = (tmp_path / "r.html").read_text()
    assert 'data-group="confirm-tonight"' in page and "Confirmed side by side" in page and "regressed" in page


def _verdict(kind: str, fingerprint: str = "f" * 16, memory: int = 2**30) -> Verdict:
    cluster = {**CASE.cluster.identity(), "memory_per_worker": memory}
    return Verdict(fingerprint, "standin_work", {}, "runtime_s", kind, 3.0, 2.8, 3.2, 1.5, (0.2,) * 3, (0.6,) * 3,  # type: ignore[arg-type]
                   cluster, note="decided after 3 rounds; per-round ratios 3.0, 2.9, 3.1")  # fmt: skip


def _comparison(*verdicts: Verdict) -> Comparison:
    run = add_run(Store("sqlite://"), 0)
    return Comparison("ab", (run,), run, tuple(verdicts), {}, {}, {})


@pytest.mark.parametrize(("ab_says", "alerted"), [("regressed", 1), ("unchanged", 0), ("inconclusive", 0)])
def test_only_what_the_ab_judges_regressed_is_alerted(ab_says: str, alerted: int) -> None:
    """The night's regression stays only when the A/B on the same case (paired across the sides' memory
    share) says regressed; else it takes the A/B's verdict and no Markdown is written."""
    night = _comparison(_verdict("regressed"))
    ab = _comparison(_verdict(ab_says, fingerprint="a" * 16, memory=2**29))
    judged, confirmation = alerts.side_by_side(
        night, ab, reference="g", good="run0", versions="standin 1.0 against 1.1"
    )
    assert len(judged.regressions) == alerted
    assert judged.verdicts[0].fingerprint == "f" * 16
    text = alerts.markdown(judged, None, confirmation)
    assert bool(text) == bool(alerted) and all(len(line) <= 120 for line in text.splitlines())
    assert confirmation.of(night.verdicts[0]).startswith("side by side: ")


def test_a_regression_the_ab_did_not_measure_is_not_alerted() -> None:
    """A suspect case the A/B has no verdict for becomes inconclusive, said so in its note."""
    other = replace(_verdict("regressed"), workload="other")
    judged, _ = alerts.side_by_side(_comparison(_verdict("regressed")), _comparison(other), reference="g")
    assert judged.regressions == () and judged.verdicts[0].note == "not measured side by side"


def test_the_last_good_run_is_the_newest_judged_run_that_was_not_itself_slow(tmp_path: Path) -> None:
    """Of three baseline runs, the newest is 1.6x slow (floor 1.5): the good run is the one before it."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    tonight = _nights(store, 3.0, slow_last=1.6)
    night = compare_runs(store, candidate=tonight, baseline="main", floors={"runtime_s": 1.5})
    suspect = replace(next(v for v in night.verdicts if v.metric == "runtime_s"), verdict="regressed", floor=1.5)
    assert confirm.good_run(store, night, [suspect]).run_id == "run001-nightly"
    assert confirm.good_run(store, night, [replace(suspect, floor=2.0)]).run_id == "run002-nightly"
    assert confirm.differing(confirm.good_run(store, night, [suspect]), night.candidate_run) == (
        (("standin", "1.0"),),
        (("standin", "1.1"),),
    )


@pytest.mark.parametrize(
    ("nights", "said"),
    [
        ({"tonight": "1.0"}, "recorded the same package versions as run run003-t: no other environment to rebuild"),
        ({"slow": 1.0}, "nothing regressed in run run003-t; nothing to confirm"),
        ({"candidate": "nosuch"}, "no run 'nosuch' in"),
    ],
)
def test_what_cannot_be_confirmed_side_by_side_is_one_line_before_anything_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nights: dict[str, object], said: str
) -> None:
    """Same versions (exit 2: the nightly then re-runs instead), nothing regressed (exit 0), an unknown run
    (exit 2): one line each, no environment built."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    candidate = _nights(Store(db), float(nights.get("slow", 3.0)), tonight=str(nights.get("tonight", "1.1")))  # type: ignore[arg-type]
    cache = tmp_path / "cache"
    done = daskbench_cli("confirm", "--baseline", "main", "--candidate", str(nights.get("candidate", candidate)),
                         "--cache-dir", str(cache), "--db", db, *SESSION, capsys=capsys)  # fmt: skip
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == (0 if "nothing to confirm" in said else 2)
    assert len(lines) == 1 and said in lines[0], lines
    assert not cache.exists()


def test_the_alert_says_when_a_rerun_stood_in_for_the_side_by_side_ab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--confirm RUN --fallback-reason WHY``: the alert says it was confirmed by a re-run, not side by side,
    and why; ``--fallback-reason`` alone and both confirmations at once are one line each."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    store = Store(db)
    candidate = _nights(store, 3.0, tonight="1.0")
    rerun = add_run(store, 4, label="tonight-confirm", versions={"standin": "1.0"})
    add_results(store, rerun, CASE, 0.6)
    summary = tmp_path / "s.md"
    args = ["alert", "--baseline", "main", "--candidate", candidate, "--summary", str(summary), "--db", db]
    done = daskbench_cli(*args, "--confirm", rerun.run_id, "--fallback-reason", "same versions", capsys=capsys)
    assert done.returncode == 1, done.stderr
    text = " ".join(summary.read_text().split())
    assert "Confirmed by a re-run of the same environment, run `run004-t`, not side by side (no side-by-side A/B: " \
           "same versions)" in text  # fmt: skip
    for extra, said in ((["--fallback-reason", "x"], "--fallback-reason goes with --confirm"),
                        (["--confirm", rerun.run_id, "--group", "g"], "give one of --confirm")):  # fmt: skip
        bad = daskbench_cli(*args, *extra, capsys=capsys)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and said in bad.stderr


def test_a_bisection_of_the_run_names_its_culprit_in_the_alert_and_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Steps of a bisection whose --bad is the run, in the order a binary search takes them: the last regressed
    step is the first bad release, the last unchanged one the newest good (no ordering of versions needed, so
    commits read the same way); one reader (judge.bisected) for the alert and the report."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    candidate = _nights(store, 3.0)
    for index, (version, verdict) in enumerate((("1.7", "regressed"), ("1.3", "unchanged"), ("1.5", "regressed"),
                                                ("1.4", "unchanged"))):  # fmt: skip
        group = f"b-{index}"
        for side, slow in (("A", 1.0), ("B", 1.3 if verdict == "regressed" else 1.0)):
            run = add_run(store, 10 + 2 * index + (side == "B"), label=f"{group}-{side}")
            add_results(store, run, CASE, 0.2 * slow)
            tags = {"ab_group": group, "ab_side": side, "ab_round": "0", "ab_mode": "lockstep", "ab_max_rounds": "3",
                    bisect.TAG: "found", bisect.STEP: str(index), bisect.VERSION: version, bisect.VERDICT: verdict,
                    "bisect_pins": f"standin=={version}", bisect.GOOD_TAG: "standin==1.0", bisect.BAD_TAG: candidate[:8]}  # fmt: skip
            store.tag_run(run.run_id, tags)
    said = bisected.culprit_line(store, candidate)
    assert (
        said
        == "bisection found: first bad standin 1.5 (step 2, daskbench compare --group b-2); newest good standin 1.4"
    )
    assert bisected.culprits(store, candidate) == (bisected.Culprit("found", "standin 1.5", "2", "b-2", "standin 1.4"),)
    assert bisected.culprits(store, "someone-else") == ()
    db = f"sqlite:///{tmp_path / 'r.db'}"
    done = daskbench_cli("report", "--baseline", "main", "--candidate", candidate, "-o", str(tmp_path / "r.html"),
                         "--db", db, capsys=capsys)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "found the first bad standin 1.5 (step 2," in " ".join((tmp_path / "r.html").read_text().split())


def test_a_confirmation_is_read_back_from_the_tags_it_writes_one_per_group_oldest_first(tmp_path: Path) -> None:
    """The alert (`stored`) and the report (`of_candidate`) read what ``confirm`` tags, the versions in words;
    a group not tagged as a confirmation is one line naming the command that makes one."""
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    tags = confirm_tags.tags("cand", "good", (("standin", "1.0"),), (("standin", "1.1"),), {"runtime_s": 1.2})
    for index, group in enumerate(("c-1", "c-1", "c-2")):
        run = add_run(store, index, label=f"{group}-{index}")
        store.tag_run(run.run_id, {"ab_group": group, **tags})
    found = confirm_tags.stored(store, "c-2")
    assert found == confirm_tags.Stored("c-2", "cand", "good", "standin 1.0", "standin 1.1", {"runtime_s": 1.2})
    assert found.versions() == "standin 1.0 against standin 1.1"
    assert [stored.group for stored in confirm_tags.of_candidate(store, "cand")] == ["c-1", "c-2"]
    assert confirm_tags.of_candidate(store, "other") == ()
    with pytest.raises(DaskbenchError, match=r"no confirmation 'c-3' .* daskbench confirm --group GROUP"):
        confirm_tags.stored(store, "c-3")


def test_a_run_records_the_versions_of_the_packages_it_is_asked_to(monkeypatch: pytest.MonkeyPatch) -> None:
    """``DASKBENCH_RECORD_VERSIONS`` (``--record-versions``) adds packages to the recorded versions; a name that
    is no package name is one line naming the variable."""
    monkeypatch.setenv("DASKBENCH_RECORD_VERSIONS", "pytest, no-such-package")
    asked = resolve({}).record_versions
    assert asked == ("pytest", "no-such-package")
    recorded = provenance.versions(asked)
    assert recorded["pytest"] == pytest.__version__ and "no-such-package" not in recorded
    monkeypatch.setenv("DASKBENCH_RECORD_VERSIONS", "pytest,not a name")
    with pytest.raises(DaskbenchError, match="DASKBENCH_RECORD_VERSIONS: 'not a name' is not a package name"):
        resolve({})
