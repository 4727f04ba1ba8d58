"""`specterm bench [PATHS...]`: measure acceptance and speedup on your own code.

With no paths it runs the built-in code tasks (completion at cursor positions, continuation, and
edit-style tasks whose output repeats the input); with paths, FIM tasks cut from those files at
seeded random cursor positions; with --tasks-file, the user's own tasks (one JSON object a line).
Every task runs plain and speculative alternately on one loaded engine (A B, B A, ...), so the
figures compare like with like on a busy machine.

--regime memory-bound runs on an F32 copy of the target with a Q4_0 copy as the draft (both derived
once and cached): on a CPU that is the regime every GPU user is in, where verifying k tokens costs
about what one costs. --regime compute-bound keeps the target and drafts with a Q2_K copy.

Output: a table (and, with --sweep, a chart of speedup against draft length) on stdout; with
--json one JSON object on stdout and the table on stderr. Progress goes to stderr: a bar on a
terminal, one line per finished task otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, TextIO

from ..commands.common import TtyProgress, UsageError, read_user_text
from ..config import Settings
from .also import draft_settings, parse_also, run_also, write_also
from .plot import check_plot_target, write_plot

NAME = "bench"
DEFAULT_FIM_TASKS = 8
DEFAULT_REPEAT = 1
DEFAULT_MIN_TIME_S = 2.0
# Built-in generate/edit/chat tasks stop here unless --max-tokens says otherwise: long enough for
# acceptance to settle, short enough that the default run takes a couple of minutes.
DEFAULT_GENERATE_TOKENS = 128
REGIMES = ("as-configured", "compute-bound", "memory-bound")


def _lengths(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected draft lengths like 1,2,4,8,16, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"draft lengths must be whole numbers >= 1, got {text!r}")
    return sorted(dict.fromkeys(values))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def _cps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected characters a second, got {text!r}") from None
    if not (value > 0 and value <= 1000):
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1000 characters a second, got {text}")
    return value


def _kinds(text: str) -> tuple[str, ...]:
    from specterm.engine.bench.tasks import TASK_KINDS  # light: no llama.cpp

    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in TASK_KINDS]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"task kinds are {', '.join(TASK_KINDS)}; got {text!r}")
    return kinds


def add_parser(subparsers: argparse._SubParsersAction,
               parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    from specterm.engine.bench import MAX_PAIRS  # light: a constant (runner.py imports numpy)

    p = subparsers.add_parser(
        NAME,
        parents=parents,
        help="measure acceptance and speedup against plain decoding (built-in tasks or your files)",
        description="Run code tasks plain and speculative, alternately, and report acceptance, "
        "tokens/s, speedup, the measured costs (t1, t_d, t_v(k)), the speedup the theory predicts "
        "from them, loop efficiency, and whether greedy outputs matched. With PATHS, the tasks are "
        "fill-in-the-middle completions cut from those files at seeded random cursor positions.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to cut FIM tasks from")
    p.add_argument("--sweep", type=_lengths, default=[], metavar="N,N,...",
                   help="also run these fixed draft lengths (adaptive off), e.g. 1,2,4,8,16")
    p.add_argument("--tasks-file", metavar="FILE", default=None,
                   help='your own tasks, one JSON object a line: {"name", "kind", optional "max_tokens"} plus '
                   '"instruction", "code" (edit; optional "lang", "path"), "message" (chat), "prompt" '
                   '(continuation) or "prefix", "suffix" (fim, completion)')
    p.add_argument("--regime", choices=REGIMES, default="as-configured",
                   help="memory-bound: an F32 copy of the target, a Q4_0 copy as draft (what a GPU user "
                   "sees, on a CPU); compute-bound: the target as is, a Q2_K copy as draft; a --draft "
                   "flag overrides the derived draft (default: as-configured)")
    p.add_argument("--also", type=parse_also, default=[], metavar="DRAFTER,...",
                   help="also run every task with these drafters (lookup, session or a GGUF path), "
                   "side by side in the same run, each against its own plain runs")
    p.add_argument("--compare-llama-cpp", action="store_true",
                   help="also run llama.cpp's own speculative decoding on the same pair and tasks "
                   "(needs the binaries bench/build_llama_cpp.sh builds; skipped with a note otherwise)")
    p.add_argument("--repeat", type=_positive, default=DEFAULT_REPEAT, metavar="N",
                   help=f"plain/speculative pairs per task and mode (default: {DEFAULT_REPEAT})")
    p.add_argument("--min-time", type=_non_negative, default=DEFAULT_MIN_TIME_S, metavar="S",
                   help="a task whose plain runs generate for less than S seconds in its --repeat "
                   f"pairs runs more pairs, up to {MAX_PAIRS} (short completions time badly on a "
                   f"shared machine; default: {DEFAULT_MIN_TIME_S}, 0: exactly --repeat pairs)")
    p.add_argument("--tasks", type=_positive, default=None, metavar="N",
                   help=f"run only the first N built-in tasks, or cut N FIM tasks (default: all / {DEFAULT_FIM_TASKS})")
    p.add_argument("--kinds", type=_kinds, default=None, metavar="KIND,...",
                   help="only these built-in task kinds: completion, continuation, edit, chat")
    p.add_argument("--task-seed", type=int, default=0, metavar="N",
                   help="seed for the FIM cursor positions (default: 0)")
    p.add_argument("--no-costs", action="store_true",
                   help="skip measuring t1/t_d/t_v (no predicted speedup or efficiency)")
    p.add_argument("--replay", metavar="FILE", default=None,
                   help="type FILE into the real app (headless) at a human pace and measure its "
                   "completions: latency after a pause and after Tab, the share the assistant wrote, "
                   "wasted generation, in-app against headless tokens/s, vanished suggestions")
    p.add_argument("--edits", metavar="FILE", default=None,
                   help="make each edit task of a tasks file in the real app (headless) as a person "
                   "does: select the region, the edit key, type the instruction, Enter; reports the "
                   "time to the first changed line on screen, the whole rewrite, and in-app against "
                   "headless tokens/s")
    p.add_argument("--cps", type=_cps, default=None, metavar="N",
                   help="--replay typing speed in characters a second (default: 8; --edits: 12)")
    p.add_argument("--full", action="store_true",
                   help="--replay types the whole file from an empty buffer (default: blanked regions "
                   "spread over the file, so a 25 KB file takes at most about 5 minutes)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout; the table goes to stderr")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also draw speedup against draft length into FILE (.png, .svg or .pdf; "
                   "needs the plot extra: pip install 'specterm[plot]')")
    return p


def build_tasks(args: argparse.Namespace, settings: Settings):
    from specterm.engine.bench.tasks import TasksFileError, builtin_tasks, fim_tasks, parse_tasks_file

    generate_tokens = settings.generate.max_tokens if hasattr(args, "max_tokens") else DEFAULT_GENERATE_TOKENS
    if args.tasks_file:
        if args.paths:
            raise UsageError("bench: give either PATHS (FIM tasks cut from files) or --tasks-file, not both.")
        text = read_user_text(Path(args.tasks_file), f"--tasks-file {args.tasks_file}")
        defaults = {"fim": settings.completion.max_tokens, "completion": settings.completion.max_tokens,
                    "edit": generate_tokens, "chat": generate_tokens, "continuation": generate_tokens}
        try:
            tasks = parse_tasks_file(text, source=args.tasks_file, max_tokens=defaults)
        except TasksFileError as err:
            raise UsageError(f"bench: {err}.") from None
        if args.kinds:
            tasks = [t for t in tasks if t.kind in args.kinds]
            if not tasks:
                raise UsageError(f"bench: no task in {args.tasks_file} has kind {', '.join(args.kinds)}.")
        return tasks[: args.tasks] if args.tasks else tasks
    if args.paths:
        if args.kinds and "fim" not in args.kinds:
            raise UsageError("--kinds selects built-in tasks; with PATHS every task is a FIM task.")
        try:
            return fim_tasks(args.paths, count=args.tasks or DEFAULT_FIM_TASKS, seed=args.task_seed,
                             max_tokens=settings.completion.max_tokens)
        except ValueError as err:
            raise UsageError(f"bench: {err}.") from None
    tasks = builtin_tasks(completion_tokens=settings.completion.max_tokens, generate_tokens=generate_tokens)
    if args.kinds:
        tasks = [t for t in tasks if t.kind in args.kinds]
        if not tasks:
            raise UsageError(f"no built-in task has kind {', '.join(args.kinds)}.")
    if args.tasks:
        tasks = tasks[: args.tasks]
    return tasks


def regime_settings(args: argparse.Namespace, settings: Settings, progress: TtyProgress):
    """The engine settings for the chosen regime, and what was derived for it (for the report).

    The copies are derived once and cached (engine/llamacpp/derive.py); a --draft flag given on the
    command line keeps its draft (lookup, none or a file) in either regime."""
    from specterm.engine.llamacpp.demo import model_file

    es = settings.engine_settings()
    # Every task starts from its own context: the bench never reads or writes a saved session memory.
    es = replace(es, draft=replace(es.draft, session_store=""))
    if args.regime == "as-configured":
        return es, {"regime": args.regime}
    from specterm.engine.llamacpp.derive import ensure_copy, read_gguf_summary

    target_path = model_file(es.target)
    info = {"regime": args.regime, "source_target": target_path}

    def show(message: str, fraction: float | None) -> None:
        progress(f"{args.regime}: {message}", fraction)

    target = es.target
    if args.regime == "memory-bound" and read_gguf_summary(target_path).bits_per_weight < 16:
        target = replace(es.target, path=str(ensure_copy(target_path, "f32", draft=False, on_progress=show)),
                         demo=False)
        info["derived_target"] = target.path
    draft = es.draft
    if not hasattr(args, "draft"):
        kind = "q4_0" if args.regime == "memory-bound" else "q2_k"
        path = str(ensure_copy(target_path, kind, draft=True, on_progress=show))
        draft = replace(es.draft, kind="model",
                        model=replace(target, path=path, demo=False, gpu_layers=es.draft.model.gpu_layers
                                      if es.draft.model else target.gpu_layers))  # --hybrid stays
        info["derived_draft"] = path
    progress.clear()
    return replace(es, target=target, draft=draft), info


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.replay is not None and args.edits is not None:
        raise UsageError("bench: --replay FILE and --edits FILE run alone: give one of them.")
    if args.replay is not None:
        return run_replay(args, settings)
    if args.edits is not None:
        return run_edits(args, settings)
    if args.cps is not None or args.full:
        raise UsageError("bench: --cps and --full go with --replay FILE (--cps also with --edits FILE).")
    if settings.engine.backend != "local":
        raise UsageError(
            "bench measures the local llama.cpp engine (it times target and draft passes itself); "
            "run it on the machine that serves the model, or with --backend local."
        )
    from specterm.engine.bench.runner import Bench

    from ..engine_factory import make_local_engine

    tasks = build_tasks(args, settings)
    plot_path = check_plot_target(args.plot) if args.plot else None
    progress = TtyProgress()
    engine_settings, regime = regime_settings(args, settings, progress)
    for item in args.also:  # a bad --also item is reported before any model loads
        draft_settings(item, engine_settings)
    engine = make_local_engine(settings, engine_settings=engine_settings, on_progress=progress)
    try:
        engine.load()
        progress.clear()

        def on_progress(message: str, done: int, total: int) -> None:
            progress(f"[{_bar(done, total)}] {done}/{total} {message}", None)

        def on_task(task, comp, done: int, total: int) -> None:
            if progress.enabled:
                return  # the bar shows it
            sp = comp.speculative
            print(f"bench: [{done}/{total}] {task.name} ({task.kind}): {_x(comp.speedup)}, "
                  f"acceptance {_f(sp.acceptance, '.0%')}, mean acceptance length "
                  f"{_f(getattr(sp, 'mean_acceptance_length', None), '.2f')}", file=sys.stderr, flush=True)

        def make_bench() -> Bench:
            return Bench(engine, repeat=args.repeat, on_progress=on_progress,
                         measure_costs=not args.no_costs, on_task=on_task, min_time_s=args.min_time)

        bench = make_bench()
        report = bench.run(tasks, args.sweep)
        data = report.to_dict()
        data["settings"].update(regime)
        if args.also:
            data["also"] = run_also(engine, engine_settings, args.also, tasks, make_bench)
        if args.compare_llama_cpp:
            data["llama_cpp"] = compare_with_llama_cpp(bench, data, engine_settings, tasks, args, progress)
    finally:
        progress.clear()
        engine.close_sync()
    table_stream = sys.stderr if args.json else sys.stdout
    write_table(data, table_stream)
    if data.get("also"):
        write_also(data, data["also"], table_stream)
    if plot_path is not None:
        write_plot(data, plot_path)
        print(f"chart written to {plot_path}", file=sys.stderr)
    if args.json:
        print(json.dumps(data, ensure_ascii=False), flush=True)
    return 0


def compare_with_llama_cpp(bench, data: dict, engine_settings, tasks, args, progress) -> dict:
    """llama.cpp's own speculative decoding on the same pair and tasks (engine/bench/llama_cpp.py),
    with the engine's models still loaded (the machine has the memory; llama.cpp's servers are idle
    while specterm runs and the other way round)."""
    from specterm.engine.bench.llama_cpp import compare
    from specterm.engine.llamacpp.demo import model_file

    def show(message: str, done: int, total: int) -> None:
        progress(f"[{_bar(done, total)}] {done}/{total} llama.cpp: {message}", None)

    target = model_file(engine_settings.target)
    jobs = [(t.name, t.kind, *bench.prompts[t.name], bench.context_ids(t)) for t in tasks if t.name in bench.prompts]
    mine = {t["name"]: t["speedup"] for t in data["tasks"]}
    result = compare(engine_settings, target, jobs, mine, repeat=args.repeat, on_progress=show)
    progress.clear()
    if result.get("skipped"):
        print(f"bench: llama.cpp comparison skipped: {result['skipped']}", file=sys.stderr)
    for task in result.get("skipped_tasks", []):
        print(f"bench: llama.cpp comparison skipped task {task['name']}: {task['why']}.", file=sys.stderr)
    return result


# -- rendering -----------------------------------------------------------------------------------


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = int(width * done / total) if total else width
    return "#" * filled + "-" * (width - filled)


def _f(x, fmt: str, none: str = "-") -> str:
    return none if x is None else format(x, fmt)


def write_table(data: dict, out: TextIO) -> None:
    """The human report: settings, costs, one row per task, the summary, the sweep and its chart."""
    s = data["settings"]
    m = data["machine"]
    mode = "adaptive" if s["adaptive"] else f"fixed {s['draft_max']}"
    out.write(f"target {data['target']}  draft {data['draft']} ({data['draft_kind']})  "
              f"draft_max {s['draft_max']} {mode}  temperature {s['temperature']}  repeat {s['repeat']}\n")
    out.write(f"machine {m['machine']}, {m['cpus']} CPUs, load average {m['load_average_before']} -> "
              f"{m['load_average']}\n")
    c = data.get("costs")
    if c:
        tv = c["t_v_ms"]
        ks = [k for k in tv if k != "1"]
        parts = ", ".join(f"t_v({k}) {tv[k]:.2f} ms = {c['t_v_over_t1'][k]:.1f} t1" for k in ks)
        read = f", t_read {c['t_read_ms']:.2f} ms" if c.get("t_read_ms") else ""
        out.write(f"costs: t1 {c['t1_ms']:.2f} ms, t_d {c['t_d_ms']:.2f} ms{read}, {parts}\n")
    out.write("\n")
    head = (f"{'task':<26} {'kind':<12} {'tok':>5} {'plain t/s':>9} {'spec t/s':>9} {'speedup':>7} {'median':>6} "
            f"{'predict':>7} {'eff':>5} {'accept':>6} {'tok/pass':>8} {'match':>5}\n")
    out.write(head)
    out.write("-" * (len(head) - 1) + "\n")
    for t in data["tasks"]:
        out.write(_row(t["name"][:26], t["kind"], t))
    sm = data["summary"]
    out.write("-" * (len(head) - 1) + "\n")
    out.write(f"summary: speedup {_f(sm['speedup'], '.2f')}x (geometric mean; min {_f(sm['speedup_min'], '.2f')}x), "
              f"acceptance {_f(sm['acceptance'], '.0%')}, efficiency {_f(sm['efficiency'], '.2f')}, "
              f"outputs {_outputs(sm)}\n")
    kinds = sm.get("by_kind") or {}
    if len(kinds) > 1:
        out.write("by kind: " + ", ".join(f"{k} {_x(v['speedup'])} (min {_x(v['speedup_min'])}, {v['tasks']})"
                                          for k, v in kinds.items()) + "\n")
    host = host_line(data)
    if host:
        out.write(host + "\n")
    write_telemetry(data, out)
    if data.get("llama_cpp"):
        write_llama_cpp(data["llama_cpp"], out)
    if data["sweep"]:
        out.write("\nfixed draft lengths (adaptive off):\n")
        out.write(head.replace("task                      ", "draft length              "))
        for e in data["sweep"]:
            out.write(_row(f"g = {e['draft_length']}", "all tasks", e))
        if "best_fixed_draft_length" in sm:
            out.write(f"best fixed: g = {sm['best_fixed_draft_length']} at {_f(sm['best_fixed_speedup'], '.2f')}x; "
                      f"adaptive reaches {_f(sm.get('adaptive_vs_best_fixed'), '.2f')} of it\n")
        out.write("\n")
        write_chart(data, out)
    out.flush()


def write_telemetry(data: dict, out: TextIO) -> None:
    """The speculative runs' counters under the names llama-server and vLLM use."""
    head = (f"{'task':<26} {'num_drafts':>10} {'draft_tok':>9} {'accepted':>8} {'mean_len':>8} "
            f"{'accept by position':<24} {'ttft ms':>7} {'catch-up ms':>11} {'probes':>6}\n")
    out.write("\nspeculative telemetry (summed over repeats; mean_len = 1 + accepted / num_drafts):\n")
    out.write(head)
    for t in data["tasks"]:
        sp = t["speculative"]
        pos = " ".join(_f(a, ".0%") for a in (sp.get("acceptance_by_position") or [])[:6]) or "-"
        ttft = sp.get("time_to_first_token_s")
        catchup = sp.get("draft_catchup_time_s")
        out.write(f"{t['name'][:26]:<26} {_f(sp.get('num_drafts'), 'd'):>10} {sp['drafted']:>9} "
                  f"{sp['accepted']:>8} {_f(sp.get('mean_acceptance_length'), '.2f'):>8} {pos[:24]:<24} "
                  f"{_f(ttft * 1e3 if ttft is not None else None, '.1f'):>7} "
                  f"{_f(catchup * 1e3 if catchup is not None else None, '.1f'):>11} "
                  f"{_f(sp.get('probes'), 'd'):>6}\n")


