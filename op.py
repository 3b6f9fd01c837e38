"""`relay.add`, `relay.reshape`, ...: builders of the top-level operators.

Made from the operator table at import time by `relay.lang.builders`; `op.pyi` beside this
module holds their signatures for editors and type checkers (regenerate it with
`python -m relay.lang.builder_stubs --write`).
"""

from .lang.builders import namespace_builders as _namespace_builders

globals().update(_namespace_builders(""))

__all__ = sorted(_namespace_builders(""))
