"""`rlvr report` and `rlvr dashboard` (issue 13, part 6), checked in a real headless
browser (Debian's chromium) driven over the DevTools protocol: no script errors, no network
on load, one chart point per step, trajectories that open, model text that stays text.

Without chromium these tests skip, except under CI (CI=true), where they fail: `make test`
installs it (`make browser`)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import fsspec
import pytest
import yaml

from rlvr.cli import main
from rlvr.cli.report import write_report
from rlvr.config import load_config
from rlvr.report.data import metric_series, store_signature
from rlvr.report.html import chart_of
from rlvr.report.serve import Dashboard, make_server
from rlvr.trace.parquet import TraceStore
from rlvr.train.loop import train
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, TestResult, TestStatus, Trajectory, Turn

ROOT = Path(__file__).parents[2]
QUICK_HUMANEVAL = ROOT / "examples" / "quickstart_humaneval.yaml"
TINY = [
    "model.name_or_path=tiny-random",
    "generation.max_new_tokens=6",
    "algo.group_size=2",
    "train.prompts_per_step=2",
    "eval.num_tasks=2",
    "eval.before_training=false",
]
ARTIFACTS = ROOT / "tests" / "artifacts"
# model output that would run script if it reached the page as HTML
HOSTILE = '</pre></details><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> & <b>bold</b>'


# ---- a minimal DevTools-protocol client (stdlib websocket) ---------------------------


class CDP:
    """One websocket to the browser; commands to a page go through its session id."""

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        assert u.hostname and u.port
        self.sock = socket.create_connection((u.hostname, u.port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            assert chunk, "the browser closed the websocket handshake"
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        assert head.split(b"\r\n")[0].split()[1] == b"101", head
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            assert chunk, "the browser closed the websocket"
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _frame(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
        self.sock.sendall(head + mask + masked)

    def _message(self) -> dict[str, Any]:
        data = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._exact(2), "big")
            elif n == 127:
                n = int.from_bytes(self._exact(8), "big")
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 8:
                raise ConnectionError("the browser closed the websocket")
            if opcode == 9:
                self._frame(10, payload)
                continue
            if opcode in (0, 1, 2):
                data += payload
                if b0 & 0x80:
                    return dict(json.loads(data))

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._frame(1, json.dumps(msg).encode())
        while True:
            reply = self._message()
            if reply.get("id") == self.next_id:
                assert "error" not in reply, (method, reply["error"])
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            for ev in self.events[seen:]:
                if ev.get("method") == method:
                    self.events.remove(ev)
                    return ev
            seen = len(self.events)
            self.events.append(self._message())
        raise TimeoutError(method)


class Page:
    """A browser tab: navigate, evaluate JavaScript, collect errors and requests."""

    def __init__(self, cdp: CDP) -> None:
        self.cdp = cdp
        self.target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = cdp.call("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
        )

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.cdp.call(method, params, self.session)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})
        self.cdp.wait_event("Page.loadEventFired", timeout=60)

    def js(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        assert "exceptionDetails" not in r, r["exceptionDetails"]
        return r["result"].get("value")

    def mine(self) -> list[dict[str, Any]]:
        return [e for e in self.cdp.events if e.get("sessionId") == self.session]

    def errors(self) -> list[str]:
        out = []
        for e in self.mine():
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args"))[:500])
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text", "")[:500])
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.mine() if e.get("method") == "Network.requestWillBeSent"]

    def charts(self) -> list[dict[str, Any]]:
        """Every plotly chart on the page: its id and per trace the run, metric and lengths."""
        return list(
            self.js(
                "Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => ({id: gd.id, "
                "key: gd.getAttribute('data-key'), traces: gd.data.map(t => ({name: t.name, run: t.meta.run, "
                "metric: t.meta.metric, x: Array.from(t.x), ny: t.y.length, "
                "text: t.text ? Array.from(t.text) : null})), "
                "shapes: (gd.layout.shapes || []).map(s => s.x0)}))"
            )
        )

    def screenshot(self, path: Path) -> None:
        height = min(int(self.js("document.documentElement.scrollHeight")), 2400)
        shot = self.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": 1400, "height": height, "scale": 1},
            },
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self.cdp.call("Target.closeTarget", {"targetId": self.target})


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("chromium is not installed: under CI the browser tests must run (`make browser` installs it)")
    pytest.skip("chromium is not installed (`make browser`, or apt-get install chromium): browser tests skipped")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CDP]:
    exe = _chromium()
    profile = tmp_path_factory.mktemp("chromium")
    log = profile / "stderr.log"
    args = [exe, "--headless=new", "--disable-gpu", "--remote-debugging-port=0", f"--user-data-dir={profile}"]
    args += ["--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # chromium refuses to run as root with its sandbox
    with log.open("wb") as err:
        proc = subprocess.Popen([*args, "about:blank"], stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline, url = time.monotonic() + 60, ""
        while not url:
            line = next((x for x in log.read_text(errors="replace").splitlines() if "DevTools listening on" in x), "")
            url = line.split("DevTools listening on", 1)[1].strip() if line else ""
            assert proc.poll() is None, f"chromium exited: {log.read_text(errors='replace')[-2000:]}"
            assert time.monotonic() < deadline, f"chromium did not start: {log.read_text(errors='replace')[-2000:]}"
            time.sleep(0.05)
        cdp = CDP(url)
        yield cdp
        with contextlib.suppress(ConnectionError, OSError, AssertionError):
            cdp.call("Browser.close")
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def page(browser: CDP) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.close()


def _assert_clean(page: Page) -> None:
    assert page.errors() == []
    assert page.js("typeof window.pwned") == "undefined"  # no model text ran as script


def _points_per_step(charts: list[dict[str, Any]], steps: dict[str, list[int]]) -> None:
    """Every trace of every chart: exactly one point at each step its run has metrics for."""
    assert charts
    for c in charts:
        assert c["traces"], c["id"]
        for t in c["traces"]:
            assert t["x"] == steps[t["run"]] and t["ny"] == len(steps[t["run"]]), (c["id"], t["name"])


# ---- runs to report on ---------------------------------------------------------------


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 3-step run of the tiny random model (its metrics as the trainer logs them),
    with an eval.sources suite (HumanEval) beside the held-out split."""
    out = tmp_path_factory.mktemp("real")
    train(load_config(QUICK_HUMANEVAL, [*TINY, "train.steps=3", f"output_dir={out}", "name=t"]), quiet=True)
    return out / "t"


