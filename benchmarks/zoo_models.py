"""A zoo of real models for ``backend="cudal1"``: tiny configurations, random weights, nothing
downloaded.

Each entry stands for a model of PyTorch's own Dynamo benchmark suites (``benchmarks/dynamo`` in
PyTorch: ``huggingface_models_list.txt``, ``timm_models_list.txt``, ``torchbench.yaml``; the
TorchBench vision models are torchvision's) built from its library at a small size, or for a
pattern the backend must serve (nn.MultiheadAttention, RNNs, Python control flow with graph
breaks, bf16). ``ci=True`` entries run in CI (``tests/test_zoo.py``); every entry runs in
``benchmarks/zoo.py``, which compares cudal1 with inductor on the same list.

An entry is called the way a user calls the model: ``model(*args)`` / ``model(**kwargs)``, or,
for ``run="generate"``, ``model.generate(**kwargs)`` with the model's ``forward`` compiled (how
Hugging Face documents ``torch.compile`` for generation).
"""
from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn


@dataclass(frozen=True)
class Entry:
    name: str
    suite: str                     # huggingface | timm | torchbench | patterns
    anchor: str                    # the suite's model this stands for
    needs: str                     # the package that builds it ("" for torch alone)
    build: Callable                # () -> (model in eval mode, inputs: tuple or dict)
    run: str = "call"              # call | generate
    dtype: str = "fp32"
    ci: bool = False               # in the CI zoo
    new_sizes: bool = False        # its calls meet new sizes (generation): some are served by the
                                   # shape-generic implementation, not from a cached search
    graphs: bool = True            # Dynamo captures graphs of it (False: it runs the frame eagerly)

    def available(self) -> bool:
        return not self.needs or importlib.util.find_spec(self.needs) is not None


def compile_entry(entry: Entry, model: nn.Module, backend: str, options: dict | None = None):
    """``torch.compile`` of what the entry's calls go through: the module, or for generation
    its ``forward``."""
    target = model.forward if entry.run == "generate" else model
    return torch.compile(target, backend=backend, options=options)


def call(entry: Entry, model: nn.Module, inputs, compiled=None):
    """One use of the model: eagerly, or through ``compiled`` (``compile_entry``'s result)."""
    if entry.run == "generate":
        if compiled is not None:
            model.forward = compiled
        try:
            return model.generate(**inputs)
        finally:
            if compiled is not None:
                del model.forward        # the class's forward again
    fn = model if compiled is None else compiled
    return fn(**inputs) if isinstance(inputs, dict) else fn(*inputs)


def flatten(x) -> list:
    """The tensors of a model's output: tensors, tuples, dicts and ModelOutputs, and the keys and
    values of Hugging Face caches."""
    if isinstance(x, torch.Tensor):
        return [x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return []
    if hasattr(x, "self_attention_cache"):            # EncoderDecoderCache
        return flatten(x.self_attention_cache) + flatten(x.cross_attention_cache)
    if hasattr(x, "layers") and hasattr(x, "get_seq_length"):   # DynamicCache and kin
        return [t for layer in x.layers for t in (getattr(layer, "keys", None),
                                                   getattr(layer, "values", None))
                if isinstance(t, torch.Tensor)]
    if isinstance(x, Mapping):
        return [t for v in x.values() for t in flatten(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in flatten(v)]
    return []


TOLERANCE = {"fp32": 1e-4, "bf16": 3e-2, "fp32-tf32-conv": 1e-3}


def compare(expected, got, dtype: str = "fp32") -> tuple[bool, float, str]:
    """(equal within the dtype's tolerance, the largest error relative to the output's scale,
    what differs). Integer outputs (generated tokens) must be equal."""
    a, b = flatten(expected), flatten(got)
    if len(a) != len(b):
        return False, float("inf"), f"{len(b)} output tensors, eager gives {len(a)}"
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, float("inf"), (f"output {i}: {tuple(y.shape)} {y.dtype}, eager "
                                          f"{tuple(x.shape)} {x.dtype}")
        if not (x.is_floating_point() or x.is_complex()):
            if not torch.equal(x, y):
                return False, float("inf"), f"output {i}: integer values differ"
            continue
        if x.numel() == 0:
            continue
        xd, yd = x.detach().double(), y.detach().double()
        if not torch.equal(torch.isfinite(xd), torch.isfinite(yd)):
            return False, float("inf"), f"output {i}: non-finite values differ"
        fin = torch.isfinite(xd)
        scale = max(1.0, xd[fin].abs().max().item()) if fin.any() else 1.0
        err = (xd[fin] - yd[fin]).abs().max().item() / scale if fin.any() else 0.0
        worst = max(worst, err)
    tol = TOLERANCE[dtype]
    if dtype == "fp32" and a and a[0].is_cuda and torch.backends.cudnn.allow_tf32:
        # PyTorch's default: eager's own convolutions run on TF32 there, whatever the matmul
        # precision, so a compiled model that picks another cuDNN algorithm differs by that much
        tol = max(tol, TOLERANCE["fp32-tf32-conv"])
    ok = worst <= tol
    return ok, worst, "" if ok else f"max error {worst:.3g} of the output's scale"


# ---------------------------------------------------------------- Hugging Face (transformers)

def _ids(batch: int, length: int, vocab: int = 1000):
    return torch.randint(3, vocab, (batch, length))


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000,
                                   n_positions=128))
    return m.eval(), (_ids(2, 32),)          # called plainly: use_cache and its DynamicCache


