"""Recipe: a GPT-2 decoder (transformers, from a config with random weights: no download),
prefill at several batch sizes.

    cudal1 warm cache/recipes/gpt2.py --device cuda
"""
import torch

DYNAMIC = None
SHAPES = ((1, 64), (4, 64), (16, 64))


def _gpt2():
    from transformers import GPT2Config, GPT2Model
    torch.manual_seed(0)
    cfg = GPT2Config(n_embd=256, n_layer=4, n_head=4, n_positions=256, vocab_size=50257)
    model = GPT2Model(cfg).eval()
    model.config.use_cache = False
    return model


def _inputs(batch, seq):
    def make():
        g = torch.Generator().manual_seed(batch * 1000 + seq)
        return (torch.randint(0, 50257, (batch, seq), generator=g),)
    return make


def models():
    try:
        import transformers  # noqa: F401
    except ImportError:
        return
    yield "gpt2_small", _gpt2, [_inputs(b, s) for b, s in SHAPES]
