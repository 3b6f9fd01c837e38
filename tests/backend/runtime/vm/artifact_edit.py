"""Editing a saved VM artifact's metadata, for tests that check what loading refuses."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def edited_artifact(src: Path, dst: Path, edit: Callable[[Any], None]) -> Path:
    """A copy of artifact `src` at `dst` with `model.json` changed by `edit` (other members
    as they are)."""
    with zipfile.ZipFile(src) as z:
        members = {name: z.read(name) for name in z.namelist()}
    meta = json.loads(members["model.json"])
    edit(meta)
    members["model.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return dst
