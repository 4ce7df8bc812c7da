"""Generator of the bundled IT-operations tasks (`data/itops.jsonl`) for the `itops` domain.

Each task is a simulated system (see `rlvr.envs.itops`) with a problem to solve and an
end state to reach; sshd, the system's packages and the data the task names are
protected. The prompt describes the situation as a ticket would, not the fix. Every
task carries a reference command script that the simulator is checked to accept with
full reward when the file is written. Seeded; `python -m rlvr.tasks.generators.itopsgen` rewrites
the file byte for byte.

Difficulty: 1 = install and start a service; 2 = change a setting and restart, or find
and fix a bad config line from the journal; 3 = free disk space without touching live
data, or resolve a port conflict between two services.
"""

from __future__ import annotations

import random
from typing import Any

import rlvr.envs.itops  # noqa: F401  (registers the domain)
from rlvr.envs.base import check_reply
from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "itops.jsonl"
APPS = ["webapp", "api", "worker", "metrics", "cache", "gateway", "billing", "search"]
KEYS = ["port", "workers", "log_level", "timeout"]
INTRO = (
    "You are the administrator of a Linux server (a dry run: your commands run against a simulation). "
    "Write shell commands in a ```bash code block; their output comes back. Investigate before you change things, "
    "never touch what the task does not need, and reply without commands when you are finished.\n\n"
)


def _base(r: random.Random, app: str, running: bool, installed: bool = True) -> dict[str, Any]:
    port = r.choice([8000, 8080, 8081, 9000, 9090])
    conf = f"port = {port}\nworkers = {r.randint(2, 8)}\nlog_level = info\ntimeout = {r.choice([30, 60])}\n"
    return {
        "files": {
            f"/etc/{app}/{app}.conf": conf,
            "/etc/passwd": "root:x:0:0:root:/root:/bin/bash\n",
            "/etc/ssh/sshd_config": "PermitRootLogin no\n",
            f"/var/lib/{app}/data.db": "",
            "/root/notes.txt": "todo\n",
        },
        "sizes_mb": {f"/var/lib/{app}/data.db": float(r.randint(200, 900))},
        "packages": {
            "installed": ["openssh-server", "systemd", "coreutils"] + ([app] if installed else []),
            "available": [app, "nginx", "redis-server", "htop"],
        },
        "services": {
            app: {
                "package": app,
                "config": f"/etc/{app}/{app}.conf",
                "keys": KEYS,
                "running": running,
                "enabled": running,
            },
            "sshd": {
                "package": "openssh-server",
                "config": "/etc/ssh/sshd_config",
                "keys": ["PermitRootLogin"],
                "running": True,
                "enabled": True,
                "ports": [22],
            },
        },
        "protected": {
            "paths": ["/etc/passwd", "/etc/ssh/sshd_config", f"/var/lib/{app}/data.db"],
            "services": ["sshd"],
            "packages": ["openssh-server", "systemd", "coreutils"],
        },
        "disk_mb": 4000,
    }


def _install(r: random.Random, app: str) -> tuple[dict[str, Any], list[dict[str, Any]], str, str]:
    system = _base(r, app, running=False, installed=False)
    goal = [
        {"type": "package_installed", "name": app},
        {"type": "service_running", "name": app},
        {"type": "service_enabled", "name": app},
    ]
    ticket = f"Ticket: the {app} service must be installed (package {app}), running, and started at boot."
    script = f"apt-get install -y {app}\nsystemctl start {app}\nsystemctl enable {app}"
    return system, goal, ticket, script


def _change(r: random.Random, app: str) -> tuple[dict[str, Any], list[dict[str, Any]], str, str]:
    system = _base(r, app, running=True)
    conf_path = f"/etc/{app}/{app}.conf"
    key = r.choice(["port", "workers", "timeout"])
    old = next(ln for ln in system["files"][conf_path].splitlines() if ln.startswith(key)).split("=")[1].strip()
    new = str({"port": r.choice([7000, 7070, 8443]), "workers": r.randint(10, 16), "timeout": 120}[key])
    goal = [{"type": "service_config", "name": app, "key": key, "value": new}, {"type": "service_enabled", "name": app}]
    ticket = f"Ticket: {app} must run with {key} set to {new} (its config is in /etc/{app}/). Keep it enabled at boot."
    script = f"sed -i 's/^{key} = {old}/{key} = {new}/' {conf_path}\nsystemctl restart {app}"
    return system, goal, ticket, script


