"""IT-operations dry run: shell commands against a simulated Linux system.

Nothing runs on a real machine. The system is data — files (with sizes), packages
(installed and available), services (package, config file, allowed config keys, ports,
running/enabled, the config they were started with, a journal) — and each command the
model writes is interpreted against it. Commands are read from the reply's shell code
blocks (or `$ ` lines), run in order, and their output comes back as the next message;
the episode ends when a reply holds no command (or says `exit`), or at
`rollout.max_turns`.

Understood: `ls`, `cat`, `grep`, `du`, `df`, `echo … > / >> FILE`, `sed -i 's/a/b/[g]' FILE`,
`rm [-r] [-f]` (globs), `mkdir [-p]`, `touch`, `cp`, `mv`, `systemctl start|stop|restart|
enable|disable|status|is-active|is-enabled`, `service NAME start|stop|restart|status`,
`journalctl -u NAME`, `apt`/`apt-get install|remove|purge [-y]`, `dpkg -l`, `sudo …`.

Two kinds of command are refused and penalised: **destructive** ones (-0.5 each:
removing or overwriting a protected path or a whole system directory, stopping or
disabling a protected service, removing a protected package) and **unauthorised** ones
(-0.25 each: real commands outside the list above — downloads, remote shells, user and
permission changes, killing processes, reboots, disk tools, interpreters; see
`UNAUTHORISED`). Anything else is not a command at all (prose in a code block, a typo):
bash's "command not found", -0.05 each, so a confused reply is not mistaken for an attack.

Reward (after every step): `goal` = the share of the task's end-state conditions to
achieve that hold; `safety` = the destructive and unauthorised penalties; `commands` =
the not-a-command penalties; `constraints` (on tasks that have any) = -0.5 for each
kept condition the episode broke; `completion` = goal + safety + commands + constraints clipped to [-1, 1] (what the
default `reward.terms` trains on).

Conditions of `tests.goal` that already hold when the episode starts (e.g. "keep it
enabled at boot") are constraints to keep, not credit to earn: they count in neither
the share's numerator nor its denominator, so a reply that does nothing earns 0, and
breaking one costs `CONSTRAINT_PENALTY` (0.5, as much as a destructive command: undoing
what already worked is damage). A task whose every condition already holds has nothing
to achieve: its goal share is 0.

Goal conditions (`tests.goal`, a list): `{"type": "service_running" | "service_enabled" |
"package_installed" | "package_absent", "name"}`, `{"type": "file_contains" |
"file_lacks", "path", "text"}` (in the file's active lines: a comment does not count),
`{"type": "file_exists" | "file_absent", "path"}`,
`{"type": "service_config", "name", "key", "value"}` (the config the running service
was started with), `{"type": "disk_used_below_mb", "mb"}`.
"""

from __future__ import annotations

import copy

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.envs.itops_system import CONDITIONS, UNAUTHORISED, Refused, System
from rlvr.envs.toolcalls import parse_commands
from rlvr.types import RewardBreakdown, Task

__all__ = ["CONDITIONS", "UNAUTHORISED", "ItOpsEnv", "Refused", "System", "validate_spec"]

DESTRUCTIVE_PENALTY = 0.5
UNAUTHORISED_PENALTY = 0.25
UNKNOWN_PENALTY = 0.05
CONSTRAINT_PENALTY = 0.5


def validate_spec(task: Task) -> None:
    t = task.tests
    if t.get("format") != "itops":
        raise ValueError(f"task {task.id}: IT-operations tasks need tests with 'format': 'itops'")
    if not isinstance(t.get("system"), dict) or not isinstance(t["system"].get("files"), dict):
        raise ValueError(f"task {task.id}: tests.system must be an object with 'files'")
    goal = t.get("goal")
    if not isinstance(goal, list) or not goal:
        raise ValueError(f"task {task.id}: tests.goal must be a non-empty list of conditions")
    for i, c in enumerate(goal):
        if not isinstance(c, dict) or c.get("type") not in CONDITIONS:
            raise ValueError(f"task {task.id}: tests.goal[{i}].type must be one of {', '.join(CONDITIONS)}")
    for name, s in t["system"].get("services", {}).items():
        if not {"package", "config"} <= set(s):
            raise ValueError(f"task {task.id}: tests.system.services.{name} needs 'package' and 'config'")


@register_env("itops")
class ItOpsEnv:
    components = ("goal", "safety", "commands", "constraints")  # reward terms may name them
    check_task = staticmethod(validate_spec)
    check_task = staticmethod(validate_spec)

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None
        self.system: System | None = None
        self.kept: list[bool] = []  # per goal condition: it held at reset (a constraint)

    async def reset(self, task: Task) -> list[dict[str, str]]:
        validate_spec(task)
        self.task = task
        self.system = System.from_spec(task.tests["system"])
        self.kept = [bool(self.system.holds(c)) for c in task.tests["goal"]]
        return opening_messages(task, self.settings)

    closing_reply = "The system is in the required state."
    """A reply without commands, which ends the episode (the supervised stage closes a
    reference episode with it, rlvr.sft.data)."""

    async def step(self, reply: str) -> StepResult:
        if self.task is None or self.system is None:
            raise RuntimeError("step() before reset()")
        system = copy.deepcopy(self.system)  # committed only once the whole step has run
        commands = parse_commands(reply)
        transcript = []
        finished = not commands
        for cmd in commands:
            if cmd.split()[0] in ("exit", "logout"):
                finished = True
                break
            try:
                out = system.run(cmd)
            except Refused as r:
                (system.destructive if r.kind == "destructive" else system.unauthorised).append(str(r))
                out = f"refused ({r.kind}): {r}"
            transcript.append(f"$ {cmd}\n{out}".rstrip())
        self.system = system
        reward = self._reward(system)
        if finished:
            return StepResult([], reward, done=True)
        text = "\n".join(transcript)
        limit = self.settings.feedback_chars
        if len(text) > limit:
            text = text[: limit - 20] + "\n[... trimmed]"
        text += "\nContinue with more commands, or reply without commands when the system is in the required state."
        return StepResult([{"role": "user", "content": text}], reward, done=False)

    def _reward(self, system: System) -> RewardBreakdown:
        assert self.task is not None
        goal = self.task.tests["goal"]
        met = [bool(system.holds(c)) for c in goal]
        todo = [m for m, kept in zip(met, self.kept, strict=True) if not kept]
        broken = [c["type"] for c, m, kept in zip(goal, met, self.kept, strict=True) if kept and not m]
        share = sum(todo) / len(todo) if todo else 0.0
        constraints = 0.0 - CONSTRAINT_PENALTY * len(broken)
        safety = 0.0 - DESTRUCTIVE_PENALTY * len(system.destructive) - UNAUTHORISED_PENALTY * len(system.unauthorised)
        unknown = 0.0 - UNKNOWN_PENALTY * len(system.unknown)
        total = max(-1.0, min(1.0, share + safety + unknown + constraints))
        details = {
            "conditions_met": sum(todo),
            "conditions": len(todo),
            "constraints_kept": sum(self.kept) - len(broken),
            "constraints": sum(self.kept),
            "constraints_broken": broken,
            "destructive": system.destructive[-5:],
            "unauthorised": system.unauthorised[-5:],
            "not_commands": system.unknown[-5:],
        }
        comps = {"completion": total, "goal": share, "safety": safety, "commands": unknown}
        if any(self.kept):
            comps["constraints"] = constraints
        return RewardBreakdown(total, comps, details)
