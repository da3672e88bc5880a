"""No module of sqlweave keeps mutable state of its own, but registries: caches belong to a
:class:`~sqlweave.resources.Resources` (bounded, keyed so that two databases never share an entry), which its
holder passes down.

Checked on the source of every module (AST, nothing imported):

- a module-level (or class-level) name bound to an empty container (``{}``, ``[]``, ``set()``, ``dict()``,
  ``defaultdict(...)``, ``OrderedDict()``, ``WeakKeyDictionary()`` ...): a store waiting to be filled;
- a function that changes a container bound at module level (``NAME[k] = v``, ``del NAME[k]``,
  ``NAME.append(...)``, ``NAME.setdefault(...)`` ...), however it was first filled;
- ``@lru_cache`` / ``@cache`` on a module-level function: allowed only for a pure function of constants (a
  parsed packaged file, a compiled grammar), listed in :data:`CONSTANT_CACHES` with its reason, and bounded (an
  integer ``maxsize``, or no argument at all);
- ``global NAME`` in a function: a module-level name written at run time.

Each allow-list entry says why, and must still name a hit (a stale entry fails too).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sqlweave"

#: Constructors of containers; called without arguments (``defaultdict`` with any) they make an empty store.
CONTAINER_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "WeakKeyDictionary",
                             "WeakValueDictionary", "WeakSet", "deque", "Counter", "ChainMap", "bytearray"})

#: Methods that change a container in place.
MUTATING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear",
                              "add", "discard", "remove", "move_to_end", "appendleft", "extendleft", "sort",
                              "reverse", "__setitem__", "__delitem__"})

#: ``module:name`` -> why: tables of names to classes (or functions) filled as the package imports.
REGISTRIES: dict[str, str] = {
    "sqlweave.llm.registry:BACKENDS": "backend name -> class, filled by register_backend as each backend imports",
}

#: ``module:function`` -> why: cached pure functions of constants (a fixed key space), bounded.
CONSTANT_CACHES: dict[str, str] = {
    "sqlweave.confidence:default_calibration": "the calibration file shipped in the package; no argument",
    "sqlweave.db.schema_cache:_code_digest": "a digest of the installed sqlweave code; no argument",
    "sqlweave.sql.name_keys:_reserved": "the reserved words of sqlglot's dialects; no argument",
    "sqlweave.temporal.grammar:grammar": "the time-expression grammar, compiled once; no argument",
    "sqlweave.text:_is_hidden": "a character's Unicode category: a pure function of one character",
}

#: ``module:name`` -> why: tables built by a loop as the module imports, only read afterwards (no function
#: changes them: the mutation check still holds).
FILLED_AT_IMPORT: dict[str, str] = {
    "sqlweave.temporal.grammar:MONTHS": "month names and abbreviations -> number, built from one list",
    "sqlweave.temporal.grammar:DAY_NAMES": "day names, singular and plural -> ISO number, built from one list",
}

#: ``module:name`` -> why: what is one per process by its nature (not a cache of anything).
PROCESS_WIDE: dict[str, str] = {
    "sqlweave.resources:_SHARED": "the process's default Resources (shared_resources), replaced only by "
                                  "set_shared_resources: the owner every cache hangs from",
    "sqlweave.conversation.records:_last_time": "the last stamp handed out, so that stamps increase strictly "
                                                "within the process: a clock, one per process",
}

#: ``module:name`` -> what it is: hits in modules another part of the current refactoring owns. Each owner moves
#: its state to the Resources (or an owner object its callers hold) and deletes its lines here.
OWNED_ELSEWHERE: dict[str, str] = {
    # llm/local.py: llama.cpp grammars parsed per schema (data, not constants)
    "sqlweave.llm.local:_grammar": "llama.cpp's parsed grammar of a schema's text, 16 kept",
    # prompts/: the packaged templates, read once each; bounded by their number, but not by the cache
    "sqlweave.prompts:load": "a packaged prompt template by name (maxsize=None: give it a bound)",
    # files.py: the cache folders already made private by this process (one walk per folder)
    "sqlweave.files:_SECURED": "cache folders made private so far, by path",
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _is_container(value: ast.AST) -> bool:
    return isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)) or (
        isinstance(value, ast.Call) and _call_name(value) in CONTAINER_CALLS)


def _is_empty_container(value: ast.AST) -> bool:
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.List):
        return not value.elts
    if isinstance(value, ast.Call) and _call_name(value) in CONTAINER_CALLS:
        return _call_name(value) == "defaultdict" or not (value.args or value.keywords)
    return False


def _top_level(body: list[ast.stmt]):
    """Statements run as the module imports (through ``if`` / ``try`` / ``with`` blocks, not into functions)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, field, []) or [])
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body)


