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

impl<'a, T: Copy + Into<i64>> Strided<'a, T> {
    /// Row `row` as a contiguous slice when the columns are adjacent (col_stride 1).
    #[inline]
    fn contiguous_row(&self, row: usize) -> Option<&'a [T]> {
        (self.col_stride == 1 && self.cols > 0).then(|| &self.data[row * self.row_stride..row * self.row_stride + self.cols])
    }
}

/// `(nonzero count, largest value)` of a mask; the largest value is `i64::MIN` for an empty mask.
pub fn mask_stats<T: Copy + Into<i64>>(mask: &Strided<T>) -> (i64, i64) {
    let mut nonzero = 0i64;
    let mut largest = i64::MIN;
    for row in 0..mask.rows {
        if let Some(values) = mask.contiguous_row(row) {
            // the common layout: a tight loop the compiler vectorizes
            for &value in values {
                let value: i64 = value.into();
                nonzero += i64::from(value != 0);
                largest = largest.max(value);
            }
            continue;
        }
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

/// What [`metadata_fill`] found over the whole mask: its nonzero count, its largest value
/// (`i64::MIN` when empty) and `max_seqlen` [meta-max-seqlen].
#[derive(Debug, PartialEq, Eq)]
pub struct MaskSummary {
    pub nonzero: i64,
    pub largest: i64,
    pub max_seqlen: i64,
}

/// `build_packed_sequence_metadata` in one pass over the mask [meta-indices, meta-cu-seqlens]:
/// `packed_token_indices` (`[rows, cols]`), each row's cumulative span lengths into `cu_rows`
/// (`[rows, cols + 1]`; the row's `spans[row] + 1` first entries are written, nothing else) and
/// its span count into `spans` (`[rows]`); the route (binary or indexed) is decided per row.
/// The caller sizes `cu_seqlens` from the summary's largest value and copies the rows into it
/// ([`cu_from_rows`]): no separate pass over the mask for its statistics.
pub fn metadata_fill<T: Copy + Into<i64>>(
    mask: &Strided<T>,
    packed_token_indices: &mut [i64],
    cu_rows: &mut [i32],
    spans: &mut [i64],
) -> MaskSummary {
    let mut scratch = RowScratch::default();
    let mut gathered = Vec::new();
    let mut summary = MaskSummary { nonzero: 0, largest: i64::MIN, max_seqlen: 0 };
    let row_width = mask.cols + 1;
    for row in 0..mask.rows {
        let indices = &mut packed_token_indices[row * mask.cols..(row + 1) * mask.cols];
        let cu = &mut cu_rows[row * row_width..(row + 1) * row_width];
        let found = match mask.contiguous_row(row) {
            Some(values) => metadata_row(values, indices, cu, &mut scratch),
            None => {
                gathered.clear();
                gathered.extend((0..mask.cols).map(|col| mask.get(row, col)));
                metadata_row(&gathered, indices, cu, &mut scratch)
            }
        };
        spans[row] = found.spans as i64;
        summary.nonzero += found.nonzero;
        summary.largest = summary.largest.max(found.largest);
        summary.max_seqlen = summary.max_seqlen.max(found.longest);
    }
    summary
}

/// One row's findings (see [`metadata_row`]).
struct RowFound {
    spans: usize,
    longest: i64,
    nonzero: i64,
    largest: i64,
}

/// Reusable buffers of [`metadata_row`].
#[derive(Default)]
struct RowScratch {
    bounds: Vec<usize>,
    values: Vec<i64>,
    counts: Vec<u32>,
    sorted: Vec<i64>,
}

/// One row of [`metadata_fill`]: `indices`, and `cu` (`cols + 1` long) up to the row's spans.
///
/// One branch-free pass writes the indices, counts the nonzero entries, finds the largest value
/// and records where the value changes (the stretch starts); then, when the row's positive ids
/// come in stretches of strictly increasing ids (each id one stretch, as document ids do), each
/// id's count is its stretch's length, in id order: the cost per document is a few
/// instructions, not a branch per token. Any other indexed row is counted again by
/// [`indexed_row_spans`].
fn metadata_row<T: Copy + Into<i64>>(values: &[T], indices: &mut [i64], cu: &mut [i32], scratch: &mut RowScratch) -> RowFound {
    let cols = values.len();
    cu[0] = 0;
    let mut found = RowFound { spans: 0, longest: 0, nonzero: 0, largest: i64::MIN };
    if cols == 0 {
        return found;
    }
    let stretches = scan_row(values, indices, &mut scratch.bounds, &mut found);
    if found.nonzero == 0 {
        return found;
    }
    if found.largest <= 1 {
        // a binary row: one span of its nonzero count [meta-cu-seqlens]
        cu[1] = found.nonzero as i32;
        found.spans = 1;
        found.longest = found.nonzero;
        return found;
    }
    scratch.bounds[stretches] = cols; // the end of the last stretch
    let (spans, longest) = match increasing_stretch_spans(values, &scratch.bounds[..=stretches], cu) {
        Some(counted) => counted,
        None => indexed_spans(values, found.largest, cu, scratch),
    };
    found.spans = spans;
    found.longest = longest;
    found
}

/// The branch-free first pass of [`metadata_row`]: writes `indices`, sets `found`'s nonzero
/// count and largest value, and records in `bounds` (`cols + 1` long) where each stretch of
/// equal values starts; returns the number of stretches.
fn scan_row<T: Copy + Into<i64>>(values: &[T], indices: &mut [i64], bounds: &mut Vec<usize>, found: &mut RowFound) -> usize {
    bounds.clear();
    bounds.resize(values.len() + 1, 0);
    let mut stretches = 1usize;
    let (mut nonzero, mut largest) = (0i64, i64::MIN);
    let mut previous: i64 = values[0].into();
    for (col, (&value, slot)) in values.iter().zip(indices.iter_mut()).enumerate() {
        let value: i64 = value.into();
        *slot = if value != 0 { col as i64 } else { -1 };
        nonzero += i64::from(value != 0);
        largest = largest.max(value);
        bounds[stretches] = col;
        stretches += usize::from(value != previous);
        previous = value;
    }
    found.nonzero = nonzero;
    found.largest = largest;
    stretches
}

/// `(spans, longest)` of a row whose positive ids come in stretches of strictly increasing ids
/// (`bounds`: each stretch's start, then the row's end), writing `cu` from entry 1; `None`
/// as soon as an id is not larger than the previous one (the row needs [`indexed_spans`]).
fn increasing_stretch_spans<T: Copy + Into<i64>>(values: &[T], bounds: &[usize], cu: &mut [i32]) -> Option<(usize, i64)> {
    let (mut spans, mut last_id, mut longest, mut total) = (0usize, 0i64, 0i64, 0i64);
    for stretch in bounds.windows(2) {
        let (start, end) = (stretch[0], stretch[1]);
        let id: i64 = values[start].into();
        if id <= 0 {
            continue;
        }
        if id <= last_id {
            return None;
        }
        let length = (end - start) as i64;
        total += length;
        spans += 1;
        cu[spans] = total as i32; // the running total stays in a register (no store-to-load chain)
        longest = longest.max(length);
        last_id = id;
    }
    Some((spans, longest))
}

/// `(spans, longest)` of any indexed row: every id `1..=largest` counted
/// ([`indexed_row_spans`]), writing `cu` from entry 1.
fn indexed_spans<T: Copy + Into<i64>>(values: &[T], largest: i64, cu: &mut [i32], scratch: &mut RowScratch) -> (usize, i64) {
    scratch.values.clear();
    scratch.values.extend(values.iter().map(|&v| v.into()));
    let table = count_table(largest, values.len());
    if table.len() > scratch.counts.len() {
        scratch.counts = table;
    }
    let mut counts = std::mem::take(&mut scratch.counts);
    if !counts.is_empty() && counts.len() < largest as usize + 1 {
        counts = Vec::new();
    }
    let (mut spans, mut total, mut longest) = (0usize, 0i64, 0i64);
    indexed_row_spans(&scratch.values, largest, &mut counts, &mut scratch.sorted, &mut |length| {
        total += length;
        spans += 1;
        cu[spans] = total as i32;
        longest = longest.max(length);
    });
    scratch.counts = counts;
    (spans, longest)
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

/// Outputs of the batched route written in the same row pass, each only when asked for:
/// copies of the selected ids (`_packed_seq_ids`, the `document_ids` attention mask), and the
/// metadata bundle of the selected ids [batched-metadata]: `packed_token_indices` `[B, S]`,
/// each row's `cu_seqlens` into `cu_rows` (`[B, S + 1]`, the row's spans + 1 entries used) and
/// its span count into `spans` (`[B]`).
#[derive(Default)]
pub struct ConvertExtras<'a> {
    pub packed_seq_ids: Option<&'a mut [i64]>,
    pub attention_mask: Option<&'a mut [i64]>,
    pub packed_token_indices: Option<&'a mut [i64]>,
    pub cu_rows: Option<&'a mut [i32]>,
    pub spans: Option<&'a mut [i64]>,
}

/// Where a row's record values are: already in the `[B, width]` scratch (ingested lists, or
/// values Python converted), or read here from the record's own int64 / int32 buffer with an
/// element stride (a tensor or numpy array, never copied by Python).
pub enum RowSource<'a> {
    Scratch,
    I64(&'a [i64], usize),
    I32(&'a [i32], usize),
}

impl RowSource<'_> {
    /// Copies the first `out.len()` values of the source into `out` (not for `Scratch`).
    fn read_into(&self, out: &mut [i64]) {
        match *self {
            RowSource::Scratch => {}
            RowSource::I64(data, 1) => out.copy_from_slice(&data[..out.len()]),
            RowSource::I64(data, stride) => out.iter_mut().enumerate().for_each(|(i, slot)| *slot = data[i * stride]),
            RowSource::I32(data, stride) => {
                out.iter_mut().enumerate().for_each(|(i, slot)| *slot = i64::from(data[i * stride]))
            }
        }
    }
}

/// What the row pass found: the largest translated xdoc position of a token with
/// `document_ids > 0` (-1 without xdoc), the longest span of the selected ids and their
/// largest value (both 0 when the metadata is not asked for).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    pub largest_translated: i64,
    pub max_seqlen: i64,
    pub largest_id: i64,
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
/// xdoc-positions, xdoc-attention-ids]; then, from the row still in cache, the `extras`.
///
/// `tokens` and `positions` are `[B, width]` scratch: row `b`'s first `lengths[b]` entries
/// hold the record's values where its source is `Scratch` (positions only where
/// `has_positions[b]`); other rows are read from their source into a row buffer. The rest is
/// filled here. The summary's largest translated position is what the caller bounds by
/// `max_sequence_length` [xdoc-contract].
#[allow(clippy::too_many_arguments)]
pub fn convert_rows(
    tokens: &mut [i64],
    positions: &mut [i64],
    token_sources: &[RowSource],
    position_sources: &[RowSource],
    has_positions: &[u8],
    lengths: &[i64],
    padding: &[i64],
    options: &ConvertOptions,
    out: ConvertOutputs,
    mut extras: ConvertExtras,
) -> Result<ConvertSummary, PositionsError> {
    let width = options.width;
    let sequence = width - 1;
    let mut summary = ConvertSummary { largest_translated: -1, ..ConvertSummary::default() };
    let mut own_tokens = vec![0i64; width];
    let mut own_positions = vec![0i64; width];
    for (row, (&length, &pad)) in lengths.iter().zip(padding).enumerate() {
        let length = length as usize;
        let first_pad = length - pad as usize;
        let given_positions = has_positions[row] != 0;
        let row_tokens = row_values(tokens, &token_sources[row], row, width, length, true, &mut own_tokens);
        let row_positions =
            row_values(positions, &position_sources[row], row, width, length, given_positions, &mut own_positions);
        row_tokens[length..].fill(options.pad_token_id);
        fill_positions(row_positions, length, first_pad, given_positions, row)?;
        let span = row * sequence..(row + 1) * sequence;
        let outputs = RowOutputs {
            input_ids: &mut out.input_ids[span.clone()],
            labels: &mut out.labels[span.clone()],
            position_ids: &mut out.position_ids[span.clone()],
            padding_mask: &mut out.padding_mask[span.clone()],
            document_ids: &mut out.document_ids[span.clone()],
            selected: &mut out.attention_document_ids[span.clone()],
        };
        let largest_in_row = convert_row(row_tokens, row_positions, first_pad, options, outputs);
        summary.largest_translated = summary.largest_translated.max(largest_in_row);
        write_extras(&mut extras, &out.attention_document_ids[span.clone()], row, width, &mut summary);
    }
    Ok(summary)
}

/// Row `row`'s values: its `[width]` slice of the scratch where its source is `Scratch`, else
/// `own` (a row buffer) holding the source's first `length` values, read only when `read`.
fn row_values<'a>(
    scratch: &'a mut [i64],
    source: &RowSource,
    row: usize,
    width: usize,
    length: usize,
    read: bool,
    own: &'a mut [i64],
) -> &'a mut [i64] {
    match source {
        RowSource::Scratch => &mut scratch[row * width..(row + 1) * width],
        source => {
            if read {
                source.read_into(&mut own[..length]);
            }
            own
        }
    }
}

