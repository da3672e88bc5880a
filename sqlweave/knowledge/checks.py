"""What is wrong with a YAML knowledge file, each problem with its line and key path: the checks every section's
reader uses (a text, a mapping, a list, the keys an entry may have) and the lines of the file's keys.

>>> problems = Problems("shop.yaml", {("terms",): 3})
>>> text_at(["a"], ("terms", "revenue"), problems), text_at(5, ("terms", "count"), problems)
('', '5')
>>> problems.items
['line 3 (terms.revenue): must be text, not a list']
"""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import ConfigurationError


class Problems:
    """Collects what is wrong with a knowledge file, each with its line and key path."""

    def __init__(self, source: str, lines: dict[tuple[Any, ...], int], sections: tuple[str, ...] = ()) -> None:
        self.source = source
        self.sections = sections
        self.lines = lines
        self.items: list[str] = []

    def add(self, path: tuple[Any, ...], message: str, line: int | None = None) -> None:
        for n in range(len(path), -1, -1):
            if line is not None:
                break
            line = self.lines.get(path[:n])
            if line is not None:
                break
        where = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")
        self.items.append(f"line {line}" * (line is not None) + (f" ({where})" if where else "") + f": {message}")

    def raise_if_any(self) -> None:
        if not self.items:
            return
        shown = self.items[:5] + ([f"... and {len(self.items) - 5} more"] if len(self.items) > 5 else [])
        raise ConfigurationError(
            f"the knowledge file {self.source} has {len(self.items)} problem{'s' * (len(self.items) > 1)}: "
            + "; ".join(shown),
            hint="Fix those entries; the sections a knowledge file may have are: " + ", ".join(self.sections) + ".",
            problems=list(self.items), file=self.source,
        )


def positions(node: Any, path: tuple[Any, ...], out: dict[tuple[Any, ...], int],
               duplicates: list[tuple[tuple[Any, ...], int]]) -> None:
    """Map each key path of a composed YAML node tree to its 1-based line; note repeated keys."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key, value in node.value:
            k = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
            sub = path + (k,)
            if k in seen:
                duplicates.append((sub, key.start_mark.line + 1))
            seen.add(k)
            out.setdefault(sub, key.start_mark.line + 1)
            positions(value, sub, out, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out.setdefault(path + (i,), item.start_mark.line + 1)
            positions(item, path + (i,), out, duplicates)


def kind_of(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false", type(None): "nothing"}.get(
        type(value), f"a {type(value).__name__}")


def did_you_mean(key: Any, choices: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(str(key), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def text_at(value: Any, path: tuple[Any, ...], problems: Problems, *, optional: bool = False) -> str:
    """Text from a scalar (numbers are written as text); anything else is a problem."""
    if value is None:
        if not optional:
            problems.add(path, "is empty")
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        problems.add(path, f"must be text, not {kind_of(value)}"
                     + (" (quote it: YAML reads yes/no/true/false as true/false)" if isinstance(value, bool) else ""))
        return ""
    text = str(value).strip()
    if not text and not optional:
        problems.add(path, "is empty")
    return text


def mapping_at(value: Any, path: tuple[Any, ...], problems: Problems) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(path, f"must be a mapping, not {kind_of(value)}")
        return {}
    return value


def list_at(value: Any, path: tuple[Any, ...], problems: Problems) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.add(path, f"must be a list, not {kind_of(value)}")
        return []
    return value


def check_keys(entry: dict[Any, Any], path: tuple[Any, ...], allowed: tuple[str, ...], problems: Problems) -> None:
    for key in entry:
        if key not in allowed:
            problems.add(path + (key,), f"unknown key {key!r}{did_you_mean(key, allowed)}; "
                                        f"expected one of: {', '.join(allowed)}")
