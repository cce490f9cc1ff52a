"""Objects whose class defines `__getattribute__` in Python (a transformers config) are guarded by the
attributes the call read, each where it lives, and a hit does not run their `__getattribute__`.

Before, each attribute read of a `PreTrainedConfig` guarded the config's whole `__dict__` (its
`__getattribute__` calls `__dict__.get("_heterogeneity_spec")`), and every guard on the config ran
transformers' Python `__getattribute__` again: about 900 calls per T5 decode step. Each test compares
the JIT with eager Python over many calls with changing inputs and objects changed between calls."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable

import torch
import transformers

from jitlab.jit import jit


def config_class() -> type:
    """A new transformers config class (tests change classes): transformers' `__getattribute__` maps
    `hidden` to `d_model` through `attribute_map`; `return_dict` is also a class default of
    `PreTrainedConfig`; `shift` is a property."""

    class TinyConfig(transformers.PretrainedConfig):
        model_type = "jitlab-tiny"
        attribute_map = {"hidden": "d_model"}

        def __init__(self, d_model: int = 4, scale: float = 2.0, **kwargs) -> None:
            self.d_model = d_model
            self.scale = scale
            self._shift = 0.5
            self.problem_type = None
            super().__init__(**kwargs)

        @property
        def shift(self) -> float:
            return self._shift * 2

    return TinyConfig


def reads_config(x: torch.Tensor, config: transformers.PretrainedConfig) -> torch.Tensor:
    y = x * config.scale + config.hidden
    if config.return_dict:
        y = y + config.shift
    return y


def config_code_calls(call: Callable[[], object]) -> int:
    """Calls of transformers' config `__getattribute__` methods while `call` runs."""
    calls = 0

    def profile(frame, event, arg):  # noqa: ANN001 -- sys.setprofile's signature
        nonlocal calls
        code = frame.f_code
        if event == "call" and code.co_name == "__getattribute__" and "transformers" in code.co_filename:
            calls += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return calls


def test_a_hit_reads_the_config_without_its_getattribute_and_follows_changes() -> None:
    TinyConfig = config_class()
    config = TinyConfig()
    jitted = jit(reads_config, backend="eager")
    changes = [
        lambda: None,
        lambda: setattr(config, "scale", 3.0),  # an instance attribute
        lambda: setattr(config, "hidden", 7),  # through attribute_map: d_model
        lambda: setattr(config, "_shift", -1.0),  # read by the property
        lambda: setattr(config, "return_dict", False),
        lambda: setattr(config, "return_dict", True),
        lambda: config.__dict__.__setitem__("hidden", 100),  # stale: `hidden` still reads d_model
        lambda: TinyConfig.attribute_map.pop("hidden"),  # now it reads the instance's own `hidden`
        lambda: TinyConfig.attribute_map.__setitem__("hidden", "d_model"),
    ]
    for step, change in enumerate(changes):
        change()
        for n in (3, 3, 5, 5):
            x = torch.randn(n)
            assert torch.allclose(jitted(x, config), reads_config(x, config)), (step, n)
    report = jitted.explain()
    assert report.disabled is None and report.eager_misses == 0
    assert report.misses >= 5  # each change of what the call read missed
    assert sum(g.hits for g in report.graphs) >= 16
    assert config_code_calls(lambda: jitted(torch.randn(5), config)) == 0
    assert report.graphs[-1].hits >= 1
    guards = "\n".join(report.graphs[-1].guards)
    assert "list(" not in guards  # no check of the whole __dict__'s keys
    assert "problem_type" not in guards  # not read: not guarded


def test_a_class_change_that_shadows_the_instance_dict_is_seen() -> None:
    """The instance dict is read directly only while no class of the MRO defines the name: a property
    added to the class later comes before the instance dict, and the next call must see it."""

    Config = config_class()
    config = Config()
    jitted = jit(reads_config, backend="eager")
    x = torch.randn(4)
    for _ in range(3):
        assert torch.allclose(jitted(x, config), reads_config(x, config))
    Config.scale = property(lambda self: -4.0)
    assert reads_config(x, config)[0] == x[0] * -4.0 + 4 + 1.0
    for _ in range(3):
        assert torch.allclose(jitted(x, config), reads_config(x, config))
    del Config.scale
    Config.return_dict = False  # a class default changed: the instance's own value still wins
    for _ in range(3):
        assert torch.allclose(jitted(x, config), reads_config(x, config))
    del config.__dict__["return_dict"]  # now the class default is what the read finds
    for _ in range(3):
        assert torch.allclose(jitted(x, config), reads_config(x, config))
    assert jitted.explain().eager_misses == 0


