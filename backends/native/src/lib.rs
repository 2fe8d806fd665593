//! batchspec_native: the C ABI of the native batchspec backend.
//!
//! Every exported function takes pointers to buffers that Python allocated (torch tensors'
//! storage) and their sizes, turns them into slices here (the only `unsafe` of the crate, each
//! with its SAFETY note) and calls the safe kernels of `kernels.rs`. Status codes, never
//! panics, report bad inputs: the Python module turns them into the TypeError / ValueError
//! SPEC.md names. A panic would abort the process (`panic = "abort"`), never unwind into C.
//!
//! `ingest_sequence` reads a Python `list` / `tuple` of ints through CPython's C API (the
//! symbols of the interpreter that loaded this library; called with the GIL held, through
//! `ctypes.PyDLL`).

mod kernels;

use std::ffi::{c_int, c_longlong, c_void};

use kernels::{ConvertExtras, ConvertOptions, ConvertOutputs, PositionsError, RowSource, Strided};

/// CPython's object header (a GIL build: reference count, then the type pointer).
#[repr(C)]
pub struct PyObject {
    ob_refcnt: isize,
    ob_type: *const c_void,
}

extern "C" {
    static PyLong_Type: c_void;
    static PyBool_Type: c_void;
    static PyList_Type: c_void;
    static PyTuple_Type: c_void;
    fn PyList_Size(list: *mut PyObject) -> isize;
    fn PyList_GetItem(list: *mut PyObject, index: isize) -> *mut PyObject;
    fn PyTuple_Size(tuple: *mut PyObject) -> isize;
    fn PyTuple_GetItem(tuple: *mut PyObject, index: isize) -> *mut PyObject;
    fn PyLong_AsLongLongAndOverflow(value: *mut PyObject, overflow: *mut c_int) -> c_longlong;
}

/// `ingest_sequence` status codes (the Python module maps them to SPEC's errors).
pub const INGEST_OK: c_int = 0;
/// The object is neither a list nor a tuple, or its length is not `len`.
pub const INGEST_NOT_SEQUENCE: c_int = 1;
/// An element is a `bool` ([ctb-input-errors] item 4: `TypeError`).
pub const INGEST_BOOL: c_int = 2;
/// An element is a list or tuple ([ctb-input-errors] item 5: not 1-D, `ValueError`).
pub const INGEST_NESTED: c_int = 3;
/// An element is an int outside int64 ([ctb-input-errors] item 6: `ValueError`).
pub const INGEST_OVERFLOW: c_int = 4;
/// An element of another type (an int subclass, a numpy integer, a float, None, ...): the
/// Python module classifies it.
pub const INGEST_OTHER: c_int = 5;

/// Reads the exact-`int` elements of a Python list or tuple of `len` elements into `out`, in one
/// pass that checks each element's type ([ctb-input-errors] items 4-6). On a status other than
/// `INGEST_OK`, `*at` is the index of the offending element.
///
/// # Safety
/// Called with the GIL held; `sequence` is a live Python object; `out` points to `len`
/// writable int64 slots; `at` to one writable `isize`.
#[no_mangle]
pub unsafe extern "C" fn bs_ingest_sequence(sequence: *mut PyObject, len: isize, out: *mut i64, at: *mut isize) -> c_int {
    // SAFETY: `sequence` is a live object (caller's contract); its header is readable.
    let kind = unsafe { (*sequence).ob_type };
    // SAFETY: the type objects are statics of the running interpreter.
    let (list, tuple) = unsafe { (&PyList_Type as *const c_void, &PyTuple_Type as *const c_void) };
    let (int_type, bool_type) = unsafe { (&PyLong_Type as *const c_void, &PyBool_Type as *const c_void) };
    let is_list = kind == list;
    if !is_list && kind != tuple {
        return INGEST_NOT_SEQUENCE;
    }
    // SAFETY: `sequence` is exactly a list or a tuple (checked above), GIL held.
    let size = unsafe { if is_list { PyList_Size(sequence) } else { PyTuple_Size(sequence) } };
    if size != len || len < 0 {
        return INGEST_NOT_SEQUENCE;
    }
    // SAFETY: `out` holds `len` int64 slots (caller's contract).
    let values = unsafe { std::slice::from_raw_parts_mut(out, len as usize) };
    for (index, slot) in values.iter_mut().enumerate() {
        let index = index as isize;
        // SAFETY: 0 <= index < size; the item is a borrowed reference kept alive by `sequence`.
        let item = unsafe {
            if is_list {
                PyList_GetItem(sequence, index)
            } else {
                PyTuple_GetItem(sequence, index)
            }
        };
        // SAFETY: `item` is a live object of the sequence.
        let item_type = unsafe { (*item).ob_type };
        let status = if item_type == int_type {
            let mut overflow: c_int = 0;
            // SAFETY: `item` is exactly an int; with `overflow` this call sets no Python error.
            let value = unsafe { PyLong_AsLongLongAndOverflow(item, &mut overflow) };
            if overflow == 0 {
                *slot = value;
                continue;
            }
            INGEST_OVERFLOW
        } else if item_type == bool_type {
            INGEST_BOOL
        } else if item_type == list || item_type == tuple {
            INGEST_NESTED
        } else {
            INGEST_OTHER
        };
        // SAFETY: `at` is writable (caller's contract).
        unsafe { *at = index };
        return status;
    }
    INGEST_OK
}

