"""TOML in linear time: a dotted key of too many parts is refused before ``tomllib`` sees it;
everything else parses exactly as ``tomllib`` parses it."""

from __future__ import annotations

import tomllib

import pytest

from launcher_probe.host.discovery.toml_bounded import MAX_KEY_PARTS, KeyTooLong, loads

LONGEST = ".".join(["a"] * MAX_KEY_PARTS)
DOTS = "." * (2 * MAX_KEY_PARTS)


@pytest.mark.parametrize(
    "text",
    [
        f"{LONGEST} = 1\n",
        f"[{LONGEST}]\nx = 1\n",
        f"[[{LONGEST}]]\nx = 1\n",
        f"x = {{ {LONGEST} = 1 }}\n",
        f'"{DOTS}"."{DOTS}" = "{DOTS}"\n',
        f"s = '{DOTS}'\nt.u = 1\n",
        f'm = """{DOTS}\\"""{DOTS}"""\n',
        f"m = '''{DOTS}''''\n",
        f'm = """a""""\n{LONGEST} = 1\n',
        f"# {DOTS}\nk = 1\n",
        "v = [" + ", ".join(["1.5"] * MAX_KEY_PARTS) + "]\n",
        "".join(f"v{n} = 1.5\nw{n} = 1979-05-27T07:32:00.999\n" for n in range(MAX_KEY_PARTS)),
        f'[mcp_servers.a]\ncommand = "/x/{DOTS}"\nenv = {{ "A.B" = "{DOTS}" }}\n',
    ],
)
def test_what_is_within_the_bound_parses_as_tomllib_parses_it(text: str) -> None:
    assert loads(text) == tomllib.loads(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"{LONGEST}.a = 1\n", 1),
        (f"x = 1\n[{LONGEST}.b]\n", 2),
        ('"a".' * MAX_KEY_PARTS + "b = 1\n", 1),
        ("a . " * MAX_KEY_PARTS + "b = 1\n", 1),
        (f"x = {{ y = 1, {LONGEST}.c = 2 }}\n", 1),
        (f's = "{DOTS}"\n# {DOTS}\n' + ".".join(["a"] * 100_000) + " = 1\n", 3),
    ],
)
def test_a_key_of_more_parts_is_refused_naming_its_line(text: str, line: int) -> None:
    with pytest.raises(KeyTooLong, match=rf"more than {MAX_KEY_PARTS} parts \(line {line}\)"):
        loads(text)


@pytest.mark.parametrize("text", ['x = "' + DOTS, "x = '''" + DOTS, 'x = """' + DOTS])
def test_an_unterminated_string_is_left_to_tomllib_to_report(text: str) -> None:
    with pytest.raises(tomllib.TOMLDecodeError):
        loads(text)
