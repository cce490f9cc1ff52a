"""The Hugging Face transformers part of the model zoo: PyTorch's Dynamo benchmark models, small.

The models are those of PyTorch's `benchmarks/dynamo/huggingface_models_list.txt` (named as there;
the ones named after a checkpoint by their architecture), plus the vision models people call from
transformers (ViT, DeiT, BEiT, Swin, ConvNeXt, ResNet, MobileViT, SegFormer). Each is built from
its config class with small sizes (hidden size 64, 2 layers, 4 heads, vocabulary 1000) and random
weights, in eval mode: the code that runs is the library's own, only the sizes differ from a real
checkpoint. Nothing is downloaded: the Hub is switched off before transformers is imported, and no
factory names a checkpoint.
"""

from __future__ import annotations

from typing import Any

import torch

from jitlab.capture.corpus import Corpus
from jitlab.capture.zoo import no_downloads

no_downloads()  # before the library is imported (in a factory): the Hub is off, nothing can download

CORPUS = Corpus()

VOCAB = 1000
BATCH, SEQ = 2, 16

BERT = dict(
    vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
    max_position_embeddings=64,
)  # fmt: skip
SEQ2SEQ = dict(
    vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
)  # fmt: skip
DECODER = dict(
    vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=128,
)  # fmt: skip
T5 = dict(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4)
GPT2 = dict(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64, bos_token_id=1, eos_token_id=2)
VIT = dict(
    image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=128, num_labels=10,
)  # fmt: skip
IMAGE = (BATCH, 3, 32, 32)

