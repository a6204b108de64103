"""The embedded default job: a real ``torch.compile(model, backend="cudal1")`` on a small
transformer-style model. Needs no GPU, no LLM server and no network.

Run it twice: the first process searches (baselines, built-in engine, verification, timing) and
writes a cache entry; the second one loads the winner from the cache and searches nothing.
"""
from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn as nn


class TinyBlock(nn.Module):
    """Pre-norm attention + MLP block with a classifier head: the shape of real serving models."""

    def __init__(self, dim: int = 64, heads: int = 4, classes: int = 10):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(0.1),
                                 nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.norm2(x))
        return self.head(x.mean(dim=1))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    args = p.parse_args(argv)

    torch.manual_seed(0)
    model = TinyBlock().to(args.device).eval()
    x = torch.randn(args.batch, args.seq, 64, device=args.device)
    compiled = torch.compile(model, backend="cudal1")
    t0 = time.perf_counter()
    with torch.no_grad():
        out = compiled(x)
        first_s = time.perf_counter() - t0
        expected = model(x)
        err = (out - expected).abs().max().item()
        x2 = torch.randn_like(x)
        err2 = (compiled(x2) - model(x2)).abs().max().item()
    import torch_cudal1
    stats = torch_cudal1.stats()
    ok = err < 1e-4 and err2 < 1e-4
    print(f"first call {first_s:.1f} s; max |compiled - eager| = {max(err, err2):.2e} "
          f"({'OK' if ok else 'MISMATCH'}); cache hits {stats.get('cache_hits', 0)}, "
          f"searches {stats.get('searches', 0)}")
    if args.json:
        print(json.dumps({"ok": ok, "max_error": max(err, err2), "first_call_s": first_s, **stats}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
