"""A generated program as data, and its rendering to Python source.

The generator builds a `Program`; the shrinker removes statements, calls and changes from it; the
oracle and the reproducer render it. Keeping the program as data (statements with the features
they exercise and the top-level definitions they need) makes every subset of its statements a
valid program: rendering includes only the definitions that the remaining statements use.

A rendered program is a plain module: `make()` builds the target (a function or an `nn.Module`),
`CALLS` lists one setup function per call (it changes the outside state, then returns the call's
`(args, kwargs)`), and `finish(target, out)`, when present, runs a training step after a call.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

TARGET = "target"


@dataclass(frozen=True)
class Stmt:
    """A statement of the target's body (lines indented as at the top of the body), working on the
    tensor `h` of shape (batch, width); `defs` are the top-level definitions it uses."""

    text: str
    features: tuple[str, ...]
    defs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    """A statement run before a call: it changes what the program reads from outside (`model` is
    the target); `assigns` are the globals it rebinds."""

    text: str
    features: tuple[str, ...]
    defs: tuple[str, ...] = ()
    assigns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    """One call of the schedule: the changes made before it and its inputs."""

    changes: tuple[Change, ...] = ()
    batch: int = 3
    dtype: str = "float32"
    requires_grad: bool = False
    extra: int = 0  # tensors passed through *extra
    options: tuple[tuple[str, str], ...] = ()  # keyword arguments: (name, Python expression)
    n: int | None = None  # the value given to the defaulted parameter n; None: its default
    alias: bool = False  # the extra tensors are x itself
    transposed: bool = False  # x is a transposed (non-contiguous) view


@dataclass(frozen=True)
class Program:
    """A program of the fuzzer: `kind` is "function" or "module"; `defs` are all top-level
    definitions the generator made, in order (key, source); `train` adds a training step after
    each call (backward and, when there are parameters, an SGD step)."""

    seed: int
    kind: str
    width: int
    defs: tuple[tuple[str, str], ...]
    body: tuple[Stmt, ...]
    returns: str
    calls: tuple[Call, ...]
    train: bool = False
    label: str = field(default="", compare=False)  # e.g. "seed 7, program 12"

    @property
    def features(self) -> frozenset[str]:
        """The feature classes the program exercises (for the summary per class)."""
        found = {self.kind}
        for stmt in self.body:
            found.update(stmt.features)
        for call in self.calls:
            for change in call.changes:
                found.update(change.features)
        if any(c.alias or c.transposed for c in self.calls):
            found.add("aliasing")
        if len({(c.batch, c.dtype, c.requires_grad, c.transposed) for c in self.calls}) > 1:
            found.add("guards")
        if self.train:
            found.add("autograd")
        if self.returns in ("tuple", "dict", "list"):
            found.add("containers")
        if self.returns == "dataclass":
            found.add("dataclass")
        return frozenset(found)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> Program:
        data = json.loads(text)
        return Program(
            seed=data["seed"],
            kind=data["kind"],
            width=data["width"],
            defs=tuple((k, v) for k, v in data["defs"]),
            body=tuple(Stmt(s["text"], tuple(s["features"]), tuple(s["defs"])) for s in data["body"]),
            returns=data["returns"],
            calls=tuple(
                Call(
                    changes=tuple(
                        Change(c["text"], tuple(c["features"]), tuple(c["defs"]), tuple(c["assigns"]))
                        for c in call["changes"]
                    ),
                    batch=call["batch"],
                    dtype=call["dtype"],
                    requires_grad=call["requires_grad"],
                    extra=call["extra"],
                    options=tuple((k, v) for k, v in call["options"]),
                    n=call["n"],
                    alias=call.get("alias", False),
                    transposed=call.get("transposed", False),
                )
                for call in data["calls"]
            ),
            train=data["train"],
            label=data.get("label", ""),
        )


# -- rendering ---------------------------------------------------------------------------------------

RETURNS = {
    "h": ("return h", "out"),
    "tuple": ("return h, n", "out[0]"),
    "list": ("return [h, h.shape[0]]", "out[0]"),
    "dict": ('return {"h": h, "rows": h.shape[0]}', 'out["h"]'),
    "dataclass": ("return Result(h, h.shape[0])", "out.value"),
}
RESULT_DEF = (
    "Result",
    "@dataclasses.dataclass\nclass Result:\n    value: torch.Tensor\n    rows: int",
)
MODULE_DEFS = ("Block",)
BLOCK_DEF = (
    "Block",
    "class Block(nn.Module):\n"
    "    def __init__(self, width):\n"
    "        super().__init__()\n"
    "        self.inner = nn.Linear(width, width)\n"
    "        self.gain = 0.5\n\n"
    "    def forward(self, t):\n"
    "        return torch.relu(self.inner(t)) * self.gain + t",
)

MODEL_INIT = """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(W, W)
        self.block = Block(W)
        self.layers = nn.ModuleList([nn.Linear(W, W), nn.Tanh()])
        self.drop = nn.Dropout(0.5)
        self.register_buffer("count", torch.zeros(W))
        self.register_buffer("ema", torch.zeros(W))
        self.scale = 0.5
        self.mode = "a"
        self.history = []
