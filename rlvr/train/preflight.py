"""What a run needs, checked before anything expensive: plugins import, every task reads
and suits its domain's environment (file, line and field named otherwise), the split
leaves tasks to train and to evaluate, and the model name resolves to something
loadable. `rlvr train` and `rlvr eval` call `check_run` before a model is loaded or a
run directory is created, so a mistake costs seconds, not minutes, and leaves nothing
behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from rlvr.config import ConfigError, RunConfig, load_plugins
from rlvr.envs.base import ENVS, check_task, env_class, env_name
from rlvr.envs.settings import check_reward
from rlvr.envs.task_check import check_salt, check_task_set
from rlvr.rollout.model_names import check_model
from rlvr.rollout.registry import check_engine_kind
from rlvr.tasks import TaskLoadError, load_tasks, pick_eval_tasks, split_tasks
from rlvr.tasks.check import CheckReport, VerdictCache, default_cache_dir
from rlvr.trace.alerts import check_alert_rules
from rlvr.types import Task

_read: dict[tuple[object, ...], list[Task]] = {}  # the last task set read, by source and domain records
_checked: dict[tuple[object, ...], CheckReport] = {}  # the last task check, by config and task set
_told: set[tuple[object, ...]] = set()


@dataclass
class RunInputs:
    """The tasks of a checked run: the training split and the held-out ones it evaluates."""

    train_tasks: list[Task]
    eval_tasks: list[Task]
    suites: dict[str, list[Task]] = field(default_factory=dict)  # eval.sources, by suite name
    task_check: CheckReport | None = None  # tasks.check's verdicts (None when off)


def suite_name(source: str) -> str:
    """A suite's name in metrics and tables: `bundled:humaneval` -> humaneval, a file -> its
    stem, `hf:DIR:SPLIT` -> the directory's name and the split; lowercase, anything but
    letters, digits and _ made _."""
    if source.startswith("bundled:"):
        name = source.split(":", 1)[1]
    elif source.startswith("hf:"):
        path, _, split = source[3:].partition(":")
        name = "_".join(p for p in (Path(path).name, split) if p)
    else:
        name = Path(source).stem
    return re.sub(r"[^a-z0-9_]", "_", name.lower()) or "suite"


def check_names(cfg: RunConfig) -> None:
    """The names a config gives that the packages above the config own (reward terms and
    hack signatures, the engine, alert rules), checked against them with plugins loaded: ConfigError
    naming the key and the valid names."""
    check_reward(cfg)
    check_engine_kind(cfg)
    check_alert_rules(cfg)


def check_run(
    cfg: RunConfig, *, evaluating: bool | None = None, model: str | None = None, check_model_name: bool = True
) -> RunInputs:
    """Raise ConfigError, TaskLoadError or ModelLoadError naming the problem, or return
    the run's tasks. `evaluating`: whether held-out tasks are needed (default: when the
    config evaluates before or after training); `model`: the model actually to be loaded
    (a checkpoint's, for `rlvr eval --checkpoint`), default the config's;
    `check_model_name` False leaves the model and device out (not known yet). Called
    twice for one run (by the CLI before torch is imported, then by the run's assembly),
    the tasks are read once."""
    load_plugins(cfg)
    check_names(cfg)
    tc = cfg.tasks
    tasks = run_tasks(cfg)
    check_ready(tasks)
    from rlvr.trace.sinks import check_sinks

    check_sinks(cfg)  # before the run directory exists: a missing extra leaves nothing behind
    if check_model_name:
        check_model(model or cfg.model.name_or_path)
        if cfg.model.device != "cpu":  # a GPU must exist (asking torch; the CPU always does)
            from rlvr.rollout.models import resolve_device

            try:
                resolve_device(cfg.model.device)
            except RuntimeError as e:
                raise ConfigError(str(e)) from None
    report = checked_tasks(cfg, tasks)  # the one check that runs replies: after the quick ones
    if report is not None:
        out = report.quarantined_ids()
        tasks = [t for t in tasks if t.id not in out]
    train, held_out = split_tasks(tasks, tc.eval_fraction)
    caps = {d.name: d.eval_tasks for d in cfg.domains if d.eval_tasks is not None}
    evals = pick_eval_tasks(held_out, cfg.eval.num_tasks, caps=caps)
    if evaluating is None:
        evaluating = cfg.eval.before_training or cfg.eval.after_training
        if not train:
            raise ConfigError(
                f"tasks: all {len(tasks)} tasks of {task_set_name(cfg)} fall in the held-out split "
                f"(tasks.eval_fraction {tc.eval_fraction}): nothing is left to train on"
            )
    if evaluating and not evals:
        raise ConfigError(
            f"tasks: {len(tasks)} task(s) of {task_set_name(cfg)} leave none held out for evaluation at "
            f"tasks.eval_fraction {tc.eval_fraction}: add tasks, raise tasks.eval_fraction, or (to train "
            "without evaluating) set eval.before_training=false eval.after_training=false"
        )
    return RunInputs(train, evals, _suites(cfg) if evaluating else {}, report)


def task_set_name(cfg: RunConfig) -> str:
    """tasks.source and the domain records, as messages name the run's task set."""
    return "+".join([cfg.tasks.source] * (cfg.tasks.source != "none") + [d.name for d in cfg.domains])


def run_tasks(cfg: RunConfig) -> list[Task]:
    """The run's task set: tasks.source's tasks (none for 'none'), then each domain
    record's, relabelled as the record's domain and checked by its environment. Read once
    for a config's sources (the CLI and the run's assembly both ask). ConfigError for a
    record over an environment that is not registered or a task in two places;
    TaskLoadError for a task its environment refuses."""
    tc = cfg.tasks
    records = tuple((d.name, d.source, d.min_difficulty, d.max_difficulty) for d in cfg.domains)
    key = (tc.source, tc.min_difficulty, tc.max_difficulty, records)
    if key in _read:
        return list(_read[key])
    _read.clear()
    tasks = [] if tc.source == "none" else load_tasks(tc.source, tc.min_difficulty, tc.max_difficulty, check=check_task)
    where = dict.fromkeys((t.id for t in tasks), "tasks.source")
    for i, d in enumerate(cfg.domains):
        env = env_name(d.name)
        if env not in ENVS:
            raise ConfigError(
                f"domains[{i}].name: {d.name} runs in environment '{env}', which is not registered "
                f"(registered: {', '.join(sorted(ENVS))}; a plugin registers more)"
            )
        lo = tc.min_difficulty if d.min_difficulty is None else d.min_difficulty
        hi = tc.max_difficulty if d.max_difficulty is None else d.max_difficulty
        try:
            got = load_tasks(d.source, lo, hi)
        except TaskLoadError as e:
            raise TaskLoadError(f"domains[{i}].source: {e}") from None
        for t in got:
            if t.id in where:
                raise ConfigError(
                    f"domains[{i}].source: task '{t.id}' of {d.source} is also in {where[t.id]} "
                    "(a task belongs to one domain: drop it from one of them)"
                )
            where[t.id] = f"domains[{i}] ({d.name})"
            mine = replace(t, domain=d.name)
            try:
                check_task(mine)
            except ValueError as e:
                raise TaskLoadError(f"domains[{i}] ({d.name}): task '{t.id}': {e}") from None
            tasks.append(mine)
    _read[key] = tasks
    return list(tasks)


def check_sample(tasks: list[Task], per_domain: int) -> list[Task]:
    """Up to `per_domain` tasks of each domain, the same ones on every machine: those
    whose ids' SHA-256 sort first."""
    ranked = sorted(tasks, key=lambda t: hashlib.sha256(t.id.encode()).hexdigest())
    taken: dict[str, int] = {}
    out = []
    for t in ranked:
        if taken.get(t.domain, 0) < per_domain:
            taken[t.domain] = taken.get(t.domain, 0) + 1
            out.append(t)
    return out


@contextlib.contextmanager
def _rng_untouched() -> Iterator[None]:
    """The global random states (Python's, NumPy's and, when imported, torch's CPU one)
    as they were before the block."""
    import numpy as np

    state = random.getstate(), np.random.get_state()
    torch = sys.modules.get("torch")
    torch_state = torch.random.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        random.setstate(state[0])
        np.random.set_state(state[1])
        if torch is not None and torch_state is not None:
            torch.random.set_rng_state(torch_state)


def checked_tasks(cfg: RunConfig, tasks: list[Task]) -> CheckReport | None:
    """tasks.check: the verdicts on the run's tasks (all, or a sample of each domain),
    from the cache or the probes (rlvr.envs.task_check); ConfigError naming the first reason
    when a domain has more than half its checked tasks quarantined and
    tasks.allow_quarantine is off (a sampled domain is checked whole first). Once per task
    set and config in a process."""
    tc = cfg.tasks
    if tc.check == "off" or not tasks:
        return None
    salt = check_salt(cfg)
    key = (salt, tc.check, tc.check_sample, tuple(t.id for t in tasks))
    if key not in _checked:
        _checked.clear()
        cache = VerdictCache(default_cache_dir())
        with _rng_untouched():  # a run seeded before it starts draws the same, checked or cached
            if tc.check == "sample":
                report = sampled_check(tasks, tc.check_sample, cfg, cache)
            else:
                report = check_task_set(tasks, cfg, cache=cache)
        _checked[key] = report
    report = _checked[key]
    failing = report.failing_domains()
    if failing and not tc.allow_quarantine:
        d = failing[0]
        q, n = report.by_domain()[d]
        first = next(v for v in report.quarantined if v.domain == d)
        record = next((r for r in cfg.domains if r.name == d), None)
        source = tc.source if record is None else record.source
        lister = f"rlvr tasks check {tc.source}" if not cfg.domains else "rlvr tasks check --config CONFIG"
        raise ConfigError(
            f"tasks: {q} of {n} checked {d} tasks of {source} fail the task check (first, {first.task_id}: "
            f"{first.problems[0]}); `{lister}` lists them all; tasks.allow_quarantine=true trains on the rest"
        )
    if report.quarantined and key not in _told:
        _told.add(key)
        for line in widened_lines(report):
            print(f"task check: {line}", file=sys.stderr)
        print(
            f"task check: {len(report.quarantined)} of {len(report.verdicts)} checked tasks quarantined, left out "
            f"(first, {report.quarantined[0].task_id}: {report.quarantined[0].problems[0]})",
            file=sys.stderr,
        )
    return report


def sampled_check(
    tasks: list[Task],
    per_domain: int,
    cfg: RunConfig,
    cache: VerdictCache,
    *,
    refresh: bool = False,
    workers: int = 4,
) -> CheckReport:
    """The verdicts on `check_sample(tasks, per_domain)`, with each domain whose sample
    fails then checked whole: a few unlucky draws from a large domain must not stop a run
    that the rest of the domain would carry."""
    report = check_task_set(check_sample(tasks, per_domain), cfg, cache=cache, refresh=refresh, workers=workers)
    sampled = report.by_domain()
    widen = [d for d in report.failing_domains() if sampled[d][1] < sum(t.domain == d for t in tasks)]
    if not widen:
        return report
    done = {v.task_id for v in report.verdicts}
    rest = [t for t in tasks if t.domain in widen and t.id not in done]
    more = check_task_set(rest, cfg, cache=cache, refresh=refresh, workers=workers)
    return CheckReport(report.verdicts + more.verdicts, cached=report.cached + more.cached, widened=tuple(widen))


def widened_lines(report: CheckReport) -> list[str]:
    """One line a domain whose sample failed and that was then checked whole."""
    by = report.by_domain()
    return [f"{d}: the sample failed the task check; all {by[d][1]} tasks checked" for d in report.widened]


def check_ready(tasks: list[Task]) -> None:
    """What an environment needs beyond its tasks (a built repository, say) is there: an
    environment class may name a `preflight(tasks)` that reads, runs nothing, and raises
    ValueError naming what is missing; answered here as a ConfigError."""
    for domain in sorted({t.domain for t in tasks}):
        ready = getattr(env_class(domain), "preflight", None)
        if ready is None:
            continue
        try:
            ready([t for t in tasks if t.domain == domain])
        except ValueError as e:
            raise ConfigError(str(e)) from None


def _suites(cfg: RunConfig) -> dict[str, list[Task]]:
    suites: dict[str, list[Task]] = {}
    for source in cfg.eval.sources:
        name = suite_name(source)
        if name in suites:
            raise ConfigError(f"eval.sources: two sources are both named {name!r}")
        suites[name] = pick_eval_tasks(load_tasks(source, check=check_task), cfg.eval.num_tasks)
    return suites
