"""Architectures for ``benchmarks/arch_sweep.py``: tiny configurations, random weights, seeded
(two processes build identical models and inputs), nothing downloaded.

Each builder returns ``{"model", "a", "b", "gen"}``: the model in eval mode, two input sets of
different sizes (keyword arguments as a dict, or positional ones as a tuple) and, for models
that generate, the keyword arguments of ``generate`` (else None).

- Hugging Face transformers: decoder-only (dense, MoE, state-space, recurrent), encoders, vision,
  audio, time-series and encoder-decoder models, beyond those of the zoo (``zoo_models.py``).
- torchvision: detection (lists of images in, lists of dicts out), segmentation, video and
  classification models.
- torch: patterns of TorchBench models (embedding bags, dynamic int8 quantization, function
  transforms inside forward, packed sequences, distributions).
"""
from __future__ import annotations

import torch

V = 1000


def ids(b, s, lo=5, hi=V):
    return torch.randint(lo, hi, (b, s))


def seed():
    torch.manual_seed(0)


def enc(model, S=16, S2=12, extra=None):
    g = torch.Generator().manual_seed(1)
    a = {"input_ids": torch.randint(5, V, (2, S), generator=g), "attention_mask": torch.ones(2, S, dtype=torch.long)}
    b = {"input_ids": torch.randint(5, V, (3, S2), generator=g), "attention_mask": torch.ones(3, S2, dtype=torch.long)}
    if extra:
        extra(a), extra(b)
    return dict(model=model.eval(), a=a, b=b, gen=None)


def dec(model, S=16, S2=12):
    d = enc(model, S, S2)
    g = torch.Generator().manual_seed(2)
    d["gen"] = {"input_ids": torch.randint(5, V, (1, 8), generator=g), "attention_mask": torch.ones(1, 8, dtype=torch.long)}
    return d


def s2s(model, S=16, S2=12, T_=8, T2=6):
    g = torch.Generator().manual_seed(1)
    a = {"input_ids": torch.randint(5, V, (2, S), generator=g), "attention_mask": torch.ones(2, S, dtype=torch.long),
         "decoder_input_ids": torch.randint(5, V, (2, T_), generator=g)}
    b = {"input_ids": torch.randint(5, V, (3, S2), generator=g), "attention_mask": torch.ones(3, S2, dtype=torch.long),
         "decoder_input_ids": torch.randint(5, V, (3, T2), generator=g)}
    gen = {"input_ids": torch.randint(5, V, (1, 10), generator=g), "attention_mask": torch.ones(1, 10, dtype=torch.long)}
    return dict(model=model.eval(), a=a, b=b, gen=gen)


def img(model, size=32, ch=3, b1=2, b2=3, key="pixel_values"):
    g = torch.Generator().manual_seed(1)
    a = {key: torch.randn(b1, ch, size, size, generator=g)}
    b = {key: torch.randn(b2, ch, size, size, generator=g)}
    return dict(model=model.eval(), a=a, b=b, gen=None)


TOK = dict(vocab_size=V, pad_token_id=0, bos_token_id=1, eos_token_id=2)
LLAMA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.2, **TOK)
BERTLIKE = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                max_position_embeddings=128, vocab_size=V, pad_token_id=0)
S2S = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
           encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128, decoder_start_token_id=1,
           forced_eos_token_id=None, init_std=0.5, **TOK)


