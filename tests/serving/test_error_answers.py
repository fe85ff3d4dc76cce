"""The lone-surrogate scan of a 400's request body (:func:`error_answers.lone_surrogate`): the same answers as the
look-behind pattern it replaced, without trying that pattern at every character of a large body."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papertrack.serving.http.error_answers import encoding_problem, lone_surrogate

# the pattern used before (fine on short texts): a high escape not escaped itself and not followed by a low one,
# or a low escape not preceded by a high one's digits
OLD = re.compile(
    r"(?<!\\)\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<![dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)

PIECES = ["\\ud800", "\\uDBFF", "\\udc00", "\\uDFFF", "\\u00e9", "\\", "\\\\", "u", "d8", "00", "a", " ", '"']


@settings(max_examples=600, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_the_scan_finds_what_the_old_pattern_found(text):
    match = OLD.search(text)
    assert lone_surrogate(text) == ((match.group(0), match.start()) if match else None)


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"abstract": "graphs \\ud800 and kernels"}', ("\\ud800", 21)),
        ('{"abstract": "a pair \\ud83d\\ude00 is one character"}', None),
        ('{"abstract": "a low half alone \\ude00"}', ("\\ude00", 31)),
        ('{"abstract": "an escaped backslash \\\\ud800 is text"}', None),
        ('{"abstract": "\\u00e9t\\u00e9"}', None),
    ],
)
def test_examples(text, expected):
    assert lone_surrogate(text) == expected


def test_a_lone_half_at_the_end_of_a_large_body_is_named():
    body = json.dumps({"abstract": "kernels and graphs, " * 1000 + "\udc00"}, ensure_ascii=True)
    assert encoding_problem(body.encode()) == (
        f"\\udc00 at offset {len(body) - 8} is a lone UTF-16 surrogate escape, which is not a character; remove it or "
        "send the full surrogate pair (or the character itself)"
    )
