"""Hooks of the documentation site (``mkdocs.yml``: ``hooks:``).

- ``on_config``: the navigation's ``Decisions`` section, empty in ``mkdocs.yml``, is filled with every
  ``docs/decisions/NNNN-*.md`` in number order, so a new decision note needs no edit of ``mkdocs.yml``; every other
  page is listed there by hand (``validation.nav.omitted_files: warn`` and ``strict`` fail a build that leaves one out).
- ``on_post_page``: a notebook page loses nbconvert's mermaid loader, a script that would import mermaid from a CDN
  (the notebooks draw no diagram, so it never runs; the site makes no third-party request: tests/test_docs_site.py).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page

DECISIONS = "Decisions"
"""The title of the navigation section this hook fills."""
LOG = logging.getLogger("mkdocs.hooks.llm_stream")
REMOTE_SCRIPT = re.compile(r"<script\b[^>]*>(?:(?!</script>).)*?import\(\s*[\"']https?://.*?</script>\s*", re.S)
"""A script element whose code imports a module from an absolute http(s) URL."""


def decision_notes(docs_dir: Path) -> list[str]:
    """The decision notes, as paths under ``docs_dir``, in number order."""
    return sorted(path.relative_to(docs_dir).as_posix() for path in (docs_dir / "decisions").glob("[0-9]*-*.md"))


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    nav: list[Any] = config.nav or []
    sections = [entry for entry in nav if isinstance(entry, dict) and DECISIONS in entry]
    if len(sections) != 1 or sections[0][DECISIONS]:
        raise ValueError(f"mkdocs.yml's nav needs one empty `- {DECISIONS}: []` section for the hook to fill")
    sections[0][DECISIONS] = decision_notes(Path(config.docs_dir))
    return config


def on_post_page(output: str, /, *, page: Page, config: MkDocsConfig) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return output
    stripped, count = REMOTE_SCRIPT.subn("", output)
    if count:
        LOG.debug("%s: %d remote script(s) removed", page.file.src_uri, count)
    return stripped
