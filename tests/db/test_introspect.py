import json
import sqlite3
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.db import render_compact, render_create_table, render_schema
from sqlweave.db.demo import build_demo_database, demo_database_path
from sqlweave.errors import SchemaError
from tests.conftest import keyless_shop
from tests.extras import need_extra


def test_sqlite_schema(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    assert set(s.table_names) == {"stadium", "singer", "concert", "singer_in_concert"}
    singer = s.table("SINGER")
    assert singer.primary_key == ("Singer_ID",)
    assert singer.row_count == 6
    assert len(singer.sample_rows) == 3
    age = singer.column("age")
    assert age.stats.minimum == 25 and age.stats.maximum == 52
    assert age.stats.nulls == 0 and age.stats.distinct == 6
    assert len(singer.column("Name").samples) == 3
    fks = {str(fk) for fk in s.foreign_keys}
    assert "singer_in_concert.Singer_ID -> singer.Singer_ID" in fks
    assert "concert.Stadium_ID -> stadium.Stadium_ID" in fks


def test_unknown_table_and_column_hint(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    with pytest.raises(SchemaError, match="no table 'singers'") as info:
        s.table("singers")
    assert "singer" in info.value.hint
    with pytest.raises(SchemaError, match="no column"):
        s.table("singer").column("nme")


def test_duckdb_schema_through_the_same_code(tmp_path: Path) -> None:
    need_extra("duckdb")
    import duckdb
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name VARCHAR, city VARCHAR)")
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id), total DOUBLE)")
    con.execute("INSERT INTO customer VALUES (1, 'Ana', 'Lyon'), (2, 'Ben', 'Oslo')")
    con.execute("INSERT INTO orders VALUES (10, 1, 9.5), (11, 1, 20.0), (12, 2, 3.25)")
    con.close()
    db = Database.open(path)
    assert db.dialect == "duckdb"
    s = db.schema()
    assert set(s.table_names) == {"customer", "orders"}
    assert s.table("orders").column("total").stats.maximum == 20.0
    assert s.table("customer").primary_key == ("id",)
    assert [str(fk) for fk in s.foreign_keys] == ["orders.customer_id -> customer.id"]
    assert db.execute("SELECT count(*) FROM orders").rows == ((3,),)
    from sqlweave.errors import RefusedStatementError

    with pytest.raises(RefusedStatementError):
        db.execute("DELETE FROM orders")
    db.close()
    assert duckdb.connect(str(path), read_only=True).execute("SELECT count(*) FROM orders").fetchone()[0] == 3


def test_database_without_tables(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "empty.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (a)").connection.execute("DROP TABLE t")
    with pytest.raises(SchemaError, match="no tables"):
        Database.open(path).schema()


def test_descriptions_side_file(singer_db: Path, tmp_path: Path) -> None:
    side = tmp_path / "desc.json"
    side.write_text(json.dumps({"singer": {"description": "People who sing", "columns": {"Age": "age in years"}}}))
    s = Database.open(singer_db, descriptions=side).schema()
    assert s.table("singer").description == "People who sing"
    assert s.table("singer").column("age").description == "age in years"
    text = render_create_table(s)
    assert "-- People who sing" in text and "-- age in years" in text


def test_defog_descriptions(singer_db: Path, tmp_path: Path) -> None:
    side = tmp_path / "defog.json"
    side.write_text(json.dumps({"table_metadata": {"singer": [{"column_name": "Name", "column_description": "full name"}]}}))
    assert Database.open(singer_db, descriptions=side).schema().table("singer").column("name").description == "full name"


def test_bird_description_folder(singer_db: Path, tmp_path: Path) -> None:
    folder = tmp_path / "database_description"
    folder.mkdir()
    (folder / "singer.csv").write_text(
        "original_column_name,column_name,column_description,data_format,value_description\n"
        "Country,country,country of birth,text,ISO name\n"
    )
    col = Database.open(singer_db, descriptions=folder).schema().table("singer").column("country")
    assert col.description == "country of birth; ISO name"


