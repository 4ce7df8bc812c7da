"""`rlvr domains [--config CONFIG] [--json]`: every domain a run can train on, with the
environment that runs it, where its tasks come from and how many there are: the bundled
sets, reasoning-gym's catalogue (drawn at run time, one domain per dataset), the config's
domain records (`domains: [...]`, counted over their sources and difficulty ranges), and
the environments registered by rlvr or by the config's plugins that ship no tasks."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    d = sub.add_parser("domains", help="list the domains a run can train on, with their task sources and counts")
    d.add_argument("--config", dest="config_file", help="YAML run config: its plugins, its domain records")
    d.add_argument("--json", action="store_true", help="one JSON object a domain, a line each")


def domain_rows(config_file: str | None = None) -> list[dict[str, Any]]:
    """One row a (domain, source): domain, env, source, tasks (None: drawn at run time)."""
    from rlvr.config import RunConfig, load_config, load_plugins

    cfg = load_config(config_file, []) if config_file else RunConfig()
    load_plugins(cfg)
    import rlvr.envs
    import rlvr.repos.agent  # noqa: F401  (repo_agent, the environment of bundled:repos)
    from rlvr.envs.base import ENVS, env_name
    from rlvr.tasks import reasoning_catalogue
    from rlvr.tasks.loader import BUNDLED_DIR, load_tasks

    rows: list[dict[str, Any]] = []
    for path in sorted(BUNDLED_DIR.glob("*.jsonl")):
        counts: dict[str, int] = {}
        for t in load_tasks(f"bundled:{path.stem}"):
            counts[t.domain] = counts.get(t.domain, 0) + 1
        rows += [
            {"domain": d, "env": env_name(d), "source": f"bundled:{path.stem}", "tasks": n}
            for d, n in sorted(counts.items())
        ]
    for name in reasoning_catalogue.usable():
        domain = f"reasoning/{name}"
        rows.append({"domain": domain, "env": env_name(domain), "source": f"reasoning_gym:{name}", "tasks": None})
    if cfg.domains:
        from rlvr.train.preflight import run_tasks

        mine = {d.name: d for d in cfg.domains}
        counts = {}
        for t in run_tasks(cfg):
            if t.domain in mine:
                counts[t.domain] = counts.get(t.domain, 0) + 1
        rows += [
            {"domain": d.name, "env": env_name(d.name), "source": d.source, "tasks": counts.get(d.name, 0)}
            for d in cfg.domains
        ]
    shipped = {r["env"] for r in rows}
    rows += [{"domain": d, "env": d, "source": None, "tasks": 0} for d in sorted(ENVS) if d not in shipped]
    return rows


def run(args: argparse.Namespace) -> int:
    from rlvr.tasks.reasoning_catalogue import DEFAULT_SIZE

    rows = domain_rows(args.config_file)
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    width = max(len(r["domain"]) for r in rows)
    env_width = max(len(r["env"]) for r in rows)
    source_width = max(len(r["source"] or "-") for r in rows)
    for r in rows:
        tasks = (
            f"drawn ({DEFAULT_SIZE} a dataset by default)"
            if r["tasks"] is None
            else (f"{r['tasks']} tasks" if r["source"] else "no tasks shipped")
        )
        print(f"{r['domain']:<{width}}  {r['env']:<{env_width}}  {r['source'] or '-':<{source_width}}  {tasks}")
    n_domains = len({r["domain"] for r in rows})
    print(f"{n_domains} domains in {len({r['env'] for r in rows})} environments")
    return 0
