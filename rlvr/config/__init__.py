"""The typed run configuration: YAML plus `a.b=c` overrides, validated before anything loads.

Every field is documented once, by the docstring under it; that text is also what
`rlvr train --help` prints for the key. Unknown keys and bad values fail with a message
naming the dotted key and what is allowed. One module per section (`model`, `tasks`,
`generation`, `algo`, `train`, `curriculum`, `reward`, `sandbox`, `engine`, `dist`,
`observe`, `sft`), `RunConfig` and the rules spanning sections in `run`, the loaders in `load`,
the shared base in `base`; all re-exported here. The config imports nothing above it:
names that other packages own (reward terms, hack signatures, alert rules) are checked
by those packages when a run starts (rlvr.train.preflight.check_names).
"""

from __future__ import annotations

from rlvr.config.algo import AlgoConfig
from rlvr.config.base import ConfigError
from rlvr.config.curriculum import CurriculumConfig
from rlvr.config.dist import DistConfig, QueueConfig, StorageConfig
from rlvr.config.domains import DomainConfig
from rlvr.config.engine import EngineConfig
from rlvr.config.generation import GenerationConfig
from rlvr.config.load import apply_override, describe_fields, load_config, load_plugins, load_run_config
from rlvr.config.model import LoraSettings, ModelConfig
from rlvr.config.observe import AlertRuleConfig, AlertsConfig, LogConfig, TraceConfig
from rlvr.config.reward import FormatRulesConfig, JudgeConfig, LearnedConfig, RewardConfig, TermConfig
from rlvr.config.rm import RmConfig
from rlvr.config.run import RunConfig
from rlvr.config.sandbox import SandboxConfig
from rlvr.config.sft import RftConfig, SftConfig
from rlvr.config.tasks import PromptConfig, TasksConfig
from rlvr.config.train import BufferConfig, EvalConfig, RolloutConfig, TrainConfig

__all__ = [
    "AlertRuleConfig",
    "AlertsConfig",
    "AlgoConfig",
    "BufferConfig",
    "ConfigError",
    "CurriculumConfig",
    "DistConfig",
    "DomainConfig",
    "EngineConfig",
    "EvalConfig",
    "FormatRulesConfig",
    "GenerationConfig",
    "JudgeConfig",
    "LearnedConfig",
    "LogConfig",
    "LoraSettings",
    "ModelConfig",
    "PromptConfig",
    "QueueConfig",
    "RewardConfig",
    "RftConfig",
    "RmConfig",
    "RolloutConfig",
    "RunConfig",
    "SandboxConfig",
    "SftConfig",
    "StorageConfig",
    "TasksConfig",
    "TermConfig",
    "TraceConfig",
    "TrainConfig",
    "apply_override",
    "describe_fields",
    "load_config",
    "load_plugins",
    "load_run_config",
]
