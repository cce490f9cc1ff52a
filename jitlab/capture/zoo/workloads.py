"""What the zoo's models are called with beyond their one example: varying shapes, `generate`, training.

`jitlab capture --zoo` calls every model on one fixed input. Real inputs vary: a server sees texts
of every length and images of several sizes, `generate` calls a model with a cache that grows by one
token per step, and what people compile most is a training step. This module says, per zoo case,
what those workloads are, from the zoo files' own tables (`MODELS` of each `*_zoo.py`):

- `shape_inputs(case)`: the inputs of the varying-shapes mode. Text models: 10 (batch, length)
  shapes from (2, 5) to (4, 50) (encoder-decoders get a decoder half as long; Whisper keeps its
  feature length, fixed by its config, and varies the decoder's). Vision models: 5 batch sizes times
  3 image sizes (the zoo's side, +16 and +32 pixels).
- `generate_calls(case)`: the `generate` calls of the generation mode, for decoder and
  encoder-decoder language models: 10 prompts of different lengths, batch 1, greedy, exactly
  `NEW_TOKENS` new tokens each. None for the models that do not generate text from a prompt.
- `train_model(case)` and `train_batches(case, steps)`: the model in training mode with every
  dropout and layer-drop probability set to 0 (so eager training is deterministic), and one batch
  per step (same shapes, new values), with what the loss is made of (`loss_kind`).

Values are drawn under fixed seeds (each call and each step its own), so every method of a worker
and every run sees the same inputs.
"""

from __future__ import annotations

from typing import Any

import torch

from jitlab.capture.corpus import Case, seeded
from jitlab.capture.zoo import timm_zoo, torchvision_zoo, transformers_zoo

#: the varying-shapes mode's (batch, length) shapes for text models, in call order
TEXT_SHAPES = ((2, 5), (2, 9), (3, 12), (2, 17), (4, 20), (3, 26), (2, 31), (4, 37), (3, 44), (4, 50))
#: vision models: these batch sizes at each image size (the zoo's side, then larger)
IMAGE_BATCHES = (1, 2, 3, 4, 5)
IMAGE_GROWTH = (0, 16, 32)
#: the generation mode's prompt lengths (one `generate` call each) and new tokens per call
PROMPT_LENGTHS = (8, 12, 5, 16, 10, 20, 7, 14, 9, 24)
NEW_TOKENS = 16
#: the training mode's batch: sequences of this length (images: the zoo's own example batch)
TRAIN_BATCH, TRAIN_LENGTH = 2, 16
#: model classes that generate text from a prompt (decoders and encoder-decoders of text)
GENERATING = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")

Inputs = tuple[tuple, dict[str, Any]]


def zoo_of(case: Case) -> str:
    """Which zoo a case comes from ("transformers", "timm" or "torchvision"), by its tags."""
    for zoo in ("transformers", "timm", "torchvision"):
        if zoo in case.tags:
            return zoo
    raise ValueError(
        f"case {case.name} is not a zoo model: the varying and training modes run --zoo models only"
    )


def _transformers_entry(case: Case) -> tuple[str, str, dict[str, Any], str]:
    return transformers_zoo.MODELS[case.name]


def image_side(case: Case) -> int:
    """The side of the zoo's example images for a vision case."""
    zoo = zoo_of(case)
    if zoo == "transformers":
        return transformers_zoo.IMAGE[-1]
    table, prefix = (timm_zoo.MODELS, "timm_") if zoo == "timm" else (torchvision_zoo.MODELS, "tv_")
    return table[case.name.removeprefix(prefix)][2]


def is_vision(case: Case) -> bool:
    return zoo_of(case) != "transformers" or _transformers_entry(case)[3] == "pixels"


