"""Fan-out: sums and averages that a join counts more than once are found, on the demo shop's real data."""

from __future__ import annotations

import pytest

from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.sql.fanout import fan_outs

JOINED = "FROM products AS p JOIN order_items AS i ON i.product_id = p.product_id"


@pytest.fixture(scope="module")
def db():
    database = Database.open(demo_database_path())
    yield database
    database.close()


@pytest.mark.parametrize("sql", [
    f"SELECT SUM(p.price) {JOINED}",  # each product's price once per order line
    f"SELECT AVG(p.price) {JOINED} WHERE i.quantity > 1",
    f"SELECT p.category_id, ROUND(SUM(p.stock * 1.0), 1) {JOINED} GROUP BY p.category_id",
    "SELECT SUM(p.price) FROM order_items AS i JOIN products AS p ON p.product_id = i.product_id",  # either order
    # along a chain: each customer once per order
    "SELECT c.country, AVG(julianday(c.signup_date)) FROM customers AS c JOIN orders AS o "
    "ON o.customer_id = c.customer_id GROUP BY c.country",
    # a self-join: each manager once per report
    "SELECT AVG(m.employee_id) FROM employees AS e JOIN employees AS m ON e.manager_id = m.employee_id",
])
def test_a_sum_a_join_repeats_is_found(db, sql: str) -> None:
    cautions = fan_outs(sql, db.schema())
    assert len(cautions) == 1 and "(fan-out)" in cautions[0]
    assert "IN (SELECT" in cautions[0]  # it says how to count each row once


def test_the_caution_is_real_on_the_data(db) -> None:
    fanned = db.execute(f"SELECT SUM(p.price) {JOINED}").rows[0][0]
    once = db.execute("SELECT SUM(price) FROM products WHERE product_id IN (SELECT product_id FROM order_items)")
    assert fanned > once.rows[0][0]  # the join counted prices more than once
    assert fan_outs(f"SELECT SUM(p.price) {JOINED}", db.schema())[0].startswith(
        "SUM(p.price) counts each products row once per order_items row joined to it")


@pytest.mark.parametrize("sql", [
    f"SELECT SUM(i.quantity * i.unit_price) {JOINED}",  # the many side's own columns
    f"SELECT SUM(DISTINCT p.price) {JOINED}",
    f"SELECT MAX(p.price), MIN(p.price), COUNT(*), COUNT(p.product_id) {JOINED}",  # not sums
    f"SELECT i.order_id, i.product_id, SUM(p.price) {JOINED} GROUP BY i.order_id, i.product_id",  # one line a group
    "SELECT SUM(price) FROM products WHERE product_id IN (SELECT product_id FROM order_items)",
    "SELECT SUM(p.price) FROM products AS p JOIN categories AS c ON p.category_id = c.category_id",  # many to one
    "SELECT SUM(p.price) FROM products AS p JOIN order_items AS i ON i.quantity = p.stock",  # no foreign key
    f"SELECT SUM(price) {JOINED.replace('AS i', 'AS i JOIN products AS q ON q.product_id = i.product_id')}",
    "SELECT SUM(x.price) FROM (SELECT p.price FROM products AS p) AS x",
    "this is not SQL",
])
def test_other_queries_raise_no_caution(db, sql: str) -> None:
    assert fan_outs(sql, db.schema()) == []
