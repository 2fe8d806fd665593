//! The contract's tensor work in safe Rust, on slices (SPEC.md sections 2, 4 and 7).
//!
//! Nothing here touches a raw pointer: `lib.rs` turns the C ABI's pointers into slices and
//! calls these functions. Every function reads its inputs once per row and writes outputs
//! that the caller allocated.

/// A read-only 2-D view `[rows, cols]` of a mask with element strides (any layout torch
/// gives: transposed, sliced with a step, expanded with stride 0) [tb-layout].
pub struct Strided<'a, T> {
    pub data: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<T: Copy + Into<i64>> Strided<'_, T> {
    #[inline]
    fn get(&self, row: usize, col: usize) -> i64 {
        self.data[row * self.row_stride + col * self.col_stride].into()
    }
}

/// `(nonzero count, largest value)` of a mask; the largest value is `i64::MIN` for an empty mask.
pub fn mask_stats<T: Copy + Into<i64>>(mask: &Strided<T>) -> (i64, i64) {
    let mut nonzero = 0i64;
    let mut largest = i64::MIN;
    for row in 0..mask.rows {
        for col in 0..mask.cols {
            let value = mask.get(row, col);
            nonzero += i64::from(value != 0);
            largest = largest.max(value);
        }
    }
    (nonzero, largest)
}

/// Span lengths of one row of an indexed mask [unpad-indexed]: for each id `1 ..= largest` in
/// order, its count in the row; zero counts dropped. `counts` is scratch of `largest + 1`
/// zeros when the ids are dense enough to count directly (left zeroed again), else empty
/// (then the row's positive values are sorted).
fn indexed_row_spans(values: &[i64], largest: i64, counts: &mut Vec<u32>, sorted: &mut Vec<i64>, out: &mut impl FnMut(i64)) {
    if !counts.is_empty() {
        for &value in values {
            if value > 0 {
                counts[value as usize] += 1;
            }
        }
        for id in 1..=largest as usize {
            if counts[id] > 0 {
                out(i64::from(counts[id]));
                counts[id] = 0;
            }
        }
        return;
    }
    sorted.clear();
    sorted.extend(values.iter().copied().filter(|&v| v > 0));
    sorted.sort_unstable();
    let mut start = 0;
    for end in 1..=sorted.len() {
        if end == sorted.len() || sorted[end] != sorted[start] {
            out((end - start) as i64);
            start = end;
        }
    }
}

/// Scratch for [`indexed_row_spans`]: a direct count table when `largest` is at most a few
/// times the row length, else nothing (the sort route keeps memory at O(row)).
fn count_table(largest: i64, cols: usize) -> Vec<u32> {
    if largest > 1 && (largest as u64) <= 4 * cols as u64 + 1024 {
        vec![0; largest as usize + 1]
    } else {
        Vec::new()
    }
}

/// `get_unpad_data`'s outputs [unpad-binary, unpad-indexed, unpad-outputs] into `indices`
/// (exactly the nonzero count long) and `cu_seqlens` (room for every span + 1). `binary` is
/// the whole mask's route (bool, or largest value <= 1). Returns `(spans, max_seqlen)`.
pub fn unpad_fill<T: Copy + Into<i64>>(
    mask: &Strided<T>,
    binary: bool,
    largest: i64,
    indices: &mut [i64],
    cu_seqlens: &mut [i32],
) -> (usize, i64) {
    let mut counts = if binary { Vec::new() } else { count_table(largest, mask.cols) };
    let mut sorted = Vec::new();
    let mut row_values = Vec::with_capacity(mask.cols);
    let mut next_index = 0usize;
    let mut spans = 0usize;
    let mut total = 0i64;
    let mut max_seqlen = 0i64;
    cu_seqlens[0] = 0;
    for row in 0..mask.rows {
        row_values.clear();
        let mut row_nonzero = 0i64;
        for col in 0..mask.cols {
            let value = mask.get(row, col);
            if value != 0 {
                indices[next_index] = (row * mask.cols + col) as i64;
                next_index += 1;
                row_nonzero += 1;
            }
            row_values.push(value);
        }
        let mut push = |length: i64| {
            total += length;
            spans += 1;
            cu_seqlens[spans] = total as i32;
            max_seqlen = max_seqlen.max(length);
        };
        if binary {
            if row_nonzero > 0 {
                push(row_nonzero);
            }
        } else {
            indexed_row_spans(&row_values, largest, &mut counts, &mut sorted, &mut push);
        }
    }
    (spans, max_seqlen)
}

