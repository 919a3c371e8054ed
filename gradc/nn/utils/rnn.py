"""``torch.nn.utils.rnn``: PackedSequence and packing/padding variable-length batches (eager,
differentiable: packing and padding are slices and concatenations)."""
from __future__ import annotations

from collections import namedtuple

from ...tensor import Tensor

_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """``data``: the time steps' rows, concatenated (step t holds the ``batch_sizes[t]`` longest
    sequences, sorted by decreasing length); ``sorted_indices`` maps that order to the batch's
    (None when the batch was already sorted), ``unsorted_indices`` is its inverse."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence needs batch_sizes")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def double(self):
        from ... import dtypes
        return self.to(dtypes.float64)

    def float(self):
        from ... import dtypes
        return self.to(dtypes.float32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    if permutation is None:
        return None
    from ... import factories
    order = [int(i) for i in permutation.tolist()]
    inverse = [0] * len(order)
    for pos, i in enumerate(order):
        inverse[i] = pos
    return factories.tensor(inverse, dtype=permutation.dtype, device=permutation.device)


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) of sequences of the given
    lengths; ``enforce_sorted=False`` sorts the batch by decreasing length first."""
    from ... import dtypes, factories
    from ...tensor_api import cat
    lens = _lengths_list(lengths)
    sorted_indices = None
    batch_dim = 0 if batch_first else 1
    if not enforce_sorted:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])           # (stable, as PyTorch's sort here)
        lens = [lens[i] for i in order]
        sorted_indices = factories.tensor(order, dtype=dtypes.int64, device=input.device)
        input = input.index_select(batch_dim, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if len(lens) != input.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={input.shape[1]})")
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if any(a < b for a, b in zip(lens, lens[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
                           "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    sizes = [sum(1 for n in lens if n > t) for t in range(lens[0] if lens else 0)]
    data = cat([input[t, :b] for t, b in enumerate(sizes)])
    return PackedSequence(data, factories.tensor(sizes, dtype=dtypes.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded batch, lengths), in the batch's original order."""
    from ... import dtypes, factories
    from ...tensor_api import cat, stack
    data, batch_sizes, _, unsorted_indices = sequence
    sizes = [int(b) for b in batch_sizes.tolist()]
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = sizes[0]
    rest = tuple(data.shape[1:])
    rows, start = [], 0
    for t in range(steps):
        b = sizes[t] if t < len(sizes) else 0
        step = data[start:start + b]
        start += b
        if b < batch:
            fill = factories.full((batch - b,) + rest, padding_value, dtype=data.dtype, device=data.device)
            step = fill if b == 0 else cat([step, fill])
        rows.append(step)
    padded = stack(rows, 1 if batch_first else 0)
    lengths = [sum(1 for b in sizes if b > i) for i in range(batch)]
    if unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted_indices)
        lengths = [lengths[int(i)] for i in unsorted_indices.tolist()]
    return padded, factories.tensor(lengths, dtype=dtypes.int64)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padded with
    ``padding_value`` after (or, ``padding_side="left"``, before) each."""
    from ... import factories
    from ...tensor_api import cat, stack
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    longest = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = factories.full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, fill] if padding_side == "right" else [fill, s])
        out.append(s)
    return stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence of pad_sequence(sequences)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in the batch's original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]
