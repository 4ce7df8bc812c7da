"""What every config section shares: strict keys, field docstrings as documentation,
validation on assignment; and the error every config problem raises."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict


class ConfigError(ValueError):
    """A configuration problem, with the dotted key it concerns in the message."""


class _Section(BaseModel):
    # field docstrings are read when the key table is asked for (rlvr.config.load.field_docs),
    # not by pydantic at import: its use_attribute_docstrings costs every command 0.13 s
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def yaml_off(v: Any) -> Any:
    """A before-validator for a choice that includes "off": YAML reads a bare `off` (in a
    file or a dotted override) as false."""
    return "off" if v is False else v


_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")
SECRET_KEYS = ("alerts.webhook",)  # a webhook URL is itself a credential


def redact(data: Any, _path: str = "") -> Any:
    """A copy of a config (as plain data) safe to show or send elsewhere (a report, W&B,
    MLflow): webhook URLs replaced, user:password@ removed from every URL."""
    if isinstance(data, dict):
        return {k: redact(v, f"{_path}{k}.") for k, v in data.items()}
    if isinstance(data, list):
        return [redact(v, _path) for v in data]
    if isinstance(data, str):
        if _path.rstrip(".") in SECRET_KEYS:
            return "<redacted>"
        return _URL_USERINFO.sub(r"\g<scheme><redacted>@", data)
    return data
