"""The report's summary sections, as HTML: the runs (store, counts, main settings, the
config), held-out evaluations side by side, and the alerts table. Text from a run is
escaped; `fmt` is how every value is shown (also used by rlvr.report.trajectories)."""

from __future__ import annotations

from html import escape
from typing import Any

from rlvr.report.charts import ALERT_COLORS, RUN_COLORS
from rlvr.report.data import RunData

__all__ = ["CONFIG_SUMMARY", "alerts_section", "evals_section", "fmt", "runs_section"]

CONFIG_SUMMARY = [  # (label, dotted key) shown in a run's header
    ("model", "model.name_or_path"),
    ("tasks", "tasks.source"),
    ("advantage", "algo.advantage"),
    ("policy loss", "algo.policy_loss"),
    ("group size", "algo.group_size"),
    ("KL coef", "algo.kl_coef"),
    ("steps", "train.steps"),
    ("prompts/step", "train.prompts_per_step"),
    ("lr", "train.lr"),
    ("rollout", "rollout.mode"),
    ("max turns", "rollout.max_turns"),
    ("max new tokens", "generation.max_new_tokens"),
    ("temperature", "generation.temperature"),
]


def fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return escape(str(v))


def _get(cfg: dict[str, Any], dotted: str) -> Any:
    cur: Any = cfg
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _last(run: RunData, name: str) -> float | None:
    return next((v for v in reversed(run.series.get(name, [])) if v is not None), None)


def runs_section(runs: list[RunData]) -> str:
    parts = []
    for ri, run in enumerate(runs):
        color = RUN_COLORS[ri % len(RUN_COLORS)]
        steps = f"{len(run.steps)} (steps {run.steps[0]}–{run.steps[-1]})" if run.steps else "none yet"
        facts = [
            ("store", escape(run.uri)),
            ("steps with metrics", steps),
            ("trajectories", f"{run.num_trajectories} ({run.num_flagged} flagged)"),
            ("alerts", str(len(run.alerts))),
            ("last reward/mean", fmt(_last(run, "reward/mean"))),
            ("last pass rate", fmt(_last(run, "reward/pass_rate"))),
        ]
        settings = []
        if run.config:
            for label, key in CONFIG_SUMMARY:
                v = _get(run.config, key)
                if v is not None:
                    settings.append((label, fmt(v)))
        rows = "<div class='cols'>" + "".join(
            "<table class='kv'>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in table) + "</table>"
            for table in (facts, settings)
            if table
        )
        rows += "</div>"
        cfg = ""
        if run.config_text:
            cfg = (
                f"<details class='config'><summary>config.yaml</summary><pre>{escape(run.config_text)}</pre></details>"
            )
        parts.append(
            f"<div class='run' id='run-{ri}'><h3><span class='swatch' style='background:{color}'></span>"
            f"{escape(run.name)}</h3>{rows}{cfg}</div>"
        )
    return "<h2>Runs</h2><div class='runs'>" + "".join(parts) + "</div>"


def _eval_label(e: dict[str, Any]) -> str:
    return f"{e['phase']} (step {e['step']})"


def evals_section(runs: list[RunData]) -> str:
    out = ["<h2>Held-out evaluation</h2>"]
    if not any(r.evals for r in runs):
        return out[0] + "<p class='muted'>No evaluations in the store yet.</p>"
    for run in runs:
        suites: dict[str, list[dict[str, Any]]] = {}
        for e in run.evals:  # the held-out split first, then each eval.sources suite
            suites.setdefault(str(e.get("suite") or ""), []).append(e)
        for suite, evals in sorted(suites.items()):
            title = escape(run.name) + (f" · {escape(suite)}" if suite else "")
            out.append(f"<div class='evalrun'><h3>{title}</h3>{_evals_table(evals)}</div>")
    return out[0] + "<div class='evalruns'>" + "".join(out[1:]) + "</div>"