"""


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else line for line in text.splitlines())


def needed_defs(program: Program) -> list[tuple[str, str]]:
    """The definitions the program's statements, changes, return and training step use, in order."""
    wanted: set[str] = set()
    for stmt in program.body:
        wanted.update(stmt.defs)
    for call in program.calls:
        for change in call.changes:
            wanted.update(change.defs)
    if program.train and program.kind == "function":
        wanted.add("WEIGHT")
    out = [(key, text) for key, text in program.defs if key in wanted]
    if program.kind == "module":
        out.append(BLOCK_DEF)
    if program.returns == "dataclass":
        out.append(RESULT_DEF)
    return out


def _body(program: Program, indent: int) -> str:
    lines = ["h = x * 1.0"]
    for stmt in program.body:
        lines.append(stmt.text)
    lines.append(RETURNS[program.returns][0])
    return _indent("\n".join(lines), indent)


def _target(program: Program) -> str:
    signature = "(x, n=2, *extra, **options)"
    if program.kind == "function":
        return f"def {TARGET}{signature}:\n{_body(program, 4)}\n"
    return MODEL_INIT + f"\n    def forward(self, x, n=2, *extra, **options):\n{_body(program, 8)}\n"


def _setup(index: int, call: Call) -> str:
    lines = [f"def setup_{index}(model):"]
    assigned = sorted({name for change in call.changes for name in change.assigns})
    if assigned:
        lines.append(f"    global {', '.join(assigned)}")
    for change in call.changes:
        lines.append(_indent(change.text, 4))
    rg = ", requires_grad=True" if call.requires_grad else ""
    if call.transposed:
        lines.append(f"    x = torch.randn(W, {call.batch}, dtype=torch.{call.dtype}{rg}).t()")
    else:
        lines.append(f"    x = torch.randn({call.batch}, W, dtype=torch.{call.dtype}{rg})")
    args = ["x"]
    if call.n is not None or call.extra:
        args.append(str(2 if call.n is None else call.n))
    for _ in range(call.extra):
        args.append("x" if call.alias else f"torch.randn({call.batch}, W, dtype=torch.{call.dtype})")
    kwargs = ", ".join(f"{name!r}: {value}" for name, value in call.options)
    lines.append(f"    return ({', '.join(args)},), {{{kwargs}}}")
    return "\n".join(lines)


def _finish(program: Program) -> str:
    params = "list(model.parameters())" if program.kind == "module" else "[WEIGHT]"
    return (
        "def finish(model, out):\n"
        "    global OPT\n"
        f"    loss = {RETURNS[program.returns][1]}.pow(2).mean()\n"
        "    if not loss.requires_grad:\n"
        "        return\n"
        "    if OPT is None:\n"
        f"        OPT = torch.optim.SGD({params}, lr=0.1, momentum=0.9)\n"
        "    OPT.zero_grad()\n"
        "    loss.backward()\n"
        "    OPT.step()\n"
    )


def render(program: Program) -> str:
    """The program as the source of a Python module (see the module docstring for its protocol)."""
    features = ", ".join(sorted(program.features))
    parts = [
        f'"""A program written by `jitlab fuzz` ({program.label or f"seed {program.seed}"}).\n\n'
        f'Features: {features}.\n"""',
        "import collections\nimport contextlib\nimport copy\nimport dataclasses\nimport enum\nimport functools\nimport itertools\nimport os\nimport random\nimport typing\n\nimport numpy as np\nimport torch\nfrom torch import nn",
        f"W = {program.width}",
    ]
    for _, text in needed_defs(program):
        parts.append(text)
    parts.append(_target(program))
    maker = "Model()" if program.kind == "module" else TARGET
    parts.append(f"def make():\n    torch.manual_seed(0)\n    return {maker}")
    for index, call in enumerate(program.calls):
        parts.append(_setup(index, call))
    parts.append(f"CALLS = [{', '.join(f'setup_{i}' for i in range(len(program.calls)))}]")
    if program.train:
        parts.append("OPT = None")
        parts.append(_finish(program))
    return "\n\n\n".join(parts).rstrip() + "\n"
