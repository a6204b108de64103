"""The Dynamo backend: ``torch.compile(model, backend="cudal1", options={...})``.

Registered through the ``torch_dynamo_backends`` entry point only. Inference graphs go through
aot_autograd to ATen; each graph becomes a GraphRunner that, on its first real call, looks its
key up in the cache and otherwise searches (or, in ``cache-only`` mode, runs the fallback).
"""
from __future__ import annotations

import torch

from ..log import configure, logger
from ..options import Options


def _needs_autograd(example_inputs) -> bool:
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def cudal1_backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None,
                   mode: str | None = None, **_ignored):
    opts = Options.resolve(options)     # a wrong option is the caller's error: it raises
    configure(opts.log_level)
    if mode:
        logger.debug("torch.compile mode=%r is ignored by cudal1 (use options=...)", mode)
    try:
        return _compile(gm, example_inputs, opts)
    except Exception as e:  # noqa: BLE001 - the boundary's capture stage
        if _dynamo_restarts_on(e) or _dynamo_breaks_graph_on(e):
            # Dynamo handles these: it traces the frame again (a float specialised), or breaks
            # the graph at the op (e.g. narrow() by a tensor's value) and compiles the rest as
            # other graphs, each through this backend. Kept here, the whole graph ran eagerly.
            raise
        from .fallback import report
        report("capture", e, opts, graph=_label(gm))
        return _captured_fallback(gm, example_inputs, opts)


def _dynamo_restarts_on(e: BaseException) -> bool:
    """``e`` is Dynamo's own signal to trace the frame again (``RestartAnalysis``): under
    ``dynamic=True`` aot_autograd raises ``TensorifyScalarRestartAnalysis`` for a float it cannot
    keep symbolic (BERT's attention scale), and Dynamo then traces again with that float
    specialised and calls the backend with the new graph. Kept here, the graph ran eagerly."""
    try:
        from torch._dynamo.exc import RestartAnalysis
    except Exception:  # noqa: BLE001 - internal API moved: keep the boundary's fallback
        return False
    return isinstance(e, RestartAnalysis)


def _dynamo_breaks_graph_on(e: BaseException) -> bool:
    """Dynamo catches ``e`` from a backend and breaks the graph where it arose (the fake-tensor
    exceptions of data-dependent outputs and unsupported operators), instead of failing the
    compile; not where the graph holds a user's ``allow_in_graph`` function (Dynamo raises
    ``BackendCompilerFailed`` to the user there)."""
    try:
        from torch._dynamo.exc import exceptions_allowed_to_be_fallback
        if not isinstance(e, exceptions_allowed_to_be_fallback):
            return False
        from torch._dynamo.symbolic_convert import InstructionTranslator
        tx = InstructionTranslator.current_tx()
        return tx is not None and not tx.output.has_user_defined_allowed_in_graph
    except Exception:  # noqa: BLE001 - internal API moved: keep the boundary's fallback
        return False


def _label(gm) -> str:
    try:
        from ..graph.hashing import graph_hash
        return graph_hash(gm.graph)
    except Exception:  # noqa: BLE001 - a name for the log line only
        return "?"


def _captured_fallback(gm, example_inputs, opts):
    """Dynamo's graph on the fallback, where capture to ATen failed."""
    if opts.fallback == "inductor":
        try:
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs)
        except Exception as e:  # noqa: BLE001 - then eagerly
            logger.debug("inductor fallback failed too (%s: %s): running eagerly",
                         type(e).__name__, e)
    return gm.forward