def _hf(name: str) -> dict:
    import transformers as T
    seed()
    # ---------------- decoder-only
    if name == "gptj":
        return dec(T.GPTJForCausalLM(T.GPTJConfig(n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=128, **TOK)))
    if name == "gpt_neox":
        return dec(T.GPTNeoXForCausalLM(T.GPTNeoXConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                          intermediate_size=128, max_position_embeddings=128, **TOK)))
    if name == "opt":
        return dec(T.OPTForCausalLM(T.OPTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                                                word_embed_proj_dim=64, max_position_embeddings=128, **TOK)))
    if name == "gemma":
        return dec(T.GemmaForCausalLM(T.GemmaConfig(head_dim=16, **LLAMA)))
    if name == "mistral":
        return dec(T.MistralForCausalLM(T.MistralConfig(**LLAMA)))
    if name == "qwen2":
        return dec(T.Qwen2ForCausalLM(T.Qwen2Config(**LLAMA)))
    if name == "mpt":
        return dec(T.MptForCausalLM(T.MptConfig(d_model=64, n_heads=4, n_layers=2, max_seq_len=128, expansion_ratio=2, initializer_range=0.2,
                                                **TOK)))
    if name == "stablelm":
        return dec(T.StableLmForCausalLM(T.StableLmConfig(**LLAMA)))
    if name == "mamba":
        return dec(T.MambaForCausalLM(T.MambaConfig(hidden_size=64, state_size=8, num_hidden_layers=2, expand=2,
                                                    conv_kernel=4, initializer_range=0.2, **TOK)))
    if name == "rwkv":
        return dec(T.RwkvForCausalLM(T.RwkvConfig(hidden_size=64, num_hidden_layers=2, attention_hidden_size=64,
                                                  intermediate_size=128, context_length=128, vocab_size=V,
                                                  bos_token_id=1, eos_token_id=2)))
    # ---------------- encoders
    if name == "deberta_v2":
        return enc(T.DebertaV2Model(T.DebertaV2Config(**BERTLIKE)))
    if name == "albert":
        return enc(T.AlbertModel(T.AlbertConfig(embedding_size=32, **BERTLIKE)))
    if name == "electra":
        return enc(T.ElectraModel(T.ElectraConfig(embedding_size=32, **BERTLIKE)))
    if name == "roberta":
        return enc(T.RobertaModel(T.RobertaConfig(**{**BERTLIKE, "max_position_embeddings": 130, "pad_token_id": 1})))
    if name == "xlm_roberta":
        return enc(T.XLMRobertaModel(T.XLMRobertaConfig(**{**BERTLIKE, "max_position_embeddings": 130, "pad_token_id": 1})))
    if name == "mobilebert":
        return enc(T.MobileBertModel(T.MobileBertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                        intermediate_size=64, embedding_size=32, intra_bottleneck_size=32,
                                                        true_hidden_size=32, num_feedforward_networks=2,
                                                        max_position_embeddings=128, vocab_size=V, pad_token_id=0)))
    if name == "convbert":
        return enc(T.ConvBertModel(T.ConvBertConfig(embedding_size=64, **BERTLIKE)))
    if name == "funnel":
        return enc(T.FunnelModel(T.FunnelConfig(vocab_size=V, block_sizes=[1, 1], d_model=64, n_head=4, d_head=16,
                                                d_inner=128, num_decoder_layers=1)))
    if name == "xlnet":
        return enc(T.XLNetModel(T.XLNetConfig(vocab_size=V, d_model=64, n_layer=2, n_head=4, d_inner=128)))
    if name == "bigbird_full":
        return enc(T.BigBirdModel(T.BigBirdConfig(attention_type="original_full", **{**BERTLIKE, "max_position_embeddings": 512})))
    if name == "bigbird_sparse":
        # block_sparse needs seq > (5 + 2*num_random_blocks) * block_size: 16*(5+2*2)=144 -> use 256 / 192
        return enc(T.BigBirdModel(T.BigBirdConfig(attention_type="block_sparse", block_size=16, num_random_blocks=2,
                                                  **{**BERTLIKE, "max_position_embeddings": 512})), S=256, S2=192)
    if name == "layoutlm":
        def bbox(d):
            b, s = d["input_ids"].shape
            g = torch.Generator().manual_seed(3)
            x0 = torch.randint(0, 500, (b, s, 2), generator=g)
            d["bbox"] = torch.cat([x0, x0 + torch.randint(0, 400, (b, s, 2), generator=g)], -1)
        return enc(T.LayoutLMModel(T.LayoutLMConfig(**BERTLIKE)), extra=bbox)
    if name == "reformer":
        cfg = T.ReformerConfig(vocab_size=V, hidden_size=64, num_attention_heads=2, attention_head_size=32,
                               attn_layers=["local", "lsh"], feed_forward_size=128, axial_pos_embds=True,
                               axial_pos_shape=[8, 8], axial_pos_embds_dim=[32, 32], max_position_embeddings=64,
                               local_attn_chunk_length=16, lsh_attn_chunk_length=16, num_buckets=4, num_hashes=1,
                               hash_seed=0, is_decoder=False, pad_token_id=0, eos_token_id=2)
        return enc(T.ReformerModel(cfg), S=32, S2=48)
    # ---------------- vision
    if name == "deit":
        return img(T.DeiTModel(T.DeiTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, intermediate_size=128)))
    if name == "convnext":
        return img(T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)))
    if name == "resnet":
        return img(T.ResNetModel(T.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
                                                layer_type="basic")))
    if name == "mobilevit":
        return img(T.MobileViTModel(T.MobileViTConfig(image_size=64, patch_size=2, hidden_sizes=[32, 48, 64],
                                                      neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_attention_heads=4,
                                                      mlp_ratio=2.0)), size=64)
    if name == "dinov2":
        return img(T.Dinov2Model(T.Dinov2Config(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                                num_attention_heads=4, mlp_ratio=2)))
    if name == "data2vec_vision":
        return img(T.Data2VecVisionModel(T.Data2VecVisionConfig(image_size=32, patch_size=8, hidden_size=64,
                                                                num_hidden_layers=2, num_attention_heads=4,
                                                                intermediate_size=128, use_relative_position_bias=True)))
    if name == "yolos":
        return img(T.YolosModel(T.YolosConfig(image_size=[64, 64], patch_size=8, hidden_size=64, num_hidden_layers=2,
                                              num_attention_heads=4, intermediate_size=128, num_detection_tokens=10)),
                   size=64)
    if name == "detr":
        bb = T.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1], layer_type="basic",
                            out_features=["stage4"])
        cfg = T.DetrConfig(use_timm_backbone=False, backbone_config=bb, use_pretrained_backbone=False, d_model=64,
                           encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=10)
        return img(T.DetrModel(cfg), size=64)
    # ---------------- seq2seq
    if name == "bart":
        return s2s(T.BartForConditionalGeneration(T.BartConfig(**S2S)))
    if name == "marian":
        return s2s(T.MarianMTModel(T.MarianConfig(**{**S2S, "decoder_start_token_id": 0})))
    if name == "pegasus":
        return s2s(T.PegasusForConditionalGeneration(T.PegasusConfig(**{**S2S, "decoder_start_token_id": 0})))
    if name == "blenderbot_small":
        return s2s(T.BlenderbotSmallForConditionalGeneration(T.BlenderbotSmallConfig(**S2S)))
    if name == "led":
        cfg = T.LEDConfig(**{k: v for k, v in S2S.items() if k != "max_position_embeddings"},
                          max_encoder_position_embeddings=128, max_decoder_position_embeddings=128, attention_window=8)
        return s2s(T.LEDForConditionalGeneration(cfg))
    if name == "whisper":
        cfg = T.WhisperConfig(vocab_size=V, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
                              encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                              decoder_ffn_dim=128, max_source_positions=32, max_target_positions=64,
                              pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                              begin_suppress_tokens=None, suppress_tokens=None)
        m = T.WhisperForConditionalGeneration(cfg).eval()
        g = torch.Generator().manual_seed(1)
        a = {"input_features": torch.randn(2, 16, 64, generator=g), "decoder_input_ids": torch.randint(5, V, (2, 6), generator=g)}
        b = {"input_features": torch.randn(3, 16, 64, generator=g), "decoder_input_ids": torch.randint(5, V, (3, 4), generator=g)}
        gen = {"input_features": torch.randn(1, 16, 64, generator=g)}
        return dict(model=m, a=a, b=b, gen=gen)



    if name == "falcon":
        return dec(T.FalconForCausalLM(T.FalconConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=True, num_kv_heads=2, **TOK)))
    if name == "phi3":
        return dec(T.Phi3ForCausalLM(T.Phi3Config(**LLAMA)))
    if name == "starcoder2":
        return dec(T.Starcoder2ForCausalLM(T.Starcoder2Config(**LLAMA)))
    if name == "cohere":
        return dec(T.CohereForCausalLM(T.CohereConfig(**LLAMA)))
    if name == "granite":
        return dec(T.GraniteForCausalLM(T.GraniteConfig(**LLAMA)))
    if name == "olmo2":
        return dec(T.Olmo2ForCausalLM(T.Olmo2Config(**LLAMA)))
    if name == "gemma3":
        return dec(T.Gemma3ForCausalLM(T.Gemma3TextConfig(head_dim=16, sliding_window=8, **LLAMA)))
    if name == "qwen3_moe":
        return dec(T.Qwen3MoeForCausalLM(T.Qwen3MoeConfig(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, **LLAMA)))
    if name == "deepseek_v3":
        return dec(T.DeepseekV3ForCausalLM(T.DeepseekV3Config(hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
                   first_k_dense_replace=1, kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16,
                   max_position_embeddings=128, **TOK)))
    if name == "jamba":
        return dec(T.JambaForCausalLM(T.JambaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, num_experts=2, num_experts_per_tok=1, expert_layer_period=2, expert_layer_offset=1,
                   attn_layer_period=2, attn_layer_offset=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, use_mamba_kernels=False, **TOK)))
    if name == "mamba2":
        return dec(T.Mamba2ForCausalLM(T.Mamba2Config(hidden_size=64, state_size=8, num_hidden_layers=2, expand=2, num_heads=8, head_dim=16,
                   n_groups=1, conv_kernel=4, chunk_size=16, **TOK)))
    if name == "recurrent_gemma":
        return dec(T.RecurrentGemmaForCausalLM(T.RecurrentGemmaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                   num_attention_heads=4, num_key_value_heads=1, lru_width=64, attention_window_size=16, conv1d_width=4,
                   logits_soft_cap=30.0, block_types=["recurrent", "attention"], **TOK)))
    if name == "bloom":
        return dec(T.BloomForCausalLM(T.BloomConfig(hidden_size=64, n_layer=2, n_head=4, **TOK)))
    if name == "codegen":
        return dec(T.CodeGenForCausalLM(T.CodeGenConfig(n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=128, n_ctx=128, **TOK)))
    # encoders
    if name == "esm":
        return enc(T.EsmModel(T.EsmConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                   max_position_embeddings=130, pad_token_id=1, mask_token_id=32, position_embedding_type="rotary")), )
    if name == "rembert":
        return enc(T.RemBertModel(T.RemBertConfig(input_embedding_size=32, output_embedding_size=32, **BERTLIKE)))
    if name == "nystromformer":
        return enc(T.NystromformerModel(T.NystromformerConfig(num_landmarks=4, segment_means_seq_len=16, conv_kernel_size=3, **{**BERTLIKE, "max_position_embeddings": 130})), S=16, S2=16)
    if name == "longformer":
        return enc(T.LongformerModel(T.LongformerConfig(attention_window=8, **{**BERTLIKE, "max_position_embeddings": 130, "pad_token_id": 1})))
    if name == "squeezebert":
        return enc(T.SqueezeBertModel(T.SqueezeBertConfig(embedding_size=64, **BERTLIKE)))
    if name == "roformer":
        return enc(T.RoFormerModel(T.RoFormerConfig(embedding_size=64, **BERTLIKE)))
    if name == "mpnet":
        return enc(T.MPNetModel(T.MPNetConfig(**{**BERTLIKE, "max_position_embeddings": 130, "pad_token_id": 1})))
    if name == "canine":
        d = enc(T.CanineModel(T.CanineConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                   downsampling_rate=4, num_hash_buckets=64, num_hash_functions=4, local_transformer_stride=16, max_position_embeddings=256)), S=32, S2=24)
        return d
    # vision
    if name == "swinv2":
        return img(T.Swinv2Model(T.Swinv2Config(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4)))
    if name == "levit":
        return img(T.LevitModel(T.LevitConfig(image_size=64, hidden_sizes=[32, 48, 64], num_attention_heads=[2, 3, 4], depths=[1, 1, 1],
                   key_dim=[8, 8, 8], down_ops=[["Subsample", 8, 2, 4, 2, 2], ["Subsample", 8, 4, 4, 2, 2]])), size=64)
    if name == "poolformer":
        return img(T.PoolFormerModel(T.PoolFormerConfig(hidden_sizes=[16, 32], depths=[1, 1], num_encoder_blocks=2, patch_sizes=[7, 3], strides=[4, 2], padding=[2, 1])))
    if name == "pvt_v2":
        return img(T.PvtV2Model(T.PvtV2Config(image_size=64, hidden_sizes=[16, 32], depths=[1, 1], num_encoder_blocks=2, num_attention_heads=[1, 2],
                   sr_ratios=[2, 1], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2])), size=64)
    if name == "dpt":
        return img(T.DPTForDepthEstimation(T.DPTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                   intermediate_size=128, backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[16, 32, 64, 64], fusion_hidden_size=32)))
    if name == "siglip":
        return img(T.SiglipVisionModel(T.SiglipVisionConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)))
    if name == "vit_mae":
        return img(T.ViTMAEModel(T.ViTMAEConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, mask_ratio=0.5)))
    if name == "focalnet":
        return img(T.FocalNetModel(T.FocalNetConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], focal_levels=[2, 2], focal_windows=[3, 3])))
    if name == "efficientnet":
        return img(T.EfficientNetModel(T.EfficientNetConfig(image_size=64, width_coefficient=0.25, depth_coefficient=0.2, hidden_dim=320)), size=64)
    if name == "mask2former":
        cfg = T.Mask2FormerConfig(backbone_config=T.SwinConfig(image_size=64, patch_size=4, embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 2, 2, 4],
                   out_features=["stage1", "stage2", "stage3", "stage4"]), hidden_dim=32, mask_feature_size=32, num_queries=8, encoder_layers=1,
                   decoder_layers=2, num_attention_heads=4, dim_feedforward=64, encoder_feedforward_dim=64, use_pretrained_backbone=False)
        return img(T.Mask2FormerModel(cfg), size=64)
    # audio
    if name == "wav2vec2_conformer":
        m = T.Wav2Vec2ConformerModel(T.Wav2Vec2ConformerConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                   conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
                   position_embeddings_type="rotary"))
        g = torch.Generator().manual_seed(1)
        return dict(model=m.eval(), a={"input_values": torch.randn(2, 800, generator=g)}, b={"input_values": torch.randn(3, 640, generator=g)}, gen=None)
    if name == "sew_d":
        m = T.SEWDModel(T.SEWDConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, squeeze_factor=2,
                   conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, max_position_embeddings=128))
        g = torch.Generator().manual_seed(1)
        return dict(model=m.eval(), a={"input_values": torch.randn(2, 800, generator=g)}, b={"input_values": torch.randn(3, 640, generator=g)}, gen=None)
    if name == "ast":
        m = T.ASTModel(T.ASTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, patch_size=8, frequency_stride=8, time_stride=8, max_length=64, num_mel_bins=32))
        g = torch.Generator().manual_seed(1)
        return dict(model=m.eval(), a={"input_values": torch.randn(2, 64, 32, generator=g)}, b={"input_values": torch.randn(3, 64, 32, generator=g)}, gen=None)
    if name == "speech_to_text":
        cfg = T.Speech2TextConfig(vocab_size=V, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                   encoder_ffn_dim=128, decoder_ffn_dim=128, input_feat_per_channel=16, input_channels=1, conv_channels=32, num_conv_layers=2,
                   max_source_positions=64, max_target_positions=64, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
        m = T.Speech2TextForConditionalGeneration(cfg).eval()
        g = torch.Generator().manual_seed(1)
        a = {"input_features": torch.randn(2, 40, 16, generator=g), "decoder_input_ids": torch.randint(5, V, (2, 6), generator=g)}
        b = {"input_features": torch.randn(3, 32, 16, generator=g), "decoder_input_ids": torch.randint(5, V, (3, 4), generator=g)}
        return dict(model=m, a=a, b=b, gen={"input_features": torch.randn(1, 40, 16, generator=g)})
    # time series
    if name == "patchtst":
        m = T.PatchTSTModel(T.PatchTSTConfig(num_input_channels=3, context_length=32, patch_length=8, patch_stride=8, d_model=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64))
        g = torch.Generator().manual_seed(1)
        return dict(model=m.eval(), a={"past_values": torch.randn(2, 32, 3, generator=g)}, b={"past_values": torch.randn(3, 32, 3, generator=g)}, gen=None)
    # seq2seq
    if name == "longt5":
        return s2s(T.LongT5ForConditionalGeneration(T.LongT5Config(vocab_size=V, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, local_radius=4, encoder_attention_type="transient-global", global_block_size=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=2)))
    if name == "switch_transformers":
        return s2s(T.SwitchTransformersForConditionalGeneration(T.SwitchTransformersConfig(vocab_size=V, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_sparse_encoder_layers=1, num_sparse_decoder_layers=1, num_heads=4, num_experts=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=2)))
    if name == "prophetnet":
        return s2s(T.ProphetNetForConditionalGeneration(T.ProphetNetConfig(vocab_size=V, hidden_size=64, encoder_ffn_dim=128, decoder_ffn_dim=128, num_encoder_layers=2, num_decoder_layers=2, num_encoder_attention_heads=4, num_decoder_attention_heads=4, ngram=2, max_position_embeddings=128, decoder_start_token_id=0, pad_token_id=0, eos_token_id=2)))
    if name == "fsmt":
        cfg = T.FSMTConfig(langs=["en", "de"], src_vocab_size=V, tgt_vocab_size=V, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128, decoder_start_token_id=2, pad_token_id=1, bos_token_id=0, eos_token_id=2)
        return s2s(T.FSMTForConditionalGeneration(cfg))
    if name == "blip_text":
        return dec(T.BlipTextLMHeadModel(T.BlipTextConfig(vocab_size=V, hidden_size=64, encoder_hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=128, pad_token_id=0, bos_token_id=1, sep_token_id=2)))


    raise KeyError(name)


HF_FIRST = [
    # decoder-only
    "gptj", "gpt_neox", "opt", "gemma", "mistral", "qwen2", "mpt", "stablelm", "mamba", "rwkv",
    # encoders
    "deberta_v2", "albert", "electra", "roberta", "xlm_roberta", "mobilebert", "convbert", "funnel", "xlnet",
    "bigbird_full", "bigbird_sparse", "layoutlm", "reformer",
    # vision
    "deit", "convnext", "resnet", "mobilevit", "dinov2", "data2vec_vision", "yolos", "detr",
    # seq2seq
    "bart", "marian", "pegasus", "blenderbot_small", "led", "whisper",
]
HF_SECOND = ["falcon", "phi3", "starcoder2", "cohere", "granite", "olmo2", "gemma3", "qwen3_moe", "deepseek_v3", "jamba", "mamba2",
         "recurrent_gemma", "bloom", "codegen", "esm", "rembert", "nystromformer", "longformer", "squeezebert", "roformer", "mpnet", "canine",
         "swinv2", "levit", "poolformer", "pvt_v2", "dpt", "siglip", "vit_mae", "focalnet", "efficientnet", "mask2former",
         "wav2vec2_conformer", "sew_d", "ast", "speech_to_text", "patchtst", "longt5", "prophetnet", "fsmt", "blip_text"]

# ---------------------------------------------------------------- torchvision


def _torchvision(module: str, fn: str):
    import importlib
    return getattr(importlib.import_module("torchvision.models" + module), fn)


def _images(shapes, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(*s, generator=g) for s in shapes]


def _detection(fn: str, **kw):
    """A list of images in, a list of dicts (boxes, labels, scores, masks, keypoints) out."""
    def build():
        torch.manual_seed(0)
        m = _torchvision(".detection", fn)(weights=None, weights_backbone=None, **kw).eval()
        return dict(model=m, a=(_images([(3, 160, 160), (3, 160, 160)], 1),),
                    b=(_images([(3, 192, 176)], 2),), gen=None)
    return build


def _tensor_model(module: str, fn: str, a_shape: tuple, b_shape: tuple, **kw):
    def build():
        torch.manual_seed(0)
        m = _torchvision(module, fn)(weights=None, **kw).eval()
        g = torch.Generator().manual_seed(1)
        return dict(model=m, a=(torch.rand(*a_shape, generator=g),),
                    b=(torch.rand(*b_shape, generator=g),), gen=None)
    return build


def _segmentation(fn: str, **kw):
    return _tensor_model(".segmentation", fn, (2, 3, 96, 96), (3, 3, 112, 128),
                         weights_backbone=None, num_classes=5, **kw)


def _classification(fn: str, size: int = 64, size2: int | None = None, **kw):
    s2 = size2 or size
    return _tensor_model("", fn, (2, 3, size, size), (3, 3, s2, s2), num_classes=10, **kw)


def _video(fn: str):
    return _tensor_model(".video", fn, (1, 3, 8, 64, 64), (2, 3, 8, 64, 64), num_classes=10)


_SMALL = dict(min_size=160, max_size=200)
TORCHVISION = {
    "fasterrcnn_mobilenet_v3": _detection("fasterrcnn_mobilenet_v3_large_320_fpn", num_classes=5),
    "ssdlite320": _detection("ssdlite320_mobilenet_v3_large", num_classes=5),
    "retinanet": _detection("retinanet_resnet50_fpn", num_classes=5, **_SMALL),
    "fcos": _detection("fcos_resnet50_fpn", num_classes=5, **_SMALL),
    "maskrcnn": _detection("maskrcnn_resnet50_fpn", num_classes=5, **_SMALL),
    "keypointrcnn": _detection("keypointrcnn_resnet50_fpn", num_classes=2, **_SMALL),
    "deeplabv3_mobilenet_v3": _segmentation("deeplabv3_mobilenet_v3_large"),
    "fcn_resnet50": _segmentation("fcn_resnet50", aux_loss=True),
    "lraspp": _segmentation("lraspp_mobilenet_v3_large"),
    "googlenet": _classification("googlenet", aux_logits=False, init_weights=True),
    "inception_v3_tv": _classification("inception_v3", size=96, aux_logits=False,
                                       init_weights=True),
    "swin_t": _classification("swin_t", size=64, size2=96),
    "swin_v2_t": _classification("swin_v2_t"),
    "efficientnet_v2_s": _classification("efficientnet_v2_s"),
    "regnet_x_400mf": _classification("regnet_x_400mf"),
    "wide_resnet50_2": _classification("wide_resnet50_2"),
    "mnasnet0_5": _classification("mnasnet0_5"),
    "r3d_18": _video("r3d_18"),
    "r2plus1d_18": _video("r2plus1d_18"),
    "swin3d_t": _video("swin3d_t"),
}


# ---------------------------------------------------------------- patterns of TorchBench models

def _dlrm():
    """DLRM's shape: embedding bags with offsets, a bottom MLP, pairwise dot interactions."""
    from torch import nn

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.ModuleList([nn.EmbeddingBag(100, 16, mode="sum") for _ in range(3)])
            self.bot = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
            self.top = nn.Sequential(nn.Linear(16 * 4 + 6, 1), nn.Sigmoid())

        def forward(self, dense, idx, offsets):
            x = self.bot(dense)
            bags = [e(idx[i], offsets[i]) for i, e in enumerate(self.emb)]
            t = torch.stack([x] + bags, 1)
            z = torch.bmm(t, t.transpose(1, 2))
            li, lj = torch.tril_indices(4, 4, -1)
            return self.top(torch.cat([x] + bags + [z[:, li, lj]], 1))

    def inputs(b, g):
        idx = torch.randint(0, 100, (3, b * 2), generator=g)
        return (torch.randn(b, 8, generator=g), idx,
                torch.arange(0, b * 2, 2).expand(3, b).contiguous())
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return dict(model=DLRM().eval(), a=inputs(4, g), b=inputs(6, g), gen=None)


def _quantized_mlp():
    """An MLP after ``torch.ao.quantization.quantize_dynamic``: int8 linear layers."""
    from torch import nn
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).eval()
    q = torch.ao.quantization.quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
    g = torch.Generator().manual_seed(1)
    return dict(model=q, a=(torch.randn(4, 32, generator=g),), b=(torch.randn(7, 32, generator=g),),
                gen=None)


