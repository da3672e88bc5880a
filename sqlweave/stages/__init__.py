"""Pipeline stages, one per file. Each is a small callable over :class:`sqlweave.pipeline.State`."""

from .check_question import CheckQuestion
from .execute import ExecuteSQL
from .extract import ExtractSQL
from .generate import GenerateSQL
from .generate_evidence import GenerateEvidence
from .render_schema import RenderSchema

__all__ = ["CheckQuestion", "ExecuteSQL", "ExtractSQL", "GenerateEvidence", "GenerateSQL", "RenderSchema"]