/// `build_packed_sequence_metadata`'s tensors [meta-indices, meta-cu-seqlens] into
/// `packed_token_indices` (`[rows, cols]`) and `cu_seqlens` (`[rows, width]`); the route
/// (binary or indexed) is decided per row. Returns `max_seqlen` [meta-max-seqlen].
pub fn metadata_fill<T: Copy + Into<i64>>(
    mask: &Strided<T>,
    width: usize,
    packed_token_indices: &mut [i64],
    cu_seqlens: &mut [i32],
) -> i64 {
    let mut sorted = Vec::new();
    let mut row_values = Vec::with_capacity(mask.cols);
    let mut max_seqlen = 0i64;
    let mut counts: Vec<u32> = Vec::new();
    for row in 0..mask.rows {
        row_values.clear();
        let mut row_nonzero = 0i64;
        let mut row_largest = i64::MIN;
        let indices = &mut packed_token_indices[row * mask.cols..(row + 1) * mask.cols];
        for (col, slot) in indices.iter_mut().enumerate() {
            let value = mask.get(row, col);
            *slot = if value != 0 { col as i64 } else { -1 };
            row_nonzero += i64::from(value != 0);
            row_largest = row_largest.max(value);
            row_values.push(value);
        }
        let cu = &mut cu_seqlens[row * width..(row + 1) * width];
        cu.fill(-1);
        cu[0] = 0;
        if row_nonzero == 0 {
            continue;
        }
        if row_largest <= 1 {
            cu[1] = row_nonzero as i32;
            max_seqlen = max_seqlen.max(row_nonzero);
            continue;
        }
        let table = count_table(row_largest, mask.cols);
        if table.len() > counts.len() {
            counts = table;
        }
        let mut scratch = std::mem::take(&mut counts);
        if !scratch.is_empty() && scratch.len() < row_largest as usize + 1 {
            scratch.clear();
        }
        let mut spans = 0usize;
        let mut total = 0i64;
        indexed_row_spans(&row_values, row_largest, &mut scratch, &mut sorted, &mut |length| {
            total += length;
            spans += 1;
            cu[spans] = total as i32;
            max_seqlen = max_seqlen.max(length);
        });
        counts = scratch;
    }
    max_seqlen
}

/// The options of one `convert_text_batch` call that the row pass reads.
pub struct ConvertOptions {
    pub width: usize,
    pub ignore_index: i64,
    pub mask_segment_starts: bool,
    pub cross_document: bool,
    pub pad_token_id: i64,
}

/// The `[B, S]` outputs of the row pass.
pub struct ConvertOutputs<'a> {
    pub input_ids: &'a mut [i64],
    pub labels: &'a mut [i64],
    pub position_ids: &'a mut [i64],
    pub padding_mask: &'a mut [u8],
    pub document_ids: &'a mut [i64],
    pub attention_document_ids: &'a mut [i64],
}

/// A record's positions break [ctb-input-errors] item 10.
#[derive(Debug, PartialEq, Eq)]
pub enum PositionsError {
    NotStartingAtZero(usize),
    Negative(usize),
}