#: case name -> (model class, config class, config keywords, inputs kind); inputs kinds: "ids"
#: (input_ids), "seq2seq" (input_ids and decoder_input_ids), "audio" (Whisper's features and
#: decoder_input_ids), "pixels" (pixel_values of IMAGE)
MODELS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "AlbertForMaskedLM": ("AlbertForMaskedLM", "AlbertConfig", {**BERT, "embedding_size": 32}, "ids"),
    "AlbertForQuestionAnswering": (
        "AlbertForQuestionAnswering",
        "AlbertConfig",
        {**BERT, "embedding_size": 32},
        "ids",
    ),
    "AllenaiLongformerBase": ("LongformerModel", "LongformerConfig", {**BERT, "attention_window": 8}, "ids"),
    "BartForCausalLM": ("BartForCausalLM", "BartConfig", SEQ2SEQ, "ids"),
    "BartForConditionalGeneration": ("BartForConditionalGeneration", "BartConfig", SEQ2SEQ, "seq2seq"),
    "BertForMaskedLM": ("BertForMaskedLM", "BertConfig", BERT, "ids"),
    "BertForQuestionAnswering": ("BertForQuestionAnswering", "BertConfig", BERT, "ids"),
    "BlenderbotForCausalLM": ("BlenderbotForCausalLM", "BlenderbotConfig", SEQ2SEQ, "ids"),
    "BlenderbotForConditionalGeneration": (
        "BlenderbotForConditionalGeneration",
        "BlenderbotConfig",
        SEQ2SEQ,
        "seq2seq",
    ),  # fmt: skip
    "BlenderbotSmallForCausalLM": ("BlenderbotSmallForCausalLM", "BlenderbotSmallConfig", SEQ2SEQ, "ids"),
    "BlenderbotSmallForConditionalGeneration": (
        "BlenderbotSmallForConditionalGeneration",
        "BlenderbotSmallConfig",
        SEQ2SEQ,
        "seq2seq",
    ),  # fmt: skip
    "CamemBert": ("CamembertForMaskedLM", "CamembertConfig", {**BERT, "max_position_embeddings": 66}, "ids"),
    "DebertaV2ForMaskedLM": ("DebertaV2ForMaskedLM", "DebertaV2Config", BERT, "ids"),
    "DebertaV2ForQuestionAnswering": ("DebertaV2ForQuestionAnswering", "DebertaV2Config", BERT, "ids"),
    "DistilBertForMaskedLM": (
        "DistilBertForMaskedLM",
        "DistilBertConfig",
        dict(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=64),
        "ids",
    ),  # fmt: skip
    "DistilBertForQuestionAnswering": (
        "DistilBertForQuestionAnswering",
        "DistilBertConfig",
        dict(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=64),
        "ids",
    ),  # fmt: skip
    "DistillGPT2": ("GPT2LMHeadModel", "GPT2Config", GPT2, "ids"),
    "ElectraForCausalLM": (
        "ElectraForCausalLM",
        "ElectraConfig",
        {**BERT, "embedding_size": 64, "is_decoder": True},
        "ids",
    ),
    "ElectraForQuestionAnswering": (
        "ElectraForQuestionAnswering",
        "ElectraConfig",
        {**BERT, "embedding_size": 64},
        "ids",
    ),
    "GPT2ForSequenceClassification": (
        "GPT2ForSequenceClassification",
        "GPT2Config",
        {**GPT2, "pad_token_id": 0},
        "ids",
    ),
    "GPTJForCausalLM": ("GPTJForCausalLM", "GPTJConfig", {**GPT2, "rotary_dim": 8}, "ids"),
    "GPTJForQuestionAnswering": ("GPTJForQuestionAnswering", "GPTJConfig", {**GPT2, "rotary_dim": 8}, "ids"),
    "GPTNeoForCausalLM": (
        "GPTNeoForCausalLM",
        "GPTNeoConfig",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            num_layers=2,
            num_heads=4,
            max_position_embeddings=64,
            attention_types=[[["global", "local"], 1]],
            window_size=8,
        ),
        "ids",
    ),  # fmt: skip
    "GPTNeoForSequenceClassification": (
        "GPTNeoForSequenceClassification",
        "GPTNeoConfig",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            num_layers=2,
            num_heads=4,
            max_position_embeddings=64,
            attention_types=[[["global", "local"], 1]],
            window_size=8,
            pad_token_id=0,
        ),
        "ids",
    ),  # fmt: skip
    "GoogleFnet": (
        "FNetForMaskedLM",
        "FNetConfig",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            num_hidden_layers=2,
            intermediate_size=128,
            max_position_embeddings=64,
        ),
        "ids",
    ),  # fmt: skip
    "LayoutLMForMaskedLM": ("LayoutLMForMaskedLM", "LayoutLMConfig", BERT, "ids"),
    "LayoutLMForSequenceClassification": ("LayoutLMForSequenceClassification", "LayoutLMConfig", BERT, "ids"),
    "M2M100ForConditionalGeneration": ("M2M100ForConditionalGeneration", "M2M100Config", SEQ2SEQ, "seq2seq"),
    "MBartForCausalLM": ("MBartForCausalLM", "MBartConfig", SEQ2SEQ, "ids"),
    "MBartForConditionalGeneration": ("MBartForConditionalGeneration", "MBartConfig", SEQ2SEQ, "seq2seq"),
    "MT5ForConditionalGeneration": ("MT5ForConditionalGeneration", "MT5Config", T5, "seq2seq"),
    "MegatronBertForCausalLM": (
        "MegatronBertForCausalLM",
        "MegatronBertConfig",
        {**BERT, "is_decoder": True},
        "ids",
    ),
    "MegatronBertForQuestionAnswering": (
        "MegatronBertForQuestionAnswering",
        "MegatronBertConfig",
        BERT,
        "ids",
    ),
    "MobileBertForMaskedLM": (
        "MobileBertForMaskedLM",
        "MobileBertConfig",
        {**BERT, "embedding_size": 32, "intra_bottleneck_size": 32, "true_hidden_size": 32},
        "ids",
    ),  # fmt: skip
    "MobileBertForQuestionAnswering": (
        "MobileBertForQuestionAnswering",
        "MobileBertConfig",
        {**BERT, "embedding_size": 32, "intra_bottleneck_size": 32, "true_hidden_size": 32},
        "ids",
    ),  # fmt: skip
    "OPTForCausalLM": (
        "OPTForCausalLM",
        "OPTConfig",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            ffn_dim=128,
            max_position_embeddings=64,
            word_embed_proj_dim=64,
        ),
        "ids",
    ),  # fmt: skip
    "PLBartForCausalLM": ("PLBartForCausalLM", "PLBartConfig", SEQ2SEQ, "ids"),
    "PLBartForConditionalGeneration": ("PLBartForConditionalGeneration", "PLBartConfig", SEQ2SEQ, "seq2seq"),
    "PegasusForCausalLM": ("PegasusForCausalLM", "PegasusConfig", SEQ2SEQ, "ids"),
    "PegasusForConditionalGeneration": (
        "PegasusForConditionalGeneration",
        "PegasusConfig",
        SEQ2SEQ,
        "seq2seq",
    ),
    "RobertaForCausalLM": (
        "RobertaForCausalLM",
        "RobertaConfig",
        {**BERT, "max_position_embeddings": 66, "is_decoder": True},
        "ids",
    ),  # fmt: skip
    "RobertaForQuestionAnswering": (
        "RobertaForQuestionAnswering",
        "RobertaConfig",
        {**BERT, "max_position_embeddings": 66},
        "ids",
    ),  # fmt: skip
    "T5ForConditionalGeneration": ("T5ForConditionalGeneration", "T5Config", T5, "seq2seq"),
    "T5Small": ("T5Model", "T5Config", T5, "seq2seq"),
    "TrOCRForCausalLM": (
        "TrOCRForCausalLM",
        "TrOCRConfig",
        dict(
            vocab_size=VOCAB,
            d_model=64,
            decoder_layers=2,
            decoder_attention_heads=4,
            decoder_ffn_dim=128,
            max_position_embeddings=64,
        ),
        "ids",
    ),  # fmt: skip
    "XGLMForCausalLM": (
        "XGLMForCausalLM",
        "XGLMConfig",
        dict(
            vocab_size=VOCAB,
            d_model=64,
            num_layers=2,
            attention_heads=4,
            ffn_dim=128,
            max_position_embeddings=64,
        ),
        "ids",
    ),  # fmt: skip
    "XLNetLMHeadModel": (
        "XLNetLMHeadModel",
        "XLNetConfig",
        dict(vocab_size=VOCAB, d_model=64, n_layer=2, n_head=4, d_inner=128),
        "ids",
    ),
    "YituTechConvBert": ("ConvBertForMaskedLM", "ConvBertConfig", {**BERT, "embedding_size": 64}, "ids"),
    "Llama-3.2-1B": ("LlamaForCausalLM", "LlamaConfig", DECODER, "ids"),
    "gemma-2-2b": ("Gemma2ForCausalLM", "Gemma2Config", {**DECODER, "head_dim": 16}, "ids"),
    "gemma-3-4b-it": ("Gemma3ForCausalLM", "Gemma3TextConfig", {**DECODER, "head_dim": 16}, "ids"),
    "whisper-tiny": (
        "WhisperForConditionalGeneration",
        "WhisperConfig",
        {
            **SEQ2SEQ,
            "num_mel_bins": 16,
            "max_source_positions": 32,
            "max_target_positions": 64,
            "pad_token_id": 0,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "decoder_start_token_id": 1,
        },
        "audio",
    ),  # fmt: skip
    "Qwen3-0.6B": ("Qwen3ForCausalLM", "Qwen3Config", {**DECODER, "head_dim": 16}, "ids"),
    "Mistral-7B-Instruct-v0.3": ("MistralForCausalLM", "MistralConfig", DECODER, "ids"),
    "Qwen2ForCausalLM": ("Qwen2ForCausalLM", "Qwen2Config", DECODER, "ids"),
    "gpt-oss-20b": (
        "GptOssForCausalLM",
        "GptOssConfig",
        {**DECODER, "head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8},
        "ids",
    ),  # fmt: skip
    "ViTForImageClassification": ("ViTForImageClassification", "ViTConfig", VIT, "pixels"),
    "DeiTForImageClassification": ("DeiTForImageClassification", "DeiTConfig", VIT, "pixels"),
    "BeitForImageClassification": ("BeitForImageClassification", "BeitConfig", VIT, "pixels"),
    "SwinForImageClassification": (
        "SwinForImageClassification",
        "SwinConfig",
        dict(
            image_size=32,
            patch_size=4,
            embed_dim=16,
            depths=[1, 1],
            num_heads=[2, 2],
            window_size=4,
            num_labels=10,
        ),
        "pixels",
    ),  # fmt: skip
    "ConvNextForImageClassification": (
        "ConvNextForImageClassification",
        "ConvNextConfig",
        dict(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=10),
        "pixels",
    ),  # fmt: skip
    "ResNetForImageClassification": (
        "ResNetForImageClassification",
        "ResNetConfig",
        dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], num_labels=10),
        "pixels",
    ),  # fmt: skip
    "MobileViTForImageClassification": (
        "MobileViTForImageClassification",
        "MobileViTConfig",
        dict(
            image_size=32,
            hidden_sizes=[32, 48, 64],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
            num_labels=10,
        ),
        "pixels",
    ),  # fmt: skip
    "SegformerForImageClassification": (
        "SegformerForImageClassification",
        "SegformerConfig",
        dict(
            num_encoder_blocks=2,
            depths=[1, 1],
            sr_ratios=[2, 1],
            hidden_sizes=[16, 32],
            num_attention_heads=[1, 2],
            num_labels=10,
        ),
        "pixels",
    ),  # fmt: skip
}


