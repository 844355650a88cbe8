"""The deployment files hold together with the proxy (docs/proxy.md, "Containers"): the Kubernetes probes, the
Prometheus annotations and the Service point at paths and a port the proxy serves; the image is the package's
version, never ``:latest``, pulled only if not present; the pod passes Pod Security "restricted"; the keys come from a
Secret kept out of the manifest, whose example the proxy refuses to start with; the Dockerfile runs the proxy as a
non-root user that must be given keys, with a HEALTHCHECK that follows ``LLM_STREAM_PROXY_PORT``."""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml  # type: ignore[import-untyped]

import pipeline
from pipeline.cli._main import build_parser
from pipeline.proxy import Proxy, ProxyConfig
from pipeline.proxy._app import ProxyApp

ROOT = Path(__file__).resolve().parents[1]
IMAGE = f"llm-stream-proxy:{pipeline.__version__}"
"""The image reference the Dockerfile's build line and the manifest share: the package's version as the tag."""


def _documents(name: str = "kubernetes.yaml") -> dict[str, Any]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all((ROOT / "deploy" / name).read_text())}


def _pod() -> dict[str, Any]:
    return dict(_documents()["Deployment"]["spec"]["template"]["spec"])


def _container() -> dict[str, Any]:
    (container,) = _pod()["containers"]
    return dict(container)


def _config_of(args: list[str], env: dict[str, str]) -> ProxyConfig:
    parsed = vars(build_parser().parse_args(["proxy", *args]))
    flags = {k: v for k, v in parsed.items() if k not in ("run", "command")}
    return ProxyConfig.from_env(env, **flags)


def _dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, ``(NAME, arguments)``, continuation lines joined and comments left out."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in (ROOT / "Dockerfile").read_text().splitlines()
                                           if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in text.splitlines() if line.strip()]


def _docker_env() -> dict[str, str]:
    return dict(item.split("=", 1) for name, args in _dockerfile() if name == "ENV" for item in shlex.split(args))


def image_problems(container: dict[str, Any]) -> list[str]:
    """What keeps a container's image from saying which build it runs: a tag that moves, or none."""
    image, policy = container["image"], container.get("imagePullPolicy")
    tag = image.rpartition("/")[2].partition(":")[2]
    problems = []
    if not tag and "@" not in image:
        problems.append(f"{image}: no tag or digest")
    if tag == "latest":
        problems.append(f"{image}: the tag 'latest' moves")
    if policy != "IfNotPresent":
        problems.append(f"imagePullPolicy {policy}, not IfNotPresent")
    return problems


RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def _container_problems(container: dict[str, Any], pod_context: dict[str, Any]) -> list[str]:
    name, context = container["name"], container.get("securityContext", {})
    capabilities = context.get("capabilities", {})
    seccomp = (context.get("seccompProfile") or pod_context.get("seccompProfile") or {}).get("type")
    checks = {
        "privileged": bool(context.get("privileged")),
        "hostPort": any(port.get("hostPort") for port in container.get("ports", [])),
        "allowPrivilegeEscalation is not false": context.get("allowPrivilegeEscalation") is not False,
        "capabilities.drop lacks ALL": "ALL" not in capabilities.get("drop", []),
        "runAsNonRoot is not true": context.get("runAsNonRoot", pod_context.get("runAsNonRoot")) is not True,
        "runAsUser 0": context.get("runAsUser", pod_context.get("runAsUser")) == 0,
        f"seccompProfile {seccomp}": seccomp not in ("RuntimeDefault", "Localhost"),
    }
    added = [f"adds {cap}" for cap in capabilities.get("add", []) if cap != "NET_BIND_SERVICE"]
    return [f"{name}: {problem}" for problem in [*(key for key, found in checks.items() if found), *added]]