def test_the_objects_class_changed_between_calls() -> None:
    TinyConfig = config_class()

    class Other(TinyConfig):
        def __init__(self) -> None:
            super().__init__()

        @property
        def shift(self) -> float:
            return 100.0

    config = TinyConfig()
    jitted = jit(reads_config, backend="eager")
    x = torch.randn(4)
    for _ in range(2):
        assert torch.allclose(jitted(x, config), reads_config(x, config))
    config.__class__ = Other
    for _ in range(2):
        assert torch.allclose(jitted(x, config), reads_config(x, config))


def sets_problem_type(x: torch.Tensor, config: transformers.PretrainedConfig) -> torch.Tensor:
    """As ViT's classification head: the first call sets `config.problem_type`, later calls read it."""
    if config.problem_type is None:
        config.problem_type = "regression" if x.shape[0] > 3 else "single_label"
    if config.problem_type == "regression":
        return x * config.scale
    return x - config.scale


def test_a_config_attribute_set_inside_the_call() -> None:
    for first in (4, 2):
        TinyConfig = config_class()
        eager_config, jit_config = TinyConfig(), TinyConfig()
        jitted = jit(sets_problem_type, backend="eager")
        for step, n in enumerate([first, first, 4, 2, 4, 2]):
            x = torch.randn(n)
            assert torch.allclose(jitted(x, jit_config), sets_problem_type(x, eager_config)), (first, step)
            assert jit_config.problem_type == eager_config.problem_type
            assert jit_config.__dict__ == eager_config.__dict__
        if step == 2:
            jit_config.problem_type = eager_config.problem_type = None  # reset: set again next call
    assert jitted.explain().eager_misses == 0


# A `__getattribute__` that returns computed values: the instance dict holds 1.5, a read gives 3.0.
# Made from a string, as dataclasses and attrs make methods: the JIT runs it natively, so the guard
# reads the attribute as the program does, never the dict's item in its place.
_DOUBLING = """
class Doubling:
    def __init__(self):
        self.scale = 1.5

    def __getattribute__(self, key):
        value = object.__getattribute__(self, key)
        return value * 2 if type(value) is float else value
"""
_namespace: dict = {}
exec(compile(_DOUBLING, "<generated class>", "exec"), _namespace)
Doubling = _namespace["Doubling"]


def reads_doubled(x: torch.Tensor, holder: Doubling) -> torch.Tensor:
    return x * holder.scale


def test_a_getattribute_that_computes_values_is_not_read_through_the_dict() -> None:
    holder = Doubling()
    jitted = jit(reads_doubled, backend="eager")
    for step, scale in enumerate([1.5, 1.5, 1.5, 4.0, 4.0, -2.0, 1.5, 1.5]):
        holder.__dict__["scale"] = scale
        x = torch.randn(3 + step % 2)
        assert torch.allclose(jitted(x, holder), reads_doubled(x, holder)), step
    report = jitted.explain()
    assert report.eager_misses == 0
    assert sum(g.hits for g in report.graphs) >= 4  # reused, not captured again on every call


def reads_whole(x: torch.Tensor, config: transformers.PretrainedConfig) -> torch.Tensor:
    """Uses the dict as a whole: every key counts."""
    return x * sum(1 for key in config.__dict__ if key.startswith("s")) + config.scale


def test_a_config_read_as_a_whole_is_guarded_whole() -> None:
    config = config_class()()
    jitted = jit(reads_whole, backend="eager")
    x = torch.randn(3)
    for step in range(6):
        if step == 3:
            config.size = 1  # a new key the call counts
        assert torch.allclose(jitted(x, config), reads_whole(x, config)), step
    report = jitted.explain()
    assert report.eager_misses == 0 and sum(g.hits for g in report.graphs) >= 3
    assert any("list(" in guard for guard in report.graphs[-1].guards)  # the keys, in order


