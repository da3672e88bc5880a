"""The HTTP API's routes, one router per group, in the order the API lists them.

>>> [r.path for r in service.router.routes]
['/api/health', '/api/presets']
"""

from __future__ import annotations

from . import ask, conversations, databases, feedback, service, sql

#: Every router of the API, in the order the schema lists their paths (the page is served apart: :mod:`.page`).
ROUTERS = (service.router, databases.router, ask.router, sql.router, feedback.router, conversations.router)

__all__ = ["ROUTERS"]
