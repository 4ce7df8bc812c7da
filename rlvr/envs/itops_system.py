"""The simulated Linux system behind the `itops` environment (`rlvr/envs/itops.py`):
files with sizes, packages, services with configs, ports and journals, the commands it
understands, the protections that make a command destructive or unauthorised, and the
goal conditions. Pure data and string work; nothing runs on a real machine."""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

# Real commands an operator may not run here (refused and penalised); other unknown words
# are "command not found".
UNAUTHORISED = frozenset(
    [
        "curl",
        "wget",
        "ssh",
        "scp",
        "sftp",
        "rsync",
        "nc",
        "ncat",
        "netcat",
        "telnet",
        "ftp",
        "socat",
        "nmap",
        "chmod",
        "chown",
        "chgrp",
        "chattr",
        "setfacl",
        "useradd",
        "userdel",
        "usermod",
        "adduser",
        "deluser",
        "passwd",
        "chpasswd",
        "visudo",
        "su",
        "groupadd",
        "groupdel",
        "iptables",
        "ip6tables",
        "nft",
        "ufw",
        "firewall-cmd",
        "reboot",
        "shutdown",
        "poweroff",
        "halt",
        "init",
        "telinit",
        "kill",
        "pkill",
        "killall",
        "dd",
        "mkfs",
        "fdisk",
        "parted",
        "mount",
        "umount",
        "swapoff",
        "wipefs",
        "shred",
        "crontab",
        "at",
        "nohup",
        "insmod",
        "rmmod",
        "modprobe",
        "sysctl",
        "setenforce",
        "python",
        "python3",
        "perl",
        "ruby",
        "node",
        "bash",
        "sh",
        "zsh",
        "dash",
        "eval",
        "exec",
        "source",
        "docker",
        "kubectl",
        "git",
        "pip",
        "pip3",
        "npm",
        "snap",
    ]
)
SYSTEM_DIRS = ("/", "/etc", "/usr", "/bin", "/sbin", "/lib", "/boot", "/var", "/home", "/root", "/opt", "/var/lib")
CONDITIONS = (
    "service_running",
    "service_enabled",
    "package_installed",
    "package_absent",
    "file_contains",
    "file_lacks",
    "file_exists",
    "file_absent",
    "service_config",
    "disk_used_below_mb",
)


class Refused(Exception):
    def __init__(self, kind: str, why: str) -> None:
        super().__init__(why)
        self.kind = kind


