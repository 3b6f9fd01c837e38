"""`relay.annotation.*`: builders of the `annotation.` operators.

Made from the operator table at import time by `relay.lang.builders`; `annotation.pyi` beside
this module holds their signatures for editors and type checkers (regenerate it with
`python -m relay.lang.builder_stubs --write`).
"""

from .lang.builders import namespace_builders as _namespace_builders

globals().update(_namespace_builders("annotation"))

__all__ = sorted(_namespace_builders("annotation"))
