"""The Dynamo backend: ``torch.compile(model, backend="cudal1", options={...})``.

Registered through the ``torch_dynamo_backends`` entry point only. Inference graphs go through
aot_autograd to ATen; each graph becomes a GraphRunner that, on its first real call, looks its
key up in the cache and otherwise searches (or, in ``cache-only`` mode, runs the fallback).
"""
from __future__ import annotations

import torch

from .log import configure, logger
from .options import Options


def _needs_autograd(example_inputs) -> bool:
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def cudal1_backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None,
                   mode: str | None = None, **_ignored):
    opts = Options.resolve(options)
    configure(opts.log_level)
    if mode:
        logger.debug("torch.compile mode=%r is ignored by cudal1 (use options=...)", mode)
    if _needs_autograd(example_inputs):
        if opts.training == "inductor":
            logger.info("graph needs autograd: compiled by inductor (cudal1 searches inference "
                        "graphs only)")
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs)
        logger.info("graph needs autograd: running eagerly (cudal1 searches inference graphs only)")
        return gm.forward

    from torch._functorch.aot_autograd import aot_module_simplified

    from .graph_runner import GraphRunner

    def fw_compiler(aten_gm, aten_inputs):
        return GraphRunner(aten_gm, aten_inputs, opts)

    return aot_module_simplified(gm, example_inputs, fw_compiler=fw_compiler)
