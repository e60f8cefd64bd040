"""A TCP proxy on loopback that counts the chat-completion requests it passes on.

Why: a real server (llama-cpp-python's) does not say how many requests it was sent, and
"never sent twice" must be counted where the requests arrive, not where they leave. Each
connection is forwarded byte for byte to the upstream; one opening with
``POST /v1/chat/completions`` counts one (the app's client opens a connection per
request, without keep-alive).
"""

from __future__ import annotations

import socket
import threading


class CountingProxy:
    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        self.upstream = (host, upstream_port)
        self.chat_requests = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, name="counting-proxy", daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://{self.upstream[0]}:{self.port}/v1"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        first = client.recv(65536)
        if first.startswith(b"POST /v1/chat/completions"):
            with self._lock:
                self.chat_requests += 1
        upstream.sendall(first)
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
        _pipe(client, upstream)

    def close(self) -> None:
        self._closed = True
        self._listener.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy until either side closes; then close both, so the other side sees it too."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
