"""``ProxyConfig``: one value for the app, the server and the command line; every setting a flag and an
``LLM_STREAM_PROXY_*`` variable, a flag winning over the variable."""

from __future__ import annotations

import subprocess
import sys

import attrs
import pytest

from operators import Limits, RetryPolicy
from pipeline.cli._main import build_parser
from pipeline.proxy import ProxyConfig, create_proxy_app

UPSTREAM = "http://127.0.0.1:9/v1"


def _flags(*argv: str) -> dict[str, object]:
    parsed = vars(build_parser().parse_args(["proxy", *argv]))
    return {k: v for k, v in parsed.items() if k not in ("run", "command")}


@pytest.mark.server
def test_every_setting_is_a_flag_and_a_variable_shown_in_the_help() -> None:
    help_text = subprocess.run([sys.executable, "-m", "pipeline.cli", "proxy", "--help"], capture_output=True,
                               text=True, check=True, env={"COLUMNS": "200", "PATH": ""}).stdout
    settable = [field.name for field in attrs.fields(ProxyConfig) if "parse" in field.metadata]
    assert len(settable) == len(attrs.fields(ProxyConfig)) - 1  # retry_policy is Python's only
    for name in settable:
        assert f"--{name.replace('_', '-')}" in help_text
        assert ProxyConfig.env_var(name) in help_text


def test_variables_are_read_and_a_flag_wins_over_its_variable() -> None:
    env = {"LLM_STREAM_PROXY_UPSTREAM": UPSTREAM, "LLM_STREAM_PROXY_MAX_STREAMS": "7",
           "LLM_STREAM_PROXY_TOTAL_TIMEOUT": "12.5", "LLM_STREAM_PROXY_MODE": "buffered",
           "LLM_STREAM_PROXY_FORWARD_HEADERS": "X-One, x-two*", "LLM_STREAM_PROXY_LIMITS": "max_tool_calls=3",
           "LLM_STREAM_PROXY_LOG_FORMAT": "json"}
    config = ProxyConfig.from_env(env, **_flags("--max-streams", "9", "--retries", "2"))
    assert config.max_streams == 9
    assert config.total_timeout == 12.5
    assert config.mode == "buffered"
    assert config.forward_headers == ("x-one", "x-two*")
    assert config.limits == Limits(max_tool_calls=3)
    assert config.log_format == "json"
    assert config.policy() == RetryPolicy.normal(max_retries=2)
    assert ProxyConfig(upstream=UPSTREAM).policy() is None  # no retries of its own unless asked


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LLM_STREAM_PROXY_MAX_STREAMS": "many"}, "LLM_STREAM_PROXY_MAX_STREAMS: must be an integer"),
        ({"LLM_STREAM_PROXY_IDLE_TIMEOUT": "-1"}, "idle_timeout must be a positive number"),
        ({"LLM_STREAM_PROXY_LIMITS": "max_nothing=3"}, "unknown limit max_nothing"),
        ({"LLM_STREAM_PROXY_LOG_FORMAT": "xml"}, "log_format must be one of text, json, off"),
        ({"LLM_STREAM_PROXY_UPSTREAM": "localhost:8808"}, "upstream must be an http(s) URL"),
    ],
)
def test_a_bad_value_is_refused_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ProxyConfig.from_env({"LLM_STREAM_PROXY_UPSTREAM": UPSTREAM, **env})


@pytest.mark.server
def test_the_command_refuses_a_bad_setting_or_a_missing_key_in_one_line_with_exit_2() -> None:
    cases = [
        (["--upstream", UPSTREAM, "--limits", "max_tool_calls=0"], {}, "max_tool_calls must be a positive int"),
        ([], {}, "the upstream is required"),
        (["--upstream", UPSTREAM, "--client-key-env", "NO_SUCH_VAR"], {}, "NO_SUCH_VAR, which holds no key"),
        (["--upstream", UPSTREAM, "--upstream-key-env", "TWO"], {"TWO": "a-long-key-1,a-long-key-2"}, "more than one"),
    ]
    for argv, env, message in cases:
        result = subprocess.run([sys.executable, "-m", "pipeline.cli", "proxy", "--port", "0", *argv],
                                capture_output=True, text=True, timeout=60, env={"PATH": "", **env})
        assert result.returncode == 2, result.stderr
        assert message in result.stderr
        assert "Traceback" not in result.stderr
        assert result.stderr.strip().count("\n") == 0


def test_the_app_takes_the_config_or_its_fields() -> None:
    config = ProxyConfig(upstream=UPSTREAM, max_streams=3)
    assert create_proxy_app(config).config is config
    assert create_proxy_app(UPSTREAM, max_streams=3).config == config
    with pytest.raises(ValueError, match="max_streams"):
        create_proxy_app(UPSTREAM, max_streams=0)


@pytest.mark.server
def test_the_proxy_extra_is_what_the_proxy_imports_and_names_no_emulator() -> None:
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["proxy"]
    names = {requirement.split(">")[0].split("=")[0].split("[")[0] for requirement in extra}
    assert names == {"uvicorn", "httptools", "h11", "prometheus-client", "uvloop"}  # uvloop: imported by uvicorn
    assert all("sys_platform != 'win32'" in r for r in extra if r.startswith("uvloop"))  # it builds nowhere else
    code = ("import sys; import pipeline.proxy as s; s.Proxy, s.run_proxy, s.create_proxy_app; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'starlette', 'uvicorn', 'httptools', "
            "'h11', 'prometheus_client'}))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "['h11', 'httptools', 'prometheus_client', 'uvicorn']"  # not starlette: the emulator's