def _assigned(node: ast.stmt) -> list[tuple[str, ast.AST]]:
    if isinstance(node, ast.Assign):
        return [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return [(node.target.id, node.value)]
    return []


def _is_cache_decorator(node: ast.expr) -> ast.expr | None:
    target = node.func if isinstance(node, ast.Call) else node
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
    return node if name in ("lru_cache", "cache") else None


def _bounded(decorator: ast.expr, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = fn.args
    if not (a.posonlyargs or a.args or a.kwonlyargs or a.vararg or a.kwarg):
        return True  # one entry at most
    if not isinstance(decorator, ast.Call):
        return False  # @cache, @lru_cache without a call: unbounded or default 128 of an open key space
    size = decorator.args[0] if decorator.args else next(
        (k.value for k in decorator.keywords if k.arg == "maxsize"), None)
    return isinstance(size, ast.Constant) and isinstance(size.value, int)


def module_state(source: str, module: str) -> dict[str, str]:
    """``module:name`` -> what kind of module-level state ``source`` keeps there."""
    tree = ast.parse(source)
    hits: dict[str, str] = {}
    containers: set[str] = set()
    for node in _top_level(tree.body):
        for name, value in _assigned(node):
            if _is_container(value):
                containers.add(name)
            if _is_empty_container(value):
                hits[f"{module}:{name}"] = "empty container"
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:  # an annotated field is a dataclass's or pydantic's default, copied per instance
                if isinstance(stmt, ast.AnnAssign) and "ClassVar" not in ast.unparse(stmt.annotation):
                    continue
                for name, value in _assigned(stmt):
                    if _is_empty_container(value):
                        hits[f"{module}:{node.name}.{name}"] = "empty container shared by every instance"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                cache = _is_cache_decorator(d)
                if cache is not None:
                    hits[f"{module}:{node.name}"] = "cache" if _bounded(cache, node) else "unbounded cache"
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Global):
                for name in n.names:
                    hits[f"{module}:{name}"] = "global written"
            targets: list[ast.expr] = []
            if isinstance(n, (ast.Assign, ast.Delete)):
                targets = list(n.targets)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                targets = [n.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in containers:
                    hits[f"{module}:{t.value.id}"] = "changed by a function"
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MUTATING_METHODS
                    and isinstance(n.func.value, ast.Name) and n.func.value.id in containers):
                hits[f"{module}:{n.func.value.id}"] = "changed by a function"
    return hits


def package_state() -> dict[str, str]:
    hits: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        hits.update(module_state(path.read_text(encoding="utf-8"), _module(path)))
    return hits


ALLOWED = {**REGISTRIES, **CONSTANT_CACHES, **FILLED_AT_IMPORT, **PROCESS_WIDE, **OWNED_ELSEWHERE}


def test_no_module_keeps_mutable_state_but_the_listed() -> None:
    hits = package_state()
    unlisted = sorted(f"{name} ({kind})" for name, kind in hits.items() if name not in ALLOWED)
    assert not unlisted, ("module-level mutable state: keep it in a Resources kind (or an object the caller "
                          f"holds), or list it with its reason: {unlisted}")


def test_every_listed_name_is_still_a_hit_of_its_kind() -> None:
    hits = package_state()
    assert sorted(set(ALLOWED) - set(hits)) == [], "stale allow-list entries: delete them"
    for name in CONSTANT_CACHES:
        assert hits[name] == "cache", f"{name}: a constant cache must be bounded ({hits[name]})"
    for name in REGISTRIES:
        assert hits[name] in ("empty container", "changed by a function"), name
    for name in FILLED_AT_IMPORT:
        assert hits[name] == "empty container", f"{name}: changed after import ({hits[name]})"


def test_the_check_finds_each_kind_of_state() -> None:
    source = '''
import functools
from collections import OrderedDict, defaultdict
from weakref import WeakKeyDictionary

A = {}
B: list[int] = []
C = set()
D = defaultdict(list)
E = OrderedDict()
F = WeakKeyDictionary()
TABLE = {"a": 1}
NAMES = ("a", "b")

if True:
    G = dict()

class Holder:
    seen = {}
    kept: ClassVar[dict] = {}
    field: list[int] = []

@functools.lru_cache(maxsize=None)
def load(path):
    return path

@functools.lru_cache(maxsize=4)
def parse(text):
    return text

@functools.cache
def constant():
    return 1

_state = None

def remember(key, value):
    global _state
    _state = value
    TABLE[key] = value
    NAMES.count(key)
'''
    assert module_state(source, "m") == {
        "m:A": "empty container", "m:B": "empty container", "m:C": "empty container", "m:D": "empty container",
        "m:E": "empty container", "m:F": "empty container", "m:G": "empty container",
        "m:Holder.seen": "empty container shared by every instance",
        "m:Holder.kept": "empty container shared by every instance", "m:load": "unbounded cache",
        "m:parse": "cache", "m:constant": "cache", "m:_state": "global written", "m:TABLE": "changed by a function"}
    assert module_state("X = {'a': 1}\nY = [1]\ndef f():\n    return X['a'], Y[0]\n", "m") == {}
