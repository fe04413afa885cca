"""A small generated shop site, served on localhost, for the MCP corpus's real browser sessions.

`@playwright/mcp` drives Debian's chromium over these pages (bench/corpus_mcp.py's `browser-*`
sessions), so its accessibility snapshots (YAML-ish trees with `[ref=eNN]` handles) of long
tables, long articles and forms enter the corpus as a real server renders them.

Pages, all from one seed (same bytes every run):
- `/index.html`: the home page, its navigation and a short welcome;
- `/catalog/fasteners.html` and `/catalog/tools.html`: product tables (SKU, product link, price,
  stock, an "Add to cart" button per row that updates a status line);
- `/p/SKU-NNNNN.html`: one page per product (bin, supplier part number, related products);
- `/handbook.html`: a long article with headings and absolute links to `/docs/*.html` topics,
  each of which links back to products;
- `/order.html`: a form (SKU, quantity, warehouse, PO number) that submits to `/confirm.html`.

Links are absolute (the origin the server bound), as many real sites write them, so a URL an
agent navigates to next is a value it read in a snapshot.
"""

from __future__ import annotations

import html
import random
import threading
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SEED = 4242
CATALOGS = {"fasteners": 800, "tools": 260}
"""Rows per catalog page. Reached from the home page, the catalog's refs carry a frame prefix (`f1e5123`)."""
TOPICS = 36
WAREHOUSES = ["WH-12", "WH-31", "WH-47", "WH-58"]

_NOUNS = {
    "fasteners": ["Hex bolt", "Carriage bolt", "Lock nut", "Wing nut", "Flat washer", "Spring washer", "Wood screw"],
    "tools": ["Torque wrench", "Socket set", "Hex key set", "Rivet gun", "Tap and die set", "Thread gauge"],
}
_SIZES = ["M3", "M4", "M5", "M6", "M8", "M10", "M12", "1/4in", "5/16in", "3/8in"]
_FINISHES = ["zinc", "stainless", "black oxide", "galvanised", "brass"]
_WORDS = (
    "stock count cycle bin pallet picker route dock inbound outbound carrier label scan audit "
    "variance reorder threshold supplier lead time batch lot expiry shelf aisle zone replenish "
    "forecast demand backorder allocation wave manifest freight invoice receipt return"
).split()


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    price: str
    stock: int
    bin: str
    supplier_part: str
    catalog: str


def _products(rng: random.Random) -> list[Product]:
    skus = rng.sample(range(10000, 99999), sum(CATALOGS.values()))
    out: list[Product] = []
    for catalog, count in CATALOGS.items():
        for _ in range(count):
            sku = f"SKU-{skus[len(out)]}"
            name = f"{rng.choice(_NOUNS[catalog])} {rng.choice(_SIZES)} {rng.choice(_FINISHES)}"
            price = (
                f"${rng.randint(5, 9000) / 100:.2f}"
                if catalog == "fasteners"
                else f"${rng.randint(900, 40000) / 100:.2f}"
            )
            bin_ = f"BIN-{rng.choice('ABCDEF')}{rng.randint(1, 40):02d}-{rng.randint(1, 12):02d}"
            part = f"SP-{rng.getrandbits(28):07x}"
            out.append(Product(sku, name, price, rng.randint(0, 2500), bin_, part, catalog))
    return out


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<link rel="icon" href="data:,"></head>\n<body>\n{body}\n</body></html>\n'
    )


def _nav(origin: str) -> str:
    links = [
        ("Fasteners", "/catalog/fasteners.html"),
        ("Tools", "/catalog/tools.html"),
        ("Handbook", "/handbook.html"),
        ("Order", "/order.html"),
    ]
    return "<nav>" + " ".join(f'<a href="{origin}{href}">{label}</a>' for label, href in links) + "</nav>"


def _catalog(origin: str, catalog: str, products: list[Product]) -> str:
    rows = "\n".join(
        f'<tr><td>{p.sku}</td><td><a href="{origin}/p/{p.sku}.html">{html.escape(p.name)}</a></td>'
        f"<td>{p.price}</td><td>{p.stock}</td>"
        f"<td><button onclick=\"added('{p.sku}')\">Add to cart</button></td></tr>"
        for p in products
    )
    script = (
        "<script>let n = 0; function added(sku) { n += 1; "
        "document.getElementById('cart').textContent = 'Added ' + sku + ' to cart (' + n + ' items)'; }</script>"
    )
    body = (
        f"{_nav(origin)}\n<h1>Catalog: {catalog}</h1>\n<p>{len(products)} products, prices without VAT.</p>\n"
        '<p id="cart" role="status">Cart is empty</p>\n'
        "<table><thead><tr><th>SKU</th><th>Product</th><th>Price</th><th>Stock</th><th>Cart</th></tr></thead>"
        f"<tbody>\n{rows}\n</tbody></table>\n{script}"
    )
    return _page(f"Catalog: {catalog}", body)


