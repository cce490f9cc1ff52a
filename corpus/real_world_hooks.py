"""Module hooks, weight normalisation, parametrizations and writes to parameters, as found in model
repositories: feature-extraction hooks, input-normalising pre-hooks, hooks with keyword arguments,
`torch.nn.utils.weight_norm` (a pre-hook) and `parametrizations.weight_norm`, spectral norm in
discriminators (in training mode, where every call updates the power-iteration buffers), custom
parametrizations, WGAN weight clipping through `.data`, EMA updates under `no_grad`.
"""

import torch
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch import nn

from jitlab.capture import Corpus

CORPUS = Corpus()


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


class FeatureExtractor(nn.Module):
    """Forward hooks that store intermediate activations on the model (perceptual losses, probes)."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU()
        )
        self.features = {}
        for name in ("1", "3"):
            self.backbone._modules[name].register_forward_hook(self.save(name))

    def save(self, name):
        def hook(module, inputs, output):
            self.features[name] = output.detach()

        return hook

    def forward(self, x):
        out = self.backbone(x)
        return out.mean(dim=(2, 3)), self.features["1"].sum()


@CORPUS.case("forward_hooks_store_features", inputs=one(2, 3, 5, 5), tags=("hooks",))
def forward_hooks_store_features():
    return FeatureExtractor()


class Normalised(nn.Module):
    """A pre-hook normalising the input of the first layer, and a hook rescaling the output."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 2))
        self.register_buffer("mean", torch.linspace(-1, 1, 6))
        self.register_buffer("std", torch.linspace(0.5, 2, 6))
        self.net[0].register_forward_pre_hook(lambda module, args: ((args[0] - self.mean) / self.std,))
        self.net.register_forward_hook(lambda module, args, output: output * 10.0)

    def forward(self, x):
        return self.net(x)


@CORPUS.case("pre_hook_normalises_input", inputs=one(4, 6), tags=("hooks",))
def pre_hook_normalises_input():
    return Normalised()


class KwargsHooks(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.attn.register_forward_pre_hook(self.force_weights, with_kwargs=True)
        self.attn.register_forward_hook(self.keep_weights, with_kwargs=True, always_call=True)
        self.last_weights = None

    def force_weights(self, module, args, kwargs):
        kwargs = dict(kwargs)
        kwargs["need_weights"] = True
        kwargs["average_attn_weights"] = False
        return args, kwargs

    def keep_weights(self, module, args, kwargs, output):
        self.last_weights = output[1].detach()
        return output[0]

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)


@CORPUS.case("hooks_with_kwargs_and_always_call", inputs=one(2, 3, 8), tags=("hooks", "attention"))
def hooks_with_kwargs_and_always_call():
    return KwargsHooks()


class WeightNormTCN(nn.Module):
    """A temporal convolution block with the old hook-based weight norm (WaveNet/TCN code)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.utils.weight_norm(nn.Conv1d(3, 6, 3, padding=2, dilation=1))
        self.conv2 = nn.utils.weight_norm(nn.Conv1d(6, 6, 3, padding=4, dilation=2))
        self.downsample = nn.Conv1d(3, 6, 1)
        self.chomp1, self.chomp2 = 2, 4

    def forward(self, x):
        h = torch.relu(self.conv1(x)[:, :, : -self.chomp1])
        h = torch.relu(self.conv2(h)[:, :, : -self.chomp2])
        return torch.relu(h + self.downsample(x))


@CORPUS.case("weight_norm_hook_tcn", inputs=one(2, 3, 7), tags=("weight_norm", "hooks"))
def weight_norm_hook_tcn():
    return WeightNormTCN()


class WeightNormParametrized(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.utils.parametrizations.weight_norm(nn.Linear(5, 8))
        self.fc2 = nn.utils.parametrizations.weight_norm(nn.Linear(8, 3), dim=None)

    def forward(self, x):
        return self.fc2(F.elu(self.fc1(x)))


@CORPUS.case("weight_norm_parametrization", inputs=one(4, 5), tags=("weight_norm", "parametrize"))
def weight_norm_parametrization():
    return WeightNormParametrized()


class SNDiscriminator(nn.Module):
    """An SN-GAN discriminator in training mode: power iteration updates u and v on every call."""

    def __init__(self):
        super().__init__()
        self.conv = nn.utils.parametrizations.spectral_norm(nn.Conv2d(3, 4, 3, stride=2, padding=1))
        self.fc = nn.utils.parametrizations.spectral_norm(nn.Linear(4 * 3 * 3, 1))

    def forward(self, x):
        h = F.leaky_relu(self.conv(x), 0.2)
        return self.fc(h.flatten(1))


@CORPUS.case(
    "spectral_norm_train_discriminator", inputs=one(2, 3, 6, 6), tags=("spectral_norm", "parametrize")
)
def spectral_norm_train_discriminator():
    return SNDiscriminator()


class SNOldEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.utils.spectral_norm(nn.Linear(6, 6))
        self.fc2 = nn.utils.spectral_norm(nn.Linear(6, 1))
        self.eval()

    def forward(self, x):
        return self.fc2(F.leaky_relu(self.fc1(x), 0.1))


@CORPUS.case("spectral_norm_hook_eval", inputs=one(3, 6), tags=("spectral_norm", "hooks"))
def spectral_norm_hook_eval():
    return SNOldEval()


class SNOldTrain(SNOldEval):
    def __init__(self):
        super().__init__()
        self.train()


@CORPUS.case("spectral_norm_hook_train", inputs=one(3, 6), tags=("spectral_norm", "hooks"))
def spectral_norm_hook_train():
    return SNOldTrain()


class Symmetric(nn.Module):
    def forward(self, weight):
        return weight.triu() + weight.triu(1).transpose(-1, -2)


class PositiveDiagonal(nn.Module):
    def __init__(self, floor=0.05):
        super().__init__()
        self.floor = floor

    def forward(self, weight):
        return weight - torch.diag(weight.diagonal()) + torch.diag(F.softplus(weight.diagonal()) + self.floor)


class Metric(nn.Module):
    """A learned metric: a symmetric matrix with a positive diagonal, two chained parametrizations."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4, bias=False)
        parametrize.register_parametrization(self.proj, "weight", Symmetric())
        parametrize.register_parametrization(self.proj, "weight", PositiveDiagonal())

    def forward(self, x, y):
        d = x - y
        return (self.proj(d) * d).sum(-1)


