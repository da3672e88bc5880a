"""sqlweave: ask a relational database a question in plain language; get safe SQL, its result and a trace.

>>> import sqlweave
>>> sqlweave.__version__
'0.1.0'
"""

from ._version import __version__
from .database import Database
from .db import QueryResult, Schema
from .engine import Engine, connect
from .errors import SqlweaveError
from .pipeline import Answer, Pipeline, Stage, State
from .presets import PRESETS, build_pipeline

__all__ = [
    "Answer", "Database", "Engine", "PRESETS", "Pipeline", "QueryResult", "Schema", "SqlweaveError", "Stage",
    "State", "__version__", "build_pipeline", "connect",
]
