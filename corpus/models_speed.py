"""Realistic models at sizes where compiled kernels matter: for `jitlab capture --speed`.

The rest of the corpus is small programs, where the speed-up mostly measures per-call overhead.
These are models of the kind people compile, at sizes a CPU runs in a fraction of a millisecond to
a few milliseconds, so that the speed-up also measures the kernels:

    jitlab capture corpus/models_speed.py --speed --backend inductor

The first four are the models of the issue that set the speed target (TransformerEncoderLayer(256,
4) on 8x64 tokens, a 4-block conv net on 8x3x64x64, a residual MLP with LayerNorm and GELU, a
tanh/sigmoid chain on 256x4096); the others are common building blocks (a GPT block with causal
attention written by hand, a ResNet basic-block stack, an MLP-Mixer block, a depthwise-separable
conv block, an embedding bag classifier). Every case runs in inference mode on the CPU (`eval()`,
gradients off by the model's own `torch.no_grad()`), as served models do.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def shaped(*shape):
    return lambda: ((torch.randn(*shape),), {})


class Inference(nn.Module):
    """Runs the wrapped model in eval mode without gradients (what a served model does)."""

    def __init__(self, model):
        super().__init__()
        self.model = model.eval()

    def forward(self, *args):
        with torch.no_grad():
            return self.model(*args)


@CORPUS.case("transformer_encoder_layer", inputs=shaped(8, 64, 256), tags=("speed", "transformer"))
def transformer_encoder_layer():
    return Inference(nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, batch_first=True, dropout=0.1))


class ConvNet(nn.Module):
    def __init__(self, blocks=4, width=32):
        super().__init__()
        layers, channels = [], 3
        for i in range(blocks):
            layers += [
                nn.Conv2d(channels, width * 2**i, 3, padding=1),
                nn.BatchNorm2d(width * 2**i),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
            ]
            channels = width * 2**i
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(channels, 10)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


@CORPUS.case("conv_net_4_blocks", inputs=shaped(8, 3, 64, 64), tags=("speed", "conv"))
def conv_net_4_blocks():
    return Inference(ConvNet())


class ResidualMLP(nn.Module):
    def __init__(self, width=512, depth=4):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(
                nn.LayerNorm(width), nn.Linear(width, width * 2), nn.GELU(), nn.Linear(width * 2, width)
            )
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.norm(x)


@CORPUS.case("residual_mlp_layernorm_gelu", inputs=shaped(64, 512), tags=("speed", "mlp"))
def residual_mlp_layernorm_gelu():
    return Inference(ResidualMLP())


class PointwiseChain(nn.Module):
    def forward(self, x):
        for _ in range(8):
            x = torch.tanh(x) * torch.sigmoid(x * 1.5) + 0.1
        return x


@CORPUS.case("tanh_sigmoid_chain", inputs=shaped(256, 4096), tags=("speed", "pointwise"))
def tanh_sigmoid_chain():
    return Inference(PointwiseChain())


class CausalSelfAttention(nn.Module):
    def __init__(self, dim=256, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        batch, steps, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=2)
        q = q.view(batch, steps, self.heads, dim // self.heads).transpose(1, 2)
        k = k.view(batch, steps, self.heads, dim // self.heads).transpose(1, 2)
        v = v.view(batch, steps, self.heads, dim // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(dim // self.heads)
        mask = torch.ones(steps, steps, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        out = scores.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, steps, dim))


class GPTBlock(nn.Module):
    def __init__(self, dim=256):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim)
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


@CORPUS.case("gpt_block_causal_attention", inputs=shaped(4, 64, 256), tags=("speed", "transformer"))
def gpt_block_causal_attention():
    return Inference(GPTBlock())


class BasicBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


class SmallResNet(nn.Module):
    def __init__(self, channels=32):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU()
        )
        self.blocks = nn.Sequential(*(BasicBlock(channels) for _ in range(3)))
        self.fc = nn.Linear(channels, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


@CORPUS.case("resnet_basic_blocks", inputs=shaped(8, 3, 32, 32), tags=("speed", "conv"))
def resnet_basic_blocks():
    return Inference(SmallResNet())


class MixerBlock(nn.Module):
    def __init__(self, tokens=64, dim=128):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(
            nn.Linear(tokens, tokens * 2), nn.GELU(), nn.Linear(tokens * 2, tokens)
        )
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


@CORPUS.case("mlp_mixer_block", inputs=shaped(16, 64, 128), tags=("speed", "mlp"))
def mlp_mixer_block():
    return Inference(MixerBlock())


class DepthwiseSeparable(nn.Module):
    def __init__(self, channels=64):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pointwise = nn.Conv2d(channels, channels * 2, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels * 2)

    def forward(self, x):
        x = F.hardswish(self.bn1(self.depthwise(x)))
        return F.hardswish(self.bn2(self.pointwise(x)))


@CORPUS.case("depthwise_separable_conv", inputs=shaped(8, 64, 32, 32), tags=("speed", "conv"))
def depthwise_separable_conv():
    return Inference(DepthwiseSeparable())


class BagClassifier(nn.Module):
    def __init__(self, vocab=10000, dim=128, classes=20):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.hidden = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens):
        h = self.embed(tokens).mean(dim=1)
        return self.out(F.relu(self.hidden(h))).log_softmax(-1)


@CORPUS.case(
    "embedding_bag_classifier",
    inputs=lambda: ((torch.randint(0, 10000, (64, 32)),), {}),
    tags=("speed", "embedding"),
)
def embedding_bag_classifier():
    return Inference(BagClassifier())
