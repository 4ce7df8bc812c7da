"""`rlvr report` and `rlvr dashboard` (docs/report.md).

rlvr report RUN [RUN2 ...] [--out FILE]           one self-contained HTML file (runs overlaid)
rlvr dashboard RUN [RUN2 ...] [--port P] [--host H]   the same page, live, over HTTP
"""

from __future__ import annotations

import argparse
from typing import Any

RUN_HELP = "a run directory, or a trace store's path or URL (several: overlaid on the same charts)"


def add_parser(sub: Any) -> None:
    r = sub.add_parser(
        "report",
        help="write one self-contained HTML report of a run (several runs: overlaid)",
        description="Write one HTML file with the run's metrics per step (grouped: reward, hacking, "
        "training, rollout, time, sandbox, per domain), alerts marked on every chart, held-out pass@1 "
        "before and after, and the best, worst and flagged trajectories in full. The file needs no "
        "network (plotly.js is inlined). Several RUNs are overlaid for comparison.",
    )
    r.add_argument("runs", nargs="+", metavar="RUN", help=RUN_HELP)
    r.add_argument("--out", help="the HTML file to write (default: <first RUN>/report.html)")
    _common(r)
    d = sub.add_parser(
        "dashboard",
        help="serve the report of a live run, refreshing as steps land",
        description="Serve the report page over HTTP (localhost by default); the open page checks "
        "for new steps every --interval seconds and redraws. Ctrl-C stops it.",
    )
    d.add_argument("runs", nargs="+", metavar="RUN", help=RUN_HELP)
    d.add_argument("--port", type=int, default=8050, help="TCP port (0: any free one)")
    d.add_argument("--host", default="127.0.0.1", help="address to listen on (default: this machine only)")
    d.add_argument("--interval", type=float, default=2.0, help="seconds between the page's checks for new steps")
    _common(d)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--top", type=int, default=5, help="best and worst trajectories shown per run")
    p.add_argument("--flagged", type=int, default=20, help="flagged trajectories shown per run (the latest)")


def run(args: argparse.Namespace) -> int:
    from rlvr.config.base import ConfigError

    if args.top < 0 or args.flagged < 0:
        raise ConfigError("--top and --flagged must be 0 or more")
    if args.command == "dashboard":
        if not 0 <= args.port <= 65535:
            raise ConfigError(f"--port must be 0..65535, got {args.port}")
        if not args.interval > 0:
            raise ConfigError(f"--interval must be a positive number of seconds, got {args.interval}")
        from rlvr.report.serve import serve

        return serve(
            list(args.runs), args.host, args.port, interval_s=args.interval, top=args.top, max_flagged=args.flagged
        )
    out = write_report(list(args.runs), args.out, top=args.top, max_flagged=args.flagged)
    print(f"wrote {out}")
    return 0


def write_report(sources: list[str], out: str | None = None, *, top: int = 5, max_flagged: int = 20) -> str:
    """Write the report of `sources` to `out` (default <first source>/report.html); return where."""
    import fsspec

    from rlvr.report import data, html

    runs = data.load_runs(sources, top=top, max_flagged=max_flagged)
    signatures = [data.store_signature(r.uri) for r in runs]
    text = html.page(html.content(runs, data.version_of(signatures)))
    out = out or f"{sources[0].rstrip('/')}/report.html"
    with fsspec.open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return out
