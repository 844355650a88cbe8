"""The wording an error message is searched for: a spent quota, a request outgrowing the context window.

Read by ``classify_http_error`` and ``classify_inband_error`` (``_provider_errors.py``), which re-export both.
"""

from __future__ import annotations

import re

__all__ = ["CONTEXT_OVERFLOW_WORDING", "QUOTA_WORDING"]

QUOTA_WORDING: re.Pattern[str] = re.compile(
    r"""
      \binsufficient [\s_-]+ (?:quota|balance|credits?) \b          # insufficient_quota, Insufficient Balance
    | \b(?:quota|usage [\s_-]+ limit) [\s_-]+ (?:exceeded|exhausted|reached) \b
                                                                    # quota exceeded, usage limit reached
    | \bexceed(?:ed|s)? [\s_-]+ (?:(?:your|the) [\s_-]+)? (?:current [\s_-]+)? quota \b
                                                                    # You exceeded your current quota
    | \b(?:balance|credits?) [\s_-]+ (?:exhausted|depleted) \b      # balance exhausted
    | \bout [\s_-]+ of [\s_-]+ (?:credits?|budget) \b               # out of credits
    """,
    re.IGNORECASE | re.VERBOSE,
)
"""Wording that names a spent quota, balance or credit (a terminal state), never a transient rate limit."""

CONTEXT_OVERFLOW_WORDING: re.Pattern[str] = re.compile(
    r"""
    # context_length_exceeded, context window overflow
      (?<![a-z0-9]) context [\s_-]+ (?:length|window) [\s_-]+
          (?:exceed(?:ed|s)?|overflow(?:ed)?|limit [\s_-]+ exceeded) (?![a-z0-9])
    # This model's maximum context length is 8192 tokens
    | \b(?:maximum|max) (?:\s+(?:allowed|supported))? \s+ context \s+ (?:length|window) \b
    # messages are too large for the model's context window
    | \b(?:request|prompt|input|messages?) \s+ (?:is\s+|are\s+)? too \s+ (?:large|long) \s+ for \s+
          (?:(?:this|the)\s+)? (?:model(?:['’]s)?\s+)? context (?:\s+window)? \b
    # prompt is too long for this model
    | \b(?:input|prompt|request) \s+ (?:is\s+)? too \s+ (?:long|large) \s+ for \s+ (?:this|the) \s+ model \b
    # input exceeds the context window (within 40 characters each way)
    | \b(?:input|prompt|request|messages?) \b .{0,40}
          \b(?:exceed(?:s|ed)?|overflows?|is \s+ larger \s+ than) \b .{0,40}
          \b(?:the\s+)? (?:model(?:['’]s)?\s+)? context (?:\s+(?:length|window))? \b
    """,
    re.IGNORECASE | re.VERBOSE,
)
"""Wording that names the request outgrowing the model's context window (not any other size limit)."""
