"""The `trace`, `log` and `alerts` sections: what a run records and reports.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rlvr.config.base import _Section, yaml_off


class TraceConfig(_Section):
    uri: str | None = None
    """Where the Parquet trace store goes (every trajectory and every step's metrics, one
    part file per step; docs/traces.md): a local path or an fsspec URL such as
    s3://bucket/run (needs s3fs); null: <run directory>/traces."""


class AlertRuleConfig(_Section):
    action: Literal["off", "warn", "checkpoint", "stop"] | None = None
    """off, warn (store, console, sinks, webhook), checkpoint (also save a checkpoint now),
    stop (save a checkpoint and end the run with exit code 4 and the reason); null: the rule's default."""
    threshold: float | None = None
    """The level the rule fires at (docs/alerts.md has each rule's default and unit); null: the default."""

    _yaml_off = field_validator("action", mode="before")(yaml_off)


class AlertsConfig(_Section):
    enabled: bool = True
    """Evaluate the alert rules after every step (docs/alerts.md)."""
    window: int = Field(5, ge=2)
    """Steps each rule looks back over (window means; the baseline median of relative rules)."""
    webhook: str | None = None
    """URL that each alert is POSTed to as JSON (e.g. a chat or paging hook); null: none."""
    webhook_timeout_s: float = Field(5.0, gt=0)
    """A webhook that does not answer in time is reported once on the console; training goes on."""
    rules: dict[str, AlertRuleConfig] = Field(default_factory=dict)
    """Per-rule settings by name, e.g. {hack_rate: {action: stop, threshold: 0.2}} (the
    rules are the monitor's, rlvr.trace.alerts.RULES; an unknown name is refused when the
    run starts, with the valid names)."""


class LogConfig(_Section):
    sinks: list[Literal["tensorboard", "wandb", "mlflow"]] = Field(default_factory=lambda: ["tensorboard"])  # type: ignore[arg-type]
    """Where every step's metrics go besides metrics.jsonl and the trace store (always
    written): tensorboard (event files under <run>/tensorboard), wandb (needs rlvr[wandb];
    offline by default, under <run>/wandb), mlflow (needs rlvr[mlflow]). Names are the
    same everywhere: reward/..., domain/<d>/..., hack/..., train/..., time/..., sandbox/..."""
    wandb_project: str = "rlvr"
    """Weights & Biases project name."""
    wandb_mode: Literal["offline", "online"] = "offline"
    """offline: written under <run>/wandb, uploaded later with `wandb sync` (no network)."""
    mlflow_tracking_uri: str | None = None
    """MLflow tracking URI (a server or a database URL); null: a local store under <run>/mlflow."""
    mlflow_experiment: str = "rlvr"
    """MLflow experiment name."""
