"""The in-process llama.cpp backend: the only wing that imports llama_cpp.

Model, local engine, pairing, memory, demo, doctor report.
"""
