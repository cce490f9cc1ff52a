"""Python patterns of research code around the tensors: attribute-dict configs (EasyDict), config
objects with `__getattr__`, callbacks handed to `map`/`sorted`/`functools.reduce`/`min`/`max`/
`filter`, callable objects, user containers with `__len__`/`__iter__`/`__contains__`, buffers and
caches created lazily on the first call, tensors held in plain objects and dicts, slicing lists of
tensors, and attribute caches rewritten when the input shape changes.
"""

import functools
import math
import operator

import torch
import torch.nn.functional as F
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


class EasyDict(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


class ConfiguredMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        dims = [cfg.in_dim] + [cfg.hidden] * cfg.depth
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.head = nn.Linear(cfg.hidden, cfg.out_dim)

    def forward(self, x):
        act = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}[self.cfg.act]
        for layer in self.layers:
            x = act(layer(x))
            if self.cfg.get("residual_scale"):
                x = x * self.cfg.residual_scale
        return self.head(F.dropout(x, self.cfg.dropout, self.training))


@CORPUS.case("easydict_config", inputs=one(4, 6), tags=("config", "special_method"))
def easydict_config():
    cfg = EasyDict(in_dim=6, hidden=8, depth=2, out_dim=3, act="gelu", dropout=0.0, residual_scale=0.5)
    return ConfiguredMLP(cfg).eval()


class Namespace:
    """An argparse-like namespace that falls back to defaults through `__getattr__`."""

    DEFAULTS = {"eps": 1e-5, "temperature": 0.5, "normalize": True}

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __getattr__(self, name):
        if name in Namespace.DEFAULTS:
            return Namespace.DEFAULTS[name]
        raise AttributeError(f"no option {name}")


class ContrastiveHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.opts = Namespace(proj_dim=4)
        self.proj = nn.Linear(6, self.opts.proj_dim)

    def forward(self, a, b):
        za, zb = self.proj(a), self.proj(b)
        if self.opts.normalize:
            za = F.normalize(za, dim=-1, eps=self.opts.eps)
            zb = F.normalize(zb, dim=-1, eps=self.opts.eps)
        logits = za @ zb.t() / self.opts.temperature
        labels = torch.arange(a.shape[0])
        return F.cross_entropy(logits, labels)


@CORPUS.case(
    "namespace_getattr_defaults",
    inputs=lambda: ((torch.randn(5, 6), torch.randn(5, 6)), {}),
    tags=("config", "special_method"),
)
def namespace_getattr_defaults():
    return ContrastiveHead()


class Pipeline(nn.Module):
    """Stages applied with functools.reduce and a bound method as the reducer."""

    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Linear(5, 5), nn.Linear(5, 5), nn.Linear(5, 5)])
        self.gain = 0.5

    def apply_stage(self, x, stage):
        return x + self.gain * torch.tanh(stage(x))

    def forward(self, x):
        return functools.reduce(self.apply_stage, self.stages, x)


@CORPUS.case("reduce_with_bound_method", inputs=one(3, 5), tags=("callback",))
def reduce_with_bound_method():
    return Pipeline()