def _trajectory(rng: random.Random, step: int, i: int, flags: list[str]) -> Trajectory:
    passed = rng.randint(0, 4)
    tests = [
        TestResult(
            f"assert add({k}, 1) == {k + 1}",
            TestStatus.PASSED if k < passed else TestStatus.FAILED,
            "" if k < passed else f"got {k}",
        )
        for k in range(4)
    ]
    reward = passed / 4 + (0.5 if flags else 0.0)
    return Trajectory(
        task_id=f"py/add_{i % 3}",
        domain="python" if i % 2 else "math",
        group_id=f"{step}/{i // 2}",
        turns=[
            Turn("system", "You are an expert Python programmer."),
            Turn("user", f"Write add(a, b). (task {i})"),
            Turn(
                "assistant",
                f"def add(a, b):\n    return a - b  # attempt one, step {step}",
                token_ids=[1, 2, 3],
                trainable=True,
            ),
            Turn("user", "2 tests failed: assert add(1, 1) == 2"),
            Turn(
                "assistant",
                (HOSTILE if flags else "def add(a, b):\n    return a + b") + f"\n# final answer {step}-{i}",
                token_ids=[4, 5],
                trainable=True,
            ),
        ],
        completion_ids=[1, 2, 3, 4, 5],
        logprobs=[-0.5] * 5,
        loss_mask=[1, 1, 1, 0, 1],
        finish_reason="stop",
        execution=ExecutionResult(RunStatus.OK, tests, stdout="hello <stdout>", wall_time_s=0.01),
        reward=RewardBreakdown(
            total=reward,
            components={"completion": passed / 4, "format": 1.0, "security": 0.0},
            details={"completion": {"passed": passed, "total": 4}},
            flags=flags,
        ),
        advantage=reward - 0.5,
        policy_version=step - 1,
    )


