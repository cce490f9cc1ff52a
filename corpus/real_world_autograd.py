"""Custom autograd Functions and training-style forwards, as found in model repositories.

Activation functions written as `torch.autograd.Function` for memory (swish, mish), quantisers with
straight-through estimators (a backward that is not the derivative of the forward), gradient
reversal for domain adaptation, clamps with custom gradients, Functions taking non-tensor arguments,
the `setup_context` style, gradient checkpointing, and forwards that compute the training loss.
The harness compares outputs and state; the gradients of these Functions are compared with eager
by tests/jit/test_jit_autograd_functions.py and tests/jit/test_jit_training.py.
"""

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn
from torch.autograd.function import once_differentiable

from jitlab.capture import Corpus

CORPUS = Corpus()


def one(*shape):
    return lambda: ((torch.randn(*shape),), {})


class SwishFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i * torch.sigmoid(i)
        ctx.save_for_backward(i)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        i = ctx.saved_tensors[0]
        sigmoid_i = torch.sigmoid(i)
        return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))


class MemoryEfficientSwish(nn.Module):
    def forward(self, x):
        return SwishFunction.apply(x)


class MBConvLite(nn.Module):
    """An EfficientNet-style block with the memory-efficient swish."""

    def __init__(self):
        super().__init__()
        self.expand = nn.Conv2d(4, 8, 1, bias=False)
        self.bn0 = nn.BatchNorm2d(8)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.project = nn.Conv2d(8, 4, 1, bias=False)
        self.swish = MemoryEfficientSwish()
        self.eval()

    def forward(self, x):
        h = self.swish(self.bn0(self.expand(x)))
        h = self.swish(self.bn1(self.depthwise(h)))
        return x + self.project(h)


@CORPUS.case("efficientnet_swish_function", inputs=one(2, 4, 6, 6), tags=("autograd_function", "model"))
def efficientnet_swish_function():
    return MBConvLite()


class MishFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.mul(torch.tanh(F.softplus(x)))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x = ctx.saved_tensors[0]
        sx = torch.sigmoid(x)
        fx = F.softplus(x).tanh()
        return grad_output * (fx + x * sx * (1 - fx * fx))


class MishNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = MishFunction.apply(layer(x))
        return x


@CORPUS.case("mish_function_once_differentiable", inputs=one(4, 8), tags=("autograd_function",))
def mish_function_once_differentiable():
    return MishNet()


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class QuantAct(nn.Module):
    """A DoReFa-style activation quantiser: clamp, scale to 2^bits - 1 levels, round with an STE."""

    def __init__(self, bits=4):
        super().__init__()
        self.bits = bits

    def forward(self, x):
        levels = 2**self.bits - 1
        return RoundSTE.apply(torch.clamp(x, 0, 1) * levels) / levels


class QuantWeightLinear(nn.Linear):
    def __init__(self, in_features, out_features, bits=3):
        super().__init__(in_features, out_features)
        self.bits = bits

    def forward(self, x):
        w = torch.tanh(self.weight)
        w = w / (2 * w.abs().max()) + 0.5
        levels = 2**self.bits - 1
        wq = 2 * RoundSTE.apply(w * levels) / levels - 1
        return F.linear(x, wq, self.bias)


class DoReFaNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = QuantWeightLinear(6, 12)
        self.act = QuantAct(4)
        self.fc2 = QuantWeightLinear(12, 3, bits=2)

    def forward(self, x):
        return self.fc2(self.act(torch.sigmoid(self.fc1(x))))


@CORPUS.case("dorefa_ste_quantiser", inputs=one(5, 6), tags=("autograd_function", "quantisation"))
def dorefa_ste_quantiser():
    return DoReFaNet()


class LsqQuantizer(torch.autograd.Function):
    """Learned step size quantisation: non-tensor arguments and a gradient for the step size."""

    @staticmethod
    def forward(ctx, value, step_size, nbits, signed):
        qn, qp = (-(2 ** (nbits - 1)), 2 ** (nbits - 1) - 1) if signed else (0, 2**nbits - 1)
        ctx.save_for_backward(value, step_size)
        ctx.other = (qn, qp)
        return torch.round(torch.clamp(value / step_size, qn, qp)) * step_size

    @staticmethod
    def backward(ctx, grad_output):
        value, step_size = ctx.saved_tensors
        qn, qp = ctx.other
        scaled = value / step_size
        lower, upper = (scaled < qn).float(), (scaled > qp).float()
        middle = 1.0 - lower - upper
        grad_step = (lower * qn + upper * qp + middle * (torch.round(scaled) - scaled)) * grad_output
        return middle * grad_output, grad_step.sum().view(1), None, None


class LsqConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.step = nn.Parameter(torch.tensor([0.1]))
        self.nbits = 4

    def forward(self, x):
        w = LsqQuantizer.apply(self.conv.weight, self.step, self.nbits, True)
        return F.conv2d(x, w, self.conv.bias, padding=1)


@CORPUS.case(
    "lsq_quantiser_non_tensor_args", inputs=one(1, 3, 5, 5), tags=("autograd_function", "quantisation")
)
def lsq_quantiser_non_tensor_args():
    return LsqConv()