class MultiScale(nn.Module):
    """Heads applied with map() and a lambda, fused with a weighted sum."""

    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList(nn.Conv2d(3, 2, k, padding=k // 2) for k in (1, 3, 5))
        self.weights = [0.2, 0.3, 0.5]

    def forward(self, x):
        outs = list(map(lambda head: head(x), self.heads))
        return sum(w * o for w, o in zip(self.weights, outs))


@CORPUS.case("map_lambda_over_modules", inputs=one(1, 3, 6, 6), tags=("callback",))
def map_lambda_over_modules():
    return MultiScale()


def by_channels(layer):
    return layer.out_channels


class SortedBranches(nn.Module):
    """Branches sorted by a key function and the widest chosen with max(key=...)."""

    def __init__(self):
        super().__init__()
        self.branches = nn.ModuleList(nn.Conv2d(2, c, 1) for c in (6, 2, 4))

    def forward(self, x):
        ordered = sorted(self.branches, key=by_channels)
        widest = max(self.branches, key=by_channels)
        narrow = min(self.branches, key=lambda b: b.out_channels)
        return torch.cat([b(x) for b in ordered], dim=1), widest(x).mean() - narrow(x).mean()


@CORPUS.case("sorted_and_max_with_key", inputs=one(1, 2, 4, 4), tags=("callback",))
def sorted_and_max_with_key():
    return SortedBranches()


class FilteredLosses(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.loss_weights = {"l1": 1.0, "l2": 0.0, "cos": 0.5}

    def forward(self, x, y):
        pred = self.fc(x)
        losses = {
            "l1": lambda: F.l1_loss(pred, y),
            "l2": lambda: F.mse_loss(pred, y),
            "cos": lambda: (1 - F.cosine_similarity(pred, y)).mean(),
        }
        active = filter(lambda name: self.loss_weights[name] > 0, sorted(losses))
        return sum(self.loss_weights[name] * losses[name]() for name in active)


@CORPUS.case(
    "filter_and_dict_of_lambdas",
    inputs=lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {}),
    tags=("callback",),
)
def filter_and_dict_of_lambdas():
    return FilteredLosses()


class Compose:
    """torchvision-style transform composition: callable objects holding parameters."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def __len__(self):
        return len(self.transforms)


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def __call__(self, x):
        return (x - self.mean) / self.std


class RandomlessCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, x):
        h, w = x.shape[-2:]
        top, left = (h - self.size) // 2, (w - self.size) // 2
        return x[..., top : top + self.size, left : left + self.size]


class Preprocessed(nn.Module):
    def __init__(self):
        super().__init__()
        self.transform = Compose([RandomlessCrop(4), Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.3])])
        self.conv = nn.Conv2d(3, 2, 3)

    def forward(self, x):
        return self.conv(self.transform(x)).flatten(1) * len(self.transform)


@CORPUS.case("callable_transform_objects", inputs=one(2, 3, 6, 6), tags=("callable", "special_method"))
def callable_transform_objects():
    return Preprocessed()


class TensorBank:
    """A user container of named tensors: __len__, __iter__, __contains__ and __getitem__."""

    def __init__(self):
        self._items = {"bias": torch.linspace(-1, 1, 4), "scale": torch.full((4,), 1.5)}

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __contains__(self, name):
        return name in self._items

    def __getitem__(self, name):
        return self._items[name]


class BankModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.bank = TensorBank()

    def forward(self, x):
        if "scale" in self.bank:
            x = x * self.bank["scale"]
        for name in self.bank:
            x = x + 0.1 * self.bank[name]
        return x / len(self.bank)


@CORPUS.case("user_container_special_methods", inputs=one(3, 4), tags=("special_method",))
def user_container_special_methods():
    return BankModel()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    """Rotary embeddings with cos/sin caches built lazily and rebuilt when the length changes."""

    def __init__(self, dim):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.seq_len_cached = None
        self.cos_cached = None
        self.sin_cached = None

    def forward(self, x):
        seq_len = x.shape[1]
        if seq_len != self.seq_len_cached:
            self.seq_len_cached = seq_len
            t = torch.arange(seq_len).type_as(self.inv_freq)
            freqs = torch.einsum("i,j->ij", t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.cos_cached = emb.cos()[None, :, :]
            self.sin_cached = emb.sin()[None, :, :]
        return x * self.cos_cached + rotate_half(x) * self.sin_cached


@CORPUS.case("rotary_cache_created_lazily", inputs=one(2, 5, 8), tags=("lazy", "attribute"))
def rotary_cache_created_lazily():
    return RotaryEmbedding(8)


class SinusoidalPositions(nn.Module):
    """A positional table registered as a buffer during the first forward."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if not hasattr(self, "table"):
            position = torch.arange(x.shape[1]).unsqueeze(1)
            div = torch.exp(torch.arange(0, self.dim, 2) * (-math.log(10000.0) / self.dim))
            table = torch.zeros(x.shape[1], self.dim)
            table[:, 0::2] = torch.sin(position * div)
            table[:, 1::2] = torch.cos(position * div)
            self.register_buffer("table", table, persistent=False)
        return x + self.table[: x.shape[1]]


@CORPUS.case("buffer_registered_in_first_forward", inputs=one(2, 6, 4), tags=("lazy", "buffers"))
def buffer_registered_in_first_forward():
    return SinusoidalPositions(4)


class AnchorStore:
    def __init__(self):
        self.anchors = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 2.0, 2.0], [0.5, 0.5, 1.5, 1.5]])
        self.variances = (0.1, 0.2)


class BoxDecoder(nn.Module):
    """SSD-style box decoding with anchors held in a plain object and variances in a tuple."""

    def __init__(self):
        super().__init__()
        self.store = AnchorStore()
        self.reg = nn.Linear(6, 3 * 4)

    def forward(self, feats):
        deltas = self.reg(feats).view(-1, 3, 4)
        anchors = self.store.anchors
        centers = (anchors[:, :2] + anchors[:, 2:]) / 2
        sizes = anchors[:, 2:] - anchors[:, :2]
        var_c, var_s = self.store.variances
        pred_c = centers + deltas[..., :2] * var_c * sizes
        pred_s = sizes * torch.exp(deltas[..., 2:] * var_s)
        return torch.cat([pred_c - pred_s / 2, pred_c + pred_s / 2], dim=-1)


@CORPUS.case("tensors_in_plain_object", inputs=one(2, 6), tags=("plain_object",))
def tensors_in_plain_object():
    return BoxDecoder()


