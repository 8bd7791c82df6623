"""s3util.py -- the S3 side of the mount tests and of tools/bench/s3-bench.

Objects are written, listed and deleted with curl's own SigV4 signer
(`curl --aws-sigv4`, as tests/s3/rgw.sh does), never with zmount's client,
so a bug there cannot hide itself.  Standard library only.

  g = Gateway.from_dir(DIR)           # DIR as written by `tests/s3/rgw.sh up DIR`
  g.make_bucket('b')                  # idempotent
  g.put('b', 'k', data=b'...')        # or path=FILE
  g.put_many('b', [(key, path), ...]) # one curl, parallel transfers
  g.delete('b', 'k'); g.delete_many('b', keys); g.empty_bucket('b', 'prefix/')
  g.list('b', 'prefix/') -> [(key, size, etag)]
  p = FaultProxy(g.endpoint)          # tests/s3/faultproxy.py in front of it
  p.url, p.stats(), p.clear(), p.close()

Every call is bounded (curl --max-time) and raises S3Error with curl's
message on a failure.
"""
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
FAULTPROXY = os.path.join(HERE, 'faultproxy.py')
NS = '{http://s3.amazonaws.com/doc/2006-03-01/}'


class S3Error(Exception):
    pass


def quote_key(key):
    """The key as a URL path: every byte but RFC 3986's unreserved ones and
    '/' percent-encoded (what SigV4's canonical URI wants)."""
    return urllib.parse.quote(key, safe='/-_.~')


def conf_quote(text):
    """text as a double-quoted curl config value (curl unescapes these)."""
    for a, b in (('\\', '\\\\'), ('"', '\\"'), ('\n', '\\n'), ('\r', '\\r'), ('\t', '\\t')):
        text = text.replace(a, b)
    return f'"{text}"'


def read_credentials(path):
    keys = {}
    with open(path) as f:
        for line in f:
            name, eq, value = line.partition('=')
            if eq:
                keys[name.strip()] = value.strip()
    return keys['aws_access_key_id'], keys['aws_secret_access_key']


