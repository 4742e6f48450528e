"""Support code for repro's own tests and benchmarks (not a public API)."""
