"""The report page: one self-contained HTML file (plotly.js inlined once, no network on
load). Charts are built in the browser from a JSON description embedded in the page (the
dashboard sends the same description when steps land); everything else is plain HTML.
Every piece of text that comes from a run (model output, test messages, alert messages,
names) is escaped: model output is untrusted."""

from __future__ import annotations

import datetime
import json
import re
from html import escape
from typing import Any

from rlvr.report.data import RunData

GROUPS = {  # chart groups by metric prefix, in page order
    "reward": "Reward",
    "hack": "Reward hacking",
    "train": "Training",
    "rollout": "Rollout",
    "time": "Time and throughput",
    "sandbox": "Sandbox",
    "domain": "Per domain",
    "buffer": "Replay buffer",
    "other": "Other",
}
RUN_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
SERIES_COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
ALERT_COLORS = {"hacking": "#d62728", "collapse": "#ff7f0e", "infrastructure": "#7f7f7f"}
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


# ---- charts -------------------------------------------------------------------------


def chart_of(name: str) -> tuple[str, str, str, str]:
    """Where a metric is charted: (chart key, group, chart title, its label in the chart).
    Metrics that share a scale share a chart (reward and its components, hack signatures,
    sandbox statuses, one measure across domains, stage times, throughputs)."""
    parts = name.split("/")
    group = parts[0] if len(parts) > 1 and parts[0] in GROUPS else "other"
    rest = "/".join(parts[1:])
    if name == "reward/pass_rate":
        return name, group, "pass rate (share of trajectories passing every test)", "pass rate"
    if group == "reward":
        return "reward", group, "reward: total and per component", "total" if rest == "mean" else rest
    if group == "hack":
        return "hack", group, "hack rate: flagged share, overall and per signature", "any" if rest == "rate" else rest
    if group == "domain" and len(parts) >= 3:
        measure = "/".join(parts[2:])
        return f"domain/*/{measure}", group, f"{measure} per domain", parts[1]
    if name.startswith("sandbox/status/"):
        return "sandbox/status", group, "sandbox run statuses", name.removeprefix("sandbox/status/")
    if group == "time" and rest.endswith("per_s"):
        return "time/throughput", group, "throughput (tokens/s)", rest
    if group == "time" and rest.endswith("_s"):
        return "time/stages", group, "time per stage (s)", rest.removesuffix("_s")
    return name, group, name, rest or name


def _slug(key: str) -> str:
    return "chart-" + (re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-") or "x")


def _alert_text(run: RunData) -> dict[int, str]:
    """Per step, the alerts raised there as hover text (escaped: plotly reads some HTML)."""
    out: dict[int, list[str]] = {}
    for a in run.alerts:
        line = f"⚠ {a.get('rule') or '?'} ({a.get('action') or '?'}): {a.get('message') or ''}"
        out.setdefault(int(a["step"]), []).append(escape(line[:300]))
    return {s: "<br>" + "<br>".join(lines) for s, lines in out.items()}


def _alert_shapes(run: RunData, dash: str) -> list[dict[str, Any]]:
    """A vertical line at each step that raised an alert (one per step and category)."""
    seen: set[tuple[int, str]] = set()
    shapes = []
    for a in run.alerts:
        key = (int(a["step"]), str(a.get("category") or ""))
        if key in seen:
            continue
        seen.add(key)
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": key[0],
                "x1": key[0],
                "y0": 0,
                "y1": 1,
                "layer": "below",
                "opacity": 0.6,
                "line": {"color": ALERT_COLORS.get(key[1], "#7f7f7f"), "width": 1.5, "dash": dash},
            }
        )
    return shapes


