"""batchspec's performance harness: ``pytest bench --backend=A --backend=B [--device=cuda]``.

Every backend runs beside upstream nemo-automodel 0.7.0, Zephon's ``to_training``, Hugging
Face's ``DataCollatorWithFlattening`` and the memory floor of the machine, in one run, with
pytest-benchmark; ``bench/report.py`` turns its JSON into tables and plots. Deterministic
figures (torch operator calls, bytes materialised) go beside every timing.
"""
