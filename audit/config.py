"""The report config (``reclaim audit --config report.toml``): one TOML file, validated here with plain errors
that name the key; every key has a default (docs/report.md lists them).

```
[report]      client, prepared_by, logo, accent, currency, locale, pages, top_accounts, top_rows
[pricing]     price_book
[whatif]      risk, tolerance
[findings]    the thresholds of audit.accounting.findings.Thresholds
[anonymise]   enabled, salt
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from .accounting.findings import Thresholds
from .textio import InputError, read_toml

PAGES = ("summary", "findings", "capacity", "recoverable", "recommendations", "accounts", "trend", "methods",
         "quality", "glossary")
LOCALES = ("en", "de", "fr")
CURRENCIES = {"USD": "$", "EUR": "€", "GBP": "£", "CHF": "CHF\u00a0", "JPY": "¥", "CAD": "CA$", "AUD": "A$",
              "SEK": "SEK\u00a0", "NOK": "NOK\u00a0", "DKK": "DKK\u00a0"}
DEFAULT_RISK = (0.5, 0.8, 0.9, 0.95, 0.99)


class ConfigError(InputError):
    """A report config that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class ReportConfig:
    client: str = ""
    prepared_by: str = "Reclaim"
    logo: Path | None = None
    accent: str = "#2f5d8a"
    currency: str = "USD"
    locale: str = "en"
    pages: tuple = PAGES
    top_accounts: int = 5
    top_rows: int = 10
    price_book: str | None = None
    risk: tuple = DEFAULT_RISK
    tolerance: float = 0.01
    thresholds: Thresholds = field(default_factory=Thresholds)
    anonymise: bool = False
    salt: str = ""

    @property
    def currency_symbol(self) -> str:
        return CURRENCIES[self.currency]


SECTIONS = {
    "report": ("client", "prepared_by", "logo", "accent", "currency", "locale", "pages", "top_accounts", "top_rows"),
    "pricing": ("price_book",),
    "whatif": ("risk", "tolerance"),
    "findings": tuple(Thresholds.names()),
    "anonymise": ("enabled", "salt"),
}


def _text(where: str, v) -> str:
    if not isinstance(v, str):
        raise ConfigError(f"{where}: must be text, got {v!r}")
    return v


def _number(where: str, v, lo=None, hi=None, integer=False, open_lo=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise ConfigError(f"{where}: must be {'a whole number' if integer else 'a number'}, got {v!r}")
    if lo is not None and (v < lo or (open_lo and v == lo)):
        raise ConfigError(f"{where}: must be {'>' if open_lo else '≥'} {lo}, got {v!r}")
    if hi is not None and v > hi:
        raise ConfigError(f"{where}: must be ≤ {hi}, got {v!r}")
    return v


def load_config(path=None) -> ReportConfig:
    """The config in ``path`` (defaults for every key it leaves out); ``None`` gives every default."""
    if path is None:
        return ReportConfig()
    path = Path(path)
    spec = read_toml(path, ConfigError)
    return parse_config(spec, str(path), base=path.parent)


def parse_config(spec: dict, origin: str = "config", base: Path | None = None) -> ReportConfig:
    for section, body in spec.items():
        if section not in SECTIONS:
            raise ConfigError(f"{origin}: unknown section [{section}]; expected one of "
                              + ", ".join(f"[{s}]" for s in SECTIONS))
        if not isinstance(body, dict):
            raise ConfigError(f"{origin}: {section} must be a table [{section}]")
        for key in body:
            if key not in SECTIONS[section]:
                raise ConfigError(f"{origin}: unknown key {section}.{key}; [{section}] takes "
                                  + ", ".join(SECTIONS[section]))
    kw = {}
    r = spec.get("report", {})
    at = lambda k: f"{origin}: report.{k}"  # noqa: E731
    for k in ("client", "prepared_by"):
        if k in r:
            kw[k] = _text(at(k), r[k])
    if "logo" in r:
        logo = Path(_text(at("logo"), r["logo"]))
        logo = logo if logo.is_absolute() or base is None else base / logo
        if logo.suffix.lower() not in (".png", ".jpg", ".jpeg", ".svg"):
            raise ConfigError(f"{at('logo')}: must be a PNG, JPEG or SVG file, got {r['logo']!r}")
        if not logo.is_file():
            raise ConfigError(f"{at('logo')}: no such file {str(logo)!r}")
        kw["logo"] = logo
    if "accent" in r:
        if not re.fullmatch(r"#[0-9a-fA-F]{6}", _text(at("accent"), r["accent"])):
            raise ConfigError(f"{at('accent')}: must be a colour #RRGGBB, got {r['accent']!r}")
        kw["accent"] = r["accent"].lower()
    if "currency" in r:
        if _text(at("currency"), r["currency"]) not in CURRENCIES:
            raise ConfigError(f"{at('currency')}: must be one of {', '.join(CURRENCIES)}, got {r['currency']!r}")
        kw["currency"] = r["currency"]
    if "locale" in r:
        if _text(at("locale"), r["locale"]) not in LOCALES:
            raise ConfigError(f"{at('locale')}: must be one of {', '.join(LOCALES)}, got {r['locale']!r}")
        kw["locale"] = r["locale"]
    if "pages" in r:
        pages = r["pages"]
        if not isinstance(pages, list) or not pages:
            raise ConfigError(f"{at('pages')}: must be a list of pages, some of {', '.join(PAGES)}")
        for p in pages:
            if p not in PAGES:
                raise ConfigError(f"{at('pages')}: unknown page {p!r}; expected some of {', '.join(PAGES)}")
        kw["pages"] = tuple(p for p in PAGES if p in pages)
    for k in ("top_accounts", "top_rows"):
        if k in r:
            kw[k] = _number(at(k), r[k], lo=1, hi=100, integer=True)
    p = spec.get("pricing", {})
    if "price_book" in p:
        kw["price_book"] = _text(f"{origin}: pricing.price_book", p["price_book"])
    w = spec.get("whatif", {})
    if "risk" in w:
        risk = w["risk"]
        if not isinstance(risk, list) or not risk:
            raise ConfigError(f"{origin}: whatif.risk: must be a list of levels between 0 and 1")
        for v in risk:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
                raise ConfigError(f"{origin}: whatif.risk: every level must lie strictly between 0 and 1, got {v!r}")
        kw["risk"] = tuple(sorted({float(v) for v in risk}))
    if "tolerance" in w:
        kw["tolerance"] = float(_number(f"{origin}: whatif.tolerance", w["tolerance"], lo=0, hi=1))
    f = spec.get("findings", {})
    if f:
        values = {}
        for fld in fields(Thresholds):
            if fld.name in f:
                values[fld.name] = float(_number(f"{origin}: findings.{fld.name}", f[fld.name], lo=0))
        kw["thresholds"] = Thresholds(**values)
    a = spec.get("anonymise", {})
    if "enabled" in a:
        if not isinstance(a["enabled"], bool):
            raise ConfigError(f"{origin}: anonymise.enabled: must be true or false, got {a['enabled']!r}")
        kw["anonymise"] = a["enabled"]
    if "salt" in a:
        kw["salt"] = _text(f"{origin}: anonymise.salt", a["salt"])
    if kw.get("anonymise") and len(kw.get("salt", "")) < 8:
        raise ConfigError(f"{origin}: anonymise.salt: anonymisation needs a secret salt of 8 characters or more")
    return ReportConfig(**kw)