def bert():
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    m = BertForMaskedLM(BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, intermediate_size=128,
                                   max_position_embeddings=128))
    mask = torch.ones(2, 24, dtype=torch.long)
    mask[1, 18:] = 0
    return m.eval(), {"input_ids": _ids(2, 24), "attention_mask": mask}


def t5_generate():
    from transformers import T5Config, T5ForConditionalGeneration
    torch.manual_seed(0)
    m = T5ForConditionalGeneration(T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128,
                                            num_layers=2, num_decoder_layers=2, num_heads=4,
                                            decoder_start_token_id=0, pad_token_id=0,
                                            eos_token_id=1))
    return m.eval(), {"input_ids": _ids(2, 12), "max_new_tokens": 4, "min_new_tokens": 4,
                      "do_sample": False}


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    m = LlamaForCausalLM(LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128,
                                     num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, max_position_embeddings=128))
    return m.eval(), (_ids(2, 16),)


def vit_hf():
    from transformers import ViTConfig, ViTForImageClassification
    torch.manual_seed(0)
    m = ViTForImageClassification(ViTConfig(image_size=32, patch_size=8, hidden_size=64,
                                            num_hidden_layers=2, num_attention_heads=4,
                                            intermediate_size=128, num_labels=10))
    return m.eval(), (torch.randn(2, 3, 32, 32),)


def whisper_encoder():
    from transformers import WhisperConfig, WhisperModel
    torch.manual_seed(0)
    m = WhisperModel(WhisperConfig(vocab_size=1000, num_mel_bins=16, d_model=64,
                                   encoder_layers=2, encoder_attention_heads=4, decoder_layers=2,
                                   decoder_attention_heads=4, encoder_ffn_dim=128,
                                   decoder_ffn_dim=128, max_source_positions=16,
                                   max_target_positions=32, pad_token_id=0, bos_token_id=1,
                                   eos_token_id=2, decoder_start_token_id=1)).get_encoder()
    return m.eval(), (torch.randn(2, 16, 32),)


def _hf(config_name: str, model_name: str, inputs: str = "ids", **config):
    """A transformers model from its classes' names at a tiny size."""
    def build():
        import transformers
        torch.manual_seed(0)
        cfg = getattr(transformers, config_name)(**config)
        m = getattr(transformers, model_name)(cfg).eval()
        if inputs == "ids":
            return m, (_ids(2, 16, config.get("vocab_size", 1000)),)
        if inputs == "seq2seq":
            return m, {"input_ids": _ids(2, 16), "decoder_input_ids": _ids(2, 8)}
        if inputs == "layoutlm":
            ids = _ids(2, 16)
            x0 = torch.randint(0, 500, (2, 16, 2))
            bbox = torch.cat([x0, x0 + torch.randint(1, 400, (2, 16, 2))], -1)
            return m, {"input_ids": ids, "bbox": bbox}
        if inputs == "pixels":
            size = config.get("image_size", 32)
            return m, (torch.randn(2, config.get("num_channels", 3), size, size),)
        if inputs == "audio":
            return m, (torch.randn(2, 4000),)
        if inputs == "text_image":
            mask = torch.ones(2, 16, dtype=torch.long)
            mask[1, 12:] = 0
            return m, {"input_ids": _ids(2, 16), "attention_mask": mask,
                       "pixel_values": torch.randn(2, 3, 32, 32)}
        raise ValueError(inputs)
    return build