def build(model_class: str, config_class: str, config: dict[str, Any]) -> torch.nn.Module:
    """A model of transformers' class `model_class` from a `config_class(**config)`, random weights,
    in eval mode."""
    import transformers

    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config))
    return model.eval()


def inputs(kind: str, config: dict[str, Any]) -> tuple[tuple, dict]:
    """The keyword inputs of one call for an inputs kind (see MODELS)."""
    if kind == "pixels":
        return (), {"pixel_values": torch.randn(IMAGE)}
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    if kind == "ids":
        return (), {"input_ids": ids}
    decoder_ids = torch.randint(0, VOCAB, (BATCH, SEQ // 2))
    if kind == "audio":
        features = torch.randn(BATCH, config["num_mel_bins"], 2 * config["max_source_positions"])
        return (), {"input_features": features, "decoder_input_ids": decoder_ids}
    return (), {"input_ids": ids, "decoder_input_ids": decoder_ids}


def _register(name: str, model_class: str, config_class: str, config: dict[str, Any], kind: str) -> None:
    tags = ("zoo", "transformers", "vision" if kind == "pixels" else "text")
    CORPUS.case(name, inputs=lambda: inputs(kind, config), tags=tags)(
        lambda: build(model_class, config_class, config)
    )


for _name, (_model, _config, _kwargs, _kind) in MODELS.items():
    _register(_name, _model, _config, _kwargs, _kind)
