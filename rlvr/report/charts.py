"""The report's charts: which chart each metric goes on (`chart_of`) and every chart as a
plotly figure description (`figures`), drawn in the browser. Alerts are marked on every
chart and listed in the hover text of each run's first trace (escaped: plotly reads some
HTML)."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from rlvr.report.data import RunData

__all__ = ["ALERT_COLORS", "DASHES", "GROUPS", "RUN_COLORS", "SERIES_COLORS", "chart_of", "figures", "moved"]

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
        measure = "/".join(parts[-2:]) if parts[-2] in ("reward", "hack") else parts[-1]
        domain = "/".join(parts[1 : len(parts) - len(measure.split("/"))])  # a domain may hold '/': reasoning/gcd
        return f"domain/*/{measure}", group, f"{measure} per domain", domain
    for prefix, what in (("curriculum/domain_share/", "share of draws"), ("curriculum/domain_weight/", "draw weight")):
        if name.startswith(prefix) and len(name) > len(prefix):
            return prefix.rstrip("/"), "domain", f"{what} per domain (curriculum)", name.removeprefix(prefix)
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


HEATMAP_FROM = 9
"""A per-domain chart with this many domains or more is drawn as a heatmap (domain x
step), one per run, not as that many overlaid lines."""
HEATMAPS = ("domain/*/reward/mean", "domain/*/reward/pass_rate", "domain/*/informative", "curriculum/domain_share")
"""The per-domain measures drawn as heatmaps; with many domains the others are left to
the per-domain table."""
MOVERS = 6
"""With many domains, the domains whose reward moved most get a small chart each."""


def _per_domain(key: str) -> bool:
    return key.startswith("domain/*/") or key in ("curriculum/domain_share", "curriculum/domain_weight")


def moved(run: RunData, domain: str, measure: str = "reward/mean") -> float | None:
    """How much a domain's measure moved over the run: the mean of its last quarter of
    logged points minus the mean of its first quarter (None with fewer than 2 points)."""
    values = [v for v in run.series.get(f"domain/{domain}/{measure}", []) if v is not None]
    if len(values) < 2:
        return None
    q = max(len(values) // 4, 1)
    return sum(values[-q:]) / q - sum(values[:q]) / q


def _heatmap(run: RunData, key: str, title: str, many: bool) -> dict[str, Any]:
    names = {chart_of(name)[3]: name for name in run.series if chart_of(name)[0] == key}
    domains = sorted(names)
    bounded = key in ("domain/*/reward/pass_rate", "domain/*/informative")  # shares of 1; the rest: own scale
    trace: dict[str, Any] = {
        "type": "heatmap",
        "x": list(run.steps),
        "y": [escape(d) for d in domains],
        "z": [list(run.series[names[d]]) for d in domains],
        "colorscale": "Viridis",
        "hoverongaps": False,
        "xgap": 1,
        "ygap": 1,
        "meta": {"run": run.name, "metric": key},
        "hovertemplate": "%{y} · step %{x}: %{z:.3g}<extra></extra>",
        **({"zmin": 0, "zmax": 1} if bounded else {}),
    }
    return {
        "data": [trace] if domains else [],
        "title": f"{title} ({len(domains)} domains" + (f", {run.name})" if many else ")"),
        "height": max(300, 15 * len(domains) + 90),
    }


def figures(runs: list[RunData]) -> list[dict[str, Any]]:
    """Every chart, in page order: {id, key, group, group_title, data, layout}. Each trace
    is one metric of one run with exactly one point per step that has metrics. A
    per-domain chart of many domains (`HEATMAP_FROM`) is a heatmap per run instead, wide
    (`wide`: true), and the domains whose reward moved most get a small chart each."""
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

    def add(key: str, group: str, data: list[dict[str, Any]], layout: dict[str, Any], wide: bool = False) -> None:
        cid = _slug(key)
        while cid in used_ids:
            cid += "-x"
        used_ids.add(cid)
        fig = {"id": cid, "key": key, "group": group, "group_title": GROUPS[group], "data": data, "layout": layout}
        out.append(fig | ({"wide": True} if wide else {}))

    def layout(title: str, shapes: list[dict[str, Any]], legend: bool, height: int = 300) -> dict[str, Any]:
        return {
            "title": {"text": escape(title), "font": {"size": 14}, "x": 0.02},
            "height": height,
            "margin": {"l": 55, "r": 15, "t": 40, "b": 40},
            "xaxis": {"title": {"text": "step", "standoff": 4}, "zeroline": False, **ticks},
            "yaxis": {"zeroline": False, "automargin": True},
            "hovermode": "x unified",
            "showlegend": legend,
            "legend": {"orientation": "h", "y": -0.22, "font": {"size": 10}, "groupclick": "toggleitem"},
            "shapes": shapes,
            "paper_bgcolor": "#ffffff",
            "plot_bgcolor": "#fafafa",
        }

    def movers(run: RunData, ri: int, labels: list[str]) -> None:
        ranked = sorted(((abs(m), d, m) for d in labels if (m := moved(run, d)) is not None), reverse=True)
        for _, d, m in ranked[:MOVERS]:
            name = f"domain/{d}/reward/mean"
            trace = {
                "type": "scatter",
                "mode": "lines+markers" if len(run.steps) <= 60 else "lines",
                "name": escape(d),
                "x": list(run.steps),
                "y": list(run.series[name]),
                "line": {"color": RUN_COLORS[ri % len(RUN_COLORS)], "width": 2},
                "marker": {"size": 4},
                "connectgaps": False,
                "meta": {"run": run.name, "metric": name},
                "hovertemplate": "%{y:.4g}<extra>%{fullData.name}</extra>",
            }
            title = f"reward: {d} (moved {m:+.3f})" + (f" · {run.name}" if len(runs) > 1 else "")
            add(f"domain/moved/{run.name}/{d}", "domain", [trace], layout(title, [], False, 220))

    for key in keys:
        c = charts[key]
        if _per_domain(key) and len(c["labels"]) >= HEATMAP_FROM:
            for ri, run in enumerate(runs if key in HEATMAPS else []):  # the others: in the per-domain table
                h = _heatmap(run, key, c["title"], len(runs) > 1)
                if h["data"]:
                    lay = layout(h["title"], _alert_shapes(run, DASHES[ri % len(DASHES)]), False, h["height"])
                    lay["hovermode"] = "closest"
                    add(key + ("" if len(runs) == 1 else f" · {run.name}"), c["group"], h["data"], lay, wide=True)
                if key == "domain/*/reward/mean":
                    movers(run, ri, c["labels"])
            continue
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
        add(key, c["group"], data, layout(c["title"], shapes, len(data) > 1))
    return out
