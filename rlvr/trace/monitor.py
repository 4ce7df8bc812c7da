"""What happens to each step's metrics after the step: the metric sinks (TensorBoard, W&B,
MLflow), the alert rules, and each alert's way out (the trace store, the console, the
sinks, a webhook). The training loop acts on the alerts' actions (checkpoint, stop)."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from rlvr.config import RunConfig
from rlvr.trace.alerts import Alert, AlertEngine
from rlvr.trace.parquet import TraceStore

NOT_METRICS = ("step", "weights_fingerprint")  # in the row for the record, not charted


class RunStopped(RuntimeError):
    """An alert whose action is `stop` ended the run (after a checkpoint)."""

    def __init__(self, alert: Alert) -> None:
        super().__init__(f"stopped by alert at step {alert.step}: {alert.message}")
        self.alert = alert


class RunMonitor:
    def __init__(
        self,
        cfg: RunConfig,
        traces: TraceStore,
        *,
        history: list[dict[str, Any]],
        resume_step: int = 0,
        note: Callable[[str], None] | None = None,
    ) -> None:
        """`history`: the metrics rows of the steps already done (a resumed run), so that
        windows and alert states continue where they were."""
        from rlvr.trace.sinks import open_sinks

        self.cfg, self.traces = cfg, traces
        self.note = note or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.sinks = open_sinks(cfg, resume_step=resume_step)
        a = cfg.alerts
        self.engine = AlertEngine({k: v.model_dump() for k, v in a.rules.items()}, window=a.window)
        self.engine.replay(history)
        self._webhook_failed = False

    def step(self, step: int, row: Mapping[str, Any]) -> list[Alert]:
        """Log one step's metrics everywhere and return the alerts it raised (already
        stored, printed and sent)."""
        numbers = {k: float(v) for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        for key in NOT_METRICS:
            numbers.pop(key, None)
        for sink in self.sinks:
            sink.log_metrics(step, numbers)
        if not self.cfg.alerts.enabled:
            return []
        alerts = self.engine.observe({**row, "step": step})
        if alerts:
            self.traces.write_alerts(step, [a.to_dict() for a in alerts])
        for a in alerts:
            self.note(f"ALERT [{a.category}] step {a.step}: {a.message} -> {a.action}")
            for sink in self.sinks:
                sink.log_text(step, f"alerts/{a.rule}", a.message)
            self._post(a)
        return alerts

    def _post(self, alert: Alert) -> None:
        url = self.cfg.alerts.webhook
        if not url or self._webhook_failed:  # one failure: no more waiting on it this run
            return
        body = json.dumps({"run": self.cfg.name, "run_dir": str(self.cfg.run_dir), **alert.to_dict()}).encode()
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.cfg.alerts.webhook_timeout_s) as resp:
                resp.read()
        except Exception as e:  # anything at all (refused, timeout, not HTTP): training goes on
            self.note(
                f"note: the alert webhook failed ({type(e).__name__}: {e}); no more posts this run, "
                "alerts stay in the trace store and on the console"
            )
            self._webhook_failed = True

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
