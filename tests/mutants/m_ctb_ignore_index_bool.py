"""ignore_index=True/False is accepted as the int 1/0 (isinstance(True, int)) instead of raising TypeError. Breaks: [ctb-option-types]"""

from mutant_base import converting, reference_with


def _bool_as_int(call):
    if isinstance(call["ignore_index"], bool):
        call["ignore_index"] = int(call["ignore_index"])


BACKEND = reference_with("m-ctb-ignore-index-bool", convert_text_batch=converting(before=_bool_as_int))
