"""Where sqlweave keeps data that lasts, and the other settings read from the environment, in one frozen object.

:class:`Settings` is read once (``Settings.from_env()``) by whoever owns the work: an
:class:`~sqlweave.engine.Engine`'s :class:`~sqlweave.resources.Resources`, the evaluation runner, a door. The cache
directory is ``$SQLWEAVE_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/sqlweave``, else ``~/.cache/sqlweave``.

>>> s = Settings.from_env({"SQLWEAVE_CACHE_DIR": "/tmp/sqlweave-doc"})
>>> str(s.cache_dir), str(s.model_dir), s.examples
('/tmp/sqlweave-doc', '/tmp/sqlweave-doc/models', None)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


@dataclass(frozen=True)
class Settings:
    """Everything sqlweave reads from the environment.

    Attributes:
        cache_dir: data that lasts (weights, response cache, value indexes, conversations, user examples).
        model_dir: assembled model weights (``$SQLWEAVE_MODEL_DIR``, else ``<cache_dir>/models``).
        examples: the default example pool, a Spider-format train.json (``$SQLWEAVE_EXAMPLES``; when unset,
            pipelines use the pool sqlweave ships).
        embed_model: a sentence-transformers model folder to use instead of the bundled MiniLM
            (``$SQLWEAVE_EMBED_MODEL``).
        prompt_states: keep the embedded model's evaluated prompt prefixes on disk, so a new process answers a
            database it asked before without evaluating its schema again (``$SQLWEAVE_PROMPT_STATES=0`` turns
            it off).
        schema_cache: keep each schema read on disk, so a new process asking a database it read before, unchanged
            since, does not read it again (:mod:`sqlweave.db.schema_cache`; ``$SQLWEAVE_SCHEMA_CACHE=0`` turns it
            off).
        user_examples: show the question/SQL pairs the user added (``sqlweave examples add``, feedback) beside
            the example pool's; an evaluation turns this off, so a benchmark's prompts never hold pairs a user wrote.
    """

    cache_dir: Path
    model_dir: Path
    examples: Path | None = None
    embed_model: Path | None = None
    prompt_states: bool = True
    user_examples: bool = True
    schema_cache: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """The settings the environment gives (``environ`` defaults to ``os.environ``)."""
        env = os.environ if environ is None else environ

        def path(name: str) -> Path | None:
            value = env.get(name)
            return Path(value).expanduser() if value else None

        cache = path("SQLWEAVE_CACHE_DIR")
        if cache is None:
            xdg = path("XDG_CACHE_HOME")
            cache = (xdg if xdg is not None else Path.home() / ".cache") / "sqlweave"

        def on(name: str) -> bool:
            return env.get(name, "1").strip().lower() not in ("0", "off", "no", "false")

        return cls(cache_dir=cache, model_dir=path("SQLWEAVE_MODEL_DIR") or cache / "models",
                   examples=path("SQLWEAVE_EXAMPLES"), embed_model=path("SQLWEAVE_EMBED_MODEL"),
                   prompt_states=on("SQLWEAVE_PROMPT_STATES"), schema_cache=on("SQLWEAVE_SCHEMA_CACHE"))


def cache_dir() -> Path:
    """The cache directory the environment names now (created on first use by whoever writes into it). Code that
    serves an engine reads ``resources.settings.cache_dir`` instead."""
    return Settings.from_env().cache_dir
