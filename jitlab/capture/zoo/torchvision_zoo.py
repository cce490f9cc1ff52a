"""The torchvision part of the model zoo: the classification models of PyTorch's TorchBench, small.

The models are torchvision's classification architectures that TorchBench benchmarks Dynamo on
(alexnet, densenet121, mnasnet1_0, mobilenet_v2, mobilenet_v3_large, resnet18/50/152,
resnext50_32x4d, shufflenet_v2_x1_0, squeezenet1_1, vgg16) and the newer families people call
from torchvision (EfficientNet, RegNet, ConvNeXt, Swin, ViT, GoogLeNet, Inception, Wide ResNet).
Each is built by `torchvision.models.get_model(name, weights=None, num_classes=10)`: the library's
own code with random weights, nothing downloaded, called in eval mode on a batch of two 64x64
images (96x96 for Inception v3, which needs at least 75; ViT is built for 64x64).

torchvision must load with the installed torch: the registry's torchvision is built against the
CUDA torch, so with the CPU build of torch (Python 3.11 through constraints.txt here) importing it
fails; `jitlab capture --zoo torchvision` says so.
"""

from __future__ import annotations

from typing import Any

import torch

from jitlab.capture.corpus import Corpus

CORPUS = Corpus()

#: case name -> (torchvision model name, extra keywords, image side)
MODELS: dict[str, tuple[str, dict[str, Any], int]] = {
    "alexnet": ("alexnet", {}, 64),
    "convnext_tiny": ("convnext_tiny", {}, 64),
    "densenet121": ("densenet121", {}, 64),
    "efficientnet_b0": ("efficientnet_b0", {}, 64),
    "efficientnet_v2_s": ("efficientnet_v2_s", {}, 64),
    "googlenet": ("googlenet", {"aux_logits": False, "init_weights": True}, 64),
    "inception_v3": ("inception_v3", {"aux_logits": False, "init_weights": True}, 96),
    "mnasnet1_0": ("mnasnet1_0", {}, 64),
    "mobilenet_v2": ("mobilenet_v2", {}, 64),
    "mobilenet_v3_large": ("mobilenet_v3_large", {}, 64),
    "regnet_x_400mf": ("regnet_x_400mf", {}, 64),
    "regnet_y_400mf": ("regnet_y_400mf", {}, 64),
    "resnet18": ("resnet18", {}, 64),
    "resnet50": ("resnet50", {}, 64),
    "resnet152": ("resnet152", {}, 64),
    "resnext50_32x4d": ("resnext50_32x4d", {}, 64),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", {}, 64),
    "squeezenet1_1": ("squeezenet1_1", {}, 64),
    "swin_t": ("swin_t", {}, 64),
    "vgg16": ("vgg16", {}, 64),
    "vit_b_16": ("vit_b_16", {"image_size": 64}, 64),
    "wide_resnet50_2": ("wide_resnet50_2", {}, 64),
}


def build(name: str, extra: dict[str, Any]) -> torch.nn.Module:
    """torchvision's model `name` with random weights (nothing downloaded), in eval mode."""
    import torchvision

    return torchvision.models.get_model(name, weights=None, num_classes=10, **extra).eval()


def _register(case: str, name: str, extra: dict[str, Any], side: int) -> None:
    CORPUS.case(case, inputs=lambda: ((torch.randn(2, 3, side, side),), {}), tags=("zoo", "torchvision"))(
        lambda: build(name, extra)
    )


for _case, (_name, _extra, _side) in MODELS.items():
    _register(f"tv_{_case}", _name, _extra, _side)