def _compile(gm: torch.fx.GraphModule, example_inputs, opts: Options):
    if _needs_autograd(example_inputs):
        if opts.training == "inductor":
            logger.info("graph needs autograd: compiled by inductor (cudal1 searches inference "
                        "graphs only)")
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs)
        logger.info("graph needs autograd: running eagerly (cudal1 searches inference graphs only)")
        return gm.forward

    from torch._functorch import aot_autograd

    from .graph_runner import GraphRunner

    runners: list = []

    def fw_compiler(aten_gm, aten_inputs):
        passthrough = _aot_wrapper_is_identity(aten_gm, example_inputs)
        same_inputs = passthrough or _aot_wrapper_is_identity(aten_gm, example_inputs,
                                                              tensors_only=False)
        runner = GraphRunner(aten_gm, aten_inputs, opts)
        runner.passthrough = passthrough
        runner.same_inputs = same_inputs
        runners.append(runner)
        return runner

    compiled = aot_autograd.aot_module_simplified(gm, example_inputs, fw_compiler=fw_compiler)
    if len(runners) == 1 and runners[0].same_inputs and runners[0].wants_inductor_for_every_size():
        _build_inductor(runners[0], gm, example_inputs)
    if len(runners) == 1 and runners[0].passthrough:
        # AOT's runtime wrapper has nothing to do for this graph (no input mutations, no aliased
        # outputs, no subclasses, inputs in Dynamo's order): call the runner directly and save
        # its per-call cost.
        runner = runners[0]
        runner.dynamo_gm = gm   # its inputs are the runner's: the arbiter may serve it instead
        compiled = lambda *args: runner(args)   # noqa: E731
    served = _dynamo_graph_behind(compiled, gm, opts)
    served.runner = runners[0] if runners else None
    return served


def _dynamo_graph_behind(compiled, gm: torch.fx.GraphModule, opts):
    """``compiled`` with Dynamo's own graph behind it. The ATen graph that aot_autograd traced
    can itself fail where your code does not (a ``reshape`` traced as a ``view`` on strides that
    differ at run time: PatchTST's patching, which fails under ``aot_eager`` too, not under
    inductor). Where a call raises and ``gm``, Dynamo's graph of your code run eagerly, answers
    the same inputs, one warning says so and ``gm`` serves every later call; where ``gm``
    raises too, its error (eager's own) propagates. The ATen graph is functional (AOT's wrapper
    writes input mutations back after it returns), so a call that raised changed no input."""
    eager = gm.forward      # one bound method: ``is`` tells it apart from ``compiled``
    state = {"fn": compiled}

    def call(*args):
        fn = state["fn"]
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - the boundary's serve stage
            if fn is eager or opts.strict:
                raise
            failed = e
        out = eager(*args)      # outside the handler: the user's own error propagates alone
        state["fn"] = eager
        from .fallback import report
        report("serve", failed, opts, graph=_label(gm),
               instead="Dynamo's graph of your code eagerly")
        return out
    return call


def _build_inductor(runner, gm, example_inputs) -> None:
    """Inductor's code for a dynamic graph, built here where Dynamo's example inputs carry the
    symbolic sizes (after the runner's own capture: inductor's passes rewrite ``gm`` in place);
    the runner's inputs are Dynamo's (``same_inputs``), so it calls the build with its own.
    Failing, sizes not searched are served eagerly (debug log: nothing is lost but speed)."""
    from .fallback import inductor_dynamic
    try:
        runner.set_inductor(inductor_dynamic(gm, example_inputs, len(example_inputs)))
    except Exception as e:  # noqa: BLE001 - an optimisation of the fallback
        logger.debug("inductor with dynamic shapes failed for graph %s (%s: %s)",
                     runner.graph_id[:12], type(e).__name__, e)


def _aot_wrapper_is_identity(aten_gm, example_inputs, tensors_only: bool = True) -> bool:
    """AOT's runtime wrapper passes Dynamo's inputs to the ATen graph as they are, and its
    outputs back as they are. ``tensors_only``: and every input is a tensor (the sizes of a
    dynamic graph are inputs too; without it they may be, the order and count being the same)."""
    from torch._guards import TracingContext
    try:
        from torch._functorch._aot_autograd.schemas import SubclassCreationMeta
        ctx = TracingContext.try_get()
        meta = ctx.fw_metadata if ctx is not None else None
        if meta is None:
            return False
        placeholders = [n for n in aten_gm.graph.nodes if n.op == "placeholder"]
        outputs = next(n for n in aten_gm.graph.nodes if n.op == "output").args[0]
        return (meta.num_mutated_inp_runtime_indices == 0 and meta.num_outputs_aliased == 0
                and meta.num_unsafe_view_outputs == 0 and not meta.is_rng_op_functionalized
                and not getattr(meta, "tokens", None)
                and not any(isinstance(m, SubclassCreationMeta) for m in meta.subclass_inp_meta)
                and len(placeholders) == len(example_inputs)
                and meta.num_forward == len(outputs)
                and (not tensors_only
                     or all(isinstance(x, torch.Tensor) for x in example_inputs)))
    except Exception:  # noqa: BLE001 - internal API moved: keep AOT's wrapper
        return False