/// A row's positions completed in place: given positions are checked ([ctb-input-errors] item
/// 10: they start at 0 and none is negative) and continued over the padding `0, 1, ...`;
/// without them, `0, 1, ...` up to `first_pad` then again from 0 over the padding [ctb-positions].
fn fill_positions(
    row_positions: &mut [i64],
    length: usize,
    first_pad: usize,
    given: bool,
    row: usize,
) -> Result<(), PositionsError> {
    if given {
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
    Ok(())
}

/// One row's `[S]` slices of the row pass's outputs (`selected`: `attention_document_ids`).
struct RowOutputs<'a> {
    input_ids: &'a mut [i64],
    labels: &'a mut [i64],
    position_ids: &'a mut [i64],
    padding_mask: &'a mut [u8],
    document_ids: &'a mut [i64],
    selected: &'a mut [i64],
}

/// One row of [`convert_rows`] from its completed `width` tokens and positions: the shift,
/// labels, `padding_mask`, `document_ids`, the selected ids and under xdoc the translated
/// positions; returns the row's largest translated position (-1 without xdoc).
fn convert_row(row_tokens: &[i64], row_positions: &[i64], first_pad: usize, options: &ConvertOptions, out: RowOutputs) -> i64 {
    let sequence = out.input_ids.len();
    out.input_ids.copy_from_slice(&row_tokens[..sequence]);
    let mut document = 0i64;
    // xdoc: the offset of the current subdocument and the largest translated coordinate so far
    let mut offset = 0i64;
    let mut largest_in_row = -1i64;
    for i in 0..sequence {
        let position = row_positions[i];
        let is_padding = i >= first_pad;
        let masked = i + 1 >= first_pad || (options.mask_segment_starts && row_positions[i + 1] == 0);
        out.labels[i] = if masked { options.ignore_index } else { row_tokens[i + 1] };
        out.padding_mask[i] = u8::from(is_padding);
        if position == 0 && !is_padding {
            // a new subdocument: under xdoc it continues after the previous one's largest coordinate
            document += 1;
            if document > 1 {
                offset = largest_in_row + 1;
            }
        }
        let id = if is_padding { 0 } else { document };
        out.document_ids[i] = id;
        if options.cross_document && id > 0 {
            let translated = position + offset;
            largest_in_row = largest_in_row.max(translated);
            out.position_ids[i] = translated;
            out.selected[i] = 1;
        } else {
            out.position_ids[i] = position;
            out.selected[i] = if options.cross_document { 0 } else { id };
        }
    }
    largest_in_row
}