class ClassEmbeddings(nn.Module):
    """Prototype tensors in a dict held by the module (not registered as buffers)."""

    def __init__(self):
        super().__init__()
        self.prototypes = {name: torch.randn(5) for name in ("cat", "dog", "bird")}
        self.temperature = 0.1

    def forward(self, x):
        names = sorted(self.prototypes)
        protos = torch.stack([self.prototypes[n] for n in names])
        sims = F.cosine_similarity(x.unsqueeze(1), protos.unsqueeze(0), dim=-1)
        return (sims / self.temperature).softmax(-1), {n: sims[:, i] for i, n in enumerate(names)}


@CORPUS.case("tensors_in_module_dict_attribute", inputs=one(4, 5), tags=("dict",))
def tensors_in_module_dict_attribute():
    return ClassEmbeddings()


def pairwise_sum(features):
    """Fuse a list of feature maps: the first plus every later one (FPN-style top-down sum)."""
    out = features[0]
    for f in features[1:]:
        out = out + f
    return out, features[-1] - features[-2]


@CORPUS.case(
    "list_of_tensors_sliced",
    inputs=lambda: (([torch.randn(2, 3) for _ in range(4)],), {}),
    tags=("list", "slice"),
)
def list_of_tensors_sliced():
    return pairwise_sum


class FeaturePyramid(nn.Module):
    def __init__(self):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(2, 3, 1) for _ in range(3))

    def forward(self, feats):
        laterals = [conv(f) for conv, f in zip(self.lateral, feats)]
        out = laterals[-1]
        for lateral in laterals[-2::-1]:
            out = F.interpolate(out, size=lateral.shape[-2:], mode="nearest") + lateral
        return out, laterals[1:]


@CORPUS.case(
    "fpn_reversed_slice",
    inputs=lambda: (([torch.randn(1, 2, 8, 8), torch.randn(1, 2, 4, 4), torch.randn(1, 2, 2, 2)],), {}),
    tags=("list", "slice", "model"),
)
def fpn_reversed_slice():
    return FeaturePyramid()


class MaskedConv(nn.Conv2d):
    """Partial convolution (NVIDIA): the mask ratio is cached on the module per input size."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("mask_kernel", torch.ones(1, 1, *self.kernel_size))
        self.last_size = (None, None, None, None)
        self.mask_ratio = None

    def forward(self, x):
        if self.last_size != tuple(x.shape):
            self.last_size = tuple(x.shape)
            with torch.no_grad():
                mask = torch.ones(1, 1, x.shape[2], x.shape[3])
                update = F.conv2d(mask, self.mask_kernel, padding=self.padding)
                ratio = self.kernel_size[0] * self.kernel_size[1] / (update + 1e-8)
                self.mask_ratio = ratio * torch.clamp(update, 0, 1)
        return super().forward(x) * self.mask_ratio


class InpaintingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(MaskedConv(1, 2, 3, padding=1), nn.ReLU(), MaskedConv(2, 1, 3, padding=1))

    def forward(self, x):
        return self.enc(x)


@CORPUS.case("partial_conv_size_cache", inputs=one(1, 1, 5, 5), tags=("attribute", "model"))
def partial_conv_size_cache():
    return InpaintingNet()


class Registry:
    """Layers looked up by name with operator.attrgetter, as plugin registries do."""

    def __init__(self, **layers):
        self.__dict__.update(layers)


class RegistryModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(4, 4)
        self.fc_out = nn.Linear(4, 2)
        self.registry = Registry(scale=torch.tensor([1.0, 2.0, 3.0, 4.0]), order=("fc_in", "fc_out"))

    def forward(self, x):
        get_scale = operator.attrgetter("scale")
        for name in self.registry.order:
            x = getattr(self, name)(x * get_scale(self.registry)[: x.shape[-1]])
        return x


@CORPUS.case("attrgetter_on_registry_object", inputs=one(3, 4), tags=("callback", "plain_object"))
def attrgetter_on_registry_object():
    return RegistryModel()


class DeepSupervision(nn.Module):
    """Auxiliary losses summed over a generator of (weight, head) pairs built with zip and map."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.heads = nn.ModuleList(nn.Linear(4, 1) for _ in range(3))
        self.aux_weights = (0.25, 0.5, 1.0)

    def forward(self, x, y):
        feats = []
        for layer in self.trunk:
            x = torch.relu(layer(x))
            feats.append(x)
        preds = list(map(lambda head, f: head(f), self.heads, feats))
        losses = map(lambda p: F.mse_loss(p, y), preds)
        return sum(w * loss for w, loss in zip(self.aux_weights, losses)), preds[-1]


@CORPUS.case(
    "deep_supervision_map_zip_losses",
    inputs=lambda: ((torch.randn(4, 4), torch.randn(4, 1)), {}),
    tags=("callback", "train"),
)
def deep_supervision_map_zip_losses():
    return DeepSupervision()
