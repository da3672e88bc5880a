"""The one policy a database opens with: what was given (objects, mappings, files) merged with the knowledge's
``policy:`` section, here and nowhere else (:meth:`sqlweave.database.Database.open` calls it, whatever the door).

>>> resolve_policy({"hidden_tables": ["secrets"]}).hidden_tables
frozenset({'secrets'})
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

from ..errors import PolicyError
from . import AccessPolicy

if TYPE_CHECKING:
    from ..knowledge import Knowledge

#: What a database may be opened with as its access policy: a policy, its mapping, its YAML file, several of them.
PolicySpec = Union["AccessPolicy", Mapping[str, Any], str, Path, Sequence[Union["AccessPolicy", str, Path]], None]


def resolve_policy(policy: PolicySpec, descriptions: str | Path | None = None,
                   knowledge: "Knowledge | None" = None) -> AccessPolicy | None:
    """The one policy a database opens with, merged here and nowhere else: ``policy`` (an object, a mapping, a
    file, or several: each later one merged with those before it) merged with the ``policy:`` section of the
    knowledge (``knowledge``'s own, or that of ``descriptions`` when it is a YAML knowledge file), so a policy is
    never silently dropped.

    >>> sorted(resolve_policy([AccessPolicy.from_yaml("hidden_tables: [a]"), {"hidden_tables": ["b"]}]).hidden_tables)
    ['a', 'b']
    """
    found: AccessPolicy | None = None
    given: Sequence[Any] = policy if isinstance(policy, (list, tuple)) else (policy,)
    for one in given:
        if one is None:
            continue
        one = one if isinstance(one, AccessPolicy) else \
            AccessPolicy.from_mapping(one) if isinstance(one, Mapping) else AccessPolicy.load(one)
        found = one.merged(found)
    section = knowledge.policy if knowledge is not None else _section_of(descriptions)
    return section.merged(found) if section is not None else found


def _section_of(descriptions: str | Path | None) -> AccessPolicy | None:
    """The ``policy:`` section of a YAML knowledge file (the rest of the file is the knowledge module's)."""
    if descriptions is None or Path(descriptions).suffix.lower() not in (".yaml", ".yml") \
            or not Path(descriptions).is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(Path(descriptions).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise PolicyError(f"cannot read the policy section of {str(descriptions)!r}: {err}") from None
    if isinstance(data, dict) and data.get("policy") is not None:
        return AccessPolicy.from_mapping(data["policy"], source=descriptions)
    return None
