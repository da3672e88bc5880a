"""Regenerate the two exemplars of sqlweave/prompts/agent.txt with real tool observations.

The thoughts and actions are written by hand (on Spider *training* databases, never dev ones); every
observation is produced by running the action with sqlweave's own tools, so the exemplars show exactly
what the agent will see. Usage: python scripts/make_agent_exemplars.py [SPIDER_DATABASE_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

from sqlweave.agent.actions import parse_action
from sqlweave.agent.tools import Toolkit
from sqlweave.database import Database

EXEMPLARS = [
    ("scientist_1", "Which projects is the scientist Michael Rogers assigned to? Give their names.", [
        ("The question names a scientist, Michael Rogers, and asks for project names. I look for where the "
         "scientist's name is stored.", 'SearchValue("Michael Rogers")'),
        ("Scientists.Name holds the name. Now I find the column with project names.",
         'SearchColumn("name of a project")'),
        ("Projects.Name holds project names. I need the join path from Scientists.Name to Projects.Name.",
         'FindShortestPath("Scientists.Name", "Projects.Name")'),
        ("I can now write the query with this join and filter on the scientist's name.",
         "ExecuteSQL(\"SELECT Projects.Name FROM Scientists JOIN AssignedTo ON Scientists.SSN = AssignedTo.Scientist "
         "JOIN Projects ON AssignedTo.Project = Projects.Code WHERE Scientists.Name = 'Michael Rogers'\")"),
        ("The query answers the question.", "Done"),
    ]),
    ("dorm_1", "How many students live in Smith Hall?", [
        ("Smith Hall is probably a dorm name. I check where this value is stored.", 'SearchValue("Smith Hall")'),
        ("Dorm.dorm_name = 'Smith Hall'. Students are in the Student table; I need the path from the dorm name to "
         "the student id.", 'FindShortestPath("Dorm.dorm_name", "Student.StuID")'),
        ("I count the students on this path.",
         "ExecuteSQL(\"SELECT count(*) FROM Dorm JOIN Lives_in ON Dorm.dormid = Lives_in.dormid "
         "JOIN Student ON Lives_in.stuid = Student.StuID WHERE Dorm.name = 'Smith Hall'\")"),
        ("The column is dorm_name, not name. I fix the query.",
         "ExecuteSQL(\"SELECT count(*) FROM Dorm JOIN Lives_in ON Dorm.dormid = Lives_in.dormid "
         "JOIN Student ON Lives_in.stuid = Student.StuID WHERE Dorm.dorm_name = 'Smith Hall'\")"),
        ("The query answers the question.", "Done"),
    ]),
]


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/spider/database")
    blocks = []
    for db_id, question, steps in EXEMPLARS:
        kit = Toolkit(Database.open(root / db_id / f"{db_id}.sqlite"))
        lines = [f"Example question (database {db_id}): {question}"]
        for thought, action in steps:
            lines.append(f"Thought: {thought}\nAction: {action}")
            parsed = parse_action(f"Action: {action}")
            if parsed.name != "Done":
                observation, _ = kit.call(parsed.name, parsed.args, parsed.kwargs)
                lines.append(f"Observation: {observation}")
        blocks.append("\n".join(lines))
    print("\n\n".join(blocks))


if __name__ == "__main__":
    main()
