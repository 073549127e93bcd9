"""Safe extraction of an uploaded zip of a model folder, saving of uploaded files, and the
size budget of both.

An uploaded zip is untrusted: every member is checked before a byte is written (no absolute
paths, no ``..``, no symlinks, a bounded number of files, a bounded total size, a bounded
compression ratio per member and for the whole archive, against zip bombs), the disk must keep
``MIN_FREE_BYTES`` free after it, and while copying the bytes actually read are counted, so a zip
that lies about its sizes is stopped too. Uploads are streamed to disk in chunks (never held
whole in memory). Files land in private (0700) folders under ``core.paths.home()``; nothing
extracted is ever executed or unpickled here. The limits are those of ``core.models.limits``.

Storage budget: ``uploads/<digest>/``, ``models/zips/<digest>/`` and hub downloads
(``models/hub/models--owner--name/``, ``core.models.hub``) are marked used (mtime) when written
or reused; after each save, extraction or download, ``prune_private_storage`` deletes the least
recently used ones until they fit in ``STORAGE_BYTES``, never the one just written. A model or
a job still using a deleted file keeps its open copy; loading it again says it is gone (a hub
id is downloaded again). Converted GGUF caches are not pruned (each is one model, reused whole).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import stat
import uuid
import zipfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from core.errors import UserError
from core.models import limits
from core.paths import home

_CHUNK = 2**20


def private_dir(*parts: str) -> Path:
    """A folder under the Leakage Lab home readable only by this user (created if needed)."""
    folder = home()
    for part in parts:
        folder = folder / part
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
    return folder


def save_upload(filename: str, upload: BinaryIO | bytes) -> Path:
    """Stream an uploaded file (a file-like object, e.g. Streamlit's ``UploadedFile``) to
    ``uploads/<sha256 prefix>/<sanitised name>`` and return that path.

    The bytes go to a temporary file in chunks, hashed while copied, then renamed into place
    (atomic), so a half-written upload is never seen. The disk must keep ``MIN_FREE_BYTES`` free.
    """
    stream = io.BytesIO(upload) if isinstance(upload, bytes) else upload
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", Path(filename).name).lstrip(".") or "upload"
    uploads = private_dir("uploads")
    budget = limits.free_disk_budget(uploads)
    if stream.seekable():  # the size is known: refuse before writing anything
        limits.check_free_disk(uploads, stream.seek(0, os.SEEK_END), f"the upload {safe}")
        stream.seek(0)
    staging = uploads / f".partial-{uuid.uuid4().hex}"
    try:
        folder = private_dir("uploads", _stream_to(stream, staging, budget, safe)[:16])
        target = folder / safe
        if not target.exists():
            staging.rename(target)
    finally:
        staging.unlink(missing_ok=True)
    mark_used(folder)
    prune_private_storage(keep=folder)
    return target


def _stream_to(stream: BinaryIO, path: Path, budget: int, name: str) -> str:
    """Copy ``stream`` into the new file ``path`` in chunks, at most ``budget`` bytes; return the
    SHA-256 of what was copied."""
    digest, written = hashlib.sha256(), 0
    with open(path, "xb") as out:
        while chunk := stream.read(_CHUNK):
            written += len(chunk)
            if written > budget:
                raise UserError(f"the upload {name} does not fit on the disk (keeping "
                                f"{limits.human_bytes(limits.MIN_FREE_BYTES.get())} free)")
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _member_path(info: zipfile.ZipInfo) -> PurePosixPath:
    """The member's relative path, or ``UserError`` when it could escape the target folder."""
    name = info.filename.replace("\\", "/")
    path = PurePosixPath(name)
    if path.is_absolute() or re.match(r"^[A-Za-z]:", name) or ".." in path.parts:
        raise UserError(f"the zip holds an unsafe path {info.filename!r} (absolute or with '..'): refused")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise UserError(f"the zip holds a symbolic link {info.filename!r}: refused")
    return path


def check_zip(
    zf: zipfile.ZipFile, *, max_files: int | None = None, max_total_bytes: int | None = None
) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """Validate every member's path and declared sizes; return the files to extract.

    ``max_files`` / ``max_total_bytes`` default to ``MAX_ZIP_FILES`` / ``MAX_ZIP_BYTES``.
    """
    max_files = max_files or limits.MAX_ZIP_FILES.get()
    max_total_bytes = max_total_bytes or limits.MAX_ZIP_BYTES.get()
    members = [(info, _member_path(info)) for info in zf.infolist() if not info.is_dir()]
    if len(members) > max_files:
        raise UserError(f"the zip holds {len(members)} files, more than the {max_files} allowed "
                        f"({limits.MAX_ZIP_FILES.hint()})")
    total = sum(info.file_size for info, _ in members)
    if total > max_total_bytes:
        raise UserError(f"the zip would unpack to {limits.human_bytes(total)}, more than the "
                        f"{limits.human_bytes(max_total_bytes)} allowed ({limits.MAX_ZIP_BYTES.hint()})")
    _check_ratios([info for info, _ in members])
    return members


def _check_ratios(members: list[zipfile.ZipInfo]) -> None:
    """Zip-bomb checks: uncompressed / compressed size of each member above
    ``MEMBER_RATIO_ABOVE``, and of the whole archive once it unpacks to more than
    ``ARCHIVE_RATIO_ABOVE`` (many members just under the first threshold)."""
    for info in members:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.MEMBER_RATIO_ABOVE and ratio > limits.MAX_MEMBER_RATIO:
            raise UserError(f"{info.filename!r} in the zip compresses {ratio:.0f}:1, which looks like "
                            f"a zip bomb (at most {limits.MAX_MEMBER_RATIO}:1 allowed): refused")
    total = sum(info.file_size for info in members)
    packed = sum(info.compress_size for info in members)
    ratio = total / max(packed, 1)
    if total > limits.ARCHIVE_RATIO_ABOVE and ratio > limits.MAX_ARCHIVE_RATIO:
        raise UserError(f"the zip unpacks {limits.human_bytes(packed)} to {limits.human_bytes(total)} "
                        f"({ratio:.0f}:1), which looks like a zip bomb (a model folder compresses at "
                        f"most {limits.MAX_ARCHIVE_RATIO}:1): refused")


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget: int) -> int:
    """Copy one member, counting the bytes really read; return them."""
    written = 0
    with zf.open(info) as src, open(target, "xb") as dst:
        while chunk := src.read(_CHUNK):
            written += len(chunk)
            if written > info.file_size or written > budget:
                raise UserError(f"{info.filename!r} in the zip is larger than it declares: refused")
            dst.write(chunk)
    return written


