"""A GGUF file's header, counted and bounded before any parser reads the file.

``gguf``'s reader (and transformers' GGUF loading through it) turns every metadata value into
Python and numpy objects, ~1 KB each: a 20 MB file of two million tiny strings took 4 GB and
minutes before any check. ``read_header`` walks the fixed little- (or big-) endian layout of the
GGUF spec itself, on a memory map (only the header's pages are read), and refuses, naming the
limit of ``core.models.limits`` and its variable, as soon as a count passes it:

* magic ``GGUF``, version (2 or 3), tensor count and metadata key count (``uint64``);
* each key/value: the key (a string: ``uint64`` length, UTF-8 bytes), the value type
  (``uint32``), the value: a scalar, a string, or an array (item type, ``uint64`` count, items);
* each tensor's info: name, dimension count (at most 4), dimensions, type, offset.

Arrays of fixed-size items are skipped whole; only string arrays are walked item by item.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from core.errors import UserError
from core.models import limits

MAGIC = b"GGUF"
VERSIONS = (2, 3)
STRING, ARRAY = 8, 9
# bytes of each scalar value type: uint8, int8, uint16, int16, uint32, int32, float32, bool,
# uint64, int64, float64
SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
MAX_DIMS = 4           # GGML_MAX_DIMS
MAX_KEY_BYTES = 65535  # the spec's bound on a key
MAX_NESTING = 4        # arrays of arrays (none in real files)
MAX_NAME_BYTES = 4096  # general.architecture and other names read back as text


@dataclass(frozen=True)
class GGUFHeader:
    """What the header declares and holds."""

    version: int
    tensors: int
    keys: int
    array_items: int
    string_bytes: int
    architecture: str | None


class _Refused(Exception):
    """A malformed header (turned into one ``UserError`` naming the file)."""


class _Walk:
    """A cursor over the mapped file with the running counts and their limits."""

    def __init__(self, data: mmap.mmap, order: str, name: str):
        self.data, self.end, self.name, self.offset = data, len(data), name, 0
        self.u32, self.u64 = struct.Struct(order + "I"), struct.Struct(order + "Q")
        self.items = self.string_bytes = 0
        self.max_items, self.max_strings = (limits.MAX_GGUF_ARRAY_ITEMS.get(),
                                            limits.MAX_GGUF_STRING_BYTES.get())
        self.max_array = limits.MAX_GGUF_ARRAY_LENGTH.get()

    def number(self, unpacker: struct.Struct) -> int:
        if self.offset + unpacker.size > self.end:
            raise _Refused("truncated")
        (value,) = unpacker.unpack_from(self.data, self.offset)
        self.offset += unpacker.size
        return value

    def skip(self, size: int) -> None:
        if size > self.end - self.offset:
            raise _Refused("truncated")
        self.offset += size

    def count_strings(self, length: int, where: str) -> None:
        self.string_bytes += length
        if self.string_bytes > self.max_strings:
            self.refuse(f"metadata hold more than {limits.human_bytes(self.max_strings)} of "
                        f"strings (at {where})", limits.MAX_GGUF_STRING_BYTES)

    def count_items(self, count: int, where: str) -> None:
        self.items += count
        if self.items > self.max_items:
            self.refuse(f"metadata hold more than {self.max_items:,} array items (at {where})",
                        limits.MAX_GGUF_ARRAY_ITEMS)

    def refuse(self, what: str, limit: limits.Limit) -> None:
        raise UserError(f"{self.name}: its GGUF {what}: refused before parsing it ({limit.hint()})")

    def string(self, where: str, *, keep: int = 0, longest: int | None = None) -> bytes:
        """A string's bytes (the first ``keep`` of them; the rest is skipped), counted; one
        longer than ``longest`` is malformed."""
        length = self.number(self.u64)
        if longest is not None and length > longest:
            raise _Refused(f"{where} is {length:,} bytes long")
        if length > self.end - self.offset:
            raise _Refused("truncated")
        self.count_strings(length, where)
        start = self.offset
        self.skip(length)
        return bytes(self.data[start:start + min(length, keep)])

    def strings(self, count: int, where: str) -> None:
        """``count`` strings of an array, skipped (a tight loop: vocabularies hold ~50k-260k)."""
        unpack, data, end, offset, total = self.u64.unpack_from, self.data, self.end, self.offset, 0
        room = self.max_strings - self.string_bytes
        for _ in range(count):
            if offset + 8 > end:
                raise _Refused("truncated")
            (length,) = unpack(data, offset)
            offset += 8 + length
            total += length
            if total > room:
                break
        self.offset = min(offset, end + 1)
        self.count_strings(total, where)
        if self.offset > end:
            raise _Refused("truncated")

    def value(self, kind: int, where: str, depth: int = 0) -> None:
        """Skip one value of type ``kind``, counting its strings and array items."""
        if kind in SCALAR_BYTES:
            self.skip(SCALAR_BYTES[kind])
        elif kind == STRING:
            self.string(where)
        elif kind == ARRAY:
            item, count = self.number(self.u32), self.number(self.u64)
            if count > self.max_array:
                self.refuse(f"array {where} holds {count:,} items, more than the "
                            f"{self.max_array:,} allowed", limits.MAX_GGUF_ARRAY_LENGTH)
            self.count_items(count, where)
            if item in SCALAR_BYTES:
                self.skip(count * SCALAR_BYTES[item])
            elif item == STRING:
                self.strings(count, where)
            elif item == ARRAY and depth < MAX_NESTING:
                for _ in range(count):
                    self.value(ARRAY, where, depth + 1)
            else:
                raise _Refused(f"array of type {item} at {where}")
        else:
            raise _Refused(f"value type {kind} at {where}")


def _shown(key: bytes) -> str:
    """A key as a message shows it: quoted, cut short, control characters escaped."""
    return repr(key[:60].decode("utf-8", "replace")) + ("..." if len(key) > 60 else "")


def _counts(walk: _Walk) -> tuple[int, int, int]:
    """Version, tensor count and key count, checked against their limits."""
    if bytes(walk.data[:4]) != MAGIC:
        raise _Refused("it does not start with GGUF")
    version = walk.number(walk.u32)
    if version not in VERSIONS:
        raise _Refused(f"version {version}; versions 2 and 3 are read")
    tensors, keys = walk.number(walk.u64), walk.number(walk.u64)
    if keys > limits.MAX_GGUF_METADATA.get():
        walk.refuse(f"header declares {keys:,} metadata keys, more than the "
                    f"{limits.MAX_GGUF_METADATA.get():,} allowed", limits.MAX_GGUF_METADATA)
    if tensors > limits.MAX_GGUF_TENSORS.get():
        walk.refuse(f"header declares {tensors:,} tensors, more than the "
                    f"{limits.MAX_GGUF_TENSORS.get():,} allowed", limits.MAX_GGUF_TENSORS)
    return version, tensors, keys


def _walk(walk: _Walk) -> GGUFHeader:
    walk.offset = 4
    version, tensors, keys = _counts(walk)
    seen, architecture = set(), None
    for _ in range(keys):
        key = walk.string(f"key {len(seen) + 1}", keep=MAX_KEY_BYTES, longest=MAX_KEY_BYTES)
        if key in seen:
            raise _Refused(f"key {_shown(key)} is repeated")
        seen.add(key)
        kind = walk.number(walk.u32)
        if key == b"general.architecture" and kind == STRING:
            architecture = walk.string(_shown(key), keep=MAX_NAME_BYTES).decode("utf-8", "replace")
        else:
            walk.value(kind, _shown(key))
    for index in range(tensors):
        walk.string(f"tensor {index}'s name", longest=MAX_KEY_BYTES)
        dims = walk.number(walk.u32)
        if dims > MAX_DIMS:
            raise _Refused(f"tensor {index} has {dims} dimensions")
        walk.skip(8 * dims + 4 + 8)  # dimensions, type, data offset
    return GGUFHeader(version, tensors, keys, walk.items, walk.string_bytes, architecture)


def read_header(path: Path) -> GGUFHeader:
    """The header of the GGUF file ``path``, counted; a ``UserError`` naming the limit (and its
    variable) a count passes, or saying the header is malformed."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            if path.stat().st_size < 24:
                raise _Refused("too short")
            with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
                # the version's low half is 0 when read in the wrong byte order
                order = "<" if struct.unpack_from("<I", data, 4)[0] & 0xFFFF else ">"
                return _walk(_Walk(data, order, path.name))
    except UserError:
        raise
    except _Refused as err:
        raise UserError(f"{path.name} is not a valid GGUF file ({err})") from None
    except (OSError, ValueError) as err:
        raise UserError(f"{path.name} could not be read as a GGUF file "
                        f"({type(err).__name__})") from None
