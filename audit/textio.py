"""Opening input files: plain or gzip, decoded as UTF-8 with undecodable bytes kept visible."""

from __future__ import annotations

import gzip
import tomllib
from pathlib import Path


class InputError(Exception):
    """A file that cannot be read at all (missing, unreadable, not the format named)."""


def read_bytes(path, what: str | None = None) -> bytes:
    """The file's bytes, gunzipped when it is gzip; :class:`InputError` naming the file (and ``what`` it should
    hold) when it cannot be read."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: cannot read{f' {what}' if what else ''}: {exc.strerror or exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"{p}: corrupt gzip: {exc}") from exc
    return raw


def read_head(path, size: int = 65536) -> str:
    """The first ``size`` bytes of the file (after gzip), as text: enough to tell its format."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(size)
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.open(p, "rb") as fh:
                raw = fh.read(size)
        except (OSError, EOFError) as exc:
            raise InputError(f"{p}: corrupt gzip: {exc}") from exc
    return raw.decode("utf-8", errors="replace")


def read_text(path, what: str | None = None) -> str:
    """The file's text; bytes that are not UTF-8 become U+FFFD rather than stopping the run."""
    return read_bytes(path, what).decode("utf-8", errors="replace")


def parse_toml(text: str, origin: str, error: type[Exception] = InputError) -> dict:
    """TOML text as a dict; ``error`` (naming ``origin``) when it is not valid TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{origin}: not valid TOML: {exc}") from exc


def read_toml(path, error: type[Exception] = InputError) -> dict:
    """A TOML file as a dict; ``error`` naming the file when it cannot be read or is not valid TOML."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{p}: cannot read: {exc.strerror or exc}") from exc
    return parse_toml(text, str(p), error)
