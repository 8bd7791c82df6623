#!/usr/bin/env python3
"""Shared indexes in an S3 prefix (issue 21, index_dir=s3://BUCKET/PREFIX) against the real
Ceph RGW of tests/s3/rgw.sh (ZMOUNT_S3_DIR, ctest fixture s3_rgw; a missing gateway FAILS).

Checks, each on a fresh mount with no local index directory of its own:
  - mount A reads a .gz object: its index is built and PUT under the prefix (a .zmi object);
  - mount B stats the object: the index comes from the prefix (indexes_loaded=1, none built),
    and the S3 GET bytes of the stat are a small part of the object (no full decode);
    reads at offsets give exact bytes;
  - the shared index with one bit of a span CRC32 flipped and PUT again: mount C does not
    load it (its CRC-64), logs one line about it, serves exact bytes, and puts back a good
    index;
  - the object overwritten with a version of the same size (another gzip MTIME, another
    ETag) and the old version's index PUT under the new version's name: mount D does not
    load it (made for another version), says so once, and serves exact bytes;
  - a local SRC with index_dir=s3://... and endpoint=: the first mount builds and PUTs the
    index, the second loads it;
  - `zmount-index build` of an s3:// object, into the prefix and into a local directory: a
    fresh mount of the bucket with that index_dir loads it (indexes_loaded=1, none built);
  - index_dir=s3://... on a local mount without endpoint=, and a missing bucket: exit 1,
    one line.
"""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from test_s3mount import Gateway, text_bytes, read_at, one_line_exit1  # noqa: E402


def get(gw, key):
    p = gw.curl([gw.url(key)])
    if p.returncode != 0:
        raise RuntimeError(f'GET {key}: {p.stderr.decode(errors="replace")}')
    return p.stdout


def put_bytes(gw, top, key, blob):
    path = os.path.join(top, 'upload.tmp')
    with open(path, 'wb') as f:
        f.write(blob)
    gw.put(key, path)


def index_keys(gw, prefix):
    """The .zmi keys under prefix (one ListObjectsV2 page is enough here)."""
    p = gw.curl([f'{gw.endpoint}/{gw.bucket}?list-type=2&prefix={prefix.replace("/", "%2F")}'])
    if p.returncode != 0:
        raise RuntimeError(f'LIST {prefix}: {p.stderr.decode(errors="replace")}')
    text = p.stdout.decode()
    return sorted(k for k in (s.split('</Key>')[0] for s in text.split('<Key>')[1:])
                  if k.endswith('.zmi'))


class Env:
    def __init__(self, args, res, gw, top):
        self.args, self.res, self.gw, self.top = args, res, gw, top
        self.pre = f'zm-s3index-{os.getpid()}-{int(time.time())}/'
        self.idxpre = self.pre + 'idx/'
        self.n = 0

    def mount(self, label):
        """A mount of the archives under pre/data with the shared prefix as index_dir."""
        self.n += 1
        mnt = os.path.join(self.top, f'mnt{self.n}')
        opts = (f'endpoint={self.gw.endpoint},credentials={self.gw.credfile},timeout=1,'
                f'span=256K,index_dir=s3://{self.gw.bucket}/{self.idxpre.rstrip("/")}')
        src = f's3://{self.gw.bucket}/{self.pre}data'
        return zmtest.Mount(self.args.zmount, src, mnt, opts, results=self.res, watchdog=300,
                            log_path=os.path.join(self.top, f'{label}.log'), mount_timeout=60,
                            label=label), mnt


