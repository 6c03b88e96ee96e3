"""DEFLATE as Go's compress/flate writes it at the default level (6), bit for bit.

Why not zlib: `gzip.compress` in Kyverno returns Go's bytes, and policies compare, hash or store them
(base64 in a ConfigMap, an annotation), so the bytes themselves are the answer. zlib and Go agree on the
format but not on the choices: Go hashes four bytes (not three), searches its chains with its own
good/lazy/nice/chain limits (8/16/128/128), emits a 16384-token block, chooses per block between fixed,
dynamic and stored coding by computed size, builds length-limited Huffman codes with its own algorithm,
and ends the stream with an empty stored block. Each of those changes the output, so each is followed here.

The structure mirrors Go's (Go 1.26 compress/flate: deflate.go for the match finder, huffman_code.go for
the code lengths, huffman_bit_writer.go for the blocks) so the two can be compared step by step; only the
lazy-matching path of levels 4-9 is needed, and only level 6 is used. Pure Python: about 1 MB/s, which
is ample for the strings policies compress.
"""

from __future__ import annotations

from collections.abc import Sequence

_WINDOW = 1 << 15
_WINDOW_MASK = _WINDOW - 1
_MIN_MATCH = 4                  # Go emits no match shorter than 4 (the format allows 3)
_MAX_MATCH = 258
_BASE_MATCH = 3
_MAX_BLOCK_TOKENS = 1 << 14
_MAX_STORED = 65535
_HASH_BITS = 17
_HASH_MASK = (1 << _HASH_BITS) - 1
_MAX_HASH_OFFSET = 1 << 24
_HASH_MUL = 0x1E35A7BD
_MATCH_TYPE = 1 << 30
_LENGTH_SHIFT = 22
_OFFSET_MASK = (1 << _LENGTH_SHIFT) - 1
_INT32_MAX = (1 << 31) - 1

# level 6: good, lazy, nice, chain
_GOOD, _LAZY, _NICE, _CHAIN = 8, 16, 128, 128

_NUM_LIT = 286
_NUM_OFFSETS = 30
_END_BLOCK = 256
_LENGTH_CODES_START = 257
_BAD_CODE = 255
_CODEGEN_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)

_LENGTH_EXTRA = (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0)
_LENGTH_BASE = (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128,
                160, 192, 224, 255)
_OFFSET_EXTRA = (0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
                 13, 13)
_OFFSET_BASE = (0x0001, 0x0002, 0x0003, 0x0004, 0x0005, 0x0007, 0x0009, 0x000D, 0x0011, 0x0019, 0x0021,
                0x0031, 0x0041, 0x0061, 0x0081, 0x00C1, 0x0101, 0x0181, 0x0201, 0x0301, 0x0401, 0x0601,
                0x0801, 0x0C01, 0x1001, 0x1801, 0x2001, 0x3001, 0x4001, 0x6001)


def _length_code(xlength: int) -> int:
    """The length symbol (0-based past 257) of a match length minus 3."""
    for code in range(len(_LENGTH_BASE) - 1, -1, -1):
        if xlength >= _LENGTH_BASE[code]:
            return code
    return 0


_LENGTH_CODE = tuple(_length_code(x) for x in range(256))


def _offset_code(xoffset: int) -> int:
    """The distance symbol of a distance minus 1."""
    distance = xoffset + 1
    for code in range(_NUM_OFFSETS - 1, -1, -1):
        if distance >= _OFFSET_BASE[code]:
            return code
    return 0


def _reverse(code: int, length: int) -> int:
    return int(f"{code:0{length}b}"[::-1], 2) if length else 0


class _Encoder:
    """A Huffman code over `size` symbols: (code, length) per symbol, lengths limited as Go limits them."""

    def __init__(self, size: int) -> None:
        self.codes: list[tuple[int, int]] = [(0, 0)] * size

    def bit_length(self, freq: Sequence[int]) -> int:
        return sum(f * self.codes[i][1] for i, f in enumerate(freq) if f)

    def generate(self, freq: Sequence[int], max_bits: int) -> None:
        nodes = []
        for i, f in enumerate(freq):
            if f:
                nodes.append((f, i))
            else:
                self.codes[i] = (self.codes[i][0], 0)
        if len(nodes) <= 2:
            # one or two symbols: one bit each, numbered in symbol order
            for n, (_, symbol) in enumerate(nodes):
                self.codes[symbol] = (n, 1)
            return
        nodes.sort()                           # by frequency, then symbol: Go's byFreq order
        counts = _bit_counts([f for f, _ in nodes], max_bits)
        symbols = [s for _, s in nodes]
        code = 0
        for bits, count in enumerate(counts):
            code <<= 1
            if bits == 0 or count == 0:
                continue
            # the `count` most frequent remaining symbols take this length, in symbol order
            chunk = sorted(symbols[len(symbols) - count:])
            for symbol in chunk:
                self.codes[symbol] = (_reverse(code, bits), bits)
                code += 1
            del symbols[len(symbols) - count:]


