"""The profile registry and the scripts it builds, as data (no server): one table names every profile, every
scripted profile builds, and the emulator's own exceptions derive from the library's root."""

from __future__ import annotations

import pytest

from operators import LlmStreamError
from pipeline.emulator import PROFILES, EmulatorConfig, ScriptOptions, build_script, replay_script
from pipeline.emulator._errors import ConnectionCutError, RequestError
from pipeline.emulator._profiles import _REGISTRY
from pipeline.emulator._script import Cut, Pause, Write

SCRIPTED = [name for name in PROFILES if name != "replay"]


def test_profiles_lists_the_registry_in_order() -> None:
    assert list(PROFILES) == [profile.name for profile in _REGISTRY]
    assert all(PROFILES[profile.name] == profile.description for profile in _REGISTRY)


@pytest.mark.parametrize("name", SCRIPTED)
def test_every_scripted_profile_builds_a_script(name: str) -> None:
    script = build_script(name, ScriptOptions(include_usage=True))
    assert 200 <= script.status < 600
    assert all(isinstance(step, Write | Pause | Cut) for step in script.steps)


def test_an_unknown_profile_is_a_key_error_naming_the_known_ones() -> None:
    with pytest.raises(KeyError, match="clean"):
        build_script("no-such-profile")


def test_replay_needs_replay_script() -> None:
    with pytest.raises(ValueError, match="replay_script"):
        build_script("replay")


def test_replay_script_splits_the_bytes_with_a_drip_between_pieces() -> None:
    script = replay_script(b"abcdefg", chunk_bytes=3, drip_ms=10)
    assert script.steps == (Write(b"abc"), Pause(0.01), Write(b"def"), Pause(0.01), Write(b"g"))
    assert script.body == b"abcdefg"
    assert script.is_event_stream


def test_drip_ms_overrides_the_default_pause() -> None:
    assert Pause(0.05) in build_script("slow-drip").steps
    assert Pause(0.001) in build_script("clean", ScriptOptions(drip_ms=1)).steps
    assert not any(isinstance(step, Pause) for step in build_script("clean").steps)


@pytest.mark.parametrize("name", ["replay", "no-such-profile"])
def test_the_default_profile_must_be_a_scripted_profile(name: str) -> None:
    with pytest.raises(ValueError, match="default_profile"):
        EmulatorConfig(default_profile=name)


def test_the_emulators_exceptions_derive_from_the_root() -> None:
    assert issubclass(ConnectionCutError, LlmStreamError)
    assert issubclass(RequestError, LlmStreamError)
    assert RequestError(404, "gone").body() == {
        "error": {"message": "gone", "type": "invalid_request_error", "param": None, "code": None}
    }