_SMALL = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=128, max_position_embeddings=128)
_SEQ2SEQ = dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                decoder_ffn_dim=128, max_position_embeddings=64, pad_token_id=0,
                decoder_start_token_id=2)
_DECODER = dict(vocab_size=1000, d_model=64, decoder_layers=2, decoder_attention_heads=4,
                decoder_ffn_dim=128, max_position_embeddings=64, pad_token_id=0)

HF_MORE = [
    ("albert", "AlbertForMaskedLM", _hf("AlbertConfig", "AlbertForMaskedLM", embedding_size=32,
                                        **_SMALL)),
    ("distilbert", "DistilBertForMaskedLM", _hf("DistilBertConfig", "DistilBertForMaskedLM",
                                                vocab_size=1000, dim=64, n_layers=2, n_heads=4,
                                                hidden_dim=128, max_position_embeddings=128)),
    ("roberta", "RobertaForCausalLM", _hf("RobertaConfig", "RobertaForCausalLM", is_decoder=True,
                                          pad_token_id=1, **_SMALL)),
    ("electra", "ElectraForCausalLM", _hf("ElectraConfig", "ElectraForCausalLM", is_decoder=True,
                                          embedding_size=32, **_SMALL)),
    ("camembert", "CamemBert", _hf("CamembertConfig", "CamembertForMaskedLM", pad_token_id=1,
                                   **_SMALL)),
    ("mobilebert", "MobileBertForMaskedLM", _hf("MobileBertConfig", "MobileBertForMaskedLM",
                                                embedding_size=32, intra_bottleneck_size=32,
                                                true_hidden_size=32, num_feedforward_networks=2,
                                                **_SMALL)),
    ("megatron_bert", "MegatronBertForCausalLM", _hf("MegatronBertConfig",
                                                     "MegatronBertForCausalLM", is_decoder=True,
                                                     **_SMALL)),
    ("layoutlm", "LayoutLMForMaskedLM", _hf("LayoutLMConfig", "LayoutLMForMaskedLM", "layoutlm",
                                            max_2d_position_embeddings=1024, **_SMALL)),
    ("deberta_v2", "DebertaV2ForMaskedLM", _hf("DebertaV2Config", "DebertaV2ForMaskedLM",
                                               **_SMALL)),
    ("convbert", "YituTechConvBert", _hf("ConvBertConfig", "ConvBertForMaskedLM",
                                         embedding_size=64, **_SMALL)),
    ("fnet", "GoogleFnet", _hf("FNetConfig", "FNetForMaskedLM", vocab_size=1000, hidden_size=64,
                               num_hidden_layers=2, intermediate_size=128,
                               max_position_embeddings=128)),
    ("gpt2_seqcls", "GPT2ForSequenceClassification", _hf("GPT2Config",
                                                         "GPT2ForSequenceClassification",
                                                         vocab_size=1000, n_embd=64, n_layer=2,
                                                         n_head=4, n_positions=128,
                                                         pad_token_id=0, num_labels=3)),
    ("gpt_neo", "GPTNeoForCausalLM", _hf("GPTNeoConfig", "GPTNeoForCausalLM", vocab_size=1000,
                                         hidden_size=64, num_layers=2, num_heads=4,
                                         attention_types=[[["global", "local"], 1]],
                                         window_size=8, max_position_embeddings=128)),
    ("gptj", "GPTJForCausalLM", _hf("GPTJConfig", "GPTJForCausalLM", vocab_size=1000, n_embd=64,
                                    n_layer=2, n_head=4, rotary_dim=8, n_positions=128)),
    ("opt", "OPTForCausalLM", _hf("OPTConfig", "OPTForCausalLM", vocab_size=1000, hidden_size=64,
                                  num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                                  word_embed_proj_dim=64, max_position_embeddings=128)),
    ("xglm", "XGLMForCausalLM", _hf("XGLMConfig", "XGLMForCausalLM", vocab_size=1000, d_model=64,
                                    num_layers=2, attention_heads=4, ffn_dim=128,
                                    max_position_embeddings=128)),
    ("qwen3", "Qwen/Qwen3-0.6B", _hf("Qwen3Config", "Qwen3ForCausalLM", vocab_size=1000,
                                     hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                     max_position_embeddings=128)),
    ("mistral", "mistralai/Mistral-7B-Instruct-v0.3", _hf("MistralConfig", "MistralForCausalLM",
                                                          vocab_size=1000, hidden_size=64,
                                                          intermediate_size=128,
                                                          num_hidden_layers=2,
                                                          num_attention_heads=4,
                                                          num_key_value_heads=2,
                                                          max_position_embeddings=128)),
    ("gemma2", "google/gemma-2-2b", _hf("Gemma2Config", "Gemma2ForCausalLM", vocab_size=1000,
                                        hidden_size=64, intermediate_size=128,
                                        num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, head_dim=16,
                                        max_position_embeddings=128)),
    ("bart", "BartForConditionalGeneration", _hf("BartConfig", "BartForConditionalGeneration",
                                                 "seq2seq", **_SEQ2SEQ)),
    ("mbart_causal", "MBartForCausalLM", _hf("MBartConfig", "MBartForCausalLM", **_SEQ2SEQ)),
    ("pegasus_causal", "PegasusForCausalLM", _hf("PegasusConfig", "PegasusForCausalLM",
                                                 **_SEQ2SEQ)),
    ("blenderbot_small_causal", "BlenderbotSmallForCausalLM", _hf(
        "BlenderbotSmallConfig", "BlenderbotSmallForCausalLM", **_SEQ2SEQ)),
    ("m2m100", "M2M100ForConditionalGeneration", _hf("M2M100Config",
                                                     "M2M100ForConditionalGeneration",
                                                     "seq2seq", **_SEQ2SEQ)),
    ("trocr", "TrOCRForCausalLM", _hf("TrOCRConfig", "TrOCRForCausalLM", **_DECODER)),
    ("plbart", "PLBartForCausalLM", _hf("PLBartConfig", "PLBartForCausalLM", **_SEQ2SEQ)),
    ("xlnet", "XLNetLMHeadModel", _hf("XLNetConfig", "XLNetLMHeadModel", vocab_size=1000,
                                      d_model=64, n_layer=2, n_head=4, d_inner=128)),
    ("mt5", "MT5ForConditionalGeneration", _hf("MT5Config", "MT5ForConditionalGeneration",
                                               "seq2seq", vocab_size=1000, d_model=64, d_kv=16,
                                               d_ff=128, num_layers=2, num_heads=4,
                                               decoder_start_token_id=0)),
    # mixtures of experts: routing by top-k (integer indices, scatter of expert outputs)
    ("mixtral", "mistralai/Mixtral-8x7B (MixtralForCausalLM)", _hf(
        "MixtralConfig", "MixtralForCausalLM", num_local_experts=4, num_experts_per_tok=2,
        num_key_value_heads=2, **_SMALL)),
    ("qwen2_moe", "Qwen/Qwen1.5-MoE (Qwen2MoeForCausalLM)", _hf(
        "Qwen2MoeConfig", "Qwen2MoeForCausalLM", num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, shared_expert_intermediate_size=64, num_key_value_heads=2,
        **_SMALL)),
    ("phi", "microsoft/phi-2 (PhiForCausalLM)", _hf("PhiConfig", "PhiForCausalLM",
                                                    num_key_value_heads=2, **_SMALL)),
    ("bloom", "BloomForCausalLM", _hf("BloomConfig", "BloomForCausalLM", vocab_size=1000,
                                      hidden_size=64, n_layer=2, n_head=4)),
    ("gpt_bigcode", "bigcode/starcoder (GPTBigCodeForCausalLM)", _hf(
        "GPTBigCodeConfig", "GPTBigCodeForCausalLM", vocab_size=1000, n_embd=64, n_layer=2,
        n_head=4, n_positions=128, bos_token_id=1, eos_token_id=2)),
    # vision and audio transformers, and a text-image pair
    ("swin", "microsoft/swin-tiny (SwinForImageClassification)", _hf(
        "SwinConfig", "SwinForImageClassification", "pixels", image_size=32, patch_size=4,
        embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4, num_labels=10)),
    ("beit", "microsoft/beit-base (BeitForImageClassification)", _hf(
        "BeitConfig", "BeitForImageClassification", "pixels", image_size=32, patch_size=8,
        use_relative_position_bias=True, num_labels=10, **_SMALL)),
    ("segformer", "nvidia/segformer-b0 (SegformerForSemanticSegmentation)", _hf(
        "SegformerConfig", "SegformerForSemanticSegmentation", "pixels", image_size=64,
        num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
        num_attention_heads=[1, 2], decoder_hidden_size=32, strides=[4, 2], patch_sizes=[7, 3],
        mlp_ratios=[2, 2])),
    ("wav2vec2", "facebook/wav2vec2-base (Wav2Vec2ForCTC)", _hf(
        "Wav2Vec2Config", "Wav2Vec2ForCTC", "audio", conv_dim=(32, 32), conv_stride=(5, 2),
        conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
        **dict(_SMALL, vocab_size=32))),
    ("hubert", "facebook/hubert-base (HubertModel)", _hf(
        "HubertConfig", "HubertModel", "audio", conv_dim=(32, 32), conv_stride=(5, 2),
        conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
        **_SMALL)),
    ("clip", "openai/clip-vit-base (CLIPModel)", _hf(
        "CLIPConfig", "CLIPModel", "text_image", projection_dim=32,
        text_config=dict(_SMALL, max_position_embeddings=32, bos_token_id=1, eos_token_id=2),
        vision_config=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=128, image_size=32, patch_size=8))),
]


