"""The prelude as a fallback for every module that uses its names.

A module "asks" for the prelude by using a name it does not declare itself that the prelude
declares: an ADT (`List`), a constructor (`Cons`) or a global function (`@map`). The
program's own declarations always win, everywhere in its text; prelude names are looked up
only when the program declares no definition of that name (`declscan.py` finds the
program's declarations before the parse). The module then holds the program's definitions
plus the prelude definitions it needs (those it uses, transitively).

A needed prelude definition whose name the program also declares (a program with its own
`@map` that uses the prelude's `@size`, which calls the prelude's `@map`) is renamed in the
module: `@map` becomes `@prelude_map` (`prelude_map_2`, ... if the program declares that
too), the ADT `List` becomes `prelude_List` and the constructor `Cons` `prelude_Cons`.
Constructors of a renamed ADT keep their names unless those clash too. The program's names
are never changed, so `mod.astext()` is a self-contained module.

The prelude is parsed once per process; each renamed variant is built once per set of
clashing names. Modules share the prelude's IR nodes (IR is immutable).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from ..lang.adt import Constructor, TypeData
from ..lang.expr import Function, GlobalVar
from ..lang.module import IRModule
from ..lang.span import Span
from ..lang.types import GlobalTypeVar
from ..stdlib import prelude_path, prelude_text
from .declscan import Declarations
from .rename import Renaming, adts_in, map_types, references

Key = tuple[str, str]
"""A prelude definition: `("def", name)` for a global function, `("type", name)` for an ADT."""

_MAX_VIEWS = 64
_LOAD_LOCK = threading.Lock()
_loaded: Prelude | None = None


def load_prelude() -> Prelude:
    """The prelude, parsed on first use and cached for the life of the process."""
    global _loaded
    with _LOAD_LOCK:
        if _loaded is None:
            from .parser import parse

            _loaded = Prelude(parse(prelude_text(), str(prelude_path()), prelude=False))
        return _loaded


def prelude_module() -> IRModule:
    """The whole prelude as a module (shared: IR is immutable)."""
    return load_prelude().module


def strip_prelude(mod: IRModule) -> IRModule:
    """`mod` without the definitions the prelude fallback added (for printing a program as
    written, e.g. by a formatter: the result parses back, with the prelude, to `mod`)."""
    source = load_prelude().source

    def own(span: Span | None) -> bool:
        return span is None or span.source is not source

    return IRModule(
        {gv: fn for gv, fn in mod.functions.items() if own(fn.span)},
        {gtv: data for gtv, data in mod.type_definitions.items() if own(data.span)},
    )


class Prelude:
    """The parsed prelude, indexed by name, with the direct dependencies of each definition."""

    def __init__(self, module: IRModule) -> None:
        self.module = module
        first = next(iter(module.functions.values()), None)
        self.source = first.span.source if first is not None and first.span else None
        self.globals = {gv.name_hint: gv for gv in module.functions}
        self.adts = {gtv.name_hint: gtv for gtv in module.type_definitions}
        self.constructors = {
            ctor.name_hint: ctor
            for data in module.type_definitions.values()
            for ctor in data.constructors
        }
        self.deps: dict[Key, frozenset[Key]] = {}
        for gv, fn in module.functions.items():
            gvs, adts = references(fn)
            keys = {("def", g.name_hint) for g in gvs} | {("type", a.name_hint) for a in adts}
            self.deps["def", gv.name_hint] = frozenset(keys)
        for gtv, data in module.type_definitions.items():
            adts = adts_in(t for ctor in data.constructors for t in ctor.inputs)
            self.deps["type", gtv.name_hint] = frozenset(("type", a.name_hint) for a in adts)
        self._views: dict[object, PreludeView] = {}
        self._lock = threading.Lock()

    def closure(self, roots: Iterable[Key]) -> set[Key]:
        """`roots` and every definition they need, transitively."""
        needed = set(roots)
        todo = list(needed)
        while todo:
            for dep in self.deps[todo.pop()]:
                if dep not in needed:
                    needed.add(dep)
                    todo.append(dep)
        return needed

    def view(self, declared: Declarations) -> PreludeView:
        """The prelude as a program declaring `declared` sees it (renamed where it clashes)."""
        clashes = (
            self.globals.keys() & declared.globals,
            self.adts.keys() & declared.types,
            self.constructors.keys() & declared.constructors.keys(),
        )
        key: object = None
        if any(clashes):
            own = (declared.globals, declared.types, declared.constructors.keys())
            taken = tuple(frozenset(n for n in names if n.startswith("prelude_")) for names in own)
            key = (tuple(frozenset(c) for c in clashes), taken)
        with self._lock:
            view = self._views.get(key)
            if view is None:
                if len(self._views) >= _MAX_VIEWS:
                    self._views.clear()
                view = self._views[key] = PreludeView(self, *_renames(self, declared, clashes))
            return view


def _renames(
    prelude: Prelude, declared: Declarations, clashes: tuple[set[str], set[str], set[str]]
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """New names for the clashing globals, ADTs and constructors."""
    own = (declared.globals, declared.types, declared.constructors.keys())
    theirs = (prelude.globals.keys(), prelude.adts.keys(), prelude.constructors.keys())
    result: list[dict[str, str]] = []
    for names, mine, prelude_names in zip(clashes, own, theirs):
        taken = set(mine) | set(prelude_names)
        renames: dict[str, str] = {}
        for name in sorted(names):
            base = candidate = f"prelude_{name}"
            suffix = 2
            while candidate in taken:
                candidate = f"{base}_{suffix}"
                suffix += 1
            taken.add(candidate)
            renames[name] = candidate
        result.append(renames)
    return result[0], result[1], result[2]


class PreludeView:
    """The prelude's definitions with some renamed; looked up by their names in the prelude."""

    def __init__(
        self,
        prelude: Prelude,
        global_renames: dict[str, str],
        adt_renames: dict[str, str],
        constructor_renames: dict[str, str],
    ) -> None:
        self.prelude = prelude
        adt_map = {prelude.adts[n]: GlobalTypeVar(new) for n, new in adt_renames.items()}
        ctor_map: dict[Constructor, Constructor] = {}
        self.types: dict[str, TypeData] = {}
        self.constructors: dict[str, Constructor] = {}
        self.constructor_keys: dict[str, Key] = {}
        changed: set[Key] = set()
        for gtv, data in prelude.module.type_definitions.items():
            header = adt_map.get(gtv, gtv)
            ctors = []
            for ctor in data.constructors:
                inputs = map_types(ctor.inputs, adt_map)
                name = constructor_renames.get(ctor.name_hint, ctor.name_hint)
                if header is not gtv or inputs is not ctor.inputs or name != ctor.name_hint:
                    ctor_map[ctor] = Constructor(name, inputs, header, ctor.tag, span=ctor.span)
                ctors.append(ctor_map.get(ctor, ctor))
                self.constructors[ctor.name_hint] = ctors[-1]
                self.constructor_keys[ctor.name_hint] = ("type", gtv.name_hint)
            if header is not gtv or any(c in ctor_map for c in data.constructors):
                data = TypeData(header, data.type_vars, ctors, span=data.span)
                changed.add(("type", gtv.name_hint))
            self.types[gtv.name_hint] = data
        gv_map = {
            prelude.globals[n]: GlobalVar(new, span=prelude.globals[n].span)
            for n, new in global_renames.items()
        }
        changed.update(("def", n) for n in global_renames)
        renaming = Renaming(adt_map, ctor_map, gv_map)
        self.functions: dict[str, tuple[GlobalVar, Function]] = {}
        for gv, fn in prelude.module.functions.items():
            if prelude.deps["def", gv.name_hint] & changed:
                fn = renaming.function(fn)
            self.functions[gv.name_hint] = (gv_map.get(gv, gv), fn)


