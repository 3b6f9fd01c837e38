"""`Scope`: what the checker knows about the module around the code it checks."""

from __future__ import annotations

from collections.abc import Mapping

from attrs import define, field

from ..lang.adt import Constructor, TypeData
from ..lang.expr import GlobalVar
from ..lang.module import IRModule
from ..lang.types import FuncType, GlobalTypeVar


@define
class Scope:
    """What a checker knows about the module around the code it checks.

    `signatures` are the final signatures of globals checked earlier (or annotated);
    `local` are the signatures, in this checker's solver, of the globals checked together
    with it (a recursive group).
    """

    mod: IRModule | None
    signatures: Mapping[GlobalVar, FuncType] = field(factory=dict)
    local: dict[GlobalVar, FuncType] = field(factory=dict)
    _by_name: dict[str, GlobalVar] | None = None

    def canon(self, gv: GlobalVar) -> GlobalVar | None:
        """The module's own `GlobalVar` for `gv` (same object, or same name)."""
        if self.mod is None:
            return gv if gv in self.signatures or gv in self.local else None
        if gv in self.mod.functions:
            return gv
        if self._by_name is None:
            self._by_name = {g.name_hint: g for g in self.mod.functions}
        return self._by_name.get(gv.name_hint)

    def type_data(self, adt: GlobalTypeVar) -> TypeData | None:
        """The definition of the ADT `adt` (same object or same name)."""
        if self.mod is None:
            return None
        data = self.mod.type_definitions.get(adt)
        if data is not None:
            return data
        for header, data in self.mod.type_definitions.items():
            if header.name_hint == adt.name_hint:
                return data
        return None

    def constructor_data(self, ctor: Constructor) -> TypeData | None:
        """The ADT that `ctor` belongs to, if the module defines it and the constructor."""
        data = self.type_data(ctor.belong_to)
        if data is None:
            return None
        if any(c is ctor or c.name_hint == ctor.name_hint for c in data.constructors):
            return data
        return None
