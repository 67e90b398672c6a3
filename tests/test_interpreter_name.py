"""``interpreter_name.is_python``: the one rule, for the supervisor's interpreter and for
``doctor``'s ``python -m launcher_probe``, is the regex ``python[0-9.]*`` matched whole."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from launcher_probe.interpreter_name import is_python

#: The rule as a regex: in a str pattern, ``[0-9]`` is the ASCII digits only.
RULE = re.compile(r"python[0-9.]*")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("python", True),
        ("python3", True),
        ("python3.11", True),
        ("python3.11-dbg", False),
        ("pythonw", False),
        ("Python3", False),
        ("python\u0663", False),  # ARABIC-INDIC DIGIT THREE: a digit, not an ASCII one
        ("python3\n", False),
        ("pytho", False),
        ("", False),
    ],
)
def test_a_python_is_python_then_ascii_digits_and_dots(name: str, expected: bool) -> None:
    assert is_python(name) is expected


@given(st.text(alphabet="python0123456789.-w\u0663\uff13\u00b2 \n", max_size=12))
def test_it_is_the_regex_matched_whole(tail: str) -> None:
    for name in (tail, f"python{tail}"):
        assert is_python(name) is (RULE.fullmatch(name) is not None)
