"""The suite's assert helpers (``conformance/helpers/asserts.py``) fail on the cases they exist for,
with a message that shows what was compared, the expected and the actual value and the clause
tag ``[clause: call]``, and pass on equal inputs."""

from __future__ import annotations

import re

import pytest
import torch

from batchspec.conformance.helpers.asserts import (
    MAX_MISMATCHES,
    Shape,
    Value,
    assert_batch_equal,
    assert_equal,
    assert_keys,
    assert_raises,
    assert_tensor_equal,
    missing_facts,
    names,
    summary,
)

TAG = "[ctb-shift: convert_text_batch(rows)]"
RAISES_TAG = "[ctb-shift: convert_text_batch(...)]"  # assert_raises names the function it called


def failure(func, *args, **kwargs) -> str:
    """The message of the AssertionError ``func`` raises (fails the test when it raises none)."""
    with pytest.raises(AssertionError) as caught:
        func(*args, **kwargs)
    return str(caught.value)


def tensor_failure(actual, expected, name="labels") -> str:
    return failure(assert_tensor_equal, name, actual, expected, clause="ctb-shift", call="convert_text_batch(rows)")


def shows(message: str, *parts: str) -> None:
    for part in parts:
        assert part in message, f"{part!r} is not in the message {message!r}"


# --- assert_tensor_equal -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "tensor",
    [
        torch.tensor([[1, 2, 3], [4, 5, 6]]),
        torch.tensor([True, False]),
        torch.zeros(0, 3, dtype=torch.int32),
        torch.tensor(7),
        torch.tensor([0.5, -0.0]),
    ],
    ids=["int64", "bool", "empty", "scalar", "float"],
)
def test_tensor_equal_passes_on_equal_tensors(tensor):
    assert_tensor_equal("x", tensor.clone(), tensor, clause="c", call="f()")
    assert_tensor_equal("x", tensor.clone(), tensor, clause="c")


def test_tensor_equal_fails_on_the_dtype():
    message = tensor_failure(torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1, 2]))
    assert message == f"labels.dtype=torch.int32, but should be torch.int64 {TAG}"


def test_tensor_equal_fails_on_the_dtype_even_when_values_are_equal_bool_and_int():
    message = tensor_failure(torch.tensor([1, 0]), torch.tensor([True, False]))
    shows(message, "labels.dtype=torch.int64", "should be torch.bool", TAG)


def test_tensor_equal_fails_on_the_shape():
    message = tensor_failure(torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, 2, dtype=torch.long))
    assert message == f"labels.shape=(2, 3), but should be (3, 2) {TAG}"


def test_tensor_equal_fails_on_an_extra_dimension_of_size_one():
    message = tensor_failure(torch.zeros(1, 4, dtype=torch.long), torch.zeros(4, dtype=torch.long))
    assert message == f"labels.shape=(1, 4), but should be (4,) {TAG}"


def test_tensor_equal_fails_on_one_differing_element():
    expected = torch.tensor([[1, 2, 3], [4, 5, 6]])
    actual = expected.clone()
    actual[1, 2] = -100
    message = tensor_failure(actual, expected)
    lines = message.splitlines()
    assert lines[0] == f"labels: 1 element(s) differ {TAG}"
    assert lines[1].strip() == "labels[1, 2]=-100, but should be 6"
    shows(message, "actual:   [[1, 2, 3], [4, 5, -100]]", "expected: [[1, 2, 3], [4, 5, 6]]")
    shows(message, "Tensor[shape=(2, 3), dtype=torch.int64]")


def test_tensor_equal_lists_at_most_the_first_mismatches_and_counts_all():
    expected = torch.arange(100)
    message = tensor_failure(expected.flip(0), expected)
    assert message.splitlines()[0] == f"labels: 100 element(s) differ {TAG}"
    listed = re.findall(r"labels\[(\d+)\]=(\d+), but should be (\d+)", message)
    assert listed == [(str(i), str(99 - i), str(i)) for i in range(MAX_MISMATCHES)]
    # a large tensor is summarised, not printed
    shows(
        message,
        "actual:   Tensor[shape=(100,), dtype=torch.int64]",
        "expected: Tensor[shape=(100,), dtype=torch.int64]",
    )


def test_tensor_equal_fails_on_a_bool_element_and_a_scalar():
    message = tensor_failure(torch.tensor([True, False]), torch.tensor([True, True]), name="attention_mask")
    shows(message, "attention_mask[1]=False, but should be True", TAG)
    message = tensor_failure(torch.tensor(5), torch.tensor(6), name="max_seqlen")
    shows(message, "max_seqlen: 1 element(s) differ", "max_seqlen[]=5, but should be 6", TAG)


