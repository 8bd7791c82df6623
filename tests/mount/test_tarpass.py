#!/usr/bin/env python3
"""test_tarpass.py -- -o tar: a .tar.gz's member table comes from its gzip index pass (issue 34
item 3, "one pass"): no decode of its own.

usage: test_tarpass.py --zmount PATH [--keep]

Source: a GNU tar of MEMBERS log files of MEMBER_SIZE bytes (48 MiB), as x.tar.gz (gzip -1),
and as x.tar.zst (zstd from a pipe: one frame that states no size, measured at open).
In each mount (cache_size=16M, index_dir=none: nothing saved) the test lists x.tar/ and
reads the last member, then reads user.zmount.stats:
  noindex: the lookup's open runs the pass, and its scan waits for it;
  indexer: the background indexer runs the pass (warm_bytes 0), maybe before the lookup, or
      the lookup's open does if it comes first (seen in CI once mounts started sooner): so
      both bound decoded_bytes by the open's warm share;
each: the listing is tar -t's and the member tar -xO's; one gzip pass ran (indexes_built 1),
      the table was filled by it (tar_pass_tables 1), and decoded_bytes, which counts the
      bytes readers decoded plus the pass's first cache_size/2 kept in the cache (not the
      rest of the pass), is at most that warm share + the member + 2 spans.  A table
      scanned through the reader decodes the whole tar once more (about 48 MiB here).
zstd indexer: the same over x.tar.zst, whose measuring pass (which builds its checkpoints
      unless noindex) fills the table; its bytes are counted: decoded_bytes at most the
      tar + the member + one checkpoint span + 1 MiB (before: twice the tar).
zstd noindex: the same with noindex: the measuring pass builds no checkpoints, but it still
      fills the table: decoded_bytes once the listing is done at most the tar + 1 MiB
      (before 2026-12-05 the table was scanned through the reader, tar_pass_tables 0: the
      listing decoded the tar twice).  Not bounded after the member's read, which decodes
      from the frame's start, and more than once when two of the kernel's reads race
      there (3x the tar under ASan).
xz: the same tar as one xz Block (xz -1 -T1: wide, so it gets checkpoints) under xsrc. No
      pass runs at open for xz: the table is scanned through the reader, whose decode from
      the Block's start also builds the checkpoints (a reader's decode is the checkpoint
      pass): once the set is there (checkpoints > 0), decoded_bytes is at most the
      tar + the member + 2 slices (a restart at the Block's start), not the tar twice.
saved: a mount with an index_dir of the test, left alone until its indexer's pass has
      ended (nobody asked for the table): the pass saved the table (one .zmt) and kept
      nothing in memory (tar_tables 0); a lookup then loads it (tar_pass_tables stays 0).
unasked: index_dir=none, cache_size=16M (a cap of 4 MiB), four .tar.gz of 20,000 empty
      files each (about 3.6 MiB of table and view each): the indexer's passes fill their
      tables, which nobody lists; once it is done they hold at most the cap together
      (tar_table_bytes), and a listing of each tar is still whole (a dropped table is
      scanned again).  Before 2026-12-04 all four were kept (about 15 MiB).
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import gzip
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

MiB = 1 << 20
MEMBERS = 24
MEMBER_SIZE = 2 * MiB
CACHE = 16 * MiB
SPAN = MiB  # the gzip checkpoint spacing (default)
CK_SPAN = 16 * MiB  # checkpoints inside a zstd frame (default)


def make_tar(top, src, zsrc):
    """x.tar.gz under src and x.tar.zst under zsrc (zstd from a pipe: one frame, no size
    stated) from MEMBERS log files; returns (tar size, names, last, its bytes)."""
    rnd = random.Random(34)
    tree = os.path.join(top, 'tree', 'logs')
    os.makedirs(tree)
    words = [b'GET', b'POST', b'/api/v1/items', b'/login', b'200', b'404', b'500', b'ok',
             b'user=alice', b'user=bob', b'latency_ms', b'retry', b'cache', b'miss']
    for i in range(MEMBERS):
        lines, size = [], 0
        while size < MEMBER_SIZE:
            ln = b'%010d %s\n' % (rnd.randrange(1 << 30),
                                  b' '.join(rnd.choice(words) for _ in range(rnd.randint(3, 9))))
            lines.append(ln)
            size += len(ln)
        with open(os.path.join(tree, f'app-{i:03d}.log'), 'wb') as f:
            f.write(b''.join(lines)[:MEMBER_SIZE])
    raw = subprocess.run(['tar', '-C', os.path.join(top, 'tree'), '--format=gnu', '--sort=name',
                          '-cf', '-', 'logs'], stdout=subprocess.PIPE, check=True).stdout
    gz = subprocess.run(['gzip', '-1', '-n', '-c'], input=raw, stdout=subprocess.PIPE,
                        check=True).stdout
    with open(os.path.join(src, 'x.tar.gz'), 'wb') as f:
        f.write(gz)
    zst = subprocess.run(['zstd', '-q', '-c'], input=raw, stdout=subprocess.PIPE,
                         check=True).stdout
    with open(os.path.join(zsrc, 'x.tar.zst'), 'wb') as f:
        f.write(zst)
    xz = subprocess.run(['xz', '-1', '-T1', '-c'], input=raw, stdout=subprocess.PIPE,
                        check=True).stdout
    with open(os.path.join(os.path.dirname(src), 'xsrc', 'x.tar.xz'), 'wb') as f:
        f.write(xz)
    shutil.rmtree(os.path.join(top, 'tree'))
    names = subprocess.run(['tar', '-tzf', os.path.join(src, 'x.tar.gz')],
                           stdout=subprocess.PIPE, check=True).stdout.decode().split()
    last = names[-1]
    data = subprocess.run(['tar', '-xzOf', os.path.join(src, 'x.tar.gz'), last],
                          stdout=subprocess.PIPE, check=True).stdout
    return len(raw), names, last, data


def shown(mnt):
    """Every path under MNT/x.tar, as tar -t names them (directories with a slash)."""
    out = []
    top = os.path.join(mnt, 'x.tar')
    for d, dirs, files in os.walk(top):
        rel = os.path.relpath(d, top)
        if rel != '.':
            out.append(rel + '/')
        out.extend(os.path.join(rel, n) if rel != '.' else n for n in files)
    return sorted(out)


def one_mount(res, zmount, src, mnt, label, opts, tar_size, names, last, data):
    with zmtest.Mount(zmount, src, mnt, opts=opts, results=res, label=label):
        got = shown(mnt)
        listed = zmtest.stats(mnt).get('decoded_bytes', -1)
        res.check(f'{label}: the listing is tar -t', got == sorted(names),
                  f'{len(got)} shown, {len(names)} in tar -t')
        with open(os.path.join(mnt, 'x.tar', last), 'rb') as f:
            body = f.read()
        res.check(f'{label}: the last member is tar -xO', body == data,
                  f'{len(body)} bytes read, {len(data)} wanted')
        st = zmtest.stats(mnt)
    dec = st.get('decoded_bytes', -1)
    if label == 'zstd noindex':
        # the measuring pass alone, counted before the member's read
        bound, dec = tar_size + SPAN, listed
    elif label.startswith('zstd'):
        # the measuring pass counts its bytes; the member is read from a checkpoint
        bound = tar_size + len(data) + CK_SPAN + SPAN
    else:
        bound = CACHE // 2 + len(data) + 2 * SPAN
    when = ' once listed' if label == 'zstd noindex' else ''
    res.note(f'{label}: tar {tar_size} B; decoded_bytes{when} {dec} ({dec / tar_size:.2f}x the tar; '
             f'a gzip pass is not counted there, a zstd one is), indexes_built {st.get("indexes_built")}, '
             f'tar_pass_tables {st.get("tar_pass_tables")}, '
             f'tar_scanned_bytes {st.get("tar_scanned_bytes")}')
    res.check(f'{label}: one pass', st.get('indexes_built') == 1,
              f'indexes_built={st.get("indexes_built")}')
    res.check(f'{label}: the pass filled the member table', st.get('tar_pass_tables') == 1,
              f'tar_pass_tables={st.get("tar_pass_tables")}')
    res.check(f'{label}: no decode for the table: decoded_bytes <= {bound}', 0 <= dec <= bound,
              f'decoded_bytes={dec}: {dec / tar_size:.2f}x the tar')
    res.check(f'{label}: the table was fed the tar once', 0 < st.get('tar_scanned_bytes', 0)
              <= tar_size, f'tar_scanned_bytes={st.get("tar_scanned_bytes")}')


def xz_mount(res, zmount, xsrc, mnt, tar_size, names, last, data):
    label = 'xz'
    with zmtest.Mount(zmount, xsrc, mnt, opts='tar,cache_size=16M,index_dir=none',
                      results=res, label=label):
        got = shown(mnt)
        res.check(f'{label}: the listing is tar -t', got == sorted(names),
                  f'{len(got)} shown, {len(names)} in tar -t')
        with open(os.path.join(mnt, 'x.tar', last), 'rb') as f:
            body = f.read()
        res.check(f'{label}: the last member is tar -xO', body == data, f'{len(body)} bytes')
        deadline = time.monotonic() + 60
        st = zmtest.stats(mnt)
        while time.monotonic() < deadline and st.get('checkpoints', 0) == 0:
            time.sleep(0.2)
            st = zmtest.stats(mnt)
        time.sleep(1)  # a second pass, if one started, would show in decoded_bytes
        st = zmtest.stats(mnt)
    res.check(f'{label}: the Block got its checkpoints', st.get('checkpoints', 0) > 0,
              f'checkpoints={st.get("checkpoints")}')
    dec = st.get('decoded_bytes', -1)
    # the member, read after the scan, and what a reader's decode that restarts at the Block's
    # start to build the set decodes again (udec_restart: at most half the Block, 2 slices here)
    bound = tar_size + len(data) + 2 * 2 * MiB
    res.note(f'{label}: tar {tar_size} B; decoded_bytes {dec} ({dec / tar_size:.2f}x the tar)')
    res.check(f'{label}: the scan\'s decode built the checkpoints: decoded_bytes <= {bound}',
              0 <= dec <= bound, f'decoded_bytes={dec}: {dec / tar_size:.2f}x the tar')


def saved_mount(res, zmount, src, mnt, idx, last, data):
    label = 'saved'
    with zmtest.Mount(zmount, src, mnt, opts=f'tar,cache_size=16M,index_dir={idx}',
                      results=res, label=label):
        deadline = time.monotonic() + 60
        st = zmtest.stats(mnt)
        while time.monotonic() < deadline and not (st.get('indexes_built') == 1 and
                                                   st.get('tar_scanning') == 0 and
                                                   any(n.endswith('.zmt')
                                                       for n in os.listdir(idx))):
            time.sleep(0.1)
            st = zmtest.stats(mnt)
        zmt = [n for n in os.listdir(idx) if n.endswith('.zmt')]
        res.check(f'{label}: the indexer\'s pass saved the table nobody asked for',
                  len(zmt) == 1, f'index_dir holds {sorted(os.listdir(idx))}')
        res.check(f'{label}: and kept none in memory', st.get('tar_tables') == 0,
                  f'tar_tables={st.get("tar_tables")}')
        with open(os.path.join(mnt, 'x.tar', last), 'rb') as f:
            body = f.read()
        res.check(f'{label}: the last member is tar -xO', body == data, f'{len(body)} bytes')
        st = zmtest.stats(mnt)
        res.check(f'{label}: the lookup loaded the saved table',
                  st.get('tar_pass_tables') == 0 and st.get('tar_tables') == 1,
                  f'tar_pass_tables={st.get("tar_pass_tables")}, '
                  f'tar_tables={st.get("tar_tables")}')


def unasked_mount(res, zmount, top, mnt):
    label, n, ntars = 'unasked', 20000, 4
    usrc = os.path.join(top, 'usrc')
    os.makedirs(usrc)
    for t in range(ntars):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as tf:
            for i in range(n):
                ti = tarfile.TarInfo(f'd{i // 1000:02d}/f{i:06d}')
                ti.mtime = 1700000000
                tf.addfile(ti)
        with open(os.path.join(usrc, f'u{t}.tar.gz'), 'wb') as f:
            f.write(gzip.compress(buf.getvalue(), compresslevel=1, mtime=0))
    with zmtest.Mount(zmount, usrc, mnt, opts='tar,cache_size=16M,index_dir=none',
                      results=res, label=label):
        deadline = time.monotonic() + 120
        st = zmtest.stats(mnt)
        while time.monotonic() < deadline and not (st.get('indexes_built') == ntars and
                                                   st.get('tar_scanning') == 0):
            time.sleep(0.1)
            st = zmtest.stats(mnt)
        res.note(f'{label}: tar_tables {st.get("tar_tables")}, tar_table_bytes '
                 f'{st.get("tar_table_bytes")}, tar_pass_tables {st.get("tar_pass_tables")}')
        res.check(f'{label}: the indexer passed over the {ntars} tars',
                  st.get('indexes_built') == ntars, f'indexes_built={st.get("indexes_built")}')
        res.check(f'{label}: the tables nobody asked for hold at most cache_size/4',
                  0 <= st.get('tar_table_bytes', -1) <= 4 * MiB,
                  f'tar_table_bytes={st.get("tar_table_bytes")}')
        for t in range(ntars):
            got = sum(len(fs) for _, _, fs in os.walk(os.path.join(mnt, f'u{t}.tar')))
            res.check(f'{label}: u{t}.tar lists its {n} members', got == n, f'{got}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    top = tempfile.mkdtemp(prefix='zm-tarpass-')
    try:
        src, zsrc, xsrc, mnt, idx = (os.path.join(top, d)
                                     for d in ('src', 'zsrc', 'xsrc', 'mnt', 'idx'))
        for d in (src, zsrc, xsrc, mnt, idx):
            os.makedirs(d)
        tar_size, names, last, data = make_tar(top, src, zsrc)
        for label, where, opts in (
                ('noindex', src, 'tar,cache_size=16M,index_dir=none,noindex'),
                ('indexer', src, 'tar,cache_size=16M,index_dir=none'),
                ('zstd indexer', zsrc, 'tar,cache_size=16M,index_dir=none'),
                ('zstd noindex', zsrc, 'tar,cache_size=16M,index_dir=none,noindex')):
            one_mount(res, args.zmount, where, mnt, label, opts, tar_size, names, last, data)
        xz_mount(res, args.zmount, xsrc, mnt, tar_size, names, last, data)
        saved_mount(res, args.zmount, src, mnt, idx, last, data)
        unasked_mount(res, args.zmount, top, mnt)
    finally:
        zmtest.cleanup_top(top, args.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