/// The batched route's `extras` of row `row`, from its selected ids still in cache: the two
/// copies, `packed_token_indices`, and the row's `cu_seqlens` and span count [batched-metadata]
/// (updating the summary's longest span and largest id).
fn write_extras(extras: &mut ConvertExtras, selected: &[i64], row: usize, width: usize, summary: &mut ConvertSummary) {
    let span = row * selected.len()..(row + 1) * selected.len();
    if let Some(copy) = extras.packed_seq_ids.as_deref_mut() {
        copy[span.clone()].copy_from_slice(selected);
    }
    if let Some(copy) = extras.attention_mask.as_deref_mut() {
        copy[span.clone()].copy_from_slice(selected);
    }
    if let Some(indices) = extras.packed_token_indices.as_deref_mut() {
        for (i, (slot, &id)) in indices[span.clone()].iter_mut().zip(selected).enumerate() {
            *slot = if id != 0 { i as i64 } else { -1 };
        }
    }
    if let (Some(cu_rows), Some(spans)) = (extras.cu_rows.as_deref_mut(), extras.spans.as_deref_mut()) {
        // the selected ids are stretches of increasing ids (1, 2, ... or all 1 under xdoc),
        // then zeros: each id's count is its stretch's length [batched-metadata]
        let cu = &mut cu_rows[row * width..(row + 1) * width];
        cu[0] = 0;
        let mut count = 0usize;
        row_stretches(selected, &mut |length| {
            count += 1;
            cu[count] = cu[count - 1] + length as i32;
            summary.max_seqlen = summary.max_seqlen.max(length);
        });
        spans[row] = count as i64;
        summary.largest_id = summary.largest_id.max(selected.iter().copied().max().unwrap_or(0));
    }
}

