"""Every command and code block of the README and docs/ is true of this sqlweave.

- Each `sqlweave ...` command in a code block (and each inline `sqlweave ...` in the text) names a command that
  exists and only options that command has; a command in a code block is also parsed whole by the CLI's own
  parser (arguments, option values and their types, required options), without running it.
- Each MCP client configuration (`"command": "sqlweave", "args": [...]`) is such a command too.
- Each Python block compiles, and runs against a copy of the demo shop with the test double for the model,
  unless the line before its fence is `<!-- docs-test: compile-only -->` (it needs a server, a model or a file the
  reader has). Each TOML and YAML block parses, and the JSON blocks that are configuration too.
- No page names a path of the machine it was written on.

In a block that shows output, commands start with `$ `; then only those lines are commands.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
import tomllib
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "BENCHMARKS.md", *(ROOT / "docs").rglob("*.md")])
#: Pages whose commands are generated from the CLI itself (checked by tests/test_docs_cli.py).
GENERATED = {ROOT / "docs" / "reference" / "cli.md"}
COMPILE_ONLY = "<!-- docs-test: compile-only -->"
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```\s*$", re.M | re.S)
SHELLS = {"", "bash", "sh", "shell", "console", "text"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    compile_only: bool

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> Iterator[Block]:
    text = page.read_text(encoding="utf-8")
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        body = "\n".join(l[len(m["indent"]):] for l in m["body"].splitlines())
        yield Block(page, line, m["lang"].lower(), body, before == COMPILE_ONLY)


def all_blocks(*langs: str) -> list[Block]:
    return [b for p in PAGES for b in blocks(p) if b.lang in langs]


def _is_sqlweave(word: str) -> bool:
    return word == "sqlweave" or word.endswith("/sqlweave")


def shell_commands(block: Block) -> Iterator[tuple[str, list[str]]]:
    """The sqlweave commands of a shell block: (the text, its words after `sqlweave`)."""
    lines = block.body.splitlines()
    prompted = any(l.startswith("$ ") for l in lines)
    joined: list[str] = []
    for raw in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + raw.strip()
        else:
            joined.append(raw)
    for line in joined:
        if prompted:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        words = _words(line)
        if words is None:
            continue
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):  # VAR=value sqlweave ...
            words = words[1:]
        if words and _is_sqlweave(words[0]):
            # a pipe, a redirection or `&&` ends the command
            end = next((i for i, w in enumerate(words) if w in ("|", "||", "&&", ";", ">", ">>", "2>", "&")),
                       len(words))
            yield line.strip(), words[1:end]


def _words(line: str) -> list[str] | None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return None


def inline_commands(page: Path) -> Iterator[tuple[str, list[str]]]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    for m in re.finditer(r"(?<!`)`((?:\S*/)?sqlweave [^`\n]+)`(?!`)", text):
        words = _words(m[1])
        if words and _is_sqlweave(words[0]):
            yield m[1], words[1:]


def mcp_commands(block: Block) -> Iterator[tuple[str, list[str]]]:
    """The `{"command": "sqlweave", "args": [...]}` entries of a JSON block."""
    try:
        data = json.loads(block.body)
    except ValueError:
        return

    def walk(node: Any) -> Iterator[tuple[str, list[str]]]:
        if isinstance(node, dict):
            if isinstance(node.get("command"), str) and _is_sqlweave(node["command"]) and "args" in node:
                yield json.dumps(node), [str(a) for a in node["args"]]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    yield from walk(data)


# --- the CLI's own command tree ----------------------------------------------------------------------------------


def _tree() -> tuple[Any, Any, Any]:
    import typer.main

    from sqlweave.cli import app

    try:
        from typer._click import core, exceptions
    except ImportError:  # older typer: click itself
        from click import core, exceptions  # type: ignore[no-redef]
    return typer.main.get_command(app), core, exceptions


def check_command(words: list[str], *, parse: bool) -> str | None:
    """None when ``sqlweave WORDS`` is a command sqlweave has, with options it takes; else what is wrong."""
    root, core, exceptions = _tree()
    cmd, path, rest = root, ["sqlweave"], list(words)
    while hasattr(cmd, "commands") and rest and not rest[0].startswith("-"):
        if rest[0] == "...":  # "sqlweave tool ...": any of the group's commands
            return None
        sub = cmd.commands.get(rest[0])
        if sub is None:
            # a word that is no command can only be a positional argument of a group that runs itself
            if getattr(cmd, "invoke_without_command", False) and any(
                    p.param_type_name == "argument" for p in cmd.params):
                break
            return f"{' '.join(path)} has no command {rest[0]!r}"
        cmd, path, rest = sub, path + [rest.pop(0)], rest
    if hasattr(cmd, "commands") and not rest and not getattr(cmd, "invoke_without_command", False):
        return None  # a group named alone prints its commands
    known = {"--help"}
    for param in cmd.params:
        known.update(param.opts)
        known.update(param.secondary_opts)
    for word in rest:
        if word == "--":
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0]
        elif re.fullmatch(r"-[A-Za-z]\S*", word):
            name = word[:2]
        else:
            continue
        if name not in known:
            return f"{' '.join(path)} has no option {name}"
    if not parse or "--help" in rest or "..." in rest or any("..." in w for w in rest):
        return None
    parent = core.Context(root, info_name="sqlweave")
    try:
        cmd.make_context(path[-1], list(rest), parent=parent)
    except exceptions.UsageError as err:
        if "does not exist" in err.format_message():  # a file named in an example: the reader's own
            return None
        return f"{' '.join(path)}: {err.format_message()}"
    return None


def _documented_commands() -> list[tuple[str, str, list[str], bool]]:
    found = []
    for page in PAGES:
        if page in GENERATED:
            continue
        for block in blocks(page):
            if block.lang in SHELLS:
                found += [(block.where(), text, words, True) for text, words in shell_commands(block)]
            elif block.lang == "json":
                found += [(block.where(), text, words, True) for text, words in mcp_commands(block)]
        found += [(str(page.relative_to(ROOT)), text, words, False) for text, words in inline_commands(page)]
    return found


COMMANDS = _documented_commands()


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) > 100
    pages = {where.split(":")[0] for where, *_ in COMMANDS}
    assert {"README.md", "docs/tutorial.md", "docs/install.md"} <= pages


@pytest.mark.parametrize("where,text,words,parse", COMMANDS, ids=[f"{c[0]} {c[1][:60]}" for c in COMMANDS])
def test_a_documented_command_exists_with_its_options(where: str, text: str, words: list[str], parse: bool) -> None:
    problem = check_command(words, parse=parse)
    assert problem is None, f"{where}: `{text}`: {problem}"


def test_the_check_finds_a_command_or_option_that_does_not_exist() -> None:
    assert check_command(["ask", "--db", "x.sqlite", "How many?"], parse=True) is None
    assert "no option --dbb" in (check_command(["ask", "--dbb", "x.sqlite", "q"], parse=True) or "")
    assert "no command 'frobnicate'" in (check_command(["frobnicate"], parse=True) or "")
    assert "no command 'nope'" in (check_command(["examples", "nope"], parse=True) or "")
    assert check_command(["ask", "--db", "x.sqlite"], parse=True) is not None  # the question is missing
    assert check_command(["serve", "--port", "PORT"], parse=True) is not None  # not a number
    assert check_command(["eval", "--pipeline", "default", "--out", "runs/x"], parse=True) is None
    assert check_command(["serve", "--no-warm-up", "--demo"], parse=True) is None


def test_shell_blocks_are_read_as_a_reader_types_them() -> None:
    block = Block(ROOT / "README.md", 1, "console", "$ sqlweave demo\nsqlweave 0.1.0 serving shop\n"
                  "$ SQLWEAVE_CACHE_DIR=/tmp/c sqlweave ask --db shop.sqlite \\\n    'How many?' | head   # note\n",
                  False)
    assert [w for _, w in shell_commands(block)] == [["demo"], ["ask", "--db", "shop.sqlite", "How many?"]]


# --- code blocks ---------------------------------------------------------------------------------------------


PYTHON = all_blocks("python", "py")


@pytest.mark.parametrize("block", PYTHON, ids=[b.where() for b in PYTHON])
def test_a_python_block_compiles(block: Block) -> None:
    compile(block.body, block.where(), "exec")


@pytest.fixture()
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding what the docs' Python examples open: shop.sqlite (the demo shop), shop.yaml, policy.yaml."""
    from sqlweave.db.demo import demo_database_path, demo_knowledge_path

    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copy(demo_database_path(), tmp_path / "shop.sqlite")
    shutil.copy(demo_knowledge_path(), tmp_path / "shop.yaml")
    (tmp_path / "policy.yaml").write_text("hidden_columns: [customers.email]\n"
                                          "row_filters:\n  orders: \"customer_id = :customer\"\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fake_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model the docs name answers as the test double does: one query that runs on the demo shop."""
    import sqlweave.engine as engine_module
    from sqlweave.llm.fake import FakeLLM

    def respond(messages, options):  # type: ignore[no-untyped-def]
        if options.choices:
            return " ".join(["0.5"] * len(options.choices))
        if options.continuation is not None:
            return "-1.0"
        return "```sql\nSELECT COUNT(*) FROM customers\n```"

    monkeypatch.setattr(engine_module, "get_llm", lambda *a, **kw: FakeLLM(responder=respond))


RUNNABLE = [b for b in PYTHON if not b.compile_only]


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where() for b in RUNNABLE])
def test_a_python_block_runs_with_the_test_double_for_the_model(block: Block, shop: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_llm(monkeypatch)
    module = types.ModuleType("sqlweave_docs_block")  # a module of its own, as dataclasses expect
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(block.body, block.where(), "exec"), module.__dict__)  # noqa: S102 - the docs' own examples


