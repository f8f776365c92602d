"""Render the report context into ``report.html`` and ``report.pdf`` (Jinja2 + WeasyPrint).

Templates are read through ``importlib.resources`` from the ``templates`` package, so rendering
works from a plain (non-editable) install. Autoescaping is on: job names, users and paths are untrusted.
WeasyPrint fetches resources only through ``LocalOnlyFetcher``, which refuses every URL except ``data:``
and files inside the templates folder — the report never touches the network.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import jinja2
from weasyprint import HTML
from weasyprint.urls import URLFetcher

TEMPLATE_PACKAGE = "templates"
REPORT_TEMPLATE = "report.html"


class URLRefused(ValueError):
    """A resource URL that the report renderer will not fetch."""


def templates_root():
    """The templates folder as an ``importlib.resources`` Traversable."""
    return files(TEMPLATE_PACKAGE)


def url_allowed(url: str, root: Path) -> bool:
    """True for ``data:`` URLs and ``file:`` URLs naming a file inside ``root``; False for everything else."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "data":
        return True
    if scheme != "file" or parts.netloc not in ("", "localhost"):
        return False
    path = Path(url2pathname(unquote(parts.path))).resolve()
    return path.is_relative_to(Path(root).resolve())


class LocalOnlyFetcher(URLFetcher):
    """WeasyPrint URL fetcher that refuses any URL ``url_allowed`` rejects, before opening anything."""

    def __init__(self, root: Path, **kwargs):
        super().__init__(**kwargs)
        self.root = Path(root)

    def fetch(self, url, headers=None):
        if not url_allowed(url, self.root):
            raise URLRefused(f"report renderer refuses to fetch {url!r}: only data: URLs and files under "
                             f"{self.root} are allowed")
        return super().fetch(url, headers)


class TraversableLoader(jinja2.BaseLoader):
    """Jinja2 loader over an ``importlib.resources`` Traversable (a folder, or a folder inside a zip)."""

    def __init__(self, root):
        self.root = root

    def get_source(self, environment, template):
        node = self.root
        for part in template.split("/"):
            if part in ("", ".", ".."):
                raise jinja2.TemplateNotFound(template)
            node = node.joinpath(part)
        if not node.is_file():
            raise jinja2.TemplateNotFound(template)
        return node.read_text(encoding="utf-8"), None, lambda: True


def make_environment(root=None) -> jinja2.Environment:
    """The Jinja2 environment: HTML autoescaped, CSS included verbatim, undefined names are errors."""
    return jinja2.Environment(
        loader=TraversableLoader(root if root is not None else templates_root()),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "htm", "xml"),
                                            disabled_extensions=("css",), default_for_string=True, default=True),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def render_html(context: dict, environment: jinja2.Environment | None = None) -> str:
    """The report as one self-contained HTML string (CSS and chart inline)."""
    env = environment or make_environment()
    return env.get_template(REPORT_TEMPLATE).render(**context)


def epoch_of(created: str | None) -> int | None:
    """Seconds since 1970 of an ISO time (``2026-10-31T00:00:00+00:00``; naive read as UTC), None for none."""
    if not created:
        return None
    t = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    return int((t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp())


@contextmanager
def fonts_dated(created: str | None):
    """While writing a PDF, the embedded fonts are dated ``created`` (the report's stamp), not the clock.

    Without HarfBuzz-Subset (Debian's ``libharfbuzz-subset0``) WeasyPrint subsets fonts with fontTools, which
    writes the current time into each font's ``head`` table unless ``SOURCE_DATE_EPOCH`` says otherwise; so the
    variable is set to the stamp for the write and restored after.  A ``SOURCE_DATE_EPOCH`` already set wins."""
    epoch = epoch_of(created)
    if epoch is None or "SOURCE_DATE_EPOCH" in os.environ:
        yield
        return
    os.environ["SOURCE_DATE_EPOCH"] = str(epoch)
    try:
        yield
    finally:
        os.environ.pop("SOURCE_DATE_EPOCH", None)


def html_to_pdf(html: str, pdf_path: Path, fetcher: URLFetcher | None = None, *, created: str | None = None) -> Path:
    """Write ``html`` as a PDF. Resources resolve against the templates folder and go through ``fetcher``
    (a ``LocalOnlyFetcher`` on that folder by default).  ``created`` (ISO time, the report's stamp) dates what
    the PDF embeds, so that a re-run writes the same bytes, with HarfBuzz-Subset or without it (the two
    subsetters write different fonts)."""
    root = Path(str(templates_root()))
    fetcher = fetcher if fetcher is not None else LocalOnlyFetcher(root)
    with fonts_dated(created):
        HTML(string=html, base_url=root.as_uri() + "/", url_fetcher=fetcher).write_pdf(pdf_path)
    return pdf_path
