"""`partial-evaluate`: an online partial evaluator over A-normal form (the Relay paper's,
tvm-facts.md §7), with memoized specializations.

Before::

    def @main(%x: Tensor[(2), float32]) {
      let %xs = Cons(1f, Cons(2f, Nil));
      let %ys = @map(fn (%v: float32) { %v * 2f }, %xs);
      add(%x, @sum_floats(%ys))
    }

After: the list, the closure and the calls are gone, `@map` and the sum ran at compile
time::

    def @main(%x: Tensor[(2), float32]) {
      let %x1 = add(%x, 6f);
      %x1
    }

The modules, each doing one thing:

* `values`: partially static values (`PValue`: a static part and a residual atom);
* `store`: what is known of the contents of references;
* `residual`: scopes of residual `let` bindings (A-normal form by construction);
* `evaluator`: the evaluation rules, unfolding with fuel, memoized specialization;
* `run`: the pass (`fuel`, `memo`, `max-elements` options), preparing the module (A-normal
  form, distinct binders, types) and removing dead residual bindings.
"""

from .run import PartialEvalOptions, partial_evaluate_module, partial_evaluate_pass

__all__ = ["PartialEvalOptions", "partial_evaluate_module", "partial_evaluate_pass"]
