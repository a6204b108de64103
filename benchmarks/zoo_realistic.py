"""The zoo's models at the sizes they are served at (``benchmarks/zoo.py --size realistic``):
the published configurations of the models the entries stand for, random weights, a serving
batch. Keyed by the entry names of ``benchmarks/zoo_models.py``, whose ``call``/``compare`` they
share; an entry without a builder here is left out at this size.
"""
from __future__ import annotations

import torch
from torch import nn

from benchmarks.zoo_models import MHA, ControlFlow, EncoderBF16, RNNCells, RNNModules


def _ids(batch: int, length: int, vocab: int):
    return torch.randint(3, vocab, (batch, length))


def gpt2():   # GPT-2 small (124M): GPT2Config's defaults
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config()).eval(), (_ids(8, 128, 50257),)


def bert():   # bert-base-uncased
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    mask = torch.ones(8, 128, dtype=torch.long)
    mask[1, 100:] = 0
    return BertForMaskedLM(BertConfig()).eval(), {"input_ids": _ids(8, 128, 30522),
                                                  "attention_mask": mask}


def t5_generate():   # t5-small: T5Config's defaults; 16 new tokens
    from transformers import T5Config, T5ForConditionalGeneration
    torch.manual_seed(0)
    m = T5ForConditionalGeneration(T5Config(decoder_start_token_id=0, pad_token_id=0,
                                            eos_token_id=1)).eval()
    return m, {"input_ids": _ids(4, 64, 32128), "max_new_tokens": 16, "min_new_tokens": 16,
               "do_sample": False}


def _llama_config():   # meta-llama/Llama-3.2-1B's shape
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                       num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                       max_position_embeddings=2048, rope_theta=500000.0, tie_word_embeddings=True)


def llama():
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    return LlamaForCausalLM(_llama_config()).eval(), (_ids(4, 256, 128256),)


def llama_bf16():
    m, inputs = llama()
    return m.to(torch.bfloat16), inputs


def vit_hf():   # google/vit-base-patch16-224: ViTConfig's defaults
    from transformers import ViTConfig, ViTForImageClassification
    torch.manual_seed(0)
    return ViTForImageClassification(ViTConfig(num_labels=1000)).eval(), \
        (torch.randn(16, 3, 224, 224),)


def whisper_encoder():   # openai/whisper-base's encoder: 30 s of 80 mel bins
    from transformers import WhisperConfig, WhisperModel
    torch.manual_seed(0)
    m = WhisperModel(WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                   decoder_layers=6, decoder_attention_heads=8,
                                   encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                                   num_mel_bins=80)).get_encoder()
    return m.eval(), (torch.randn(4, 80, 3000),)


def _tv(fn_name: str, batch: int = 32, size: int = 224):
    def build():
        import torchvision
        torch.manual_seed(0)
        return getattr(torchvision.models, fn_name)().eval(), (torch.randn(batch, 3, size, size),)
    return build


def mha():   # a transformer's self-attention: 1024 wide, 16 heads, 512 positions
    torch.manual_seed(0)
    m = MHA()
    m.attn = nn.MultiheadAttention(1024, 16, batch_first=True)
    m.norm = nn.LayerNorm(1024)
    pad = torch.zeros(8, 512, dtype=torch.bool)
    pad[1, 400:] = True
    return m.eval(), (torch.randn(8, 512, 1024), pad)


def rnn_cells():   # the pattern's own widths (its forward fixes them), a serving batch
    torch.manual_seed(0)
    return RNNCells().eval(), (torch.randint(0, 100, (256, 64)),)


def rnn_modules():
    torch.manual_seed(0)
    return RNNModules().eval(), (torch.randn(256, 128, 16),)


def control_flow():
    torch.manual_seed(0)
    m = ControlFlow()
    m.layers = nn.ModuleList(nn.Linear(1024, 1024) for _ in range(3))
    m.out = nn.Linear(1024, 4)
    return m.eval(), (torch.randn(256, 1024),)


def encoder_bf16():   # a BERT-large-sized encoder layer
    torch.manual_seed(0)
    m = EncoderBF16()
    m.layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, norm_first=True)
    return m.eval().to(torch.bfloat16), (torch.randn(8, 512, 1024, dtype=torch.bfloat16),)


REALISTIC = {
    "gpt2": gpt2, "bert": bert, "t5_generate": t5_generate, "llama": llama,
    "llama_bf16": llama_bf16, "vit_hf": vit_hf, "whisper_encoder": whisper_encoder,
    "resnet18": _tv("resnet18"), "resnet50": _tv("resnet50"),
    "mobilenet_v3_large": _tv("mobilenet_v3_large"), "vit_tv": _tv("vit_b_16", batch=16),
    "convnext_tv": _tv("convnext_tiny"), "efficientnet_b0": _tv("efficientnet_b0"),
    "mha": mha, "rnn_cells": rnn_cells, "rnn_modules": rnn_modules,
    "control_flow": control_flow, "encoder_bf16": encoder_bf16,
}