def write_llama_cpp(cmp: dict, out: TextIO) -> None:
    """specterm's speedup next to llama.cpp's on the same pair and tasks."""
    out.write(f"\nllama.cpp comparison ({cmp.get('program', '-')}):\n")
    if cmp.get("skipped"):
        out.write(f"  skipped: {cmp['skipped']}\n")
        return
    out.write(f"{'task':<26} {'llama plain t/s':>15} {'llama spec t/s':>14} {'llama speedup':>13} "
              f"{'llama accept':>12} {'specterm speedup':>16} {'ratio':>6}\n")
    for r in cmp["tasks"]:
        out.write(f"{r['name'][:26]:<26} {_f(r['plain_tps'], '.1f'):>15} {_f(r['spec_tps'], '.1f'):>14} "
                  f"{_x(r['speedup']):>13} {_f(r['acceptance'], '.0%'):>12} {_x(r['specterm_speedup']):>16} "
                  f"{_f(r['ratio'], '.2f'):>6}\n")
    for task in cmp.get("skipped_tasks", []):
        out.write(f"{task['name'][:26]:<26} skipped: {task['why']}\n")
    out.write(f"geometric mean: llama.cpp {_x(cmp.get('speedup'))}, specterm {_x(cmp.get('specterm_speedup'))}, "
              f"specterm / llama.cpp {_f(cmp.get('ratio'), '.2f')}\n")


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _outputs(sm: dict) -> str:
    if sm["outputs_match"]:
        return "matched"
    if sm.get("divergences_at_near_ties_only"):
        return "differed only at near-ties ('tie': top-2 logit gap <= 1.0 in plain decoding)"
    return "DIFFERED"