/// Mask element kinds the C ABI takes: `MASK_U8` (a bool or uint8 mask's bytes) or `MASK_I64`.
pub const MASK_U8: c_int = 0;
pub const MASK_I64: c_int = 1;

/// The elements a strided `[rows, cols]` view spans (0 for an empty view).
fn strided_extent(rows: usize, cols: usize, row_stride: usize, col_stride: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * row_stride + (cols - 1) * col_stride + 1
    }
}

/// Calls `body` with the mask as a typed strided view.
///
/// # Safety
/// `data` points to a readable buffer of `kind`'s elements covering the view's extent.
unsafe fn with_mask<R>(
    data: *const c_void,
    kind: c_int,
    shape: [usize; 2],
    strides: [usize; 2],
    body: impl FnOnce(MaskView) -> R,
) -> R {
    let extent = strided_extent(shape[0], shape[1], strides[0], strides[1]);
    if kind == MASK_U8 {
        // SAFETY: the caller's contract: `extent` readable u8 elements from `data`.
        let slice = unsafe { std::slice::from_raw_parts(data as *const u8, extent) };
        body(MaskView::U8(Strided { data: slice, rows: shape[0], cols: shape[1], row_stride: strides[0], col_stride: strides[1] }))
    } else {
        // SAFETY: as above, int64 elements (aligned: torch's int64 storage).
        let slice = unsafe { std::slice::from_raw_parts(data as *const i64, extent) };
        body(MaskView::I64(Strided { data: slice, rows: shape[0], cols: shape[1], row_stride: strides[0], col_stride: strides[1] }))
    }
}