# ---------------------------------------------------------------- torchvision (TorchBench's)

def _tv(fn_name: str, size: int = 64, batch: int = 2, **kw):
    def build():
        import torchvision
        torch.manual_seed(0)
        m = getattr(torchvision.models, fn_name)(**kw).eval()
        return m, (torch.randn(batch, 3, size, size),)
    return build


def vit_tv():
    from torchvision.models import VisionTransformer
    torch.manual_seed(0)
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                          mlp_dim=128, num_classes=10)
    return m.eval(), (torch.randn(2, 3, 32, 32),)


def convnext_tv():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    torch.manual_seed(0)
    m = ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)],
                 num_classes=10)
    return m.eval(), (torch.randn(2, 3, 64, 64),)


# ---------------------------------------------------------------- timm

def _timm(name: str, size: int = 64, **kw):
    def build():
        import timm
        torch.manual_seed(0)
        m = timm.create_model(name, pretrained=False, num_classes=10, **kw).eval()
        return m, (torch.randn(2, 3, size, size),)
    return build


# ---------------------------------------------------------------- patterns

class MHA(nn.Module):
    """nn.MultiheadAttention as models call it: self-attention with a key padding mask, the
    averaged attention weights returned too."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.norm = nn.LayerNorm(32)

    def forward(self, x, pad):
        y, w = self.attn(x, x, x, key_padding_mask=pad)
        return self.norm(x + y), w


def mha():
    torch.manual_seed(0)
    pad = torch.zeros(2, 10, dtype=torch.bool)
    pad[1, 7:] = True
    return MHA().eval(), (torch.randn(2, 10, 32), pad)


class RNNCells(nn.Module):
    """A GRU and an LSTM cell unrolled over the steps of a sequence (one graph), a classifier on
    the last state."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.gru = nn.GRUCell(16, 24)
        self.lstm = nn.LSTMCell(24, 24)
        self.head = nn.Linear(24, 5)

    def forward(self, ids):
        x = self.emb(ids)
        h = x.new_zeros(x.shape[0], 24)
        hx = cx = h
        for t in range(x.shape[1]):
            h = self.gru(x[:, t], h)
            hx, cx = self.lstm(h, (hx, cx))
        return self.head(hx), cx