def _product(origin: str, p: Product, related: list[Product]) -> str:
    items = "".join(f'<li><a href="{origin}/p/{r.sku}.html">{r.sku} {html.escape(r.name)}</a></li>' for r in related)
    body = (
        f"{_nav(origin)}\n<h1>{html.escape(p.name)}</h1>\n<dl><dt>SKU</dt><dd>{p.sku}</dd><dt>Price</dt><dd>{p.price}</dd>"
        f"<dt>Stock</dt><dd>{p.stock}</dd><dt>Bin</dt><dd>{p.bin}</dd><dt>Supplier part</dt><dd>{p.supplier_part}</dd></dl>\n"
        f'<h2>Related</h2><ul>{items}</ul>\n<p><a href="{origin}/order.html?sku={p.sku}">Order this product</a></p>'
    )
    return _page(f"{p.sku} {p.name}", body)


def _sentence(rng: random.Random, products: list[Product]) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(10, 22))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), rng.choice(products).sku)
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def _handbook(origin: str, rng: random.Random, products: list[Product]) -> str:
    parts = [_nav(origin), "<h1>Warehouse operations handbook</h1>"]
    for section in range(1, 13):
        parts.append(f"<h2>{section}. {rng.choice(_WORDS).capitalize()} and {rng.choice(_WORDS)}</h2>")
        for sub in range(1, rng.randint(2, 4)):
            parts.append(f"<h3>{section}.{sub} {rng.choice(_WORDS).capitalize()} {rng.choice(_WORDS)}</h3>")
            for _ in range(rng.randint(1, 3)):
                topic = rng.randint(1, TOPICS)
                text = " ".join(_sentence(rng, products) for _ in range(rng.randint(2, 5)))
                parts.append(
                    f'<p>{text} See <a href="{origin}/docs/topic-{topic:02d}.html">topic {topic:02d}: '
                    f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}</a>.</p>"
                )
    return _page("Warehouse operations handbook", "\n".join(parts))


def _topic(origin: str, rng: random.Random, n: int, products: list[Product]) -> str:
    picks = rng.sample(products, 6)
    items = "".join(f'<li><a href="{origin}/p/{p.sku}.html">{p.sku}</a>: {html.escape(p.name)}</li>' for p in picks)
    text = " ".join(_sentence(rng, products) for _ in range(6))
    body = f"{_nav(origin)}\n<h1>Topic {n:02d}</h1>\n<p>{text}</p>\n<h2>Products named here</h2><ul>{items}</ul>"
    return _page(f"Topic {n:02d}", body)


def _order_form(origin: str) -> str:
    options = "".join(f"<option>{w}</option>" for w in WAREHOUSES)
    body = (
        f'{_nav(origin)}\n<h1>Place an order</h1>\n<form action="{origin}/confirm.html">'
        '<p><label>SKU <input name="sku"></label></p>'
        '<p><label>Quantity <input name="qty" type="number" value="1"></label></p>'
        f'<p><label>Warehouse <select name="warehouse">{options}</select></label></p>'
        '<p><label>PO number <input name="po"></label></p>'
        '<p><button type="submit">Place order</button></p></form>'
    )
    return _page("Place an order", body)


def _confirm() -> str:
    script = (
        "<script>const q = new URLSearchParams(location.search);"
        "document.getElementById('msg').textContent = 'Order received: ' + q.get('qty') + ' x ' + q.get('sku') + "
        "' from ' + q.get('warehouse') + ', PO ' + q.get('po');</script>"
    )
    return _page("Order received", f'<h1>Order received</h1>\n<p id="msg" role="status"></p>\n{script}')


def write_site(folder: Path, origin: str) -> list[Product]:
    """Write every page under `folder` with links on `origin`; returns the products (for checks)."""
    rng = random.Random(SEED)
    products = _products(rng)
    (folder / "catalog").mkdir(parents=True, exist_ok=True)
    (folder / "p").mkdir(exist_ok=True)
    (folder / "docs").mkdir(exist_ok=True)
    for catalog in CATALOGS:
        (folder / "catalog" / f"{catalog}.html").write_text(
            _catalog(origin, catalog, [p for p in products if p.catalog == catalog])
        )
    for p in products:
        (folder / "p" / f"{p.sku}.html").write_text(_product(origin, p, rng.sample(products, 5)))
    (folder / "handbook.html").write_text(_handbook(origin, rng, products))
    for n in range(1, TOPICS + 1):
        (folder / "docs" / f"topic-{n:02d}.html").write_text(_topic(origin, rng, n, products))
    (folder / "index.html").write_text(
        _page("Acme Hardware", f"{_nav(origin)}\n<h1>Acme Hardware</h1>\n<p>Fasteners and tools.</p>")
    )
    (folder / "order.html").write_text(_order_form(origin))
    (folder / "confirm.html").write_text(_confirm())
    return products


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """The corpus run logs sessions, not requests."""


class Site:
    """The generated site served by http.server on a free localhost port, in a thread."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(folder)))
        self.origin = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        write_site(folder, self.origin)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
