"""What other packages offer sqlweave through entry points: stages (group ``sqlweave.stages``) and model backends
(group ``sqlweave.backends``), each looked up by name only when the name is not built in.

A package declares them in its ``pyproject.toml`` (docs/howto/write-a-plugin.md)::

    [project.entry-points."sqlweave.stages"]
    shout = "sqlweave_shout:Shout"

    [project.entry-points."sqlweave.backends"]
    echo = "sqlweave_shout:EchoLLM"

so that ``-p zero-shot+shout`` and ``--model echo:...`` find them. A plugin that fails to load is a
:class:`~sqlweave.errors.PluginError` naming it, never a traceback.

>>> plugin(STAGES, "no-such-stage") is None
True
"""

from __future__ import annotations

from importlib.metadata import entry_points

from .errors import PluginError

#: The entry-point group of stages a preset can be extended with (``PRESET+NAME``).
STAGES = "sqlweave.stages"
#: The entry-point group of model backends (``--model NAME:ARG``).
BACKENDS = "sqlweave.backends"


def plugin_names(group: str) -> list[str]:
    """The names installed packages offer in ``group``, sorted.

    >>> isinstance(plugin_names(BACKENDS), list)
    True
    """
    return sorted({ep.name for ep in entry_points(group=group)})


def plugin(group: str, name: str) -> object | None:
    """The object the installed package offering ``name`` in ``group`` points to, loaded now; ``None`` when no
    package offers it. Two packages offering one name, or a module that fails to import, is a
    :class:`~sqlweave.errors.PluginError`."""
    found = sorted(entry_points(group=group, name=name), key=lambda ep: ep.value)
    if not found:
        return None
    where = {ep.value for ep in found}
    if len(where) > 1:
        raise PluginError(f"{len(where)} installed packages offer {name!r} in {group}: {', '.join(sorted(where))}",
                          hint="Uninstall all but one of them.", plugin=name, group=group)
    try:
        return found[0].load()
    except Exception as err:  # whatever a third party's import raises, the user sees which plugin and what to do
        raise PluginError(f"the plugin {name!r} ({found[0].value}, {group}) failed to load: "
                          f"{type(err).__name__}: {err}",
                          hint=f"Reinstall or fix the package that provides {found[0].value.split(':')[0]!r}, "
                               "or uninstall it.", plugin=name, group=group) from err
