"""Backends of the batchspec contract that ship with the suite (``reference`` lives in
``reference/``); each subpackage is written as an outside author would write one."""