@pytest.mark.parametrize(
    "actual, shown",
    [([1, 2], "list [1, 2]"), (None, "NoneType None"), (3, "int 3")],
    ids=["list", "none", "int"],
)
def test_tensor_equal_fails_on_a_value_that_is_not_a_tensor(actual, shown):
    message = tensor_failure(actual, torch.tensor([1, 2]))
    assert message == f"labels: {shown}, but should be Tensor[shape=(2,), dtype=torch.int64] {TAG}"


def test_tensor_equal_tag_without_a_call_is_the_clause_alone():
    message = failure(assert_tensor_equal, "labels", torch.tensor([1]), torch.tensor([2]), clause="ctb-shift")
    assert message.splitlines()[0] == "labels: 1 element(s) differ [ctb-shift]"


# --- assert_batch_equal ------------------------------------------------------------------------


def batch(**values):
    base = {"input_ids": torch.tensor([[5, 6, 7]]), "labels": torch.tensor([[6, 7, -100]]), "qkv_format": "thd"}
    return {**base, **values}


def batch_failure(actual, expected, **kwargs) -> str:
    return failure(assert_batch_equal, actual, expected, clause="ctb-shift", call="convert_text_batch(rows)", **kwargs)


def test_batch_equal_passes_on_equal_batches_and_ignores_extra_keys():
    assert_batch_equal(batch(), batch(), clause="c", call="f()")
    assert_batch_equal(batch(extra=torch.tensor([1])), batch(), clause="c", call="f()")


def test_batch_equal_compares_only_the_given_keys():
    assert_batch_equal(batch(labels=torch.tensor([[0, 0, 0]])), batch(), clause="c", keys=["input_ids", "qkv_format"])
    message = batch_failure(batch(labels=torch.tensor([[0, 0, 0]])), batch(), keys=["labels"])
    shows(message, "labels: 3 element(s) differ", TAG)


def test_batch_equal_fails_on_a_missing_key():
    actual = batch()
    del actual["labels"]
    message = batch_failure(actual, batch())
    assert message == f"key 'labels' is missing, but should be present; keys: ['input_ids', 'qkv_format'] {TAG}"


def test_batch_equal_fails_on_a_differing_tensor_element_with_its_key():
    message = batch_failure(batch(labels=torch.tensor([[6, 7, 0]])), batch())
    assert message.splitlines()[0] == f"labels: 1 element(s) differ {TAG}"
    shows(message, "labels[0, 2]=0, but should be -100")


def test_batch_equal_fails_on_a_tensor_dtype():
    message = batch_failure(batch(input_ids=torch.tensor([[5, 6, 7]], dtype=torch.int32)), batch())
    assert message == f"input_ids.dtype=torch.int32, but should be torch.int64 {TAG}"


def test_batch_equal_fails_on_a_value_that_should_be_a_tensor():
    message = batch_failure(batch(labels=[[6, 7, -100]]), batch())
    assert message == f"labels: list [[6, 7, -100]], but should be Tensor[shape=(1, 3), dtype=torch.int64] {TAG}"


@pytest.mark.parametrize(
    "actual, expected, shown",
    [
        ("bshd", "thd", "qkv_format=str 'bshd', but should be str 'thd'"),
        (1, True, "qkv_format=int 1, but should be bool True"),  # equal with ==, but another type
        (None, "thd", "qkv_format=NoneType None, but should be str 'thd'"),
    ],
    ids=["value", "type", "none"],
)
def test_batch_equal_fails_on_a_non_tensor_value_or_type(actual, expected, shown):
    message = batch_failure(batch(qkv_format=actual), batch(qkv_format=expected))
    assert message == f"{shown} {TAG}"


# --- assert_equal ------------------------------------------------------------------------------


def equal_failure(actual, expected) -> str:
    return failure(assert_equal, actual, expected, clause="ctb-shift", call="convert_text_batch(rows)")


def test_equal_passes_on_equal_nested_values():
    value = {"outcomes": {"0 next": [[0], [1]], "1 state": {"version": 1}}, "t": [torch.tensor([1, 2])]}
    assert_equal(value, value, clause="c", call="f()")
    assert_equal({**value, "extra": 1}, value, clause="c")  # an expected mapping may list only some keys
    assert_equal({"rows": ([0], (1,))}, {"rows": [[0], [1]]}, clause="c")  # a tuple matches a list


