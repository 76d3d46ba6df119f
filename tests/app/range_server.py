#!/usr/bin/env python3
"""A small HTTP server for the remote-input tests: serves one directory on 127.0.0.1 with HEAD and
byte-range GET (206 Partial Content), which Python's http.server lacks and GDAL's /vsicurl/ needs.
Prints "PORT <n>" once listening (port 0: any free one), writes the bytes it has sent to STATS (when
given) after every request, and exits when its stdin closes (the test that started it ends).

  python3 range_server.py DIR [PORT [STATS]]
"""
import http.server
import os
import re
import socketserver
import sys
import threading

ROOT = os.path.abspath(sys.argv[1])
STATS = sys.argv[3] if len(sys.argv) > 3 else None
served = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall

    def log_message(self, *args):  # quiet
        pass

    def _file(self):
        path = os.path.normpath(os.path.join(ROOT, self.path.split("?")[0].lstrip("/")))
        if not path.startswith(ROOT) or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return path

    def do_HEAD(self):
        path = self._file()
        if path is None:
            return
        self.send_response(200)
        self.send_header("Content-Length", str(os.path.getsize(path)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        global served
        path = self._file()
        if path is None:
            return
        size = os.path.getsize(path)
        first, last = 0, size - 1
        m = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if m:
            first = int(m.group(1))
            last = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if first >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(first)
            self.wfile.write(f.read(last - first + 1))
        with lock:
            served += last - first + 1
            if STATS:
                with open(STATS, "w") as out:
                    out.write(str(served))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    server = Server(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 else 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # until the test closes our stdin (or dies)
    server.shutdown()


if __name__ == "__main__":
    main()
