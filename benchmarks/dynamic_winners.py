"""What a decoder compiled with ``dynamic=True`` is served once its size has been searched: the
winner the background search cached for the size, and its speedup over eager as that search
measured it. Tiny transformers configurations (random weights, batch 2, 16 tokens) on the CPU;
``mode`` is the product's default, so the size is served by the shape-generic implementation
until the background worker's winner is swapped in.

    PYTHONPATH=. python3 benchmarks/dynamic_winners.py [--models gpt2,llama] [--out DIR]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402


def build(name: str):
    import transformers as tf
    tf.utils.logging.set_verbosity_error()
    torch.manual_seed(0)
    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=128)
        return tf.GPT2LMHeadModel(cfg).eval()
    cfg = tf.LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=128)
    return tf.LlamaForCausalLM(cfg).eval()


def measure(name: str, wait_s: float) -> dict:
    import torch_cudal1
    from torch_cudal1.cache.store import CacheStore
    cache = tempfile.mkdtemp(prefix="cudal1-dynamic-")
    model = build(name)
    compiled = torch.compile(model, backend="cudal1", dynamic=True,
                             options={"cache_dir": cache, "rounds": 0, "trials": 1})
    ids = torch.randint(0, 1000, (2, 16))
    with torch.no_grad():
        want = model(ids).logits
        for _ in range(3):      # the second call of a size starts its background search
            compiled(ids)
        swaps = torch_cudal1.stats().get("async_swaps", 0)   # the process's count so far
        end = time.monotonic() + wait_s
        while time.monotonic() < end and torch_cudal1.stats().get("async_swaps", 0) == swaps:
            time.sleep(2)
            compiled(ids)
        err = (compiled(ids).logits - want).abs().max().item()
    store = CacheStore(Path(cache))
    rows = []
    for key in store.keys():
        w = store.load(key).meta["winner"]
        rows.append({"origin": w["origin"], "speedup_vs_eager": w["speedup_vs_eager"]})
    return {"model": name, "max_abs_err": err, "winners": rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="gpt2,llama")
    p.add_argument("--wait-s", type=float, default=240.0)
    p.add_argument("--out")
    a = p.parse_args()
    lines = ["| model | winner cached for the size | x eager (its search) | max abs error vs eager |",
             "|---|---|---|---|"]
    for name in a.models.split(","):
        r = measure(name, a.wait_s)
        for w in r["winners"] or [{"origin": "none cached", "speedup_vs_eager": None}]:
            sp = w["speedup_vs_eager"]
            lines.append(f"| {name} | {w['origin']} | {sp:.2f} | {r['max_abs_err']:.1e} |" if sp
                         else f"| {name} | {w['origin']} | - | {r['max_abs_err']:.1e} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "dynamic_winners.md").write_text(text)


if __name__ == "__main__":
    main()
