"""The long-running doors: ``serve`` (the HTTP API and the web page) and ``mcp`` (tools for an AI assistant), each
serving the databases it is given by name (a client never names a path or URL)::

    $ sqlweave serve --demo --db crm=postgresql://localhost/crm
    $ sqlweave mcp --db shop=/data/shop.sqlite
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .. import __version__, display
from ..errors import ConfigurationError
from .build import build_llm, parse_params, preset_pipeline
from .options import KeysOption, ModelOption
from .output import err_console, errors


DoorDbOption = typer.Option([], "--db", help="A database to serve: NAME=PATH_OR_URL (repeatable). Clients only "
                            "ever see NAME.")
ConfigOption = typer.Option(None, "--config", help="A TOML file of databases (a \\[databases.NAME] table with target = ...).")
DemoOption = typer.Option(False, "--demo", help="Also serve the bundled demo shop, as 'shop'.")
DoorPolicyOption = typer.Option([], "--policy", help="An access policy (YAML) for every database, or NAME=FILE for "
                                "one (repeatable; merged with the config file's).")
DoorSchemasOption = typer.Option([], "--schemas", help="PostgreSQL and DuckDB: the schemas of a database to read, "
                                 "NAME=SCHEMA,SCHEMA in the order a table's name is looked up (repeatable; bare "
                                 "SCHEMA,SCHEMA when one database is served; default: the search path).")


def serve(
    db: list[str] = DoorDbOption,
    config: Optional[Path] = ConfigOption,
    demo: bool = DemoOption,
    model: str = ModelOption,
    pipeline: str = typer.Option("default", "--pipeline", "-p", help="Preset used when a request names none."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on. Anything but loopback needs an API key."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="SQLWEAVE_API_KEY", show_envvar=True,
                                          help="Key every API call must send (Authorization: Bearer KEY)."),
    queue_size: int = typer.Option(16, "--queue-size", help="Requests that may wait for the model; more get 503."),
    max_question_seconds: float = typer.Option(120.0, "--max-question-seconds", min=1.0,
                                               help="Most seconds of model time one question may take (each "
                                                    "preset's own budget when lower); then the answer found so "
                                                    "far, marked cut short, or 504."),
    model_concurrency: int = typer.Option(1, "--model-concurrency", help="Questions the model works on at once "
                                          "(1 for the embedded model; more for a model server)."),
    rate_limit: float = typer.Option(120.0, "--rate-limit", help="Requests per minute per client (0: off)."),
    cors_origin: list[str] = typer.Option([], "--cors-origin", help="An origin allowed to call the API from a browser "
                                          "(repeatable; default: none)."),
    conversations: Optional[str] = typer.Option(None, "--conversations", help="Conversation store URL (SQLAlchemy; "
                                                "default: SQLite in the cache directory; PostgreSQL for several "
                                                "server processes)."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds a query may run before it is stopped."),
    max_rows: int = typer.Option(1000, "--max-rows", help="Most rows a query returns."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible model server URL."),
    llm_api_key: Optional[str] = typer.Option(None, "--llm-api-key", help="API key for the OpenAI-compatible server."),
    policy: list[str] = DoorPolicyOption,
    tenants: Optional[Path] = typer.Option(None, "--tenants", help="YAML list of tenants: {name, key or key_env, "
                                           "params}; each key binds the access policy's row-filter parameters and "
                                           "keeps its conversations to itself."),
    keys_from_data: bool = KeysOption,
    schemas: list[str] = DoorSchemasOption,
    warm_up: bool = typer.Option(True, "--warm-up/--no-warm-up",
                                 help="At start, evaluate each database's schema prompt once (behind any question), "
                                      "so the first question answers in seconds."),
    feedback_examples: str = typer.Option("pending", "--feedback-examples",
                                          help="Where a pair that feedback proposes goes: pending (you review it "
                                               "with `sqlweave examples pending`), pool (straight into the example "
                                               "pool; a tenant's still wait), or off (only logged)."),
) -> None:
    """Serve the HTTP API and the web page: ask, stream the stages, run SQL, conversations, feedback.

    Open http://127.0.0.1:8000/ for the page; the API schema is at /openapi.json. Clients name only the databases
    given here (--db NAME=PATH_OR_URL, --config, --demo), never a path or URL.
    """
    from ..catalog import Catalog
    from ..server import ServerSettings, run
    from ..server.settings import load_tenants

    with errors():
        catalog = Catalog.from_options(db, config, demo, timeout_s=timeout, max_rows=max_rows, policies=policy,
                                       keys_from_data=keys_from_data, schemas=schemas)
        settings = ServerSettings(
            catalog, llm=model, cache=not no_cache, preset=pipeline, api_key=api_key, host=host, port=port,
            tenants=load_tenants(tenants) if tenants is not None else (),
            queue_size=queue_size, model_concurrency=model_concurrency, rate_limit_per_minute=rate_limit,
            max_question_seconds=max_question_seconds,
            cors_origins=tuple(cors_origin), conversation_url=conversations, warm_up=warm_up,
            feedback_examples=feedback_examples)
        settings.check_exposure()
        settings.check_conversations()
        preset_pipeline(pipeline)  # an unknown preset fails before the model loads
        llm = build_llm(model, cache=not no_cache, base_url=base_url, api_key=llm_api_key, quiet=False)
        err_console.print(display.label(f"sqlweave {__version__} serving ", ", ".join(catalog.names()),
                                        f" on http://{host}:{port}/"), style="bold")
        run(settings, llm=llm)


def mcp_command(
    db: list[str] = DoorDbOption,
    config: Optional[Path] = ConfigOption,
    demo: bool = DemoOption,
    model: str = ModelOption,
    pipeline: str = typer.Option("default", "--pipeline", "-p", help="Pipeline preset for the ask tool."),
    transport: str = typer.Option("stdio", "--transport", help="stdio (for an assistant that starts sqlweave) or "
                                  "http (streamable HTTP)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address for --transport http (loopback only)."),
    port: int = typer.Option(8765, "--port", help="Port for --transport http."),
    max_rows: int = typer.Option(200, "--max-rows", help="Most rows a tool returns."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds a query may run before it is stopped."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible server URL."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key for an OpenAI-compatible server."),
    policy: list[str] = DoorPolicyOption,
    param: list[str] = typer.Option([], "--param", help="A row-filter parameter of the access policies, bound for "
                                    "every tool call: NAME=VALUE (repeatable)."),
    keys_from_data: bool = KeysOption,
    schemas: list[str] = DoorSchemasOption,
) -> None:
    """Serve databases to an AI assistant over MCP: tools list_databases, describe_schema, ask and run_sql (read-only).

    With stdio nothing but the protocol is written to stdout. Example client configuration:

    {"command": "sqlweave", "args": ["mcp", "--db", "shop=/data/shop.sqlite"]}
    """
    from .. import mcp as mcp_door
    from ..catalog import Catalog

    with errors():
        if transport == "http" and host not in ("127.0.0.1", "localhost", "::1"):
            raise ConfigurationError(f"the MCP HTTP transport has no authentication and will not bind to {host!r}",
                                     hint="Keep --host 127.0.0.1 and put an authenticating proxy in front of it.")
        catalog = Catalog.from_options(db, config, demo, timeout_s=timeout, max_rows=max_rows, policies=policy,
                                       keys_from_data=keys_from_data, schemas=schemas)
        preset_pipeline(pipeline)  # an unknown preset fails before serving starts
        # the embedded model loads in the background once serving starts (stdio must stay silent)
        llm = build_llm(model, cache=not no_cache, base_url=base_url, api_key=api_key, quiet=True, load=False)
        mcp_door.run(catalog, llm, "http" if transport == "http" else transport,  # type: ignore[arg-type]
                     host=host, port=port, pipeline_name=pipeline, max_rows=max_rows, params=parse_params(param))

