"""The web page: ``/`` and its files under ``/static`` (a JSON 404 when the page is not installed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, JSONResponse, Response

from ..deps import State
from ..errors import NotFoundError, error_body

router = APIRouter()
_missing_files = APIRouter()


def page_missing() -> NotFoundError:
    """What a client asking for the page is told when it is not installed."""
    return NotFoundError("the web page is not installed",
                         hint="Use the HTTP API (GET /openapi.json), or reinstall sqlweave.")


@router.get("/", include_in_schema=False)
async def index(state: State) -> Response:
    page = state.static_dir / "index.html"
    if not page.is_file():
        return JSONResponse(error_body(page_missing()), status_code=404)
    return FileResponse(page, media_type="text/html; charset=utf-8", headers={"Cache-Control": "no-cache"})


@_missing_files.get("/static/{path:path}", include_in_schema=False)
async def no_static(path: str) -> Response:
    return JSONResponse(error_body(page_missing()), status_code=404)


def install_page(app: Any, static: Path) -> None:
    """Serve the page at ``/`` and the files of ``static`` under ``/static`` on the FastAPI ``app``."""
    app.include_router(router)
    if static.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=static), name="static")
    else:
        app.include_router(_missing_files)