class BinarySign(torch.autograd.Function):
    """BinaryNet's sign activation: the backward lets gradients through only where |x| <= 1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 1).to(grad_output.dtype)


class BinaryMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(BinarySign.apply(self.bn(self.fc1(x))))


@CORPUS.case("binarynet_sign_ste_train_mode", inputs=one(6, 10), tags=("autograd_function", "batchnorm"))
def binarynet_sign_ste_train_mode():
    return BinaryMLP()


class GradientReversal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


class DomainAdversarial(nn.Module):
    """DANN: a feature extractor shared by a label head and a domain head behind gradient reversal."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.label_head = nn.Linear(16, 3)
        self.domain_head = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 1))
        self.alpha = 0.5

    def forward(self, x):
        features = self.features(x)
        reversed_features = GradientReversal.apply(features, self.alpha)
        return self.label_head(features), self.domain_head(reversed_features)


@CORPUS.case("dann_gradient_reversal", inputs=one(4, 8), tags=("autograd_function",))
def dann_gradient_reversal():
    return DomainAdversarial()


class ClampWithLeakyGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.bounds = (low, high)
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        low, high = ctx.bounds
        inside = (x >= low) & (x <= high)
        return torch.where(inside, grad_output, 0.01 * grad_output), None, None


class BoundedRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 2))
        self.low, self.high = -0.5, 0.5

    def forward(self, x):
        return ClampWithLeakyGrad.apply(self.net(x), self.low, self.high)


@CORPUS.case("custom_backward_clamp", inputs=one(3, 5), tags=("autograd_function",))
def custom_backward_clamp():
    return BoundedRegressor()


class ArgmaxOneHot(torch.autograd.Function):
    """Hard one-hot in forward, softmax gradient in backward; the index output is not differentiable."""

    @staticmethod
    def forward(ctx, logits):
        index = logits.argmax(dim=-1)
        soft = logits.softmax(dim=-1)
        ctx.save_for_backward(soft)
        ctx.mark_non_differentiable(index)
        return F.one_hot(index, logits.shape[-1]).to(logits.dtype), index

    @staticmethod
    def backward(ctx, grad_hard, grad_index):
        (soft,) = ctx.saved_tensors
        return soft * (grad_hard - (grad_hard * soft).sum(-1, keepdim=True))


class HardRouter(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(6, 4)
        self.experts = nn.ModuleList(nn.Linear(6, 6) for _ in range(4))

    def forward(self, x):
        onehot, index = ArgmaxOneHot.apply(self.gate(x))
        outs = torch.stack([expert(x) for expert in self.experts], dim=1)
        return (onehot.unsqueeze(-1) * outs).sum(1), index


@CORPUS.case(
    "straight_through_router_non_differentiable_index", inputs=one(5, 6), tags=("autograd_function",)
)
def straight_through_router_non_differentiable_index():
    return HardRouter()


class ScaledSquare(torch.autograd.Function):
    """The setup_context style: forward without ctx, default arguments bound by apply."""

    @staticmethod
    def forward(x, scale=2.0):
        return x * x * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.save_for_backward(x)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x * ctx.scale, None


@CORPUS.case("setup_context_style_function", inputs=one(4, 4), tags=("autograd_function",))
def setup_context_style_function():
    def energy(x):
        return ScaledSquare.apply(x).sum(-1) + ScaledSquare.apply(x, 0.5).mean(-1)

    return energy


class ResidualBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 8)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class CheckpointedStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(ResidualBlock() for _ in range(3))
        self.use_checkpoint = True

    def forward(self, x):
        for block in self.blocks:
            if self.use_checkpoint:
                x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x


@CORPUS.case("gradient_checkpointing_blocks", inputs=one(2, 5, 8), tags=("checkpoint", "callback"))
def gradient_checkpointing_blocks():
    return CheckpointedStack()


class Classifier(nn.Module):
    """A training forward that returns the loss, as in many training loops' `model(x, y)`."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.1))
        self.head = nn.Linear(32, 4)
        self.label_smoothing = 0.1

    def forward(self, x, target):
        logits = self.head(self.body(x))
        loss = F.cross_entropy(logits, target, label_smoothing=self.label_smoothing)
        accuracy = (logits.argmax(-1) == target).float().mean()
        return loss, accuracy


@CORPUS.case(
    "train_step_forward_returns_loss",
    inputs=lambda: ((torch.randn(8, 10), torch.randint(0, 4, (8,))), {}),
    tags=("train", "dropout", "batchnorm"),
)
def train_step_forward_returns_loss():
    return Classifier()


class QuantAwareTraining(nn.Module):
    """Quantisation-aware training forward: fake-quantised weights (STE) and a distillation loss."""

    def __init__(self):
        super().__init__()
        self.student = nn.Sequential(QuantWeightLinear(6, 8), QuantAct(3), QuantWeightLinear(8, 3))
        self.teacher = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
        self.temperature = 2.0

    def forward(self, x):
        with torch.no_grad():
            soft_targets = F.softmax(self.teacher(x) / self.temperature, dim=-1)
        log_probs = F.log_softmax(self.student(x) / self.temperature, dim=-1)
        return F.kl_div(log_probs, soft_targets, reduction="batchmean") * self.temperature**2


@CORPUS.case("qat_distillation_loss", inputs=one(5, 6), tags=("train", "autograd_function"))
def qat_distillation_loss():
    return QuantAwareTraining()
