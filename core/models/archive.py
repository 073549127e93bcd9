"""Safe extraction of an uploaded zip of a model folder, and saving of uploaded files.

An uploaded zip is untrusted: every member is checked before a byte is written (no absolute
paths, no ``..``, no symlinks, a bounded number of files, a bounded total size, a bounded
compression ratio against zip bombs), and while copying the bytes actually read are counted,
so a zip that lies about its sizes is stopped too. Files land in a private (0700) folder
under ``core.paths.home()``; nothing extracted is ever executed or unpickled here.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import uuid
import zipfile
from pathlib import Path, PurePosixPath

from core.errors import UserError
from core.paths import home

MAX_FILES = 1000
MAX_TOTAL_BYTES = 16 * 2**30
MAX_RATIO = 200  # uncompressed / compressed size of one member (safetensors barely compress)
RATIO_CHECK_ABOVE = 2**20  # small files (json) may compress well; only check members above 1 MiB
_CHUNK = 2**20


def private_dir(*parts: str) -> Path:
    """A folder under the Leakage Lab home readable only by this user (created if needed)."""
    folder = home()
    for part in parts:
        folder = folder / part
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
    return folder


def save_upload(filename: str, data: bytes) -> Path:
    """Write an uploaded file's bytes to a private folder; return its path (name sanitised)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", Path(filename).name).lstrip(".") or "upload"
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = private_dir("uploads", digest) / safe
    if not target.exists():
        target.write_bytes(data)
    return target


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
    zf: zipfile.ZipFile,
    *,
    max_files: int = MAX_FILES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_ratio: float = MAX_RATIO,
) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """Validate every member's path and declared sizes; return the files to extract."""
    members = [(info, _member_path(info)) for info in zf.infolist() if not info.is_dir()]
    if len(members) > max_files:
        raise UserError(f"the zip holds {len(members)} files, more than the {max_files} allowed")
    total = sum(info.file_size for info, _ in members)
    if total > max_total_bytes:
        raise UserError(
            f"the zip would unpack to {total / 2**30:.1f} GiB, more than the "
            f"{max_total_bytes / 2**30:.1f} GiB allowed"
        )
    for info, _ in members:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_CHECK_ABOVE and ratio > max_ratio:
            raise UserError(
                f"{info.filename!r} in the zip compresses {ratio:.0f}:1, which looks like a zip "
                f"bomb (at most {max_ratio:.0f}:1 allowed): refused"
            )
    return members


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
    zip_path: Path,
    *,
    max_files: int = MAX_FILES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_ratio: float = MAX_RATIO,
) -> Path:
    """Extract ``zip_path`` safely into a private folder keyed by its content; return the folder.

    The same zip extracted twice reuses the first extraction.
    """
    zip_path = Path(zip_path)
    digest = hashlib.sha256()
    with open(zip_path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    target = private_dir("models", "zips") / digest.hexdigest()[:16]
    if target.is_dir():
        return target
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as err:
        raise UserError(f"{zip_path.name} is not a readable zip file ({err})") from None
    staging = private_dir("models", "zips", f".partial-{uuid.uuid4().hex}")
    try:
        with zf:
            members = check_zip(zf, max_files=max_files, max_total_bytes=max_total_bytes, max_ratio=max_ratio)
            budget = max_total_bytes
            for info, rel in members:
                out = staging.joinpath(*rel.parts)
                out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                budget -= _copy_member(zf, info, out, budget)
        staging.rename(target)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise UserError(f"{zip_path.name} is a damaged zip file ({err})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def find_model_folder(root: Path) -> Path:
    """The shallowest folder under ``root`` holding a ``config.json`` (a zip may wrap one folder)."""
    configs = sorted(root.rglob("config.json"), key=lambda p: (len(p.parts), str(p)))
    if not configs:
        raise UserError("the zip holds no config.json: zip a Hugging Face model folder (config.json, "
                        "*.safetensors, tokenizer files)")
    return configs[0].parent
