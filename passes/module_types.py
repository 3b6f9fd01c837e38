"""The types of a module, inferred once per module object.

Modules and their nodes are immutable, so the inference result of one module object
stays valid while the object lives. The `infer-type` pass, `fuse-ops` (which requires
it) and the debug instrument of a pipeline therefore share one inference per module
instead of re-inferring the same module up to three times.
"""

from __future__ import annotations

import weakref

from ..lang.module import IRModule
from ..typecheck import ModuleTypes, check_module

_CACHE: weakref.WeakKeyDictionary[IRModule, ModuleTypes] = weakref.WeakKeyDictionary()


def module_types(mod: IRModule) -> ModuleTypes:
    """`check_module(mod)` (raising `TypeCheckError`), remembered while `mod` lives.

    The result is shared: callers must not change it.
    """
    types = _CACHE.get(mod)
    if types is None:
        types = check_module(mod)
        _CACHE[mod] = types
    return types
