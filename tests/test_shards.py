"""Shards (`daskbench.shards`): a suite's cases split into shards of about equal time (pure, planted answers),
and the shards' exports merged and judged once, with real stores written by `add_lockstep_group`, exported and
imported as ``daskbench export``/``import`` do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daskbench.errors import DaskbenchError
from daskbench.judge.sequential import Question
from daskbench.judge.suite import SUITE_ALPHA, Family, metrics_judged
from daskbench.lockstep.engine import Lockstep
from daskbench.lockstep.sessions import Side
from daskbench.model import Case
from daskbench.shards import merge
from daskbench.shards.history import case_history, history_seconds
from daskbench.shards.plan import (
    Past,
    Selector,
    Shard,
    ShardPlan,
    case_name,
    expected_seconds,
    key_name,
    measured_name,
    parse_shard,
    plan,
)
from daskbench.store import Store, exchange
from tests.helpers import add_lockstep_group, lockstep_test, make_case

NAMES = [f"bench_{i:02d}.py::test_case[{i}]" for i in range(42)]


def test_a_shard_is_k_of_n_and_anything_else_is_one_line_saying_how_to_write_it() -> None:
    assert parse_shard("2/4") == Shard(2, 4) and str(parse_shard(" 1 / 1 ")) == "1/1"
    for bad in ("0/4", "5/4", "2", "a/b", "2/0", "1/999"):
        with pytest.raises(DaskbenchError, match=r"give K/N, shard K of N .* e\.g\. --shard 2/4"):
            parse_shard(bad)


def test_a_case_is_named_by_its_file_and_test_as_sessions_and_measurements_know_it() -> None:
    assert case_name("benchmarks/bench_arrays.py", "test_sum[tiny]") == "bench_arrays.py::test_sum[tiny]"
    assert measured_name("benchmarks/bench_arrays.py::test_sum[tiny]") == "bench_arrays.py::test_sum[tiny]"
    assert measured_name("bench.py::TestSums::test_sum[a::b]") == "bench.py::test_sum[a::b]"  # a class, "::" in ids


def test_without_history_every_case_is_in_exactly_one_shard_and_shards_differ_by_one_case_at_most() -> None:
    split = plan(list(reversed(NAMES)), 4)
    assert sorted(split.cases) == sorted(NAMES) and len(split.cases) == len(set(split.cases))
    assert [len(shard) for shard in split.shards] == [11, 10, 11, 10] or max(map(len, split.shards)) - min(
        map(len, split.shards)
    ) <= 1
    assert split.basis == "count" and plan(NAMES, 4) == split  # the same cases in any order: the same split


def test_with_history_each_shard_is_within_one_case_of_an_even_share_of_the_time() -> None:
    rng = np.random.default_rng(43)
    seconds = {name: float(rng.uniform(20, 120)) for name in NAMES}
    for count in (2, 4, 8):
        split = plan(NAMES, count, seconds)
        share = sum(seconds.values()) / count
        assert all(abs(spent - share) <= max(seconds.values()) for spent in split.seconds), split.seconds
        assert split.basis == "history" and sum(split.seconds) == pytest.approx(sum(seconds.values()))
        assert split.seconds == tuple(sum(seconds[name] for name in shard) for shard in split.shards)


@pytest.mark.parametrize("count", [2, 4, 8])
def test_a_case_added_moves_only_cases_next_to_a_cut(count: int) -> None:
    rng = np.random.default_rng(count)
    seconds = {name: float(rng.uniform(20, 120)) for name in NAMES}
    before = plan(NAMES, count, seconds)
    added = "bench_20.py::test_new"
    after = plan([*NAMES, added], count, {**seconds, added: 60.0})
    moved = [name for name in NAMES if before.shard_of(name) != after.shard_of(name)]
    assert len(moved) <= count - 1, moved
    assert after.shard_of(added) is not None


def test_a_case_without_history_counts_as_the_median_case_and_no_shard_is_left_empty() -> None:
    names = ["a.py::t[1]", "a.py::t[2]", "a.py::t[3]", "a.py::t[4]"]
    split = plan(names, 4, {"a.py::t[1]": 100.0, "a.py::t[2]": 1.0})
    assert [len(shard) for shard in split.shards] == [1, 1, 1, 1]
    assert split.basis == "history of 2 of 4 cases" and split.seconds[2] == pytest.approx(50.5)
    assert [len(shard) for shard in plan(names[:2], 3).shards].count(0) == 1  # fewer cases than shards: some none


def test_a_plan_travels_as_json_and_its_digest_names_the_split_not_its_times() -> None:
    split = plan(NAMES, 3, {name: 10.0 for name in NAMES})
    assert ShardPlan.from_json(split.to_json()) == split
    assert split.digest() == ShardPlan(split.shards, (1.0, 2.0, 3.0)).digest() != plan(NAMES, 4).digest()
    with pytest.raises(DaskbenchError, match="is not a shard plan"):
        ShardPlan.from_json('{"shards": 3}', "tag ab_shard_plan")
    assert split.lines()[0].startswith("shard 1/3: 14 cases, about")
    with pytest.raises(DaskbenchError, match="give K/3"):
        split.of(Shard(1, 4))


def test_a_cases_expected_time_is_its_median_round_times_its_median_rounds() -> None:
    assert expected_seconds([Past(10, 100.0), Past(20, 100.0), Past(30, 600.0)]) == pytest.approx(10.0 * 20)
    assert expected_seconds([Past(0, 5.0)]) is None and expected_seconds([]) is None


# -- real stores ---------------------------------------------------------------------------------

CASES = [make_case(f"work{i}") for i in range(4)]
SAME, DOUBLE, WIDE = [1.0] * 5, [2.0] * 8, [1.3, 0.8, 1.25, 0.85]
BASE, HEAD = "a" * 40, "b" * 40


def _names(cases: list[Case]) -> list[str]:
    return [measured_name(lockstep_test(case)) for case in cases]


SPLIT = plan(_names(CASES), 2)


def _shard_file(folder: Path, number: int, rounds: dict[str, list[float]], head: str = HEAD,
                split: ShardPlan = SPLIT, attempt: int = 1, base: str = BASE) -> Path:  # fmt: skip
    """Shard ``number``/2 of the comparison of BASE and ``head`` (its ``attempt``: a re-run is a group of its
    own), its store exported to a file: the cases of its part of ``split`` that ``rounds`` names (by
    workload), each with one part of those ratios."""
    store = Store(f"sqlite:///{folder / f'shard{number}-{head[:4]}.db'}")
    mine = [case for case in CASES if measured_name(lockstep_test(case)) in split.shards[number - 1]]
    tags = {**merge.plan_tags(split, Shard(number, split.count)), "pr_base": base, "pr_head": head}
    group = f"pr-aaaa-{head[:4]}-s{number}-{attempt}"
    add_lockstep_group(store, group, [(case, [rounds[case.workload]]) for case in mine if case.workload in rounds],
                       tags=tags)  # fmt: skip
    path = folder / f"shard{number}-{head[:4]}.jsonl"
    with path.open("w") as out:
        exchange.write_export(store, out)
    return path


def _merged(tmp_path: Path, files: list[Path], said: list[str] | None = None) -> merge.Merged:
    store = Store(f"sqlite:///{tmp_path / 'merged.db'}")
    chosen = merge.import_shards(
        store, files, {"pr_base": BASE, "pr_head": HEAD}, (said if said is not None else []).append
    )
    return merge.judge(store, chosen)


def test_two_shards_exports_merge_into_one_judgement_of_the_whole_suite(tmp_path: Path) -> None:
    """Shard 1 holds work0 and work1 (work1 2x slower), shard 2 work2 and work3: one comparison of all four,
    work1 regressed, its family the whole suite's (4 cases, not a shard's 2)."""
    every = {"work0": SAME, "work1": DOUBLE, "work2": SAME, "work3": SAME}
    files = [_shard_file(tmp_path, 1, every), _shard_file(tmp_path, 2, every)]
    merged = _merged(tmp_path, files)
    assert merged.comparison is not None and merged.missing == () and merged.state() == "regressed"
    runtime = {v.workload: v.verdict for v in merged.verdicts if v.metric == "runtime_s"}
    assert runtime == {"work0": "unchanged", "work1": "regressed", "work2": "unchanged", "work3": "unchanged"}
    note = merged.comparison.notes[0]
    assert note.startswith("false alarms counted per suite") and "4 cases" in note and f"{SUITE_ALPHA:.0%}" in note
    assert merged.lines()[0] == "2 of 2 shards measured; 4 cases planned, every one measured"
    again = _merged(tmp_path, [*files, files[0]])  # imported again (and one file twice): the same judgement
    assert [v.verdict for v in again.verdicts] == [v.verdict for v in merged.verdicts]


def test_a_shard_without_results_leaves_its_cases_not_measured_never_unchanged(tmp_path: Path) -> None:
    every = {"work0": SAME, "work1": SAME, "work2": SAME, "work3": SAME}
    merged = _merged(tmp_path, [_shard_file(tmp_path, 1, every)])
    assert merged.state() == "undecided" and merged.not_measured == 2
    (gap,) = merged.missing
    assert gap.shard == Shard(2, 2) and gap.why == merge.NO_FILE and set(gap.cases) == set(SPLIT.shards[1])
    assert {v.workload for v in merged.verdicts} == {"work0", "work1"}
    assert merged.lines()[0] == "1 of 2 shards measured; 4 cases planned, 2 not measured"
    assert gap.line().startswith("shard 2/2: 2 cases not measured (no results: the shard failed or was cancelled)")


def test_a_shard_that_stopped_before_some_of_its_cases_names_them_not_measured(tmp_path: Path) -> None:
    every = {"work0": SAME, "work1": SAME, "work2": SAME, "work3": SAME}
    cut_short = {"work0": SAME, "work2": SAME}  # shard 1 never measured work1, shard 2 never work3
    merged = _merged(tmp_path, [_shard_file(tmp_path, 1, cut_short), _shard_file(tmp_path, 2, every | cut_short)])
    assert merged.state() == "undecided"
    assert [(gap.shard.number, gap.cases) for gap in merged.missing] == [(1, (_names(CASES)[1],))]


def test_an_undecided_case_in_one_shard_makes_the_merge_undecided(tmp_path: Path) -> None:
    every = {"work0": SAME, "work1": WIDE, "work2": SAME, "work3": SAME}
    merged = _merged(tmp_path, [_shard_file(tmp_path, 1, every), _shard_file(tmp_path, 2, every)])
    assert merged.missing == () and merged.state() == "undecided"


def test_an_export_of_another_comparison_is_refused_in_one_line_and_nothing_is_imported(tmp_path: Path) -> None:
    every = {"work0": SAME, "work1": SAME, "work2": SAME, "work3": SAME}
    other = _shard_file(tmp_path, 2, every, head="c" * 40)
    store = Store(f"sqlite:///{tmp_path / 'merged.db'}")
    with pytest.raises(DaskbenchError) as refused:
        merge.import_shards(store, [_shard_file(tmp_path, 1, every), other], {"pr_base": BASE, "pr_head": HEAD},
                            print)  # fmt: skip
    said = str(refused.value)
    assert "\n" not in said and f"holds shard 2/2 of base {BASE[:10]}, head {'c' * 10}" in said
    assert f"not a shard of base {BASE[:10]}, head {HEAD[:10]}" in said
    assert store.runs() == []


def test_one_shard_given_twice_or_shards_of_different_splits_are_refused(tmp_path: Path) -> None:
    every = {"work0": SAME, "work1": SAME, "work2": SAME, "work3": SAME}
    first = _shard_file(tmp_path, 1, every)
    twin = tmp_path / "twin"
    twin.mkdir()
    with pytest.raises(DaskbenchError, match="shard 1/2 is given twice"):
        _merged(tmp_path, [first, _shard_file(twin, 1, every, attempt=2)])
    other_split = plan([*_names(CASES), "bench.py::test_more"], 2)
    with pytest.raises(DaskbenchError, match="the shards ran different splits"):
        _merged(tmp_path, [first, _shard_file(twin, 2, every, split=other_split)])


def test_no_results_at_all_is_one_line() -> None:
    with pytest.raises(DaskbenchError, match="no shard's results to merge"):
        merge.judge(Store("sqlite://"), {})


def test_the_history_of_a_store_gives_each_case_its_rounds_and_seconds(tmp_path: Path) -> None:
    """Two groups of work0: 5 rounds then 8, each round 0.5 s restart + compute on both sides."""
    store = Store(f"sqlite:///{tmp_path / 'history.db'}")
    add_lockstep_group(store, "g1", [(CASES[0], [SAME])])
    add_lockstep_group(store, "g2", [(CASES[0], [[1.0] * 3, [1.0] * 5])], first=10)
    name = _names(CASES)[0]
    assert sorted(past.rounds for past in case_history(store)[name]) == [5, 8]
    assert history_seconds(store)[name] == pytest.approx(3.0 * 6.5)  # 3 s a round (both sides) x median 6.5 rounds


# -- a shard's cases in a lockstep comparison -------------------------------------------------------

KEYS = [f"bench_{i:02d}.py::test_case[n={i}]#0" for i in range(6)]
SHOWN = {key: f"test_case[{i}]" for i, key in enumerate(KEYS)}


def test_a_selector_picks_its_shards_cases_by_the_names_sessions_and_measurements_share() -> None:
    """Every runner plans the same split from the same cases; together the shards pick every case once."""
    picked = []
    for number in (1, 2, 3):
        selector = Selector(Shard(number, 3))
        picked += selector(KEYS, SHOWN)
        assert selector.used == plan([key_name(key, SHOWN) for key in KEYS], 3)
    assert sorted(picked) == sorted(KEYS)
    assert (
        key_name(KEYS[0], SHOWN) == "bench_00.py::test_case[0]"
        and key_name(KEYS[0], {}) == "bench_00.py::test_case[n=0]#0"
    )


def test_a_given_plan_that_misses_a_case_of_the_suite_is_one_line() -> None:
    given = plan([key_name(key, SHOWN) for key in KEYS[:5]], 2)
    assert Selector(Shard(1, 2), given)(KEYS[:5], SHOWN) == [
        k for k in KEYS[:5] if key_name(k, SHOWN) in given.shards[0]
    ]
    with pytest.raises(
        DaskbenchError, match=r"names no shard for 1 case of this suite \(bench_05.py::test_case\[5\]\)"
    ):
        Selector(Shard(1, 2), given)(KEYS, SHOWN)


def test_a_lockstep_comparison_measures_its_shards_cases_and_counts_false_alarms_over_the_suite(tmp_path: Path) -> None:
    lockstep = Lockstep(
        {name: Side(name) for name in "AB"},
        command=lambda side: [],
        environment=lambda side: {},
        question=Question(1.1, 30, family=Family(alpha=SUITE_ALPHA)),
        max_seconds=60.0,
        log_dir=tmp_path,
        say=lambda line: None,
        pick=Selector(Shard(2, 3)),
        names=dict(SHOWN),
    )
    chosen = lockstep._chosen(list(KEYS))
    assert chosen == [
        key for key in KEYS if key_name(key, SHOWN) in plan([key_name(k, SHOWN) for k in KEYS], 3).shards[1]
    ]
    assert 0 < len(chosen) < len(KEYS) and lockstep.question.family.verdicts == len(KEYS) * metrics_judged()


def test_a_shard_export_cut_short_is_said_and_left_out_its_cases_not_measured(tmp_path: Path) -> None:
    """Shard 2's job was killed while writing its export (the file ends mid-line): the merge says so in one line
    naming the file and the line, leaves it out, and judges shard 1; shard 2's cases are not measured."""
    every = {"work0": SAME, "work1": SAME, "work2": SAME, "work3": SAME}
    second = _shard_file(tmp_path, 2, every)
    text = second.read_text()
    second.write_text(text[: text.index("\n", len(text) // 2) - 5])  # ends five characters short of a line end
    said: list[str] = []
    merged = _merged(tmp_path, [_shard_file(tmp_path, 1, every), second], said)
    (line,) = said
    assert f"left out {second}, which is not whole ({second} line " in line and "not measured" in line
    assert [gap.shard.number for gap in merged.missing] == [2] and merged.state() == "undecided"
    assert merged.not_measured == 2


# -- shards and merges under attack (issue 45) --------------------------------------------------------

EVERY = {"work0": SAME, "work1": SAME, "work2": SAME, "work3": SAME}


def _cut(text: str, how: str) -> str:
    """An export as a shard's job killed while writing it leaves it."""
    lines = text.splitlines(keepends=True)
    return {"empty": "", "blank": "\n\n", "header": lines[0], "line end": "".join(lines[: len(lines) // 2]),
            "mid-line": text[: text.index("\n", len(text) // 2) - 5]}[how]  # fmt: skip


@pytest.mark.parametrize("how", ["empty", "blank", "header", "line end", "mid-line"])
def test_a_shard_killed_while_exporting_leaves_its_cases_not_measured_never_unchanged(tmp_path: Path, how: str) -> None:
    """Shard 2's export is empty, blank, its header alone, cut at a line's end or in a line: the merge judges
    shard 1 and names shard 2's cases not measured (undecided, exit 3), never a line that refuses everything."""
    second = _shard_file(tmp_path, 2, EVERY)
    second.write_text(_cut(second.read_text(), how))
    said: list[str] = []
    merged = _merged(tmp_path, [_shard_file(tmp_path, 1, EVERY), second], said)
    assert merged.state() == "undecided" and merged.not_measured == 2, said
    assert [gap.shard.number for gap in merged.missing] == [2]
    assert {v.workload for v in merged.verdicts} == {"work0", "work1"}
    assert len(said) == (how != "line end") and all(str(second) in line for line in said)


@pytest.mark.parametrize("what", ["binary", "json list", "nightly export", "other base", "other head"])
def test_a_file_that_is_no_shard_of_this_comparison_is_one_line_and_nothing_is_imported(
    tmp_path: Path, what: str
) -> None:
    """Bytes that are no text, JSON that is no export, a store's export without shards, a shard of another
    base or another head: one line naming the file; the store stays empty."""
    other = tmp_path / "other"
    other.mkdir()
    if what in ("other base", "other head"):
        forged = _shard_file(other, 2, EVERY, **({"base": "d" * 40} if what == "other base" else {"head": "e" * 40}))
    else:
        forged = other / "forged.jsonl"
        if what == "nightly export":
            store = Store(f"sqlite:///{other / 'nightly.db'}")
            add_lockstep_group(store, "nightly", [(CASES[0], [SAME])])
            with forged.open("w") as out:
                exchange.write_export(store, out)
        else:
            forged.write_bytes(b"\x00\xff" * 64 if what == "binary" else b"[1, 2, 3]\n")
    store = Store(f"sqlite:///{tmp_path / 'merged.db'}")
    with pytest.raises(DaskbenchError) as refused:
        merge.import_shards(store, [_shard_file(tmp_path, 1, EVERY), forged], {"pr_base": BASE, "pr_head": HEAD},
                            print)  # fmt: skip
    assert "\n" not in str(refused.value) and str(forged) in str(refused.value)
    assert store.runs() == []


def test_one_file_given_twice_under_two_spellings_adds_no_run(tmp_path: Path) -> None:
    """A folder and one of its files, spelled another way: each run is stored once, the judgement the same."""
    first, second = _shard_file(tmp_path, 1, EVERY), _shard_file(tmp_path, 2, EVERY)
    (tmp_path / "once").mkdir()
    once = _merged(tmp_path / "once", [first, second])
    twice = _merged(tmp_path, [first, second, tmp_path / ".." / tmp_path.name / first.name, Path(str(second))])
    runs = Store(f"sqlite:///{tmp_path / 'merged.db'}").runs()
    assert len(runs) == len({run.run_id for run in runs}) == 4
    assert [(v.workload, v.verdict) for v in twice.verdicts] == [(v.workload, v.verdict) for v in once.verdicts]


def test_two_merges_at_once_on_one_store_both_end_sound(tmp_path: Path) -> None:
    """Two merges of the same shards into one SQLite store at the same moment (a job re-run while the first
    still runs): both judge the whole suite alike, neither fails on the lock, every run is stored once."""
    import threading

    files = [_shard_file(tmp_path, 1, EVERY), _shard_file(tmp_path, 2, EVERY)]
    start = threading.Barrier(2)
    results: dict[int, object] = {}

    def one(number: int) -> None:
        start.wait()
        try:
            results[number] = [(v.workload, v.metric, v.verdict) for v in _merged(tmp_path, files).verdicts]
        except Exception as error:  # said by the assertion below
            results[number] = error

    threads = [threading.Thread(target=one, args=(number,)) for number in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert isinstance(results[1], list) and results[1] == results[2], results
    runs = Store(f"sqlite:///{tmp_path / 'merged.db'}").runs()
    assert len(runs) == len({run.run_id for run in runs}) == 4