def test_malformed_description_file(singer_db: Path, tmp_path: Path) -> None:
    side = tmp_path / "bad.json"
    side.write_text("{not json")
    with pytest.raises(SchemaError, match="cannot read descriptions"):
        Database.open(singer_db, descriptions=side).schema()


def test_render_styles_and_token_counts(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    full = render_schema(s, "create_table", count=lambda t: (len(t.split()), True))
    compact = render_schema(s, "compact", count=lambda t: (len(t.split()), True))
    assert full.text.count("CREATE TABLE") == 4
    assert "FOREIGN KEY (Singer_ID) REFERENCES singer(Singer_ID)" in full.text
    assert "3 example rows" in full.text
    assert compact.text.splitlines()[0].startswith("concert(") or "singer(" in compact.text
    assert "singer_in_concert.Singer_ID = singer.Singer_ID" in compact.text
    assert compact.tokens < full.tokens
    assert render_compact(s) == compact.text


def test_mschema_shows_each_column_with_its_type_key_and_example_values(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "m.sqlite"
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE team (id INTEGER PRIMARY KEY, name TEXT)")
    c.execute('CREATE TABLE "player list" (pid INT, team_id INT REFERENCES team(id), bio TEXT, note TEXT)')
    c.executemany("INSERT INTO team VALUES (?, ?)", [(1, "Reds"), (2, "Blues"), (3, "Reds B")])
    c.executemany('INSERT INTO "player list" VALUES (?, ?, ?, ?)',
                  [(7, 1, "x" * 80, None), (8, 1, "short", None), (9, 2, "short", None)])
    c.commit()
    text = render_schema(Database.open(path).schema(), "mschema", count=lambda t: (1, True)).text
    assert "# Table: team\n[\n(id:INTEGER, Primary Key, Examples: [1, 2, 3]),\n(name:TEXT, Examples: [Reds, Blues, Reds B])\n]" in text
    bio = next(line for line in text.splitlines() if line.startswith("(bio"))
    assert bio == f"(bio:TEXT, Examples: [{'x' * 37}..., short]),"  # long values cut, repeats shown once
    assert "(note:TEXT)" in text  # a column of NULLs has no examples
    assert '# Table: "player list"' in text and '"player list".team_id=team.id' in text.split("【Foreign keys】")[1]


def test_quoted_identifiers_in_rendering(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "q.sqlite"
    c = sqlite3.connect(path)
    c.execute('CREATE TABLE "order items" ("item name" TEXT, qty INT)')
    c.execute("INSERT INTO \"order items\" VALUES ('pen', 2)")
    c.commit()
    s = Database.open(path).schema()
    assert '"order items"("item name" TEXT' in render_compact(s)
    assert 'CREATE TABLE "order items"' in render_create_table(s)


def test_demo_database_is_deterministic(tmp_path: Path) -> None:
    a = build_demo_database(tmp_path / "a.sqlite")
    b = build_demo_database(tmp_path / "b.sqlite")
    import sqlite3

    dump = lambda p: list(sqlite3.connect(p).iterdump())  # noqa: E731
    assert dump(a) == dump(b)
    s = Database.open(demo_database_path()).schema()
    assert len(s.tables) == 6 and len(s.foreign_keys) >= 5
    assert sum(t.row_count or 0 for t in s.tables) >= 300


def test_a_foreign_key_declared_twice_is_read_once_and_quietly(tmp_path: Path) -> None:
    """SQLAlchemy would warn on stderr, quoting the table's names; the key is read once."""
    import subprocess
    import sys

    path = tmp_path / "twice.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE "Owners" (owner_id INTEGER PRIMARY KEY);
        CREATE TABLE "Dogs" (dog_id INTEGER PRIMARY KEY, owner_id INTEGER,
            FOREIGN KEY (owner_id) REFERENCES "Owners"(owner_id),
            FOREIGN KEY (owner_id) REFERENCES "Owners"(owner_id));
    """)
    conn.close()
    code = ("import sys; from sqlweave.database import Database; "
            "print(len(Database.open(sys.argv[1]).schema().foreign_keys))")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert "Warning" not in done.stderr and "Owners" not in done.stderr


def test_keys_are_read_from_the_data_of_a_database_that_declares_none(tmp_path: Path) -> None:
    path = keyless_shop(tmp_path / "shop.sqlite")
    s = Database.open(path).schema()
    assert s.keys_from_data
    assert s.table("customers").primary_key == ("customer_id",) and s.table("orders").primary_key == ("id",)
    # notes.customer_id holds 9, which no customer has: no key; a key of two columns stays as declared
    assert sorted(str(fk) for fk in s.foreign_keys) == ["order_lines.order_id -> orders.id",
                                                        "orders.customer_id -> customers.customer_id"]
    assert s.table("order_lines").primary_key == ("order_id", "line_no")
    assert "FOREIGN KEY (customer_id) REFERENCES customers(customer_id)" in render_schema(s, "create_table").text
    # the file is not changed: it still declares nothing
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA foreign_key_list(orders)").fetchall() == []
    conn.close()
    # asked not to, or given a database that declares its keys, nothing is read from the data
    kept = Database.open(path, keys_from_data=False).schema()
    assert not kept.keys_from_data and kept.foreign_keys == () and kept.table("orders").primary_key == ()
    declared = Database.open(demo_database_path()).schema()
    assert not declared.keys_from_data and declared.foreign_keys
    # a large table (orders has 4 rows) is read on a sample of its rows (SQLite: the first ones): its foreign keys
    # are found, no primary key is looked for in it (so nothing points at it), whatever the machine's speed
    from sqlweave.db.infer_keys import infer_database_keys

    sampled = infer_database_keys(Database.open(path), kept.tables, max_rows=3, sample_rows=2)
    assert sampled.primary == {"customers": "customer_id", "notes": "note"}
    assert sampled.foreign == [("orders", "customer_id", "customers", "customer_id")]


def test_keys_from_the_data_respect_the_knowledge_file_and_the_access_policy(tmp_path: Path) -> None:
    from sqlweave.policy import AccessPolicy

    path = keyless_shop(tmp_path / "shop.sqlite")
    knowledge = tmp_path / "shop.yaml"
    knowledge.write_text("joins:\n  - notes.customer_id = customers.customer_id\n")
    s = Database.open(path, descriptions=knowledge).schema()
    # the join written down holds though a value breaks it, and the keys the data shows are added
    assert sorted(str(fk) for fk in s.foreign_keys) == ["notes.customer_id -> customers.customer_id",
                                                        "order_lines.order_id -> orders.id",
                                                        "orders.customer_id -> customers.customer_id"]
    assert s.keys_from_data and s.table("customers").primary_key == ("customer_id",)
    # a hidden column is neither read nor keyed; a filtered table's rows are not read for keys
    hidden = Database.open(path, policy=AccessPolicy.from_mapping({"hidden_columns": ["orders.customer_id"]}))
    assert [str(fk) for fk in hidden.schema().foreign_keys] == ["order_lines.order_id -> orders.id"]
    filtered = Database.open(path, policy=AccessPolicy.from_mapping({"row_filters": {"orders": "total > 1"}}))
    assert filtered.schema().foreign_keys == () and filtered.schema().table("orders").primary_key == ()


def test_columns_declared_without_a_type_read_as_untyped_and_keyed(tmp_path: Path) -> None:
    # CREATE TABLE ... AS SELECT gives SQLite columns no declared type (SQLAlchemy reflects them as "NULL")
    path = tmp_path / "ctas.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE src (a INTEGER, b TEXT); INSERT INTO src VALUES (1, 'x'), (2, 'y');"
                       "CREATE TABLE stores AS SELECT a + 0 AS store_id, b AS name FROM src;"
                       "CREATE TABLE visits AS SELECT a + 10 AS id, a + 0 AS store_id FROM src;")
    conn.close()
    s = Database.open(path).schema()
    assert [c.type for c in s.table("visits").columns] == ["", ""]
    assert "visits.store_id -> stores.store_id" in [str(fk) for fk in s.foreign_keys]