def _broken(r: random.Random, app: str) -> tuple[dict[str, Any], list[dict[str, Any]], str, str]:
    system = _base(r, app, running=False)
    conf_path = f"/etc/{app}/{app}.conf"
    key = r.choice(["workers", "timeout", "log_level"])
    typo = {"workers": "wrokers", "timeout": "timeuot", "log_level": "loglevel"}[key]
    conf = system["files"][conf_path]
    system["files"][conf_path] = conf.replace(f"{key} =", f"{typo} =", 1)
    line = next(i for i, ln in enumerate(conf.splitlines(), 1) if ln.startswith(key))
    system["services"][app]["journal"] = [
        f"{app}[311]: unknown directive '{typo}' in {conf_path} line {line}",
        f"systemd[1]: {app}.service: Failed with result 'exit-code'.",
    ]
    value = next(ln for ln in conf.splitlines() if ln.startswith(key)).split("=")[1].strip()
    goal = [
        {"type": "service_running", "name": app},
        {"type": "file_contains", "path": conf_path, "text": f"{key} = {value}"},
    ]
    ticket = f"Ticket: {app} stopped and will not start again since last night's config change. Get it running."
    script = f"journalctl -u {app}\nsed -i 's/^{typo} =/{key} =/' {conf_path}\nsystemctl start {app}"
    return system, goal, ticket, script


def _disk(r: random.Random, app: str) -> tuple[dict[str, Any], list[dict[str, Any]], str, str]:
    system = _base(r, app, running=True)
    logs = f"/var/log/{app}"
    n = r.randint(3, 6)
    system["files"][f"{logs}/{app}.log"] = "current log\n"
    system["sizes_mb"][f"{logs}/{app}.log"] = float(r.randint(50, 150))
    for i in range(1, n + 1):
        system["files"][f"{logs}/{app}.log.{i}"] = "old log\n"
        system["sizes_mb"][f"{logs}/{app}.log.{i}"] = float(r.randint(400, 700))
    system["protected"]["paths"].append(f"{logs}/{app}.log")
    used = sum(system["sizes_mb"].values())
    system["disk_mb"] = float(int(used * 1.05))
    rotated = sum(system["sizes_mb"][f"{logs}/{app}.log.{i}"] for i in range(1, n + 1))
    below = float(int(used - rotated * 0.8))
    goal: list[dict[str, Any]] = [
        {"type": "disk_used_below_mb", "mb": below},
        {"type": "file_exists", "path": f"{logs}/{app}.log"},
        {"type": "file_exists", "path": f"/var/lib/{app}/data.db"},
        {"type": "service_running", "name": app},
    ]
    ticket = (
        f"Ticket: the disk is almost full and {app} is about to fail. Free at least {used - below:.0f} MB "
        f"without losing the live log or any application data."
    )
    script = f"df -h\ndu -a /var\nrm {logs}/{app}.log.*"
    return system, goal, ticket, script


def _conflict(r: random.Random, app: str) -> tuple[dict[str, Any], list[dict[str, Any]], str, str]:
    system = _base(r, app, running=False)
    conf_path = f"/etc/{app}/{app}.conf"
    port = next(ln for ln in system["files"][conf_path].splitlines() if ln.startswith("port")).split("=")[1].strip()
    system["packages"]["installed"].append("legacy-httpd")
    system["services"]["legacy-httpd"] = {
        "package": "legacy-httpd",
        "config": "/etc/legacy-httpd/httpd.conf",
        "keys": ["port"],
        "running": True,
        "enabled": True,
    }
    system["files"]["/etc/legacy-httpd/httpd.conf"] = f"port = {port}\n"
    system["services"][app]["journal"] = [
        f"{app}[502]: bind to port {port} failed: address already in use",
        f"systemd[1]: {app}.service: Failed with result 'exit-code'.",
    ]
    goal = [
        {"type": "service_running", "name": app},
        {"type": "service_enabled", "name": app},
        {"type": "package_absent", "name": "legacy-httpd"},
        {"type": "service_config", "name": app, "key": "port", "value": port},
    ]
    ticket = (
        f"Ticket: {app} fails to start. The old legacy-httpd package was supposed to be decommissioned; "
        f"remove it and make sure {app} runs on its configured port and starts at boot."
    )
    script = f"journalctl -u {app}\napt-get remove -y legacy-httpd\nsystemctl start {app}\nsystemctl enable {app}"
    return system, goal, ticket, script


def build(n_per_kind: int = 16, seed: int = 5) -> list[Task]:
    r = random.Random(seed)
    makers = [("install", 1, _install), ("change", 2, _change), ("broken", 2, _broken), ("disk", 3, _disk)]
    makers.append(("conflict", 3, _conflict))
    tasks = []
    for name, difficulty, make in makers:
        for i in range(n_per_kind):
            app = APPS[i % len(APPS)]
            system, goal, ticket, script = make(r, app)
            tasks.append(
                Task(
                    id=f"itops/{name}/{i}",
                    domain="itops",
                    prompt=INTRO + ticket,
                    tests={"format": "itops", "system": system, "goal": goal},
                    reference=f"```bash\n{script}\n```",
                    difficulty=difficulty,
                )
            )
    return tasks


def verify(tasks: list[Task]) -> None:
    """Every reference script reaches the end state with no penalty (reward 1.0)."""
    for t in tasks:
        result = check_reply(t, str(t.reference))
        if not (result.reward and result.reward.total == 1.0):
            raise AssertionError(f"{t.id}: reference script scores {result.reward}\n{result.messages}")


def main() -> None:
    tasks = build()
    verify(tasks)
    write_tasks(tasks, DATA)
    print(f"itops: {len(tasks)} tasks")


if __name__ == "__main__":
    main()