def synthetic_run(root: Path, name: str, steps: int, *, seed: int = 0, alerts: bool = True) -> Path:
    """A run directory with a store written through TraceStore: grouped metric names (one
    missing at one step), alerts, before/after evaluations, flagged trajectories."""
    rng = random.Random(seed)
    run = root / name
    run.mkdir(parents=True)
    cfg = {"name": name, "model": {"name_or_path": "tiny-random"}, "algo": {"advantage": "grpo", "group_size": 2}}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    store = TraceStore(str(run / "traces"))
    store.write_eval(
        0,
        "before",
        {
            "pass_at_1": 0.2,
            "mean_reward": 0.3,
            "num_tasks": 8,
            "by_domain": {"python": 0.25, "math": 0.15},
            "by_difficulty": {"1": 0.4, "2": 0.0},
        },
        [],
    )
    for step in range(1, steps + 1):
        write_synthetic_step(store, step, rng, alerts=alerts)
    store.write_eval(
        steps,
        "after",
        {
            "pass_at_1": 0.45,
            "mean_reward": 0.5,
            "num_tasks": 8,
            "by_domain": {"python": 0.5, "math": 0.4},
            "by_difficulty": {"1": 0.7, "2": 0.2},
        },
        [],
    )
    return run


def write_synthetic_step(store: TraceStore, step: int, rng: random.Random, *, alerts: bool = True) -> None:
    trajs = [_trajectory(rng, step, i, ["test_tamper"] if (step % 3 == 0 and i == 1) else []) for i in range(4)]
    progress = step / 10
    metrics: dict[str, float] = {
        "reward/mean": 0.3 + 0.4 * progress + rng.uniform(-0.05, 0.05),
        "reward/pass_rate": 0.2 + 0.3 * progress + rng.uniform(-0.05, 0.05),
        "reward/completion": 0.25 + 0.4 * progress,
        "reward/format": 0.9,
        "reward/security": 0.0,
        "hack/rate": 0.25 if step % 3 == 0 else 0.0,
        "hack/test_tamper": 0.25 if step % 3 == 0 else 0.0,
        "domain/python/reward/mean": 0.35 + 0.4 * progress,
        "domain/math/reward/mean": 0.25 + 0.3 * progress,
        "domain/python/reward/pass_rate": 0.3,
        "domain/math/reward/pass_rate": 0.1,
        "train/loss": 0.1 * rng.uniform(-1, 1),
        "train/grad_norm": 0.5 + rng.uniform(0, 0.3),
        "train/entropy": 1.2 - 0.05 * step,
        "train/clip_frac": 0.02 * rng.uniform(0, 1),
        "rollout/completion_len_mean": 120 + 5 * step,
        "rollout/truncated_frac": 0.05,
        "time/rollout_wait_s": 1.5 + rng.uniform(0, 0.5),
        "time/train_s": 0.8,
        "time/tokens_per_s": 900 + 10 * step,
        "time/gen_tokens_per_s": 1500.0,
        "sandbox/status/OK": 3,
        "sandbox/status/TIMEOUT": 1,
    }
    if step != 2:
        metrics["train/kl"] = 0.001 * step  # a metric that one step did not log: a gap, not a shift
    store.write_step(step, [(t, True) for t in trajs], metrics)
    if alerts and step % 3 == 0:
        store.write_alerts(
            step,
            [
                {
                    "rule": "hack_rate",
                    "category": "hacking",
                    "action": "warn",
                    "value": 0.25,
                    "threshold": 0.2,
                    "message": f"hack rate 0.25 > 0.2 at step {step} <i>",
                }
            ],
        )


# ---- tests ---------------------------------------------------------------------------


