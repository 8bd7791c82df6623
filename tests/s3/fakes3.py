#!/usr/bin/env python3
"""A fake S3 server on 127.0.0.1 for the tests that need a server to misbehave.

usage: fakes3.py MODE [KEY...]

It prints its port on stdout, then answers until killed (or stdin closes):
  - GET /BUCKET?list-type=2...: a ListObjectsV2 page of KEYs (prefix and
    delimiter '/' honoured, one page, all keys) in mode "keys"; in mode
    "repeat" every page is truncated and names the continuation token
    "same" again, with a new key each time (a server that never ends);
  - GET /_count: how many listing requests it answered so far;
  - GET /_auth: the Authorization header of the last other request;
  - HEAD or GET (Range honoured) of a KEY: "x\n", or for a KEY ending in
    .gz the gzip of "KEY\n" (ETag: the MD5 of KEY).
Signatures are not checked.  Standard library only.
"""
import gzip
import hashlib
import http.server
import re
import sys
import threading
import urllib.parse

MODE = sys.argv[1]
KEYS = sorted(sys.argv[2:])
count = 0
last_auth = ''
lock = threading.Lock()


def content(key):
    return gzip.compress(key.encode() + b'\n', mtime=0) if key.endswith('.gz') else b'x\n'


def etag(key):
    return '"' + hashlib.md5(key.encode()).hexdigest() + '"'


def listing(q):
    prefix = q.get('prefix', [''])[0]
    delim = q.get('delimiter', [''])[0]
    global count
    with lock:
        count += 1
        n = count
    if MODE == 'repeat':
        return ('<IsTruncated>true</IsTruncated>'
                f'<Contents><Key>{prefix}k{n:06d}</Key><Size>1</Size><ETag>"e"</ETag>'
                '<LastModified>2026-12-01T00:00:00.000Z</LastModified></Contents>'
                '<NextContinuationToken>same</NextContinuationToken>')
    body, dirs = '<IsTruncated>false</IsTruncated>', []
    for k in KEYS:
        if not k.startswith(prefix):
            continue
        rest = k[len(prefix):]
        if delim and delim in rest:
            d = prefix + rest[:rest.index(delim) + 1]
            if d not in dirs:
                dirs.append(d)
            continue
        body += (f'<Contents><Key>{k}</Key><Size>{len(content(k))}</Size><ETag>{etag(k)}</ETag>'
                 '<LastModified>2026-12-01T00:00:00.000Z</LastModified></Contents>')
    for d in dirs:
        body += f'<CommonPrefixes><Prefix>{d}</Prefix></CommonPrefixes>'
    return body


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def send(self, code, body, head_only=False, extra=(), tag='"e"'):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(code)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(data)))
        self.send_header('ETag', tag)
        self.send_header('Last-Modified', 'Tue, 01 Dec 2026 00:00:00 GMT')
        self.end_headers()
        if not head_only:
            self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path == '/_count':
            self.send(200, str(count))
            return
        if u.path == '/_auth':
            self.send(200, last_auth)
            return
        self.note_auth()
        q = urllib.parse.parse_qs(u.query)
        if 'list-type' in q:
            self.send(200, '<?xml version="1.0" encoding="UTF-8"?>\n'
                      '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                      + listing(q) + '</ListBucketResult>')
            return
        self.object(False)

    def do_HEAD(self):
        self.note_auth()
        self.object(True)

    def note_auth(self):
        global last_auth
        last_auth = self.headers.get('Authorization', '')

    def object(self, head_only):
        key = urllib.parse.unquote(self.path.split('/', 2)[-1])
        if key in KEYS:
            data = content(key)
            m = re.match(r'bytes=(\d+)-(\d+)', self.headers.get('Range', ''))
            if m and not head_only:
                a, b = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
                if a >= len(data):
                    self.send(416, '')
                    return
                self.send(206, data[a:b + 1], extra=[
                    ('Content-Range', f'bytes {a}-{b}/{len(data)}')], tag=etag(key))
                return
            self.send(200, data, head_only, tag=etag(key))
        else:
            self.send(404, '<Error><Code>NoSuchKey</Code></Error>', head_only)


srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
srv.daemon_threads = True
print(srv.server_address[1], flush=True)
threading.Thread(target=srv.serve_forever, daemon=True).start()
sys.stdin.read()  # until the test closes it or kills us