def test_transformers_config_hits_run_no_config_code() -> None:
    """A real transformers config (`hidden_size` maps to `n_embd` through `attribute_map`)."""
    config = transformers.GPT2Config(n_embd=8, n_layer=2, n_head=2)

    def fn(x: torch.Tensor) -> torch.Tensor:
        y = x * config.hidden_size + config.layer_norm_epsilon
        if config.output_attentions:  # a property of PreTrainedConfig
            y = y * 2
        return y

    jitted = jit(fn, backend="eager")
    for step in range(8):
        if step == 4:
            config.hidden_size = 16  # sets n_embd
        x = torch.randn(2 + step % 3)
        assert torch.allclose(jitted(x), fn(x)), step
    report = jitted.explain()
    assert report.eager_misses == 0 and sum(g.hits for g in report.graphs) >= 4

    assert config_code_calls(lambda: jitted(torch.randn(4))) == 0
    assert config_code_calls(lambda: fn(torch.randn(4))) >= 3  # eager reads run them


def reads_optional(x: torch.Tensor, config: transformers.PretrainedConfig) -> torch.Tensor:
    """Attributes a config may lack, as transformers reads them (`getattr(config, "x", None)`)."""
    extra = getattr(config, "extra", None)
    if extra is not None:
        return x * extra
    if hasattr(config, "other"):
        return x - 1
    return x * config.scale


def test_an_attribute_the_config_lacks_is_guarded_missing() -> None:
    """`object.__getattribute__` raising inside the config's `__getattribute__` is guarded: the
    attribute set between calls is seen (it was only by the whole `__dict__`'s guard before)."""
    config = config_class()()
    jitted = jit(reads_optional, backend="eager")
    for step in range(8):
        if step == 2:
            config.other = 1
        if step == 4:
            config.extra = 5.0
        if step == 6:
            del config.extra, config.other
        x = torch.randn(3)
        assert torch.allclose(jitted(x, config), reads_optional(x, config)), step
    report = jitted.explain()
    assert report.eager_misses == 0 and sum(g.hits for g in report.graphs) >= 3


class Base:
    def factor(self) -> float:
        return 2.0


class Child(Base):
    def factor(self) -> float:
        return super().factor() + 1.0


def test_a_method_found_through_super_is_guarded_in_its_class() -> None:
    """`super().name` looks along the MRO after the class it names: a method replaced there (on the
    config's mixin, or a user's base class) is seen by the next call."""
    config = config_class()()
    mixin = next(k for k in type(config).__mro__ if k.__name__ == "HeterogeneousConfigMixin")
    child = Child()

    def fn(x: torch.Tensor) -> torch.Tensor:
        return x * config.scale + child.factor()

    jitted = jit(fn, backend="eager")
    x = torch.randn(3)
    original = mixin.__getattribute__

    def patched(self, key):  # noqa: ANN001 -- a stand-in for a library's patch
        return 42.0 if key == "scale" else original(self, key)

    try:
        for step in range(6):
            if step == 2:
                mixin.__getattribute__ = patched
            if step == 4:
                Base.factor = lambda self: -3.0
            assert torch.allclose(jitted(x), fn(x)), step
    finally:
        mixin.__getattribute__ = original
        Base.factor = lambda self: 2.0
    assert jitted.explain().eager_misses == 0


def scaled_copy(x: torch.Tensor, config: transformers.PretrainedConfig) -> torch.Tensor:
    """`copy.copy` reads the config whole (as transformers' models copy their config)."""
    other = copy.copy(config)
    return x * other.scale + other.d_model


def test_a_config_copied_whole_is_guarded_by_its_dict_without_its_getattribute() -> None:
    config = config_class()()
    jitted = jit(scaled_copy, backend="eager")
    x = torch.randn(3)
    for step in range(6):
        if step == 3:
            config.scale = 5.0  # an item of the instance dict the copy reads
        assert torch.allclose(jitted(x, config), scaled_copy(x, config)), step
    report = jitted.explain()
    assert report.eager_misses == 0 and sum(g.hits for g in report.graphs) >= 3
    # the items are read from the instance dict the copy reads, not as `config.name`, which would
    # run transformers' Python __getattribute__ once per attribute on every hit
    assert config_code_calls(lambda: jitted(x, config)) == 0
    assert config_code_calls(lambda: scaled_copy(x, config)) >= 2


