"""The registry's tools that are not functions (docs/decisions/0072-client-run-tool-calls.md): custom (free-form)
tools with an optional grammar, handlers registered by kind, what each kind's handler may return, and the calls of a
kind nothing handles, answered as an unknown tool is."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pipeline import CustomTool, Grammar, ToolDefinitionError, ToolRegistry

LARK = 'start: "add " NUMBER\n%import common.NUMBER\n'


def test_a_custom_tool_is_declared_in_the_responses_shape_with_its_grammar() -> None:
    tools = ToolRegistry()

    @tools.register_custom(grammar=Grammar.lark(LARK))
    def calc(expression: str) -> str:
        """Adds numbers.

        More words that are not the summary."""
        return expression

    tools.register_custom(lambda text: text, name="shout", description="", grammar=Grammar.regex(r"[A-Z ]+"))
    tools.register_custom(lambda text: text, name="free", description="Anything.")
    assert tools.schemas() == [
        {"type": "custom", "name": "calc", "description": "Adds numbers.",
         "format": {"type": "grammar", "syntax": "lark", "definition": LARK}},
        {"type": "custom", "name": "shout", "format": {"type": "grammar", "syntax": "regex", "definition": "[A-Z ]+"}},
        {"type": "custom", "name": "free", "description": "Anything."},
    ]
    assert calc("add 1") == "add 1"  # the decorator returns the function unchanged
    assert len(tools) == 0  # len, in, iteration and get are about the function tools
    assert "calc" not in tools


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Grammar("ebnf", "x"), "a grammar's syntax is 'lark' or 'regex', got 'ebnf'"),  # type: ignore[arg-type]
        (lambda: Grammar.lark("  "), "a grammar's definition is a non-empty string"),
        (lambda: CustomTool("bad name", "", str), "tool name 'bad name' is not valid"),
        (lambda: CustomTool("t", "", str, grammar="lark"), "a custom tool's grammar is a Grammar or None"),  # type: ignore[arg-type]
        (lambda: CustomTool("t", "", "not callable"), "a handler must be callable"),  # type: ignore[arg-type]
    ],
)
def test_a_custom_tool_the_api_would_refuse_is_a_definition_error(make: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        make()


def test_a_custom_tool_and_a_function_share_one_namespace() -> None:
    tools = ToolRegistry()
    tools.register(lambda city: city, name="lookup", parameters={"type": "object"})
    with pytest.raises(ToolDefinitionError, match='a tool named "lookup" is already registered'):
        tools.register_custom(lambda text: text, name="lookup")


async def test_a_custom_tool_gets_the_input_exactly_as_the_model_wrote_it() -> None:
    seen: list[str] = []
    tools = ToolRegistry()

    @tools.register_custom
    async def run_python(code: str) -> dict[str, int]:
        seen.append(code)
        return {"length": len(code)}

    raw = 'print({"a": 1})\n  # not JSON, kept as is'
    result = await tools.call("run_python", raw, kind="custom")
    assert seen == [raw]
    assert (result.text, result.is_error) == (json.dumps({"length": len(raw)}), False)
    empty = await tools.call("run_python", "", kind="custom")
    assert (empty.text, seen[-1]) == ('{"length": 0}', "")


async def test_an_unknown_custom_tool_and_a_function_call_of_its_name_are_unknown_tools() -> None:
    tools = ToolRegistry()
    tools.register_custom(lambda text: text, name="run_python")
    missing = await tools.call("run_pyton", "x", kind="custom")
    assert missing.is_error
    assert missing.text == 'unknown tool "run_pyton"; available tools: run_python (did you mean "run_python"?)'
    as_function = await tools.call("run_python", "{}")
    assert as_function.is_error
    assert as_function.text.startswith('unknown tool "run_python"; available tools: (none)')


def test_a_handler_declares_its_kinds_built_in_tool_unless_told_otherwise() -> None:
    tools = ToolRegistry()
    for kind in ("apply_patch", "shell", "local_shell", "computer", "mcp_approval"):
        tools.handle(kind, lambda arguments: "ok")
    assert tools.schemas() == [{"type": "apply_patch"}, {"type": "shell", "environment": {"type": "local"}},
                               {"type": "local_shell"}, {"type": "computer"}]
    mcp = {"type": "mcp", "server_label": "wiki", "server_url": "https://example.invalid/mcp"}
    other = ToolRegistry()
    other.handle("mcp_approval", lambda arguments: True, declare=[mcp])
    other.handle("computer", lambda arguments: "url", declare=[])
    assert other.schemas() == [mcp]


@pytest.mark.parametrize(
    ("kind", "declare", "message"),
    [
        ("function", None, "a handler is registered for a built-in kind"),
        ("custom", None, "a custom tool register_custom\\(\\)'s"),
        ("web_search", None, "got 'web_search'"),
        ("shell", {"type": "shell"}, "declare= is a list of the request's tools entries"),
        ("shell", [{"name": "x"}], "a declared tool is a mapping with a string type"),
    ],
)
def test_a_handler_for_no_built_in_kind_or_with_bad_declarations_is_refused(
    kind: str, declare: Any, message: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        ToolRegistry().handle(kind, lambda arguments: None, declare=declare)


def test_one_handler_per_kind() -> None:
    tools = ToolRegistry()
    tools.handle("shell", lambda arguments: "")
    with pytest.raises(ToolDefinitionError, match="a handler for shell calls is already registered"):
        tools.handle("shell", lambda arguments: "")


SCREENSHOT = {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="}
EXIT_0 = {"type": "exit", "exit_code": 0}


@pytest.mark.parametrize(
    ("kind", "returned", "answer"),
    [
        ("apply_patch", None, {"status": "completed"}),
        ("apply_patch", "created a.txt", {"status": "completed", "output": "created a.txt"}),
        ("apply_patch", {"status": "failed", "output": "no such file"}, {"status": "failed", "output": "no such file"}),
        ("shell", "a.txt\n", {"output": [{"stdout": "a.txt\n", "stderr": "", "outcome": EXIT_0}]}),
        ("shell", [{"stdout": "", "stderr": "", "outcome": {"type": "timeout"}}],
         {"output": [{"stdout": "", "stderr": "", "outcome": {"type": "timeout"}}]}),
        ("computer", "data:image/png;base64,AA==", {"output": SCREENSHOT}),
        ("computer", SCREENSHOT, {"output": SCREENSHOT}),
        ("computer", {"output": SCREENSHOT, "acknowledged_safety_checks": [{"id": "sc"}]},
         {"output": SCREENSHOT, "acknowledged_safety_checks": [{"id": "sc"}]}),
        ("mcp_approval", False, {"approve": False}),
        ("mcp_approval", {"approve": True, "reason": "known"}, {"approve": True, "reason": "known"}),
    ],
)
async def test_each_kinds_handler_answer_is_the_json_of_its_output_items_fields(
    kind: str, returned: Any, answer: dict[str, Any]
) -> None:
    got: list[dict[str, Any]] = []

    def handler(arguments: dict[str, Any]) -> Any:
        got.append(arguments)
        return returned

    tools = ToolRegistry()
    tools.handle(kind, handler)
    result = await tools.call(kind, '{"commands": ["ls"]}', kind=kind)
    assert got == [{"commands": ["ls"]}]
    assert not result.is_error
    assert json.loads(result.text) == answer


async def test_a_local_shell_answer_is_its_text_as_it_is() -> None:
    tools = ToolRegistry()
    tools.handle("local_shell", lambda action: " ".join(action["command"]))
    result = await tools.call("local_shell", '{"type": "exec", "command": ["git", "status"], "env": {}}',
                              kind="local_shell")
    assert (result.text, result.is_error) == ("git status", False)


@pytest.mark.parametrize(
    ("kind", "returned", "expected"),
    [
        ("apply_patch", {"output": "x"}, 'expected None, a string'),
        ("shell", 3, 'expected a string \\(stdout\\)'),
        ("computer", {"output": "not a screenshot"}, "expected a string \\(the screenshot's image_url\\)"),
        ("mcp_approval", "yes", 'expected a bool or \\{"approve"'),
    ],
)
async def test_an_answer_that_is_not_one_of_its_kinds_is_an_error_naming_what_was_expected(
    kind: str, returned: Any, expected: str
) -> None:
    tools = ToolRegistry()
    tools.handle(kind, lambda arguments: returned)
    result = await tools.call(kind, "{}", kind=kind)
    assert result.is_error
    assert result.text.startswith(f"the {kind} handler returned ")
    assert re.search(expected, result.text)


async def test_a_handler_that_raises_or_hangs_is_an_error_result() -> None:
    tools = ToolRegistry()

    @tools.handle("apply_patch")
    def apply_patch(operation: dict[str, Any]) -> str:
        raise FileNotFoundError(operation["path"])

    @tools.handle("shell", timeout=0.05)
    async def shell(action: dict[str, Any]) -> str:
        await asyncio.sleep(5)
        return ""

    failed = await tools.call("apply_patch", '{"type": "delete_file", "path": "gone.txt"}', kind="apply_patch")
    assert failed.is_error
    assert failed.text == "tool apply_patch failed: FileNotFoundError: gone.txt"
    hung = await tools.call("shell", '{"commands": ["sleep 9"]}', kind="shell")
    assert hung.is_error
    assert hung.text.startswith("tool shell timed out after 0.05 s")


@pytest.mark.parametrize(
    ("arguments", "said"),
    [("not json", "are not valid JSON"), ("[1]", "must be a JSON object"), ({"a": 1}, "must be a string of JSON")],
)
async def test_built_in_arguments_that_are_not_a_json_object_never_reach_the_handler(arguments: Any, said: str) -> None:
    tools = ToolRegistry()
    tools.handle("shell", lambda action: pytest.fail("called"))
    result = await tools.call("shell", arguments, kind="shell")
    assert result.is_error
    assert f"arguments of a shell call {said}" in result.text


@pytest.mark.parametrize("kind", ["apply_patch", "shell", "computer", "mcp_approval", "local_shell", "tool_search"])
async def test_a_call_of_a_kind_nothing_handles_is_answered_as_an_unknown_tool(kind: str) -> None:
    tools = ToolRegistry()
    tools.handle("apply_patch" if kind != "apply_patch" else "shell", lambda arguments: "")
    handled = "apply_patch" if kind != "apply_patch" else "shell"
    result = await tools.call(kind, "{}", kind=kind)
    assert result.is_error
    assert result.text == (f'unknown tool "{kind}" (kind {kind}): no handler is registered for {kind} calls; '
                           f"handled kinds: {handled}")


async def test_a_long_shell_output_is_cut_inside_its_text_and_the_answer_stays_json() -> None:
    tools = ToolRegistry(max_result_chars=10)
    tools.handle("shell", lambda action: "x" * 50)
    tools.handle("computer", lambda arguments: "data:image/png;base64," + "A" * 50)
    shell = json.loads((await tools.call("shell", "{}", kind="shell")).text)
    stdout = shell["output"][0]["stdout"]
    assert stdout.startswith("x" * 10)
    assert "[truncated: the tool returned 50 characters; only the first 10 are shown]" in stdout
    screenshot = json.loads((await tools.call("computer", "{}", kind="computer")).text)
    assert screenshot["output"]["image_url"].endswith("A" * 50)  # a screenshot goes whole


async def test_call_many_runs_calls_of_every_kind_in_order() -> None:
    tools = ToolRegistry()
    tools.register(lambda city: f"{city}: sunny", name="weather",
                   parameters={"type": "object", "properties": {"city": {"type": "string"}}})
    tools.register_custom(lambda text: text.upper(), name="shout")
    tools.handle("mcp_approval", lambda request: True)
    results = await tools.call_many([
        ("weather", '{"city": "Paris"}'),
        ("shout", "hi", "custom"),
        ("mcp_approval", '{"server_label": "s", "name": "n", "arguments": "{}"}', "mcp_approval"),
    ])
    assert [result.text for result in results] == ["Paris: sunny", "HI", '{"approve": true}']


def test_a_tools_module_may_list_custom_tools(tmp_path: Path) -> None:
    path = tmp_path / "my_tools.py"
    path.write_text(
        "from pipeline import CustomTool, Grammar\n"
        "def echo(text: str) -> str:\n    return text\n"
        "TOOLS = [CustomTool('echo', 'Echoes.', echo, Grammar.regex('[a-z]+'))]\n"
    )
    registry = ToolRegistry.from_module(str(path))
    assert registry.schemas() == [{"type": "custom", "name": "echo", "description": "Echoes.",
                                   "format": {"type": "grammar", "syntax": "regex", "definition": "[a-z]+"}}]
