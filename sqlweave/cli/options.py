"""The options several commands share, declared once so that each reads and documents the same way everywhere.

>>> DbOption.param_decls
('--db',)
"""

from __future__ import annotations

import typer

DbOption = typer.Option(..., "--db",
                        help="SQLite/DuckDB file path, CSV/Parquet/JSON/Excel file or folder, or SQLAlchemy URL.")
ModelOption = typer.Option("local", "--model", "-m", help="local, local:1.5b, local:0.5b, openai:MODEL, ...")
#: ``--db`` for the commands that also take ``--demo`` (one of the two is needed).
DbOrDemoOption = typer.Option(None, "--db", help="SQLite/DuckDB file path, CSV/Parquet/JSON/Excel file or folder, or "
                              "SQLAlchemy URL (or --demo).")
AskDemoOption = typer.Option(False, "--demo", help="Ask the bundled demo shop (with its knowledge file) instead of "
                             "--db.")
CsvOption = typer.Option(False, "--csv", help="Print the result as CSV; formula-like cells (=, +, -, @) are "
                         "prefixed with ' so spreadsheets show them as text.")
RawCsvOption = typer.Option(False, "--raw-csv", help="Print the result as CSV with every cell exactly as stored.")
ExamplesOption = typer.Option(
    None, "--examples", exists=True, dir_okay=False, help="Example pool for presets with few-shot examples (a "
    "Spider-format train.json; default: $SQLWEAVE_EXAMPLES, else the bundled Spider training pairs).")
SchemaBudgetOption = typer.Option(
    None, "--schema-budget", min=1, help="Most tokens of schema a prompt shows (default: what the model's context "
    "leaves). A larger schema is fitted by retrieval; 2048 is much faster on hundreds of tables on a CPU.")
KeysOption = typer.Option(True, "--keys-from-data/--no-keys-from-data",
                          help="When the database declares no foreign key, read its keys from the column names and "
                               "values (in sqlweave's view of the schema only; the database is not changed).")
SchemasOption = typer.Option(None, "--schemas", help="PostgreSQL and DuckDB: the schemas to read, comma-separated, "
                             "in the order a table's name is looked up (default: the connection's search path; "
                             "every schema of a DuckDB file).")
KnowledgeOption = typer.Option(None, "--knowledge", help="Domain-knowledge file (YAML, or defog's JSON): "
                               "descriptions, business terms, preferred joins, sample questions.")
PolicyOption = typer.Option(None, "--policy", help="Access policy (YAML): hidden tables and columns, row filters.")
ParamOption = typer.Option([], "--param", help="A row-filter parameter of the access policy: NAME=VALUE (repeatable).")
