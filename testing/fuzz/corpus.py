"""The seed programs the mutators start from: hand-written programs that use every part
of the syntax, the example models, the prelude, and each of their top-level items on its
own (small inputs parse fast, so a run tries many more of them)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

from ...lang.metadata import write_metadata
from ...stdlib import prelude_text

LISTS = """#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

type Option[A] {
  Some(A),
  None,
}

def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}

def @foldl[A, B](%f: fn (A, B) -> A, %acc: A, %xs: List[B]) -> A {
  match? (%xs) {
    Cons(%x, %rest) => @foldl(%f, %f(%acc, %x), %rest),
    Nil => %acc,
  }
}

def @main(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
  let %f = fn (%a: Tensor[(2, 2), float32], %b: Tensor[(2, 2), float32]) { %a + %b * 2f };
  let %xs = Cons(%x, Cons(%x, Nil));
  @foldl(%f, %x, %xs)
}
"""

CONV_BLOCK = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 3, 8, 8), float32] /* ty=Tensor[(1, 3, 8, 8), float32] */) \
-> Tensor[(1, 4, 8, 8), float32] {
  %0 = nn.conv2d(%data, meta[relay.Constant][0] /* ty=Tensor[(4, 3, 3, 3), float32] */, \
padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %1 = nn.batch_norm(%0, meta[relay.Constant][1], meta[relay.Constant][1], \
meta[relay.Constant][1], meta[relay.Constant][1], epsilon=1e-05f) \
/* ty=(Tensor[(1, 4, 8, 8), float32], Tensor[(4), float32], Tensor[(4), float32]) */;
  %2 = %1.0 /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %3 = fn (%p0: Tensor[(1, 4, 8, 8), float32], Primitive=1) { nn.relu(%p0) };
  %3(%2) /* ty=Tensor[(1, 4, 8, 8), float32] */
}
#[metadata]
""" + write_metadata(
    {"relay.Constant": [np.ones((4, 3, 3, 3), "float32"), np.arange(4, dtype="float32")]}
)

MISC = """#[version = "0.0.5"]
def @f(%x: int32, %s: Tensor[(?, 3), float16]) -> (int32, bool) {
  /* a /* nested */ comment */
  %0 = add(%x, 1);  // a line comment
  let %r: ref(int32) = ref(%0);
  let %_ = ref_write(%r, -2i64);
  %1 = if (less(%0, 5)) { ref_read(%r) } else { %0 * 2 };
  (%1, True)
}

def @h[T](%p: (T, T), %q: fn [U](U) -> U, %u: ()) -> T {
  free_var %z: Tensor[(1), int16];
  %q(%p.0);
  %q(%p.1)
}
"""

# Valid apart from its metadata section, which is not a metadata table.
ODDITIES = """\
#[version = "0.0.5"]
type List[A] { Cons(A, List[A]), Nil, }
def @map[A, B](%f: fn(A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) { Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)), Nil => Nil, }
}
def @main(%x: Tensor[(1, 3), float32], %t: (int32, bool)) -> Tensor[(1, 3), float32] {
  %0 = nn.softmax(%x, axis=1) /* ty=Tensor[(1, 3), float32] */;
  let %y: float32 = 2.5f; // comment
  let %r = ref(%t.0);
  %1 = if (%t.1) { ref_read(%r) } else { -1 };
  free_var %z: int64;
  fn (%a, Primitive=1) { %a * %y - 1 }(%0); (%1, %z, "s", meta[relay.Constant][0])
}
#[metadata]
{"root": 1}
"""

HAND_WRITTEN = (LISTS, CONV_BLOCK, MISC, ODDITIES)

MAX_SEED_CHARS = 8000  # bigger seeds parse too slowly to be mutated by the thousand

_ITEM_START = re.compile(r"^(?=def |type |extern )", re.M)
_HEADER = '#[version = "0.0.5"]\n'


def _examples_folder() -> Path:
    return Path(__file__).resolve().parents[2] / "examples"


@functools.cache
def example_programs() -> dict[str, str]:
    """The text of each `examples/*.relay` (empty when the examples are not installed)."""
    folder = _examples_folder()
    if not folder.is_dir():
        return {}
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.relay"))}


def items_of(text: str) -> list[str]:
    """Each top-level `def`/`type`/`extern` item of `text` as a program of its own (with
    the version header; the metadata section, if any, stays with the last item)."""
    starts = [m.start() for m in _ITEM_START.finditer(text)]
    pieces = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    return [_HEADER + piece for piece in pieces]


@functools.cache
def seed_programs() -> tuple[str, ...]:
    """Whole programs to mutate: the hand-written ones, the prelude and the examples that
    are small enough, then every item of all of them that is small enough."""
    whole = [*HAND_WRITTEN, prelude_text(), *example_programs().values()]
    seeds = [t for t in whole if len(t) <= MAX_SEED_CHARS]
    for text in whole:
        pieces = items_of(text)
        if len(pieces) > 1:
            seeds.extend(p for p in pieces if len(p) <= MAX_SEED_CHARS)
    return tuple(dict.fromkeys(seeds))


@functools.cache
def valid_seed_programs() -> tuple[str, ...]:
    """The seed programs that parse and type-check (the starting points of ill-typed
    variants)."""
    from ...grammar import parse
    from ...lang.diagnostics import Error
    from ...typecheck import check_module

    valid = []
    for text in seed_programs():
        try:
            check_module(parse(text))
        except Error:
            continue
        valid.append(text)
    return tuple(valid)