/// The row pass of `convert_text_batch` (SPEC.md section 4): per row, in one walk over its
/// tokens, the unpacked route's padding [unpacked-padding], the default positions
/// [ctb-positions], the positions checks ([ctb-input-errors] item 10), the shift
/// [ctb-shift], labels [ctb-padding-labels, ctb-segment-starts, ctb-ignore-index],
/// `padding_mask` [ctb-padding-mask], `document_ids` [ctb-document-ids], the selected ids
/// [ctb-attention-ids] and under xdoc the translated positions and joined ids [ctb-xdoc,
/// xdoc-positions, xdoc-attention-ids].
///
/// `tokens` and `positions` are `[B, width]` scratch: row `b`'s first `lengths[b]` entries
/// hold the record's values (positions only where `has_positions[b]`); the rest is filled
/// here. Returns the largest translated position of a token with `document_ids > 0` under
/// xdoc (-1 otherwise), which the caller bounds by `max_sequence_length` [xdoc-contract].
pub fn convert_rows(
    tokens: &mut [i64],
    positions: &mut [i64],
    has_positions: &[u8],
    lengths: &[i64],
    padding: &[i64],
    options: &ConvertOptions,
    out: ConvertOutputs,
) -> Result<i64, PositionsError> {
    let width = options.width;
    let sequence = width - 1;
    let mut largest_translated = -1i64;
    for (row, (&length, &pad)) in lengths.iter().zip(padding).enumerate() {
        let length = length as usize;
        let first_pad = length - pad as usize;
        let row_tokens = &mut tokens[row * width..(row + 1) * width];
        let row_positions = &mut positions[row * width..(row + 1) * width];
        row_tokens[length..].fill(options.pad_token_id);
        if has_positions[row] != 0 {
            if row_positions[0] != 0 {
                return Err(PositionsError::NotStartingAtZero(row));
            }
            if row_positions[..length].iter().any(|&p| p < 0) {
                return Err(PositionsError::Negative(row));
            }
            for (i, slot) in row_positions.iter_mut().enumerate().skip(length) {
                *slot = (i - first_pad) as i64;
            }
        } else {
            for (i, slot) in row_positions.iter_mut().enumerate() {
                *slot = if i < first_pad { i as i64 } else { (i - first_pad) as i64 };
            }
        }
        let span = row * sequence..(row + 1) * sequence;
        let input_ids = &mut out.input_ids[span.clone()];
        let labels = &mut out.labels[span.clone()];
        let position_ids = &mut out.position_ids[span.clone()];
        let padding_mask = &mut out.padding_mask[span.clone()];
        let document_ids = &mut out.document_ids[span.clone()];
        let selected = &mut out.attention_document_ids[span];
        let mut document = 0i64;
        // xdoc: the offset of the current subdocument and the largest translated coordinate so far
        let mut offset = 0i64;
        let mut largest_in_row = -1i64;
        for i in 0..sequence {
            let position = row_positions[i];
            let is_padding = i >= first_pad;
            input_ids[i] = row_tokens[i];
            let masked = i + 1 >= first_pad || (options.mask_segment_starts && row_positions[i + 1] == 0);
            labels[i] = if masked { options.ignore_index } else { row_tokens[i + 1] };
            padding_mask[i] = u8::from(is_padding);
            if position == 0 && !is_padding {
                // a new subdocument: under xdoc it continues after the previous one's largest coordinate
                document += 1;
                if document > 1 {
                    offset = largest_in_row + 1;
                }
            }
            let id = if is_padding { 0 } else { document };
            document_ids[i] = id;
            if options.cross_document && id > 0 {
                let translated = position + offset;
                largest_in_row = largest_in_row.max(translated);
                position_ids[i] = translated;
                selected[i] = 1;
            } else {
                position_ids[i] = position;
                selected[i] = if options.cross_document { 0 } else { id };
            }
        }
        largest_translated = largest_translated.max(largest_in_row);
    }
    Ok(largest_translated)
}

/// Span lengths of a row of selected ids: its maximal stretches of equal positive ids
/// [thd-lengths]; calls `out(length)` per span in stream order and returns the trailing
/// zero count.
fn row_stretches(ids: &[i64], out: &mut impl FnMut(i64)) -> i64 {
    let mut run = 0i64;
    let mut current = 0i64;
    let mut trailing = 0i64;
    for &id in ids {
        if id > 0 {
            if id != current && run > 0 {
                out(run);
                run = 0;
            }
            current = id;
            run += 1;
            trailing = 0;
        } else {
            if run > 0 {
                out(run);
                run = 0;
            }
            current = 0;
            trailing += 1;
        }
    }
    if run > 0 {
        out(run);
    }
    trailing
}

/// The largest span count of a row of `selected` (`[rows, cols]`).
pub fn max_spans(selected: &[i64], cols: usize) -> usize {
    selected
        .chunks(cols)
        .map(|row| {
            let mut spans = 0usize;
            row_stretches(row, &mut |_| spans += 1);
            spans
        })
        .max()
        .unwrap_or(0)
}