@pytest.mark.parametrize(
    "actual, expected, shown",
    [
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}, "a.b[1]=int 2, but should be int 3"),
        ({"a": {"b": [1]}}, {"a": {"b": [1, 2]}}, "a.b=list [1], but should be [1, 2]"),
        ({"a": 1}, {"a": True}, "a=int 1, but should be bool True"),
        (5, {"a": 1}, "output: int 5, but should be {'a': 1}"),
        ({"a": {}}, {"a": {"b": 1}}, "key 'b' is missing, but should be present; keys: []"),
    ],
    ids=["leaf", "list-length", "type", "not-a-mapping", "missing-key"],
)
def test_equal_fails_with_the_path_actual_and_expected(actual, expected, shown):
    assert equal_failure(actual, expected) == f"{shown} {TAG}"


def test_equal_compares_tensors_exactly_at_their_path():
    message = equal_failure({"a": [torch.tensor([1])]}, {"a": [torch.tensor([2])]})
    assert message.splitlines()[0] == f"a[0]: 1 element(s) differ {TAG}"
    message = equal_failure({"a": torch.tensor([1], dtype=torch.int32)}, {"a": torch.tensor([1])})
    assert message == f"a.dtype=torch.int32, but should be torch.int64 {TAG}"


# --- assert_keys -------------------------------------------------------------------------------


def test_keys_pass_on_the_same_keys_in_the_same_order():
    assert_keys({"a": 1, "b": 2}, ["a", "b"], clause="c", call="f()")
    assert_keys({}, [], clause="c", call="f()")


@pytest.mark.parametrize(
    "out, keys",
    [
        ({"labels": 1, "input_ids": 2}, ["input_ids", "labels"]),
        ({"input_ids": 1}, ["input_ids", "labels"]),
        ({"input_ids": 1, "labels": 2, "extra": 3}, ["input_ids", "labels"]),
    ],
    ids=["wrong-order", "missing-key", "extra-key"],
)
def test_keys_fail_on_order_missing_and_extra_keys(out, keys):
    message = failure(assert_keys, out, keys, clause="ctb-shift", call="convert_text_batch(rows)")
    assert message == f"keys {list(out)}, but should be {keys} (in this order) {TAG}"


def test_unordered_keys_ignore_the_order_but_not_a_missing_or_extra_key():
    assert_keys({"labels": 1, "input_ids": 2}, ["input_ids", "labels"], clause="c", call="f()", ordered=False)
    for out in ({"input_ids": 1}, {"input_ids": 1, "labels": 2, "extra": 3}):
        message = failure(
            assert_keys,
            out,
            ["labels", "input_ids"],
            clause="ctb-shift",
            call="convert_text_batch(rows)",
            ordered=False,
        )
        assert message == f"keys {sorted(out)}, but should be ['input_ids', 'labels'] {TAG}"


# --- assert_raises -----------------------------------------------------------------------------


def raise_(error: BaseException):
    raise error


def test_raises_returns_the_error_when_type_and_facts_match():
    error = ValueError("labels has shape (2, 3) at row 4; max_length=8 got 'x'")
    got = assert_raises(ValueError, ("labels", Shape(2, 3), 4, "max_length", Value("x")), raise_, error, clause="c")
    assert got is error


def test_raises_accepts_a_subclass():
    got = assert_raises(LookupError, (), raise_, KeyError("input_ids"), clause="c")
    assert isinstance(got, KeyError)


def test_raises_passes_the_arguments_through():
    seen = {}

    def func(*args, **kwargs):
        seen.update(args=args, kwargs=kwargs)
        raise ValueError("no")

    assert_raises(ValueError, (), func, 1, 2, clause="c", flag=True)
    assert seen == {"args": (1, 2), "kwargs": {"flag": True}}


def test_raises_fails_when_nothing_is_raised():
    def convert_text_batch(rows):
        return rows

    message = failure(assert_raises, ValueError, (), convert_text_batch, [], clause="ctb-shift")
    assert message == f"nothing was raised, but should raise ValueError {RAISES_TAG}"


def test_raises_fails_on_the_wrong_type_and_shows_the_raised_error():
    def convert_text_batch(rows):
        raise TypeError("rows must be a list")

    with pytest.raises(AssertionError) as caught:
        assert_raises(ValueError, (), convert_text_batch, None, clause="ctb-shift")
    assert str(caught.value) == f"raised TypeError(rows must be a list), but should raise ValueError {RAISES_TAG}"
    assert isinstance(caught.value.__cause__, TypeError), "the wrong error is chained"