def rnn_cells():
    torch.manual_seed(0)
    return RNNCells().eval(), (torch.randint(0, 100, (3, 7)),)


class RNNModules(nn.Module):
    """nn.GRU and nn.LSTM modules: Dynamo does not trace them and runs the frame eagerly."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 24, num_layers=2, batch_first=True)
        self.lstm = nn.LSTM(24, 24, batch_first=True)
        self.head = nn.Linear(24, 5)

    def forward(self, x):
        h, _ = self.gru(x)
        h, (hn, cn) = self.lstm(h)
        return self.head(h[:, -1]), hn, cn


def rnn_modules():
    torch.manual_seed(0)
    return RNNModules().eval(), (torch.randn(3, 7, 16),)


class ControlFlow(nn.Module):
    """Python control flow: a loop over layers, a branch on a Python flag, a data-dependent
    branch on a tensor's value and a ``.item()`` (both graph breaks), a print (a graph break)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))
        self.skip_last = True
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            if self.skip_last and i == len(self.layers) - 1:
                break
            x = torch.tanh(layer(x))
        if x.sum() > 0:                  # data-dependent: Dynamo breaks the graph here
            x = x * 2
        else:
            x = x - 1
        scale = float(x.abs().mean().item())
        print(end="")                    # a graph break of its own
        return self.out(x / (1.0 + scale))