def _row(name: str, kind: str, e: dict) -> str:
    p, sp = e["plain"], e["speculative"]
    match = e["outputs_match"]
    gap = e.get("divergence_gap")
    shown = "-" if match is None else ("yes" if match else ("tie" if gap is not None and gap <= 1.0 else "NO"))
    return (f"{name:<26} {kind:<12} {sp['tokens']:>5} {_f(p['tokens_per_second'], '9.1f'):>9} "
            f"{_f(sp['tokens_per_second'], '9.1f'):>9} {_x(e['speedup']):>7} "
            f"{_x(e.get('median_pair_speedup')):>6} "
            f"{_x(e['predicted_speedup']):>7} {_f(e['efficiency'], '5.2f'):>5} "
            f"{_f(sp['acceptance'], '6.0%'):>6} {_f(sp['tokens_per_pass'], '8.2f'):>8} "
            f"{shown:>5}\n")


def write_chart(data: dict, out: TextIO, width: int = 40) -> None:
    """Speedup against draft length as horizontal bars; '|' marks 1.0x (plain decoding)."""
    rows = [(f"g={e['draft_length']}", e["speedup"]) for e in data["sweep"]]
    rows.append(("adaptive", data["summary"]["speedup"]))
    top = max([v for _, v in rows if v] + [1.0]) * 1.05
    one = int(round(width * 1.0 / top))
    out.write("speedup vs draft length ('|' = plain decoding, 1.0x)\n")
    for label, v in rows:
        n = int(round(width * (v or 0) / top))
        bar = "█" * n + " " * (width - n)
        if one < width and n <= one:
            bar = bar[:one] + "|" + bar[one + 1:]
        out.write(f"{label:>9} {bar} {_f(v, '.2f')}x\n")