enum MaskView<'a> {
    U8(Strided<'a, u8>),
    I64(Strided<'a, i64>),
}

/// The test-only fault switch: `BATCHSPEC_NATIVE_FAULT=<function>` makes that function
/// dereference a null pointer (a real segfault, for the suite's crash-isolation test).
fn planted_fault(function: &str) {
    if std::env::var("BATCHSPEC_NATIVE_FAULT").is_ok_and(|value| value == function) {
        let null: *const i64 = std::ptr::null();
        // SAFETY: deliberately unsound: this reads address 0, which faults (SIGSEGV). It runs
        // only when the test-only switch names this function.
        let value = unsafe { std::ptr::read_volatile(null) };
        std::hint::black_box(value);
    }
}

/// `(nonzero count, largest value)` of a mask into `stats[0..2]`.
///
/// # Safety
/// `data` covers the strided view (see `with_mask`); `stats` points to 2 writable int64.
#[no_mangle]
pub unsafe extern "C" fn bs_mask_stats(
    data: *const c_void,
    kind: c_int,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
    stats: *mut i64,
) {
    // SAFETY: forwarded caller's contract.
    let (nonzero, largest) = unsafe {
        with_mask(data, kind, [rows, cols], [row_stride, col_stride], |view| match view {
            MaskView::U8(mask) => kernels::mask_stats(&mask),
            MaskView::I64(mask) => kernels::mask_stats(&mask),
        })
    };
    // SAFETY: `stats` holds 2 int64 (caller's contract).
    let stats = unsafe { std::slice::from_raw_parts_mut(stats, 2) };
    stats[0] = nonzero;
    stats[1] = largest;
}

/// `get_unpad_data` [unpad-outputs]: fills `indices` (`nonzero` int64) and `cu_seqlens`
/// (`cu_capacity` int32, at least spans + 1); `result[0..2]` = (spans, max_seqlen).
///
/// # Safety
/// `data` covers the strided view; the output pointers hold the sizes given.
#[no_mangle]
pub unsafe extern "C" fn bs_get_unpad_data(
    data: *const c_void,
    kind: c_int,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
    binary: c_int,
    largest: i64,
    indices: *mut i64,
    nonzero: usize,
    cu_seqlens: *mut i32,
    cu_capacity: usize,
    result: *mut i64,
) {
    planted_fault("get_unpad_data");
    // SAFETY: the output buffers hold the sizes given (caller's contract).
    let (indices, cu) = unsafe {
        (std::slice::from_raw_parts_mut(indices, nonzero), std::slice::from_raw_parts_mut(cu_seqlens, cu_capacity))
    };
    // SAFETY: forwarded caller's contract.
    let (spans, max_seqlen) = unsafe {
        with_mask(data, kind, [rows, cols], [row_stride, col_stride], |view| match view {
            MaskView::U8(mask) => kernels::unpad_fill(&mask, binary != 0, largest, indices, cu),
            MaskView::I64(mask) => kernels::unpad_fill(&mask, binary != 0, largest, indices, cu),
        })
    };
    // SAFETY: `result` holds 2 int64.
    let result = unsafe { std::slice::from_raw_parts_mut(result, 2) };
    result[0] = spans as i64;
    result[1] = max_seqlen;
}

/// `build_packed_sequence_metadata` [meta-indices, meta-cu-seqlens, meta-max-seqlen] in one
/// pass over the mask: fills `packed_token_indices` (`[rows, cols]` int64), each row's
/// cumulative span lengths into `cu_rows` (`[rows, cols + 1]` int32, only the row's spans + 1
/// first entries written) and the span counts into `spans` (`[rows]` int64); `summary[0..3]`
/// gets the nonzero count, the largest value and `max_seqlen`. `bs_cu_from_rows` then lays
/// `cu_seqlens` out at the width the largest value gives.
///
/// # Safety
/// `data` covers the strided view; the outputs hold the sizes given; `summary` 3 int64.
#[no_mangle]
pub unsafe extern "C" fn bs_build_packed_sequence_metadata(
    data: *const c_void,
    kind: c_int,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
    packed_token_indices: *mut i64,
    cu_rows: *mut i32,
    spans: *mut i64,
    summary: *mut i64,
) {
    planted_fault("build_packed_sequence_metadata");
    // SAFETY: the output buffers hold the sizes given (caller's contract).
    let (indices, cu_rows, spans, summary) = unsafe {
        (
            std::slice::from_raw_parts_mut(packed_token_indices, rows * cols),
            std::slice::from_raw_parts_mut(cu_rows, rows * (cols + 1)),
            std::slice::from_raw_parts_mut(spans, rows),
            std::slice::from_raw_parts_mut(summary, 3),
        )
    };
    // SAFETY: forwarded caller's contract.
    let found = unsafe {
        with_mask(data, kind, [rows, cols], [row_stride, col_stride], |view| match view {
            MaskView::U8(mask) => kernels::metadata_fill(&mask, indices, cu_rows, spans),
            MaskView::I64(mask) => kernels::metadata_fill(&mask, indices, cu_rows, spans),
        })
    };
    summary.copy_from_slice(&[found.nonzero, found.largest, found.max_seqlen]);
}

/// `convert_rows` status: OK, or a record's positions do not start at 0 / hold a negative
/// entry ([ctb-input-errors] item 10; `*bad_row` names the record).
pub const CONVERT_OK: c_int = 0;
pub const CONVERT_POSITIONS_START: c_int = 1;
pub const CONVERT_POSITIONS_NEGATIVE: c_int = 2;

/// Row source kinds of `bs_convert_rows` (each row's `[pointer, element stride, kind]`).
pub const SOURCE_SCRATCH: i64 = 0;
pub const SOURCE_I64: i64 = 1;
pub const SOURCE_I32: i64 = 2;

/// The rows' sources as `RowSource`s.
///
/// # Safety
/// `sources` holds `3 * lengths.len()` int64; a row of kind `SOURCE_I64` / `SOURCE_I32` names a
/// readable buffer of that element type with `lengths[b]` elements `stride >= 1` apart.
unsafe fn row_sources<'a>(sources: *const i64, lengths: &[i64]) -> Vec<RowSource<'a>> {
    // SAFETY: caller's contract.
    let table = unsafe { std::slice::from_raw_parts(sources, 3 * lengths.len()) };
    table
        .chunks(3)
        .zip(lengths)
        .map(|(source, &length)| {
            let (pointer, stride, kind) = (source[0] as usize, source[1].max(1) as usize, source[2]);
            let extent = (length as usize).saturating_sub(1) * stride + 1;
            // SAFETY: caller's contract: `extent` readable elements of the kind's type.
            unsafe {
                match kind {
                    SOURCE_I64 => RowSource::I64(std::slice::from_raw_parts(pointer as *const i64, extent), stride),
                    SOURCE_I32 => RowSource::I32(std::slice::from_raw_parts(pointer as *const i32, extent), stride),
                    _ => RowSource::Scratch,
                }
            }
        })
        .collect()
}

/// The row pass's output buffers from `bs_convert_rows`' 11 `outputs` pointers: the six
/// `[rows, width - 1]` outputs, then the extras (`None` where the pointer is null).
///
/// # Safety
/// As `bs_convert_rows`: outputs[0..6] are distinct `[rows, width - 1]` buffers, int64 except
/// the bool `padding_mask` (outputs[3], one byte per element); each non-null extra is a distinct
/// buffer of its documented size.
unsafe fn convert_buffers<'a>(outputs: &[*mut c_void], rows: usize, width: usize) -> (ConvertOutputs<'a>, ConvertExtras<'a>) {
    let cells = rows * (width - 1);
    // SAFETY: outputs[0..6] are distinct [rows, width - 1] buffers: int64, except the bool
    // padding_mask (outputs[3], one byte per element).
    let out = unsafe {
        ConvertOutputs {
            input_ids: std::slice::from_raw_parts_mut(outputs[0] as *mut i64, cells),
            labels: std::slice::from_raw_parts_mut(outputs[1] as *mut i64, cells),
            position_ids: std::slice::from_raw_parts_mut(outputs[2] as *mut i64, cells),
            padding_mask: std::slice::from_raw_parts_mut(outputs[3] as *mut u8, cells),
            document_ids: std::slice::from_raw_parts_mut(outputs[4] as *mut i64, cells),
            attention_document_ids: std::slice::from_raw_parts_mut(outputs[5] as *mut i64, cells),
        }
    };
    // SAFETY: each non-null extra is a distinct buffer of the documented size.
    let extras = unsafe {
        let optional = |pointer: *mut c_void, count: usize| {
            (!pointer.is_null()).then(|| std::slice::from_raw_parts_mut(pointer as *mut i64, count))
        };
        ConvertExtras {
            packed_seq_ids: optional(outputs[6], cells),
            attention_mask: optional(outputs[7], cells),
            packed_token_indices: optional(outputs[8], cells),
            cu_rows: (!outputs[9].is_null()).then(|| std::slice::from_raw_parts_mut(outputs[9] as *mut i32, rows * width)),
            spans: optional(outputs[10], rows),
        }
    };
    (out, extras)
}

