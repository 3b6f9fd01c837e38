"""`Pass`: a small frozen value (name, opt level, requirements, typed options, normal forms).

Passes are made from plain functions with `@module_pass` and `@function_pass` and are
registered by name in `PASSES` (so pipeline text can name them). Options are an attrs
class per pass; in pipeline text a field `max_depth` is written `max-depth`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen

from ..lang.diagnostics import Error
from ..lang.expr import Function
from ..lang.gcpause import fewer_collections
from ..lang.module import IRModule

if TYPE_CHECKING:
    from .context import PassContext

NORMAL_FORMS = ("graph", "anf", "any")
"""`graph`: no `let` bindings (dataflow shared by reference); `anf`: every operand is an
atom (variable, global, constant, operator or constructor); `any`: either."""


class PassError(Error):
    """A pass is unknown, misconfigured, or broke the program (the message names the pass)."""


@frozen
class NoOptions:
    """Options of a pass that takes none."""


ModuleFn = Callable[[IRModule, "PassContext", Any], IRModule]
FunctionFn = Callable[[Function, IRModule, "PassContext", Any], Function]


def option_key(text: str) -> str:
    """The attrs field name of an option written `max-depth` (or `max_depth`)."""
    return text.replace("-", "_")


def option_text(field_name: str) -> str:
    """The pipeline-text spelling of an option field: `max_depth` → `max-depth`."""
    return field_name.replace("_", "-")


def option_fields(options_type: type) -> dict[str, attrs.Attribute]:  # type: ignore[type-arg]
    """The fields of an options class by name, with their annotations resolved."""
    attrs.resolve_types(options_type)
    return {f.name: f for f in attrs.fields(options_type)}


def _value_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if isinstance(value, str) and (not text or any(c in text for c in ',{}=" ')):
        return f'"{text}"'
    return text


def convert_option(pass_name: str, key: str, value: object, options_type: type) -> object:
    """`value` checked (or parsed, if it is text) against the type of option `key`.

    Supported option types: `bool`, `int`, `float`, `str`. Raises `PassError` naming the
    pass and the option when the option is unknown or the value has the wrong type.
    """
    fields = option_fields(options_type)
    name = option_key(key)
    if name not in fields:
        known = ", ".join(option_text(n) for n in fields) or "none"
        raise PassError(
            f"pass '{pass_name}' has no option '{option_text(name)}' (its options: {known})"
        )
    want = fields[name].type
    if isinstance(value, str) and want is not str:
        return _parse_value(pass_name, name, value, want)
    ok = (
        (want is bool and isinstance(value, bool))
        or (want is int and isinstance(value, int) and not isinstance(value, bool))
        or (want is float and isinstance(value, (int, float)) and not isinstance(value, bool))
        or (want is str and isinstance(value, str))
    )
    if not ok:
        raise PassError(
            f"option '{option_text(name)}' of pass '{pass_name}' expects "
            f"{getattr(want, '__name__', want)}, got {value!r}"
        )
    return float(value) if want is float else value  # type: ignore[arg-type]


def _parse_value(pass_name: str, name: str, text: str, want: object) -> object:
    try:
        if want is bool:
            if text not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text in ("true", "1")
        if want is int:
            return int(text)
        if want is float:
            return float(text)
    except ValueError:
        pass
    raise PassError(
        f"option '{option_text(name)}' of pass '{pass_name}' expects "
        f"{getattr(want, '__name__', want)}, got '{text}'"
    )


def _names(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


@frozen
class Pass:
    """A pass: `pass_(mod, ctx)` returns the transformed module.

    * `name`: kebab-case (`fold-constant`); `opt_level`: the lowest `PassContext.opt_level`
      at which a `Sequential` runs it; `required`: names of passes a `Sequential` runs
      first.
    * `options`: an instance of the pass's attrs options class (defaults unless set by
      pipeline text, `with_options`, or `PassContext(config={name: {...}})`).
    * `needs` / `produces`: the normal form ("graph", "anf" or "any") the pass expects
      and guarantees; the debug instrument checks both.
    * `kind`: "module" or "function". A function pass transforms each global function;
      it skips functions marked `Primitive` unless `include_primitive`.
    * `tvm_name`: its spelling in `relay.transform` (`FoldConstant`), by default the
      name in CamelCase (`fold-constant` → `FoldConstant`).

    Calling a pass directly runs it whatever the opt level (as in TVM); only `Sequential`
    applies the enabling rules. Instruments of the context see the call.
    """

    name: str
    transform: Callable[..., Any] = attrs.field(eq=False, repr=False)
    opt_level: int = 0
    required: tuple[str, ...] = attrs.field(default=(), converter=_names)
    options: Any = attrs.field(factory=NoOptions)
    needs: str = "any"
    produces: str = "any"
    kind: str = "module"
    include_primitive: bool = False
    doc: str = attrs.field(default="", eq=False, repr=False)
    tvm_name: str = attrs.field(default="", eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.tvm_name:
            object.__setattr__(self, "tvm_name", camel_case(self.name))
        for form in (self.needs, self.produces):
            if form not in NORMAL_FORMS:
                raise PassError(
                    f"pass '{self.name}': normal form must be one of {NORMAL_FORMS}, got {form!r}"
                )

    @property
    def summary(self) -> str:
        """The first sentence of the pass's doc, on one line."""
        text = " ".join(self.doc.split())
        end = text.find(". ")
        return text if end < 0 else text[: end + 1]

    @property
    def options_type(self) -> type:
        """The attrs class of this pass's options."""
        return type(self.options)

    def with_options(self, **values: object) -> Pass:
        """This pass with some options changed (keys in either spelling; values typed or text)."""
        if not values:
            return self
        changes = {
            option_key(k): convert_option(self.name, k, v, self.options_type)
            for k, v in values.items()
        }
        return attrs.evolve(self, options=attrs.evolve(self.options, **changes))

    def changed_options(self) -> dict[str, object]:
        """Options that differ from their defaults, by field name, in declaration order."""
        default = self.options_type()
        return {
            f.name: getattr(self.options, f.name)
            for f in attrs.fields(self.options_type)
            if getattr(self.options, f.name) != getattr(default, f.name)
        }

    def __str__(self) -> str:
        changed = self.changed_options()
        if not changed:
            return self.name
        body = ",".join(f"{option_text(k)}={_value_text(v)}" for k, v in changed.items())
        return f"{self.name}{{{body}}}"

    def apply(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Run the transformation alone (no instruments), with the context's options."""
        options = ctx.options_for(self)
        with fewer_collections():  # a pass allocates many nodes and frees few
            if self.kind == "module":
                result = self.transform(mod, ctx, options)
            else:
                result = self._apply_to_functions(mod, ctx, options)
        if not isinstance(result, IRModule):
            raise PassError(f"pass '{self.name}' returned {type(result).__name__}, not an IRModule")
        return result

    def _apply_to_functions(self, mod: IRModule, ctx: PassContext, options: object) -> IRModule:
        functions = dict(mod.functions)
        changed = False
        for gv, fn in mod.functions.items():
            if fn.is_primitive and not self.include_primitive:
                continue
            new = self.transform(fn, mod, ctx, options)
            if not isinstance(new, Function):
                raise PassError(
                    f"function pass '{self.name}' returned {type(new).__name__} "
                    f"for @{gv.name_hint}, not a Function"
                )
            if new is not fn:
                functions[gv] = new
                changed = True
        return IRModule(functions, mod.type_definitions) if changed else mod

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        """Run this pass on `mod` under `ctx` (default: the current context), instrumented."""
        from .context import PassContext

        context = ctx if ctx is not None else PassContext.current()
        return context.run_pass(self, mod)


PASSES: dict[str, Pass] = {}
"""Every registered pass, by name (filled when the pass modules are imported)."""


def _origin(p: Pass) -> tuple[str, str] | None:
    """Where `p`'s transformation was defined (module, qualified name), if it is a named
    function (not a lambda)."""
    qualname = getattr(p.transform, "__qualname__", "")
    module = getattr(p.transform, "__module__", None)
    if not qualname or "<lambda>" in qualname or not isinstance(module, str):
        return None
    return module, qualname


def register_pass(p: Pass) -> Pass:
    """Add `p` to `PASSES`; `PassError` if another pass already has its name.

    Registering again a pass defined by the same named function (same module and
    qualified name: a file of passes loaded twice) replaces the old one."""
    old = PASSES.get(p.name)
    if old is not None and old.transform is not p.transform:
        origin = _origin(p)
        if origin is None or origin != _origin(old):
            raise PassError(f"a pass named '{p.name}' is already registered")
    PASSES[p.name] = p
    return p


def camel_case(name: str) -> str:
    """`fold-constant` → `FoldConstant` (the default `relay.transform` spelling)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("-"))


def kebab_case(name: str) -> str:
    """`FoldConstant`, `fold_constant` or `fold-constant` → `fold-constant`."""
    out: list[str] = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0 and (name[i - 1].islower() or name[i - 1].isdigit()):
            out.append("-")
        out.append("-" if ch == "_" else ch.lower())
    return "".join(out).strip("-")


def get_pass(name: str) -> Pass:
    """The registered pass called `name`; `PassError` naming it if there is none."""
    p = PASSES.get(name)
    if p is None:
        import difflib

        close = difflib.get_close_matches(name, list(PASSES), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise PassError(f"unknown pass '{name}'{hint}")
    return p


def _check_name(name: str) -> None:
    parts = name.split("-")
    if not name or not all(part and part.isalnum() and part.islower() for part in parts):
        raise PassError(f"pass name {name!r} is not kebab-case (like 'fold-constant')")


def _make(
    kind: str,
    fn: Callable[..., Any],
    name: str,
    opt_level: int,
    required: tuple[str, ...],
    options: type,
    needs: str,
    produces: str,
    include_primitive: bool,
    register: bool,
    tvm_name: str = "",
) -> Pass:
    _check_name(name)
    if not attrs.has(options):
        raise PassError(f"options of pass '{name}' must be an attrs class")
    p = Pass(
        name,
        fn,
        opt_level,
        required,
        options(),
        needs,
        produces,
        kind,
        include_primitive,
        doc=fn.__doc__ or "",
        tvm_name=tvm_name,
    )
    return register_pass(p) if register else p


def module_pass(
    *,
    name: str,
    opt_level: int = 0,
    required: tuple[str, ...] = (),
    options: type = NoOptions,
    needs: str = "any",
    produces: str = "any",
    register: bool = True,
    tvm_name: str = "",
) -> Callable[[ModuleFn], Pass]:
    """Decorator: `fn(mod, ctx, options) -> IRModule` becomes a module `Pass` (registered)."""

    def wrap(fn: ModuleFn) -> Pass:
        return _make(
            "module",
            fn,
            name,
            opt_level,
            required,
            options,
            needs,
            produces,
            False,
            register,
            tvm_name,
        )

    return wrap


def function_pass(
    *,
    name: str,
    opt_level: int = 0,
    required: tuple[str, ...] = (),
    options: type = NoOptions,
    needs: str = "any",
    produces: str = "any",
    include_primitive: bool = False,
    register: bool = True,
    tvm_name: str = "",
) -> Callable[[FunctionFn], Pass]:
    """Decorator: `fn(fn, mod, ctx, options) -> Function` becomes a function `Pass`.

    The pass applies `fn` to every global function, skipping `Primitive` ones unless
    `include_primitive`; returning the function itself means "unchanged".
    """

    def wrap(fn: FunctionFn) -> Pass:
        return _make(
            "function",
            fn,
            name,
            opt_level,
            required,
            options,
            needs,
            produces,
            include_primitive,
            register,
            tvm_name,
        )

    return wrap


def options_mapping(p: Pass) -> Mapping[str, object]:
    """All options of `p` by field name (for display)."""
    return attrs.asdict(p.options, recurse=False)