def _force_field():
    """Forces as the gradient of a learned energy, ``vmap(grad(...))`` inside forward (the
    lennard_jones pattern)."""
    from torch import nn

    class ForceField(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))

        def forward(self, r):
            def energy(x):
                return self.net(x.unsqueeze(-1)).sum()
            return torch.func.vmap(torch.func.grad(energy))(r)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return dict(model=ForceField().eval(), a=(torch.rand(6, 4, generator=g),),
                b=(torch.rand(3, 4, generator=g),), gen=None)


def _packed_lstm():
    """Padded token sequences packed for a bidirectional LSTM (tacotron2's encoder)."""
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(30, 16)
            self.lstm = nn.LSTM(16, 32, batch_first=True, bidirectional=True)
            self.out = nn.Linear(64, 8)

        def forward(self, tokens, lengths):
            x = nn.utils.rnn.pack_padded_sequence(self.emb(tokens), lengths, batch_first=True,
                                                  enforce_sorted=False)
            y, _ = self.lstm(x)
            y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True)
            return self.out(y)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return dict(model=Encoder().eval(),
                a=(torch.randint(0, 30, (3, 9), generator=g), torch.tensor([9, 5, 7])),
                b=(torch.randint(0, 30, (2, 6), generator=g), torch.tensor([4, 6])), gen=None)


def _gaussian_policy():
    """A policy head that returns a ``torch.distributions.Normal``'s log-probability and
    entropy (soft actor-critic)."""
    from torch import nn

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 6)

        def forward(self, obs):
            mu, log_std = self.net(obs).chunk(2, -1)
            d = torch.distributions.Normal(mu, log_std.exp())
            return d.log_prob(torch.zeros_like(mu)), d.entropy()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return dict(model=Policy().eval(), a=(torch.randn(3, 4, generator=g),),
                b=(torch.randn(5, 4, generator=g),), gen=None)


PATTERNS = {"dlrm": _dlrm, "quantized_mlp": _quantized_mlp, "force_field": _force_field,
            "packed_lstm": _packed_lstm, "gaussian_policy": _gaussian_policy}


def builders() -> dict:
    """{name: (library, builder)} in sweep order."""
    out = {n: ("transformers", lambda n=n: _hf(n)) for n in HF_FIRST + HF_SECOND}
    out.update({n: ("torchvision", b) for n, b in TORCHVISION.items()})
    out.update({n: ("torch", b) for n, b in PATTERNS.items()})
    return out
