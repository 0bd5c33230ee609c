"""Google Cloud Storage and Azure Blob emulators on loopback, started and stopped by the tests:
gcp-storage-emulator (PyPI, pure Python) for gs:// through gcsfs, Azurite (npm, installed by
`make test` into .venv/node) for az:// through adlfs. Each yields the environment a user would
set (STORAGE_EMULATOR_HOST; AZURE_STORAGE_CONNECTION_STRING), for firedup's child processes.
Skipped when the emulator or the fsspec backend is not installed; under CI (`CI` set) failed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from _s3 import _free_port, need, wait_for_port

ROOT = Path(__file__).resolve().parents[1]
# Azurite's well-known development account (public, in Microsoft's documentation)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def _stop(proc: subprocess.Popen[bytes], *, kill: bool = False) -> None:
    """Stop a server this module started. `kill`: at once (Azurite, in memory, has nothing to
    save, and on SIGTERM it waits for clients' idle connections to close)."""
    proc.kill() if kill else proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the emulator tests must run in CI, but {reason}")
    pytest.skip(reason)


@contextmanager
def gcs_server(bucket: str) -> Iterator[dict[str, str]]:
    """gcp-storage-emulator in its own process (its request log stays out of the test's
    output), in memory, with one bucket."""
    need("gcsfs", "gcp_storage_emulator")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1",
                             "--port", str(port), "--in-memory", "--default-bucket", bucket],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, "gcp-storage-emulator")
        # the emulator speaks the JSON API only: gcsfs's probe of the bucket's layout (a gRPC
        # API) would fail and warn on every call, so its experimental layer is turned off
        yield {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}", "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    finally:
        _stop(proc)


def azurite_command() -> str | None:
    """Azurite's blob server: installed by `make test` under .venv/node, else on PATH."""
    local = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "azurite-blob"
    return str(local) if local.exists() else shutil.which("azurite-blob")


@contextmanager
def azure_server(container: str) -> Iterator[dict[str, str]]:
    """Azurite's blob service, in memory, with one container."""
    need("adlfs")
    command = azurite_command()
    if command is None or shutil.which("node") is None:
        _missing("Azurite is not installed (npm install --prefix .venv/node azurite; make test does it)")
    port = _free_port()
    proc = subprocess.Popen([str(command), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
                             "--skipApiVersionCheck", "--silent"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, "azurite-blob")
        env = {"AZURE_STORAGE_CONNECTION_STRING": (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};")}
        from azure.storage.blob import BlobServiceClient

        BlobServiceClient.from_connection_string(env["AZURE_STORAGE_CONNECTION_STRING"]).create_container(container)
        yield env
    finally:
        _stop(proc, kill=True)