def extract_zip(
    zip_path: Path, *, max_files: int | None = None, max_total_bytes: int | None = None
) -> Path:
    """Extract ``zip_path`` safely into a private folder keyed by its content; return the folder.

    The same zip extracted twice reuses the first extraction. Limits: see ``check_zip``; the
    disk must keep ``MIN_FREE_BYTES`` free after it.
    """
    zip_path = Path(zip_path)
    zips = private_dir("models", "zips")
    target = zips / _file_digest(zip_path)[:16]
    if target.is_dir():
        mark_used(target)
        return target
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as err:
        raise UserError(f"{zip_path.name} is not a readable zip file ({err})") from None
    with zf:
        members = check_zip(zf, max_files=max_files, max_total_bytes=max_total_bytes)
        budget = sum(info.file_size for info, _ in members)
        limits.check_free_disk(zips, budget, f"extracting {zip_path.name}")
        staging = private_dir("models", "zips", f".partial-{uuid.uuid4().hex}")
        try:
            for info, rel in members:
                out = staging.joinpath(*rel.parts)
                out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                budget -= _copy_member(zf, info, out, budget)
            staging.rename(target)
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            raise UserError(f"{zip_path.name} is a damaged zip file ({err})") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    mark_used(target)
    prune_private_storage(keep=target)
    return target


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def mark_used(folder: Path) -> None:
    """Record that ``folder`` was used now (its mtime orders ``prune_private_storage``)."""
    os.utime(folder)


def prune_private_storage(keep: Path | None = None) -> list[Path]:
    """Delete the least recently used ``uploads/*``, ``models/zips/*`` and ``models/hub/*``
    folders until the rest fit in ``STORAGE_BYTES``; never ``keep`` nor one being written
    (``.partial-*``). Returns the deleted folders."""
    entries = []
    for area in (private_dir("uploads"), private_dir("models", "zips"),
                 private_dir("models", "hub")):
        for folder in area.iterdir():   # ".partial-*" being written, the hub's ".locks"
            if folder.is_dir() and not folder.name.startswith(".") and folder != keep:
                try:
                    entries.append((folder.stat().st_mtime, _folder_size(folder), folder))
                except OSError:  # deleted meanwhile by another prune
                    continue
    kept = _folder_size(keep) if keep is not None else 0
    total, budget, removed = kept + sum(size for _, size, _ in entries), limits.STORAGE_BYTES.get(), []
    for _, size, folder in sorted(entries):
        if total <= budget:
            break
        shutil.rmtree(folder, ignore_errors=True)
        total -= size
        removed.append(folder)
    return removed


def _folder_size(folder: Path) -> int:
    """The bytes of the files in ``folder``; links (the hub's snapshots link to its blobs) are
    not counted twice."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def find_model_folder(root: Path) -> Path:
    """The shallowest folder under ``root`` holding a ``config.json`` (a zip may wrap one folder)."""
    configs = sorted(root.rglob("config.json"), key=lambda p: (len(p.parts), str(p)))
    if not configs:
        raise UserError("the zip holds no config.json: zip a Hugging Face model folder (config.json, "
                        "*.safetensors, tokenizer files)")
    return configs[0].parent