def control_flow():
    torch.manual_seed(0)
    return ControlFlow().eval(), (torch.randn(4, 16),)


def llama_static_generate():
    """Generation with a static KV cache: the cache is a buffer the graph writes in place at the
    step's positions (``index_copy_``), transformers' recipe for ``torch.compile``."""
    m, (ids,) = llama()
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    return m, {"input_ids": ids, "attention_mask": mask, "max_new_tokens": 4,
               "min_new_tokens": 4, "do_sample": False, "cache_implementation": "static"}


def whisper_generate():
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    torch.manual_seed(0)
    m = WhisperForConditionalGeneration(WhisperConfig(
        vocab_size=1000, num_mel_bins=16, d_model=64, encoder_layers=2, encoder_attention_heads=4,
        decoder_layers=2, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
        max_source_positions=32, max_target_positions=64, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, decoder_start_token_id=1, suppress_tokens=[], begin_suppress_tokens=[]))
    m.generation_config.forced_decoder_ids = None
    return m.eval(), {"input_features": torch.randn(1, 16, 64), "max_new_tokens": 4,
                      "min_new_tokens": 4, "do_sample": False}


def llama_bf16():
    m, inputs = llama()
    return m.to(torch.bfloat16), inputs


class EncoderBF16(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, norm_first=True)

    def forward(self, x):
        return self.layer(x)


def encoder_bf16():
    torch.manual_seed(0)
    return EncoderBF16().eval().to(torch.bfloat16), (torch.randn(2, 12, 64, dtype=torch.bfloat16),)


