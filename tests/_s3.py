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


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: Any, what: str, timeout: float = 30.0) -> None:
    """Until something listens on 127.0.0.1:port (or fail, with the process's exit)."""
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited ({proc.returncode}) before listening")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@contextmanager
def locked_s3(bucket: str) -> Iterator[dict[str, dict[str, str]]]:
    """A second moto server on 127.0.0.1 that checks credentials and IAM policies (moto's
    INITIAL_NO_AUTH_ACTION_COUNT: its first requests, made here, set it up): one bucket and
    two users, "writer" (s3:*) and "reader" (s3:GetObject and s3:ListBucket only). Yields each
    user's environment (AWS_* variables)."""
    import json
    import subprocess
    import sys

    need("moto", "boto3", "s3fs", "flask")
    import boto3

    port = _free_port()
    setup_calls = 7  # create_bucket, then per user: create_user, put_user_policy, create_access_key
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(setup_calls)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, "moto_server")
        endpoint = f"http://127.0.0.1:{port}"
        kw = {"endpoint_url": endpoint, "region_name": "us-east-1", "aws_access_key_id": "setup",
              "aws_secret_access_key": "setup"}
        boto3.client("s3", **kw).create_bucket(Bucket=bucket)
        iam = boto3.client("iam", **kw)
        users = {}
        for user, actions in (("writer", ["s3:*"]), ("reader", ["s3:GetObject", "s3:ListBucket"])):
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName="store", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}))
            key = iam.create_access_key(UserName=user)["AccessKey"]
            users[user] = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}
        yield users
    finally:
        proc.terminate()
        proc.wait(10)