def check_reads(res, name, path, want):
    """Exact size, reads at offsets and the whole file; an error is a failed check."""
    try:
        size = os.path.getsize(path)
        bad = [off for off in (0, 1, len(want) // 3, len(want) // 2 + 7, len(want) - 5000)
               if read_at(path, off, 4096) != want[off:off + 4096]]
        with open(path, 'rb') as f:
            same = f.read() == want
    except OSError as e:
        res.fail(f'{name}: exact size and bytes', f'{e}')
        return
    res.check(f'{name}: exact size and bytes', size == len(want) and not bad and same,
              f'size {size} want {len(want)}, bad offsets {bad}, whole equal {same}')


def run(env):
    res, gw, top = env.res, env.gw, env.top
    data = text_bytes(12 << 20, 7)
    blob = gzip.compress(data, 6)
    key = env.pre + 'data/a.log.gz'
    put_bytes(gw, top, key, blob)

    m, mnt = env.mount('A')
    with m:
        check_reads(res, 'A', os.path.join(mnt, 'a.log'), data)
        st = zmtest.stats(mnt)
        res.check('A built the index (indexes_built=1, loaded=0)',
                  st.get('indexes_built') == 1 and st.get('indexes_loaded') == 0, f'{st}')
    keys = index_keys(gw, env.idxpre)
    res.check('A put one .zmi object under the prefix', len(keys) == 1, f'{keys}')
    if len(keys) != 1:
        return
    good = get(gw, keys[0])

    m, mnt = env.mount('B')
    with m:
        size = os.path.getsize(os.path.join(mnt, 'a.log'))
        st = zmtest.stats(mnt)
        res.check('B stat: the shared index was loaded, nothing built',
                  size == len(data) and st.get('indexes_loaded') == 1
                  and st.get('indexes_built') == 0, f'size {size}, {st}')
        res.check('B stat fetched under a quarter of the object (no full decode)',
                  st.get('s3_bytes', 1 << 62) < len(blob) // 4,
                  f's3_bytes={st.get("s3_bytes")}, object {len(blob)} bytes')
        check_reads(res, 'B', os.path.join(mnt, 'a.log'), data)

    # One bit flipped in the second checkpoint's span_crc (doc/index-format.md), PUT again:
    # every value is valid there, so only the file's CRC-64 catches it before decoding would.
    bad = bytearray(good)
    path_len = int.from_bytes(good[60:64], 'little')
    bad[136 + path_len + 32 + 28] ^= 0x40
    put_bytes(gw, top, keys[0], bytes(bad))
    m, mnt = env.mount('C')
    with m:
        check_reads(res, 'C (tampered shared index)', os.path.join(mnt, 'a.log'), data)
        st = zmtest.stats(mnt)
        res.check('C did not load the tampered index, rebuilt it',
                  st.get('indexes_loaded') == 0 and st.get('indexes_built') == 1, f'{st}')
    lines = [ln for ln in m.log_lines() if 'saved index not usable' in ln]
    res.check('C logged one line for the tampered index, naming the object',
              len(lines) == 1 and 'a.log.gz' in lines[0] and 'checksum' in lines[0],
              '\n'.join(lines) or m.log_tail())
    res.check('C put a good index back', get(gw, keys[0]) == good)

    # Another version of the object, of the same size: only the gzip header's MTIME differs,
    # so the old index's offsets would even fit; it must still not be used (another ETag).
    data2 = data
    blob2 = blob[:4] + bytes(b ^ 0x5a for b in blob[4:8]) + blob[8:]
    put_bytes(gw, top, key, blob2)
    m, mnt = env.mount('D0')
    with m:
        check_reads(res, 'D0 (new version)', os.path.join(mnt, 'a.log'), data2)
    keys2 = [k for k in index_keys(gw, env.idxpre) if k != keys[0]]
    res.check('the new version has an index of its own', len(keys2) == 1, f'{keys2}')
    if len(keys2) != 1:
        return
    put_bytes(gw, top, keys2[0], good)
    m, mnt = env.mount('D')
    with m:
        check_reads(res, 'D (an index of another ETag)', os.path.join(mnt, 'a.log'), data2)
        st = zmtest.stats(mnt)
        res.check('D did not load the other version\'s index',
                  st.get('indexes_loaded') == 0 and st.get('indexes_built') == 1, f'{st}')
    lines = [ln for ln in m.log_lines() if 'saved index not usable' in ln]
    res.check('D said why, once', len(lines) == 1, '\n'.join(lines) or m.log_tail())


def check_local_mount(env):
    """A local SRC with index_dir=s3://...: the first mount PUTs the index, the next loads it."""
    res, gw, top = env.res, env.gw, env.top
    src = os.path.join(top, 'localsrc')
    os.makedirs(src, exist_ok=True)
    data = text_bytes(4 << 20, 9)
    with open(os.path.join(src, 'l.log.gz'), 'wb') as f:
        f.write(gzip.compress(data, 6))
    prefix = env.pre + 'idx-local'
    opts = (f'endpoint={gw.endpoint},credentials={gw.credfile},span=256K,noindex,'
            f'index_dir=s3://{gw.bucket}/{prefix}')
    for label, field in (('L1', 'indexes_built'), ('L2', 'indexes_loaded')):
        mnt = os.path.join(top, f'mnt{label}')
        with zmtest.Mount(env.args.zmount, src, mnt, opts, results=res, watchdog=300,
                          log_path=os.path.join(top, f'{label}.log'), label=label) as m:
            check_reads(res, f'{label} (local SRC)', os.path.join(mnt, 'l.log'), data)
            st = zmtest.stats(mnt)
            res.check(f'{label}: local SRC, shared index_dir: {field}=1', st.get(field) == 1,
                      f'{st}\n{m.log_tail()}')
    res.check('the local mount put its index under the prefix',
              len(index_keys(gw, prefix + '/')) == 1)


def check_tool_build(env):
    """zmount-index build s3://BUCKET/KEY -d s3://... or -d DIR: a fresh mount loads the index."""
    res, gw, top = env.res, env.gw, env.top
    data = text_bytes(6 << 20, 11)
    data_pre = env.pre + 'tooldata'
    put_bytes(gw, top, data_pre + '/t.log.gz', gzip.compress(data, 6))
    url = f's3://{gw.bucket}/{data_pre}/t.log.gz'
    for label, idx in (('T1', f's3://{gw.bucket}/{env.pre}idx-tool'),
                       ('T2', os.path.join(top, 'idx-tool'))):
        p = subprocess.run([env.args.zmount_index, 'build', '-d', idx, '--endpoint', gw.endpoint,
                            '--credentials', gw.credfile, url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        res.check(f'{label}: zmount-index build {url} -d {idx}',
                  p.returncode == 0 and 'built=1 fresh=0 failed=0' in p.stdout,
                  f'exit {p.returncode}: {p.stdout} {p.stderr}')
        mnt = os.path.join(top, f'mnt{label}')
        opts = (f'endpoint={gw.endpoint},credentials={gw.credfile},timeout=1,'
                f'index_dir={idx}')
        with zmtest.Mount(env.args.zmount, f's3://{gw.bucket}/{data_pre}', mnt, opts,
                          results=res, watchdog=300, mount_timeout=60, label=label,
                          log_path=os.path.join(top, f'{label}.log')) as m:
            size = os.path.getsize(os.path.join(mnt, 't.log'))
            st = zmtest.stats(mnt)
            res.check(f'{label}: a fresh mount loaded the tool\'s index, built none',
                      size == len(data) and st.get('indexes_loaded') == 1
                      and st.get('indexes_built') == 0, f'size {size}, {st}\n{m.log_tail()}')
            check_reads(res, label, os.path.join(mnt, 't.log'), data)


def check_bad_options(env):
    res, gw, top = env.res, env.gw, env.top
    local = os.path.join(top, 'local')
    os.makedirs(local, exist_ok=True)
    cases = [
        ('a local SRC without endpoint=', local,
         f'credentials={gw.credfile},index_dir=s3://{gw.bucket}/idx', 'endpoint'),
        ('a missing bucket', f's3://{gw.bucket}/x',
         f'endpoint={gw.endpoint},credentials={gw.credfile},index_dir=s3://no-such-zm-bucket/i',
         'no such bucket'),
        ('a relative path', local, 'index_dir=idx', 'bad index_dir'),
    ]
    for name, src, opts, word in cases:
        rc, lines, mounted = one_line_exit1(env.args.zmount, src, os.path.join(top, 'mntbad'),
                                            opts)
        res.check(f'index_dir with {name}: exit 1, one line', rc == 1 and len(lines) == 1
                  and word in lines[0] and not mounted, f'rc={rc} {lines}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--zmount-index', required=True)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    d = os.environ.get('ZMOUNT_S3_DIR', '')
    if not d or not os.path.isfile(os.path.join(d, 'endpoint')):
        res.fail('the RGW of tests/s3/rgw.sh is up', f'ZMOUNT_S3_DIR={d!r} has no endpoint file')
        return res.finish()
    top = tempfile.mkdtemp(prefix='zm-s3index-')
    env = Env(args, res, Gateway(d), top)
    try:
        run(env)
        check_local_mount(env)
        check_tool_build(env)
        check_bad_options(env)
    finally:
        zmtest.cleanup_top(top, args.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
