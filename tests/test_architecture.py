"""Every import runs down: front door → stages → predictors → readers → core (docs/architecture.md).

Read from the source with ``ast`` (nothing is imported), imports inside functions included.  The wings of
``audit/``: the core (its root modules but the front door), ``readers/``, the stages (``telemetry/``,
``accounting/``, ``whatif/``), the generator (``synthetic/``) and the front door; ``simulator/`` knows neither
pandas nor ``audit``.  ``predictors/`` leans on audit's core only; inside it, ``features/`` → nothing above it,
``models/`` → ``features/``, ``advisor/`` → both, and its front (``cli``, ``evaluate``) above them all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .conftest import ROOT

FRONT_DOOR = {"audit.cli", "audit.pipeline", "audit.ingest", "audit.summary_text", "audit.config", "audit.progress"}
CORE = {"audit", "audit.job_table", "audit.telemetry_table", "audit.node_table", "audit.ledger", "audit.store",
        "audit.units", "audit.textio", "audit.cluster_shape", "audit.shape_inference", "audit.anonymise", "audit.families",
        "audit.kubernetes"}
STAGES = ("audit.telemetry", "audit.accounting", "audit.whatif", "audit.collect", "audit.monthly")
WINGS = ("audit.readers", *STAGES, "audit.synthetic")
#: predictors' front, then its wings from the bottom up: each wing imports only the wings before it
PREDICTORS_FRONT = {"predictors", "predictors.cli", "predictors.evaluate"}
PREDICTOR_WINGS = ("predictors.features", "predictors.models", "predictors.advisor")


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` file of ``package`` under ``root``."""
    out = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules ``name`` imports (relative imports resolved; ``from pkg import module`` names the module)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known)
    return found


def graph(root: Path, *packages: str) -> dict[str, set[str]]:
    """Module → the modules it imports, for every module of ``packages`` (default: audit and predictors)."""
    mods = {}
    for package in packages or ("audit", "predictors"):
        mods.update(modules(root, package))
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def within(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def broken(root: Path, importer, forbidden) -> list[str]:
    """``importer → imported`` for every import of a module ``importer`` accepts that ``forbidden`` accepts."""
    return sorted(f"{a} → {b}" for a, targets in graph(root).items() if importer(a) for b in targets if forbidden(b))


def project_module_outside(*allowed: str):
    """A test for modules of this project (``audit``, ``simulator``, ``predictors``, ``reports``) that are not
    in the core and not under one of ``allowed``."""
    return lambda m: (within(m, ["audit", "simulator", "predictors", "reports"]) and m not in CORE
                      and not within(m, allowed))


def test_the_graph_sees_the_imports():
    g = graph(ROOT, "audit")
    assert {"audit.ledger", "audit.readers.sacct.fold"} <= g["audit.readers.sacct.text"]  # relative, sideways
    assert {"audit.readers", "audit.telemetry"} <= g["audit.ingest"]  # through the faces
    assert "audit.whatif" in g["audit.pipeline"]  # inside a function


def test_every_module_of_audit_has_a_place():
    assert [m for m in modules(ROOT, "audit") if m not in CORE | FRONT_DOOR and not within(m, WINGS)] == []


def test_readers_import_only_the_core():
    assert broken(ROOT, lambda m: within(m, ["audit.readers"]), project_module_outside("audit.readers")) == []


def test_stages_do_not_import_the_front_door():
    assert broken(ROOT, lambda m: within(m, STAGES), lambda m: m in FRONT_DOOR) == []


def test_the_core_imports_only_the_core():
    assert broken(ROOT, lambda m: m in CORE, project_module_outside()) == []


def test_only_the_whatif_stage_meets_the_simulator():
    assert broken(ROOT, lambda m: not within(m, ["audit.whatif"]), lambda m: within(m, ["simulator"])) == []


def test_predictors_import_only_audits_core():
    assert broken(ROOT, lambda m: within(m, ["predictors"]), project_module_outside("predictors")) == []


def test_every_module_of_predictors_has_a_place():
    assert [m for m in modules(ROOT, "predictors")
            if m not in PREDICTORS_FRONT and not within(m, PREDICTOR_WINGS)] == []


@pytest.mark.parametrize("wing", PREDICTOR_WINGS)
def test_a_wing_of_predictors_imports_only_the_wings_below_it(wing):
    below = PREDICTOR_WINGS[: PREDICTOR_WINGS.index(wing) + 1]
    assert broken(ROOT, lambda m: within(m, [wing]),
                  lambda m: within(m, ["predictors"]) and not within(m, below)) == []


@pytest.mark.parametrize("package", ["audit", "predictors"])
def test_no_circles_among_the_modules(package):
    g = graph(ROOT, package)
    edges = {a: {b for b in targets if b in g and b != a} for a, targets in g.items()}
    state, path, circles = {}, [], []

    def visit(m):
        state[m] = "open"
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == "open":
                circles.append(" → ".join(path[path.index(n):] + [n]))
            elif n not in state:
                visit(n)
        path.pop()
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert circles == []


@pytest.mark.parametrize("forbidden", ["pandas", "audit"])
def test_simulator_knows_neither_pandas_nor_audit(forbidden):
    mods = modules(ROOT, "simulator")
    found = sorted(f"{name} → {t}" for name, path in mods.items() for t in imports(name, path, set(mods))
                   if within(t, [forbidden]))
    assert found == []
