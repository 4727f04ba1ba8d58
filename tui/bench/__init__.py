"""The bench's app side: `specterm bench` (command.py, with --also in also.py and --plot in plot.py)
and the two benches that drive the real app, the keystroke replay (replay.py) and the edits
(edits.py).

The measuring library is specterm.engine.bench (no Textual); the scripts and tasks are in bench/.
Importing this package loads nothing: `specterm --help` imports command.py, and Textual is
imported only when --replay or --edits runs.
"""
