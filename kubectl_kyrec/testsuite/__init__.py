"""Kyverno CLI test suites (`kyverno-test.yaml`): finding and loading them (suite), building each suite's
environment and running it (runner), and deciding each row (rows). `run.test` is the command over them."""