def _bit_counts(freqs: list[int], max_bits: int) -> list[int]:
    """How many symbols get each code length (index = length), by Go's package-merge variant.

    `freqs` is sorted ascending; the walk over levels is Go's huffmanEncoder.bitCounts, so where
    several length assignments are optimal the same one is chosen."""
    n = len(freqs)
    freq = [*freqs, _INT32_MAX]               # the sentinel node
    max_bits = min(max_bits, n - 1)
    level_count = 16
    last_freq = [0] * level_count
    next_char = [0] * level_count
    next_pair = [0] * level_count
    needed = [0] * level_count
    leaf = [[0] * level_count for _ in range(level_count)]
    for level in range(1, max_bits + 1):
        last_freq[level] = freq[1]
        next_char[level] = freq[2]
        next_pair[level] = freq[0] + freq[1]
        leaf[level][level] = 2
        if level == 1:
            next_pair[level] = _INT32_MAX
    needed[max_bits] = 2 * n - 4
    level = max_bits
    while True:
        if next_pair[level] == _INT32_MAX and next_char[level] == _INT32_MAX:
            needed[level] = 0
            next_pair[level + 1] = _INT32_MAX
            level += 1
            continue
        prev_freq = last_freq[level]
        if next_char[level] < next_pair[level]:
            count = leaf[level][level] + 1
            last_freq[level] = next_char[level]
            leaf[level][level] = count
            next_char[level] = freq[count]
        else:
            last_freq[level] = next_pair[level]
            leaf[level][:level] = leaf[level - 1][:level]
            needed[level - 1] = 2
        needed[level] -= 1
        if needed[level] == 0:
            if level == max_bits:
                break
            next_pair[level + 1] = prev_freq + last_freq[level]
            level += 1
        else:
            while needed[level - 1] > 0:
                level -= 1
    if leaf[max_bits][max_bits] != n:
        raise AssertionError("deflate: inconsistent code length counts")
    counts = [0] * (max_bits + 1)
    bits = 1
    row = leaf[max_bits]
    for level in range(max_bits, 0, -1):
        counts[bits] = row[level] - row[level - 1]
        bits += 1
    return counts


def _fixed_literal_encoder() -> _Encoder:
    enc = _Encoder(_NUM_LIT)
    for ch in range(_NUM_LIT):
        if ch < 144:
            code, size = ch + 48, 8
        elif ch < 256:
            code, size = ch + 400 - 144, 9
        elif ch < 280:
            code, size = ch - 256, 7
        else:
            code, size = ch + 192 - 280, 8
        enc.codes[ch] = (_reverse(code, size), size)
    return enc


def _fixed_offset_encoder() -> _Encoder:
    enc = _Encoder(_NUM_OFFSETS)
    enc.codes = [(_reverse(ch, 5), 5) for ch in range(_NUM_OFFSETS)]
    return enc


_FIXED_LITERALS = _fixed_literal_encoder()
_FIXED_OFFSETS = _fixed_offset_encoder()