def figures(runs: list[RunData]) -> list[dict[str, Any]]:
    """Every chart, in page order: {id, key, group, group_title, data, layout}. Each trace
    is one metric of one run with exactly one point per step that has metrics."""
    charts: dict[str, dict[str, Any]] = {}
    for run in runs:
        for name in run.series:
            key, group, title, label = chart_of(name)
            c = charts.setdefault(key, {"group": group, "title": title, "labels": []})
            if label not in c["labels"]:
                c["labels"].append(label)
    for c in charts.values():
        c["labels"].sort(key=lambda lab: (lab not in ("total", "any"), lab))
    order = list(GROUPS)
    keys = sorted(charts, key=lambda k: (order.index(charts[k]["group"]), k != "reward", k))
    alert_text = [_alert_text(r) for r in runs]
    all_steps = [s for r in runs for s in r.steps]
    few = bool(all_steps) and max(all_steps) - min(all_steps) <= 15
    ticks: dict[str, Any] = {"dtick": 1} if few else {"tickformat": "d"}
    out = []
    used_ids: set[str] = set()
    for key in keys:
        c = charts[key]
        single = len(c["labels"]) == 1
        data = []
        shapes: list[dict[str, Any]] = []
        for ri, run in enumerate(runs):
            members = sorted(
                (c["labels"].index(where[3]), where[3], name)
                for name in run.series
                if (where := chart_of(name))[0] == key
            )
            for mi, (li, label, name) in enumerate(members):
                if single:
                    trace_name = run.name if len(runs) > 1 else label
                    color, dash = RUN_COLORS[ri % len(RUN_COLORS)], "solid"
                else:
                    trace_name = label if len(runs) == 1 else f"{run.name} · {label}"
                    color, dash = SERIES_COLORS[li % len(SERIES_COLORS)], DASHES[ri % len(DASHES)]
                trace: dict[str, Any] = {
                    "type": "scatter",
                    "mode": "lines+markers" if len(run.steps) <= 60 else "lines",
                    "name": escape(trace_name),
                    "legendgroup": run.name,
                    "x": list(run.steps),
                    "y": list(run.series[name]),
                    "line": {"color": color, "dash": dash, "width": 2},
                    "marker": {"size": 5},
                    "connectgaps": False,
                    "meta": {"run": run.name, "metric": name},
                    "hovertemplate": "%{y:.4g}<extra>%{fullData.name}</extra>",
                }
                if mi == 0 and alert_text[ri]:  # the run's alerts, on hover of its first trace
                    trace["text"] = [alert_text[ri].get(s, "") for s in run.steps]
                    trace["hovertemplate"] = "%{y:.4g}%{text}<extra>%{fullData.name}</extra>"
                data.append(trace)
            shapes += _alert_shapes(run, DASHES[ri % len(DASHES)])
        cid = _slug(key)
        while cid in used_ids:
            cid += "-x"
        used_ids.add(cid)
        out.append(
            {
                "id": cid,
                "key": key,
                "group": c["group"],
                "group_title": GROUPS[c["group"]],
                "data": data,
                "layout": {
                    "title": {"text": escape(c["title"]), "font": {"size": 14}, "x": 0.02},
                    "height": 300,
                    "margin": {"l": 55, "r": 15, "t": 40, "b": 40},
                    "xaxis": {"title": {"text": "step", "standoff": 4}, "zeroline": False, **ticks},
                    "yaxis": {"zeroline": False, "automargin": True},
                    "hovermode": "x unified",
                    "showlegend": len(data) > 1,
                    "legend": {"orientation": "h", "y": -0.22, "font": {"size": 10}, "groupclick": "toggleitem"},
                    "shapes": shapes,
                    "paper_bgcolor": "#ffffff",
                    "plot_bgcolor": "#fafafa",
                },
            }
        )
    return out


# ---- sections -----------------------------------------------------------------------


