"""The deployment files (deploy/): the image and the Kubernetes manifests say what the
code needs. Parsed and checked field by field: the RayJob's command must be a valid run
config, its Ray version the one pinned, the sandbox pods must get what the jail needs
and a check before code arrives, the queue's Redis must persist every write."""

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import yaml

from rlvr.config import load_config
from rlvr.sandbox.service import OPEN_PATHS

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / "k8s" / name).read_text()) if d]


def _kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"one {kind} expected"
    return found[0]


def _pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = [*project["dependencies"], *project["optional-dependencies"]["dist"]]
    return dict(s.split("==", 1) for s in specs if "==" in s)


def _container(pod_template: dict[str, Any]) -> dict[str, Any]:
    containers = pod_template["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def test_the_image_pins_torch_and_installs_what_the_runner_and_sandbox_need() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", text, re.M)
    assert f"ARG TORCH_VERSION={_pins()['torch']}" in text
    assert re.search(r"ARG EXTRAS=.*\bdist\b", text)  # Ray and redis-py
    for pkg in ("libseccomp2", "redis-server"):
        assert re.search(rf"apt-get install[^\n]*(\\\n[^\n]*)*\b{pkg}\b", text), pkg
    assert "COPY rlvr ./rlvr" in text


def test_the_rayjob_runs_a_valid_ray_config_on_the_pinned_ray() -> None:
    job = _kind(_docs("rayjob.yaml"), "RayJob")
    assert job["apiVersion"] == "ray.io/v1"
    spec = job["spec"]
    argv = shlex.split(spec["entrypoint"])
    assert argv[:3] == ["rlvr", "train", "/config/run.yaml"]
    cfg = load_config(None, argv[3:])  # every override must be a real, valid key
    assert cfg.dist.backend == "ray" and cfg.dist.address == "auto"
    assert cfg.queue.backend == "redis" and cfg.queue.url
    assert spec["rayClusterSpec"]["rayVersion"] == _pins()["ray"]
    assert spec["backoffLimit"] >= 1  # a failed driver runs again and resumes

    cluster = spec["rayClusterSpec"]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"  # no role on the head
    groups = {g["groupName"]: g for g in cluster["workerGroupSpecs"]}
    gpu = _container(groups["gpu"]["template"])
    assert int(gpu["resources"]["limits"]["nvidia.com/gpu"]) >= max(cfg.dist.rollout_gpus, cfg.dist.learner_gpus)
    assert groups["gpu"]["replicas"] >= cfg.dist.rollout_workers + 1  # the learner and every worker placed

    sandbox = groups["sandbox"]
    assert yaml.safe_load(sandbox["rayStartParams"]["resources"].strip("'")) or "sandbox" in str(
        sandbox["rayStartParams"]["resources"]
    )
    assert '\\"sandbox\\": 1' in sandbox["rayStartParams"]["resources"]
    assert sandbox["replicas"] >= cfg.dist.sandbox_workers
    box = _container(sandbox["template"])
    assert box["securityContext"]["runAsUser"] == 0 and box["securityContext"]["privileged"] is True
    assert box["startupProbe"]["exec"]["command"] == ["rlvr", "sandbox", "check"]
    assert int(box["resources"]["requests"]["cpu"]) >= cfg.dist.sandbox_cpus

    # every pod sees the run directories, and the volumes it mounts exist
    for template in [cluster["headGroupSpec"]["template"], groups["gpu"]["template"]]:
        c = _container(template)
        volumes = {v["name"] for v in template["spec"]["volumes"]}
        assert {m["name"] for m in c["volumeMounts"]} <= volumes
        assert any(m["mountPath"] == cfg.output_dir for m in c["volumeMounts"])


def test_the_queue_redis_persists_every_write_where_the_rayjob_looks() -> None:
    docs = _docs("redis.yaml")
    redis = _container(_kind(docs, "StatefulSet")["spec"]["template"])
    args = redis["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    assert args[args.index("--appendfsync") + 1] == "always"
    assert _kind(docs, "StatefulSet")["spec"]["volumeClaimTemplates"]
    service = _kind(docs, "Service")
    job = _kind(_docs("rayjob.yaml"), "RayJob")
    url = next(a for a in shlex.split(job["spec"]["entrypoint"]) if a.startswith("queue.url="))
    host, port = re.match(r"queue\.url=redis://([^:/]+):(\d+)/", url).groups()  # type: ignore[union-attr]
    assert host == service["metadata"]["name"] and int(port) == service["spec"]["ports"][0]["port"]


def test_the_sandbox_service_gets_what_the_jail_needs_and_reaches_nothing() -> None:
    docs = _docs("sandbox-service.yaml")
    deployment = _kind(docs, "Deployment")
    pod = deployment["spec"]["template"]
    c = _container(pod)
    assert c["command"][:3] == ["rlvr", "sandbox", "serve"]
    port = int(c["command"][c["command"].index("--port") + 1])
    assert c["command"][c["command"].index("--host") + 1] == "0.0.0.0"
    assert c["securityContext"]["runAsUser"] == 0 and c["securityContext"]["privileged"] is True
    assert c["startupProbe"]["exec"]["command"] == ["rlvr", "sandbox", "check"]
    assert c["readinessProbe"]["httpGet"]["path"] in OPEN_PATHS  # answered without the token
    assert any(e["name"] == "RLVR_SANDBOX_TOKEN" and "secretKeyRef" in e["valueFrom"] for e in c["env"])
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert pod["spec"]["tolerations"] and pod["spec"]["nodeSelector"]  # its own node pool

    policy = _kind(docs, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"} and policy["egress"] == []
    assert [p["port"] for rule in policy["ingress"] for p in rule["ports"]] == [port]
    service = _kind(docs, "Service")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