/// The row pass of `convert_text_batch` (kernels::convert_rows). `tokens` / `positions` are
/// `[rows, width]` scratch, read where a row's source (`token_sources` / `position_sources`,
/// `[rows, 3]`: pointer, element stride, kind) is `SOURCE_SCRATCH`; `outputs` holds 11
/// pointers: the six `[rows, width - 1]` outputs, then the optional extras (null when not
/// asked for): `_packed_seq_ids`, the `document_ids` attention mask, `packed_token_indices`
/// (int64 `[rows, width - 1]`), `cu_rows` (int32 `[rows, width]`) and `spans` (int64 `[rows]`,
/// with `cu_rows`). `results[0..4]` get the largest translated xdoc position (-1 without
/// xdoc), the record whose positions are bad (on an error status), `max_seqlen` and the
/// largest selected id (with `cu_rows`).
///
/// # Safety
/// Every pointer holds the elements its shape says; `lengths`, `padding`, `has_positions`
/// hold `rows` elements each, with `padding[b] < lengths[b] <= width` and `width >= 2`.
#[no_mangle]
pub unsafe extern "C" fn bs_convert_rows(
    rows: usize,
    width: usize,
    tokens: *mut i64,
    positions: *mut i64,
    token_sources: *const i64,
    position_sources: *const i64,
    has_positions: *const u8,
    lengths: *const i64,
    padding: *const i64,
    ignore_index: i64,
    mask_segment_starts: c_int,
    cross_document: c_int,
    pad_token_id: i64,
    outputs: *const *mut c_void,
    results: *mut i64,
) -> c_int {
    planted_fault("convert_text_batch");
    // SAFETY: sizes as documented (caller's contract); the buffers are distinct tensors.
    let (tokens, positions, has_positions, lengths, padding, outputs, results) = unsafe {
        (
            std::slice::from_raw_parts_mut(tokens, rows * width),
            std::slice::from_raw_parts_mut(positions, rows * width),
            std::slice::from_raw_parts(has_positions, rows),
            std::slice::from_raw_parts(lengths, rows),
            std::slice::from_raw_parts(padding, rows),
            std::slice::from_raw_parts(outputs, 11),
            std::slice::from_raw_parts_mut(results, 4),
        )
    };
    // SAFETY: the sources' contract is the caller's.
    let (token_sources, position_sources) =
        unsafe { (row_sources(token_sources, lengths), row_sources(position_sources, lengths)) };
    // SAFETY: outputs holds the 11 pointers documented above, each of its documented size.
    let (out, extras) = unsafe { convert_buffers(outputs, rows, width) };
    let options = ConvertOptions {
        width,
        ignore_index,
        mask_segment_starts: mask_segment_starts != 0,
        cross_document: cross_document != 0,
        pad_token_id,
    };
    let result = kernels::convert_rows(
        tokens,
        positions,
        &token_sources,
        &position_sources,
        has_positions,
        lengths,
        padding,
        &options,
        out,
        extras,
    );
    match result {
        Ok(summary) => {
            results[0] = summary.largest_translated;
            results[2] = summary.max_seqlen;
            results[3] = summary.largest_id;
            CONVERT_OK
        }
        Err(PositionsError::NotStartingAtZero(row)) => {
            results[1] = row as i64;
            CONVERT_POSITIONS_START
        }
        Err(PositionsError::Negative(row)) => {
            results[1] = row as i64;
            CONVERT_POSITIONS_NEGATIVE
        }
    }
}