def _fmt(v: Any, digits: int = 4) -> str:
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
            ("last reward/mean", _fmt(_last(run, "reward/mean"))),
            ("last pass rate", _fmt(_last(run, "reward/pass_rate"))),
        ]
        settings = []
        if run.config:
            for label, key in CONFIG_SUMMARY:
                v = _get(run.config, key)
                if v is not None:
                    settings.append((label, _fmt(v)))
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
        if not run.evals:
            continue
        out.append(f"<div class='evalrun'><h3>{escape(run.name)}</h3>")
        head = "".join(f"<th>{escape(_eval_label(e))}</th>" for e in run.evals)
        first, last = run.evals[0], run.evals[-1]
        delta = len(run.evals) > 1

        def row(label: str, values: list[Any], d: float | None, _delta: bool = delta) -> str:
            cells = "".join(f"<td>{_fmt(v)}</td>" for v in values)
            if _delta:
                sign = "" if d is None else ("up" if d > 0 else "down" if d < 0 else "")
                cells += f"<td class='delta {sign}'>{'' if d is None else f'{d:+.4g}'}</td>"
            return f"<tr><th>{label}</th>{cells}</tr>"

        def diff(a: Any, b: Any) -> float | None:
            return b - a if isinstance(a, float) and isinstance(b, float) else None

        rows = [
            row("pass@1", [e["pass_at_1"] for e in run.evals], diff(first["pass_at_1"], last["pass_at_1"])),
            row("mean reward", [e["mean_reward"] for e in run.evals], diff(first["mean_reward"], last["mean_reward"])),
            row("tasks", [e["num_tasks"] for e in run.evals], None),
        ]
        for kind, title in (("by_domain", "domain"), ("by_difficulty", "difficulty")):
            keys = sorted({k for e in run.evals for k in e[kind]}, key=lambda k: (len(k), k))
            for k in keys:
                vals = [e[kind].get(k) for e in run.evals]
                rows.append(row(f"pass@1 · {title} {escape(k)}", vals, diff(first[kind].get(k), last[kind].get(k))))
        dhead = "<th>change (last − first)</th>" if delta else ""
        out.append(f"<table class='grid evals'><tr><th></th>{head}{dhead}</tr>{''.join(rows)}</table></div>")
    return out[0] + "<div class='evalruns'>" + "".join(out[1:]) + "</div>"


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
                f"<td>{escape(str(a.get('action') or ''))}</td><td>{_fmt(a.get('value'))}</td>"
                f"<td>{_fmt(a.get('threshold'))}</td><td>{escape(str(a.get('message') or ''))}</td></tr>"
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


def traj_id(step: int, index: int, run_index: int = 0) -> str:
    """The element id of a trajectory: `traj-<step>-<index>` (later runs: `-run<k>` added)."""
    return f"traj-{step}-{index}" + (f"-run{run_index}" if run_index else "")


def _turn_labels(turns: list[dict[str, Any]]) -> list[str]:
    labels, attempts, users = [], 0, 0
    for t in turns:
        role = str(t.get("role") or "")
        if role == "assistant":
            attempts += 1
            labels.append(f"attempt {attempts}")
        elif role == "user":
            users += 1
            labels.append("prompt" if users == 1 else "feedback")
        else:
            labels.append(role or "?")
    return labels


def _pre(text: Any, cls: str = "") -> str:
    return f"<pre class='{cls}'>{escape(str(text))}</pre>" if text else ""


