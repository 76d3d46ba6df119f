#!/usr/bin/env python3
"""A small HTTP server for the remote-input tests: serves one directory on 127.0.0.1 with HEAD and
byte-range GET (206 Partial Content), which Python's http.server lacks and GDAL's /vsicurl/ needs.
Prints "PORT <n>" once listening (port 0: any free one), writes the bytes it has sent to STATS (when
given) after every request, and exits when its stdin closes (the test that started it ends).

  python3 range_server.py DIR [PORT [STATS]]

A path's first component picks a failure (the rest is the file under DIR); other paths are served:
  /norange/F  a server without range support: no Accept-Ranges, every GET answered 200 with all of F
  /reset/F    a GET whose answer covers F's middle byte sends its headers and the body up to that
              byte, then resets the connection (a connection cut mid-chunk)
  /loop/F     302 to /loop/F?again, which redirects back: a redirect loop
  /silent/F   HEAD answered; a GET is never answered (the connection held open 30 s): a stalled server
  /denied/K   403 with S3's AccessDenied XML: an S3 endpoint refusing bucket "denied" (GDAL's /vsis3/
              pointed here with AWS_S3_ENDPOINT, AWS_HTTPS=NO, AWS_VIRTUAL_HOSTING=FALSE)
"""
import http.server
import os
import re
import socket
import socketserver
import struct
import sys
import threading
import time

ROOT = os.path.abspath(sys.argv[1])
STATS = sys.argv[3] if len(sys.argv) > 3 else None
served = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall

    def log_message(self, *args):  # quiet
        pass

    def _mode(self):
        """The failure the path asks for ("" for none) and the path of the file it names."""
        path = self.path.split("?")[0].lstrip("/")
        mode, _, rest = path.partition("/")
        if mode in ("norange", "reset", "loop", "denied", "silent"):
            return mode, rest
        return "", path

    def _refuse(self, mode):
        """Answers a loop's redirect or S3's refusal; False for the other modes."""
        if mode == "loop":
            self.send_response(302)
            self.send_header("Location", self.path.split("?")[0] + ("" if self.path.endswith("?again") else "?again"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        if mode == "denied":
            body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                    b"<Message>Access Denied</Message><RequestId>0</RequestId></Error>")
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return True
        return False

    def _file(self, name):
        path = os.path.normpath(os.path.join(ROOT, name))
        if not path.startswith(ROOT) or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return path

    def do_HEAD(self):
        mode, name = self._mode()
        if self._refuse(mode):
            return
        path = self._file(name)
        if path is None:
            return
        self.send_response(200)
        self.send_header("Content-Length", str(os.path.getsize(path)))
        if mode != "norange":
            self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        global served
        mode, name = self._mode()
        if self._refuse(mode):
            return
        if mode == "silent":
            time.sleep(30)
            self.close_connection = True
            return
        path = self._file(name)
        if path is None:
            return
        size = os.path.getsize(path)
        first, last = 0, size - 1
        m = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if m and mode != "norange":
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
        if mode != "norange":
            self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        middle = size // 2
        cut = mode == "reset" and first <= middle <= last
        with open(path, "rb") as f:
            f.seek(first)
            self.wfile.write(f.read((middle if cut else last + 1) - first))
        if cut:
            # SO_LINGER with a zero timeout: close() sends RST, not FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
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