class Gateway:
    def __init__(self, endpoint, access, secret, bucket=None, credfile=None, region='us-east-1'):
        self.endpoint = endpoint.rstrip('/')
        self.access, self.secret = access, secret
        self.bucket = bucket
        self.credfile = credfile
        self.region = region

    @classmethod
    def from_dir(cls, d):
        def line(name):
            with open(os.path.join(d, name)) as f:
                return f.read().strip()
        cred = os.path.join(d, 'credentials')
        access, secret = read_credentials(cred)
        return cls(line('endpoint'), access, secret, line('bucket'), cred)

    def url(self, bucket, key='', endpoint=None):
        return f'{endpoint or self.endpoint}/{bucket}/{quote_key(key)}'

    def curl_args(self, timeout=60):
        # The secret goes through a config file on stdin, never argv.
        return ['curl', '-sS', '--fail-with-body', '--max-time', str(timeout),
                '--aws-sigv4', f'aws:amz:{self.region}:s3',
                '-H', 'x-amz-content-sha256: UNSIGNED-PAYLOAD', '-K', '-']

    def _user_conf(self):
        return f'user = {conf_quote(self.access + ":" + self.secret)}\n'

    def curl(self, args, timeout=60, conf='', capture=True):
        """Runs one signed curl; returns its stdout (bytes)."""
        p = subprocess.run(self.curl_args(timeout) + args, input=(self._user_conf() + conf).encode(),
                           stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=timeout + 30)
        if p.returncode:
            raise S3Error(f'curl {" ".join(a for a in args if a.startswith("http"))[:200]}: '
                          f'rc {p.returncode}: {p.stderr.decode(errors="replace").strip()[:300]} '
                          f'{(p.stdout or b"")[:300]!r}')
        return p.stdout

    def make_bucket(self, bucket):
        try:
            self.curl(['-X', 'PUT', self.url(bucket)])
        except S3Error as e:
            if 'BucketAlreadyExists' not in str(e) and 'BucketAlreadyOwnedByYou' not in str(e):
                raise

    def put(self, bucket, key, data=None, path=None, timeout=300):
        """PUT one object from data (bytes) or path; returns its ETag."""
        tmp = None
        if path is None:
            fd, tmp = tempfile.mkstemp(prefix='s3util-')
            with os.fdopen(fd, 'wb') as f:
                f.write(data)
            path = tmp
        try:
            out = self.curl(['-T', path, '-D', '-', '-o', '/dev/null', self.url(bucket, key)],
                            timeout=timeout)
        finally:
            if tmp:
                os.unlink(tmp)
        m = re.search(rb'(?im)^etag:\s*(\S+)', out)
        return m.group(1).decode().strip('"') if m else None

    def put_many(self, bucket, items, parallel=16, timeout=600):
        """PUTs every (key, path) of items with one curl running `parallel`
        transfers at once."""
        items = list(items)
        for i in range(0, len(items), 5000):
            conf = ''.join(f'upload-file = {conf_quote(p)}\nurl = {conf_quote(self.url(bucket, k))}\n'
                           f'output = "/dev/null"\n' for k, p in items[i:i + 5000])
            self.curl(['--parallel', '--parallel-max', str(parallel)], timeout=timeout, conf=conf)

    def delete_many(self, bucket, keys, parallel=16, timeout=600):
        """DELETEs every key with one curl running `parallel` transfers at once."""
        keys = list(keys)
        for i in range(0, len(keys), 5000):
            conf = ''.join(f'url = {conf_quote(self.url(bucket, k))}\noutput = "/dev/null"\n'
                           for k in keys[i:i + 5000])
            self.curl(['-X', 'DELETE', '--parallel', '--parallel-max', str(parallel)],
                      timeout=timeout, conf=conf)

    def delete(self, bucket, key):
        self.curl(['-X', 'DELETE', self.url(bucket, key)])

    def head(self, bucket, key):
        """(size, etag) of key, or None when it does not exist."""
        try:
            out = self.curl(['-I', self.url(bucket, key)])
        except S3Error as e:
            if ' 404' in str(e) or 'rc 22' in str(e):
                return None
            raise
        size = re.search(rb'(?im)^content-length:\s*(\d+)', out)
        etag = re.search(rb'(?im)^etag:\s*(\S+)', out)
        return int(size.group(1)), etag.group(1).decode().strip('"') if etag else None

    def list(self, bucket, prefix='', endpoint=None):
        """[(key, size, etag)] under prefix, every page of ListObjectsV2."""
        out, token = [], None
        while True:
            # curl 7.88 signs the query as given: sorted, no empty values.
            q = {'list-type': '2', 'max-keys': '1000', 'prefix': prefix,
                 'continuation-token': token}
            q = sorted((k, v) for k, v in q.items() if v)
            body = self.curl([f'{self.url(bucket, endpoint=endpoint)}?'
                              f'{urllib.parse.urlencode(q, quote_via=urllib.parse.quote)}'])
            root = ET.fromstring(body)
            for c in root.findall(NS + 'Contents'):
                out.append((c.findtext(NS + 'Key'), int(c.findtext(NS + 'Size')),
                            (c.findtext(NS + 'ETag') or '').strip('"')))
            if root.findtext(NS + 'IsTruncated') != 'true':
                return out
            token = root.findtext(NS + 'NextContinuationToken')

    def empty_bucket(self, bucket, prefix=''):
        self.delete_many(bucket, [key for key, _, _ in self.list(bucket, prefix)])


class FaultProxy:
    """tests/s3/faultproxy.py in front of endpoint (http://HOST:PORT); it
    dies with this process (its stdin is our pipe).  log: its request log."""

    def __init__(self, endpoint, schedule='', log=None):
        hostport = urllib.parse.urlsplit(endpoint).netloc
        self.proc = subprocess.Popen([sys.executable, FAULTPROXY, '--upstream', hostport,
                                      '--schedule', schedule] + (['--log', log] if log else []),
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        if len(line) != 2:
            self.close()
            raise S3Error(f'faultproxy.py did not start (said {line!r})')
        self.port, self.ctl_port = int(line[0]), int(line[1])
        self.url = f'http://127.0.0.1:{self.port}'

    def command(self, line):
        import socket
        with socket.create_connection(('127.0.0.1', self.ctl_port), timeout=10) as s:
            s.sendall(line.encode() + b'\n')
            f = s.makefile('r')
            return f.readline().strip()

    def stats(self):
        """{'requests': R, 'down': B, 'up': U, 'actions': A, 'connections': C}"""
        w = self.command('stats').split()
        return {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}

    def clear(self):
        return self.command('clear')

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
