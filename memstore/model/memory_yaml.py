"""A memory file's YAML front matter: split from its body, read and written as PyYAML does.

Plain front matter (strings and lists of them, what memstore mostly writes) takes a quick path
that never imports PyYAML; anything else goes through PyYAML, loaded on first need.
"""

from __future__ import annotations

import functools
import re
from typing import Any, cast

from memstore.errors import InvalidMemory


def _without_timestamps(cls: Any) -> Any:
    # Dates stay strings, so `created: 2026-11-30T08:00:00Z` round-trips unquoted and unchanged.
    cls.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in cls.yaml_implicit_resolvers.items()
    }
    return cls


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_SCALARS = frozenset(
    (
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
    )
)


_FENCE = re.compile(r"^-{3,}\s*$", re.MULTILINE)
"""python-frontmatter's YAML fence (`YAMLHandler.FM_BOUNDARY`)."""


class _NotPlain(Exception):
    """A node `_Loader`'s quick path leaves to PyYAML's own construction."""


@functools.cache
def _yaml() -> tuple[Any, Any]:
    """memstore's YAML loader and dumper, made on the first parse or render: PyYAML loads then,
    so a process that only searches its index or prints help never pays for importing it."""
    import yaml

    # libyaml's C loader/dumper when present: parsing is the cost of listing a large store.
    base_loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    base_dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    @_without_timestamps
    class _Loader(base_loader):
        def get_single_data(self) -> Any:
            """As PyYAML's, with a quick path for front matter of plain mappings, lists,
            strings, booleans, numbers and nulls (what memstore writes): building each value
            through the constructor's generic machinery costs more than libyaml's parse.
            Anything else (an alias, a merge key, another tag) or any error is left to PyYAML's
            construction, so the values and the errors are the same either way."""
            node = self.get_single_node()
            if node is None:
                return None
            try:
                return self._plain(node, set())
            except Exception:  # noqa: BLE001 - PyYAML's own path decides what is wrong
                self.constructed_objects = {}
                self.recursive_objects = {}
                return self.construct_document(node)

        def _plain(self, node: Any, seen: set[int]) -> Any:
            tag = node.tag
            if tag == _STR and isinstance(node, yaml.ScalarNode):
                return node.value
            if id(node) in seen:  # an alias: the same object twice, as `_refuse_aliases` expects
                raise _NotPlain
            seen.add(id(node))
            if tag == _MAP and isinstance(node, yaml.MappingNode):
                data: dict[Any, Any] = {}
                for key, value in node.value:
                    if key.tag != _STR or not isinstance(key, yaml.ScalarNode):
                        raise _NotPlain
                    data[key.value] = self._plain(value, seen)
                return data
            if tag == _SEQ and isinstance(node, yaml.SequenceNode):
                return [self._plain(item, seen) for item in node.value]
            if tag in _SCALARS and isinstance(node, yaml.ScalarNode):
                return self.construct_object(node)
            raise _NotPlain

    @_without_timestamps
    class _Dumper(base_dumper):
        pass

    _Dumper.add_representer(str, _represent_str)
    return _Loader, _Dumper


# Front matter of plain strings and lists of them (what a memory's fields mostly are) is
# written and read without PyYAML, whose import costs a short-lived command such as `memstore
# add` a sixth of its CPU. Only values that PyYAML writes unquoted and reads back unchanged take
# this path, in exactly the form PyYAML gives them (tests/model/test_memory.py compares the two);
# anything else (quotes, numbers, booleans, line breaks, other characters) goes through PyYAML.
_QUICK_ASCII = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,;/()'\"!?+=&%@$~*<>^|\\"
)
_QUICK_STAMP = re.compile(r"\d{4}-\d\d-\d\d(?:T\d\d:\d\d:\d\dZ)?", re.ASCII)
_QUICK_KEY = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_QUICK_HEX = re.compile(r"(?!0b)(?=[0-9a-f]*[a-f])[0-9a-f]+", re.ASCII)
"""Lower-case hex with a letter in it (a `confirmed_hash`, a commit id): YAML 1.1 reads none
as a number (an int needs `0x`, `0b` or digits only, a float a `.`), so PyYAML writes it plain."""
_YAML_WORDS = frozenset(("y", "n", "yes", "no", "true", "false", "on", "off", "null"))
"""Words YAML 1.1 reads as booleans or null, in any case."""
_QUICK_MAX = 1000
"""Longer values go through PyYAML (it folds a line past its width)."""


def _quick_scalar(value: str) -> bool:
    """Whether PyYAML writes `value` unquoted and reads that back as the same string: it
    starts with an ASCII letter, holds no `:` or `#` (or is a date or `now()` time, or hex
    with a letter), no other character that YAML gives a meaning, no control character or
    line break."""
    if _QUICK_STAMP.fullmatch(value):
        return True
    if not value or len(value) > _QUICK_MAX or value[-1] == " ":
        return False
    if "0" <= value[0] <= "9":
        return _QUICK_HEX.fullmatch(value) is not None
    if not ("a" <= value[0] <= "z" or "A" <= value[0] <= "Z") or value.lower() in _YAML_WORDS:
        return False
    if value.isascii():
        return _QUICK_ASCII.issuperset(value)
    return all(
        c in _QUICK_ASCII
        or ("\xa0" <= c <= "\ud7ff" and c not in "\u2028\u2029")
        or ("\ue000" <= c <= "\ufffd" and c != "\ufeff")
        for c in value
    )