def test_metric_names_group_into_charts_and_steps_align() -> None:
    rows = [
        {"step": 2, "values": [("reward_mean", 0.5), ("reward/mean", 0.6), ("loss", 1.0), ("status/OK", 3.0)]},
        {"step": 1, "values": [("reward/mean", 0.1), ("train/kl", None), ("step", 1.0)]},
    ]
    steps, series = metric_series(rows)
    assert steps == [1, 2]
    assert series == {
        "reward/mean": [0.1, 0.6],  # the grouped name wins over its legacy alias
        "train/loss": [None, 1.0],  # old names chart in the new places; a missing step is a gap
        "sandbox/status/OK": [None, 3.0],
        "train/kl": [None, None],
    }
    assert chart_of("reward/mean")[:2] == ("reward", "reward") and chart_of("reward/format")[3] == "format"
    assert chart_of("hack/test_tamper")[0] == chart_of("hack/rate")[0] == "hack"
    assert chart_of("domain/math/reward/mean") == ("domain/*/reward/mean", "domain", "reward/mean per domain", "math")
    assert chart_of("time/train_s")[0] == "time/stages" and chart_of("time/tokens_per_s")[0] == "time/throughput"
    assert chart_of("train/new_metric") == ("train/new_metric", "train", "train/new_metric", "new_metric")
    assert chart_of("oddname")[1] == "other"


def test_the_commands_load_nothing_heavy_until_they_run() -> None:
    code = "import sys, rlvr.cli.report; print(sorted(m for m in ('plotly', 'pyarrow', 'fsspec') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_a_run_that_is_not_there_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert main(["dashboard", str(tmp_path), "--port", "70000"]) == 2
    err = capsys.readouterr().err
    assert "not a run directory" in err and "--port" in err and "Traceback" not in err


def test_report_of_a_store_at_a_url() -> None:
    uri = "memory://rlvr-report-test/run"
    store = TraceStore(uri)
    for step in (1, 2):
        write_synthetic_step(store, step, random.Random(step))
    out = write_report([uri])  # no run directory: the store's own URL, the report written next to it
    assert out == f"{uri}/report.html"
    with fsspec.open(out, "r", encoding="utf-8") as f:
        text = f.read()
    assert "rlvr report: run" in text and "<details class='traj" in text and "No alerts." in text
    assert store_signature(uri) != [] and Dashboard([uri]).status()["last_step"] == 2


def test_report_of_a_real_run_in_a_browser(real_run: Path, page: Page, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(real_run)]) == 0
    out = real_run / "report.html"
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    text = out.read_text()
    assert re.findall(r"<script[^>]*>", text) == [
        "<script>",
        "<script id='report-data' type='application/json'>",
        "<script>",
    ]
    assert not re.search(r"<(?:script|link|img|iframe)[^>]*\b(?:src|href)\s*=", text)  # nothing loaded from anywhere
    assert text.count("plotly.js v") == 1  # the bundle inlined once
    assert len(text) < 5_500_000  # plotly.js is ~4.8 MB of it
    page.goto(out.as_uri())
    _assert_clean(page)
    assert [u for u in page.requests() if not u.startswith(("file:", "data:", "about:"))] == []  # no network
    charts = page.charts()
    _points_per_step(charts, {"t": [1, 2, 3]})
    keys = {c["key"] for c in charts}
    assert {"reward", "reward/pass_rate", "hack"} <= keys
    assert any(k.startswith("train/") for k in keys) and any(k.startswith("time/") for k in keys)
    assert page.js("document.querySelectorAll('details.traj').length") >= 2  # best and worst
    evals_text = page.js("document.querySelector('#sec-evals').innerText")
    assert evals_text.count("after (step 3)") == 2  # the held-out split, and HumanEval (eval.sources)
    assert "t · humaneval" in evals_text