/// `cu_seqlens` `[B, width]` of the row pass's `cu_rows` (`[B, row_width]`) and span counts:
/// each row's `spans + 1` entries, then `-1` [meta-cu-seqlens].
pub fn cu_from_rows(cu_rows: &[i32], row_width: usize, spans: &[i64], width: usize, cu_seqlens: &mut [i32]) {
    for (row, &count) in spans.iter().enumerate() {
        let used = count as usize + 1;
        let out = &mut cu_seqlens[row * width..(row + 1) * width];
        out[..used].copy_from_slice(&cu_rows[row * row_width..row * row_width + used]);
        out[used..].fill(-1);
    }
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

    /// `build_packed_sequence_metadata`'s indices, `cu_seqlens` (`[rows, width]`) and `max_seqlen`.
    fn metadata(mask: &[i64], rows: usize, cols: usize) -> (Vec<i64>, Vec<i32>, i64) {
        let mut indices = vec![0i64; rows * cols];
        let mut cu_rows = vec![7i32; rows * (cols + 1)];
        let mut spans = vec![0i64; rows];
        let summary = metadata_fill(&strided(mask, rows, cols), &mut indices, &mut cu_rows, &mut spans);
        let width = summary.largest.max(1) as usize + 1;
        let mut cu = vec![0i32; rows * width];
        cu_from_rows(&cu_rows, cols + 1, &spans, width, &mut cu);
        (indices, cu, summary.max_seqlen)
    }

    #[test]
    fn example_k_metadata() {
        let (indices, cu, max_seqlen) = metadata(&[1, 2, 0, 0, 0, 0], 2, 3);
        assert_eq!(indices, [0, 1, -1, -1, -1, -1]);
        assert_eq!(cu, [0, 1, 2, 0, -1, -1]);
        assert_eq!(max_seqlen, 1);
    }

    #[test]
    fn metadata_counts_ids_whether_or_not_they_come_in_increasing_stretches() {
        // row 0: stretches 1, 2, 3 (the stretch route); row 1: id 2 before id 1 and id 2 twice
        // (counted per id); row 2: binary; row 3: all zero
        let mask = [1, 1, 2, 3, 3, 3, 0, 0, 2, 2, 1, 1, 0, 2, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let (indices, cu, max_seqlen) = metadata(&mask, 4, 8);
        assert_eq!(&cu[..8], &[0, 2, 3, 6, 0, 2, 5, -1]);
        assert_eq!(&cu[8..], &[0, 3, -1, -1, 0, -1, -1, -1]);
        assert_eq!(max_seqlen, 3);
        assert_eq!(&indices[..8], &[0, 1, 2, 3, 4, 5, -1, -1]);
        // negative entries are nonzero for the indices but no id
        let (indices, cu, max_seqlen) = metadata(&[3, -1, 3, 0, 2, 2, 0, 0], 1, 8);
        assert_eq!((cu, max_seqlen), (vec![0, 2, 4, -1], 2));
        assert_eq!(indices, [0, 1, 2, -1, 4, 5, -1, -1]);
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
        let sources = [RowSource::Scratch, RowSource::Scratch];
        let extras = ConvertExtras::default();
        convert_rows(&mut tokens, &mut positions, &sources, &sources, &[1, 1], &[9, 9], &[2, 1], &options, out, extras).unwrap();
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
