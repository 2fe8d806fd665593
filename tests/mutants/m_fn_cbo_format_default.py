"""convert_batch_output defaults output_format to "batched"; SPEC gives it no default. Breaks: [types-output-format], [api-signatures]"""

from mutant_base import reference, reference_with


def convert_batch_output(batch, output_format="batched"):
    return reference.convert_batch_output(batch, output_format)


BACKEND = reference_with("m-fn-cbo-format-default", convert_batch_output=convert_batch_output)
