"""The OpenAI-compatible HTTP backend (llama-server, vLLM, llama_cpp.server): engine, server statistics, doctor. Never loads llama.cpp."""
