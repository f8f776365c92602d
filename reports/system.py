"""The system libraries and fonts the PDF renderer needs, and one line naming any that are missing.

WeasyPrint loads Pango, HarfBuzz and Fontconfig at import; without HarfBuzz-Subset it subsets fonts with
fontTools instead (slower, and other bytes than a machine that has it, though a re-run writes the same:
:func:`reports.render.fonts_dated`);
without the DejaVu fonts the stylesheet names, another font is drawn and the PDF is not the same bytes as on a
machine that has them.  ``python -m reports.system`` prints that line (nothing when all are there); `make demo`
and `make test` run it first.  Nothing here imports WeasyPrint.
"""

from __future__ import annotations

import ctypes.util
import shutil
import subprocess
import sys

#: (library name for ``ctypes.util.find_library``, Debian package, what is lost without it)
LIBRARIES = (
    ("pango-1.0", "libpango-1.0-0", "no PDF"),
    ("pangoft2-1.0", "libpangoft2-1.0-0", "no PDF"),
    ("fontconfig", "libfontconfig1", "no PDF"),
    ("harfbuzz", "libharfbuzz0b", "no PDF"),
    ("harfbuzz-subset", "libharfbuzz-subset0",
     "fonts subset by fontTools: slower, and other bytes than where it is installed"),
)
#: the family the stylesheet names, and its Debian package
FONT = ("DejaVu Sans", "fonts-dejavu-core", "another font drawn: other bytes")


def font_missing(family: str = FONT[0]) -> bool:
    """True when Fontconfig knows no font of ``family`` (False when ``fc-list`` is not there to ask)."""
    fc = shutil.which("fc-list")
    if fc is None:
        return False
    out = subprocess.run([fc, family, "family"], capture_output=True, text=True, check=False).stdout
    return family.lower() not in out.lower()


def missing(find=ctypes.util.find_library, font=font_missing) -> list[tuple[str, str]]:
    """``(Debian package, what is lost)`` for every library or font the renderer needs and cannot find."""
    out = [(package, lost) for name, package, lost in LIBRARIES if not find(name)]
    if font():
        out.append(FONT[1:])
    return out


def notice(absent: list[tuple[str, str]]) -> str:
    """One line naming what is missing and how to get it ('' when nothing is)."""
    if not absent:
        return ""
    what = "; ".join(f"{package} ({lost})" for package, lost in absent)
    return (f"reclaim: missing system packages for the PDF: {what}; "
            f"install: apt-get install {' '.join(p for p, _ in absent)}")


def main() -> int:
    line = notice(missing())
    if line:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