def restricted_problems(pod: dict[str, Any]) -> list[str]:
    """What Pod Security "restricted" refuses in a pod spec (its baseline controls included; the Kubernetes page
    "Pod Security Standards"): host namespaces, privileged containers, host ports, volumes outside the list, a
    capability added beyond NET_BIND_SERVICE or ALL not dropped, privilege escalation, root, and seccomp other than
    RuntimeDefault or Localhost (each set on the pod or on every container)."""
    problems = [f"{key} is true" for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]
    problems += [f"volume {volume.get('name')}: not an allowed type" for volume in pod.get("volumes", [])
                 if not set(volume) - {"name"} <= RESTRICTED_VOLUMES]
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        problems += _container_problems(container, pod.get("securityContext", {}))
    return problems


@pytest.mark.server
def test_the_probes_and_the_scrape_target_are_paths_and_the_port_the_proxy_serves() -> None:
    docs = _documents()
    container = _container()
    config = _config_of(container["args"], {})
    (port,) = container["ports"]
    assert port["containerPort"] == config.port
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == config.port
    annotations = docs["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == config.port
    probes = {name: container[name]["httpGet"] for name in ("livenessProbe", "readinessProbe")}
    assert {probe["port"] for probe in probes.values()} == {config.port}
    paths = [probe["path"] for probe in probes.values()] + [annotations["prometheus.io/path"]]
    # the same proxy, on a free loopback port: every path the deployment asks for answers 200, without an upstream
    with Proxy(config.upstream.replace("https://api.deepseek.com", "http://127.0.0.1:9")) as proxy:
        for path in paths:
            assert httpx.get(f"{proxy.url}{path}").status_code == 200, path
    assert probes["livenessProbe"]["path"] in ("/health", "/healthz")
    assert probes["readinessProbe"]["path"] == "/ready"


def test_the_image_is_the_packages_version_pulled_if_not_present_and_built_so() -> None:
    container = _container()
    assert container["image"] == IMAGE
    assert image_problems(container) == []
    for text in ((ROOT / "Dockerfile").read_text(), (ROOT / "deploy/kubernetes.yaml").read_text(),
                 (ROOT / "docs/proxy.md").read_text()):
        assert f"docker build -t {IMAGE} ." in text
        assert set(re.findall(r"llm-stream-proxy:([\w.-]+)", text)) == {pipeline.__version__}
        untagged = r"(?:-t |image: |docker-image |image load |docker tag )(?:\S+/)?llm-stream-proxy(?![:\w-])"
        assert not re.search(untagged, text)


@pytest.mark.parametrize(
    ("image", "policy", "problem"),
    [("llm-stream-proxy:latest", "IfNotPresent", "moves"), ("llm-stream-proxy", "IfNotPresent", "no tag"),
     ("registry.local:5000/llm-stream-proxy", "IfNotPresent", "no tag"), (IMAGE, "Always", "imagePullPolicy"),
     (IMAGE, None, "imagePullPolicy")],
)
def test_the_image_check_refuses_a_moving_or_missing_tag_and_an_eager_pull(
    image: str, policy: str | None, problem: str
) -> None:
    container = {"image": image, **({"imagePullPolicy": policy} if policy else {})}
    assert any(problem in found for found in image_problems(container))


def test_the_pod_passes_pod_security_restricted() -> None:
    assert restricted_problems(_pod()) == []
    assert _pod()["securityContext"]["runAsUser"] == int(dict(_dockerfile())["USER"])
    assert _container()["securityContext"]["readOnlyRootFilesystem"] is True


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def mutate(pod: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = pod
        for key in parents:
            node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
        if value is None:
            del node[last]
        else:
            node[last] = value
    return mutate


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (_set("securityContext.seccompProfile", None), "seccompProfile None"),
        (_set("securityContext.seccompProfile", {"type": "Unconfined"}), "seccompProfile Unconfined"),
        (_set("securityContext.runAsNonRoot", None), "runAsNonRoot"),
        (_set("securityContext.runAsUser", 0), "runAsUser 0"),
        (_set("containers.0.securityContext.capabilities", None), "drop lacks ALL"),
        (_set("containers.0.securityContext.capabilities.add", ["SYS_ADMIN"]), "adds SYS_ADMIN"),
        (_set("containers.0.securityContext.allowPrivilegeEscalation", None), "allowPrivilegeEscalation"),
        (_set("containers.0.securityContext.privileged", True), "privileged"),
        (_set("containers.0.ports.0.hostPort", 8809), "hostPort"),
        (_set("hostNetwork", True), "hostNetwork"),
        (_set("volumes", [{"name": "host", "hostPath": {"path": "/"}}]), "volume host"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_the_restricted_check_refuses_a_pod_missing_a_setting(
    mutate: Callable[[dict[str, Any]], None], problem: str
) -> None:
    pod = copy.deepcopy(_pod())
    mutate(pod)
    assert any(problem in found for found in restricted_problems(pod)), restricted_problems(pod)


def test_the_keys_come_from_a_secret_kept_out_of_the_manifest_whose_example_the_proxy_refuses() -> None:
    docs = _documents()
    assert "Secret" not in docs
    (source,) = _container()["envFrom"]
    example = _documents("examples/secret.yaml")["Secret"]
    assert source["secretRef"]["name"] == example["metadata"]["name"]
    config = _config_of(_container()["args"], {})
    assert set(example["stringData"]) == {config.client_key_env, config.upstream_key_env}
    with pytest.raises(ValueError, match="holds no key"):
        ProxyApp(config, environ=example["stringData"])  # applied unedited: the proxy does not start
    ProxyApp(config, environ=dict.fromkeys(example["stringData"], "a-key-of-its-own"))
    assert docs["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > config.grace_period
    for text in ((ROOT / "deploy/kubernetes.yaml").read_text(), (ROOT / "docs/proxy.md").read_text()):
        assert "kubectl create secret generic llm-stream-proxy-keys" in text


def test_the_image_runs_the_proxy_as_non_root_and_refuses_to_start_without_keys() -> None:
    instructions = _dockerfile()
    assert dict(instructions)["USER"] not in ("root", "0")
    assert ("ENTRYPOINT", '["llm-stream", "proxy"]') in instructions
    assert any("pip install '.[proxy]'" in args for name, args in instructions if name == "RUN")
    env = _docker_env()
    assert env["LLM_STREAM_PROXY_HOST"] == "0.0.0.0"
    assert ("EXPOSE", env["LLM_STREAM_PROXY_PORT"]) in instructions
    config = ProxyConfig.from_env({**env, "LLM_STREAM_PROXY_UPSTREAM": "https://api.deepseek.com/v1"})
    manifest = _config_of(_container()["args"], {})
    assert (config.client_key_env, config.upstream_key_env) == (manifest.client_key_env, manifest.upstream_key_env)
    with pytest.raises(ValueError, match="holds no key"):
        ProxyApp(config, environ={})
    for text in ((ROOT / "Dockerfile").read_text(), (ROOT / "docs/proxy.md").read_text()):
        run = re.search(r"docker run .*?" + re.escape(IMAGE), text, re.S)
        assert run is not None
        assert f"-e {config.client_key_env} " in run.group(0)
        assert f"-e {config.upstream_key_env} " in run.group(0)


def _healthcheck() -> list[str]:
    (args,) = [args for name, args in _dockerfile() if name == "HEALTHCHECK"]
    command: list[str] = json.loads(args.partition(" CMD ")[2])
    return command


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.server
def test_the_healthcheck_asks_health_at_the_port_the_variable_names() -> None:
    command = _healthcheck()
    assert command[0] == "python"
    assert not re.search(r"\d{4}", " ".join(command)), "a port written into the HEALTHCHECK"
    run = [sys.executable, *command[1:]]
    with Proxy("http://127.0.0.1:9/v1") as proxy:
        port = str(httpx.URL(proxy.url).port)
        env = {**os.environ, "LLM_STREAM_PROXY_PORT": port}
        assert subprocess.run(run, env=env, capture_output=True, timeout=30, check=False).returncode == 0
        env["LLM_STREAM_PROXY_PORT"] = str(_free_port())
        assert subprocess.run(run, env=env, capture_output=True, timeout=30, check=False).returncode != 0