def test_report_alerts_flagged_trajectories_and_untrusted_text(tmp_path: Path, page: Page) -> None:
    run = synthetic_run(tmp_path, "alerts", 9)
    assert main(["report", str(run), "--out", str(tmp_path / "r.html")]) == 0
    page.goto((tmp_path / "r.html").as_uri())
    _assert_clean(page)
    charts = page.charts()
    _points_per_step(charts, {"alerts": list(range(1, 10))})
    keys = {c["key"] for c in charts}
    assert {
        "reward",
        "hack",
        "train/kl",
        "time/stages",
        "time/throughput",
        "sandbox/status",
        "domain/*/reward/mean",
    } <= keys
    kl = next(c for c in charts if c["key"] == "train/kl")
    assert page.js(f"document.getElementById('{kl['id']}').data[0].y[1]") is None  # step 2 did not log it
    for c in charts:  # every chart marks the alert steps, and hovering there tells why
        assert sorted(c["shapes"]) == [3, 6, 9]
        text = c["traces"][0]["text"]
        assert "hack rate 0.25 &gt; 0.2 at step 3 &lt;i&gt;" in text[2] and text[1] == ""
    alerts = page.js("document.querySelector('#sec-alerts').innerText")
    assert "hack rate 0.25 > 0.2 at step 6 <i>" in alerts
    evals = page.js("document.querySelector('#sec-evals').innerText")
    assert "before (step 0)" in evals and "after (step 9)" in evals and "+0.25" in evals and "difficulty 2" in evals
    flagged = page.js("Array.from(document.querySelectorAll('details.traj.flagged')).map(d => d.id)")
    assert flagged == ["traj-3-1", "traj-6-1", "traj-9-1"]
    assert page.js("document.getElementById('traj-6-1').open") is False
    page.js("document.querySelector('#traj-6-1 > summary').click()")
    shown = page.js(
        "(() => { const d = document.getElementById('traj-6-1'); const p = d.querySelectorAll('.turn pre');"
        " const last = p[p.length - 1]; return {open: d.open, h: last.getBoundingClientRect().height,"
        " text: last.innerText, turns: p.length, body: d.innerText}; })()"
    )
    assert shown["open"] and shown["h"] > 0 and shown["turns"] == 5
    assert shown["text"] == HOSTILE + "\n# final answer 6-1"  # the model's text, shown as text
    assert "test_tamper" in shown["body"] and "attempt 2" in shown["body"] and "feedback" in shown["body"]
    assert "assert add(0, 1) == 1" in shown["body"] and "format" in shown["body"]  # tests, reward breakdown
    _assert_clean(page)
    page.js("window.scrollTo(0, 0)")
    page.screenshot(ARTIFACTS / "report-alerts.png")


def test_two_runs_overlaid(tmp_path: Path, page: Page) -> None:
    a = synthetic_run(tmp_path, "baseline", 10, seed=1)
    b = synthetic_run(tmp_path, "tuned", 7, seed=2, alerts=False)
    out = tmp_path / "compare.html"
    assert main(["report", str(a), str(b / "traces"), "--out", str(out)]) == 0  # a run dir or its store
    page.goto(out.as_uri())
    page.js("new Promise(r => setTimeout(r, 300))")
    _assert_clean(page)
    charts = page.charts()
    _points_per_step(charts, {"baseline": list(range(1, 11)), "tuned": list(range(1, 8))})
    for c in charts:
        assert {t["run"] for t in c["traces"]} == {"baseline", "tuned"}, c["id"]
    pass_rate = next(c for c in charts if c["key"] == "reward/pass_rate")
    assert [t["name"] for t in pass_rate["traces"]] == ["baseline", "tuned"]  # legend by run
    reward = next(c for c in charts if c["key"] == "reward")
    assert "tuned · completion" in [t["name"] for t in reward["traces"]]
    assert page.js("document.querySelectorAll('details.traj.flagged').length") == 3 + 2
    assert page.js("!!document.getElementById('traj-6-1-run1')")  # the second run's ids differ
    page.screenshot(ARTIFACTS / "report.png")  # (docs/report.png, the README's, is a quickstart run's)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        return bytes(r.read())


