"""The OpenAI-compatible HTTP backend (llama-server, vLLM, llama_cpp.server). Never loads llama.cpp.

Engine, server statistics, doctor.
"""
