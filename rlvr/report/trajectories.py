"""The report's trajectories section: the flagged, best and worst trajectories of each
run, each a collapsible block with its reward breakdown, turns, test verdicts and sandbox
output. Everything in it comes from the model or its execution and is escaped."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from rlvr.report.data import RunData
from rlvr.report.tables import fmt

__all__ = ["traj_id", "trajectories_section", "trajectory_html"]


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
        f"<span class='reward'>reward {fmt(t.get('reward'))}</span>"
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
        f"<tr><th>{escape(k)}</th><td>{fmt(v)}</td></tr>" for k, v in sorted(t["reward_components"].items())
    )
    meta = [
        ("total", fmt(t.get("reward"))),
        ("advantage", fmt(t.get("advantage"))),
        ("finish", escape(str(t.get("finish_reason") or ""))),
        (
            "tokens",
            f"{t.get('prompt_tokens')} prompt, {t.get('completion_tokens')} completion, "
            f"{t.get('trained_tokens')} trained",
        ),
        ("logprob mean/min", f"{fmt(t.get('logprob_mean'))} / {fmt(t.get('logprob_min'))}"),
        ("policy version", fmt(t.get("policy_version"))),
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
            f"<td>{fmt(x.get('duration_s'), 3)}</td></tr>"
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
                        f"{escape(str(t.get('task_id') or ''))}, reward {fmt(t.get('reward'))} (shown above)</p>"
                    )
                    continue
                shown.add(tid)
                out.append(trajectory_html(t, ri))
    return "".join(out)
