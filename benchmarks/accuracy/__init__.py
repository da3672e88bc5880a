"""accuracy benchmarks: run each as a file from the repository root (benchmarks/README.md)."""
