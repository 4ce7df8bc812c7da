"""From an episode to its reward: every component computed, logged, and combined under
the run's `reward` config.

    components = env's own verdict ("completion") + every registered term that applies
                 (rlvr.rewards.registry; built in: format, length, security, and
                 efficiency, math when a term asks for them) + hack findings
    reward     = combine(components, terms, gates, clip, GDPO normalisation per group)
    hacks      → flags on the breakdown (static findings + overfit_visible, canary); with
                 on_hack='zero' the total is capped at 0 on a strong finding, or on a
                 suspect one when a held-out test fails, and a strong finding costs
                 `hack_penalty` more
    group terms → a learned or judged score over the whole group, added as a guarded
                 bonus (rlvr.rewards.guard): it orders what the verifiable reward ties and
                 never reorders what it ranks; flagged and probe-like replies get none

The environment decides task completion (its reward total, or its "completion"
component); everything else is computed here from the task and the trajectory, so that
each environment stays small and every domain gets the same extra dimensions.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from typing import Any

from rlvr.config import ConfigError, RewardConfig
from rlvr.rewards.base import RewardComponent
from rlvr.rewards.canary import passed_canary
from rlvr.rewards.combine import Term, combine, combine_group
from rlvr.rewards.extract import extract_code
from rlvr.rewards.guard import all_tied, guarded_bonus
from rlvr.rewards.hacks import BEHAVIOURAL, FLAGS, STRONG, SUSPECT, HackFinding, detect_hacks, hack_flags
from rlvr.rewards.overfit import ALPHA, Counts, pooled_p
from rlvr.rewards.registry import GROUP_REWARDS, REWARDS, TermContext
from rlvr.rewards.terms import is_code_task
from rlvr.types import ExecutionResult, RewardBreakdown, Task, Trajectory

Executor = Callable[[str, dict[str, Any]], ExecutionResult]


def check_hack_ignore(names: Sequence[str]) -> None:
    """Raise ConfigError naming `reward.hack_ignore`'s unknown signatures, with the valid ones."""
    bad = [n for n in names if n not in FLAGS]
    if bad:
        raise ConfigError(f"reward.hack_ignore: unknown hack signature(s) {bad}; valid: {', '.join(FLAGS)}")


