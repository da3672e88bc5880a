"""``/api/health`` and ``/api/presets``: what the server runs and what its presets cost here."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..._version import __version__
from ...presets import describe_presets
from .. import models as m
from ..deps import State

router = APIRouter()


@router.get("/api/health", response_model=m.HealthOut, tags=["service"])
async def health(state: State) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "model": state.llm.model_id, "queue": state.gate.stats()}


@router.get("/api/presets", response_model=m.PresetsOut, tags=["service"])
async def presets(state: State) -> dict[str, Any]:
    here = state.service_times()
    rows = [{**p, "server_median_seconds": round(here[p["name"]][0], 2) if p["name"] in here else None,
             "server_answers": here[p["name"]][1] if p["name"] in here else 0} for p in describe_presets()]
    return {"default": state.settings.preset, "presets": rows}
