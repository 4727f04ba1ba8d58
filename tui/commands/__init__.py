"""Headless subcommands of `specterm`, one module each.

The bench's command lives with the rest of the bench's app side, in tui/bench/command.py; it
follows the same contract.

A command module defines:

- `NAME`: the subcommand's name,
- `add_parser(subparsers, parents) -> argparse.ArgumentParser`: its parser, built with
  `parents=parents` so every global flag works after the command name too,
- `run(args, settings) -> int`: do the work and return the exit code,
- optionally `project_dir(args) -> Path`: the folder whose `.specterm.toml` applies (default: the
  current folder), and `CHECK_MODEL_FILES = False` to check model paths itself (doctor).

Register a module by adding it to `specterm.tui.cli.COMMAND_MODULES`. Modules must import nothing
heavy at import time (no llama_cpp, no textual): `specterm --help` imports them all.
"""
