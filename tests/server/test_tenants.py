"""API keys of their own: each tenant's key binds the access policy's row-filter parameters for every query its
requests run, and keeps its conversations to itself (another key gets 404, the list shows only its own)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.extras import need_extra

need_extra("server")

from sqlweave.catalog import Catalog, DatabaseEntry  # noqa: E402
from sqlweave.errors import ConfigurationError  # noqa: E402
from sqlweave.server import ServerSettings  # noqa: E402
from sqlweave.server.settings import Tenant, load_tenants  # noqa: E402

from .test_api import assert_error, catalog_with, make  # noqa: E402,F401 - the app fixture

ACME = Tenant("acme", "acme-key-0123456789abcdef", {"country": "France"})
GLOBEX = Tenant("globex", "globex-key-0123456789abcdef", {"country": "Japan"})
OPERATOR = "operator-key-0123456789"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def tenant_catalog(tmp_path: Path) -> tuple[Catalog, Path]:
    policy = tmp_path / "policy.yaml"
    policy.write_text("row_filters:\n  customers: \"country = :country\"\n", encoding="utf-8")
    base = catalog_with(tmp_path)
    shop = base.entries["shop"]
    return Catalog({"shop": DatabaseEntry("shop", shop.target, policy=(str(policy),))}), Path(shop.target)


def count_in(path: Path, country: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM customers WHERE country = ?", (country,)).fetchone()[0]


def test_each_key_sees_only_its_rows(make, tenant_catalog) -> None:
    catalog, path = tenant_catalog
    client, _, _ = make(catalog=catalog, api_key=OPERATOR, tenants=(ACME, GLOBEX))
    sql = {"database": "shop", "sql": "SELECT COUNT(*) FROM customers"}
    france, japan = count_in(path, "France"), count_in(path, "Japan")
    assert france != japan
    assert client.post("/api/sql", json=sql, headers=auth(ACME.key)).json()["rows"] == [[france]]
    assert client.post("/api/sql", json=sql, headers=auth(GLOBEX.key)).json()["rows"] == [[japan]]
    asked = client.post("/api/ask", json={"database": "shop", "question": "How many customers are there?",
                                          "preset": "zero-shot"}, headers=auth(GLOBEX.key))
    assert asked.status_code == 200 and asked.json()["rows"] == [[japan]]
    csv = client.post("/api/sql/csv", json=sql, headers=auth(ACME.key))
    assert csv.status_code == 200 and csv.text.splitlines()[1] == str(france)
    # the server's own key binds nothing: a row-filtered table needs the parameter
    assert_error(client.post("/api/sql", json=sql, headers=auth(OPERATOR)), 400, "policy")
    assert_error(client.post("/api/sql", json=sql, headers=auth("not-a-key-0123456789")), 401, "unauthorized")
    assert_error(client.post("/api/sql", json=sql), 401, "unauthorized")
    schema = client.get("/api/databases/shop/schema", headers=auth(ACME.key)).json()
    assert all(t["row_count"] is None for t in schema["tables"])  # no whole-table counts for a tenant


def test_conversations_are_the_tenants_own(make, tenant_catalog) -> None:
    catalog, _ = tenant_catalog
    client, _, _ = make(catalog=catalog, api_key=OPERATOR, tenants=(ACME, GLOBEX))
    first = client.post("/api/ask", json={"database": "shop", "question": "How many customers are there?",
                                          "preset": "zero-shot"}, headers=auth(ACME.key)).json()
    cid = first["conversation_id"]
    assert client.get(f"/api/conversations/{cid}", headers=auth(ACME.key)).status_code == 200
    assert_error(client.get(f"/api/conversations/{cid}", headers=auth(GLOBEX.key)), 404, "conversation_not_found")
    follow = client.post("/api/ask", json={"database": "shop", "question": "How many of them are there?",
                                           "conversation_id": cid, "preset": "zero-shot"}, headers=auth(GLOBEX.key))
    assert_error(follow, 404, "conversation_not_found")
    assert client.get("/api/conversations", headers=auth(GLOBEX.key)).json()["conversations"] == []
    assert [c["id"] for c in client.get("/api/conversations", headers=auth(ACME.key)).json()["conversations"]] == [cid]
    assert_error(client.delete(f"/api/conversations/{cid}", headers=auth(GLOBEX.key)), 404, "conversation_not_found")
    assert [c["id"] for c in client.get("/api/conversations", headers=auth(OPERATOR)).json()["conversations"]] == [cid]
    assert client.delete(f"/api/conversations/{cid}", headers=auth(ACME.key)).status_code == 204


def test_a_tenants_feedback_never_reaches_the_shared_example_pool(make, tenant_catalog) -> None:
    from sqlweave.feedback import PendingExamples
    from sqlweave.retrieval.pool import user_examples

    catalog, _ = tenant_catalog
    client, _, _ = make(catalog=catalog, tenants=(ACME, GLOBEX), feedback_examples="pool")
    a = client.post("/api/ask", json={"database": "shop", "question": "How many customers are there?"},
                    headers=auth(ACME.key)).json()
    body = {"answer_id": a["answer_id"], "database": "shop", "question": a["question"], "sql": a["sql"],
            "verdict": "right"}
    other = client.post("/api/feedback", json=body, headers=auth(GLOBEX.key))  # another tenant's answer
    assert other.status_code == 422 and other.json()["error"]["code"] == "unknown_answer"
    r = client.post("/api/feedback", json=body, headers=auth(ACME.key))
    assert r.status_code == 200 and r.json()["added"] is False and r.json()["pending"] is True
    assert user_examples() == []  # shared with every tenant: only the operator lets it in
    assert [(p.owner, p.question) for p in PendingExamples.of().waiting()] == [("acme", a["question"])]


def test_tenants_file_and_its_mistakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLOBEX_KEY", GLOBEX.key)
    path = tmp_path / "tenants.yaml"
    path.write_text(f"- name: acme\n  key: {ACME.key}\n  params: {{country: France}}\n"
                    "- name: globex\n  key_env: GLOBEX_KEY\n  params: {country: Japan}\n", encoding="utf-8")
    assert load_tenants(path) == (ACME, GLOBEX)
    assert "key" not in repr(load_tenants(path)[0]).replace("Tenant", "")  # keys never printed
    for text, message in [("[]", "no list"), ("- name: x\n  key_env: NOT_SET_ANYWHERE\n", "not set"),
                          ("- key: abc\n", "no name"), (": [", "cannot read")]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigurationError, match=message):
            load_tenants(path)
    with pytest.raises(ConfigurationError, match="too short"):
        ServerSettings(Catalog.demo(), api_key="", tenants=(Tenant("short", "abc"),))
    with pytest.raises(ConfigurationError, match="share"):
        ServerSettings(Catalog.demo(), api_key="", tenants=(ACME, Tenant("other", ACME.key)))
    # tenants alone are keys: the server may listen beyond loopback with them
    ServerSettings(Catalog.demo(), api_key="", host="0.0.0.0", tenants=(ACME,)).check_exposure()
