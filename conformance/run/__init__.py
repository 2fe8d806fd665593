"""The suite's run machinery: the pytest plugin and what a run goes through (conformance/__init__.py)."""
