"""The deployment files hold together with the proxy: the Kubernetes probes, the Prometheus annotations and the
Service point at paths and a port the proxy serves, and the Dockerfile runs it as a non-root user with a
HEALTHCHECK on /health (docs/proxy.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml  # type: ignore[import-untyped]

from pipeline.cli._main import build_parser
from pipeline.proxy import Proxy, ProxyConfig

ROOT = Path(__file__).resolve().parents[1]


def _documents() -> dict[str, Any]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all((ROOT / "deploy" / "kubernetes.yaml").read_text())}


def _container() -> dict[str, Any]:
    (container,) = _documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _config_of(args: list[str], env: dict[str, str]) -> ProxyConfig:
    parsed = vars(build_parser().parse_args(["proxy", *args]))
    flags = {k: v for k, v in parsed.items() if k not in ("run", "command")}
    return ProxyConfig.from_env(env, **flags)


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


def test_the_deployment_outlasts_the_proxys_grace_period_and_reads_its_keys_from_the_secret() -> None:
    docs = _documents()
    container = _container()
    secret = docs["Secret"]["stringData"]
    config = _config_of(container["args"], {})
    assert config.client_key_env in secret
    assert config.upstream_key_env in secret
    assert docs["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > config.grace_period


def test_the_dockerfile_runs_the_proxy_as_non_root_with_a_healthcheck_on_health() -> None:
    text = (ROOT / "Dockerfile").read_text()
    user = re.search(r"^USER (\S+)", text, re.MULTILINE)
    assert user is not None
    assert user.group(1) not in ("root", "0")
    port = re.search(r"LLM_STREAM_PROXY_PORT=(\d+)", text)
    assert port is not None
    assert re.search(rf"^EXPOSE {port.group(1)}$", text, re.MULTILINE)
    healthcheck = text[text.index("HEALTHCHECK"):]
    assert f"http://127.0.0.1:{port.group(1)}/health'" in healthcheck.split("\n\n")[0]
    assert "[emulator]" not in text
    assert "'.[proxy]'" in text
    assert re.search(r'^ENTRYPOINT \["llm-stream", "proxy"\]', text, re.MULTILINE)