def test_dashboard_refreshes_as_steps_land(tmp_path: Path, page: Page) -> None:
    run = synthetic_run(tmp_path, "live", 4)
    dash = Dashboard([str(run)], interval_s=0.2)
    server = make_server(dash, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        html = _get(base).decode()
        assert "rlvr report: live" in html and "data-live='0.2'" in html
        assert not re.search(r"<(?:script|link|img|iframe)[^>]*\b(?:src|href)\s*=", html)
        status = json.loads(_get(base + "data.json"))
        assert status["last_step"] == 4 and status["num_steps"] == [4]
        with pytest.raises(urllib.error.HTTPError) as e:
            _get(base + "../etc/passwd")
        assert e.value.code == 404
        page.goto(base)
        _assert_clean(page)
        _points_per_step(page.charts(), {"live": [1, 2, 3, 4]})
        page.js("document.querySelector('#traj-3-1 > summary').click()")  # a reader has one open
        store = TraceStore(str(run / "traces"))
        write_synthetic_step(store, 5, random.Random(5))
        write_synthetic_step(store, 6, random.Random(6))  # a new flagged trajectory and alert
        status = json.loads(_get(base + "data.json"))
        assert status["last_step"] == 6 and status["version"] == json.loads(_get(base + "report.json"))["version"]
        page.js(
            "new Promise((ok, no) => { const t0 = Date.now(); (function wait() {"
            " const gd = document.querySelector('.js-plotly-plot');"
            " if (gd && gd.data[0].x.length === 6) return ok(true);"
            " if (Date.now() - t0 > 20000) return no(new Error('no refresh')); setTimeout(wait, 100); })(); })"
        )
        _assert_clean(page)
        _points_per_step(page.charts(), {"live": [1, 2, 3, 4, 5, 6]})
        assert page.js("document.getElementById('traj-3-1').open") is True  # kept open across the refresh
        assert page.js("!!document.getElementById('traj-6-1')")
        assert "at step 6" in page.js("document.querySelector('#sec-alerts').innerText")
        assert page.js("window.rlvrUpdates") >= 1
        assert "last step 6" in page.js("document.getElementById('live').textContent")
        assert [u for u in page.requests() if not u.startswith(base)] == []  # nothing but the dashboard
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT at its default and unblocked, as a terminal starts
    a command. A child inherits an ignored or blocked SIGINT, and in the whole suite's
    pytest process something earlier leaves it so (the dashboard then sat in select()
    through Ctrl-C, per the stack faulthandler printed); a user's Ctrl-C is not ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_dashboard_command_serves_until_ctrl_c(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path, "cli", 2, alerts=False)
    # -X faulthandler: if it does not stop, SIGABRT makes it print every thread's stack
    cmd = [sys.executable, "-X", "faulthandler", "-m", "rlvr.cli", "dashboard", str(run), "--port", "0"]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        preexec_fn=_as_from_a_terminal,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"at (http://127\.0\.0\.1:\d+/) \(Ctrl-C stops\)", line)
        assert m, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        assert json.loads(_get(m.group(1) + "data.json"))["last_step"] == 2
        assert b"rlvr report: cli" in _get(m.group(1))
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=30)
            raise AssertionError(f"still serving 30 s after Ctrl-C; its threads:\n{err[-6000:]}") from None
        assert proc.returncode == 0 and "stopped" in err and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_report_shows_what_the_task_check_quarantined(tmp_path: Path, page: Page) -> None:
    run = synthetic_run(tmp_path, "checked", 3)
    check = {
        "tasks": 20,
        "cached": 4,
        "domains": {"python": {"quarantined": 2, "tasks": 16}, "math": {"quarantined": 0, "tasks": 4}},
        "quarantined": [
            {"task_id": "py/<b>x</b>", "domain": "python", "scores": {}, "problems": ["the reference earns 0.5"]},
            {"task_id": "py/y", "domain": "python", "scores": {}, "problems": ["a", "the exploit visible_table <i>"]},
        ],
        "failing_domains": [],
    }
    (run / "task_check.json").write_text(json.dumps(check))
    bare = synthetic_run(tmp_path, "unchecked", 3)
    assert main(["report", str(run), "--out", str(tmp_path / "r.html")]) == 0
    page.goto((tmp_path / "r.html").as_uri())
    _assert_clean(page)
    text = page.js("document.querySelector('#sec-task-check').innerText")
    assert "20 tasks checked before training, 2 quarantined" in text
    rows = page.js("Array.from(document.querySelectorAll('table.quarantine tr')).map(r => r.innerText)")
    assert rows[1].split("\t") == ["py/<b>x</b>", "python", "the reference earns 0.5"]  # escaped, shown as text
    assert rows[2].split("\t") == ["py/y", "python", "a\nthe exploit visible_table <i>"]
    assert main(["report", str(bare), "--out", str(tmp_path / "b.html")]) == 0
    page.goto((tmp_path / "b.html").as_uri())
    assert "No task check recorded" in page.js("document.querySelector('#sec-task-check').innerText")


