"""float32 matrix products on TF32 tensor cores, as built-in candidates.

By default PyTorch runs float32 matrix products in full float32 (``float32_matmul_precision``
``highest``), on the GPU's SIMT units: on an H200 about 50 TFLOP/s against several hundred on its
tensor cores in TF32, which keeps float32's range and rounds the products' inputs to 10 mantissa
bits. The norm-relative error that costs a product is about 3e-4, under the verifier's float32
tolerance (1e-3, ``verify/compare.py``); whether a whole graph stays under it (errors add up
through deep stacks of products) is the verifier's call on fresh inputs, like any candidate's.
The reference is always run at the harness's own precision, so the tolerance does not loosen.

The wrapper sets ``float32_matmul_precision("high")`` for the wrapped module's call only and puts
every precision setting back exactly afterwards (``global_settings.tf32_on`` / ``tf32_off``: a winner never
changes the precision of the rest of the user's program, and the verifier refuses code whose calls
leave a setting changed). Where the caller already allows TF32 or looser, or has mixed PyTorch's
legacy and per-backend precision APIs, it leaves the settings alone.
Inductor compiles under the flag it is called with (its Triton templates then use TF32 too);
CUDA-graph replay of this candidate replays the captured TF32 kernels without touching flags.

Convolutions are not concerned: cuDNN's TF32 (``torch.backends.cudnn.allow_tf32``) is on by
default already, and the reference runs with it.

Option ``tf32``: ``auto`` (on a GPU, for graphs with float32 matrix products) | ``on`` | ``off``.
"""
from __future__ import annotations

import torch

from . import switched
from .switched import auto_on_gpu, op_name

# ATen matrix products that cuBLAS runs, before and after decomposition
_PRODUCTS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "_addmm_activation",
             "einsum", "tensordot", "_scaled_dot_product_attention_math",
             # fused attention: in TF32 through the template (rewrites/attention_tf32.py)
             "scaled_dot_product_attention", "_scaled_dot_product_efficient_attention"}



def has_fp32_products(gm: torch.fx.GraphModule) -> bool:
    """True when the graph has a matrix product with a float32 result."""
    for node in gm.graph.nodes:
        if op_name(node) not in _PRODUCTS:
            continue
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        if any(isinstance(v, torch.Tensor) and v.dtype == torch.float32 for v in vals):
            return True
    return False


def enabled(setting: str, device: str, products: bool) -> bool:
    """``auto``: on a GPU, for graphs with float32 matrix products, where the user's
    ``float32_matmul_precision`` allows TF32 (``"high"`` or ``"medium"``); ``on``: always."""
    import torch
    if setting == "auto" and torch.get_float32_matmul_precision() == "highest":
        return False
    return auto_on_gpu(setting, device, products)


def wrap(source: str, doc: str = "float32 matrix products on TF32 tensor cores") -> str:
    """``source`` (defining ModelNew) with ModelNew's calls run under TF32 matrix products."""
    return switched.wrap(source, tag="tf32", title="float32 matrix products on TF32 tensor cores",
                         doc=doc, on="tf32_on", off="tf32_off")
