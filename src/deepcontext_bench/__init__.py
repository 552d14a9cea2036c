"""Benchmarks: retrieval quality on LoCoMo, speed at scale, offline extraction against a labelled set
(``deepcontext bench ...``).

Run on demand, never in the test suite (a tiny LoCoMo-format run there only keeps the harness
honest). Results: a JSON file per run and plots under ``benchmarks/results/``, a markdown table on
the terminal.
"""
