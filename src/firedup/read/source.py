"""A named input: what `sources` opens and `remote` lists, apart from both so that neither
needs the other to name it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """A named input: a path on disk, an object in object storage (`url`), or "-" for stdin."""

    name: str
    path: Path | None  # None for stdin and for objects
    url: str | None = None  # s3://, gs://, az:// (firedup.read.remote), read through fsspec
    mtime: float | None = None  # an object's last modification, from its listing

    @property
    def is_gzip(self) -> bool:
        return self.name.endswith(".gz")

    @property
    def is_stdin(self) -> bool:
        return self.path is None and self.url is None


__all__ = ["Source"]