class PreludeLink:
    """One program's access to the prelude: lookups by name, and what it used.

    A lookup answers None for a name the program declares itself (its own definition
    wins) and for names the prelude does not declare.
    """

    def __init__(self, view: PreludeView, declared: Declarations) -> None:
        self.view = view
        self.declared = declared
        self.used: set[Key] = set()

    def global_var(self, name: str) -> GlobalVar | None:
        """The prelude's `@name`, unless the program declares its own."""
        entry = self.view.functions.get(name)
        if entry is None or name in self.declared.globals:
            return None
        self.used.add(("def", name))
        return entry[0]

    def adt(self, name: str) -> GlobalTypeVar | None:
        """The prelude's ADT `name`, unless the program declares its own."""
        data = self.view.types.get(name)
        if data is None or name in self.declared.types:
            return None
        self.used.add(("type", name))
        return data.header

    def constructor(self, name: str) -> Constructor | None:
        """The prelude's constructor `name`, unless the program declares its own."""
        ctor = self.view.constructors.get(name)
        if ctor is None or name in self.declared.constructors:
            return None
        self.used.add(self.view.constructor_keys[name])
        return ctor

    def hidden_constructor(self, name: str) -> int | None:
        """Where the program declares `name`, if it hides a prelude constructor of that name."""
        if name not in self.view.constructors:
            return None
        return self.declared.constructors.get(name)

    def missed_constructor(self, name: str) -> bool:
        """Whether the program declares a constructor `name` that the scan did not find."""
        return name in self.view.constructors and name not in self.declared.constructors

    def definitions(self) -> tuple[dict[GlobalVar, Function], dict[GlobalTypeVar, TypeData]]:
        """The prelude definitions the program needs: those it used, transitively."""
        functions: dict[GlobalVar, Function] = {}
        types: dict[GlobalTypeVar, TypeData] = {}
        if not self.used:
            return functions, types
        needed = self.view.prelude.closure(self.used)
        for name, data in self.view.types.items():
            if ("type", name) in needed:
                types[data.header] = data
        for name, (gv, fn) in self.view.functions.items():
            if ("def", name) in needed:
                functions[gv] = fn
        return functions, types