def run_replay(args: argparse.Namespace, settings: Settings) -> int:
    """`bench --replay FILE`: the app types FILE; see tui/bench/replay.py. Textual loads only here."""
    if args.paths or args.tasks_file or args.sweep or args.compare_llama_cpp:
        raise UsageError("bench: --replay FILE runs alone (no PATHS, --tasks-file, --sweep or --compare-llama-cpp).")
    path = Path(args.replay)
    text = read_user_text(path, f"--replay {args.replay}")
    if not text.strip():
        raise UsageError(f"--replay {args.replay}: the file is empty; there is nothing to type.")
    if "\x00" in text:
        raise UsageError(f"--replay {args.replay}: not a text file (it holds NUL bytes).")
    from .replay import DEFAULT_CPS, ReplayOptions
    from .replay import run_replay as replay

    opts = ReplayOptions(cps=args.cps or DEFAULT_CPS, full=args.full)
    return _in_app(args, settings, "replay",
                   lambda s, progress: replay(s, path, text.replace("\r\n", "\n"), opts, progress), write_replay)


def _in_app(args: argparse.Namespace, settings: Settings, label: str,
            run: Callable[[Settings, Callable[[str], None]], dict], write: Callable[[dict, TextIO], None]) -> int:
    """Run an in-app measurement (`run`, given the settings and a progress line) and print its
    report (`write`; with --json the table goes to stderr and the JSON to stdout)."""
    from .replay import ReplayError

    progress = TtyProgress()
    settings = replace(settings, draft=replace(settings.draft, session_store=""))  # never a saved memory
    try:
        data = run(settings, lambda message: progress(f"{label}: {message}"))
    except ReplayError as err:
        raise UsageError(f"bench --{label}: {err}.") from None
    finally:
        progress.clear()
    write(data, sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(data, ensure_ascii=False), flush=True)
    return 0


