"""Recipe: a BERT encoder (transformers, built from a config with random weights: no download)
served at two batch sizes and two sequence lengths.

    cudal1 warm cache/recipes/bert.py --device cuda
"""
import torch

DYNAMIC = None
SHAPES = ((1, 128), (8, 128), (8, 256))


def _bert():
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                     intermediate_size=1024, vocab_size=30522, max_position_embeddings=512)
    return BertModel(cfg).eval()


def _inputs(batch, seq):
    def make():
        g = torch.Generator().manual_seed(batch * 1000 + seq)
        ids = torch.randint(0, 30522, (batch, seq), generator=g)
        return (ids, torch.ones(batch, seq, dtype=torch.long))
    return make


def models():
    try:
        import transformers  # noqa: F401
    except ImportError:
        return
    yield "bert_small", _bert, [_inputs(b, s) for b, s in SHAPES]