def trajectory_html(t: dict[str, Any], run_index: int = 0) -> str:
    flags = t["reward_flags"]
    tid = traj_id(int(t["step"]), int(t["index"]), run_index)
    cls = "traj flagged" if flags else "traj"
    passed = f" {t['exec_passed']}/{t['exec_total']}" if t.get("exec_total") is not None else ""
    summary = (
        f"<span class='where'>step {int(t['step'])} #{int(t['index'])}</span> "
        f"<span class='task'>{escape(str(t.get('task_id') or ''))}</span> "
        f"<span class='muted'>{escape(str(t.get('domain') or ''))}</span> "
        f"<span class='reward'>reward {_fmt(t.get('reward'))}</span>"
        + (f" <span class='exec'>{escape(str(t['exec_status']))}{passed}</span>" if t.get("exec_status") else "")
        + ("" if t.get("trained", True) else " <span class='muted'>dropped</span>")
        + (
            f" <span class='err'>error: {escape(str(t.get('error') or ''))[:200]}</span>"
            if t.get("status") == "error"
            else ""
        )
        + "".join(f" <span class='flag'>{escape(str(f))}</span>" for f in flags)
    )
    comps = "".join(
        f"<tr><th>{escape(k)}</th><td>{_fmt(v)}</td></tr>" for k, v in sorted(t["reward_components"].items())
    )
    meta = [
        ("total", _fmt(t.get("reward"))),
        ("advantage", _fmt(t.get("advantage"))),
        ("finish", escape(str(t.get("finish_reason") or ""))),
        (
            "tokens",
            f"{t.get('prompt_tokens')} prompt, {t.get('completion_tokens')} completion, "
            f"{t.get('trained_tokens')} trained",
        ),
        ("logprob mean/min", f"{_fmt(t.get('logprob_mean'))} / {_fmt(t.get('logprob_min'))}"),
        ("policy version", _fmt(t.get("policy_version"))),
        (
            "group",
            escape(str(t.get("group_id") or "")) + (f", sample {t['sample']}" if t.get("sample") is not None else ""),
        ),
    ]
    meta_rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in meta)
    turns = "".join(
        f"<div class='turn role-{escape(str(u.get('role') or ''))}'><div class='role'>{escape(label)}"
        f"<span class='muted'> {escape(str(u.get('role') or ''))}"
        + (f", {int(u['n_tokens'])} tokens" if u.get("n_tokens") else "")
        + f"</span></div><pre>{escape(str(u.get('content') or ''))}</pre></div>"
        for u, label in zip(t["turns"], _turn_labels(t["turns"]), strict=True)
    )
    tests = ""
    if t["tests"]:
        trs = "".join(
            f"<tr class='test {escape(str(x.get('status') or '').lower())}'>"
            f"<td>{escape(str(x.get('status') or ''))}</td>"
            f"<td><code>{escape(str(x.get('name') or ''))}</code></td><td>{escape(str(x.get('message') or ''))}</td>"
            f"<td>{_fmt(x.get('duration_s'), 3)}</td></tr>"
            for x in t["tests"]
        )
        tests = (
            "<h4>Tests</h4><table class='grid tests'><tr><th>verdict</th><th>test</th><th>observed</th>"
            f"<th>s</th></tr>{trs}</table>"
        )
    details = ""
    if t.get("reward_details"):
        try:
            pretty = json.dumps(json.loads(t["reward_details"]), indent=1, ensure_ascii=False)
        except (TypeError, ValueError):
            pretty = str(t["reward_details"])
        details = f"<h4>Reward details</h4>{_pre(pretty)}"
    execution = "".join(
        f"<h4>{label}</h4>{_pre(t.get(col))}"
        for label, col in (("Sandbox error", "exec_error"), ("stdout", "exec_stdout"), ("stderr", "exec_stderr"))
        if t.get(col)
    )
    return (
        f"<details class='{cls}' id='{tid}'><summary>{summary}</summary><div class='body'>"
        f"<div class='cols'><div><h4>Reward breakdown</h4><table class='kv'>{comps}</table></div>"
        f"<div><h4>Trajectory</h4><table class='kv'>{meta_rows}</table></div></div>"
        f"<h4>Turns</h4>{turns}{tests}{execution}{details}</div></details>"
    )


def trajectories_section(runs: list[RunData]) -> str:
    out = ["<h2>Trajectories</h2>"]
    titles = {
        "flagged": "Flagged (a hack signature detected)",
        "best": "Best (highest reward)",
        "worst": "Worst (lowest reward)",
    }
    for ri, run in enumerate(runs):
        if len(runs) > 1:
            out.append(f"<div class='evalrun'><h3>{escape(run.name)}</h3>")
        shown: set[str] = set()
        for kind in ("flagged", "best", "worst"):
            rows = run.trajectories.get(kind, [])
            extra = (
                f" — the latest {len(rows)} of {run.num_flagged}"
                if kind == "flagged" and run.num_flagged > len(rows)
                else ""
            )
            out.append(f"<h4 class='kind'>{titles[kind]}{extra}</h4>")
            if not rows:
                out.append("<p class='muted'>None.</p>")
                continue
            for t in rows:
                tid = traj_id(int(t["step"]), int(t["index"]), ri)
                if tid in shown:  # already shown above: link to it
                    out.append(
                        f"<p class='seeabove'><a href='#{tid}'>step {int(t['step'])} #{int(t['index'])}</a> "
                        f"{escape(str(t.get('task_id') or ''))}, reward {_fmt(t.get('reward'))} (shown above)</p>"
                    )
                    continue
                shown.add(tid)
                out.append(trajectory_html(t, ri))
    return "".join(out)


