"""Triton templates the built-in engine offers where they can beat inductor's own code: each
registers a ``torch.ops.cudal1`` operator (with a fake implementation, so graphs holding it trace,
and an ATen fallback off the GPU), and a rewrite (``rewrites/``) puts it in a candidate's graph.
A candidate whose graph holds one imports this package first (``graph.trace.render_graph_fn``)."""
from . import attention_tf32  # noqa: F401 - registers torch.ops.cudal1.attention_tf32
from . import long_row_norm  # noqa: F401 - registers torch.ops.cudal1.long_row_{layer,group}_norm
