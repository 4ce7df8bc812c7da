"""The report page: one self-contained HTML file (plotly.js inlined once, no network on
load). Charts are built in the browser from a JSON description embedded in the page (the
dashboard sends the same description when steps land); everything else is plain HTML.
Every piece of text that comes from a run (model output, test messages, alert messages,
names) is escaped: model output is untrusted.

This module assembles the page (`content`, `page`, its CSS and script); the parts are in
rlvr.report.charts (figures), rlvr.report.tables (runs, evaluations, alerts, the task check) and
rlvr.report.trajectories, whose public names are re-exported here."""

from __future__ import annotations

import datetime
import json
from html import escape
from typing import Any

from rlvr.report.charts import ALERT_COLORS, DASHES, GROUPS, RUN_COLORS, SERIES_COLORS, chart_of, figures
from rlvr.report.data import RunData
from rlvr.report.tables import (
    CONFIG_SUMMARY,
    alerts_section,
    domains_section,
    evals_section,
    runs_section,
    task_check_section,
)
from rlvr.report.trajectories import traj_id, trajectories_section, trajectory_html

__all__ = [
    "ALERT_COLORS",
    "CONFIG_SUMMARY",
    "CSS",
    "DASHES",
    "GROUPS",
    "JS",
    "RUN_COLORS",
    "SERIES_COLORS",
    "alerts_section",
    "chart_of",
    "content",
    "domains_section",
    "evals_section",
    "figures",
    "page",
    "plotly_js",
    "runs_section",
    "script_json",
    "sections",
    "task_check_section",
    "title_of",
    "traj_id",
    "trajectories_section",
    "trajectory_html",
]


def sections(runs: list[RunData]) -> dict[str, str]:
    """The page's non-chart sections, by element id (the dashboard replaces them live)."""
    return {
        "sec-runs": runs_section(runs),
        "sec-evals": evals_section(runs),
        "sec-alerts": alerts_section(runs),
        "sec-domains": domains_section(runs),
        "sec-task-check": task_check_section(runs),
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
.chart.wide{grid-column:1/-1}
.scroll{max-height:460px;overflow:auto;display:inline-block}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[data-dir=down]::after{content:" \25BC"}
table.sortable th[data-dir=up]::after{content:" \25B2"}
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
        div.className = 'chart metric-chart' + (f.wide ? ' wide' : '');
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
  document.addEventListener('click', function (ev) {  // sortable tables: click a header
    var th = ev.target.closest && ev.target.closest('table.sortable th');
    if (!th) return;
    var table = th.closest('table'), col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var rows = Array.prototype.slice.call(table.querySelectorAll('tr')).slice(1);
    var down = th.getAttribute('data-dir') !== 'down';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('data-dir'); });
    th.setAttribute('data-dir', down ? 'down' : 'up');
    function key(r) {
      var c = r.children[col], v = c ? c.getAttribute('data-v') : null;
      if (v === null || v === '') return c ? c.textContent : '';
      return parseFloat(v);
    }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), numeric = typeof x === 'number' && typeof y === 'number';
      var d = numeric ? x - y : String(x).localeCompare(String(y));
      return down ? -d : d;
    });
    rows.forEach(function (r) { table.appendChild(r); });
  });
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
