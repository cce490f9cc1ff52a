"""nn.Module structure: containers, normalisation and dropout modes, inheritance, small real models."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


class Stack(nn.Module):
    def __init__(self, depth=3, width=8):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


@CORPUS.case("modulelist_loop", inputs=one(2, 8), tags=("container",))
def modulelist_loop():
    return Stack()


class IndexedStack(Stack):
    def forward(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x) + x
        return x


@CORPUS.case("modulelist_indexing", inputs=one(2, 8), tags=("container", "inheritance"))
def modulelist_indexing():
    return IndexedStack()


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"cls": nn.Linear(8, 3), "reg": nn.Linear(8, 1), "emb": nn.Linear(8, 4)})

    def forward(self, x):
        return {name: head(x) for name, head in self.heads.items()}


@CORPUS.case("moduledict_heads_dict_output", inputs=one(2, 8), tags=("container", "dict"))
def moduledict_heads_dict_output():
    return Heads()


class KeyedRouting(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Linear(4, 4)})
        self.route = "b"

    def forward(self, x):
        return self.experts[self.route](x) + self.experts["a"](x)


@CORPUS.case("moduledict_keyed_by_attribute", inputs=one(3, 4), tags=("container", "attribute"))
def moduledict_keyed_by_attribute():
    return KeyedRouting()


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


@CORPUS.case("batchnorm_train", inputs=one(4, 2, 5, 5), tags=("batchnorm", "state", "train"))
def batchnorm_train():
    return BNNet().train()


@CORPUS.case("batchnorm_eval", inputs=one(4, 2, 5, 5), tags=("batchnorm", "eval"))
def batchnorm_eval():
    model = BNNet()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    return model.eval()


@CORPUS.case("batchnorm1d_train_mlp", inputs=one(6, 8), tags=("batchnorm", "state", "train"))
def batchnorm1d_train_mlp():
    return nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)).train()


class DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc(self.drop(x))


@CORPUS.case("dropout_eval", inputs=one(4, 8), tags=("dropout", "eval"))
def dropout_eval():
    return DropNet().eval()


@CORPUS.case("dropout_train", inputs=one(4, 8), tags=("dropout", "train", "random"))
def dropout_train():
    return DropNet().train()


class FunctionalDropout(nn.Module):
    def forward(self, x):
        return F.dropout(x, p=0.25, training=self.training) * 2


@CORPUS.case("functional_dropout_training_flag", inputs=one(4, 8), tags=("dropout", "random"))
def functional_dropout_training_flag():
    return FunctionalDropout().train()


class Base(nn.Module):
    def __init__(self, width=6):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x)


class Derived(Base):
    def __init__(self):
        super().__init__(width=6)
        self.scale = 3.0

    def forward(self, x):
        return super().forward(x) * self.scale + x


@CORPUS.case("inheritance_super_forward", inputs=one(2, 6), tags=("inheritance", "super"))
def inheritance_super_forward():
    return Derived()


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def transform(self, x):
        return torch.tanh(self.fc(x))

    def forward(self, x):
        return self.transform(x) + x


class GatedBlock(Block):
    def transform(self, x):
        h = super().transform(x)
        return h * torch.sigmoid(h)


@CORPUS.case("overridden_helper_method", inputs=one(3, 5), tags=("inheritance", "super"))
def overridden_helper_method():
    return nn.Sequential(GatedBlock(5), Block(5))


class ResidualBlock(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


@CORPUS.case("resnet_blocks_eval", inputs=one(2, 4, 6, 6), tags=("model", "residual"))
def resnet_blocks_eval():
    return nn.Sequential(ResidualBlock(), ResidualBlock(), nn.AdaptiveAvgPool2d(1), nn.Flatten()).eval()


class SelfAttention(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        head_dim = dim // self.heads

        def split(t):
            return t.view(batch, length, self.heads, head_dim).transpose(1, 2)

        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(batch, length, dim)
        return x + self.proj(out)


@CORPUS.case("attention_block", inputs=one(2, 5, 16), tags=("model", "attention"))
def attention_block():
    return SelfAttention()


class TransformerLayer(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.attn = SelfAttention(dim)
        self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 32), nn.GELU(), nn.Linear(32, dim))

    def forward(self, x, causal: bool = False):
        x = self.attn(x)
        return x + self.ff(x)


@CORPUS.case("transformer_layer", inputs=one(2, 4, 16), tags=("model", "attention"))
def transformer_layer():
    return TransformerLayer()


class ElmanRNN(nn.Module):
    """An RNN written as a Python loop over time steps, no nn.RNN."""

    def __init__(self, inp=4, hidden=6):
        super().__init__()
        self.hidden = hidden
        self.ih = nn.Linear(inp, hidden)
        self.hh = nn.Linear(hidden, hidden)

    def forward(self, xs):
        h = torch.zeros(xs.shape[0], self.hidden)
        outputs = []
        for t in range(xs.shape[1]):
            h = torch.tanh(self.ih(xs[:, t]) + self.hh(h))
            outputs.append(h)
        return torch.stack(outputs, dim=1), h


@CORPUS.case("rnn_loop_tuple_output", inputs=one(2, 5, 4), tags=("model", "loop", "tuple"))
def rnn_loop_tuple_output():
    return ElmanRNN()


class GRUCellByHand(nn.Module):
    def __init__(self, inp=3, hidden=5):
        super().__init__()
        self.gates = nn.Linear(inp + hidden, 2 * hidden)
        self.cand = nn.Linear(inp + hidden, hidden)

    def forward(self, x, h):
        xh = torch.cat([x, h], dim=-1)
        z, r = torch.sigmoid(self.gates(xh)).chunk(2, dim=-1)
        n = torch.tanh(self.cand(torch.cat([x, r * h], dim=-1)))
        return (1 - z) * n + z * h


@CORPUS.case("gru_cell_by_hand", inputs=lambda: ((torch.randn(2, 3), torch.randn(2, 5)), {}), tags=("model",))
def gru_cell_by_hand():
    return GRUCellByHand()


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self._temperature = 2.0

    @property
    def temperature(self):
        return self._temperature * 0.5

    def forward(self, x):
        return self.fc(x) / self.temperature


@CORPUS.case("property_attribute", inputs=one(3, 4), tags=("property",))
def property_attribute():
    return Scaled()


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        return self.fc(self.fc(x))  # the same weights applied twice


@CORPUS.case("shared_weights_twice", inputs=one(2, 5), tags=("module",))
def shared_weights_twice():
    return Shared()


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.linspace(-1, 1, 6))
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        return self.fc(x - self.offset)


@CORPUS.case("registered_buffer", inputs=one(3, 6), tags=("buffer",))
def registered_buffer():
    return WithBuffer()


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)

    def forward(self, tokens):
        h = self.emb(tokens).mean(1)
        return h @ self.emb.weight.t()  # tied output projection


@CORPUS.case("tied_embedding_logits", inputs=lambda: ((torch.randint(0, 10, (2, 4)),), {}), tags=("model",))
def tied_embedding_logits():
    return Tied()


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(2)])
        self.decoder = nn.Linear(8, 6)

    def forward(self, x):
        h = self.encoder(x)
        skips = []
        for block in self.blocks:
            skips.append(h)
            h = block(h) + skips[-1]
        return self.decoder(h)


@CORPUS.case("nested_containers_with_skips", inputs=one(2, 6), tags=("container", "model"))
def nested_containers_with_skips():
    return Nested()