@CORPUS.case(
    "chained_custom_parametrizations",
    inputs=lambda: ((torch.randn(3, 4), torch.randn(3, 4)), {}),
    tags=("parametrize",),
)
def chained_custom_parametrizations():
    return Metric()


class Critic(nn.Module):
    """WGAN critic: weight clipping through `.data` before each forward."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
        self.clip = 0.1

    def forward(self, x):
        for p in self.parameters():
            p.data.clamp_(-self.clip, self.clip)
        return self.net(x).mean()


@CORPUS.case("wgan_clip_parameters_data", inputs=one(5, 6), tags=("data_write", "parameters"))
def wgan_clip_parameters_data():
    return Critic()


class MaxNormLinear(nn.Linear):
    """Max-norm constraint: `.data` of the weight replaced by its renormalised copy."""

    def forward(self, x):
        self.weight.data = torch.renorm(self.weight.data, p=2, dim=0, maxnorm=0.5)
        return super().forward(x)


@CORPUS.case("max_norm_weight_data_assignment", inputs=one(3, 5), tags=("data_write", "parameters"))
def max_norm_weight_data_assignment():
    return MaxNormLinear(5, 4)


class MeanTeacher(nn.Module):
    """EMA of the student's weights into a teacher, in place under no_grad, then both forwards."""

    def __init__(self):
        super().__init__()
        self.student = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
        self.teacher = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
        self.teacher.load_state_dict(self.student.state_dict())
        self.decay = 0.9

    def forward(self, x):
        with torch.no_grad():
            for t, s in zip(self.teacher.parameters(), self.student.parameters()):
                t.mul_(self.decay).add_(s, alpha=1 - self.decay)
        return self.student(x), self.teacher(x).detach()


@CORPUS.case("mean_teacher_ema_update", inputs=one(3, 4), tags=("parameters", "no_grad"))
def mean_teacher_ema_update():
    return MeanTeacher()


class ActivationStats(nn.Module):
    """A hook that keeps running statistics of a layer's output in a buffer (monitoring code)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)
        self.register_buffer("act_mean", torch.zeros(5))
        self.fc.register_forward_hook(self.track)

    def track(self, module, inputs, output):
        with torch.no_grad():
            self.act_mean.mul_(0.9).add_(output.mean(0), alpha=0.1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


@CORPUS.case("hook_updates_buffer", inputs=one(4, 5), tags=("hooks", "buffers"))
def hook_updates_buffer():
    return ActivationStats()


class SNEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.utils.parametrizations.spectral_norm(nn.Conv2d(2, 3, 3, padding=1))
        self.eval()

    def forward(self, x):
        return F.leaky_relu(self.conv(x), 0.2).mean(dim=(2, 3))


@CORPUS.case(
    "spectral_norm_parametrization_eval", inputs=one(2, 2, 4, 4), tags=("spectral_norm", "parametrize")
)
def spectral_norm_parametrization_eval():
    return SNEval()


class TokenClassifier(nn.Module):
    """Pre-hook and hook on the root module itself: input clipping and output temperature."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(5, 8)
        self.out = nn.Linear(8, 3)
        self.temperature = 2.0
        self.register_forward_pre_hook(lambda module, args: (args[0].clamp(-2, 2),))
        self.register_forward_hook(lambda module, args, output: output / module.temperature)

    def forward(self, x):
        return self.out(torch.relu(self.embed(x)))


@CORPUS.case("hooks_on_the_root_module", inputs=one(3, 5), tags=("hooks",))
def hooks_on_the_root_module():
    return TokenClassifier()