TOML = all_blocks("toml")
YAML = all_blocks("yaml", "yml")
JSON = all_blocks("json")


@pytest.mark.parametrize("block", TOML, ids=[b.where() for b in TOML])
def test_a_toml_block_parses(block: Block) -> None:
    tomllib.loads(block.body)


@pytest.mark.parametrize("block", YAML, ids=[b.where() for b in YAML])
def test_a_yaml_block_parses(block: Block) -> None:
    yaml.safe_load(block.body)


@pytest.mark.parametrize("block", JSON, ids=[b.where() for b in JSON])
def test_a_json_block_parses(block: Block) -> None:
    if block.compile_only:
        pytest.skip("an example of a response, with parts left out")
    json.loads(block.body)


OTHER_PAGES = [ROOT / "CHANGELOG.md", ROOT / "SECURITY.md", ROOT / "NOTICE",
               *sorted((ROOT / "benchmarks" / "experiments").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES + OTHER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_names_a_path_of_the_machine_it_was_written_on(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    bad = [b for b in ("/work/", "../shared", "/root/", "/home/") if b in text]
    assert not bad, f"{page.relative_to(ROOT)} names {bad}"  # the generated pages too: the CLI's help is theirs


# --- links ---------------------------------------------------------------------------------------------------


def _anchors(page: Path) -> set[str]:
    """The anchors a forge makes for a page: one per heading (GitHub's rule), and every `<a id="...">`."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(re.findall(r'<a id="([^"]+)"', text))
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


LINKED = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "SECURITY.md", ROOT / "CHANGELOG.md",
          ROOT / "BENCHMARKS.md", *(ROOT / "docs").rglob("*.md")]


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_anchor(page: Path) -> None:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links that lead nowhere: {broken}"
