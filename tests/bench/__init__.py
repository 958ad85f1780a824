"""The benchmark scripts (``python tests/bench/benchmark.py``): run by hand and
by tests/test_benchmark_smoke.py, never collected as tests. Each script runs
with this folder first on ``sys.path``, so they import each other by bare name."""
