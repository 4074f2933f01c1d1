"""``daskbench culprit``'s parts without measuring: the route between two runs (real git repositories and mirrors),
the hunt's grouping of cases and its budget (the bisection's measuring replaced by a script), and the comment.

The whole path, measured, from a night's regression to the commit that planted it, on the loopback GitHub, is
``ci/nightly --quick`` (ci/quick/check_alerts.py checks the comment it wrote).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from daskbench import envs
from daskbench.bisect import points, search
from daskbench.bisect.plan import BisectPlan, Candidate
from daskbench.cli.app import EXIT_UNDECIDED
from daskbench.cli.bisect import EXITS
from daskbench.culprit import comment, hunt, route
from daskbench.errors import DaskbenchError
from daskbench.model import Run, SourceCommit
from daskbench.store import Store
from tests.helpers import daskbench_cli, git, make_run


def _repo(folder: Path, subjects: list[str], days: list[int] | None = None) -> list[str]:
    """A git repository of one file with a commit per subject (committed on August ``days[i]``, 2024, when given);
    their ids, oldest first."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    ids = []
    for number, subject in enumerate(subjects):
        (folder / "file.txt").write_text(f"{number}\n")
        git(folder, "add", "-A")
        date = f"2024-08-{days[number]:02d}T12:00:00+00:00" if days else None
        dated = {**os.environ, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else None
        git(folder, "commit", "-q", "-m", subject, env=dated)
        ids.append(git(folder, "rev-parse", "HEAD"))
    return ids


def _run(name: str, commits: dict[str, tuple[str, Path]], **versions: str) -> Run:
    tags: dict[str, str] = {}
    for package, (commit, repo) in commits.items():
        tags |= SourceCommit(package, commit, repo.as_uri()).tags()
    return make_run(run_id=name, versions={"python": "3.11.7", **versions}, tags=tags)


def _no_index(name: str) -> list[str]:
    raise AssertionError(f"no release listing expected, asked for {name}")


@pytest.fixture
def two(tmp_path: Path) -> dict[str, Any]:
    """Repositories of ``dask`` (four commits, on August 1, 3, 5 and 7) and ``distributed`` (three, on August 2, 4
    and 6), and a good and a bad run of them."""
    dask = _repo(tmp_path / "dask", ["dask 0", "Faster x (#101)", "Slower y (#102)", "Docs (#103)"], [1, 3, 5, 7])
    dist = _repo(tmp_path / "distributed", ["distributed 0", "Scheduler tweak (#201)", "Tidy (#202)"], [2, 4, 6])
    good = _run("good-run", {"dask": (dask[0], tmp_path / "dask"), "distributed": (dist[0], tmp_path / "distributed")},
                dask="1.0", distributed="1.0")  # fmt: skip
    bad = _run("bad-run", {"dask": (dask[3], tmp_path / "dask"), "distributed": (dist[2], tmp_path / "distributed")},
               dask="1.0", distributed="1.0")  # fmt: skip
    return {"dask": dask, "distributed": dist, "good": good, "bad": bad, "mirrors": tmp_path / "mirrors"}


def test_when_both_packages_moved_by_commits_their_commits_are_one_line_by_date(two: dict[str, Any]) -> None:
    """The path interleaves dask's and distributed's commits by commit date, each point both packages as their
    branches stood then (a nightly of that moment): no pivot, every candidate one commit of one package."""
    said: list[str] = []
    found = route.make_route(two["good"], two["bad"], two["mirrors"], _no_index, said.append)
    plan, dask, dist = found.plan, two["dask"], two["distributed"]
    assert [c.commit for c in plan.candidates] == [dask[1], dist[1], dask[2], dist[2], dask[3]]
    assert [c.package for c in plan.candidates] == ["dask", "distributed", "dask", "distributed", "dask"]
    assert plan.pivot is None and plan.max_steps() == 1 + 3
    both = [(found.points[c.label()]["dask"].commit, found.points[c.label()]["distributed"].commit)
            for c in plan.candidates]  # fmt: skip
    assert both == [(dask[1], dist[0]), (dask[1], dist[1]), (dask[2], dist[1]), (dask[2], dist[2]), (dask[3], dist[2])]
    assert found.point(plan.good) == {"dask": route.Ref("1.0", dask[0]), "distributed": route.Ref("1.0", dist[0])}
    assert plan.candidates[2].subject == "Slower y (#102)"
    assert sum("cloning" in line for line in said) == 2 and "5 commits" in found.describe()


def test_a_mirror_is_made_once_and_fetched_only_for_a_commit_it_lacks(two: dict[str, Any], tmp_path: Path) -> None:
    """A second route clones nothing; a commit pushed since is fetched into the mirror, once."""
    route.make_route(two["good"], two["bad"], two["mirrors"], _no_index, lambda _line: None)
    said: list[str] = []
    route.make_route(two["good"], two["bad"], two["mirrors"], _no_index, said.append)
    assert said == []
    newer = _repo_commit(tmp_path / "dask", "Newer (#104)")
    bad = replace(two["bad"], tags={**two["bad"].tags, "git_commit_dask": newer})
    found = route.make_route(two["good"], bad, two["mirrors"], _no_index, said.append)
    assert [line for line in said if "fetching" in line] and found.plan.candidates[-1].commit == newer


def _repo_commit(folder: Path, subject: str) -> str:
    (folder / "file.txt").write_text(subject)
    git(folder, "commit", "-q", "-am", subject)
    return git(folder, "rev-parse", "HEAD")


def test_an_end_that_had_a_release_starts_at_its_tag(tmp_path: Path) -> None:
    """The good run had dask 1.0 from an index, the bad one a commit: the commits after tag 1.0."""
    ids = _repo(tmp_path / "dask", ["dask 1.0", "a (#1)", "b (#2)"])
    git(tmp_path / "dask", "tag", "1.0", ids[0])
    good = make_run(run_id="good-run", versions={"dask": "1.0"})
    bad = _run("bad-run", {"dask": (ids[2], tmp_path / "dask")}, dask="1.1.dev2")
    found = route.make_route(good, bad, tmp_path / "mirrors", _no_index, lambda _line: None)
    assert [c.commit for c in found.plan.candidates] == ids[1:] and found.plan.pivot is None


@pytest.mark.parametrize(
    ("good", "bad", "said"),
    [
        ({"dask": "1.0"}, {"dask": "1.0"}, "recorded the same versions and commits: nothing to bisect"),
        ({"numpy": "1.0", "pandas": "2.0"}, {"numpy": "1.1", "pandas": "2.1"},
         "differ in 2 packages (numpy, pandas), none of them dask or distributed"),
        ({"dask": "1.0"}, {"dask": "1.1", "zarr": "3.0"}, "only one of runs good-run and bad-run recorded zarr"),
    ],
)  # fmt: skip
def test_what_cannot_be_routed_is_one_line(tmp_path: Path, good: dict, bad: dict, said: str) -> None:
    with pytest.raises(DaskbenchError, match=r".") as refused:
        route.make_route(make_run(run_id="good-run", versions=good), make_run(run_id="bad-run", versions=bad),
                         tmp_path, _no_index, lambda _line: None)  # fmt: skip
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_another_package_that_differs_is_held_and_named(tmp_path: Path) -> None:
    """dask moved by releases and numpy too: dask is bisected, numpy held at the good run's and said."""
    good = make_run(run_id="good-run", versions={"dask": "1.0", "numpy": "2.0"})
    bad = make_run(run_id="bad-run", versions={"dask": "1.2", "numpy": "2.1"})
    found = route.make_route(good, bad, tmp_path, lambda _name: ["0.9", "1.0", "1.1", "1.2"], lambda _line: None)
    assert [c.label() for c in found.plan.candidates] == ["1.1", "1.2"] and found.held == ("numpy",)
    assert found.points["1.2"]["numpy"] == route.Ref("2.0")
    assert found.notes == ("numpy differs too (2.0 .. 2.1): held at the good run's",)


# -- the hunt: cases that share a cause, and the budget -------------------------------------------


def _step(number: int, candidate: Candidate, verdict: str, cases: tuple[str, ...] = ()) -> search.Step:
    return search.Step(number, candidate.label(), candidate.describe(), verdict, cases, 3.0, 2.8, 3.2, 3, 0.5,
                       f"g-{number}")  # fmt: skip


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, two: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    """Bisections that measure nothing: the first names candidate 1 (distributed's "Scheduler tweak") with case
    ``a`` regressed there, a later one the first candidate it searches with case ``b``; each call is recorded."""
    calls: list[dict[str, Any]] = []

    def run(self: search.Bisection, plan: Any) -> search.Outcome:
        calls.append({"name": self.name, "first": plan.candidates[0].label(), "k": self.pytest_args[-1],
                      "pivot": plan.pivot, "budget": self.budget})  # fmt: skip
        culprit, cases = (plan.candidates[1], ("a",)) if len(calls) == 1 else (plan.candidates[0], ("b",))
        step = _step(1, culprit, "regressed", cases)
        self.done[step.label] = step
        return search.Outcome("culprit", step, culprit)

    monkeypatch.setattr(search.Bisection, "run", run)
    return calls


def _hunter(two: dict[str, Any], tmp_path: Path, **kwargs: Any) -> hunt.Hunter:
    path = route.make_route(two["good"], two["bad"], two["mirrors"], _no_index, lambda _line: None)
    store = Store(f"sqlite:///{tmp_path / 'h.db'}")
    return hunt.Hunter(store, "sqlite://", ["-q"], path, "culprit-x", {}, envs.BuildOptions(), say=lambda _l: None, show=lambda _l: None,
                       **kwargs)  # fmt: skip


def test_cases_searched_together_and_one_the_culprit_does_not_explain_is_searched_after_it(
    scripted: list[dict[str, Any]], two: dict[str, Any], tmp_path: Path
) -> None:
    """Cases a and b in one search; its culprit explains a only, so b is searched again from the next candidate
    on, and that search names its own culprit."""
    found = _hunter(two, tmp_path).run(["a", "b"])
    assert [(c["name"], c["k"]) for c in scripted] == [("culprit-x", "a or b"), ("culprit-x-2", "b")]
    assert scripted[1]["first"] == two["dask"][2][:12] and scripted[0]["pivot"] is None
    assert [s.shared() for s in found.searches] == [("a",), ("b",)] and found.kind() == "culprit"
    assert found.unsearched == ()


def test_a_used_up_budget_leaves_the_unexplained_cases_unsearched_and_says_so(
    scripted: list[dict[str, Any]], two: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No budget left after the first search: b is named as not searched, in the hunt and in its comment."""
    clock = iter([0.0, 0.0, 100.0, 100.0])
    monkeypatch.setattr(hunt.time, "monotonic", lambda: next(clock))
    found = _hunter(two, tmp_path, budget=60.0).run(["a", "b"])
    assert len(scripted) == 1 and found.unsearched == ("b",)
    assert "Not searched, the budget ran out first: `b`." in comment.markdown(found)


# -- the comment --------------------------------------------------------------------------------


def test_the_comment_links_the_commit_and_its_pull_request_and_tabulates_the_steps(two: dict[str, Any]) -> None:
    """A repository on GitHub: the first bad commit linked, its title, its pull request linked; a row per step
    with its verdict, effect, interval and rounds; the confirmation named as step 0."""
    path = route.make_route(two["good"], two["bad"], two["mirrors"], _no_index, lambda _line: None)
    path = replace(
        path, urls={"dask": "git@github.com:dask/dask.git", "distributed": "https://github.com/dask/distributed"}
    )
    plan = path.plan
    culprit = plan.candidates[2]  # dask's "Slower y"
    steps = (replace(_step(0, plan.candidates[-1], "regressed", ("a",)), group="confirm-1"),
             _step(1, plan.candidates[3], "regressed", ("a",)), _step(2, plan.candidates[1], "unchanged"),
             _step(3, culprit, "regressed", ("a",)))  # fmt: skip
    found = hunt.Search("culprit-x", ("a",), search.Outcome("culprit", steps[-1], culprit), steps)
    text = comment.markdown(hunt.Hunt(path, (found,), (), {}, 600.0, 3600.0, "confirm-1"))
    link = f"[`{culprit.commit[:12]}`](https://github.com/dask/dask/commit/{culprit.commit})"
    assert (
        f"**First bad commit: dask {link} Slower y (\\#\u200b102) (pull request [#102](https://github.com/dask/dask/pull/102))**"
        in text
    )
    assert "| 0 | " in text and "(the confirmation)" in text and "| 2 | " in text and "unchanged" in text
    assert "| 3.00x (2.80-3.20) | 3 | 0.5 |" in text and "10.0 min of its 60 min budget" in text


def test_a_budget_that_ran_out_is_said_with_where_the_culprit_may_still_be(two: dict[str, Any]) -> None:
    """Out of budget after step 1: no culprit; the comment names the candidates left, first to last."""
    path = route.make_route(two["good"], two["bad"], two["mirrors"], _no_index, lambda _line: None)
    plan = path.plan
    steps = (_step(0, plan.candidates[-1], "regressed", ("a",)), _step(1, plan.candidates[2], "regressed", ("a",)))
    outcome = search.Outcome("budget", steps[-1], left=plan.candidates[:3])
    text = comment.markdown(hunt.Hunt(path, (hunt.Search("c", ("a",), outcome, steps),), (), {}, 3600.0, 3600.0))
    first, last = plan.candidates[0].label(), plan.candidates[2].label()
    assert "no culprit named (the budget ran out)" in text
    assert f"the budget (60 min) ran out after step 1; the first bad is one of {first} .. {last} (3 candidates)" in text


def test_a_commit_subject_is_inert_in_the_comment() -> None:
    """Mentions, references, HTML and emphasis of a subject do nothing."""
    assert comment.pull_request("Fix <b>@someone</b> *x* (#11234)") == "11234"
    assert comment.pull_request("Merge pull request #77 from a/b") == "77" and comment.pull_request("no PR") == ""
    assert comment.web_url("file:///tmp/standin") == "" and comment.web_url("https://u:***@github.com/a/b") == ""
    assert comment.web_url("https://github.com/dask/dask.git") == "https://github.com/dask/dask"


def test_search_measures_the_pivot_first_then_bisects_from_it() -> None:
    """`_middle`: the pivot while it is strictly between the ends and not skipped, the midpoint after."""
    assert search._middle(-1, 7, set(), pivot=2) == 2
    assert search._middle(2, 7, set(), pivot=2) == 4 and search._middle(-1, 7, {2}, pivot=2) == 3


def test_culprit_without_a_confirmation_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    Store(db)
    done = daskbench_cli("culprit", "--db", db, capsys=capsys)
    assert done.returncode == 2 and "give the confirmation to go on from: --group GROUP" in done.stderr
    done = daskbench_cli("culprit", "--group", "nosuch", "--db", db, capsys=capsys)
    assert done.returncode == 2 and "no confirmation 'nosuch'" in done.stderr


def test_a_bisection_starts_no_step_once_its_budget_is_used_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Step 0 took the whole budget: no further step starts; the outcome is ``budget`` with every candidate still
    possible, exit 3 as an undecided step's, and its closing line says where the first bad one may be."""
    plan = BisectPlan(("standin",), Candidate((("standin", "1.0"),)),
                      tuple(Candidate((("standin", f"1.{n}"),)) for n in range(1, 6)))  # fmt: skip
    measured: list[str] = []

    def step(self: search.Bisection, candidate: Candidate, good: str) -> search.Step:
        measured.append(candidate.label())
        self.done[candidate.label()] = _step(len(self.done), candidate, "regressed", ("a",))
        return self.done[candidate.label()]

    clock = iter([0.0, 100.0])
    monkeypatch.setattr(search.Bisection, "_step", step)
    monkeypatch.setattr(search.time, "monotonic", lambda: next(clock, 100.0))
    bisection = search.Bisection("b", None, "", [], lambda _c: "python", ("g", "b"), budget=60.0,  # type: ignore[arg-type]
                                 say=lambda _l: None, show=lambda _l: None)  # fmt: skip
    outcome = bisection.run(plan)
    assert measured == ["1.5"] and outcome.kind == "budget" and [c.label() for c in outcome.left] == [
        "1.1", "1.2", "1.3", "1.4", "1.5"]  # fmt: skip
    assert EXITS["budget"] == EXIT_UNDECIDED
    assert (
        "the budget was used up after step 0; no culprit named: the first bad is one of 1.1 .. 1.5 (5 candidates)"
        in (" ".join(search.outcome_lines(outcome, "b", 120)))
    )


def test_a_step_that_does_not_import_is_skipped_once_with_pythons_words(
    two: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment that built but cannot import a moved package: `InstallFailed` (the bisection skips it,
    as ``git bisect skip``), its reason kept for the comment, and not built again when asked a second time."""
    hunter = _hunter(two, tmp_path)
    built: list[str] = []

    def build(point: Any, described: str) -> str:
        built.append(described)
        points.check_imports(sys.executable, ["no-such-package-here"])
        return sys.executable

    monkeypatch.setattr(hunter, "_build", build)
    candidate = hunter.route.plan.candidates[0]
    for _ in range(2):
        with pytest.raises(envs.InstallFailed, match=r"it does not import .*ModuleNotFoundError"):
            hunter.python_of(candidate)
    assert len(built) == 1 and "no_such_package_here" in hunter.skipped[candidate.label()]
    found = hunt.Hunt(hunter.route, (), (), dict(hunter.skipped), 1.0, 60.0)
    assert f"- `{candidate.label()}`: it does not import" in comment.markdown(found)


def test_a_file_url_is_mirrored_as_a_local_clone_so_a_repository_kept_without_some_blobs_still_mirrors(
    tmp_path: Path,
) -> None:
    """A run installed from ``git+file://...`` (a local mirror, as measure/culprit-replay's nights are): the mirror
    is a local clone of that folder, which needs no repacking, so one kept without a blob of its history (as
    shallow snapshots of big repositories are) is still mirrored and its commits listed; over the URL, git's
    transport repacks and dies on the missing blob."""
    source = tmp_path / "dask"
    source.mkdir()
    git(source, "init", "-q")
    (source / "big.bin").write_text("x" * 1000)
    git(source, "add", "big.bin")
    git(source, "commit", "-q", "-m", "a big file")
    blob = git(source, "rev-parse", "HEAD:big.bin")
    (source / "small.txt").write_text("second")
    git(source, "add", "small.txt")
    git(source, "commit", "-q", "-m", "Second (#2)")
    first = git(source, "rev-parse", "HEAD")
    (source / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # the blob gone, as in a snapshot without it
    url = (source / ".git").as_uri().replace("dask", "d%61sk")  # percent-encoded, as PEP 610 records may be
    mirrored = envs.mirror(url, tmp_path / "mirrors", [first])
    assert envs.has_commit(mirrored, first)