def _evals_table(evals: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{escape(_eval_label(e))}</th>" for e in evals)
    first, last = evals[0], evals[-1]
    delta = len(evals) > 1

    def row(label: str, values: list[Any], d: float | None) -> str:
        cells = "".join(f"<td>{fmt(v)}</td>" for v in values)
        if delta:
            sign = "" if d is None else ("up" if d > 0 else "down" if d < 0 else "")
            cells += f"<td class='delta {sign}'>{'' if d is None else f'{d:+.4g}'}</td>"
        return f"<tr><th>{label}</th>{cells}</tr>"

    def diff(a: Any, b: Any) -> float | None:
        return b - a if isinstance(a, float) and isinstance(b, float) else None

    rows = [
        row("pass@1", [e["pass_at_1"] for e in evals], diff(first["pass_at_1"], last["pass_at_1"])),
        row("mean reward", [e["mean_reward"] for e in evals], diff(first["mean_reward"], last["mean_reward"])),
        row("tasks", [e["num_tasks"] for e in evals], None),
    ]
    for kind, title in (("by_domain", "domain"), ("by_difficulty", "difficulty")):
        keys = sorted({k for e in evals for k in e[kind]}, key=lambda k: (len(k), k))
        for k in keys:
            vals = [e[kind].get(k) for e in evals]
            rows.append(row(f"pass@1 · {title} {escape(k)}", vals, diff(first[kind].get(k), last[kind].get(k))))
    dhead = "<th>change (last − first)</th>" if delta else ""
    return f"<table class='grid evals'><tr><th></th>{head}{dhead}</tr>{''.join(rows)}</table>"


def alerts_section(runs: list[RunData]) -> str:
    rows = []
    for run in runs:
        for a in run.alerts:
            cat = str(a.get("category") or "")
            color = ALERT_COLORS.get(cat, "#7f7f7f")
            rows.append(
                f"<tr class='alert {escape(cat)}'>"
                + (f"<td>{escape(run.name)}</td>" if len(runs) > 1 else "")
                + f"<td>{int(a['step'])}</td><td><span class='dot' style='background:{color}'></span>"
                f"{escape(cat)}</td><td>{escape(str(a.get('rule') or ''))}</td>"
                f"<td>{escape(str(a.get('action') or ''))}</td><td>{fmt(a.get('value'))}</td>"
                f"<td>{fmt(a.get('threshold'))}</td><td>{escape(str(a.get('message') or ''))}</td></tr>"
            )
    if not rows:
        return "<h2>Alerts</h2><p class='muted'>No alerts.</p>"
    head = ("<th>run</th>" if len(runs) > 1 else "") + "".join(
        f"<th>{h}</th>" for h in ("step", "category", "rule", "action", "value", "threshold", "message")
    )
    return (
        f"<h2>Alerts <span class='count'>{len(rows)}</span></h2>"
        "<p class='muted'>Marked on every chart by a vertical line at the step "
        "(hover a point there for the message).</p>"
        f"<table class='grid alerts'><tr>{head}</tr>{''.join(rows)}</table>"
    )


def task_check_section(runs: list[RunData]) -> str:
    """What the task check before training (rlvr.tasks.check) quarantined in each run:
    tasks checked and quarantined per domain, then each quarantined task and its reasons."""
    parts = []
    for run in runs:
        tc = run.task_check
        if not tc:
            continue
        domains = tc.get("domains") or {}
        rows = "".join(
            f"<tr><td>{escape(str(d))}</td><td>{int(n.get('tasks', 0))}</td>"
            f"<td>{int(n.get('quarantined', 0))}</td></tr>"
            for d, n in sorted(domains.items())
            if isinstance(n, dict)
        )
        bad = "".join(
            f"<tr class='quarantined'><td>{escape(str(q.get('task_id')))}</td><td>{escape(str(q.get('domain')))}</td>"
            f"<td>{'<br>'.join(escape(str(p)) for p in q.get('problems') or [])}</td></tr>"
            for q in tc.get("quarantined") or []
            if isinstance(q, dict)
        )
        name = f"<h3>{escape(run.name)}</h3>" if len(runs) > 1 else ""
        n_bad = len(tc.get("quarantined") or [])
        parts.append(
            f"{name}<p>{int(tc.get('tasks', 0))} tasks checked before training, {n_bad} quarantined "
            "(left out of training and evaluation).</p>"
            f"<table class='grid'><tr><th>domain</th><th>checked</th><th>quarantined</th></tr>{rows}</table>"
            + (
                f"<table class='grid quarantine'><tr><th>task</th><th>domain</th><th>why</th></tr>{bad}</table>"
                if bad
                else ""
            )
        )
    if not parts:
        return "<h2>Task check</h2><p class='muted'>No task check recorded (tasks.check: off, or an older run).</p>"
    return "<h2>Task check</h2>" + "".join(parts)


def _domains_of(run: RunData) -> list[str]:
    from rlvr.report.charts import chart_of

    return sorted({chart_of(n)[3] for n in run.series if chart_of(n)[0] == "domain/*/reward/mean"})


def _ends(values: list[float | None]) -> tuple[float | None, float | None]:
    """The mean of the first and of the last quarter of the logged points."""
    got = [v for v in values if v is not None]
    if not got:
        return None, None
    q = max(len(got) // 4, 1)
    return sum(got[:q]) / q, sum(got[-q:]) / q


def _cell(v: float | None, digits: int = 3, cls: str = "") -> str:
    text = "-" if v is None else f"{v:.{digits}f}"
    c = f" class='{cls}'" if cls else ""
    return f"<td{c} data-v='{'' if v is None else repr(float(v))}'>{text}</td>"


def domains_section(runs: list[RunData]) -> str:
    """One row a domain of each run with several (sortable by any column): reward and pass
    rate over its first and last quarter of steps, the change, its episodes, the share of
    its groups that were informative, and its tasks quarantined by the task check."""
    parts = []
    for run in runs:
        domains = _domains_of(run)
        if len(domains) < 2:
            continue
        checked = (run.task_check or {}).get("domains") or {}
        rows = []
        for d in domains:
            r0, r1 = _ends(run.series.get(f"domain/{d}/reward/mean", []))
            p0, p1 = _ends(run.series.get(f"domain/{d}/reward/pass_rate", []))
            episodes = sum(v or 0.0 for v in run.series.get(f"domain/{d}/episodes", []))
            inf = [v for v in run.series.get(f"domain/{d}/informative", []) if v is not None]
            delta = None if r0 is None or r1 is None else r1 - r0
            cls = "delta up" if delta and delta > 0 else "delta down" if delta and delta < 0 else "delta"
            q = checked.get(d, {}).get("quarantined") if isinstance(checked.get(d), dict) else None
            rows.append(
                f"<tr><td>{escape(d)}</td>{_cell(r0)}{_cell(r1)}{_cell(delta, 3, cls)}{_cell(p0)}{_cell(p1)}"
                f"{_cell(episodes, 0)}{_cell(sum(inf) / len(inf) if inf else None)}{_cell(q, 0)}</tr>"
            )
        head = "".join(
            f"<th>{h}</th>"
            for h in (
                "domain",
                "reward, first",
                "reward, last",
                "change",
                "pass rate, first",
                "pass rate, last",
                "episodes",
                "informative",
                "quarantined",
            )
        )
        name = f"<h3>{escape(run.name)}</h3>" if len(runs) > 1 else ""
        table = f"<table class='grid sortable domains'><tr>{head}</tr>{''.join(rows)}</table>"
        parts.append(f"{name}<div class='scroll'>{table}</div>")
    if not parts:
        return ""
    return (
        "<h2>Domains</h2><p class='muted'>First and last: the means over the first and the last quarter of the "
        "steps that logged the domain. Click a column to sort.</p>" + "".join(parts)
    )