def run_edits(args: argparse.Namespace, settings: Settings) -> int:
    """`bench --edits FILE`: the app makes each edit task; see tui/bench/edits.py."""
    if args.paths or args.tasks_file or args.sweep or args.compare_llama_cpp or args.full:
        raise UsageError("bench: --edits FILE runs alone "
                         "(no PATHS, --tasks-file, --sweep, --full or --compare-llama-cpp).")
    from specterm.engine.bench.tasks import TasksFileError, parse_tasks_file

    text = read_user_text(Path(args.edits), f"--edits {args.edits}")
    try:
        tasks = [t for t in parse_tasks_file(text, source=args.edits) if t.kind == "edit"]
    except TasksFileError as err:
        raise UsageError(f"bench: {err}.") from None
    if not tasks:
        raise UsageError(f"bench: {args.edits} has no edit task (kind \"edit\").")
    tasks = tasks[: args.tasks] if args.tasks else tasks
    from .edits import DEFAULT_CPS, EditBenchOptions, run_edit_bench, write_edit_bench

    opts = EditBenchOptions(cps=args.cps or DEFAULT_CPS)
    return _in_app(args, settings, "edits", lambda s, progress: run_edit_bench(s, tasks, opts, progress),
                   write_edit_bench)


def host_line(data: dict) -> str | None:
    """Host work per pass (the loop's Python beside llama.cpp's decode calls), the tasks' mean,
    against t1: what a GPU, where t1 is a millisecond or two, pays on every pass."""
    def mean(side: str) -> float | None:
        values = [t["host_ms_per_pass"][side] for t in data["tasks"]
                  if (t.get("host_ms_per_pass") or {}).get(side) is not None]
        return sum(values) / len(values) if values else None

    plain, spec = mean("plain"), mean("speculative")
    if plain is None or spec is None:
        return None
    t1 = (data.get("costs") or {}).get("t1_ms")
    share = f" ({plain / t1:.2f} and {spec / t1:.2f} t1)" if t1 else ""
    return f"host ms per pass: plain {plain:.2f}, speculative {spec:.2f}{share}"


