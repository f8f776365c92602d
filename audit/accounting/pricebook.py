"""The dated price book: USD per vCPU-hour, per GiB-hour of memory and per GPU-hour by GPU type.

Each entry carries its ``source`` and ``date``.  An entry gives ``usd_per_hour`` directly, or the
amortisation of an on-premises purchase: ``capital_usd / (lifetime_years × 8766) + power_kw × pue ×
usd_per_kwh``.  Books ship in ``audit/data/pricebooks/``; ``--price-book FILE`` (or a shipped book's name)
swaps the default (``cloud-on-demand``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from importlib import resources

from ..textio import parse_toml, read_toml

HOURS_PER_YEAR = 8766.0
DEFAULT_BOOK = "cloud-on-demand"
AMORTISED = ("capital_usd", "lifetime_years", "power_kw", "pue", "usd_per_kwh")


class PriceBookError(ValueError):
    """A price book that cannot be used; the message names the book and the entry."""


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    source: str
    date: str


@dataclass(frozen=True)
class PriceBook:
    name: str
    description: str
    date: str
    origin: str
    cpu: Price
    memory: Price
    gpu: dict

    def gpu_price(self, gpu_type: str) -> Price:
        """The price of ``gpu_type``; untyped GPUs (``(none)``) take the ``[gpu.default]`` entry."""
        key = "default" if gpu_type in ("", "(none)") else gpu_type
        try:
            return self.gpu[key]
        except KeyError:
            raise PriceBookError(f"{self.origin}: no entry [gpu.{key}] for GPU type {gpu_type!r} "
                                 f"(the book prices {sorted(self.gpu) or 'no GPU'})") from None

    def check_gpu_types(self, types) -> None:
        """Raise naming the first GPU type in ``types`` the book does not price."""
        for t in sorted({str(t) for t in types if t}):
            self.gpu_price(t)

    def to_dict(self) -> dict:
        entry = lambda p: {"usd_per_hour": p.usd_per_hour, "source": p.source, "date": p.date}  # noqa: E731
        return {"name": self.name, "description": self.description, "date": self.date, "origin": self.origin,
                "cpu": entry(self.cpu), "memory": entry(self.memory),
                "gpu": {k: entry(v) for k, v in sorted(self.gpu.items())}}


def shipped_books() -> list[str]:
    root = resources.files("audit") / "data" / "pricebooks"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_price_book(path=None) -> PriceBook:
    """A book from a TOML file, or a shipped book by name (default ``cloud-on-demand``)."""
    if path is None or (isinstance(path, str) and path in shipped_books()):
        name = path or DEFAULT_BOOK
        text = (resources.files("audit") / "data" / "pricebooks" / f"{name}.toml").read_text(encoding="utf-8")
        origin = f"price book {name!r}"
        return parse_price_book(parse_toml(text, origin, PriceBookError), origin)
    return parse_price_book(read_toml(path, PriceBookError), str(path))


def parse_price_book(spec: dict, origin: str = "price book") -> PriceBook:
    book = spec.get("book", {})
    for key in ("name", "date"):
        if not book.get(key):
            raise PriceBookError(f"{origin}: [book] needs '{key}'")
    _date(book["date"], f"{origin}: [book]")
    gpus = spec.get("gpu", {})
    if not isinstance(gpus, dict):
        raise PriceBookError(f"{origin}: [gpu] must be a table of GPU types")
    return PriceBook(
        name=str(book["name"]), description=str(book.get("description", "")), date=str(book["date"]),
        origin=origin,
        cpu=_entry(spec.get("cpu"), f"{origin}: [cpu]"),
        memory=_entry(spec.get("memory"), f"{origin}: [memory]"),
        gpu={str(k): _entry(v, f"{origin}: [gpu.{k}]") for k, v in gpus.items()},
    )


def _date(value, where: str) -> str:
    text = value.isoformat() if isinstance(value, dt.date) else str(value)
    try:
        dt.date.fromisoformat(text[:10])
    except ValueError:
        raise PriceBookError(f"{where}: 'date' must be an ISO date (YYYY-MM-DD), got {value!r}") from None
    return text[:10]


def _entry(entry, where: str) -> Price:
    if not isinstance(entry, dict):
        raise PriceBookError(f"{where}: missing entry")
    if not entry.get("source"):
        raise PriceBookError(f"{where}: needs a 'source'")
    if not entry.get("date"):
        raise PriceBookError(f"{where}: undated entry (needs 'date')")
    date = _date(entry["date"], where)
    if "usd_per_hour" in entry:
        price = entry["usd_per_hour"]
    elif all(k in entry for k in AMORTISED):
        for k in AMORTISED:
            if not isinstance(entry[k], (int, float)) or entry[k] < 0:
                raise PriceBookError(f"{where}: '{k}' must be a number ≥ 0, got {entry[k]!r}")
        if entry["lifetime_years"] <= 0:
            raise PriceBookError(f"{where}: 'lifetime_years' must be > 0")
        price = (entry["capital_usd"] / (entry["lifetime_years"] * HOURS_PER_YEAR)
                 + entry["power_kw"] * entry["pue"] * entry["usd_per_kwh"])
    else:
        raise PriceBookError(f"{where}: needs 'usd_per_hour' or all of {', '.join(AMORTISED)}")
    if not isinstance(price, (int, float)) or isinstance(price, bool):
        raise PriceBookError(f"{where}: 'usd_per_hour' must be a number, got {price!r}")
    if price < 0:
        raise PriceBookError(f"{where}: negative price {price}")
    return Price(float(price), str(entry["source"]), date)
