"""FX graphs: canonical hashing and rendering as KernelBench-format task sources."""
