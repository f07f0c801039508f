"""A change to the config is spliced into the file's text: only what changed, in the file's own style."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from mcpdeck.config._json import load_json, strip_jsonc
from mcpdeck.config._splice import rewrite, same_json
from tests.config.hand_written import ADDED, JSONC, NEW_SERVER, ONE_LINE_EACH, STYLES, TABS_CRLF, TWO_SPACES

Change = Callable[[dict[str, Any]], object]


def changed(text: str, change: Change) -> str:
    """``text`` after ``change`` made to what it reads as; checked to read as the changed document."""
    old = load_json(strip_jsonc(text), "test")
    new = copy.deepcopy(old)
    change(new)
    out = rewrite(text, old, new)
    assert same_json(load_json(strip_jsonc(out), "test"), new)
    return out


def once(text: str, old: str, new: str) -> str:
    """``text`` with its one ``old`` made ``new``."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


@pytest.mark.parametrize("style", STYLES)
def test_a_new_server_goes_after_the_last_one_in_the_files_style_and_nothing_else_moves(style: str) -> None:
    text = STYLES[style]
    after = changed(text, lambda doc: doc["mcpServers"].update(git=NEW_SERVER))
    assert after == once(text, *ADDED[style])


@pytest.mark.parametrize("style", STYLES)
def test_a_changed_number_is_the_only_change_and_an_unchanged_one_keeps_its_spelling(style: str) -> None:
    text = STYLES[style]
    assert changed(text, lambda doc: doc["mcpServers"]["fs"].update(timeout=45.0)) == once(
        text, '"timeout": 30', '"timeout": 45'
    )
    # What a model hands back (a float for 30, the same 2.5) is no change at all.
    same = changed(text, lambda doc: doc["mcpServers"]["fs"].update(timeout=30.0))
    assert changed(same, lambda doc: doc["mcpServers"]["api"].update(timeout=2.5)) == text
    assert changed(text, lambda doc: doc["mcpServers"]["api"].update(timeout=0.25)) == once(
        text, '"timeout": 2.5', '"timeout": 0.25'
    )


@pytest.mark.parametrize(
    ("style", "gone", "left"),
    [
        (
            "two-spaces",
            '    },\n    "api": {\n      "url": "https://example.com/mcp",\n      "timeout": 2.5\n    }\n',
            "    }\n",
        ),
        (
            "four-spaces",
            '        },\n        "api": {\n            "url": "https://example.com/mcp",\n            "timeout": 2.5\n'
            "        }\n",
            "        }\n",
        ),
        (
            "tabs-crlf",
            '\t\t},\r\n\t\t"api": {\r\n\t\t\t"url": "https://example.com/mcp",\r\n\t\t\t"timeout": 2.5\r\n\t\t}\r\n',
            "\t\t}\r\n",
        ),
        (
            "one-line-each",
            '"timeout": 30},\n  "api": {"url": "https://example.com/mcp", "timeout": 2.5}\n',
            '"timeout": 30}\n',
        ),
        ("jsonc", '    "api": {\n      "url": "https://example.com/mcp",\n      "timeout": 2.5, // slow\n    },\n', ""),
    ],
)
def test_a_removed_last_server_takes_its_lines_and_the_comma_before_it(style: str, gone: str, left: str) -> None:
    text = STYLES[style]
    assert changed(text, lambda doc: doc["mcpServers"].pop("api")) == once(text, gone, left)


def test_a_removed_first_server_takes_its_lines_and_the_comment_right_above_it() -> None:
    after = changed(JSONC, lambda doc: doc["mcpServers"].pop("fs"))
    gone = JSONC[JSONC.index("    /* the notes") : JSONC.index('    "api"')]
    assert after == once(JSONC, gone, "")


def test_keys_and_items_go_on_the_line_they_join_in_a_one_line_object() -> None:
    text = ONE_LINE_EACH
    assert changed(text, lambda doc: doc["mcpServers"]["api"].update(disabled=True)) == once(
        text, '"timeout": 2.5}', '"timeout": 2.5, "disabled": true}'
    )
    assert changed(text, lambda doc: doc["permissions"]["allow"].append("mcp__api")) == once(
        text, '["mcp__fs__read_*"]', '["mcp__fs__read_*", "mcp__api"]'
    )
    assert changed(text, lambda doc: doc.update(mcpEnabled=False)) == once(
        text,
        '"permissions": {"allow": ["mcp__fs__read_*"]}}',
        '"permissions": {"allow": ["mcp__fs__read_*"]}, "mcpEnabled": false}',
    )
    assert changed(text, lambda doc: doc["mcpServers"]["fs"].pop("timeout")) == once(
        text, '"/home/me/notes"], "timeout": 30}', '"/home/me/notes"]}'
    )
    assert changed(text, lambda doc: doc["mcpServers"]["fs"].pop("command")) == once(text, '"command": "npx", ', "")


