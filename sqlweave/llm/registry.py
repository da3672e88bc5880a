"""Build a backend from a short spec string; third parties register theirs the same way.

Specs: ``local`` or ``local:1.5b`` / ``local:0.5b`` (embedded), ``openai:MODEL`` (OpenAI or any
compatible server with ``base_url=``), ``fake`` (tests). A name none of those has is looked up in the
``sqlweave.backends`` entry-point group (:mod:`sqlweave.plugins`): an installed package's factory, called as
``factory(arg, **options)`` like a registered one.

>>> get_llm("fake").model_id
'fake'
>>> sorted(BACKENDS)
['fake', 'local', 'openai']
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..config import Settings
from ..errors import ConfigurationError, PluginError, SqlweaveError
from ..plugins import BACKENDS as BACKENDS_GROUP, plugin, plugin_names
from .base import LLM

if TYPE_CHECKING:
    from ..resources import Resources

BackendFactory = Callable[..., LLM]
BACKENDS: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``name[:arg]`` specs build backends with ``factory(arg, **options)``."""
    BACKENDS[name] = factory


def _local(arg: str | None, **kw: Any) -> LLM:
    from .local import LocalLLM

    return LocalLLM(arg or "1.5b", **kw)


def _openai(arg: str | None, **kw: Any) -> LLM:
    from .openai_compat import OpenAICompatibleLLM

    if not arg:
        raise ConfigurationError("an OpenAI-compatible backend needs a model name", hint="Use openai:MODEL, e.g. openai:gpt-4o-mini.")
    return OpenAICompatibleLLM(arg, **kw)


def _fake(arg: str | None, **kw: Any) -> LLM:
    from .fake import FakeLLM

    return FakeLLM(**kw)


register_backend("local", _local)
register_backend("openai", _openai)
register_backend("fake", _fake)


def _plugin_backend(name: str, arg: str | None, options: dict[str, Any]) -> LLM:
    """The backend an installed package offers as ``name`` (entry-point group ``sqlweave.backends``), built."""
    factory = plugin(BACKENDS_GROUP, name)
    if factory is None:
        known = sorted(BACKENDS) + [p for p in plugin_names(BACKENDS_GROUP) if p not in BACKENDS]
        raise ConfigurationError(f"unknown model backend {name!r}",
                                 hint=f"Use one of: {', '.join(known)} (e.g. local:1.5b).")
    if not callable(factory):
        raise PluginError(f"the plugin backend {name!r} is {factory!r}, not a factory",
                          hint="Point its entry point at a function or class called as factory(arg, **options).")
    try:
        llm = factory(arg, **options)
    except SqlweaveError:
        raise
    except Exception as err:  # a third party's fault reaches the doors as a typed error naming the plugin
        raise PluginError(f"the plugin backend {name!r} failed to start: {type(err).__name__}: {err}",
                          plugin=name) from err
    if not isinstance(llm, LLM):
        raise PluginError(f"the plugin backend {name!r} built {type(llm).__name__}, not a sqlweave.llm.LLM",
                          hint="Subclass sqlweave.llm.base.LLM and implement _complete.")
    return llm


def get_llm(spec: str = "local", *, cache: bool | Path = False, resources: "Resources | None" = None,
            **options: Any) -> LLM:
    """Build the backend named by ``spec``; ``cache=True`` (or a path) adds the persistent response cache (in the
    cache directory of ``resources``' settings). The embedded model loads into ``resources``' model store
    (default: :func:`~sqlweave.resources.shared_resources`)."""
    name, _, arg = spec.partition(":")
    if resources is not None and name == "local":
        options = {**options, "resources": resources}
    if name in BACKENDS:
        llm = BACKENDS[name](arg or None, **options)
    else:
        llm = _plugin_backend(name, arg or None, options)
    if cache:
        from .cache import CachedLLM

        root = resources.settings.cache_dir if resources is not None else Settings.from_env().cache_dir
        path = cache if isinstance(cache, Path) else root / "responses.sqlite"
        llm = CachedLLM(llm, path)
    return llm
