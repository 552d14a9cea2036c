"""Benchmarks: retrieval quality on LoCoMo and speed at scale (``deepcontext bench ...``).

Run on demand, never in the test suite (a tiny LoCoMo-format run there only keeps the harness
honest). Results: a JSON file per run and plots under ``benchmarks/results/``, a markdown table on
the terminal.
"""
