"""No failure is decided by an exception's message text: the package is read for it, so none comes back.

A decision reads a type or a code (an exception class, a SQLSTATE, an error number, SQLite's result code). Where a
driver gives nothing but text, the reading is one named function of its backend, tested by itself, and listed in
:data:`TEXT_ONLY` with why. :data:`TO_EMPTY` lists the places still being moved to types or codes: each entry
goes when its module is reworked, and the test fails when an entry is no longer needed, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sqlweave"

#: Names an exception is caught as or passed in under.
EXCEPTION_NAMES = {"e", "err", "exc", "error", "ex", "raw", "orig", "exception", "cause", "caught", "found"}
#: Names a message read from an exception is kept in.
MESSAGE_NAMES = {"message", "msg", "said"}
#: Methods that decide on a text.
TEXT_TESTS = {"startswith", "endswith", "find", "search", "match", "fullmatch", "findall"}

#: The named functions that read a driver's words because the driver gives nothing else (file, function): why.
TEXT_ONLY: dict[tuple[str, str], str] = {
    ("db/backends/duckdb.py", "duckdb_open_failure"):
        "DuckDB raises one IOException for a file another process locks and for a file that is no DuckDB file",
    ("db/backends/duckdb.py", "DuckDB.too_many_rows"):
        "DuckDB's InvalidInputException covers a scalar subquery's many rows among other invalid inputs",
    ("db/backends/sqlite.py", "_aggregate_failed"):
        "Python's sqlite3 reports an exception raised in a user-defined aggregate with its own fixed text only",
}

#: Decisions on message text that other modules still make (file, function), to be replaced by a type or a code
#: there; an entry is removed when its module no longer needs it.
TO_EMPTY: set[tuple[str, str]] = {
    ("sql/validate.py", "_column_from_message"),  # sqlglot's OptimizeError names the column in its text only
}


def _is_exception(node: ast.AST, tainted: set[str]) -> bool:
    """``err``, ``err.orig``, ``getattr(err, "orig", ...)``, ``err.orig or err``: an exception's value."""
    if isinstance(node, ast.Name):
        return node.id in EXCEPTION_NAMES
    if isinstance(node, ast.Attribute):
        return _is_exception(node.value, tainted)
    if isinstance(node, ast.BoolOp):
        return any(_is_exception(v, tainted) for v in node.values)
    if isinstance(node, ast.IfExp):
        return _is_exception(node.body, tainted) or _is_exception(node.orelse, tainted)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "cause_of") \
            and node.args:
        return _is_exception(node.args[0], tainted)
    return False


def _is_text(node: ast.AST, tainted: set[str]) -> bool:
    """An exception's text: ``str(err)``, ``str(err).lower()``, ``err.message``, ``err.args[1]``, or a name bound
    to one of them."""
    if isinstance(node, ast.Name):
        return node.id in tainted or node.id in MESSAGE_NAMES
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("str", "first_line") \
            and node.args:
        return _is_exception(node.args[0], tainted)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "lower", "upper", "strip", "casefold"):
        return _is_text(node.func.value, tainted)
    if isinstance(node, ast.Attribute) and node.attr in ("message", "args"):
        return _is_exception(node.value, tainted)
    if isinstance(node, ast.IfExp):
        return _is_text(node.body, tainted) or _is_text(node.orelse, tainted)
    if isinstance(node, ast.Subscript):  # err.args[1], a message's lines; not an ASGI message's message["type"]
        key = node.slice
        return _is_text(node.value, tainted) and not (isinstance(key, ast.Constant) and isinstance(key.value, str))
    return False


def _decisions(body: list[ast.stmt]) -> list[int]:
    """Lines of ``body`` (one function's, nested functions left out) that test an exception's text."""
    tainted: set[str] = set()
    found: list[int] = []
    nodes = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        nodes.append(node)
        stack.extend(ast.iter_child_nodes(node))
    nodes.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    for node in nodes:
        if isinstance(node, ast.Assign) and _is_text(node.value, tainted):
            tainted.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            if any(_is_text(c, tainted) for c in node.comparators):
                found.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(_is_text(s, tainted) for s in sides) and any(
                    isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides):
                found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TEXT_TESTS:
            if _is_text(node.func.value, tainted) or any(_is_text(a, tainted) for a in node.args):
                found.append(node.lineno)
    return found


def message_decisions() -> dict[tuple[str, str], list[int]]:
    """(file, function) -> the lines where that function decides on an exception's text."""
    out: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(PACKAGE).as_posix()

        def visit(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{prefix}{child.name}"
                    lines = _decisions(child.body)
                    if lines:
                        out[(rel, name)] = lines
                    visit(child, f"{name}.")

        visit(tree, "")
    return out


def test_no_failure_is_decided_by_message_text() -> None:
    found = message_decisions()
    new = {k: v for k, v in found.items() if k not in TEXT_ONLY and k not in TO_EMPTY}
    assert not new, ("decide on the exception's type or code, not its text (or, where a driver gives nothing else, "
                     f"one named function of its backend, listed in TEXT_ONLY): {new}")


def test_the_allow_lists_hold_only_what_is_still_there() -> None:
    found = message_decisions()
    stale = sorted(k for k in (*TEXT_ONLY, *TO_EMPTY) if k not in found)
    assert not stale, f"no longer decided on text: remove them from the lists: {stale}"


def test_the_reading_sees_each_form_of_a_text_decision() -> None:
    # a reading that missed these would pass the test above for nothing
    source = '''
def a(err):
    return "lock" in str(err).lower()
def b(err):
    text = str(getattr(err, "orig", err))
    return "timeout" in text
def c(exc):
    return exc.message.startswith("no such")
def d(err):
    return PATTERN.search(err.message)
def e(error):
    return error.args[0] == "gone"
def f(err):
    return isinstance(err, KeyError) or err.args[0] == 1205
'''
    tree = ast.parse(source)
    flagged = {fn.name for fn in tree.body if isinstance(fn, ast.FunctionDef) and _decisions(fn.body)}
    assert flagged == {"a", "b", "c", "d", "e"}
