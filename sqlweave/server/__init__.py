"""``sqlweave serve``: the HTTP API and the web page (the ``server`` extra: FastAPI, uvicorn, sse-starlette).

>>> from sqlweave.catalog import Catalog
>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.server import ServerSettings, create_app
>>> app = create_app(ServerSettings(Catalog.demo(), llm=FakeLLM(["SELECT COUNT(*) FROM customers"]), api_key=""))
>>> sorted(p for p in app.openapi()["paths"] if p.startswith("/api/databases"))
['/api/databases', '/api/databases/{name}/schema', '/api/databases/{name}/suggestions']

Importing this package needs no extra; :func:`create_app` and :func:`run` say what to install when it is missing.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from ..errors import MissingDependencyError
from .settings import API_KEY_ENV, ServerSettings

if TYPE_CHECKING:
    from ..llm.base import LLM

_NEEDED = {"fastapi": "fastapi", "uvicorn": "uvicorn", "sse_starlette": "sse-starlette"}


def require_server_extra(*modules: str) -> None:
    """Raise :class:`MissingDependencyError` naming the extra when a server dependency is not installed."""
    missing = [_NEEDED.get(mod, mod) for mod in (modules or tuple(_NEEDED)) if importlib.util.find_spec(mod) is None]
    if missing:
        raise MissingDependencyError(f"the HTTP server needs {', '.join(missing)}, which is not installed",
                                     hint="pip install 'sqlweave[server]'")


def create_app(settings: ServerSettings, *, llm: "LLM | None" = None) -> Any:
    """The ASGI app (FastAPI) for ``settings``; ``llm`` overrides ``settings.llm`` (an already built backend).

    Raises :class:`MissingDependencyError` (hint: ``pip install 'sqlweave[server]'``) without the extra, and
    :class:`~sqlweave.errors.ConfigurationError` for an unknown default preset or model backend.
    """
    require_server_extra("fastapi", "sse_starlette")
    from ..config import cache_dir
    from ..files import secure_cache_once
    from .app import build_app

    secure_cache_once(cache_dir())  # a cache an older version left readable by others is made private

    return build_app(settings, llm=llm)


def run(settings: ServerSettings, *, llm: "LLM | None" = None, check_databases: bool = True) -> None:
    """Serve ``settings`` with uvicorn until interrupted (blocking).

    Refuses a non-loopback host without an API key (:class:`~sqlweave.errors.ConfigurationError`), opens
    every configured database first (``check_databases``) so a wrong path fails now rather than on the first
    request, and logs one JSON object per line.
    """
    settings.check_exposure()
    require_server_extra()
    import uvicorn

    from ..logs import configure_json_logging

    if settings.json_logs:
        configure_json_logging(name="sqlweave")
        configure_json_logging(name="uvicorn")
    if check_databases:
        settings.catalog.check()
    app = create_app(settings, llm=llm)
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None, access_log=False,
                proxy_headers=False, server_header=False, date_header=True, timeout_graceful_shutdown=10)


__all__ = ["API_KEY_ENV", "ServerSettings", "create_app", "require_server_extra", "run"]