def write_replay(d: dict, out: TextIO) -> None:
    def ms(key: str) -> str:
        n = d[key.replace("_ms", "_count")]
        return f"p50 {d[key]['p50']:.0f} ms, p95 {d[key]['p95']:.0f} ms ({n})" if n else "none measured"

    lines = [
        f"replay of {d['file']}: {d['region_chars']} of {d['file_chars']} characters in {d['regions']} "
        f"region(s) at {d['cps']:g} characters/s, {d['duration_s']:.0f} s",
        f"first suggestion after a pause  {ms('first_ghost_ms')}",
        f"complete suggestion             {ms('complete_ms')}",
        f"next suggestion after accept    {ms('after_accept_ms')}; {d['accepts_without_next']} accept(s) with none; "
        f"{d['accept_probes']} probe(s): Tab on a suggestion the file does not want, then taken back",
        f"first suggestion after a jump   {ms('after_jump_ms')} "
        f"(a region's start: a new place to read; {d['jumps']} jumps)",
        f"a person's path: move, type     {ms('person_ms')} at {d['person_spots']} places, "
        f"{d['person_within_600ms']} within 600 ms",
        f"  the same after a look         {ms('person_look_ms')} at {d['person_look_spots']} places",
        f"served from cache or prefetch   {d['served_share']:.0%} of {d['pauses_with_ghost']} pauses "
        f"with a suggestion ({d['pauses']} pauses)",
        f"written by the assistant        {d['accepted_chars_share']:.0%} "
        f"({d['accepted_chars']} accepted, {d['typed_chars']} typed)",
        f"suggestions                     {d['suggestions_shown']} shown, {d['suggestions_accepted']} accepted, "
        f"{d['line_accepts']} line and {d['word_accepts']} word accepts",
        f"requests                        {d['requests']} asked, {d['prefetches']} prefetched, "
        f"{d['alternatives']} alternatives; {d['wasted_tokens']} tokens never shown",
        f"tokens/s in the app             {d['in_app_tokens_per_s']:.1f} "
        f"against {d['headless_tokens_per_s']:.1f} with the UI idle "
        f"({d['in_app_vs_headless']:.2f}x, {d['compared_requests']} requests; drafted "
        f"{d['in_app_drafted']} against {d['headless_drafted']} tokens)",
        f"suggestions that vanished       {d['vanished']} (without an edit; must be 0)",
    ]
    if not d["text_matches"]:
        lines.append("warning: the typed buffer does not equal the file (the replay went astray)")
    out.write("\n".join(lines) + "\n")
