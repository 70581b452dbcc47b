"""An S3-compatible server on 127.0.0.1 for the tests of object storage (issue 32): moto in
server mode, started in a thread of the test session on a free port and stopped after it.
Nothing leaves the machine; the credentials are moto's made-up ones. :class:`Proxy` puts an
endpoint that can be cut in front of it (tests/test_s3_outages.py)."""

import contextlib
import os
import socket
import threading
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


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of the server at ``port``, which can be cut
    (:meth:`cut`): the listening socket closed, so that a new connection is refused, and every
    open connection closed, as an S3 endpoint that went down does; :meth:`restore` listens on
    the same port again (the server kept its state). ``outages`` counts the cuts, ``lost``
    the responses lost (:meth:`lose_response`)."""

    def __init__(self, port):
        self.target = ("127.0.0.1", port)
        self.port = _free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self.outages = 0
        self._losing = []  # request texts whose next request's response is lost, once each
        self.lost = 0  # responses lost
        self._lock = threading.Lock()
        self._open = set()
        self._listener = None
        self.restore()

    def restore(self):
        if self._listener is not None:  # listening already
            return
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self):
        listener, self._listener = self._listener, None
        if listener is None:  # cut already
            return
        listener.close()
        self.outages += 1
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def outage(self, seconds):
        """Cut now and restore after ``seconds`` (in a thread, returned)."""
        self.cut()
        timer = threading.Timer(seconds, self.restore)
        timer.start()
        return timer

    def lose_response(self, request):
        """The next request that begins with ``request`` (bytes: ``b"PUT /bucket/..."``)
        reaches the server, which acts on it, but its response is lost: the connection is
        closed instead, as by a network cut after the request went through."""
        with self._lock:
            self._losing.append(request)

    def close(self):
        if self._listener is not None:
            self.cut()

    def _accept(self, listener):
        while self._listener is listener:
            try:
                near, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            near.settimeout(None)
            try:
                far = socket.create_connection(self.target)
            except OSError:
                near.close()
                continue
            with self._lock:
                self._open.update((near, far))
            losing = threading.Event()  # a request of this connection loses its response
            for source, sink, request in ((near, far, True), (far, near, False)):
                threading.Thread(target=self._pump, args=(source, sink, request, losing),
                                 daemon=True).start()

    def _pump(self, source, sink, request, losing):
        try:
            while data := source.recv(65536):
                if request:
                    with self._lock:
                        found = next((r for r in self._losing if data.startswith(r)), None)
                        if found is not None:
                            self._losing.remove(found)
                            losing.set()
                elif losing.is_set():  # the server has answered: the answer goes nowhere
                    self.lost += 1
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