class _BitWriter:
    """Go's huffmanBitWriter: the block writer, with its choice between fixed, dynamic and stored blocks."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.bits = 0
        self.nbits = 0
        self.literal_freq = [0] * _NUM_LIT
        self.offset_freq = [0] * _NUM_OFFSETS
        self.codegen: list[int] = []
        self.codegen_freq = [0] * 19
        self.literals = _Encoder(_NUM_LIT)
        self.offsets = _Encoder(_NUM_OFFSETS)
        self.codegen_encoder = _Encoder(19)

    def write_bits(self, value: int, count: int) -> None:
        self.bits |= value << self.nbits
        self.nbits += count
        while self.nbits >= 8:
            self.out.append(self.bits & 0xFF)
            self.bits >>= 8
            self.nbits -= 8

    def flush(self) -> None:
        """Pad to a byte boundary."""
        if self.nbits:
            self.out.append(self.bits & 0xFF)
        self.bits = 0
        self.nbits = 0

    def write_stored_header(self, length: int, eof: bool) -> None:
        self.write_bits(1 if eof else 0, 3)
        self.flush()
        self.write_bits(length, 16)
        self.write_bits(~length & 0xFFFF, 16)

    def _index_tokens(self, tokens: Sequence[int]) -> tuple[int, int]:
        self.literal_freq = [0] * _NUM_LIT
        self.offset_freq = [0] * _NUM_OFFSETS
        for t in tokens:
            if t < _MATCH_TYPE:
                self.literal_freq[t] += 1
                continue
            self.literal_freq[_LENGTH_CODES_START + _LENGTH_CODE[(t - _MATCH_TYPE) >> _LENGTH_SHIFT]] += 1
            self.offset_freq[_offset_code(t & _OFFSET_MASK)] += 1
        num_literals = _NUM_LIT
        while self.literal_freq[num_literals - 1] == 0:
            num_literals -= 1
        num_offsets = _NUM_OFFSETS
        while num_offsets > 0 and self.offset_freq[num_offsets - 1] == 0:
            num_offsets -= 1
        if num_offsets == 0:
            # a block without matches still declares one distance code
            self.offset_freq[0] = 1
            num_offsets = 1
        self.literals.generate(self.literal_freq, 15)
        self.offsets.generate(self.offset_freq, 15)
        return num_literals, num_offsets

    def _generate_codegen(self, num_literals: int, num_offsets: int) -> None:
        self.codegen_freq = [0] * 19
        lengths = [self.literals.codes[i][1] for i in range(num_literals)]
        lengths += [self.offsets.codes[i][1] for i in range(num_offsets)]
        lengths.append(_BAD_CODE)
        out: list[int] = []
        size = lengths[0]
        count = 1
        index = 1
        while size != _BAD_CODE:
            next_size = lengths[index]
            index += 1
            if next_size == size:
                count += 1
                continue
            if size != 0:
                out.append(size)
                self.codegen_freq[size] += 1
                count -= 1
                while count >= 3:
                    n = min(6, count)
                    out += [16, n - 3]
                    self.codegen_freq[16] += 1
                    count -= n
            else:
                while count >= 11:
                    n = min(138, count)
                    out += [18, n - 11]
                    self.codegen_freq[18] += 1
                    count -= n
                if count >= 3:
                    out += [17, count - 3]
                    self.codegen_freq[17] += 1
                    count = 0
            count -= 1
            while count >= 0:
                out.append(size)
                self.codegen_freq[size] += 1
                count -= 1
            size = next_size
            count = 1
        out.append(_BAD_CODE)
        self.codegen = out

    def _dynamic_size(self, extra_bits: int) -> tuple[int, int]:
        num_codegens = 19
        while num_codegens > 4 and self.codegen_freq[_CODEGEN_ORDER[num_codegens - 1]] == 0:
            num_codegens -= 1
        header = (3 + 5 + 5 + 4 + 3 * num_codegens + self.codegen_encoder.bit_length(self.codegen_freq)
                  + self.codegen_freq[16] * 2 + self.codegen_freq[17] * 3 + self.codegen_freq[18] * 7)
        size = (header + self.literals.bit_length(self.literal_freq) + self.offsets.bit_length(self.offset_freq)
                + extra_bits)
        return size, num_codegens

    def _write_dynamic_header(self, num_literals: int, num_offsets: int, num_codegens: int, eof: bool) -> None:
        self.write_bits(5 if eof else 4, 3)
        self.write_bits(num_literals - 257, 5)
        self.write_bits(num_offsets - 1, 5)
        self.write_bits(num_codegens - 4, 4)
        for i in range(num_codegens):
            self.write_bits(self.codegen_encoder.codes[_CODEGEN_ORDER[i]][1], 3)
        i = 0
        while True:
            word = self.codegen[i]
            i += 1
            if word == _BAD_CODE:
                break
            code, length = self.codegen_encoder.codes[word]
            self.write_bits(code, length)
            if word in (16, 17, 18):
                self.write_bits(self.codegen[i], {16: 2, 17: 3, 18: 7}[word])
                i += 1

    def write_block(self, tokens: list[int], eof: bool, stored_input: bytes | None) -> None:
        tokens = [*tokens, _END_BLOCK]
        num_literals, num_offsets = self._index_tokens(tokens)
        extra_bits = 0
        storable = stored_input is not None and len(stored_input) <= _MAX_STORED
        stored_size = (len(stored_input) + 5) * 8 if stored_input is not None and storable else 0
        if storable:
            # Go counts extra bits only when the block could be stored (a quirk kept for the same choice)
            for code in range(_LENGTH_CODES_START + 8, num_literals):
                extra_bits += self.literal_freq[code] * _LENGTH_EXTRA[code - _LENGTH_CODES_START]
            for code in range(4, num_offsets):
                extra_bits += self.offset_freq[code] * _OFFSET_EXTRA[code]
        literal_encoder, offset_encoder = _FIXED_LITERALS, _FIXED_OFFSETS
        size = (3 + _FIXED_LITERALS.bit_length(self.literal_freq) + _FIXED_OFFSETS.bit_length(self.offset_freq)
                + extra_bits)
        self._generate_codegen(num_literals, num_offsets)
        self.codegen_encoder.generate(self.codegen_freq, 7)
        dynamic_size, num_codegens = self._dynamic_size(extra_bits)
        if dynamic_size < size:
            size = dynamic_size
            literal_encoder, offset_encoder = self.literals, self.offsets
        if storable and stored_size < size:
            assert stored_input is not None
            self.write_stored_header(len(stored_input), eof)
            self.out += stored_input
            return
        if literal_encoder is _FIXED_LITERALS:
            self.write_bits(3 if eof else 2, 3)
        else:
            self._write_dynamic_header(num_literals, num_offsets, num_codegens, eof)
        self._write_tokens(tokens, literal_encoder.codes, offset_encoder.codes)

    def _write_tokens(self, tokens: Sequence[int], lit: Sequence[tuple[int, int]],
                      off: Sequence[tuple[int, int]]) -> None:
        for t in tokens:
            if t < _MATCH_TYPE:
                self.write_bits(*lit[t])
                continue
            xlength = (t - _MATCH_TYPE) >> _LENGTH_SHIFT
            lcode = _LENGTH_CODE[xlength]
            self.write_bits(*lit[lcode + _LENGTH_CODES_START])
            if _LENGTH_EXTRA[lcode]:
                self.write_bits(xlength - _LENGTH_BASE[lcode], _LENGTH_EXTRA[lcode])
            xoffset = t & _OFFSET_MASK
            ocode = _offset_code(xoffset)
            self.write_bits(*off[ocode])
            if _OFFSET_EXTRA[ocode]:
                self.write_bits(xoffset - (_OFFSET_BASE[ocode] - 1), _OFFSET_EXTRA[ocode])


def _hash4(window: bytearray, i: int) -> int:
    value = window[i] << 24 | window[i + 1] << 16 | window[i + 2] << 8 | window[i + 3]
    return ((value * _HASH_MUL) & 0xFFFFFFFF) >> (32 - _HASH_BITS)


class _Compressor:
    """Go's compressor in lazy-matching mode: the window, the hash chains and the token stream."""

    def __init__(self) -> None:
        self.w = _BitWriter()
        self.window = bytearray(2 * _WINDOW)
        self.window_end = 0
        self.index = 0
        self.block_start = 0
        self.byte_available = False
        self.sync = False
        self.tokens: list[int] = []
        self.length = _MIN_MATCH - 1
        self.offset = 0
        self.max_insert_index = 0
        self.chain_head = -1
        self.hash_head = [0] * (1 << _HASH_BITS)
        self.hash_prev = [0] * _WINDOW
        self.hash_offset = 1

    def fill(self, data: memoryview) -> int:
        if self.index >= 2 * _WINDOW - (_MIN_MATCH + _MAX_MATCH):
            # slide the upper half down
            self.window[:_WINDOW] = self.window[_WINDOW:2 * _WINDOW]
            self.index -= _WINDOW
            self.window_end -= _WINDOW
            self.block_start = self.block_start - _WINDOW if self.block_start >= _WINDOW else _INT32_MAX
            self.hash_offset += _WINDOW
            if self.hash_offset > _MAX_HASH_OFFSET:
                delta = self.hash_offset - 1
                self.hash_offset -= delta
                self.chain_head -= delta
                self.hash_prev = [v - delta if v > delta else 0 for v in self.hash_prev]
                self.hash_head = [v - delta if v > delta else 0 for v in self.hash_head]
        n = min(len(data), len(self.window) - self.window_end)
        self.window[self.window_end:self.window_end + n] = data[:n]
        self.window_end += n
        return n

    def write_block(self, index: int) -> None:
        if index > 0:
            stored = bytes(self.window[self.block_start:index]) if self.block_start <= index else None
            self.block_start = index
            self.w.write_block(self.tokens, False, stored)

    def find_match(self, pos: int, prev_head: int, prev_length: int, lookahead: int) -> tuple[int, int, bool]:
        win = self.window
        min_match_look = min(_MAX_MATCH, lookahead)
        nice = min(_NICE, min_match_look)
        tries = _CHAIN
        length = prev_length
        offset = 0
        ok = False
        if length >= _GOOD:
            tries >>= 2
        w_end = win[pos + length]
        min_index = pos - _WINDOW
        i = prev_head
        while tries > 0:
            if w_end == win[i + length]:
                n = 0
                while n < min_match_look and win[i + n] == win[pos + n]:
                    n += 1
                if n > length and (n > _MIN_MATCH or pos - i <= 4096):
                    length = n
                    offset = pos - i
                    ok = True
                    if n >= nice:
                        break
                    w_end = win[pos + n]
            if i == min_index:
                break
            i = self.hash_prev[i & _WINDOW_MASK] - self.hash_offset
            if i < min_index or i < 0:
                break
            tries -= 1
        return length, offset, ok

    def _insert(self, index: int) -> None:
        h = _hash4(self.window, index)
        self.hash_prev[index & _WINDOW_MASK] = self.hash_head[h]
        self.hash_head[h] = index + self.hash_offset

    def deflate(self) -> None:
        if self.window_end - self.index < _MIN_MATCH + _MAX_MATCH and not self.sync:
            return
        self.max_insert_index = self.window_end - (_MIN_MATCH - 1)
        win = self.window
        while True:
            lookahead = self.window_end - self.index
            if lookahead < _MIN_MATCH + _MAX_MATCH:
                if not self.sync:
                    break
                if lookahead == 0:
                    if self.byte_available:
                        self.tokens.append(win[self.index - 1])
                        self.byte_available = False
                    if self.tokens:
                        self.write_block(self.index)
                        self.tokens = []
                    break
            if self.index < self.max_insert_index:
                h = _hash4(win, self.index)
                self.chain_head = self.hash_head[h]
                self.hash_prev[self.index & _WINDOW_MASK] = self.chain_head
                self.hash_head[h] = self.index + self.hash_offset
            prev_length, prev_offset = self.length, self.offset
            self.length, self.offset = _MIN_MATCH - 1, 0
            min_index = max(self.index - _WINDOW, 0)
            if (self.chain_head - self.hash_offset >= min_index and lookahead > prev_length
                    and prev_length < _LAZY):
                length, offset, ok = self.find_match(self.index, self.chain_head - self.hash_offset,
                                                     _MIN_MATCH - 1, lookahead)
                if ok:
                    self.length, self.offset = length, offset
            if prev_length >= _MIN_MATCH and self.length <= prev_length:
                # the previous position's match is at least as long: emit it (lazy matching)
                self.tokens.append(_MATCH_TYPE + ((prev_length - _BASE_MATCH) << _LENGTH_SHIFT)
                                   + (prev_offset - 1))
                new_index = self.index + prev_length - 1
                for index in range(self.index + 1, new_index):
                    if index < self.max_insert_index:
                        self._insert(index)
                self.index = new_index
                self.byte_available = False
                self.length = _MIN_MATCH - 1
                if len(self.tokens) == _MAX_BLOCK_TOKENS:
                    self.write_block(self.index)
                    self.tokens = []
            else:
                if self.byte_available:
                    i = self.index - 1
                    self.tokens.append(win[i])
                    if len(self.tokens) == _MAX_BLOCK_TOKENS:
                        self.write_block(i + 1)
                        self.tokens = []
                self.index += 1
                self.byte_available = True

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while len(view):
            self.deflate()
            view = view[self.fill(view):]

    def close(self) -> bytes:
        self.sync = True
        self.deflate()
        # Go ends every stream with an empty final stored block
        self.w.write_stored_header(0, True)
        self.w.flush()
        return bytes(self.w.out)


def go_deflate(data: bytes) -> bytes:
    """The raw DEFLATE stream Go's flate.NewWriter(w, DefaultCompression) writes for one Write + Close."""
    compressor = _Compressor()
    compressor.write(data)
    return compressor.close()