/// THD `seq_lens` and `seq_lens_padded` (`[rows, width]`, `-1000` in unused slots) of selected
/// ids whose positive ids form stretches and whose zeros are a trailing suffix, as
/// `convert_text_batch` builds them [thd-lengths].
pub fn thd_fill(selected: &[i64], cols: usize, width: usize, seq_lens: &mut [i64], seq_lens_padded: &mut [i64]) {
    seq_lens.fill(-1000);
    seq_lens_padded.fill(-1000);
    for (row, ids) in selected.chunks(cols).enumerate() {
        let lens = &mut seq_lens[row * width..(row + 1) * width];
        let mut spans = 0usize;
        let trailing = row_stretches(ids, &mut |length| {
            lens[spans] = length;
            spans += 1;
        });
        let padded = &mut seq_lens_padded[row * width..(row + 1) * width];
        padded[..spans].copy_from_slice(&lens[..spans]);
        if spans > 0 {
            padded[spans - 1] += trailing;
        }
    }
}

/// The `block_causal` mask `[rows, 1, cols, cols]` [batched-block-causal]: `out[b, q, k]` is 1
/// iff `k <= q` and `selected[b, q] == selected[b, k] > 0`.
pub fn block_causal_fill(selected: &[i64], cols: usize, out: &mut [u8]) {
    for (row, ids) in selected.chunks(cols).enumerate() {
        let plane = &mut out[row * cols * cols..(row + 1) * cols * cols];
        for (q, line) in plane.chunks_mut(cols).enumerate() {
            let id = ids[q];
            for (k, slot) in line.iter_mut().enumerate() {
                *slot = u8::from(k <= q && id > 0 && ids[k] == id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strided(data: &[i64], rows: usize, cols: usize) -> Strided<'_, i64> {
        Strided { data, rows, cols, row_stride: cols, col_stride: 1 }
    }

    #[test]
    fn example_k_metadata() {
        let mask = [1, 2, 0, 0, 0, 0];
        let view = strided(&mask, 2, 3);
        let mut indices = [0i64; 6];
        let mut cu = [0i32; 6];
        let max_seqlen = metadata_fill(&view, 3, &mut indices, &mut cu);
        assert_eq!(indices, [0, 1, -1, -1, -1, -1]);
        assert_eq!(cu, [0, 1, 2, 0, -1, -1]);
        assert_eq!(max_seqlen, 1);
    }

    #[test]
    fn unpad_is_by_row_then_id() {
        let mask = [1, 2, 1];
        let view = strided(&mask, 1, 3);
        let mut indices = [0i64; 3];
        let mut cu = [0i32; 4];
        let (spans, max_seqlen) = unpad_fill(&view, false, 2, &mut indices, &mut cu);
        assert_eq!((spans, max_seqlen), (2, 2));
        assert_eq!(&cu[..3], &[0, 2, 3]);
    }

    #[test]
    fn example_a_and_d() {
        let mut tokens = vec![11, 12, 13, 21, 22, 31, 32, 0, 0, 41, 42, 43, 44, 45, 51, 52, 53, 0];
        let mut positions = vec![0, 1, 2, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 4, 0, 1, 2, 0];
        let (mut ids, mut labels, mut pos, mut doc, mut sel) = (vec![0; 16], vec![0; 16], vec![0; 16], vec![0; 16], vec![0; 16]);
        let mut pad = vec![0u8; 16];
        let options = ConvertOptions { width: 9, ignore_index: -100, mask_segment_starts: false, cross_document: false, pad_token_id: 0 };
        let out = ConvertOutputs {
            input_ids: &mut ids,
            labels: &mut labels,
            position_ids: &mut pos,
            padding_mask: &mut pad,
            document_ids: &mut doc,
            attention_document_ids: &mut sel,
        };
        convert_rows(&mut tokens, &mut positions, &[1, 1], &[9, 9], &[2, 1], &options, out).unwrap();
        assert_eq!(labels, [12, 13, 21, 22, 31, 32, -100, -100, 42, 43, 44, 45, 51, 52, 53, -100]);
        assert_eq!(doc, [1, 1, 1, 2, 2, 3, 3, 0, 1, 1, 1, 1, 1, 2, 2, 2]);
        let width = max_spans(&sel, 8);
        assert_eq!(width, 3);
        let (mut lens, mut padded) = (vec![0; 6], vec![0; 6]);
        thd_fill(&sel, 8, width, &mut lens, &mut padded);
        assert_eq!(lens, [3, 2, 2, 5, 3, -1000]);
        assert_eq!(padded, [3, 2, 3, 5, 3, -1000]);
    }
}
