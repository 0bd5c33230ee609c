"""Logs in object storage: `s3://`, `gs://` and `az://` URLs, listed and read through fsspec.

A fleet keeps its start-up logs in a bucket, not on the machine that reads them. fsspec is the
layer the data tools already share (polars, pandas, Ray Data, DuckDB's Python side), and its
backends take credentials from the usual places: the AWS variables and profiles (s3fs, with
`AWS_ENDPOINT_URL` for an S3-compatible server), Application Default Credentials (gcsfs), the
`AZURE_STORAGE_*` variables (adlfs). Nothing here is imported until a URL is given, so plain
paths never pay for it.

Listing is lazy in the sense that matters: a prefix or a glob lists keys (paginated by the
backend), never object bodies; an object is opened and streamed only when it is parsed.
"""

from __future__ import annotations

import hashlib
import io
from typing import TYPE_CHECKING, Any, BinaryIO

from firedup.errors import InputError

if TYPE_CHECKING:
    from firedup.read.source import Source

# URL scheme -> (fsspec protocol, the package that implements it)
SCHEMES = {
    "s3": ("s3", "s3fs"), "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"), "gcs": ("gcs", "gcsfs"),
    "az": ("az", "adlfs"), "abfs": ("abfs", "adlfs"), "abfss": ("abfs", "adlfs"),
}


def is_url(arg: str) -> bool:
    """True for an object-storage URL firedup reads (`s3://bucket/key`, `gs://...`, `az://...`)."""
    scheme, sep, _ = arg.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def _filesystem(url: str, **options: Any) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for `url`; InputError when its backend is missing.
    `options` go to the backend (the store turns its listings cache off: other writers)."""
    scheme, _, rest = url.partition("://")
    protocol, package = SCHEMES[scheme.lower()]
    try:
        import fsspec
    except ImportError:
        raise InputError(url, "object storage needs fsspec: pip install 'firedup[fleet]'") from None
    try:
        fs = fsspec.filesystem(protocol, **options)
    except ImportError:
        raise InputError(url, f"reading {scheme}:// needs {package}: pip install {package}") from None
    except Exception as exc:  # bad credentials configuration and the like: the backend's own words
        raise InputError(url, f"cannot open {scheme}:// ({type(exc).__name__}: {exc})") from None
    return fs, rest


def _has_magic(arg: str) -> bool:
    return any(ch in arg for ch in "*?[")


def expand_url(url: str, all_files: bool, suffixes: tuple[str, ...]) -> tuple[list[Source], list[InputError]]:
    """An object, a prefix (every log under it, like a directory) or a glob -> sources, sorted.

    Hidden keys (a part starting with ".") under a prefix are skipped, as in a directory."""
    from firedup.read.source import Source

    scheme = url.partition("://")[0]

    def as_url(key: str) -> str:
        return f"{scheme}://{key}"

    try:
        fs, path = _filesystem(url)
        if _has_magic(path):
            found = fs.glob(path, detail=True)
            if not found:
                return [], [InputError(url, "no object matches this pattern")]
            objects = {k: v for k, v in found.items() if v.get("type") == "file"}
        else:
            info = fs.info(path)
            if info.get("type") == "file":
                objects = {info["name"]: info}
            else:
                prefix = info["name"].rstrip("/") + "/"
                listed = fs.find(path, detail=True)
                objects = {
                    k: v for k, v in listed.items()
                    if (all_files or k.endswith(suffixes))
                    and not any(part.startswith(".") for part in k[len(prefix):].split("/"))
                }
                if not objects:
                    return [], [InputError(url, "prefix holds no log files (*.log, *.txt, *.out, *.gz; "
                                                "--all takes any file)")]
    except FileNotFoundError:
        return [], [InputError(url, "no such object or prefix")]
    except PermissionError as exc:
        return [], [InputError(url, f"permission denied ({exc})")]
    except InputError as exc:
        return [], [exc]
    except Exception as exc:  # the backend's errors (credentials, network) differ per library
        return [], [InputError(url, f"cannot list ({type(exc).__name__}: {exc})")]
    return [Source(as_url(k), None, url=as_url(k), mtime=_mtime(v)) for k, v in sorted(objects.items())], []


def filesystem(url: str, **options: Any) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for an object-storage URL: what the history store in
    a bucket (`tables.store`) writes and reads through. InputError when its backend is missing."""
    return _filesystem(url, **options)


def object_mtime(info: dict[str, Any]) -> float | None:
    """An object's last modification from a backend's listing (each names it differently)."""
    return _mtime(info)


def _mtime(info: dict[str, Any]) -> float | None:
    """The object's last modification (seconds since the epoch), which dates logs without years."""
    for key in ("LastModified", "mtime", "updated", "last_modified"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            from datetime import datetime

            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def open_url(source: Source, digest: hashlib._Hash | None = None) -> BinaryIO:
    """A buffered binary stream of the object (peekable, so gzip is told by its magic bytes).
    With `digest`, every byte read goes through it: the run id is the sha256 of the object's
    bytes, taken while reading, so an object is fetched once (see `read_lines`)."""
    assert source.url is not None
    fs, path = _filesystem(source.url)
    try:
        raw = fs.open(path, "rb")
    except FileNotFoundError:
        raise InputError(source.name, "no such object (gone since it was listed?)") from None
    except PermissionError as exc:
        raise InputError(source.name, f"permission denied ({exc})") from None
    except Exception as exc:
        raise InputError(source.name, f"cannot open ({type(exc).__name__}: {exc})") from None
    return io.BufferedReader(_Hashing(raw, digest), buffer_size=1 << 20)


class _Hashing(io.RawIOBase):
    """A raw stream over a backend's file object that feeds what it reads to a digest, and
    turns the backend's failures mid-read into OSError (which `read_lines` reports)."""

    def __init__(self, inner: Any, digest: hashlib._Hash | None) -> None:
        self._inner = inner
        self.digest = digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._inner.read(len(buffer))
        except OSError:
            raise
        except Exception as exc:
            raise OSError(f"read failed ({type(exc).__name__}: {exc})") from None
        n = len(data)
        buffer[:n] = data
        if self.digest is not None:
            self.digest.update(data)
        return n

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()


__all__ = ["SCHEMES", "expand_url", "filesystem", "is_url", "object_mtime", "open_url"]
