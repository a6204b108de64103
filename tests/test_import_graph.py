"""The package's import graph, read from its source with ``ast`` (nothing imported): no module
imports itself through others, the subpackages form layers, and no module reaches into another
package's private names.

Every import counts, those inside functions too: a lazy import that closes a circle only moves the
failure to the first call that takes it.
"""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "torch_cudal1"
ROOT = PACKAGE.name

# Package-level edges that close a loop on purpose, each with its reason.
ALLOWED_PACKAGE_EDGES = {
    # Options.validate checks engine= and baselines= against the engines' own registries (two
    # leaf modules, imported in the function), so that a bad name fails where options are read.
    ("options", "engines"),
}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


MODULES = _modules()


def _imports(name: str):
    """(imported module, imported name or None, line) for every import of module ``name``."""
    path, is_package = MODULES[name]
    here = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith(ROOT):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    yield sub, None, node.lineno
                else:
                    yield target, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(ROOT):
                    yield alias.name, None, node.lineno


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in _imports(m) if t in MODULES and t != m} for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _unit(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to: ``serve``, ``options``, ..."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def test_the_graph_is_read():
    g = _graph()
    assert f"{ROOT}.serve.graph_runner" in g[f"{ROOT}.serve.backend"]
    assert f"{ROOT}.search.transaction" in g[f"{ROOT}.serve.graph_runner"]   # inside a function
    assert len(g) > 100


def test_no_module_imports_itself_through_others():
    assert _cycles(_graph()) == []


def test_the_subpackages_form_layers():
    units: dict[str, set[str]] = {}
    for m, targets in _graph().items():
        for t in targets:
            a, b = _unit(m), _unit(t)
            if a != b and (a, b) not in ALLOWED_PACKAGE_EDGES:
                units.setdefault(a, set()).add(b)
    assert _cycles(units) == []


def test_allowed_package_edges_are_still_needed():
    edges = {(_unit(m), _unit(t)) for m, ts in _graph().items() for t in ts}
    assert ALLOWED_PACKAGE_EDGES <= edges


def _defined(module: str) -> set[str]:
    """Names a module defines at its top level (definitions, assignments, imports)."""
    path, _ = MODULES[module]
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Try):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    names.update((a.asname or a.name).split(".")[0] for a in sub.names)
                elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, ast.Assign):
                    names.update(n.id for t in sub.targets for n in ast.walk(t)
                                 if isinstance(n, ast.Name))
    return names


def test_every_imported_name_exists():
    """An import of a moved or renamed module fails here, not at the first call that takes it
    (most of the package's imports are inside functions)."""
    bad = []
    for m in MODULES:
        for target, name, line in _imports(m):
            if target not in MODULES:
                bad.append(f"{m}:{line} imports {target}, which is no module of the package")
            elif name and name != "*" and name not in _defined(target):
                bad.append(f"{m}:{line} imports {name} from {target}, which does not define it")
    assert bad == []


def test_no_private_names_across_packages():
    bad = []
    for m in MODULES:
        for target, name, line in _imports(m):
            if _unit(target) == _unit(m):
                continue
            private_module = any(p.startswith("_") and not p.startswith("__")
                                 for p in target.split(".")[1:])
            if private_module or (name and name.startswith("_") and not name.startswith("__")):
                bad.append(f"{m}:{line} imports {target}{'.' + name if name else ''}")
    assert bad == []


def test_no_private_attributes_of_other_packages_modules():
    """``module._name`` where ``module`` was imported from another package."""
    bad = []
    for m, (path, _) in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases = {}
        for target, name, _ in _imports(m):
            if name is None and _unit(target) != _unit(m):
                aliases[target.rsplit(".", 1)[-1]] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{m}:{node.lineno} {node.value.id}.{node.attr}")
    assert bad == []
