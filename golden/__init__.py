"""batchspec's golden data as package data (``batchspec.golden`` once installed): ``index.json``,
``data/<case>/`` (records and safetensors), ``cases/<area>.py`` (the case definitions, loaded by
path) and ``corpus/`` (the real-data corpus and its tokenizer). Code reads it through
``importlib.resources`` (``conformance/run/package_data.py``), never through checkout paths."""
