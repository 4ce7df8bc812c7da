"""What every config section shares: strict keys, field docstrings as documentation,
validation on assignment; and the error every config problem raises."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigError(ValueError):
    """A configuration problem, with the dotted key it concerns in the message."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=True)
