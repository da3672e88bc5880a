"""What each stage is called where a user waits for it: the page's progress, the terminal's spinner.

Stage names are for code and traces (``generate``, ``vote``); people read what the stage does.

>>> stage_label("generate"), stage_label("vote"), stage_label("my_own_stage")
('Writing SQL', 'Trying other readings', 'My own stage')
"""

from __future__ import annotations

#: The words for each stage the package ships (a stage of one's own is named from its ``name``).
STAGE_LABELS: dict[str, str] = {
    "check_question": "Reading the question",
    "rewrite_question": "Restating your follow-up",
    "interpret_time": "Working out the dates",
    "simplify": "Simplifying the question",
    "approximate": "Sketching a first query",
    "prune_schema": "Choosing the tables",
    "name_keys": "Naming the keys",
    "render_schema": "Reading the schema",
    "link_schema": "Matching your words to columns",
    "select_values": "Finding the values you named",
    "select_examples": "Finding similar examples",
    "generate_evidence": "Noting what the question needs",
    "generate": "Writing SQL",
    "ensemble": "Writing SQL several ways",
    "extract_sql": "Reading the SQL",
    "repair": "Checking names against the schema",
    "rewrite": "Adapting the SQL to the database",
    "execute": "Running the query",
    "correct": "Correcting an error",
    "dac": "Checking the answer part by part",
    "revise": "Checking the answer",
    "vote": "Trying other readings",
    "readings": "Looking for other readings",
    "agent": "Exploring the database",
}


def stage_label(name: str) -> str:
    """The words a user reads for the stage ``name``."""
    return STAGE_LABELS.get(name) or name.replace("_", " ").strip().capitalize() or "Working"


__all__ = ["STAGE_LABELS", "stage_label"]
