"""A real local OpenAI-compatible HTTP server with scripted answers, for the engine tests.

Each completion request takes the next action from the script (then the ``default`` action):

    {"content": "...", "reasoning": "..."}     one choice (chat: message.content; completion: text)
    {"choices": ["...", "..."]}                 several choices (for n > 1)
    {"status": 500, "body": "..."}             an HTTP error
    {"delay": 5.0, ...}                         sleep first (answers past the client's timeout)
    {"drop": true}                              close the connection without any response

``max_n`` (``--max-n``) makes it refuse ``n`` above it with a 400, as llama.cpp's server does.
Every request body is kept in ``requests`` (and appended to ``--log FILE`` as jsonl).

In tests: ``with FakeLLMServer(script=[...]) as srv: srv.url``. As a program it takes the
command-line shape of ``vllm serve MODEL --host H --port P``, so the engine manager can launch it:
``python tests/fake_llm_server.py MODEL --host 127.0.0.1 --port 8000 [--script FILE]``.
"""
from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLMServer:
    def __init__(self, script=None, *, model: str = "fake-model", default=None, max_n: int | None = None,
                 host: str = "127.0.0.1", port: int = 0, log_file: str | None = None,
                 ready_delay_s: float = 0.0):
        self.script = list(script or [])
        self.model = model
        self.default = default if default is not None else {"content": "I have no idea."}
        self.max_n = max_n
        self.requests: list[dict] = []
        self.log_file = log_file
        self.ready_at = time.monotonic() + ready_delay_s
        self.lock = threading.Lock()
        self.connections: set = set()
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def next_action(self) -> dict:
        with self.lock:
            return self.script.pop(0) if self.script else self.default

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r.get("_path", "").endswith("completions")]

    def _handler(self):
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):   # keep test output clean
                pass

            def setup(self):
                super().setup()
                with srv.lock:
                    srv.connections.add(self.connection)

            def finish(self):
                with srv.lock:
                    srv.connections.discard(self.connection)
                super().finish()

            def _send(self, status: int, obj) -> None:
                body = (obj if isinstance(obj, str) else json.dumps(obj)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if time.monotonic() < srv.ready_at:
                    return self._send(503, {"error": "loading"})
                if self.path.rstrip("/").endswith("/v1/models"):
                    return self._send(200, {"object": "list", "data": [
                        {"id": srv.model, "object": "model", "owned_by": "fake"}]})
                self._send(404, {"error": f"no route {self.path}"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._send(400, {"error": "bad json"})
                body["_path"] = self.path
                with srv.lock:
                    srv.requests.append(body)
                    if srv.log_file:
                        with open(srv.log_file, "a") as f:
                            f.write(json.dumps(body) + "\n")
                chat = self.path.endswith("/chat/completions")
                if not (chat or self.path.endswith("/completions")):
                    return self._send(404, {"error": f"no route {self.path}"})
                n = int(body.get("n") or 1)
                if srv.max_n is not None and n > srv.max_n:
                    return self._send(400, {"error": {"message": f"n > {srv.max_n} is not supported"}})
                action = srv.next_action()
                if action.get("delay"):
                    time.sleep(float(action["delay"]))
                if action.get("drop"):
                    # Close the socket with no response at all (a crashed or killed server).
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if action.get("status"):
                    return self._send(int(action["status"]), action.get("body", {"error": "scripted"}))
                texts = action.get("choices") or [action.get("content", "")]
                choices = []
                for i, text in enumerate(texts[:n]):
                    if chat:
                        msg = {"role": "assistant", "content": text}
                        if action.get("reasoning"):
                            msg["reasoning_content"] = action["reasoning"]
                        choices.append({"index": i, "message": msg, "finish_reason": "stop"})
                    else:
                        choices.append({"index": i, "text": text, "finish_reason": "stop"})
                self._send(200, {"id": "fake", "object": "chat.completion" if chat else "text_completion",
                                 "model": srv.model, "choices": choices})

        return Handler

    def start(self) -> "FakeLLMServer":
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        """Go away like a killed server: stop listening and cut the open keep-alive connections."""
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.lock:
            conns, self.connections = list(self.connections), set()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--script", help="json file: a list of actions")
    p.add_argument("--max-n", type=int, default=None)
    p.add_argument("--log", help="append request bodies to this jsonl file")
    p.add_argument("--ready-delay", type=float, default=0.0, help="answer 503 on /v1/models for this long")
    a = p.parse_args(argv)
    script = json.load(open(a.script)) if a.script else []
    srv = FakeLLMServer(script, model=a.model, max_n=a.max_n, host=a.host, port=a.port,
                        log_file=a.log, ready_delay_s=a.ready_delay)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
