"""The container and the Kubernetes base: linted, schema-valid, and saying what operations needs.

Docker cannot build here, so the image is checked by hadolint and by what it copies; the
manifests by kubernetes-validate (scripts/k8s-validate.sh) and by the rules below.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
VENV_BIN = ROOT / ".venv" / "bin"
LOOPS = ("scheduler", "executor", "reconciler", "archiver")
RESULT_FLUSH_SECONDS = 5  # workers/executor/runner.py RESULT_FLUSH_RESERVE_SECONDS


def _documents() -> list[dict]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def _by_kind(kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in _documents() if doc["kind"] == kind}


def _container(deployment: dict) -> dict:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_the_kustomization_lists_every_manifest_file_and_nothing_else():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(files)


def test_the_manifests_are_valid_kubernetes_objects():
    result = subprocess.run(
        [str(ROOT / "scripts" / "k8s-validate.sh")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_there_is_a_deployment_and_a_disruption_budget_per_loop_and_for_the_api_and_a_migrate_job():
    deployments = _by_kind("Deployment")
    budgets = _by_kind("PodDisruptionBudget")
    expected = {f"jobsched-{name}" for name in (*LOOPS, "api")}
    assert set(deployments) == expected
    assert set(budgets) == expected
    for name, budget in budgets.items():
        assert budget["spec"]["selector"]["matchLabels"] == deployments[name]["spec"]["selector"]["matchLabels"]
    (job,) = _by_kind("Job").values()
    assert _container(job)["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert set(_by_kind("Service")) == {"jobsched-api"}


@pytest.mark.parametrize("loop", LOOPS)
def test_each_loop_serves_metrics_and_is_probed_on_its_health_endpoint(loop):
    deployment = _by_kind("Deployment")[f"jobsched-{loop}"]
    container = _container(deployment)
    assert container["command"] == ["python", "manage.py", f"run_{loop}"]
    port = int(_option(container["args"], "--metrics-port"))
    assert container["ports"] == [{"name": "metrics", "containerPort": port}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(port)


def _selects(policy: dict, labels: dict) -> bool:
    selector = policy["spec"]["podSelector"]
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", expression  # the only operator these manifests use
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


@pytest.mark.parametrize("loop", LOOPS)
def test_each_loops_metrics_port_lets_in_only_the_scraper(loop):
    # /metrics and /healthz have no authentication: the pods listen on every interface
    # (WORKER_METRICS_HOST) only behind a NetworkPolicy; the kubelet probes from the pod's node.
    (config,) = _by_kind("ConfigMap").values()
    assert config["data"]["WORKER_METRICS_HOST"] == "0.0.0.0"
    deployment = _by_kind("Deployment")[f"jobsched-{loop}"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    policies = [policy for policy in _by_kind("NetworkPolicy").values() if _selects(policy, labels)]
    assert policies, f"no NetworkPolicy selects the {loop} pods"
    port = int(_option(_container(deployment)["args"], "--metrics-port"))
    for policy in policies:
        assert "Ingress" in policy["spec"]["policyTypes"]
        for rule in policy["spec"].get("ingress", []):
            assert [p["port"] for p in rule["ports"]] in ([port], ["metrics"])
            (peer,) = rule["from"]  # one peer: the scraper's pods in the scraper's namespace, both required
            assert set(peer) == {"namespaceSelector", "podSelector"}
            assert peer["namespaceSelector"]["matchLabels"] and peer["podSelector"]["matchLabels"]


def test_the_api_is_probed_on_healthz_and_readyz():
    container = _container(_by_kind("Deployment")["jobsched-api"])
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["command"][:3] == ["gunicorn", "-c", "gunicorn.conf.py"]


@pytest.mark.parametrize("name", [f"jobsched-{n}" for n in (*LOOPS, "api")])
def test_every_pod_runs_as_non_root_with_requests_the_pod_name_and_the_shared_config(name):
    deployment = _by_kind("Deployment")[name]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert {"configMapRef": {"name": "jobsched-config"}} in container["envFrom"]
    env = {item["name"]: item for item in _container(deployment)["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def test_the_executor_is_given_longer_than_its_grace_plus_the_result_flush():
    deployment = _by_kind("Deployment")["jobsched-executor"]
    grace = float(_option(_container(deployment)["args"], "--grace"))
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > grace + RESULT_FLUSH_SECONDS


def test_the_configured_settings_exist_in_the_settings_module():
    (config,) = _by_kind("ConfigMap").values()
    settings_text = (ROOT / "jobsched_project" / "settings.py").read_text()
    for name in config["data"]:
        assert f'"{name}"' in settings_text, name


def test_the_dockerfile_passes_hadolint():
    result = subprocess.run(
        [str(VENV_BIN / "hadolint"), "--config", "deploy/hadolint.yaml", "deploy/Dockerfile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_copies_every_python_package_and_runs_as_non_root():
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    packages = {
        path.parent.name for path in ROOT.glob("*/__init__.py") if path.parent.name not in {"tests", "bench"}
    }  # neither ships
    copied = set(re.findall(r"^COPY --chown=\S+ (\w+) \./\1$", dockerfile, re.MULTILINE))
    assert packages <= copied, packages - copied
    assert "collectstatic" in dockerfile
    assert re.search(r"^USER 10001", dockerfile, re.MULTILINE)
    # Bytecode is compiled into the image before the processes lose the right to write it.
    compiled = re.search(r"python -m compileall (\S+ )*/app$", dockerfile, re.MULTILINE)
    assert compiled and compiled.start() < dockerfile.index("PYTHONDONTWRITEBYTECODE=1") < dockerfile.index(
        "USER 10001"
    )
    ignored = (ROOT / ".dockerignore").read_text()
    for package in packages:
        assert f"!{package}/" in ignored
