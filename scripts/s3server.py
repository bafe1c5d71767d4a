#!/usr/bin/env python3
"""A real S3-compatible server on loopback for tests and benchmarks: moto's server mode
(PyPI `moto[server]`), with request signing checked (an IAM user and its access key are
made first, so wrong credentials are refused as on AWS).

From Python:
    with MotoS3Server(aws_dir) as s3:      # writes aws_dir/config and aws_dir/credentials
        ... AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE point at them ...
From a shell:
    python scripts/s3server.py --aws-dir build/s3/aws --bucket data   # runs until killed
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

START_TIMEOUT = 60.0
REGION = "us-east-1"
# Requests moto serves unsigned before it starts checking signatures: the set-up below.
_SETUP_REQUESTS = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoS3Server:
    """moto's S3 on 127.0.0.1. `bucket` exists; `access_key`/`secret_key` are valid."""

    def __init__(self, aws_dir, bucket: str = "sparktf-test", log=None):
        self.aws_dir = Path(aws_dir).resolve()
        self.bucket = bucket
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.access_key = self.secret_key = ""
        self.log_path = Path(log) if log else self.aws_dir.parent / "moto.log"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "MotoS3Server":
        self.aws_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(_SETUP_REQUESTS),
                   AWS_ACCESS_KEY_ID="setup", AWS_SECRET_ACCESS_KEY="setup")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"moto did not start; see {self.log_path}")
                time.sleep(0.2)
        self._set_up()
        self._write_aws_files()
        return self

    def _set_up(self) -> None:
        import boto3

        kw = dict(endpoint_url=self.endpoint, region_name=REGION,
                  aws_access_key_id="setup", aws_secret_access_key="setup")
        iam = boto3.client("iam", **kw)
        iam.create_user(UserName="sparktf")
        iam.put_user_policy(UserName="sparktf", PolicyName="all", PolicyDocument=(
            '{"Version": "2012-10-17", "Statement": '
            '[{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'))
        key = iam.create_access_key(UserName="sparktf")["AccessKey"]
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]
        boto3.client("s3", **kw).create_bucket(Bucket=self.bucket)

    def _write_aws_files(self) -> None:
        (self.aws_dir / "config").write_text(
            f"[default]\nregion = {REGION}\nendpoint_url = {self.endpoint}\n")
        (self.aws_dir / "credentials").write_text(
            f"[default]\naws_access_key_id = {self.access_key}\n"
            f"aws_secret_access_key = {self.secret_key}\n")

    def env(self) -> dict:
        """Variables that point AWS clients (sparktf's too) at this server."""
        return {"AWS_CONFIG_FILE": str(self.aws_dir / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(self.aws_dir / "credentials"),
                "AWS_EC2_METADATA_DISABLED": "true"}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> "MotoS3Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--aws-dir", required=True)
    p.add_argument("--bucket", default="sparktf-test")
    a = p.parse_args(argv)
    s3 = MotoS3Server(a.aws_dir, a.bucket).start()
    print(f"S3 up: {s3.endpoint}, bucket s3://{s3.bucket}; " +
          " ".join(f"{k}={v}" for k, v in s3.env().items()), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (s3.stop(), sys.exit(0)))
    try:
        s3.proc.wait()
    except KeyboardInterrupt:
        s3.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
