"""What a route receives through FastAPI's dependencies: the app's :class:`~sqlweave.server.state.ServerState`
and the tenant whose API key the request carries.

A route declares ``state: State`` (and ``tenant: CurrentTenant``) among its parameters; neither appears in the
API's schema::

    @router.get("/api/health")
    async def health(state: State) -> dict[str, Any]:
        return {"model": state.llm.model_id}
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from .settings import Tenant
from .state import ServerState


def server_state(request: Request) -> ServerState:
    """The state of the app serving ``request`` (``app.state.sqlweave``, set when the app is built)."""
    state: ServerState = request.app.state.sqlweave
    return state


def tenant_of(request: Request) -> Tenant | None:
    """The tenant whose API key the request carries (set by the API-key middleware), or ``None``."""
    tenant: Tenant | None = request.scope.get("state", {}).get("tenant")
    return tenant


def owner_of(request: Request) -> str | None:
    """Whose conversations the request may see: its tenant's (``None``: every conversation)."""
    tenant = tenant_of(request)
    return tenant.name if tenant is not None else None


State = Annotated[ServerState, Depends(server_state)]
CurrentTenant = Annotated[Tenant | None, Depends(tenant_of)]
Owner = Annotated[str | None, Depends(owner_of)]

__all__ = ["CurrentTenant", "Owner", "State", "owner_of", "server_state", "tenant_of"]
