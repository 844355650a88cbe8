"""The documentation site as built (``mkdocs build --strict`` into a temporary folder, once for the module): the
sidebar lists the sections in the reader's order (start, keep your client, the proxy, the formats, the notebooks, the
reference, then the decision notes) and each page under the title the configuration gives it, a notebook's title
being its own first heading with its code intact; no page asks another host for anything (fonts, scripts, styles),
and no link points at a placeholder domain. Needs the ``docs`` extra; skipped without it."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from scripts.mkdocs_hooks import DECISIONS, decision_notes

pytestmark = pytest.mark.server  # runs mkdocs in a subprocess

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ["Start", "Keep your client", "The proxy", "Formats", "Notebooks", "Reference", DECISIONS]
"""The navigation's top level, in order."""
REQUEST = re.compile(
    r"<(?:link|script|img|iframe|source|audio|video|embed|object)\b[^>]*?\b(?:href|src|data)\s*=\s*[\"']?((?:https?:)?//[^\"'\s>]+)"
    r"|@import\s+(?:url\()?\s*[\"']?((?:https?:)?//[^\"')\s]+)"
    r"|url\(\s*[\"']?((?:https?:)?//[^\"')\s]+)"
    r"|\bimport\(\s*[\"']((?:https?:)?//[^\"']+)",
    re.IGNORECASE,
)
"""What makes a browser fetch from an absolute URL: an element's source, a style's import or url(), a module import."""
PLACEHOLDER_HOSTS = ("example.org", "example.com", "example.net")


def third_party_requests(text: str) -> list[str]:
    """The absolute URLs a page or a style sheet would fetch (every one is another host: the site has no site_url)."""
    return [next(group for group in match.groups() if group) for match in REQUEST.finditer(text)]


def _skip_without_the_docs_extra() -> None:
    for module in ("mkdocs", "material", "mkdocs_jupyter", "mkdocstrings"):
        pytest.importorskip(module, reason="the docs extra: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _skip_without_the_docs_extra()
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _config() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return loaded


def _heading(markdown: str) -> str:
    """A first-level heading as plain text: the code marks dropped, the code kept."""
    line = next(line for line in markdown.splitlines() if line.startswith("# "))
    return line.removeprefix("# ").replace("`", "").strip()


def _notebook_heading(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return _heading("".join(next(cell for cell in cells if cell["cell_type"] == "markdown")["source"]))


def _expected_sidebar() -> list[str]:
    """Every title of the configured navigation in order, the decision notes' from their headings."""
    titles: list[str] = []
    for entry in _config()["nav"]:
        ((section, pages),) = entry.items()
        titles.append(section)
        if section == DECISIONS:
            notes = decision_notes(ROOT / "docs")
            titles += [_heading((ROOT / "docs" / note).read_text(encoding="utf-8")) for note in notes]
        elif isinstance(pages, list):
            titles += [next(iter(page)) for page in pages]
    return titles


def _sidebar(page: Path) -> list[str]:
    """The titles of a built page's primary navigation, in order."""
    text = page.read_text(encoding="utf-8")
    nav = text[text.index("md-nav--primary") : text.index("md-nav--secondary")]
    titles = re.findall(r'<span class="md-ellipsis">(.*?)</span>', nav, re.S)
    return [html.unescape(" ".join(title.split())) for title in titles]


def test_the_sidebar_lists_the_sections_in_the_readers_order_and_every_page_under_its_title(site: Path) -> None:
    sidebar = _sidebar(site / "404.html")  # a page without a table of contents of its own in the sidebar
    assert [title for title in sidebar if title in SECTIONS] == SECTIONS
    assert sidebar == _expected_sidebar()
    assert len([title for title in sidebar if re.match(r"\d{4}\b", title)]) == len(decision_notes(ROOT / "docs"))


def test_a_notebooks_title_is_its_own_first_heading_with_its_code(site: Path) -> None:
    (notebooks,) = [entry["Notebooks"] for entry in _config()["nav"] if "Notebooks" in entry]
    for entry in notebooks:
        ((title, path),) = entry.items()
        assert title == _notebook_heading(ROOT / "docs" / path), path
        page = site / Path(path).with_suffix("") / "index.html"
        assert f"<title>{html.escape(title, quote=False)} - llm-stream-pipeline</title>" in page.read_text("utf-8")
    assert "Keep your client: the openai SDK through SanitizingTransport" in _sidebar(site / "404.html")


def test_no_page_asks_another_host_for_fonts_scripts_or_styles(site: Path) -> None:
    found = {
        f"{path.relative_to(site)}: {url}"
        for path in sorted(site.rglob("*"))
        if path.suffix in (".html", ".css")
        for url in third_party_requests(path.read_text(encoding="utf-8", errors="replace"))
    }
    assert not found, "\n".join(sorted(found)[:20])
    assert _config()["theme"]["font"] is False


def test_the_check_finds_web_fonts_a_cdn_script_and_a_style_import() -> None:
    page = (
        '<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>'
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
        '<script src="//cdn.example/x.js"></script><a href="https://example.com/page">a link is no request</a>'
        '<script type="module">const m = (await import("https://cdnjs.cloudflare.com/mermaid.mjs")).default;</script>'
        "<style>@import url('https://fonts.example/a.css'); p { background: url(https://img.example/b.png) }</style>"
        '<link rel="stylesheet" href="../assets/main.css"><script src="../assets/bundle.js"></script>'
    )
    assert third_party_requests(page) == [
        "https://fonts.gstatic.com",
        "https://fonts.googleapis.com/css?family=Roboto",
        "//cdn.example/x.js",
        "https://cdnjs.cloudflare.com/mermaid.mjs",
        "https://fonts.example/a.css",
        "https://img.example/b.png",
    ]


def test_no_link_points_at_a_placeholder_domain(site: Path) -> None:
    config = _config()
    assert "repo_url" not in config  # the project has no public repository yet
    assert "repo_name" not in config
    links = {
        f"{path.relative_to(site)}: {url}"
        for path in sorted(site.rglob("*.html"))
        for url in re.findall(r"(?:href|src)=\"([^\"]+)\"", path.read_text(encoding="utf-8"))
        if any(host in url for host in PLACEHOLDER_HOSTS)
    }
    assert not links, "\n".join(sorted(links))