def test_a_trailing_comma_is_kept_where_the_file_puts_one_and_added_where_it_does_not() -> None:
    assert changed(JSONC, lambda doc: doc["mcpServers"]["api"].update(disabled=True)) == once(
        JSONC, '"timeout": 2.5, // slow\n', '"timeout": 2.5, // slow\n      "disabled": true,\n'
    )
    assert changed(TWO_SPACES, lambda doc: doc["mcpServers"]["api"].update(disabled=True)) == once(
        TWO_SPACES, '"timeout": 2.5\n', '"timeout": 2.5,\n      "disabled": true\n'
    )
    # A comment after the last value stays on its line: the comma goes before it.
    text = '{\n  "a": 1 // one\n}\n'
    assert changed(text, lambda doc: doc.update(b=2)) == '{\n  "a": 1, // one\n  "b": 2\n}\n'


def test_array_items_change_in_place_go_with_their_line_and_come_after_the_last() -> None:
    args = (
        '      "args": [\n        "-y",\n        "@modelcontextprotocol/server-filesystem",\n'
        '        "/home/me/notes"\n      ],\n'
    )
    text = TWO_SPACES

    def fs_args(change: Callable[[list[str]], object]) -> Change:
        return lambda doc: change(doc["mcpServers"]["fs"]["args"])

    assert changed(text, fs_args(lambda a: a.__setitem__(2, "/srv"))) == once(text, '"/home/me/notes"', '"/srv"')
    assert changed(text, fs_args(lambda a: a.remove("@modelcontextprotocol/server-filesystem"))) == once(
        text, args, '      "args": [\n        "-y",\n        "/home/me/notes"\n      ],\n'
    )
    assert changed(text, fs_args(lambda a: a.append("/srv"))) == once(
        text, '        "/home/me/notes"\n', '        "/home/me/notes",\n        "/srv"\n'
    )
    assert changed(text, fs_args(lambda a: a.pop())) == once(
        text,
        '"@modelcontextprotocol/server-filesystem",\n        "/home/me/notes"\n',
        '"@modelcontextprotocol/server-filesystem"\n',
    )


def test_an_object_left_with_none_of_its_keys_is_written_anew_where_it_stood() -> None:
    text = '{\n\t"mcpServers": {\n\t\t"fs": {"command": "x", "env": {"A": "1"}}\n\t}\n}\n'
    assert changed(text, lambda doc: doc["mcpServers"]["fs"].update(env={"B": "2"})) == once(
        text, '{"A": "1"}', '{"B": "2"}'
    )
    assert changed(text, lambda doc: doc["mcpServers"]["fs"].update(env="none")) == once(text, '{"A": "1"}', '"none"')
    assert changed(text, lambda doc: doc["mcpServers"].clear()) == '{\n\t"mcpServers": {}\n}\n'
    assert changed('{"mcpServers": {}}', lambda doc: doc["mcpServers"].update(a={"command": "x"})) == (
        '{"mcpServers": {\n  "a": {\n    "command": "x"\n  }\n}}'
    )


def test_a_new_or_empty_file_is_written_with_two_spaces_and_a_final_newline() -> None:
    new = {"mcpServers": {"a": {"command": "x", "args": ["-y", "p"], "timeout": 30.0}}}
    expected = (
        '{\n  "mcpServers": {\n    "a": {\n      "command": "x",\n      "args": ["-y", "p"],\n'
        '      "timeout": 30\n    }\n  }\n}\n'
    )
    assert rewrite(None, {}, new) == expected
    assert rewrite("  \n", {}, new) == expected


def test_text_that_cannot_be_spliced_is_written_whole_in_the_files_style() -> None:
    # The text does not read as the old document given: nothing in it can be trusted to splice.
    whole = rewrite(TABS_CRLF, {"other": 1}, {"mcpServers": {"a": {"command": "x"}}})
    assert whole == '{\r\n\t"mcpServers": {\r\n\t\t"a": {\r\n\t\t\t"command": "x"\r\n\t\t}\r\n\t}\r\n}\r\n'


def test_what_is_not_json_data_is_refused_before_anything_is_written() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        changed(TWO_SPACES, lambda doc: doc.update(when=object()))


def test_numbers_mean_what_they_say_and_true_is_not_one() -> None:
    assert same_json({"a": [30, {"b": 2.5}]}, {"a": [30.0, {"b": 2.5}]})
    assert not same_json(True, 1)
    assert not same_json({"a": 1}, {"a": 1, "b": None})
    assert not same_json([1, 2], [2, 1])
    assert same_json({"a": 1, "b": 2}, {"b": 2, "a": 1})  # key order is the text's business


def test_new_arrays_of_objects_go_one_item_a_line_and_empty_ones_stay_short() -> None:
    entry = {"command": "x", "autoApprove": [], "roots": ["/srv"], "x-checks": [{"every": 5}, {"every": 60}]}
    after = changed('{\n  "mcpServers": {}\n}\n', lambda doc: doc["mcpServers"].update(a=entry))
    assert after == (
        '{\n  "mcpServers": {\n    "a": {\n      "command": "x",\n      "autoApprove": [],\n'
        '      "roots": ["/srv"],\n      "x-checks": [\n        {\n          "every": 5\n        },\n'
        '        {\n          "every": 60\n        }\n      ]\n    }\n  }\n}\n'
    )
