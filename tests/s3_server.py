"""An S3-compatible server on 127.0.0.1 for the tests of object storage (issue 32): moto in
server mode, started in a thread of the test session on a free port and stopped after it.
Nothing leaves the machine; the credentials are moto's made-up ones."""

import contextlib
import os
import socket
from dataclasses import dataclass

# moto accepts any key; these only have to be set, and the same for every client.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    region: str = CREDENTIALS["AWS_DEFAULT_REGION"]

    def client(self):
        """A boto3 S3 client of this server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name=self.region,
                            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])

    def storage(self, bucket, prefix):
        """Icechunk's storage of ``s3://bucket/prefix`` on this server, credentials from the
        environment (as a reader without pcskm opens it, docs/guide/hpc.md)."""
        import icechunk

        return icechunk.s3_storage(bucket=bucket, prefix=prefix, endpoint_url=self.endpoint_url,
                                   region=self.region, allow_http=True, force_path_style=True,
                                   from_env=True)

    def bucket(self, name):
        """Create bucket ``name``; returns the name."""
        self.client().create_bucket(Bucket=name)
        return name


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def s3_server():
    """Run a moto S3 server on 127.0.0.1 with the AWS variables of :data:`CREDENTIALS` and
    ``AWS_ENDPOINT_URL`` set (restored after); yields its :class:`S3Server`."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {name: os.environ.get(name) for name in (*CREDENTIALS, "AWS_ENDPOINT_URL")}
    os.environ.update({**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint})
    try:
        yield S3Server(endpoint)
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