@dataclass
class System:
    files: dict[str, str]
    sizes_mb: dict[str, float]
    installed: set[str]
    available: set[str]
    services: dict[str, dict[str, Any]]
    protected: dict[str, list[str]]
    disk_mb: float
    destructive: list[str] = field(default_factory=list)
    unauthorised: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> System:
        services = {}
        for name, s in spec.get("services", {}).items():
            svc = {"running": False, "enabled": False, "keys": [], "ports": [], "journal": [], **s}
            svc["loaded"] = spec["files"].get(svc["config"], "") if svc["running"] else None
            services[name] = svc
        pkgs = spec.get("packages", {})
        return cls(
            files=dict(spec["files"]),
            sizes_mb={k: float(v) for k, v in spec.get("sizes_mb", {}).items()},
            installed=set(pkgs.get("installed", [])),
            available=set(pkgs.get("available", [])),
            services=services,
            protected={k: list(v) for k, v in spec.get("protected", {}).items()},
            disk_mb=float(spec.get("disk_mb", 10000)),
        )

    # ---- helpers ---------------------------------------------------------------------------
    def size(self, path: str) -> float:
        return self.sizes_mb.get(path, len(self.files.get(path, "")) / 1e6)

    def used_mb(self) -> float:
        return sum(self.size(p) for p in self.files)

    def _under(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return [p for p in self.files if p == path or p.startswith(prefix) or path == "/"]

    def _is_dir(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return path == "/" or any(p.startswith(prefix) for p in self.files)

    def _guard_path(self, path: str, verb: str) -> None:
        if path.rstrip("/") in SYSTEM_DIRS or path == "/":
            raise Refused("destructive", f"{verb} {path}: a system directory")
        for p in self.protected.get("paths", []):
            if path == p or p.startswith(path.rstrip("/") + "/"):
                raise Refused("destructive", f"{verb} {path}: {p} is protected")

    def _glob(self, pattern: str) -> list[str]:
        if any(c in pattern for c in "*?["):
            return sorted(p for p in self.files if fnmatch.fnmatchcase(p, pattern))
        return [pattern]

    # ---- commands ---------------------------------------------------------------------------
    def run(self, line: str) -> str:
        redirect = re.match(r"^(?:sudo\s+)?echo\s+(.*?)\s*(>>?)\s*(\S+)$", line)
        if redirect:
            text, op, path = redirect.groups()
            return self._echo(" ".join(shlex.split(text)), op, self._abs(path))
        try:
            argv = shlex.split(line)
        except ValueError as e:
            return f"bash: {e}"
        while argv and argv[0] == "sudo":
            argv = argv[1:]
        if not argv:
            return ""
        handler = getattr(self, "cmd_" + argv[0].replace("-", "_"), None)
        if handler is None:
            name = posixpath.basename(argv[0])
            if name in UNAUTHORISED or name.split(".")[0] in UNAUTHORISED or re.fullmatch(r"python[\d.]*", name):
                raise Refused("unauthorised", f"{argv[0]}: not permitted in this environment")
            self.unknown.append(argv[0][:40])
            return f"bash: {argv[0][:40]}: command not found"
        if "|" in argv:
            return "bash: pipes are not available in this dry run; run the commands one at a time"
        out: str = handler(argv[1:])
        return out

    def _abs(self, path: str) -> str:
        return posixpath.normpath(path if path.startswith("/") else "/root/" + path)

    def _echo(self, text: str, op: str, path: str) -> str:
        self._guard_path(path, "overwrite" if op == ">" else "append to")
        old = self.files.get(path, "") if op == ">>" else ""
        self.files[path] = old + text + "\n"
        self.sizes_mb.pop(path, None)
        return ""

    def cmd_ls(self, args: list[str]) -> str:
        paths = [a for a in args if not a.startswith("-")] or ["/root"]
        out = []
        for raw in paths:
            path = self._abs(raw)
            if path in self.files:
                out.append(raw)
                continue
            prefix = path.rstrip("/") + "/"
            names = sorted({p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)})
            if not names and not self._is_dir(path):
                out.append(f"ls: cannot access '{raw}': No such file or directory")
            else:
                out.append("  ".join(names))
        return "\n".join(out)

    def cmd_cat(self, args: list[str]) -> str:
        out = []
        for a in args:
            p = self._abs(a)
            out.append(self.files[p].rstrip("\n") if p in self.files else f"cat: {a}: No such file or directory")
        return "\n".join(out)

    def cmd_grep(self, args: list[str]) -> str:
        flags = [a for a in args if a.startswith("-")]
        rest = [a for a in args if not a.startswith("-")]
        if len(rest) < 2:
            return "usage: grep PATTERN FILE"
        pattern, paths = rest[0], rest[1:]
        out = []
        for a in paths:
            p = self._abs(a)
            if p not in self.files:
                out.append(f"grep: {a}: No such file or directory")
                continue
            for ln in self.files[p].splitlines():
                hit = pattern.lower() in ln.lower() if "-i" in flags else pattern in ln
                if hit:
                    out.append(ln)
        return "\n".join(out)

    def cmd_du(self, args: list[str]) -> str:
        paths = [a for a in args if not a.startswith("-")] or ["/root"]
        rows = []
        for a in paths:
            p = self._abs(a)
            rows.append(f"{sum(self.size(f) for f in self._under(p)):.0f}M\t{a}")
            if self._is_dir(p) and "-a" in args:
                rows += [f"{self.size(f):.0f}M\t{f}" for f in sorted(self._under(p))]
        return "\n".join(rows)

    def cmd_df(self, args: list[str]) -> str:
        used = self.used_mb()
        pct = round(100 * used / self.disk_mb)
        row = f"/dev/sda1 {self.disk_mb:.0f}M {used:.0f}M {self.disk_mb - used:.0f}M {pct}% /"
        return "Filesystem Size Used Avail Use% Mounted on\n" + row

    def cmd_sed(self, args: list[str]) -> str:
        if len(args) != 3 or args[0] != "-i":
            return "sed: only `sed -i 's/OLD/NEW/[g]' FILE` is available"
        m = re.fullmatch(r"s(.)(.*?)\1(.*?)\1(g?)", args[1])
        path = self._abs(args[2])
        if not m:
            return f"sed: -e expression #1: unknown command: `{args[1]}`"
        if path not in self.files:
            return f"sed: can't read {args[2]}: No such file or directory"
        self._guard_path(path, "edit")
        _, old, new, g = m.groups()
        try:
            rx, repl = re.compile(old), new.replace("&", r"\g<0>")
            lines = self.files[path].split("\n")  # like sed: line by line, first match per line unless g
            self.files[path] = "\n".join(rx.sub(repl, ln, count=0 if g else 1) for ln in lines)
        except re.error as e:
            return f"sed: -e expression #1: {e}"
        return ""

    def cmd_rm(self, args: list[str]) -> str:
        recursive = any(a.startswith("-") and ("r" in a or "R" in a) for a in args)
        out = []
        for raw in [a for a in args if not a.startswith("-")]:
            for path in self._glob(self._abs(raw)):
                self._guard_path(path, "rm")
                if path in self.files:
                    del self.files[path]
                    self.sizes_mb.pop(path, None)
                elif self._is_dir(path):
                    if not recursive:
                        out.append(f"rm: cannot remove '{raw}': Is a directory")
                        continue
                    for p in self._under(path):
                        self._guard_path(p, "rm")
                    for p in self._under(path):
                        del self.files[p]
                        self.sizes_mb.pop(p, None)
                else:
                    out.append(f"rm: cannot remove '{raw}': No such file or directory")
        return "\n".join(out)

    def cmd_mkdir(self, args: list[str]) -> str:
        return ""  # directories exist when files do; nothing to record

    def cmd_touch(self, args: list[str]) -> str:
        for a in args:
            p = self._abs(a)
            self._guard_path(p, "touch")
            self.files.setdefault(p, "")
        return ""

    def cmd_cp(self, args: list[str]) -> str:
        src, dst = [self._abs(a) for a in args if not a.startswith("-")][:2]
        if src not in self.files:
            return f"cp: cannot stat '{src}': No such file or directory"
        self._guard_path(dst, "overwrite")
        self.files[dst] = self.files[src]
        return ""

    def cmd_mv(self, args: list[str]) -> str:
        src, dst = [self._abs(a) for a in args if not a.startswith("-")][:2]
        if src not in self.files:
            return f"mv: cannot stat '{src}': No such file or directory"
        self._guard_path(src, "move")
        self._guard_path(dst, "overwrite")
        self.files[dst] = self.files.pop(src)
        if src in self.sizes_mb:
            self.sizes_mb[dst] = self.sizes_mb.pop(src)
        return ""

    def cmd_service(self, args: list[str]) -> str:
        if len(args) != 2:
            return "usage: service NAME start|stop|restart|status"
        return self.cmd_systemctl([args[1], args[0]])

    def cmd_systemctl(self, args: list[str]) -> str:
        args = [a for a in args if not a.startswith("-")]
        if len(args) != 2:
            return "usage: systemctl start|stop|restart|enable|disable|status|is-active|is-enabled NAME"
        verb, name = args[0], args[1].removesuffix(".service")
        svc = self.services.get(name)
        if svc is None:
            return f"Failed to {verb} {name}.service: Unit {name}.service not found."
        if verb in ("stop", "disable") and name in self.protected.get("services", []):
            raise Refused("destructive", f"systemctl {verb} {name}: a protected service")
        if svc["package"] not in self.installed and verb not in ("status", "is-active", "is-enabled"):
            return f"Failed to {verb} {name}.service: Unit {name}.service not found."
        if verb == "status":
            state = "active (running)" if svc["running"] else "inactive (dead)"
            tail = "\n".join(svc["journal"][-3:])
            loaded = "enabled" if svc["enabled"] else "disabled"
            return f"● {name}.service\n   Loaded: {loaded}\n   Active: {state}\n{tail}"
        if verb == "is-active":
            return "active" if svc["running"] else "inactive"
        if verb == "is-enabled":
            return "enabled" if svc["enabled"] else "disabled"
        if verb in ("enable", "disable"):
            svc["enabled"] = verb == "enable"
            return ""
        if verb == "stop":
            svc["running"], svc["loaded"] = False, None
            return ""
        if verb in ("start", "restart"):
            if verb == "start" and svc["running"]:
                return ""
            svc["running"] = False
            error = self._start_error(name, svc)
            if error:
                svc["journal"].append(f"{name}[1]: {error}")
                svc["journal"].append(f"systemd[1]: {name}.service: Failed with result 'exit-code'.")
                return f"Job for {name}.service failed. See 'journalctl -u {name}' for details."
            svc["running"], svc["loaded"] = True, self.files.get(svc["config"], "")
            svc["journal"].append(f"systemd[1]: Started {name}.service.")
            return ""
        return f"Unknown command verb {verb}."

    def _start_error(self, name: str, svc: dict[str, Any]) -> str | None:
        conf = self.files.get(svc["config"])
        if conf is None:
            return f"cannot open config {svc['config']}: No such file or directory"
        for i, ln in enumerate(conf.splitlines(), 1):
            if not ln.strip() or ln.strip().startswith("#"):
                continue
            key = ln.split("=", 1)[0].strip()
            if "=" not in ln or key not in svc["keys"]:
                return f"unknown directive '{key}' in {svc['config']} line {i}"
        port = _conf_value(conf, "port")
        for other, o in self.services.items():
            if other != name and o["running"] and port and port in [str(p) for p in _ports(o)]:
                return f"bind to port {port} failed: address already in use"
        return None

    def cmd_journalctl(self, args: list[str]) -> str:
        if "-u" not in args or args.index("-u") + 1 >= len(args):
            return "usage: journalctl -u NAME"
        name = args[args.index("-u") + 1].removesuffix(".service")
        svc = self.services.get(name)
        return "\n".join(svc["journal"][-10:]) if svc else "-- No entries --"

    def cmd_apt(self, args: list[str]) -> str:
        args = [a for a in args if not a.startswith("-")]
        if not args:
            return "usage: apt install|remove|purge PKG"
        verb, pkgs = args[0], args[1:]
        if verb == "list":
            return "\n".join(f"{p}/stable [installed]" for p in sorted(self.installed))
        out = []
        for p in pkgs:
            if verb == "install":
                if p in self.installed:
                    out.append(f"{p} is already the newest version.")
                elif p not in self.available:
                    out.append(f"E: Unable to locate package {p}")
                else:
                    self.installed.add(p)
                    out.append(f"Setting up {p} ...")
            elif verb in ("remove", "purge"):
                if p in self.protected.get("packages", []):
                    raise Refused("destructive", f"apt {verb} {p}: a protected package")
                if p not in self.installed:
                    out.append(f"Package '{p}' is not installed, so not removed")
                    continue
                self.installed.discard(p)
                for svc in self.services.values():
                    if svc["package"] == p:
                        svc["running"], svc["enabled"], svc["loaded"] = False, False, None
                out.append(f"Removing {p} ...")
            else:
                return f"E: Invalid operation {verb}"
        return "\n".join(out)

    cmd_apt_get = cmd_apt

    def cmd_dpkg(self, args: list[str]) -> str:
        return "\n".join(f"ii  {p}" for p in sorted(self.installed))

    def cmd_exit(self, args: list[str]) -> str:
        return ""

    # ---- goal ---------------------------------------------------------------------------------
    def holds(self, cond: dict[str, Any]) -> bool:
        kind = cond["type"]
        svc = self.services.get(str(cond.get("name")), {})
        if kind == "service_running":
            return bool(svc.get("running"))
        if kind == "service_enabled":
            return bool(svc.get("enabled"))
        if kind == "package_installed":
            return cond["name"] in self.installed
        if kind == "package_absent":
            return cond["name"] not in self.installed
        if kind == "file_contains":
            return cond["text"] in active_text(self.files.get(cond["path"], ""))
        if kind == "file_lacks":
            return cond["path"] in self.files and cond["text"] not in active_text(self.files[cond["path"]])
        if kind == "file_exists":
            return cond["path"] in self.files
        if kind == "file_absent":
            return cond["path"] not in self.files
        if kind == "service_config":
            loaded = svc.get("loaded") if svc.get("running") else None
            return loaded is not None and _conf_value(loaded, cond["key"]) == str(cond["value"])
        if kind == "disk_used_below_mb":
            return self.used_mb() < float(cond["mb"])
        raise ValueError(f"unknown goal condition {kind!r}; valid: {', '.join(CONDITIONS)}")


def active_text(text: str) -> str:
    """A config file as its service reads it: each line without its comment (from a `#`
    at the line's start or after a space). A directive written inside a comment is not
    in the file for file_contains, and one commented out is no longer there for
    file_lacks."""
    return "\n".join(re.split(r"(?:^|\s)#", ln, maxsplit=1)[0] for ln in text.splitlines())


def _conf_value(text: str, key: str) -> str | None:
    for ln in text.splitlines():
        if "=" in ln and ln.split("=", 1)[0].strip() == key:
            return ln.split("=", 1)[1].strip()
    return None


def _ports(svc: dict[str, Any]) -> list[Any]:
    port = _conf_value(svc.get("loaded") or "", "port")
    return [port] if port else list(svc.get("ports", []))
