"""The HTTP API: the routers of :mod:`sqlweave.server.routes` over one :class:`~sqlweave.server.state.ServerState`,
behind the guards of :mod:`sqlweave.server.security`.

Model work (``/api/ask``, ``/api/ask/stream``, ``/api/explain``) goes through the bounded
:class:`~sqlweave.server.gate.ModelGate` and runs in a worker thread; database-only work runs in the
thread pool without waiting for the model. Every error leaves as ``{"error": {"code", "message", "hint"}}``.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator

from fastapi import FastAPI

from .._version import __version__
from ..llm.base import LLM
from .conversations import Conversations
from .errors import install_handlers
from .routes import ROUTERS
from .routes.page import install_page
from .security import (
    AccessLogMiddleware,
    APIKeyMiddleware,
    BodyLimitMiddleware,
    CatchAllMiddleware,
    RateLimiter,
    RateLimitMiddleware,
    SecurityHeadersMiddleware,
)
from .settings import ServerSettings
from .state import ServerState


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Warm the databases up while the server starts serving; close the state when it stops."""
    state: ServerState = app.state.sqlweave
    warming = asyncio.ensure_future(state.warm_up())
    try:
        yield
    finally:
        warming.cancel()
        state.close()


def build_app(settings: ServerSettings, *, llm: LLM | None = None,
              conversations: Conversations | None = None) -> FastAPI:
    """The FastAPI app (``create_app`` in :mod:`sqlweave.server` checks the extra is installed first)."""
    state = ServerState(settings, llm=llm, conversations=conversations)
    app = FastAPI(
        title="sqlweave", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
        description="Ask a configured database a question in plain language; get safe SQL, its result and a trace.",
    )
    app.state.sqlweave = state
    install_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    install_page(app, state.static_dir)
    add_guards(app, settings)
    return app


def add_guards(app: FastAPI, settings: ServerSettings) -> None:
    """The middleware around every route, innermost first."""
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(APIKeyMiddleware, api_key=settings.api_key, tenants=settings.tenants)
    limiter = (RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst)
               if settings.rate_limit_per_minute > 0 else None)
    app.add_middleware(RateLimitMiddleware, limiter=limiter)  # before the key check: guessing keys is limited too
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_credentials=False,
                           allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"],
                           expose_headers=["Retry-After", "X-Request-Id"])
    hosts = settings.resolved_allowed_hosts()
    if "*" not in hosts:
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=[h.strip("[]") for h in hosts] + list(hosts))
    app.add_middleware(AccessLogMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)


__all__ = ["ServerState", "add_guards", "build_app"]
