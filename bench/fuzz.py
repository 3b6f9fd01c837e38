"""Long fuzz runs: parse, check, opt and build on mutated and generated programs.

    python bench/fuzz.py --minutes 30 [--stages parse,check,opt,build] [--out DIR]
                         [--seed S] [--jobs N] [--minimize-seconds 60]
    python bench/fuzz.py --replay DIR/opt-01-mismatch.relay ...

Runs the stages of `relay.testing.fuzz` for the given time over `--jobs` worker
processes (default: every core), giving each stage an equal share of the time, then
prints the inputs tried and the outcomes per stage. Each distinct finding (an internal
error, a misplaced diagnostic, a result that differs from the interpreter, a valid
program rejected, a timeout) is written to DIR as a minimized `.relay` case (its first
line says how to run it) and a `.txt` with the traceback. No input can hang the run:
each runs under a time limit, and a worker stuck past a hard limit is replaced. The
same seed makes the same inputs. `--replay` runs saved cases again.

Exit status: 0 if there were no findings, 1 if there were, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from relay.testing.fuzz import STAGES, Campaign, replay, worst


def _stages(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in STAGES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown stage {', '.join(unknown) or '(none)'}; stages: {', '.join(STAGES)}"
        )
    return names


def _replay(paths: list[str]) -> int:
    status = 0
    for path in paths:
        outcomes = replay(path)
        outcome = worst(outcomes)
        print(f"{path}: {outcome.kind} {outcome.signature}".rstrip())
        if outcome.is_finding:
            status = 1
            print(outcome.detail)
    return status


def main(argv: list[str] | None = None) -> int:
    """Run the fuzz campaign (or replay cases); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to fuzz")
    parser.add_argument("--stages", type=_stages, default=list(STAGES), metavar="A,B",
                        help=f"stages to run (default {','.join(STAGES)})")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"), metavar="DIR",
                        help="where findings are written (default fuzz-findings)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="worker processes (default: one per core)")  # fmt: skip
    parser.add_argument("--minimize-seconds", type=float, default=60.0, metavar="S",
                        help="time to minimize each finding (default 60)")  # fmt: skip
    parser.add_argument("--replay", nargs="+", metavar="CASE", help="run saved cases again")
    args = parser.parse_args(argv)
    if args.replay:
        return _replay(args.replay)
    campaign = Campaign(
        stages=args.stages,
        seed=args.seed,
        seconds=args.minutes * 60,
        jobs=args.jobs,
        out=args.out,
        minimize_seconds=args.minimize_seconds,
        log=lambda line: print(line, flush=True),
    )
    print(
        f"fuzzing {', '.join(args.stages)} for {args.minutes:g} min with {args.jobs} "
        f"workers, seed {args.seed}, findings in {args.out}",
        flush=True,
    )
    start = time.monotonic()
    campaign.run()
    print(f"\nran for {time.monotonic() - start:.0f} s (wall time; 'per s' is per worker-second)")
    print(campaign.summary())
    return 1 if campaign.saved else 0


if __name__ == "__main__":
    sys.exit(main())
