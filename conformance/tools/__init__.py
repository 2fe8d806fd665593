"""The suite's command-line tools and generators (conformance/__init__.py)."""
