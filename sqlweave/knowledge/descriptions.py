"""Description side files: table and column descriptions in JSON, defog's JSON metadata, or a folder of BIRD's
CSV files, read into one form, ``{table: {"description": str, "columns": {column: str}}}``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, SchemaError


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError(f"no knowledge file at {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigurationError(f"cannot read {str(path)!r}: {err}") from None
    except ValueError as err:
        raise ConfigurationError(f"{str(path)!r} is not valid JSON: {err}") from None


def file_descriptions(path: Path) -> dict[str, dict[str, Any]]:
    """The descriptions of a JSON file (sqlweave's or defog's form) or a BIRD folder of CSV files
    (:func:`sqlweave.knowledge.load_descriptions` reads a YAML knowledge file's itself)."""
    path = Path(path)
    if not path.exists():
        raise SchemaError(f"no description file at {str(path)!r}",
                          hint="Pass a JSON file, a YAML knowledge file or a folder of CSV files.")
    try:
        if path.is_dir():
            return bird_descriptions(path)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, csv.Error) as err:
        raise SchemaError(f"cannot read descriptions from {str(path)!r}: {err}") from err
    if not isinstance(data, dict):
        raise SchemaError(f"descriptions in {str(path)!r} must be a JSON object")
    out: dict[str, dict[str, Any]] = {}
    if "table_metadata" in data:
        for table, cols in data["table_metadata"].items():
            out[table.lower()] = {
                "description": "",
                "columns": {str(c.get("column_name", "")).lower(): c.get("column_description", "") for c in cols},
            }
        return out
    for table, info in data.items():
        info = info if isinstance(info, dict) else {"description": str(info)}
        cols = info.get("columns", {}) or {}
        out[table.lower()] = {
            "description": str(info.get("description", "")),
            "columns": {str(k).lower(): str(v) for k, v in cols.items()},
        }
    return out


def bird_descriptions(folder: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in sorted(folder.glob("*.csv")):
        cols: dict[str, str] = {}
        raw = f.read_bytes().decode("utf-8", errors="replace").lstrip("\ufeff")
        for row in csv.DictReader(raw.splitlines()):
            name = (row.get("original_column_name") or "").strip()
            if not name:
                continue
            parts = [row.get("column_description") or "", row.get("value_description") or ""]
            cols[name.lower()] = "; ".join(p.strip() for p in parts if p and p.strip())
        out[f.stem.lower()] = {"description": "", "columns": cols}
    return out