def sections(runs: list[RunData]) -> dict[str, str]:
    """The page's non-chart sections, by element id (the dashboard replaces them live)."""
    return {
        "sec-runs": runs_section(runs),
        "sec-evals": evals_section(runs),
        "sec-alerts": alerts_section(runs),
        "sec-trajectories": trajectories_section(runs),
    }


def title_of(runs: list[RunData]) -> str:
    return "rlvr report: " + " vs ".join(r.name for r in runs)


def content(runs: list[RunData], version: str = "") -> dict[str, Any]:
    """Everything the page shows, as JSON-able data (the dashboard's /report.json)."""
    return {
        "version": version,
        "title": title_of(runs),
        "steps": {r.name: r.steps for r in runs},
        "last_step": max((r.steps[-1] for r in runs if r.steps), default=None),
        "figures": figures(runs),
        "sections": sections(runs),
    }


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element (no `</script>`, no `<!--`)."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_PLOTLY_JS: str | None = None


def plotly_js() -> str:
    """plotly.js from plotly's own offline bundle (read once per process)."""
    global _PLOTLY_JS
    if _PLOTLY_JS is None:
        from plotly.offline import get_plotlyjs

        _PLOTLY_JS = get_plotlyjs()
    return _PLOTLY_JS


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#f4f5f7}
header{background:#1f2937;color:#fff;padding:14px 24px;display:flex;align-items:baseline;gap:18px;flex-wrap:wrap}
header h1{font-size:19px;margin:0}
header .muted{color:#cbd5e1}
main{padding:8px 24px 40px;max-width:1500px;margin:auto}
h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d1d5db;padding-bottom:4px}
h3{font-size:15px;margin:14px 0 6px}
h4{font-size:13px;margin:12px 0 4px}
.muted{color:#6b7280}
.count{background:#fee2e2;color:#991b1b;border-radius:9px;padding:0 8px;font-size:13px}
.runs{display:flex;flex-wrap:wrap;gap:14px}
.run{background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:8px 14px}
.swatch,.dot{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:6px}
table{border-collapse:collapse;font-size:13px}
table.kv th{text-align:left;font-weight:500;color:#4b5563;padding:1px 12px 1px 0}
table.grid{background:#fff}
table.grid th,table.grid td{border:1px solid #e5e7eb;padding:3px 8px;text-align:left;vertical-align:top}
td.delta.up{color:#15803d;font-weight:600}
td.delta.down{color:#b91c1c;font-weight:600}
.group .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:10px}
.chart{background:#fff;border:1px solid #e5e7eb;border-radius:6px;min-height:300px}
details.traj{background:#fff;border:1px solid #e5e7eb;border-left:4px solid #9ca3af;border-radius:4px;margin:6px 0}
details.traj.flagged{border-left-color:#d62728}
details.traj>summary{cursor:pointer;padding:6px 10px;list-style-position:inside}
details.traj>summary span{margin-right:6px}
.where{font-weight:600}
.task{font-family:ui-monospace,monospace}
.flag{background:#fee2e2;color:#991b1b;border-radius:4px;padding:0 6px;font-size:12px}
.exec{background:#eef2ff;border-radius:4px;padding:0 6px;font-size:12px}
.err{color:#b91c1c}
.body{padding:4px 14px 12px}
.cols{display:flex;gap:40px;flex-wrap:wrap;align-items:flex-start}
.evalruns{display:flex;gap:30px;flex-wrap:wrap;align-items:flex-start}
.turn{margin:6px 0;border:1px solid #e5e7eb;border-radius:4px}
.turn .role{font-size:12px;font-weight:600;padding:2px 8px;background:#f3f4f6}
.turn.role-assistant .role{background:#e0f2fe}
.turn.role-user .role{background:#fef9c3}
pre{
  margin:0;
  padding:6px 8px;
  white-space:pre-wrap;
  word-break:break-word;
  max-height:420px;
  overflow:auto;
  font:12px/1.4 ui-monospace,monospace;
  background:#fcfcfc;
}
tr.test.passed td:first-child{color:#15803d}
tr.test.failed td:first-child,tr.test.error td:first-child,tr.test.timeout td:first-child{color:#b91c1c}
#live{font-size:12px}
"""

JS = """
(function () {
  var cfg = {responsive: true, displaylogo: false};
  var shown = [];
  function plotAll(figs) {
    var root = document.getElementById('charts');
    var ids = figs.map(function (f) { return f.id; });
    if (ids.join('\\n') !== shown.join('\\n')) {  // charts came or went: lay them out again
      root.querySelectorAll('.js-plotly-plot').forEach(function (d) { Plotly.purge(d); });
      root.innerHTML = '';
      figs.forEach(function (f) {
        var sec = document.getElementById('group-' + f.group);
        if (!sec) {
          sec = document.createElement('section');
          sec.id = 'group-' + f.group;
          sec.className = 'group';
          var h = document.createElement('h3');
          h.textContent = f.group_title;
          var g = document.createElement('div');
          g.className = 'grid';
          sec.appendChild(h);
          sec.appendChild(g);
          root.appendChild(sec);
        }
        var div = document.createElement('div');
        div.id = f.id;
        div.className = 'chart metric-chart';
        div.setAttribute('data-key', f.key);
        sec.querySelector('.grid').appendChild(div);
      });
      shown = ids;
    }
    if (!figs.length) root.innerHTML = '<p class="muted">No steps with metrics yet.</p>';
    figs.forEach(function (f) { Plotly.react(document.getElementById(f.id), f.data, f.layout, cfg); });
  }
  function update(c) {
    Object.keys(c.sections).forEach(function (id) {
      var el = document.getElementById(id);
      if (!el) return;
      var open = Array.prototype.map.call(el.querySelectorAll('details[open]'), function (d) { return d.id; });
      el.innerHTML = c.sections[id];
      open.forEach(function (i) { var d = i && document.getElementById(i); if (d) d.open = true; });
    });
    document.title = c.title;
    plotAll(c.figures);
    window.rlvrReport = c;
  }
  var data = JSON.parse(document.getElementById('report-data').textContent);
  window.rlvrReport = data;
  plotAll(data.figures);
  var live = document.body.getAttribute('data-live');
  if (!live) return;
  var interval = parseFloat(live) * 1000, version = data.version, status = document.getElementById('live');
  function poll() {
    fetch('data.json', {cache: 'no-store'}).then(function (r) { return r.json(); }).then(function (s) {
      status.textContent = 'live · last step ' + s.last_step + ' · checked ' + new Date().toLocaleTimeString();
      if (s.version === version) return null;
      return fetch('report.json', {cache: 'no-store'}).then(function (r) { return r.json(); }).then(function (c) {
        version = c.version;
        update(c);
        window.rlvrUpdates = (window.rlvrUpdates || 0) + 1;
      });
    }).catch(function () {
      status.textContent = 'live · the dashboard is not answering (stopped?) · ' + new Date().toLocaleTimeString();
    }).then(function () { setTimeout(poll, interval); });
  }
  setTimeout(poll, interval);
})();
"""


def page(data: dict[str, Any], *, live_interval_s: float | None = None) -> str:
    """The whole page for `content(...)`; with `live_interval_s` it polls the dashboard's
    data.json that often and redraws when the store changed."""
    live = f" data-live='{live_interval_s:g}'" if live_interval_s else ""
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    status = (
        "<span id='live' class='muted'>live</span>"
        if live_interval_s
        else f"<span class='muted'>generated {now}</span>"
    )
    embedded = {k: data[k] for k in ("version", "title", "steps", "last_step", "figures")}  # sections: in the body
    body = "".join(
        f"<section id='{sid}'>{html}</section>" for sid, html in data["sections"].items() if sid != "sec-trajectories"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{escape(data['title'])}</title><style>{CSS}</style>"
        f"<script>{plotly_js()}</script></head>"
        f"<body{live}><header><h1>{escape(data['title'])}</h1>{status}</header><main>"
        f"{body}<section id='sec-charts'><h2>Metrics per step</h2><div id='charts'></div></section>"
        f"<section id='sec-trajectories'>{data['sections']['sec-trajectories']}</section></main>"
        f"<script id='report-data' type='application/json'>{script_json(embedded)}</script>"
        f"<script>{JS}</script></body></html>"
    )