def _text_inputs(kind: str, config: dict[str, Any], batch: int, length: int) -> dict[str, Any]:
    vocab = transformers_zoo.VOCAB
    if kind == "audio":
        features = torch.randn(batch, config["num_mel_bins"], 2 * config["max_source_positions"])
        return {"input_features": features, "decoder_input_ids": torch.randint(0, vocab, (batch, length))}
    ids = torch.randint(0, vocab, (batch, length))
    if kind == "seq2seq":
        return {"input_ids": ids, "decoder_input_ids": torch.randint(0, vocab, (batch, max(1, length // 2)))}
    return {"input_ids": ids}


def _images(case: Case, batch: int, side: int) -> Inputs:
    pixels = torch.randn(batch, 3, side, side)
    if zoo_of(case) != "transformers":
        return (pixels,), {}
    if _interpolates(case):  # what a user passes to call a ViT on sizes other than its config's
        return (), {"pixel_values": pixels, "interpolate_pos_encoding": True}
    return (), {"pixel_values": pixels}


def _interpolates(case: Case) -> bool:
    """Whether a transformers vision model's forward takes `interpolate_pos_encoding` (ViT, DeiT,
    BEiT, Swin: position embeddings made for one image size, interpolated for others)."""
    import inspect

    import transformers

    forward = getattr(transformers, _transformers_entry(case)[0]).forward
    return "interpolate_pos_encoding" in inspect.signature(forward).parameters


def shape_inputs(case: Case) -> list[tuple[str, Inputs]]:
    """(label, inputs) of every call of the varying-shapes mode, in call order (see the module
    docstring); call i's values are drawn under seed i."""
    calls: list[tuple[str, Any]] = []
    if is_vision(case):
        side = image_side(case)
        for grow in IMAGE_GROWTH:
            for batch in IMAGE_BATCHES:
                calls.append((f"{batch}x3x{side + grow}x{side + grow}", (batch, side + grow)))
        make = lambda batch, side: _images(case, batch, side)  # noqa: E731
    else:
        _, _, config, kind = _transformers_entry(case)
        calls = [(f"({batch}, {length})", (batch, length)) for batch, length in TEXT_SHAPES]
        make = lambda batch, length: ((), _text_inputs(kind, config, batch, length))  # noqa: E731
    return [(label, seeded(lambda size=size: make(*size), 1000 + i)) for i, (label, size) in enumerate(calls)]


def generates(case: Case) -> bool:
    """Whether the generation mode runs this case: a transformers language model with a decoder (a
    causal LM, or an encoder-decoder of text; Whisper's prompt is audio of one fixed length)."""
    if zoo_of(case) != "transformers":
        return False
    model_class, _, _, kind = _transformers_entry(case)
    return kind in ("ids", "seq2seq") and model_class.endswith(GENERATING)


def generate_calls(case: Case) -> list[tuple[int, dict[str, Any]]] | None:
    """(prompt length, keyword arguments of `model.generate`) for each call of the generation mode,
    or None when the case does not generate (`generates`). Greedy, batch 1, an attention mask as a
    tokenizer gives it, and exactly `NEW_TOKENS` new tokens (end-of-sequence is not allowed before)."""
    if not generates(case):
        return None
    calls = []
    for i, length in enumerate(PROMPT_LENGTHS):
        ids = seeded(lambda length=length: torch.randint(3, transformers_zoo.VOCAB, (1, length)), 2000 + i)
        kwargs = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "max_new_tokens": NEW_TOKENS,
            "min_new_tokens": NEW_TOKENS,
            "do_sample": False,
            "pad_token_id": 0,
        }
        calls.append((length, kwargs))
    return calls


def start_token(model: Any) -> dict[str, Any]:
    """The extra `generate` keyword an encoder-decoder whose config names no decoder start token
    needs (T5's configs built from scratch): the pad token, T5's convention; nothing otherwise."""
    settings = model.generation_config
    if not model.config.is_encoder_decoder or settings.decoder_start_token_id is not None:
        return {}
    if settings.bos_token_id is not None:
        return {}
    return {"decoder_start_token_id": settings.pad_token_id or 0}


def without_dropout(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with every dropout, drop-path and layer-drop probability set to 0, in training mode.

    Libraries keep these probabilities in several places: `nn.Dropout` modules (`p`), float
    attributes of modules read by functional dropout in `forward` (transformers' `self.dropout`,
    `self.attention_dropout`, `self.layerdrop`; timm's `drop_prob`, `drop_rate`), torchvision's
    `StochasticDepth` (`p`) and transformers' config, read during the call by some models."""
    for module in model.modules():
        if (
            isinstance(module, torch.nn.modules.dropout._DropoutNd)
            or type(module).__name__ == "StochasticDepth"
        ):
            module.p = 0.0
        owners = [module.__dict__]
        if (config := getattr(module, "config", None)) is not None and hasattr(config, "__dict__"):
            owners.append(config.__dict__)
        for attributes in owners:
            for name, value in list(attributes.items()):
                if "drop" in name.lower() and isinstance(value, float):
                    attributes[name] = 0.0
    return model.train()


def _transformers_train_model(case: Case) -> torch.nn.Module:
    import transformers

    model_class, config_class, config, _ = _transformers_entry(case)
    settings = getattr(transformers, config_class)(**config)
    for name, value in list(vars(settings).items()):  # before the model reads them into its modules
        if "drop" in name.lower() and isinstance(value, float):
            setattr(settings, name, 0.0)
    if settings.is_encoder_decoder and getattr(settings, "decoder_start_token_id", None) is None:
        # T5's configs built from scratch name no decoder start token, which its loss needs to shift
        # the labels right into decoder inputs; T5's published checkpoints name the pad token
        settings.decoder_start_token_id = settings.pad_token_id or 0
    return getattr(transformers, model_class)(settings)


def train_model(case: Case) -> torch.nn.Module:
    """A fresh model of the case (weights drawn under the zoo's seed) for training: dropout 0,
    training mode (see `without_dropout`)."""
    if zoo_of(case) == "transformers":
        return without_dropout(seeded(lambda: _transformers_train_model(case)))
    return without_dropout(case.build_model())


def loss_kind(case: Case) -> str:
    """What a training step's loss is made of: "loss" (the model's own `.loss`, given labels: the
    transformers models with a head), "logits" (cross-entropy on the logits a timm or torchvision
    model returns) or "output" (the mean square of the first output: transformers models without a
    head, `LongformerModel` and `T5Model`)."""
    if zoo_of(case) != "transformers":
        return "logits"
    model_class = _transformers_entry(case)[0]
    return "output" if model_class in ("LongformerModel", "T5Model") else "loss"


def _labels(case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
    model_class, _, config, kind = _transformers_entry(case)
    batch = TRAIN_BATCH
    if kind == "pixels":
        return {"labels": torch.randint(0, config["num_labels"], (batch,))}
    if model_class.endswith("ForQuestionAnswering"):
        return {
            "start_positions": torch.randint(0, TRAIN_LENGTH, (batch,)),
            "end_positions": torch.randint(0, TRAIN_LENGTH, (batch,)),
        }
    if model_class.endswith("ForSequenceClassification"):
        return {"labels": torch.randint(0, 2, (batch,))}
    if kind in ("seq2seq", "audio"):  # the model makes its decoder inputs from the labels
        labels = inputs.pop("decoder_input_ids")
        return {"labels": labels}
    return {"labels": inputs["input_ids"].clone()}


def _train_batch(case: Case) -> dict[str, Any]:
    if zoo_of(case) != "transformers":
        side = image_side(case)
        return {
            "images": torch.randn(TRAIN_BATCH, 3, side, side),
            "labels": torch.randint(0, 10, (TRAIN_BATCH,)),
        }
    _, _, config, kind = _transformers_entry(case)
    if kind == "pixels":
        inputs: dict[str, Any] = {"pixel_values": torch.randn(transformers_zoo.IMAGE)}
    else:
        inputs = _text_inputs(kind, config, TRAIN_BATCH, TRAIN_LENGTH)
    if loss_kind(case) == "loss":
        inputs.update(_labels(case, inputs))
    return inputs


def train_batches(case: Case, steps: int) -> list[dict[str, Any]]:
    """One batch per training step: the same shapes, values drawn under seed 3000 + step."""
    return [seeded(lambda: _train_batch(case), 3000 + i) for i in range(steps)]