def test_raises_reports_an_assertion_error_from_the_call_as_a_wrong_type():
    def convert_text_batch(rows):
        raise AssertionError("internal")

    message = failure(assert_raises, ValueError, (), convert_text_batch, None, clause="ctb-shift")
    assert message == f"raised AssertionError(internal), but should raise ValueError {RAISES_TAG}"


def test_raises_fails_on_a_missing_fact_and_names_only_the_missing_ones():
    def convert_text_batch(rows):
        raise ValueError("row 3 has 5 tokens")

    facts = ("row", 3, "labels", Shape(2, 3), Value(""), 5)
    with pytest.raises(AssertionError) as caught:
        assert_raises(ValueError, facts, convert_text_batch, None, clause="ctb-shift")
    message = str(caught.value)
    assert message == f"ValueError message 'row 3 has 5 tokens' does not name ['labels', '(2, 3)', \"''\"] {RAISES_TAG}"
    assert isinstance(caught.value.__cause__, ValueError)


def test_raises_tag_names_a_bound_method():
    class Loader:
        def load_state_dict(self, state):
            return None

    message = failure(assert_raises, ValueError, (), Loader().load_state_dict, {}, clause="state-load-errors")
    assert message.endswith("[state-load-errors: load_state_dict(...)]")


# --- names, missing_facts, Shape, Value, summary -----------------------------------------------


@pytest.mark.parametrize(
    "message, fact",
    [
        ("input_ids is missing", "input_ids"),
        ("got ids=3", "ids"),
        ("checksum mismatch: bad", "checksum mismatch"),
        ("key 'labels'", "labels"),
        ("row 3.", 3),
        ("rows 1-3", 3),
        ("(3)", 3),
        ("index -100 given", -100),
        ("0 rows", 0),
        ("shape (2, 3)", Shape(2, 3)),
        ("shape [2,3]", Shape(2, 3)),
        ("torch.Size([2, 3])", Shape(2, 3)),
        ("shape (4,)", Shape(4)),
        ("shape [4]", Shape(4)),
        ("shape ()", Shape()),
        ("shape []", Shape()),
        ("got 'thd'", Value("thd")),
        ("got thd", Value("thd")),
        ("got ''", Value("")),
        ("got None", Value(None)),
        ("flag True", True),
        ("flag False", Value(False)),
    ],
)
def test_names_finds_a_fact(message, fact):
    assert names(message, fact), f"{message!r} should name {fact!r}"
    assert missing_facts(message, [fact]) == []


@pytest.mark.parametrize(
    "message, fact",
    [
        ("input_ids is missing", "ids"),
        ("labels_mask", "labels"),
        ("uncheck sum", "checksum"),
        ("30 rows", 3),
        ("13 rows", 3),
        ("3.5 tokens", 3),
        ("-3 given", 3),
        ("0.5", 0),
        ("index 100", -100),
        ("shape (2, 3, 4)", Shape(2, 3)),
        ("shape (1, 2, 3)", Shape(2, 3)),
        ("shape (12, 3)", Shape(2, 3)),
        ("shape (3, 2)", Shape(2, 3)),
        ("shape (4, 1)", Shape(4)),
        ("values [[1, 2],[2, 3]]", Shape(2, 3)),  # a list inside a list, not a shape
        ("got ", Value("")),
        ("got thdx", Value("thd")),
        ("flag 1", True),
        ("isTrue", True),
    ],
)
def test_names_does_not_find_a_fact_that_is_only_part_of_another(message, fact):
    assert not names(message, fact), f"{message!r} should not name {fact!r}"
    assert missing_facts(message, [fact]) == [fact]


def test_missing_facts_keeps_the_order_of_the_facts():
    assert missing_facts("row 3", ["labels", 3, 4, "row", Shape(1)]) == ["labels", 4, Shape(1)]


def test_names_rejects_a_fact_of_another_kind():
    with pytest.raises(TypeError, match="float"):
        names("1.5", 1.5)


def test_shape_and_value_print_as_they_are_named():
    assert str(Shape(2, 3)) == "(2, 3)" and str(Shape(4)) == "(4,)" and str(Shape()) == "()"
    assert Shape("2", 3) == Shape(2, 3)
    assert str(Value("")) == "''" and str(Value("thd")) == "'thd'" and str(Value(None)) == "None"


def test_summary_describes_tensors_and_other_values():
    assert summary(torch.zeros(2, 8, dtype=torch.long)) == "Tensor[shape=(2, 8), dtype=torch.int64]"
    assert summary([1]) == "list [1]"
    assert summary("thd") == "str 'thd'"