/// `cu_seqlens` (`[rows, width]` int32) from the row pass's `cu_rows` (`[rows, row_width]`) and
/// `spans` (`[rows]`): each row's spans + 1 entries, then -1.
///
/// # Safety
/// The pointers hold the elements their shapes say; `spans[b] < min(width, row_width)`.
#[no_mangle]
pub unsafe extern "C" fn bs_cu_from_rows(
    cu_rows: *const i32,
    row_width: usize,
    spans: *const i64,
    rows: usize,
    width: usize,
    cu_seqlens: *mut i32,
) {
    // SAFETY: caller's contract.
    let (cu_rows, spans, out) = unsafe {
        (
            std::slice::from_raw_parts(cu_rows, rows * row_width),
            std::slice::from_raw_parts(spans, rows),
            std::slice::from_raw_parts_mut(cu_seqlens, rows * width),
        )
    };
    kernels::cu_from_rows(cu_rows, row_width, spans, width, out);
}

/// The largest span count of a row of contiguous `[rows, cols]` selected ids.
///
/// # Safety
/// `selected` holds `rows * cols` int64.
#[no_mangle]
pub unsafe extern "C" fn bs_max_spans(selected: *const i64, rows: usize, cols: usize) -> usize {
    // SAFETY: caller's contract.
    let selected = unsafe { std::slice::from_raw_parts(selected, rows * cols) };
    if cols == 0 {
        return 0;
    }
    kernels::max_spans(selected, cols)
}

/// THD `seq_lens` / `seq_lens_padded` (`[rows, width]` int64) of contiguous selected ids.
///
/// # Safety
/// `selected` holds `rows * cols` int64, each output `rows * width`.
#[no_mangle]
pub unsafe extern "C" fn bs_thd_lengths(
    selected: *const i64,
    rows: usize,
    cols: usize,
    width: usize,
    seq_lens: *mut i64,
    seq_lens_padded: *mut i64,
) {
    // SAFETY: caller's contract.
    let (selected, lens, padded) = unsafe {
        (
            std::slice::from_raw_parts(selected, rows * cols),
            std::slice::from_raw_parts_mut(seq_lens, rows * width),
            std::slice::from_raw_parts_mut(seq_lens_padded, rows * width),
        )
    };
    if cols > 0 {
        kernels::thd_fill(selected, cols, width, lens, padded);
    }
}

/// The `block_causal` attention mask (`[rows, 1, cols, cols]` bytes) of contiguous selected ids.
///
/// # Safety
/// `selected` holds `rows * cols` int64, `out` `rows * cols * cols` bytes.
#[no_mangle]
pub unsafe extern "C" fn bs_block_causal(selected: *const i64, rows: usize, cols: usize, out: *mut u8) {
    // SAFETY: caller's contract.
    let (selected, out) =
        unsafe { (std::slice::from_raw_parts(selected, rows * cols), std::slice::from_raw_parts_mut(out, rows * cols * cols)) };
    if cols > 0 {
        kernels::block_causal_fill(selected, cols, out);
    }
}
