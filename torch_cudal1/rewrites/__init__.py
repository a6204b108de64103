"""Exact mathematical rewrites of functional ATen graphs that remove work.

Each rewrite is a small module with ``run(gm) -> changes``; ``apply_rewrites`` runs them to a
fixed point, re-propagating fake values between passes and removing dead code after each, and
reports which ones fired. A rewrite that only re-describes memory (views) does not count as
firing: the built-in engine proposes a rewritten graph only when real work was removed.

Every pass carries the hash of its source (``Pass.source_hash``: its module and the rewrite and
template modules it imports), and the cache key holds them all (``pass_hashes``): a changed pass
makes new keys, so entries found with the old one are searched again, with no version to bump.
"""
from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import torch.fx as fx

from . import (attention, attention_tf32, avg_pool, cleanup, conv_transpose, cse, diag, long_rows,
               matrix_chain, outputs, size_one, sum_of_product, value_range)
from ._util import dead_code

class Pass(NamedTuple):
    name: str
    run: Callable            # run(gm) -> number of changes
    removes_work: bool       # firing counts as removing work (else: it moves work to other kernels)

    @property
    def source_hash(self) -> str:
        """Hash of the source that decides what this pass does (``hash_sources``)."""
        return _hash_of(self.run.__module__)


# Sources a pass's result depends on besides its own module: the helpers and templates it imports.
_HASHED_PACKAGES = ("torch_cudal1.rewrites", "torch_cudal1.templates")
_HASHES: dict = {}


def _module_file(name: str) -> Path | None:
    """The source file of the package's module ``name``, or None (not a module of the package)."""
    root = Path(__file__).resolve().parents[1]        # the torch_cudal1 package
    parts = name.split(".")
    if parts[0] != root.name:
        return None
    base = root.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(name: str, path: Path) -> set[str]:
    """The modules of ``_HASHED_PACKAGES`` that the module ``name`` (at ``path``) imports."""
    package = name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                for cand in (f"{base}.{alias.name}", base):
                    if cand.startswith(_HASHED_PACKAGES) and _module_file(cand) is not None:
                        out.add(cand)
                        break
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith(_HASHED_PACKAGES))
    return out


def hash_sources(module: str, read=lambda path: path.read_bytes()) -> str:
    """sha256 (16 hex digits) of ``module``'s source and of every rewrite or template module it
    imports, transitively. ``read(path) -> bytes`` reads a file (tests change what it reads)."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if name in seen or path is None or path.suffix != ".py":
            continue
        seen[name] = path
        todo.extend(_imports(name, path) - set(seen))
    h = hashlib.sha256()
    for name in sorted(seen):
        h.update(name.encode() + b"\0" + read(seen[name]) + b"\0")
    return h.hexdigest()[:16]


def _hash_of(module: str) -> str:
    if module not in _HASHES:
        _HASHES[module] = hash_sources(module)
    return _HASHES[module]


def pass_hashes() -> dict[str, str]:
    """{pass name: source hash} of every pass: part of every cache key."""
    return {p.name: p.source_hash for p in PASSES}


PASSES = [Pass(*p) for p in [
    ("noop_dropout", cleanup.noop_dropout, True),
    ("identity_views", cleanup.identity_views, False),
    ("needless_copies", cleanup.needless_copies, True),
    ("cse", cse.run, True),
    ("diag_broadcast", diag.run, True),
    ("matrix_chain", matrix_chain.run, True),
    ("sum_of_product", sum_of_product.run, True),
    ("fused_attention", attention.run, True),
    # nor this, nor exact: float32 attention as a flash-attention template in TF32 (GPU graphs)
    ("attention_tf32", attention_tf32.run, True),
    # the same template at float32's precision (three TF32 products each), where TF32 is not allowed
    ("attention_3xtf32", attention_tf32.run_3xtf32, True),
    # not less work (strided: no products with inserted zeros), but the forward kernels
    ("transposed_conv_as_conv", conv_transpose.run, True),
    # nor this: an average pool as a depthwise convolution with a constant kernel
    ("avg_pool_as_conv", avg_pool.run, True),
    ("value_range", value_range.run, True),
    ("size_one_reduction", size_one.run, True),
    # not less work either: a Triton template for layer and group norms over long rows (GPU graphs)
    ("long_row_layer_norm", long_rows.run, True),
    ("long_row_group_norm", long_rows.run_group, True),
]]
NAMES = [p[0] for p in PASSES]
# Passes that move work to other kernels rather than remove it: whether that is faster depends on
# the device and the shapes, so the built-in engine proposes the graph both with and without them.
KERNEL_CHOICE = {"transposed_conv_as_conv", "avg_pool_as_conv", "long_row_layer_norm",
                 "long_row_group_norm", "attention_tf32", "attention_3xtf32"}
# Passes whose kernels round float32 products to TF32: proposed only where the engine may propose
# TF32 (option ``tf32``), in the rewritten graph through inductor with and without TF32 for the
# module's other products.
TF32_ONLY = {"attention_tf32"}


@dataclass
class RewriteResult:
    gm: fx.GraphModule
    counts: dict = field(default_factory=dict)     # name -> changes made (dead_code included)

    @property
    def fired(self) -> list[str]:
        """Rewrites that removed real work."""
        significant = {name for name, _, sig in PASSES if sig} | {"dead_code"}
        return [k for k, v in self.counts.items() if v and k in significant]


def _refresh(gm: fx.GraphModule) -> None:
    from ..graph.trace import propagate_meta
    gm.graph.lint()
    gm.recompile()
    propagate_meta(gm)


def apply_rewrites(gm: fx.GraphModule, only: list[str] | None = None,
                   max_rounds: int = 4) -> RewriteResult:
    """Rewrite a copy of ``gm`` (whose nodes carry fake ``meta['val']``)."""
    gm = copy.deepcopy(gm)
    before = outputs.layouts(gm)
    counts: dict = {}
    passes = [p for p in PASSES if only is None or p[0] in only]
    # Dead code present in the trace itself (unused results of the user's code) is work too.
    counts["dead_code"] = dead_code(gm)
    _refresh(gm)
    for _ in range(max_rounds):
        changed = False
        for name, fn, _sig in passes:
            n = fn(gm)
            if n:
                counts[name] = counts.get(name, 0) + n
                counts["dead_code"] += dead_code(gm)
                _refresh(gm)
                changed = True
        if not changed:
            break
    outputs.protect(gm, before)
    dead_code(gm)
    _refresh(gm)
    return RewriteResult(gm, counts)


__all__ = ["apply_rewrites", "hash_sources", "KERNEL_CHOICE", "NAMES", "Pass", "PASSES",
           "pass_hashes", "RewriteResult", "TF32_ONLY"]