ZOO: list[Entry] = [
    # the CI zoo
    Entry("gpt2", "huggingface", "DistillGPT2 (GPT2LMHeadModel, called plainly)", "transformers",
          gpt2, ci=True),
    Entry("bert", "huggingface", "BertForMaskedLM", "transformers", bert, ci=True),
    Entry("t5_generate", "huggingface", "T5ForConditionalGeneration (generate, 4 tokens)",
          "transformers", t5_generate, run="generate", ci=True, new_sizes=True),
    Entry("llama", "huggingface", "meta-llama/Llama-3.2-1B (LlamaForCausalLM)", "transformers",
          llama, ci=True),
    Entry("vit_hf", "huggingface", "ViTForImageClassification", "transformers", vit_hf, ci=True),
    Entry("whisper_encoder", "huggingface", "openai/whisper-tiny (encoder)", "transformers",
          whisper_encoder, ci=True),
    Entry("resnet18", "torchbench", "resnet18", "torchvision", _tv("resnet18", num_classes=10),
          ci=True),
    Entry("mobilenet_v3_large", "torchbench", "mobilenet_v3_large", "torchvision",
          _tv("mobilenet_v3_large", num_classes=10), ci=True),
    Entry("vit_tv", "torchbench", "timm_vision_transformer (torchvision VisionTransformer)",
          "torchvision", vit_tv, ci=True),
    Entry("convnext_tv", "torchbench", "convnext (torchvision ConvNeXt)", "torchvision",
          convnext_tv, ci=True),
    Entry("efficientnet_b0", "torchbench", "timm_efficientnet (torchvision efficientnet_b0)",
          "torchvision", _tv("efficientnet_b0", num_classes=10), ci=True),
    Entry("mha", "patterns", "nn.MultiheadAttention", "", mha, ci=True),
    Entry("rnn_cells", "patterns", "nn.GRUCell + nn.LSTMCell over a sequence", "", rnn_cells,
          ci=True),
    Entry("rnn_modules", "patterns", "nn.GRU + nn.LSTM (Dynamo runs them eagerly)", "",
          rnn_modules, ci=True, graphs=False),
    Entry("control_flow", "patterns", "Python control flow, graph breaks", "", control_flow,
          ci=True),
    Entry("llama_bf16", "patterns", "LlamaForCausalLM in bf16", "transformers", llama_bf16,
          dtype="bf16", ci=True),
    # the benchmark's wider list
    Entry("encoder_bf16", "patterns", "nn.TransformerEncoderLayer in bf16", "", encoder_bf16,
          dtype="bf16"),
    *[Entry(name, "huggingface", anchor, "transformers", build) for name, anchor, build in HF_MORE],
    Entry("llama_static_generate", "huggingface", "LlamaForCausalLM (generate, static KV cache)",
          "transformers", llama_static_generate, run="generate", new_sizes=True),
    Entry("whisper_generate", "huggingface", "openai/whisper-tiny (generate, 4 tokens)",
          "transformers", whisper_generate, run="generate", new_sizes=True),
    Entry("resnet50", "torchbench", "resnet50", "torchvision", _tv("resnet50", num_classes=10)),
    Entry("resnext50_32x4d", "torchbench", "resnext50_32x4d", "torchvision",
          _tv("resnext50_32x4d", num_classes=10)),
    Entry("mobilenet_v2", "torchbench", "mobilenet_v2", "torchvision",
          _tv("mobilenet_v2", num_classes=10)),
    Entry("alexnet", "torchbench", "alexnet", "torchvision", _tv("alexnet", size=64,
                                                                  num_classes=10)),
    Entry("vgg11", "torchbench", "vgg16 (vgg11 at this size)", "torchvision",
          _tv("vgg11", size=32, num_classes=10)),
    Entry("squeezenet1_1", "torchbench", "squeezenet1_1", "torchvision",
          _tv("squeezenet1_1", num_classes=10)),
    Entry("shufflenet_v2_x1_0", "torchbench", "shufflenet_v2_x1_0", "torchvision",
          _tv("shufflenet_v2_x1_0", num_classes=10)),
    Entry("densenet121", "torchbench", "densenet121", "torchvision",
          _tv("densenet121", num_classes=10)),
    Entry("mnasnet1_0", "torchbench", "mnasnet1_0", "torchvision",
          _tv("mnasnet1_0", num_classes=10)),
    Entry("regnet_y_400mf", "torchbench", "timm_regnet (torchvision regnet_y_400mf)",
          "torchvision", _tv("regnet_y_400mf", num_classes=10)),
    Entry("mobilenetv2_100", "timm", "mobilenetv2_100", "timm", _timm("mobilenetv2_100")),
    Entry("mobilenetv3_large_100", "timm", "mobilenetv3_large_100", "timm",
          _timm("mobilenetv3_large_100")),
    Entry("ghostnet_100", "timm", "ghostnet_100", "timm", _timm("ghostnet_100")),
    Entry("repvgg_a2", "timm", "repvgg_a2", "timm", _timm("repvgg_a2")),
    Entry("tf_efficientnet_b0", "timm", "tf_efficientnet_b0", "timm",
          _timm("tf_efficientnet_b0")),
    Entry("deit_tiny_patch16_224", "timm", "deit_tiny_patch16_224.fb_in1k", "timm",
          _timm("deit_tiny_patch16_224", img_size=64)),
    Entry("convnextv2_nano", "timm", "convnextv2_nano.fcmae_ft_in22k_in1k", "timm",
          _timm("convnextv2_nano")),
    Entry("visformer_small", "timm", "visformer_small", "timm", _timm("visformer_small",
                                                                      size=64, img_size=64)),
    Entry("mobilevit_s", "timm", "mobilevit_s", "timm", _timm("mobilevit_s")),
    Entry("dm_nfnet_f0", "timm", "dm_nfnet_f0", "timm", _timm("dm_nfnet_f0")),
    Entry("inception_v3", "timm", "inception_v3", "timm", _timm("inception_v3", size=96)),
]

BY_NAME = {e.name: e for e in ZOO}