def _quick_key(key: object) -> bool:
    return isinstance(key, str) and bool(_QUICK_KEY.fullmatch(key)) and key not in _YAML_WORDS


def _quick_dump(data: dict[str, Any]) -> str | None:
    """`data` as PyYAML dumps it for `dump`, when every key is a plain word and every value
    a `_quick_scalar` string or a list of them; else None."""
    lines: list[str] = []
    for key, value in data.items():
        if not _quick_key(key):
            return None
        if type(value) is str and _quick_scalar(value):
            lines.append(f"{key}: {value}")
            continue
        if type(value) is not list:
            return None
        items = cast(list[object], value)
        if not all(type(v) is str and _quick_scalar(v) for v in items):
            return None
        lines.append(f"{key}:" if items else f"{key}: []")
        lines.extend(f"- {v}" for v in items)
    return "\n".join(lines) + "\n"


def _quick_load(head: str) -> dict[str, Any] | None:
    """The mapping front matter `head` holds, when it has only the shapes `_quick_dump`
    writes (each line `key: value`, `key: []`, or `key:` then `- value` lines, no key
    twice); else None, and PyYAML reads it."""
    data: dict[str, Any] = {}
    items: list[str] | None = None
    for line in head.split("\n"):
        if line.startswith("- "):
            if items is None or not _quick_scalar(line[2:]):
                return None
            items.append(line[2:])
            continue
        if items is not None and not items:
            return None  # `key:` and no item: a null
        items = None
        if not line:
            continue
        key, colon, value = line.partition(":")
        if not colon or not _quick_key(key) or key in data:
            return None
        if not value:
            data[key] = items = []
        elif value == " []":
            data[key] = []
        elif value[0] == " " and _quick_scalar(value[1:]):
            data[key] = value[1:]
        else:
            return None
    if items is not None and not items:
        return None
    return data or None  # no key at all: PyYAML reads a null


def _represent_str(dumper: Any, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def dump(data: dict[str, Any]) -> str:
    """`data` as front matter: block style, keys in the order given, Unicode as is."""
    head = _quick_dump(data)
    if head is not None:
        return head
    import yaml

    return yaml.dump(
        data,
        Dumper=_yaml()[1],
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )


def split(text: str) -> tuple[dict[str, Any], str]:
    """Split a memory file into its front-matter mapping and its body.

    Raises:
        InvalidMemory: when the front matter is missing, is not YAML, or is not a mapping.
    """
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    if _FENCE.match(text):
        parts = _FENCE.split(text, 2)
        if len(parts) == 3:
            data = _quick_load(parts[1])
            if data is not None:
                return data, parts[2]
    # python-frontmatter finds the fences (the quick path above uses its pattern); imported
    # here, on the first file read, so a process that only searches its index or prints help
    # never loads it.
    import frontmatter.default_handlers
    import yaml

    handler = frontmatter.default_handlers.YAMLHandler()
    if not handler.detect(text):
        raise InvalidMemory("no YAML front matter: the file must start with a '---' line")
    try:
        head, body = handler.split(text)
    except ValueError as e:
        raise InvalidMemory("front matter is not closed by a '---' line") from e

    try:
        data = yaml.load(head, Loader=_yaml()[0])  # noqa: S506 - a SafeLoader
    except RecursionError as e:
        raise InvalidMemory("front matter is nested too deeply to be a memory") from e
    except yaml.YAMLError as e:
        # The context mark is where the broken construct starts, the line a person must fix.
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        # The front matter starts on the opening "---" line: 0-based line + 1 is the file line.
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InvalidMemory(f"front matter is not valid YAML{where}: {problem}") from e
    if not isinstance(data, dict):
        raise InvalidMemory("front matter must be a mapping of keys to values")
    _refuse_aliases(data)  # pyright: ignore[reportUnknownArgumentType]
    return data, body  # pyright: ignore[reportUnknownVariableType]


def _refuse_aliases(data: object) -> None:
    """Raise if a list or mapping appears twice: a YAML alias (`*a`), which memstore never
    writes, and which could expand exponentially ("billion laughs") once printed."""
    seen: set[int] = set()
    stack: list[Any] = [data]
    while stack:
        item: Any = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:  # pyright: ignore[reportUnknownArgumentType]
                raise InvalidMemory("front matter uses a YAML alias (*name); write the value out")
            seen.add(id(item))  # pyright: ignore[reportUnknownArgumentType]
            stack.extend(item.values() if isinstance(item, dict) else item)  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
