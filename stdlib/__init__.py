"""Library code written in the Relay text format: the prelude (List, Option, Tree, map, ...).

The `.relay` files ship inside the package (package data), so they are found with
`importlib.resources` whether relay runs from a source tree, an editable install or a wheel.

Programs need no import to use the prelude: `relay.grammar.parse` falls back to the
prelude for names a program uses but does not declare (`List`, `Cons`, `@map`, ...) and
adds the definitions it needs to the module (`relay.grammar.prelude`). The whole prelude,
parsed once per process, is `relay.grammar.prelude.prelude_module()`.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from importlib import resources
from pathlib import Path

PRELUDE_NAME = "prelude.relay"

_extracted: dict[str, Path] = {}


def prelude_text() -> str:
    """The source text of the prelude (`prelude.relay`)."""
    return resources.files(__name__).joinpath(PRELUDE_NAME).read_text(encoding="utf-8")


def prelude_path() -> Path:
    """A filesystem path to `prelude.relay`, for diagnostics and tools that want a file.

    When the package is not on the filesystem (e.g. imported from a zip archive), the file
    is copied once to a temporary directory that is removed when the process exits.
    """
    resource = resources.files(__name__).joinpath(PRELUDE_NAME)
    if isinstance(resource, Path):
        return resource
    if PRELUDE_NAME not in _extracted:
        folder = Path(tempfile.mkdtemp(prefix="relay-stdlib-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        target = folder / PRELUDE_NAME
        target.write_text(resource.read_text(encoding="utf-8"), encoding="utf-8")
        _extracted[PRELUDE_NAME] = target
    return _extracted[PRELUDE_NAME]


__all__ = ["PRELUDE_NAME", "prelude_path", "prelude_text"]
