"""The benchmark: plain vs speculative decoding on one loaded engine, with measured costs and the predicted speedup."""

# Pairs a task runs at most to reach `min_time_s` of plain generation (runner.Bench). Here, not in
# runner.py, so that the CLI's help can name it without importing numpy at every start.
MAX_PAIRS = 6
