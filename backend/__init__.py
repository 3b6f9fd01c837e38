"""The backend: from a fused, typed `@main` to native code, and what runs it.

The route reads `driver → build → lower → te → tir → codegen`, with `runtime` underneath:

* `target` — `Target`, the machine compiled for, as a value (`Target.parse("llvm
  -mcpu=znver4 -num-threads=2")`, `Target.host()`); every subfolder may use it.
* `build/` — the build step: graph plan, memory plan, compiling every kernel for a target
  into one library with an entry point (`compile_plan`), artifact save/load.
* `lower/` — one fused Relay function → tensor expressions (compute definitions) and a
  schedule chosen by its anchor operator.
* `te/` — tensor expressions, schedules with replayable traces, lowering to TIR.
* `tir/` — the loop IR, its arithmetic engine and the passes before code generation.
* `codegen/` — TIR → LLVM IR with llvmlite for a target, object code, the thread pool.
* `runtime/` — what runs: `CompiledModel`, the reference interpreter and its values; it
  uses none of lower, te, tir, codegen or grammar.
"""
