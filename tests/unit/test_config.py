from pathlib import Path

import pytest

from rlvr.config import ConfigError, RunConfig, describe_fields, load_config

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.yaml"))


def test_defaults_validate() -> None:
    cfg = load_config()
    assert isinstance(cfg, RunConfig)
    assert cfg.algo.advantage == "grpo"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads(path: Path) -> None:
    """Each example loads, and sets no key its command never reads (sft_*.yaml are for
    rlvr sft, the others for rlvr train)."""
    from rlvr.config.run import check_command_keys

    cfg = load_config(path)
    check_command_keys(cfg, "sft" if path.name.startswith("sft_") and not cfg.stages else "train")


def test_examples_exist() -> None:
    assert any(p.name == "quickstart.yaml" for p in EXAMPLES)


def test_overrides_are_typed(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("train:\n  steps: 3\n")
    cfg = load_config(f, ["train.lr=2e-5", 'generation.stop=["```", "\\n\\n"]', "prompt.system=null", "seed=7"])
    assert cfg.train.steps == 3 and cfg.train.lr == 2e-5 and cfg.seed == 7
    assert cfg.generation.stop == ["```", "\n\n"]
    assert cfg.prompt.system is None


def test_unknown_key_in_override_names_it() -> None:
    with pytest.raises(ConfigError, match=r"'train.stpes'.*allowed: .*steps"):
        load_config(None, ["train.stpes=3"])


def test_unknown_key_in_yaml_names_it(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("algo:\n  group_sise: 4\n")
    with pytest.raises(ConfigError, match=r"algo.group_sise: unknown key; allowed here: .*group_size"):
        load_config(f)


def test_bad_values_name_key_and_rule() -> None:
    with pytest.raises(ConfigError, match=r"train.lr: .*greater than 0.*got -1"):
        load_config(None, ["train.lr=-1"])
    with pytest.raises(ConfigError, match=r"algo.advantage.*'gpro' is unknown; valid: drgrpo, gae, grpo"):
        load_config(None, ["algo.advantage=gpro"])
    with pytest.raises(ConfigError, match=r"algo.aggregation"):
        load_config(None, ["algo.aggregation=mean"])
    with pytest.raises(ConfigError, match="min_difficulty"):
        load_config(None, ["tasks.min_difficulty=3", "tasks.max_difficulty=2"])


def test_bad_files_and_overrides(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    f = tmp_path / "list.yaml"
    f.write_text("- 1\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(f)
    with pytest.raises(ConfigError, match=r"key\.path=value"):
        load_config(None, ["train.steps"])
    with pytest.raises(ConfigError, match="is a value, not a section"):
        load_config(None, ["seed.x=1"])


def test_every_field_is_documented() -> None:
    rows = describe_fields()
    assert len(rows) > 30
    undocumented = [k for k, _, d in rows if not d]
    assert undocumented == []


def test_plugins_import_or_fail_by_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rlvr.config import ConfigError, load_config, load_plugins

    plugin = tmp_path / "my_domain.py"
    plugin.write_text("LOADED = True\n")
    load_plugins(load_config(None, [f"plugins=[{plugin}]"]))
    import sys

    assert sys.modules["my_domain"].LOADED
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_xyz'"):
        load_plugins(load_config(None, ["plugins=[no_such_module_xyz]"]))


def test_model_device_is_checked() -> None:
    from rlvr.rollout.models import resolve_device

    assert load_config(None, ["model.device=cuda:1"]).model.device == "cuda:1"
    with pytest.raises(ConfigError, match=r"model\.device"):
        load_config(None, ["model.device=tpu"])
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in ("cpu", "cuda")


def test_a_bare_off_turns_the_task_check_off() -> None:
    from rlvr.config import load_config

    assert load_config(None, ["tasks.check=off"]).tasks.check == "off"  # YAML's bare off is false
    assert load_config(None, ["tasks.check=all"]).tasks.check == "all"
    with pytest.raises(ConfigError, match=r"tasks\.check"):
        load_config(None, ["tasks.check=true"])


def test_alert_rules_in_yaml_including_a_bare_off() -> None:
    from rlvr.config import load_config

    cfg = load_config(None, ["alerts.rules={equal_rewards: {action: off}, hack_rate: {threshold: 0.2, action: stop}}"])
    assert cfg.alerts.rules["equal_rewards"].action == "off"  # YAML's bare off is false: read as the action
    assert (cfg.alerts.rules["hack_rate"].threshold, cfg.alerts.rules["hack_rate"].action) == (0.2, "stop")
    from rlvr.train.preflight import check_names

    check_names(cfg)
    bad = load_config(None, ["alerts.rules={hack_ratee: {action: stop}}"])  # the rules are the monitor's
    with pytest.raises(ConfigError, match="no rule 'hack_ratee'"):
        check_names(bad)
    with pytest.raises(ConfigError, match=r"reward\.hack_ignore: unknown hack signature"):
        check_names(load_config(None, ["reward.hack_ignore=[early_exitt]"]))


def test_queue_url_needs_the_redis_backend() -> None:
    with pytest.raises(ConfigError, match=r"queue\.backend redis"):
        load_config(None, ["queue.url=redis://127.0.0.1:6379/0"])
    cfg = load_config(None, ["queue.backend=redis", "queue.url=redis://127.0.0.1:6379/0", "queue.fsync=always"])
    assert cfg.queue.backend == "redis" and cfg.queue.fsync == "always"
    with pytest.raises(ConfigError, match=r"queue\.fsync"):
        load_config(None, ["queue.fsync=sometimes"])


def test_ray_settings_are_checked() -> None:
    """On Ray the queue is redis; settings the Ray path cannot honour are refused by name,
    and Ray-only settings are refused on the local backend."""
    cfg = load_config(None, ["dist.backend=ray", "dist.rollout_workers=2", "dist.colocate_sandbox=true"])
    assert cfg.queue.backend == "redis" and cfg.dist.colocate_sandbox
    with pytest.raises(ConfigError, match=r"dist\.colocate_sandbox: set, but used only with dist\.backend 'ray'"):
        load_config(None, ["dist.colocate_sandbox=true"])
    with pytest.raises(ConfigError, match=r"rollout_cpus and dist\.sandbox_cpus must be above 0"):
        load_config(None, ["dist.backend=ray", "dist.colocate_sandbox=true", "dist.sandbox_cpus=0"])
    with pytest.raises(ConfigError, match=r"sandbox_max_workers \(1\) is below dist\.sandbox_workers \(2\)"):
        load_config(None, ["dist.backend=ray", "dist.sandbox_workers=2", "dist.sandbox_max_workers=1"])
    with pytest.raises(ConfigError, match="refill' is not supported yet"):
        load_config(None, ["dist.backend=ray", "algo.dynamic_sampling=refill"])
    with pytest.raises(ConfigError, match=r"queue\.url to a Redis every node can reach"):
        load_config(None, ["dist.backend=ray", "dist.address=auto"])


def test_sandbox_test_isolation_reaches_the_limits() -> None:
    from rlvr.envs.settings import env_settings

    assert env_settings(load_config()).limits.test_isolation == "shared"
    assert env_settings(load_config(None, ["sandbox.test_isolation=process"])).limits.test_isolation == "process"
    with pytest.raises(ConfigError, match=r"sandbox\.test_isolation"):
        load_config(None, ["sandbox.test_isolation=thread"])


def test_a_runs_resolved_config_loads_back_with_every_key_set(tmp_path: Path) -> None:
    """A run's config.yaml lists every key, engine sub-sections included: loading it back
    is not 'setting' keys of another engine."""
    import yaml

    from rlvr.config import load_run_config

    cfg = load_config(None, ["engine.kind=openai", "engine.openai.base_url=http://h/v1"])
    for c in (load_config(None, []), cfg):
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(c.model_dump(), sort_keys=False))
        assert load_run_config(tmp_path).model_dump() == c.model_dump()
