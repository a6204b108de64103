"""CUDA-graph replay around any ModelNew source (its own, a baseline's, a rewritten graph's).

Launch-bound graphs spend their time in the CPU issuing kernels; replaying a captured
``torch.cuda.CUDAGraph`` issues them all at once. The wrapper keeps static input buffers, copies
each call's inputs in, replays, and returns fresh clones of the outputs (the static outputs are
overwritten by the next replay, so handing them out would alias results across calls). Tensors
the caller passes identically call after call (weights, after AOT autograd) are read in place
instead of copied (``graph_inputs.py``). It re-captures when input shapes, strides, dtypes,
devices or non-tensor values change, or when a tensor it read in place is replaced, and runs the
wrapped module directly off the GPU or when autograd is recording. Its buffers are normal
tensors whichever autograd context captured it (``no_grad`` or ``inference_mode``), so that a
serving loop may switch between the two.

A capture starts and ends with cuBLAS's cached workspaces emptied (as cudagraph trees do around
their own recordings), so that the workspace a graph's matrix products use is allocated during
its capture, in its own memory pool. Otherwise the graph bakes in a workspace that cuBLAS owns,
and code that empties those caches (the trees, on every warm-up and recording) leaves the replay
reading freed memory: processes holding both died with ``unspecified launch failure`` on
transformer blocks (``benchmarks/cudagraph_coexist.py``, ``benchmarks/results/cudagraph_coexist/``).
"""
from __future__ import annotations

WRAPPER = '''

# --- cudal1 built-in: CUDA-graph replay of the ModelNew above -------------------------------
import torch as _cudal1_torch  # noqa: E402
import torch.utils._pytree as _cudal1_cg_pytree  # noqa: E402
{input_plan}

_Cudal1GraphInner = ModelNew


def _cudal1_clear_cublas():
    clear = getattr(_cudal1_torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()


class ModelNew(_cudal1_torch.nn.Module):
    """cudal1 built-in: {doc}"""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.inner = _Cudal1GraphInner(*args, **kwargs)
        self._cg = None
        self._plan = _Cudal1InputPlan()

    @staticmethod
    def _sig(inputs, indices):
        # per call, so kept cheap: torch.Size compares as it is (no tuple() copy)
        return [(x.shape, x.stride(), x.dtype, x.device) if isinstance(x, _cudal1_torch.Tensor)
                else ("=", type(x).__name__, repr(x)) for x in [inputs[i] for i in indices]]

    def _grad_needed(self):
        return _cudal1_torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters())

    def _capture(self, inputs):
        # Static buffers made under inference_mode would be inference tensors, which a later
        # call outside it (no_grad) may not copy into: they are made as normal tensors (a
        # normal tensor may be written inside inference_mode), with autograd still off.
        with _cudal1_torch.inference_mode(False), _cudal1_torch.no_grad():
            self._capture_now(inputs)

    def _capture_now(self, inputs):
        self._cg = None
        hold = self._plan.plan(inputs, lambda x: isinstance(x, _cudal1_torch.Tensor))
        static = [x if i in hold or not isinstance(x, _cudal1_torch.Tensor) else x.clone()
                  for i, x in enumerate(inputs)]
        stream = _cudal1_torch.cuda.Stream()
        stream.wait_stream(_cudal1_torch.cuda.current_stream())
        with _cudal1_torch.cuda.stream(stream):
            for _ in range(3):   # warm-up: lazy init, autotuning, workspace allocation
                self.inner(*static)
        _cudal1_torch.cuda.current_stream().wait_stream(stream)
        graph = _cudal1_torch.cuda.CUDAGraph()
        # cuBLAS keeps one workspace per stream, outside any graph's memory, and a capture bakes
        # its address in; torch.compile's cudagraph trees free those workspaces whenever they
        # warm up or record. Emptied before the capture, the workspace is allocated inside it,
        # in this graph's own pool; emptied after, nothing else shares it.
        _cudal1_torch.cuda.synchronize()   # the warm-up's products are done with the old ones
        _cudal1_clear_cublas()
        try:
            with _cudal1_torch.cuda.graph(graph):
                out = self.inner(*static)
        finally:
            _cudal1_clear_cublas()
        leaves, spec = _cudal1_cg_pytree.tree_flatten(out)
        if isinstance(out, _cudal1_torch.Tensor) and type(out) is _cudal1_torch.Tensor:
            spec = None
        copied = self._plan.copied
        self._cg = (graph, static, leaves, spec, len(inputs), self._sig(inputs, copied), copied)

    def _replay(self, inputs):
        graph, static, leaves, spec, _, _, copied = self._cg
        for i in copied:
            s = static[i]
            if isinstance(s, _cudal1_torch.Tensor):
                s.copy_(inputs[i])
        graph.replay()
        if spec is None:   # one tensor out: no pytree on the per-call path
            return leaves[0].clone()
        fresh = [x.clone() if isinstance(x, _cudal1_torch.Tensor) else x for x in leaves]
        return _cudal1_cg_pytree.tree_unflatten(fresh, spec)

    def forward(self, *inputs):
        cg, plan = self._cg, self._plan
        if (cg is not None and len(inputs) == cg[4]
                and (not plan.wants_second_look() or plan.nothing_to_hold(inputs))
                and plan.held_match(inputs) and self._sig(inputs, cg[6]) == cg[5]
                and not self._grad_needed()):
            return self._replay(inputs)
        tensors = [x for x in inputs if isinstance(x, _cudal1_torch.Tensor)]
        if not tensors or any(not x.is_cuda for x in tensors) or self._grad_needed():
            return self.inner(*inputs)
        if cg is not None and len(inputs) == cg[4] and not plan.held_match(inputs):
            plan.demote_changed(inputs)   # a tensor it read in place was replaced: copy it now
        self._capture(inputs)
        return self._replay(inputs)
'''


def _input_plan_source() -> str:
    from pathlib import Path
    src = (Path(__file__).with_name("graph_inputs.py")).read_text()
    return src.replace("class InputPlan", "class _Cudal1InputPlan")


def wrap(source: str, doc: str = "CUDA-graph replay") -> str:
    """``source`` (defining ModelNew with zero-argument ``super()``) with ModelNew wrapped."""
    return source.rstrip() + "\n" + WRAPPER.replace("{doc}", doc).replace(
        "{input_plan}", _input_plan_source())
