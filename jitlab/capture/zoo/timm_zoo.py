"""The timm part of the model zoo: the models of PyTorch's Dynamo timm benchmark, small.

The models are those of PyTorch's `benchmarks/dynamo/timm_models_list.txt` and of its earlier,
longer list (the families it measured: NFNet, RegNet, ResNeSt, VoVNet, DLA, DPN, HRNet, MLP-Mixer,
PiT, Twins, XCiT, ...), each at its smallest variant where timm has several (the list's name is kept
as the case name when it was built as it is). Each is built by
`timm.create_model(name, pretrained=False, num_classes=10)`: the library's own code with random
weights, nothing downloaded, called in eval mode on a batch of two 64x64 images (transformers are
built for that size with `img_size`; Inception v3 gets 96x96, as it needs at least 75).

timm imports torchvision: see torchvision_zoo.py for where that loads.
"""

from __future__ import annotations

from typing import Any

import torch

from jitlab.capture.corpus import Corpus
from jitlab.capture.zoo import no_downloads

no_downloads()  # before the library is imported (in a factory): the Hub is off, nothing can download

CORPUS = Corpus()

SMALL = {"img_size": 64}

#: case name -> (timm model name, extra keywords, image side)
MODELS: dict[str, tuple[str, dict[str, Any], int]] = {
    # benchmarks/dynamo/timm_models_list.txt
    "adv_inception_v3": ("inception_v3", {}, 96),
    "beit_base_patch16_224": ("beit_base_patch16_224", SMALL, 64),
    "convnextv2_nano": ("convnextv2_nano", {}, 64),
    "deit_base_distilled_patch16_224": ("deit_base_distilled_patch16_224", SMALL, 64),
    "deit_tiny_patch16_224": ("deit_tiny_patch16_224", SMALL, 64),
    "dm_nfnet_f0": ("dm_nfnet_f0", {}, 64),
    "ghostnet_100": ("ghostnet_100", {}, 64),
    "inception_v3": ("inception_v3", {}, 96),
    "mobilenetv2_100": ("mobilenetv2_100", {}, 64),
    "mobilenetv3_large_100": ("mobilenetv3_large_100", {}, 64),
    "mobilevit_s": ("mobilevit_s", {}, 64),
    "nfnet_l0": ("nfnet_l0", {}, 64),
    "repvgg_a2": ("repvgg_a2", {}, 64),
    "swin_tiny_patch4_window7_224": ("swin_tiny_patch4_window7_224", {"img_size": 224}, 224),
    "tf_efficientnet_b0": ("tf_efficientnet_b0", {}, 64),
    "visformer_tiny": ("visformer_tiny", SMALL, 64),
    "vit_small_patch14_dinov2": ("vit_small_patch14_dinov2", {"img_size": 56}, 56),
    "vit_base_patch16_siglip_256": ("vit_base_patch16_siglip_256", SMALL, 64),
    # the earlier, longer list (smallest variants)
    "botnet26t_256": ("botnet26t_256", SMALL, 64),
    "coat_lite_mini": ("coat_lite_mini", {}, 224),
    "convit_tiny": ("convit_tiny", SMALL, 64),
    "cspdarknet53": ("cspdarknet53", {}, 64),
    "cspresnet50": ("cspresnet50", {}, 64),
    "densenet121": ("densenet121", {}, 64),
    "dla34": ("dla34", {}, 64),
    "dpn68": ("dpn68", {}, 64),
    "efficientnet_b0": ("efficientnet_b0", {}, 64),
    "ese_vovnet19b_dw": ("ese_vovnet19b_dw", {}, 64),
    "fbnetc_100": ("fbnetc_100", {}, 64),
    "gernet_s": ("gernet_s", {}, 64),
    "gmlp_ti16_224": ("gmlp_ti16_224", SMALL, 64),
    "hrnet_w18_small": ("hrnet_w18_small", {}, 64),
    "lcnet_050": ("lcnet_050", {}, 64),
    "mixer_s16_224": ("mixer_s16_224", SMALL, 64),
    "mixnet_s": ("mixnet_s", {}, 64),
    "mnasnet_100": ("mnasnet_100", {}, 64),
    "pit_ti_224": ("pit_ti_224", SMALL, 64),
    "poolformer_s12": ("poolformer_s12", {}, 64),
    "regnetx_002": ("regnetx_002", {}, 64),
    "regnety_002": ("regnety_002", {}, 64),
    "res2net50_14w_8s": ("res2net50_14w_8s", {}, 64),
    "resmlp_12_224": ("resmlp_12_224", SMALL, 64),
    "resnest14d": ("resnest14d", {}, 64),
    "rexnet_100": ("rexnet_100", {}, 64),
    "selecsls42b": ("selecsls42b", {}, 64),
    "spnasnet_100": ("spnasnet_100", {}, 64),
    "tinynet_a": ("tinynet_a", {}, 64),
    "twins_pcpvt_small": ("twins_pcpvt_small", SMALL, 64),
    "xcit_tiny_12_p16_224": ("xcit_tiny_12_p16_224", SMALL, 64),
}


def build(name: str, extra: dict[str, Any]) -> torch.nn.Module:
    """timm's model `name` with random weights (nothing downloaded), in eval mode."""
    import timm

    return timm.create_model(name, pretrained=False, num_classes=10, **extra).eval()


def _register(case: str, name: str, extra: dict[str, Any], side: int) -> None:
    CORPUS.case(case, inputs=lambda: ((torch.randn(2, 3, side, side),), {}), tags=("zoo", "timm"))(
        lambda: build(name, extra)
    )


for _case, (_name, _extra, _side) in MODELS.items():
    _register(f"timm_{_case}", _name, _extra, _side)
