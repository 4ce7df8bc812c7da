"""The report's charts: which chart each metric goes on (`chart_of`) and every chart as a
plotly figure description (`figures`), drawn in the browser. Alerts are marked on every
chart and listed in the hover text of each run's first trace (escaped: plotly reads some
HTML)."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from rlvr.report.data import RunData

__all__ = ["ALERT_COLORS", "DASHES", "GROUPS", "RUN_COLORS", "SERIES_COLORS", "chart_of", "figures"]

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
