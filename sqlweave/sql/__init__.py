"""sqlglot-based SQL utilities: extraction from model output, safety classification, validation."""

from .classify import ensure_read_only, is_read_only
from .extract import extract_sql
from .validate import parse_one, schema_issues

__all__ = ["ensure_read_only", "extract_sql", "is_read_only", "parse_one", "schema_issues"]
