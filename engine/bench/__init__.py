"""The benchmark: plain vs speculative decoding on one loaded engine, with measured costs and the predicted speedup."""
