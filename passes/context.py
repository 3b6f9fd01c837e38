"""`PassContext`: opt level, required and disabled passes, instruments, per-pass options
(`config`), and the types of the modules its passes saw. Its signature is TVM's:
`PassContext(opt_level=2, required_pass=None, disabled_pass=None, instruments=None,
config=None)` (plus `debug`).

Use it explicitly (`seq(mod, ctx)`) or as a context manager (`with PassContext(...):`),
which makes it `PassContext.current()` for passes called without one.

Types are values, never stored in the IR: `ctx.module_types(mod)` infers a module's types
once per context and module object (modules are immutable, so the types of one module
object never change). A pass that returns its input unchanged therefore costs no new
inference, and a pass that rewrote a module and already knows the result's types hands
them over with `ctx.remember_types(result, types)`.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
from attrs import define, field

from ..lang.module import IRModule
from ..typecheck import ModuleTypes, check_module
from .pass_base import Pass, PassError, convert_option, get_pass, option_key

if TYPE_CHECKING:
    from .instruments import PassInstrument


def _names(items: Any) -> tuple[str, ...]:
    """Pass names (None: none; one name alone is one name, not its letters)."""
    if items is None:
        return ()
    return (items,) if isinstance(items, str) else tuple(items)


def _instruments(items: Any) -> tuple[PassInstrument, ...]:
    return () if items is None else tuple(items)


def _config(value: Mapping[str, object] | None) -> dict[str, dict[str, object]]:
    """Per-pass options by pass name, from any of the accepted spellings of `config`."""
    out: dict[str, dict[str, object]] = {}
    for key, item in (value or {}).items():
        if isinstance(item, Mapping):
            name, options = key, dict(item)
        else:
            name, option = _config_key(key)
            options = {option: item}
        out.setdefault(name, {}).update(options)
    return out


def _config_key(key: str) -> tuple[str, str]:
    """(pass name, option) of a flat config key: `fuse-ops.max-depth`, or TVM's
    `relay.FuseOps.max_depth`."""
    from .pass_base import PASSES

    parts = key.split(".")
    if len(parts) == 3 and parts[0] == "relay":
        for p in PASSES.values():
            if p.tvm_name == parts[1]:
                return p.name, parts[2]
        raise PassError(f"config key '{key}': no pass is called {parts[1]} in relay.transform")
    if len(parts) == 2:
        return parts[0], parts[1]
    raise PassError(
        f"config key '{key}' is not 'pass-name.option' (or TVM's 'relay.PassName.option'), "
        "and its value is not a mapping of options"
    )


@define(eq=False)
class PassContext:
    """Settings under which passes run.

    TVM's rule decides what a `Sequential` runs: a pass runs iff it is not in
    `disabled_pass` and (it is in `required_pass` or `opt_level >= pass.opt_level`).
    `config` sets options of passes, overriding their own: by pass name
    (`{"fuse-ops": {"max-depth": 8}}`) or by flat key (`{"fuse-ops.max-depth": 8}`, or
    TVM's `{"relay.FuseOps.max_depth": 8}`); it is kept by pass name.
    `debug=True` adds a `DebugInstrument` (well-formedness, types and normal forms are
    checked after every pass) unless one is among `instruments`. The context remembers the
    types of the modules it was asked about (`module_types`, `remember_types`) while those
    module objects live.
    """

    opt_level: int = 2
    required_pass: tuple[str, ...] = field(default=(), converter=_names)
    disabled_pass: tuple[str, ...] = field(default=(), converter=_names)
    instruments: tuple[PassInstrument, ...] = field(default=(), converter=_instruments)
    config: dict[str, dict[str, object]] = field(factory=dict, converter=_config)
    debug: bool = False

    _types: weakref.WeakKeyDictionary[IRModule, ModuleTypes] = field(
        init=False, repr=False, factory=weakref.WeakKeyDictionary
    )
    _checked: weakref.WeakSet[IRModule] = field(init=False, repr=False, factory=weakref.WeakSet)

    _stack: ClassVar[list[PassContext]] = []

    def __attrs_post_init__(self) -> None:
        for name, opts in self.config.items():
            p = get_pass(name)
            for key, value in opts.items():
                convert_option(name, key, value, p.options_type)
        for name in (*self.required_pass, *self.disabled_pass):
            get_pass(name)

    @classmethod
    def current(cls) -> PassContext:
        """The innermost context entered with `with`, or a default one."""
        return cls._stack[-1] if cls._stack else cls()

    @classmethod
    def innermost(cls) -> PassContext | None:
        """The innermost context entered with `with`, or None outside any."""
        return cls._stack[-1] if cls._stack else None

    def __enter__(self) -> PassContext:
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        PassContext._stack.pop()

    @property
    def all_instruments(self) -> tuple[PassInstrument, ...]:
        """The instruments, plus a `DebugInstrument` when `debug` is set."""
        from .instruments import DebugInstrument

        if self.debug and not any(isinstance(i, DebugInstrument) for i in self.instruments):
            return (*self.instruments, DebugInstrument())
        return self.instruments

    def options_for(self, p: Pass) -> Any:
        """The options `p` runs with: its own, overridden by this context's `config`."""
        overrides = self.config.get(p.name)
        if not overrides:
            return p.options
        changes = {
            option_key(k): convert_option(p.name, k, v, p.options_type)
            for k, v in overrides.items()
        }
        return attrs.evolve(p.options, **changes)

    def decide(self, p: Pass) -> tuple[bool, str]:
        """Whether a `Sequential` runs `p` under this context, and why."""
        if p.name in self.disabled_pass:
            return False, "disabled by the PassContext"
        if p.name in self.required_pass:
            return True, "required by the PassContext"
        if self.opt_level >= p.opt_level:
            return True, f"opt_level {p.opt_level} <= {self.opt_level}"
        return False, f"needs opt_level {p.opt_level} > context opt_level {self.opt_level}"

    def pass_enabled(self, p: Pass) -> bool:
        """TVM's `PassContext::PassEnabled`."""
        return self.decide(p)[0]

    def module_types(self, mod: IRModule) -> ModuleTypes:
        """The types of `mod`: remembered, or inferred by `check_module` (raising
        `TypeCheckError`) and remembered. The result is shared: callers must not change it."""
        types = self._types.get(mod)
        if types is None:
            types = self.checked_types(mod)
        return types

    def checked_types(self, mod: IRModule) -> ModuleTypes:
        """The types of `mod` as the type checker infers them (once per module object):
        types a pass handed over with `remember_types` are not trusted here but inferred
        again, and replace the handed-over ones. What the debug checker uses."""
        if mod in self._checked:
            return self._types[mod]
        types = check_module(mod)
        self._types[mod] = types
        self._checked.add(mod)
        return types

    def remembered_types(self, mod: IRModule) -> ModuleTypes | None:
        """The types known for `mod` (inferred or handed over), or None: never infers."""
        return self._types.get(mod)

    def remember_types(self, mod: IRModule, types: ModuleTypes) -> None:
        """Record `types` as the types of `mod` (a pass's result whose types it computed
        while rewriting): later passes and the build use them instead of inferring `mod`
        again. `types` must give the type of every expression of every function of `mod`
        that has one (operator nodes excepted) and every global's signature; the caller
        must not change it afterwards."""
        if mod not in self._checked:
            self._types[mod] = types

    def run_pass(self, p: Pass, mod: IRModule) -> IRModule:
        """Run `p` on `mod`, telling every instrument before and after."""
        instruments = self.all_instruments
        for inst in instruments:
            inst.before_pass(p, mod, self)
        result = p.apply(mod, self)
        for inst in instruments:
            inst.after_pass(p, mod, result, self)
        return result

    def report_skipped(self, p: Pass, reason: str) -> None:
        """Tell every instrument that `p` was skipped, and why."""
        for inst in self.all_instruments:
            inst.skipped_pass(p, reason, self)


__all__ = ["PassContext", "PassError"]