def _many_domains_run(root: Path, n_domains: int, steps: int) -> Path:
    """A run over `n_domains` domains (names with '/', as reasoning-gym's are): domain d's
    reward climbs by d/1000 a step, so the last domains moved most."""
    run = root / "many"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"name": "many"}))
    store = TraceStore(str(run / "traces"))
    rng = random.Random(0)
    names = [f"reasoning/d{d:02d}" for d in range(n_domains)]
    for step in range(1, steps + 1):
        metrics: dict[str, float] = {"reward/mean": 0.1 * step}
        for d, name in enumerate(names):
            metrics[f"domain/{name}/reward/mean"] = 0.001 * d * step
            metrics[f"domain/{name}/reward/pass_rate"] = 0.5
            metrics[f"domain/{name}/reward/completion"] = 0.5
            metrics[f"domain/{name}/episodes"] = 2.0
            metrics[f"domain/{name}/informative"] = 0.5 if d % 2 else 0.0
            metrics[f"curriculum/domain_share/{name}"] = 1 / n_domains
        trajs = [_trajectory(rng, step, i, []) for i in range(2)]
        store.write_step(step, [(t, True) for t in trajs], metrics)
    check = {"tasks": 60, "domains": {names[3]: {"quarantined": 2, "tasks": 2}}, "quarantined": []}
    (run / "task_check.json").write_text(json.dumps(check))
    return run


def test_a_hundred_domains_are_heatmaps_a_sortable_table_and_the_movers(tmp_path: Path, page: Page) -> None:
    from rlvr.report.charts import chart_of

    assert chart_of("domain/reasoning/gcd/reward/mean") == (
        "domain/*/reward/mean",
        "domain",
        "reward/mean per domain",
        "reasoning/gcd",
    )
    assert chart_of("domain/reasoning/gcd/episodes")[::3] == ("domain/*/episodes", "reasoning/gcd")
    assert chart_of("curriculum/domain_share/reasoning/gcd")[::3] == ("curriculum/domain_share", "reasoning/gcd")
    run = _many_domains_run(tmp_path, 100, 8)
    assert main(["report", str(run), "--out", str(tmp_path / "r.html")]) == 0
    page.goto((tmp_path / "r.html").as_uri())
    _assert_clean(page)
    charts = page.charts()
    heat = [
        c
        for c in charts
        if c["key"]
        in ("domain/*/reward/mean", "domain/*/reward/pass_rate", "domain/*/informative", "curriculum/domain_share")
    ]
    assert len(heat) == 4 and all(len(c["traces"]) == 1 for c in heat)
    assert page.js("document.querySelectorAll('.chart.wide').length") == 4
    rows = page.js(f"document.getElementById('{heat[0]['id']}').data[0].y.length")
    assert rows == 100 and page.js(f"document.getElementById('{heat[0]['id']}').data[0].type") == "heatmap"
    # no chart overlays 100 lines; components, episodes and weights per domain are in the table only
    assert max(len(c["traces"]) for c in charts) < 10
    assert not [c for c in charts if c["key"] in ("domain/*/reward/completion", "domain/*/episodes")]
    movers = [c["key"] for c in charts if c["key"].startswith("domain/moved/")]
    assert movers == [f"domain/moved/many/reasoning/d{d:02d}" for d in (99, 98, 97, 96, 95, 94)]
    table = "#sec-domains table.sortable"
    first = f"Array.from(document.querySelectorAll('{table} tr')).slice(1, 3).map(r => r.children[0].innerText)"
    assert page.js(first) == ["reasoning/d00", "reasoning/d01"]  # sorted by name at first
    page.js(f"document.querySelectorAll('{table} th')[3].click()")  # change: largest first
    assert page.js(first) == ["reasoning/d99", "reasoning/d98"]
    page.js(f"document.querySelectorAll('{table} th')[3].click()")  # again: smallest first
    assert page.js(first) == ["reasoning/d00", "reasoning/d01"]
    quarantined = page.js(f"Array.from(document.querySelectorAll('{table} tr'))"
                          ".find(r => r.children[0].innerText === 'reasoning/d03').children[8].innerText")  # fmt: skip
    assert quarantined == "2"
    episodes = page.js(f"document.querySelectorAll('{table} tr')[1].children[6].innerText")
    assert episodes == "16"  # 2 a step over 8 steps
