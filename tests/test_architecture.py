"""The house's shape, read from the code's own imports (function-level imports included).

Dependencies run one way: the Django-free statistics (`stats`) and the project's plumbing (`config`'s
settings, errors, cache and API helpers) at the bottom, then `raters` (who the people are), `tournaments`
(battles, generation, matchmaking, quality control), `leaderboard` (ratings, fits, boards, pages, API,
exports), the benchmarks (`bench`), and the URL roots on top. A lower floor never imports a higher one,
and no module is part of an import circle. Where a lower app must trigger a higher one it sends a named
signal or enqueues a task by name (see the README's architecture section).
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("stats", "config", "raters", "tournaments", "leaderboard", "bench")

# The URL roots and the WSGI entry point assemble every app, so they sit above all of them.
TOP_MODULES = {"config.urls", "config.bench_urls", "config.wsgi"}
FLOORS = {"stats": 0, "config": 1, "raters": 2, "tournaments": 3, "leaderboard": 4, "bench": 5}
TOP_FLOOR = 6


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            if "migrations" not in path.parts:
                modules[module_name(path)] = path
    return modules


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules that `path` imports anywhere in its body, resolved to the longest known name."""
    is_package = path.name == "__init__.py"
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            candidates = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    return {name: imported_modules(path, name, known) for name, path in modules.items()}


def floor(module: str) -> int:
    if module in TOP_MODULES:
        return TOP_FLOOR
    return FLOORS[module.split(".")[0]]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_it_finds_a_circle_and_an_upward_import(tmp_path, monkeypatch):
    """The checks below can fail: a made-up graph with both faults is caught."""
    graph = {"raters.a": {"tournaments.b"}, "tournaments.b": {"raters.a"}, "stats.x": set()}
    assert circles(graph) == [["raters.a", "tournaments.b"]]
    assert floor("raters.a") < floor("tournaments.b")


def test_it_has_no_import_circle():
    assert circles(import_graph()) == []


def test_it_never_imports_upward():
    upward = [
        f"{source} -> {target}"
        for source, targets in import_graph().items()
        for target in targets
        if floor(target) > floor(source)
    ]
    assert upward == []


def test_it_keeps_statistics_free_of_django():
    graph = import_graph()
    for module, path in project_modules().items():
        if module.startswith("stats"):
            assert graph[module] <= {m for m in graph if m.startswith("stats")}, module
            assert "django" not in path.read_text(), module


def test_it_imports_the_statistics_without_django_settings():
    """Every stats module imports in a fresh interpreter with no Django settings and no Django at all."""
    names = sorted(m for m in project_modules() if m.startswith("stats"))
    probe = (
        "import sys, importlib\n"
        "sys.modules['django'] = None\n"  # any attempt to import Django fails loudly
        f"for name in {names!r}: importlib.import_module(name)\n"
        "print('ok')"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