class ShadowedByProperty:
    """An instance dict item that a property of the class shadows: `obj.value` is the property's."""

    def __init__(self) -> None:
        self.__dict__["value"] = 1.0
        self.factor = 3.0

    @property
    def value(self) -> float:
        return 2.0


def copies_plain(x: torch.Tensor, holder: ShadowedByProperty) -> torch.Tensor:
    other = copy.copy(holder)
    return x * other.factor + other.__dict__["value"]


def test_an_object_copied_whole_is_guarded_by_the_items_of_its_dict() -> None:
    holder = ShadowedByProperty()
    jitted = jit(copies_plain, backend="eager")
    x = torch.randn(3)
    for step in range(6):
        if step == 3:
            holder.__dict__["value"] = 4.0
        assert torch.equal(jitted(x, holder), copies_plain(x, holder)), step
    report = jitted.explain()
    assert report.eager_misses == 0
    # guarded as `obj.value`, the property's 2.0 never equals the item's value: a miss every call
    assert sum(g.hits for g in report.graphs) >= 3


def test_a_config_copied_whole_guards_its_classes_getattribute() -> None:
    """The copy's items are guarded in the instance dict, not through the class's Python
    `__getattribute__` that native code ran: so that method is guarded unchanged, and replacing it
    makes the entry miss."""
    TinyConfig = config_class()
    config = TinyConfig()
    jitted = jit(scaled_copy, backend="eager")
    x = torch.randn(3)
    for _ in range(3):
        assert torch.allclose(jitted(x, config), scaled_copy(x, config))
    assert jitted.explain().misses == 0
    library = transformers.PretrainedConfig.__getattribute__
    TinyConfig.__getattribute__ = lambda self, name: library(self, name)
    try:
        assert torch.allclose(jitted(x, config), scaled_copy(x, config))
    finally:
        del TinyConfig.__getattribute__
    assert jitted.explain().misses >= 1


def mapped_dict_class() -> type:
    """A library class (compiled from a `<...>` file name, as jitlab.jit tells library code) whose
    `__getattribute__` gives another dict for `__dict__` once the instance holds one."""
    source = """
class MappedDict:
    def __getattribute__(self, name):
        if name == "__dict__":
            own = object.__getattribute__(self, "__dict__")
            return own["mapped"] if "mapped" in own else own
        return object.__getattribute__(self, name)
"""
    namespace: dict = {"__name__": "mapped_library"}
    exec(compile(source, "<mapped library>", "exec"), namespace)
    return namespace["MappedDict"]


def copies_mapped(x: torch.Tensor, holder: object) -> torch.Tensor:
    other = copy.copy(holder)  # its __reduce_ex__ takes the instance dict, not `holder.__dict__`
    return x * object.__getattribute__(other, "__dict__")["scale"] + other.__dict__["scale"]


def test_an_object_whose_getattribute_maps_its_dict_is_guarded_by_both_dicts() -> None:
    """`copy.copy` reads the instance dict itself and `other.__dict__` reads the mapped one: both
    are guarded, and a change to either between calls is followed."""
    holder = mapped_dict_class()()
    object.__getattribute__(holder, "__dict__").update(mapped={"scale": 3.0}, scale=2.0)
    jitted = jit(copies_mapped, backend="eager")
    x = torch.randn(3)
    for step in range(8):
        if step == 3:
            object.__getattribute__(holder, "__dict__")["scale"] = 5.0  # what copy.copy reads
        if step == 5:
            holder.__dict__["scale"] = 7.0  # the mapped dict
        assert torch.equal(jitted(x, holder), copies_mapped(x, holder)), step
    report = jitted.explain()
    assert report.eager_misses == 0
    assert report.captures == 3
    assert sum(g.hits for g in report.graphs) == 5
