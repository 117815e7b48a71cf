#!/usr/bin/env python3
"""Small HTTP peers for tests/cli/mkfs-registry.bats, in front of a real
registry (docker-registry) or in its place for hostile answers.

Usage: registry-peer.py MODE --portfile FILE [--host ADDR] [--upstream URL]
                        [--log FILE] [options]

Every mode listens on ADDR (127.0.0.1) at a free port, written to
--portfile once it listens.  --log FILE gets one JSON line per request:
{"path": ..., "authorization": ...}.

  bearer   the token flow: answers 401 with a Bearer challenge (realm: its
           own /token) unless the request carries the token; /token gives
           {"token": ...} for Basic --user U:P; the rest goes upstream
  redirect Basic --user U:P demanded; blob GETs are redirected (307) to
           --to BASE (another host), the rest goes upstream
  plain    everything goes upstream (the other host of `redirect`)
  stall    blob GETs: the headers and half the body, then nothing (a line
           "stalled" in --log); the rest goes upstream
  nolength blobs without a Content-Length (the end: the connection's)
  flaky    the first GET of each blob answers 503
  hostile  /v2/ answers {}; manifests get --case huge (no Content-
           Length), hugelen, deep, mediatype or negsize
"""
import argparse
import base64
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.parse

TOKEN = "tok-3c9f2a"
LOCK = threading.Lock()
SEEN = set()


def log(args, handler):
    if not args.log:
        return
    with LOCK, open(args.log, "a") as f:
        f.write(json.dumps({"path": handler.path,
                            "authorization":
                            handler.headers.get("Authorization")}) + "\n")


def forward(h, args, half=False, length=True):
    u = urllib.parse.urlsplit(args.upstream)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    headers = {k: v for k, v in h.headers.items()
               if k.lower() in ("accept", "range")}
    conn.request(h.command, h.path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    h.send_response(r.status)
    for k in ("Content-Type", "Docker-Content-Digest", "Location",
              "WWW-Authenticate"):
        if r.getheader(k):
            h.send_header(k, r.getheader(k))
    if length:
        h.send_header("Content-Length", str(len(body)))
    else:
        h.send_header("Connection", "close")
        h.close_connection = True
    h.end_headers()
    if h.command == "HEAD":
        return
    if half:
        h.wfile.write(body[:len(body) // 2])
        h.wfile.flush()
        with LOCK, open(args.log, "a") as f:
            f.write("stalled\n")
        time.sleep(3600)
        return
    h.wfile.write(body)


def basic_ok(h, args):
    want = "Basic " + base64.b64encode(args.user.encode()).decode()
    return h.headers.get("Authorization") == want


def deny(h, challenge):
    body = b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}'
    h.send_response(401)
    h.send_header("WWW-Authenticate", challenge)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def send(h, status, body, ctype="application/json", length=True):
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    if length:
        h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)
    if not length:
        h.close_connection = True


def hostile_manifest(case):
    d = "sha256:" + "ab" * 32
    if case in ("huge", "hugelen"):
        return b"{" + b" " * (5 << 20) + b"}", case == "hugelen"
    if case == "deep":
        return b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}", True
    if case == "mediatype":
        return json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "config": {}, "layers": []}).encode(), True
    if case == "negsize":
        return json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": d, "size": 2},
            "layers": [{"mediaType":
                        "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": d, "size": -1}]}).encode(), True
    raise SystemExit("registry-peer: unknown case " + case)


def handler_for(args):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            log(args, self)
            blob = "/blobs/" in self.path
            if args.mode == "bearer":
                if self.path.startswith("/token"):
                    if not basic_ok(self, args):
                        return deny(self, 'Basic realm="token"')
                    return send(self, 200, json.dumps(
                        {"token": TOKEN}).encode())
                if self.headers.get("Authorization") != "Bearer " + TOKEN:
                    port = self.server.server_address[1]
                    return deny(self, 'Bearer realm="http://%s:%d/token",'
                                'service="test",scope="repository:t/img:pull"'
                                % (args.host, port))
                return forward(self, args)
            if args.mode == "redirect":
                if not basic_ok(self, args):
                    return deny(self, 'Basic realm="test"')
                if blob and self.command == "GET":
                    self.send_response(307)
                    self.send_header("Location", args.to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                return forward(self, args)
            if args.mode == "stall":
                return forward(self, args, half=blob)
            if args.mode == "flaky":
                with LOCK:
                    first = blob and self.path not in SEEN
                    SEEN.add(self.path)
                if first:
                    return send(self, 503, b'{"errors":[]}')
                return forward(self, args)
            if args.mode == "nolength":
                return forward(self, args, length=not blob)
            if args.mode == "hostile":
                if self.path == "/v2/":
                    return send(self, 200, b"{}")
                body, length = hostile_manifest(args.case)
                return send(self, 200, body,
                            "application/vnd.oci.image.manifest.v1+json",
                            length)
            return forward(self, args)
    return H


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["bearer", "redirect", "plain", "stall",
                                    "nolength", "flaky", "hostile"])
    p.add_argument("--portfile", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--upstream")
    p.add_argument("--log")
    p.add_argument("--user", default="user:pass")
    p.add_argument("--to")
    p.add_argument("--case")
    args = p.parse_args()
    srv = http.server.ThreadingHTTPServer((args.host, 0), handler_for(args))
    srv.daemon_threads = True
    with open(args.portfile + ".new", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    os.rename(args.portfile + ".new", args.portfile)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