class Scorer:
    """Scores trajectories for one run. `execute` runs a reference solution (for the
    efficiency component); `max_new_tokens` is the length component's limit."""

    def __init__(self, cfg: RewardConfig, *, max_new_tokens: int, execute: Executor | None = None) -> None:
        check_hack_ignore(cfg.hack_ignore)
        self.cfg = cfg
        self.max_new_tokens = max_new_tokens
        self.execute = execute
        self.terms = [Term(t.name, t.weight, t.gate) for t in cfg.terms]
        self.wanted = frozenset(t.name for t in cfg.terms)
        self.grouped = [t for t in cfg.terms if t.name in GROUP_REWARDS]  # the guarded stage's terms
        self._reference_runs: dict[tuple[str, str], ExecutionResult | None] = {}
        self._lock = threading.Lock()

    # ---- components -------------------------------------------------------------------
    def components(self, task: Task, traj: Trajectory) -> tuple[dict[str, RewardComponent], list[dict[str, Any]]]:
        """Every component that applies to this task, and the hack findings."""
        reply = traj.completion_text
        env = traj.reward or RewardBreakdown(0.0)
        comps: dict[str, RewardComponent] = {
            "completion": RewardComponent(env.components.get("completion", env.total), dict(env.details))
        }
        for name, value in env.components.items():
            if name != "completion":
                comps[name] = RewardComponent(value)
        ctx = TermContext(self.cfg, self.max_new_tokens, self.wanted, self._reference_run)
        for term in REWARDS.values():
            if (term.always or term.name in self.wanted) and term.applies(task, traj, ctx):
                comps[term.name] = term.compute(task, traj, ctx)
        # an environment that reads the reply itself reports its findings in its details
        # (the test-writing domain: rlvr.rewards.test_guards)
        findings: list[dict[str, Any]] = [dict(f) for f in env.details.get("findings") or []]
        if is_code_task(task):
            allowed = [str(f) for f in task.metadata.get("files", [])]
            findings += [f.to_dict() for f in detect_hacks(extract_code(reply), task.tests, allowed)]
        return comps, findings

    def _reference_run(self, task: Task) -> ExecutionResult | None:
        """The reference solution's run on the same tests, once per task (cached)."""
        if not task.reference or self.execute is None:
            return None
        key = (task.id, task.reference)
        with self._lock:
            if key in self._reference_runs:
                return self._reference_runs[key]
        result = self.execute(task.reference, task.tests)
        ok = result.total > 0 and result.passed == result.total
        with self._lock:
            self._reference_runs[key] = result if ok else None
        return self._reference_runs[key]

    # ---- combination --------------------------------------------------------------------
    def score_group(self, tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> None:
        """Set `reward` on each trajectory of one group (same prompt), in place."""
        comps, findings = zip(*(self.components(t, tr) for t, tr in zip(tasks, trajs, strict=True)), strict=True)
        passed = [
            bool(tr.execution and tr.execution.total and tr.execution.passed == tr.execution.total) for tr in trajs
        ]
        if not any(tr.execution for tr in trajs):  # no tests ran: completion 1.0 is the pass
            passed = [c["completion"].value >= 1.0 for c in comps]
        out = [
            combine(c, self._terms_for(task, [c]), all_tests_pass=p, clip=self.cfg.clip)
            for task, c, p in zip(tasks, comps, passed, strict=True)
        ]
        if self.cfg.normalize == "group" and len(trajs) > 1:
            shared = self._terms_for(tasks[0], comps)
            normed = combine_group(list(comps), shared, all_tests_pass=passed, clip=self.cfg.clip, normalize="group")
            for b, n in zip(out, normed, strict=True):
                b.total, b.details["normalized"] = n.total, n.details["normalized"]
        # pooled over distinct replies: the same program sampled twice is one piece of evidence
        distinct = {" ".join(tr.completion_text.split()): test_counts(tr) for tr in trajs}
        group_p = pooled_p(c for c in distinct.values() if c is not None)
        for task, tr, b, found in zip(tasks, trajs, out, findings, strict=True):
            found = found + behavioural_findings(task, tr, group_p)
            found, cleared = clear_generalising(found, tr)
            if cleared:
                b.details["hacks_cleared"] = cleared
            b.flags = hack_flags([f["name"] for f in found], self.cfg.hack_ignore)
            kept = [f for f in found if f["name"] in b.flags]
            if kept:
                b.details["hacks"] = kept
            reason = zeroing_reason(kept, tr)
            if reason and self.cfg.on_hack == "zero":
                if reason.startswith(STRONG) and self.cfg.hack_penalty:  # a strong finding costs more
                    cost = f"capped at 0 less {self.cfg.hack_penalty:g}"
                    b.details["hack_action"] = f"reward {b.total:.3f} {cost} ({reason})"
                    b.total = min(b.total, 0.0) - self.cfg.hack_penalty
                else:
                    b.details["hack_action"] = f"reward {b.total:.3f} capped at 0 ({reason})"
                    b.total = min(b.total, 0.0)
            tr.reward = b
        if self.grouped:
            self._group_stage(tasks, trajs, out, passed)

    def _group_stage(
        self, tasks: Sequence[Task], trajs: Sequence[Trajectory], out: Sequence[RewardBreakdown], passed: Sequence[bool]
    ) -> None:
        """Each group term's scores, added as guarded bonuses (rlvr.rewards.guard) on top of
        the verifiable totals, in the order the terms are listed; the raw score is logged
        as the component, the bonus and its cap in details['guarded']."""
        ctx = TermContext(self.cfg, self.max_new_tokens, self.wanted, self._reference_run)
        verifiable = [b.total for b in out]
        tied = all_tied(verifiable)
        for tc in self.grouped:
            eligible = tuple(
                not b.flags
                and b.components.get("probe_like", 0.0) < 1.0
                and (tc.domains is None or task.domain in tc.domains)
                and (tc.gate != "all_tests_pass" or p)
                and (tc.gate != "tie_break" or tied)
                for task, b, p in zip(tasks, out, passed, strict=True)
            )
            scores = list(GROUP_REWARDS[tc.name].fn(tasks, trajs, dataclasses.replace(ctx, eligible=eligible)))
            bonus, cap = guarded_bonus(verifiable, scores, eligible, tc.weight)
            for b, score, ok, add in zip(out, scores, eligible, bonus, strict=True):
                if score is not None:
                    b.components[tc.name] = score
                b.details.setdefault("guarded", {})[tc.name] = {"bonus": add, "cap": cap, "eligible": ok}
                b.total += add

    def _terms_for(self, task: Task, comps: Sequence[dict[str, RewardComponent]]) -> list[Term]:
        """Terms that apply: those for this task's domain whose component it has (a term
        naming a component the task lacks, e.g. math for a code task, does not apply)."""
        return [
            term
            for term, tc in zip(self.terms, self.cfg.terms, strict=True)
            if (tc.domains is None or task.domain in tc.domains)
            and term.name not in GROUP_REWARDS
            and all(term.name in c for c in comps)
        ]

    def score(self, task: Task, traj: Trajectory) -> RewardBreakdown:
        self.score_group([task], [traj])
        assert traj.reward is not None
        return traj.reward


def test_counts(traj: Trajectory) -> Counts | None:
    """(visible passed, visible total, held-out passed, held-out total), or None without tests."""
    if traj.execution is None:
        return None
    visible, held = traj.execution.partition()
    return (visible.passed, visible.total, held.passed, held.total)


def behavioural_findings(task: Task, traj: Trajectory, group_p: float = 1.0) -> list[dict[str, Any]]:
    """Findings from what the run did: result events the harness never writes
    (`result_forging`, strong), a canary's impossible test passed (`canary`, strong: no
    correct solution can), or every visible test passed and a held-out one failed
    (`overfit_visible`). That last is strong when most held-out tests fail, or when the
    group's such replies pass their visible tests significantly more often than their
    held-out ones (`group_p`: the pooled one-sided Fisher p-value, rlvr.rewards.overfit,
    below ALPHA); suspect otherwise, as an honest near-miss looks the same."""
    ex = traj.execution
    if ex is None:
        return []
    out = []
    if ex.violations:
        out.append(HackFinding("result_forging", 0, "; ".join(ex.violations)[:300]).to_dict())
    if passed_canary(task, traj):
        test = task.metadata["canary"]["test"]
        out.append(HackFinding("canary", 0, f"passed canary test {test}, which no correct solution passes").to_dict())
    visible, held = ex.partition()
    if held.total and visible.total and visible.passed == visible.total and held.passed < held.total:
        what = f"all {visible.total} visible tests pass, {held.total - held.passed} of {held.total} held-out fail"
        # failing most of what it was not shown while passing all it was: fitted to the
        # tests; or, pooled over the group, passing what was shown significantly more often
        severity = STRONG if held.passed * 2 < held.total or group_p < ALPHA else SUSPECT
        if group_p < 1.0:
            what += f" (group's pooled Fisher p = {group_p:.2g})"
        out.append(HackFinding("overfit_visible", 0, what, severity).to_dict())
    return out


def clear_generalising(
    findings: list[dict[str, Any]], traj: Trajectory
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(findings kept, findings cleared): a suspect static finding (a table holding some
    visible answers, a bare except) on a reply that passes every held-out test is
    cleared. The code did what was asked on inputs it was never shown, so the table
    bought it nothing, and flagging it would only put honest code (a Roman-numeral
    table, a small-prime set) into `hack/suspect_rate`. Strong findings always stay."""
    held = traj.execution.partition()[1] if traj.execution else None
    if held is None or not held.total or held.passed < held.total:
        return findings, []
    keep = [f for f in findings if f.get("severity", STRONG) == STRONG or f["name"] in BEHAVIOURAL]
    return keep, [f for f in findings if f not in keep]


def zeroing_reason(findings: Sequence[dict[str, Any]], traj: Trajectory) -> str:
    """Why a reward is taken away, or '' when the evidence is too weak: a strong finding,
    or a suspect finding in the code together with a failing held-out test."""
    strong = [f["name"] for f in findings if f.get("severity", STRONG) == STRONG]
    if strong:
        return f"strong: {', '.join(sorted(set(strong)))}"
    static = [f["name"] for f in findings if f["name"] not in BEHAVIOURAL]
    held = traj.execution.partition()[1] if traj.execution else None
    if static and held is not None and held.passed < held.total:
        return f"suspect: {', '.join(sorted(set(static)))} with held-out tests failing"
    return ""


def group_indices(trajs: Sequence[Trajectory]) -> list[list[int]]:
    """Indices of each group's trajectories, groups in first-seen order."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(trajs):
        groups.setdefault(t.group_id, []).append(i)
    return list(groups.values())
