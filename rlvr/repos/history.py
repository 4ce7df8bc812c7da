"""Tasks from a git repository's history, and tasks written by a user.

History (issue 32, 2b): a commit that changes the project's own modules and its tests
together is a fix with its tests. The task's unfixed tree is the repository's tree (at
the revision it was added at) with that commit's source change reverted (`git apply -R`
of the commit's diff for those modules, so later changes to the same files stay); the
tests stay as they are. FAIL_TO_PASS is every passing test that fails on the unfixed
tree, kept when between 1 and the cap fail; the commit's message is the task's issue text.
A commit that adds or deletes a module, or whose change no longer reverts cleanly onto
the tree, is skipped and counted.

Written by a user (2c): an issue text, the fixing revision (the unfixed tree reverts it,
as above) and the tests that must pass; those tests must be among the ones that fail on
the unfixed tree and pass on the pristine one, or the task is refused with the reason.

Both are checked by the same oracle as mined tasks before they are kept.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.repos.coverage import is_library_file, is_test_file
from rlvr.repos.mine import RepoTask
from rlvr.repos.source import RepoError, git, last_line, parse_source
from rlvr.repos.store import Repo
from rlvr.repos.suite import SUITE_LIMITS, Baseline, run_suite
from rlvr.sandbox import SandboxPool


def git_dir(repo: Repo) -> tuple[str, str]:
    """(the git repository's path, the commit the cached tree is) of a repository added
    from git; RepoError for one added otherwise (an sdist or a directory has no history)."""
    if repo.kind != "git":
        raise RepoError(f"{repo.name} was added from a {repo.kind}: only a git repository has history")
    return parse_source(repo.source).path, repo.digest


@dataclass
class Change:
    commit: str
    message: str
    modules: list[str]  # the project's own modules the commit changed
    tests: list[str]  # test files it changed


def fix_commits(path: str, rev: str, limit: int = 200) -> tuple[list[Change], Counter[str]]:
    """Commits reachable from `rev` (first parent, no merges, newest first) that change
    modules and tests together; the rest counted by why they were passed over."""
    log = git(path, "log", "--first-parent", "--no-merges", f"-n{limit}", "--format=%H", rev)
    out: list[Change] = []
    skipped: Counter[str] = Counter()
    for commit in log.split():
        status = git(path, "show", "--no-renames", "--name-status", "--format=", commit)
        rows = [ln.split("\t") for ln in status.splitlines() if ln.strip()]
        modules = [p for s, p in rows if is_library_file(p)]
        tests = [p for s, p in rows if is_test_file(p)]
        if not modules or not tests:
            skipped["not source and tests together"] += 1
            continue
        if any(s != "M" for s, p in rows if is_library_file(p)):
            skipped["adds or deletes a module"] += 1
            continue
        message = git(path, "show", "-s", "--format=%B", commit).strip()
        out.append(Change(commit, message, sorted(modules), sorted(tests)))
    return out, skipped


def reverted(repo: Repo, path: str, commit: str, modules: Sequence[str]) -> dict[str, str]:
    """The cached tree's `modules` with `commit`'s change to them reverted; RepoError when
    the reverse patch does not apply (the code moved on since)."""
    diff = git(path, "diff", "--no-renames", f"{commit}^", commit, "--", *modules)
    with tempfile.TemporaryDirectory() as tmp:
        for m in modules:
            dest = Path(tmp) / m
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes((Path(repo.tree) / m).read_bytes())
        done = subprocess.run(
            ["git", "apply", "-R", "--whitespace=nowarn", "-"], cwd=tmp, input=diff, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RepoError(f"commit {commit[:10]} does not revert cleanly onto the tree: {last_line(done.stderr)}")
        return {m: (Path(tmp) / m).read_text(encoding="utf-8") for m in modules}


def _task_id(repo: Repo, kind: str, key: str) -> str:
    return f"{repo.slug}/{kind}/{hashlib.sha1(f'{repo.digest}:{key}'.encode()).hexdigest()[:10]}"


def validate(
    repo: Repo, pool: SandboxPool, base: Baseline, broken: dict[str, str], cap: int
) -> tuple[str, list[str], dict[str, str]]:
    """Run the whole suite on the unfixed tree: (outcome, FAIL_TO_PASS, messages), outcome
    one of kept, survived (nothing failed), too_many, broken (the run did not end cleanly)."""
    run = run_suite(repo, pool, files=broken, limits=SUITE_LIMITS)
    if run.status != "ok":
        return "broken", [], {}
    failed = [t for t in base.passing if run.outcome(t) != "passed"]
    if not failed:
        return "survived", [], {}
    if len(failed) > cap:
        return "too_many", failed, {}
    return "kept", failed, {t: run.verdicts[t].message[-1000:] for t in failed if t in run.verdicts}


def _make(
    repo: Repo, base: Baseline, kind: str, commit: str, broken: dict[str, str], f2p: list[str], issue: str,
    messages: dict[str, str],
) -> RepoTask:  # fmt: skip
    return RepoTask(
        id=_task_id(repo, kind, commit),
        repo=repo.slug,
        source=repo.source,
        digest=repo.digest,
        file=sorted(broken)[0],
        mutations=[],
        fail_to_pass=f2p,
        covering=list(base.passing),
        pass_to_pass=len(base.passing) - len(f2p),
        operators=[kind],
        order=len(broken),
        messages=messages,
        kind=kind,
        broken=broken,
        issue=issue,
        commit=commit,
    )


@dataclass
class HistoryMined:
    tasks: list[RepoTask]
    outcomes: Counter[str] = field(default_factory=Counter)


def mine_history(
    repo: Repo, pool: SandboxPool, base: Baseline, cap_share: float = 0.2, limit: int = 200
) -> HistoryMined:
    """Tasks from the fix commits in the last `limit` commits of the repository's history."""
    path, rev = git_dir(repo)
    changes, skipped = fix_commits(path, rev, limit)
    out = HistoryMined([], Counter(skipped))
    cap = max(1, int(cap_share * len(base.passing)))
    for ch in changes:
        try:
            broken = reverted(repo, path, ch.commit, ch.modules)
        except RepoError:
            out.outcomes["does not revert cleanly"] += 1
            continue
        outcome, f2p, messages = validate(repo, pool, base, broken, cap)
        out.outcomes[outcome] += 1
        if outcome == "kept":
            out.tasks.append(_make(repo, base, "history", ch.commit, broken, f2p, ch.message, messages))
    return out


def user_task(repo: Repo, pool: SandboxPool, base: Baseline, fix: str, tests: Sequence[str], issue: str) -> RepoTask:
    """A user's task: the fixing revision `fix` (its change to the project's modules is
    reverted to make the unfixed tree), their issue text, and the tests that must pass."""
    path, _ = git_dir(repo)
    if not issue.strip():
        raise RepoError("a user task needs its issue text")
    if not tests:
        raise RepoError("a user task needs the tests that must pass once it is fixed")
    commit = git(path, "rev-parse", "--verify", f"{fix}^{{commit}}").strip()
    status = git(path, "show", "--no-renames", "--name-status", "--format=", commit)
    modules = [p for s, p in (ln.split("\t") for ln in status.splitlines() if ln.strip()) if is_library_file(p)]
    if not modules:
        raise RepoError(f"revision {fix} changes none of the project's modules: nothing to revert")
    unknown = [t for t in tests if t not in set(base.passing)]
    if unknown:
        raise RepoError(f"not in the passing set of {repo.name} (run on the fixed tree): {', '.join(unknown)}")
    broken = reverted(repo, path, commit, sorted(modules))
    outcome, f2p, messages = validate(repo, pool, base, broken, len(base.passing))
    missing = [t for t in tests if t not in set(f2p)]
    if outcome != "kept" or missing:
        why = f"these tests pass without the fix: {', '.join(missing)}" if missing else outcome
        raise RepoError(f"revision {fix}: the unfixed tree does not fail as stated ({why})")
    return _make(repo, base, "user", commit, broken, f2p, issue.strip(), messages)
