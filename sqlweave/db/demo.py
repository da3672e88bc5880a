"""The bundled demo database: a small shop with customers, products, orders and staff.

It is generated deterministically (same rows on every machine) into the cache
directory on first use, written to a temporary file and renamed, so a crash
never leaves half a database behind.

>>> path = demo_database_path()
>>> path.name
'shop.sqlite'
"""

from __future__ import annotations

import os
import random
import sqlite3
import tempfile
from datetime import date, timedelta
from pathlib import Path

from ..config import cache_dir
from ..errors import ConfigurationError
from ..files import private_folder

DEMO_VERSION = 1

DEMO_QUESTIONS = (
    "How many customers are there?",
    "Which five products have sold the most units?",
    "What is the total revenue per product category?",
    "Which customers from Canada placed more than two orders?",
    "Who is the manager of each employee?",
)

_SCHEMA = """
CREATE TABLE categories (
    category_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT
);
CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories(category_id),
    price REAL NOT NULL,
    stock INTEGER NOT NULL
);
CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT,
    city TEXT,
    country TEXT,
    signup_date TEXT
);
CREATE TABLE employees (
    employee_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    title TEXT,
    hire_date TEXT,
    manager_id INTEGER REFERENCES employees(employee_id)
);
CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
    employee_id INTEGER REFERENCES employees(employee_id),
    order_date TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders(order_id),
    product_id INTEGER NOT NULL REFERENCES products(product_id),
    quantity INTEGER NOT NULL,
    unit_price REAL NOT NULL,
    PRIMARY KEY (order_id, product_id)
);
"""

_CATEGORIES = [
    ("Books", "Printed and electronic books"),
    ("Music", "Vinyl records and CDs"),
    ("Games", "Board games and puzzles"),
    ("Stationery", "Notebooks, pens and paper"),
    ("Kitchen", "Cookware and utensils"),
    ("Garden", "Tools and seeds"),
    ("Toys", "Toys for children"),
    ("Outdoor", "Camping and hiking gear"),
]
_PRODUCT_WORDS = {
    "Books": ["Atlas", "Cookbook", "Novel", "Poetry Collection", "Field Guide"],
    "Music": ["Jazz LP", "Classical CD", "Folk LP", "Rock CD", "Piano Sonatas"],
    "Games": ["Chess Set", "Jigsaw 1000", "Card Game", "Strategy Game", "Trivia Game"],
    "Stationery": ["Notebook", "Fountain Pen", "Sketchbook", "Pencil Set", "Planner"],
    "Kitchen": ["Cast Iron Pan", "Chef Knife", "Teapot", "Cutting Board", "Mixing Bowl"],
    "Garden": ["Trowel", "Watering Can", "Seed Kit", "Pruning Shears", "Gloves"],
    "Toys": ["Wooden Train", "Kite", "Puppet", "Building Blocks", "Teddy Bear"],
    "Outdoor": ["Tent", "Sleeping Bag", "Headlamp", "Water Bottle", "Backpack"],
}
_FIRST = ["Ana", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Keiko", "Liam",
          "Maya", "Noah", "Olga", "Pablo", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wen", "Yara"]
_LAST = ["Silva", "Martin", "Dubois", "Novak", "Rossi", "Khan", "Smith", "Garcia", "Muller", "Tanaka",
         "Okafor", "Nguyen", "Larsen", "Kowalski", "Cohen", "Haddad"]
_PLACES = [("Toronto", "Canada"), ("Montreal", "Canada"), ("Vancouver", "Canada"), ("Lyon", "France"),
           ("Paris", "France"), ("Berlin", "Germany"), ("Munich", "Germany"), ("Osaka", "Japan"),
           ("Lisbon", "Portugal"), ("Boston", "USA"), ("Chicago", "USA"), ("Austin", "USA")]
_STATUSES = ["delivered"] * 6 + ["shipped"] * 2 + ["cancelled", "pending"]


def demo_database_path() -> Path:
    """Path of the demo database, built on first use."""
    path = cache_dir() / "demo" / f"shop-v{DEMO_VERSION}" / "shop.sqlite"
    if not path.exists():
        try:
            build_demo_database(path)
        except OSError as err:
            raise ConfigurationError(
                f"the demo database cannot be written to {str(path.parent)!r}: {err.strerror or err}",
                hint="Set SQLWEAVE_CACHE_DIR to a folder you can write (sqlweave keeps its caches there too).",
            ) from err
    return path


def demo_knowledge_path() -> Path:
    """Path of the demo shop's domain-knowledge file (bundled with the package): what "revenue" means, what the
    order statuses are, what a manager_id points at. The demo doors (``sqlweave demo``, ``serve --demo``,
    ``mcp --demo``) use it; ``Database.open(demo_database_path())`` alone does not.

    >>> from sqlweave.knowledge import load_knowledge
    >>> [t.name for t in load_knowledge(demo_knowledge_path()).terms]
    ['revenue']
    """
    return Path(__file__).resolve().parents[1] / "data" / "shop.yaml"


def build_demo_database(path: Path) -> Path:
    """Write the demo database to ``path`` atomically; the same rows every time."""
    private_folder(path.parent)
    rng = random.Random(20261121)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        conn.executescript(_SCHEMA)
        conn.executemany("INSERT INTO categories VALUES (?, ?, ?)",
                         [(i + 1, n, d) for i, (n, d) in enumerate(_CATEGORIES)])
        products: list[tuple[int, str, int, float, int]] = []
        for ci, (cat, _) in enumerate(_CATEGORIES):
            for word in _PRODUCT_WORDS[cat]:
                products.append((len(products) + 1, word, ci + 1, round(rng.uniform(4, 180), 2), rng.randint(0, 120)))
        conn.executemany("INSERT INTO products VALUES (?, ?, ?, ?, ?)", products)
        customers = []
        for i in range(60):
            first, last = rng.choice(_FIRST), rng.choice(_LAST)
            city, country = rng.choice(_PLACES)
            signup = date(2022, 1, 1) + timedelta(days=rng.randint(0, 900))
            customers.append((i + 1, first, last, f"{first.lower()}.{last.lower()}{i + 1}@example.com",
                              city, country, signup.isoformat()))
        conn.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?)", customers)
        employees = [
            (1, "Irene", "Adler", "Store Manager", "2019-03-01", None),
            (2, "Tomas", "Berg", "Sales Lead", "2020-06-15", 1),
            (3, "Lena", "Fischer", "Sales Lead", "2020-09-01", 1),
            (4, "Marco", "Conti", "Sales Associate", "2021-02-01", 2),
            (5, "Aiko", "Sato", "Sales Associate", "2021-05-20", 2),
            (6, "Jamal", "Reed", "Sales Associate", "2022-01-10", 3),
            (7, "Nora", "Lindqvist", "Sales Associate", "2022-08-01", 3),
            (8, "Pedro", "Alves", "Warehouse Clerk", "2023-03-01", 1),
        ]
        conn.executemany("INSERT INTO employees VALUES (?, ?, ?, ?, ?, ?)", employees)
        orders, items = [], []
        for oid in range(1, 161):
            cust = rng.choice(customers)
            day = date.fromisoformat(cust[6]) + timedelta(days=rng.randint(1, 400))
            orders.append((oid, cust[0], rng.randint(2, 7), day.isoformat(), rng.choice(_STATUSES)))
            for prod in rng.sample(products, rng.randint(1, 4)):
                items.append((oid, prod[0], rng.randint(1, 5), prod[3]))
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", orders)
        conn.executemany("INSERT INTO order_items VALUES (?, ?, ?, ?)", items)
        conn.commit()
        conn.close()
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
