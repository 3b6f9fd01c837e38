"""Profiling compiled models: where a model spends its time, per kernel and per thread.

* `data`: what a profiling session measured, as plain values (`ProfileData`).
* `run`: `profile_model` runs a compiled model through its profiling entry (timestamps
  around each kernel call, taken by the generated code) with the thread pool's task trace on.
* `machine`: the machine's fp32 peak and memory bandwidth, probed once and cached.
* `report`: the text report and JSON (`format_table`, `to_json`), from the figures of
  `summary` (per kernel, per operator kind, outside the kernels) laid out by `table`;
  `chrome_trace` writes the Trace Event Format (Perfetto, chrome://tracing).
"""
