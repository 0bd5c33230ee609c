"""An S3-compatible server on loopback (moto's server mode), started and stopped by the tests.

The credentials and endpoint go into the environment the way a user's would (the standard AWS
variables, `AWS_ENDPOINT_URL` for an S3-compatible server), so firedup's own code finds them as
it would in production; child processes (the CLI, Ray's workers) inherit them.
Under CI (`CI` set) a missing moto/s3fs fails the test, since `make test` installs `.[fleet]`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BUCKET = "fleet-logs"


def need(*modules: str) -> None:
    """Skip (fail under CI) when an optional dependency of the fleet tests is missing."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            reason = f"{name} is not installed (pip install -e '.[test,fleet]'; make test does it)"
            if os.environ.get("CI"):
                pytest.fail(f"the fleet tests must run in CI, but {reason}")
            pytest.skip(reason)


@dataclass
class S3:
    endpoint: str
    client: Any  # boto3's S3 client
    env: dict[str, str]

    def upload(self, folder: Path, prefix: str) -> list[str]:
        """Upload every file under `folder` to s3://BUCKET/prefix/...; their URLs, sorted."""
        urls = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            key = f"{prefix}/{path.relative_to(folder).as_posix()}"
            self.client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
            urls.append(f"s3://{BUCKET}/{key}")
        return urls


@contextmanager
def s3_server() -> Iterator[S3]:
    """moto's threaded server on 127.0.0.1 (a free port), one bucket; stopped on exit."""
    need("moto", "boto3", "s3fs", "flask")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                                            "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE")}
    try:
        host, port = server.get_host_and_port()
        env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
        os.environ.update(env)
        os.environ.pop("AWS_SESSION_TOKEN", None)
        os.environ.pop("AWS_PROFILE", None)
        import boto3
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()  # an earlier server's endpoint must not stick
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield S3(env["AWS_ENDPOINT_URL"], client, env)
    finally:
        server.stop()
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
