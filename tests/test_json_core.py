"""``json_core``: ``json.loads`` and ``json.dumps`` on the C codec give exactly json's values,
texts and errors, and a warm path that uses them never imports the json package."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher_probe import json_core

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats()
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
#: Texts near JSON: pieces of it glued at random, so that most do not parse.
PIECES = st.sampled_from(
    [
        '{"a": ',
        "[",
        "]",
        "}",
        ",",
        ":",
        " ",
        "\n",
        "1",
        "-",
        "2.5e3",
        '"x"',
        '"\\u',
        "d800",
        "NaN",
        "Infinity",
        "true",
        "nul",
        "\\",
        "\x00",
        "é",
        '"',
    ],
)
NEAR_JSON = st.lists(PIECES, max_size=12).map("".join)


def outcome(call: Any, *args: Any, **options: Any) -> tuple[str, Any]:
    """What a call gives: its value's ``repr`` (NaN equal to NaN, 1 unequal to 1.0, key
    order kept), or its error's type and text."""
    try:
        value = call(*args, **options)
    except (ValueError, TypeError, RecursionError) as error:
        return type(error).__name__, str(error)
    return "value", repr(value)


@settings(max_examples=400, deadline=None)
@given(NEAR_JSON)
def test_loads_gives_what_json_gives(text: str) -> None:
    assert outcome(json_core.loads, text) == outcome(json.loads, text)


def _keep_constant(name: str) -> Any:
    return ["constant", name]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"no {name}")


def _pairs(pairs: list[tuple[str, Any]]) -> Any:
    return ["pairs", pairs]


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> Any:
    if len(dict(pairs)) != len(pairs):
        raise ValueError("a repeated key")
    return dict(pairs)


@settings(max_examples=400, deadline=None)
@given(
    NEAR_JSON,
    st.sampled_from([None, _keep_constant, _refuse_constant]),
    st.sampled_from([None, _pairs, _refuse_repeats]),
)
def test_loads_with_hooks_gives_what_json_gives(
    text: str, parse_constant: Any, object_pairs_hook: Any
) -> None:
    hooks = {"parse_constant": parse_constant, "object_pairs_hook": object_pairs_hook}
    assert outcome(json_core.loads, text, **hooks) == outcome(json.loads, text, **hooks)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_a_value_round_trips_as_json_gives_it(value: Any) -> None:
    text = json.dumps(value)
    assert outcome(json_core.loads, text) == outcome(json.loads, text)


@settings(max_examples=300, deadline=None)
@given(
    VALUES,
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.sampled_from([(", ", ": "), (",", ":")]),
)
def test_dumps_writes_what_json_writes(
    value: Any, ensure_ascii: bool, allow_nan: bool, sort_keys: bool, separators: tuple[str, str]
) -> None:
    options = {
        "ensure_ascii": ensure_ascii,
        "allow_nan": allow_nan,
        "sort_keys": sort_keys,
        "separators": separators,
    }
    assert outcome(json_core.dumps, value, **options) == outcome(json.dumps, value, **options)


@pytest.mark.parametrize(
    "value",
    [
        {1: "int key", 2.5: "float key", None: "null key", False: "bool key"},
        ("a", "tuple"),
        object(),
    ],
    ids=["keys", "tuple", "object"],
)
def test_dumps_converts_and_refuses_as_json_does(value: Any) -> None:
    assert outcome(json_core.dumps, value) == outcome(json.dumps, value)


def test_dumps_refuses_a_cycle_as_json_does() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    assert outcome(json_core.dumps, cycle) == outcome(json.dumps, cycle)


def test_without_json_imported_a_syntax_error_is_json_s_own() -> None:
    """In a process that has not imported json, a text that does not parse still raises
    json's JSONDecodeError with its message (Python 3.11's C scanner needs json.decoder
    loaded to raise it), and a text that parses imports nothing of json."""
    script = """
import sys
from launcher_probe import json_core
assert json_core.loads('{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}
assert json_core.dumps({"a": "\\u00e9"}, ensure_ascii=False) == '{"a": "\\u00e9"}'
print(sorted(name for name in sys.modules if name == "json" or name.startswith("json.")))
for text in ('{"a" 1}', "", "[1,", "1 2"):
    try:
        json_core.loads(text)
    except ValueError as error:
        print(type(error).__module__, type(error).__name__, error)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == [
        "[]",
        "json.decoder JSONDecodeError Expecting ':' delimiter: line 1 column 6 (char 5)",
        "json.decoder JSONDecodeError Expecting value: line 1 column 1 (char 0)",
        "json.decoder JSONDecodeError Expecting value: line 1 column 4 (char 3)",
        "json.decoder JSONDecodeError Extra data: line 1 column 3 (char 2)",
    ]
