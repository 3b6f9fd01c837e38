"""`IRModule`: the global functions and ADT definitions of a program."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from attrs import field, frozen

from .adt import Constructor, TypeData
from .expr import Expr, Function, GlobalVar
from .types import GlobalTypeVar, Type


def _freeze_map(value: Mapping) -> Mapping:  # type: ignore[type-arg]
    return MappingProxyType(dict(value))


@frozen(eq=False)
class IRModule:
    """An immutable module: `functions` by `GlobalVar`, `type_definitions` by ADT name.

    Updates (`with_function`, `with_type_definition`) return a new module. Globals and
    ADTs are looked up by name with `mod["main"]` / `mod.get_global_var("main")` /
    `mod.get_type("List")`.
    """

    functions: Mapping[GlobalVar, Function] = field(factory=dict, converter=_freeze_map)
    type_definitions: Mapping[GlobalTypeVar, TypeData] = field(factory=dict, converter=_freeze_map)

    @staticmethod
    def from_expr(expr: Expr, name: str = "main") -> IRModule:
        """A module whose `@main` is `expr` (wrapped in a function if it is not one)."""
        if not isinstance(expr, Function):
            from .freevars import free_vars

            expr = Function(tuple(free_vars(expr)), expr)
        return IRModule({GlobalVar(name): expr})

    # ------------------------------------------------------------------ lookups
    def get_global_var(self, name: str) -> GlobalVar:
        """The global called `name` (KeyError if absent)."""
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        raise KeyError(f"no global function @{name} in the module")

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        """The ADT called `name` (KeyError if absent)."""
        for gtv in self.type_definitions:
            if gtv.name_hint == name:
                return gtv
        raise KeyError(f"no type {name} in the module")

    def get_type(self, name: str) -> TypeData:
        """The definition of the ADT called `name`."""
        return self.type_definitions[self.get_global_type_var(name)]

    def get_constructor(self, name: str) -> Constructor:
        """The constructor called `name` (KeyError if absent)."""
        for data in self.type_definitions.values():
            ctor = data.constructor(name)
            if ctor is not None:
                return ctor
        raise KeyError(f"no constructor {name} in the module")

    def __getitem__(self, key: str | GlobalVar) -> Function:
        gv = self.get_global_var(key) if isinstance(key, str) else key
        return self.functions[gv]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            return any(gv.name_hint == key for gv in self.functions)
        return key in self.functions

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    # ------------------------------------------------------------------ updates
    def with_function(self, key: str | GlobalVar, function: Function) -> IRModule:
        """A module with `function` bound to `key` (replacing a global of that name)."""
        if isinstance(key, str):
            key = self.get_global_var(key) if key in self else GlobalVar(key)
        functions = dict(self.functions)
        functions[key] = function
        return IRModule(functions, self.type_definitions)

    def without_function(self, key: str | GlobalVar) -> IRModule:
        """A module without the global `key`."""
        gv = self.get_global_var(key) if isinstance(key, str) else key
        return IRModule(
            {g: f for g, f in self.functions.items() if g is not gv}, self.type_definitions
        )

    def with_type_definition(self, data: TypeData) -> IRModule:
        """A module with the ADT `data` added or replaced."""
        types = dict(self.type_definitions)
        types[data.header] = data
        return IRModule(self.functions, types)

    def astext(self, types: Mapping[Expr, Type] | None = None, *, inline_constants: int = 0) -> str:
        """The module in the text format; with `types` (from inference), `/* ty=... */` too;
        metadata constants of at most `inline_constants` elements also show their values in
        a comment."""
        from .printer import print_module

        return print_module(self, types=types, inline_constants=inline_constants)

    def __str__(self) -> str:
        return self.astext()
