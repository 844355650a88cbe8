"""``pipeline.proxy`` is the proxy's one public face: its serving names need the ``proxy`` extra and say so when it is
missing, ``pipeline/sanitize/`` holds no proxy module, and the old paths under ``pipeline.sanitize`` still work for one
minor version with a ``DeprecationWarning`` naming the new path."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import pipeline.proxy
import pipeline.sanitize

ROOT = Path(__file__).resolve().parents[3]
MOVED = ["ProxyConfig", "Proxy", "create_proxy_app", "run_proxy"]


@pytest.mark.parametrize("name", MOVED)
def test_the_old_sanitize_path_warns_naming_the_new_one_and_gives_the_same_object(name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(pipeline.sanitize, name)
    (warning,) = caught
    assert issubclass(warning.category, DeprecationWarning)
    assert f"pipeline.sanitize.{name} is deprecated" in str(warning.message)
    assert f"use pipeline.proxy.{name}" in str(warning.message)
    assert warning.filename == __file__  # points at the caller's line
    assert value is getattr(pipeline.proxy, name)
    assert value.__module__ == "pipeline.proxy"


@pytest.mark.parametrize("name", MOVED)
def test_the_old_path_warns_on_every_use_and_is_out_of_the_sanitize_face(name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(pipeline.sanitize, name)
        getattr(pipeline.sanitize, name)
    assert len(caught) == 2
    assert name not in pipeline.sanitize.__all__
    assert name not in dir(pipeline.sanitize)
    assert name in pipeline.proxy.__all__


def test_from_the_old_path_import_still_works_with_the_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"use pipeline\.proxy\.ProxyConfig"):
        from pipeline.sanitize import ProxyConfig
    assert ProxyConfig is pipeline.proxy.ProxyConfig


def test_an_unknown_name_of_either_face_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"pipeline\.sanitize"):
        getattr(pipeline.sanitize, "Proxyy")  # noqa: B009
    with pytest.raises(AttributeError, match=r"pipeline\.proxy"):
        getattr(pipeline.proxy, "Sanitizer")  # noqa: B009


def test_sanitize_holds_no_proxy_module() -> None:
    sanitize = ROOT / "pipeline" / "sanitize"
    assert not [path.name for path in sanitize.glob("*.py") if "proxy" in path.name]
    assert (ROOT / "pipeline" / "proxy" / "__init__.py").is_file()


@pytest.mark.server  # a subprocess without the extra
def test_without_the_extra_the_config_imports_and_each_serving_name_says_what_to_install() -> None:
    script = textwrap.dedent(
        """
        import sys, warnings
        sys.modules["uvicorn"] = None
        sys.modules["prometheus_client"] = None
        import pipeline.proxy, pipeline.sanitize
        pipeline.proxy.ProxyConfig(upstream="http://127.0.0.1:9/v1")
        warnings.simplefilter("ignore", DeprecationWarning)
        for face in (pipeline.proxy, pipeline.sanitize):
            for name in ("Proxy", "ProxyApp", "create_proxy_app", "run_proxy"):
                if face is pipeline.sanitize and name == "ProxyApp":
                    continue
                try:
                    getattr(face, name)
                except ImportError as error:
                    assert "pip install 'llm-stream-pipeline[proxy]'" in str(error), error
                    assert f"pipeline.proxy.{name}" in str(error), error
                else:
                    raise AssertionError(f"{face.__name__}.{name} worked without uvicorn and prometheus-client")
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
