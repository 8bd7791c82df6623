#!/usr/bin/env python3
"""test_rotate.py -- saved indexes survive a logrotate rename (issue 20, item 2).

usage: test_rotate.py --zmount PATH [--seed N] [--keep]

1. SRC holds a live plain log x.log, five gzip files x.log.1.gz ... x.log.5.gz
   (several MiB each, so each gets an index) and one one-Block y.log.1.xz of
   6 MiB, wide enough for checkpoints at span=64K.  x.log.3.gz is three
   members: text, 2 MiB stored (deflate level 0) random bytes, text.
2. Mount with index_dir=IDX,span=64K and wait for the background indexer:
   5 gzip indexes and the xz's checkpoints are built and saved (5 .zmi and
   1 .zmc files in IDX); unmount.
3. Rotate as logrotate does: each x.log.N.gz to x.log.N+1.gz from the oldest
   down, y.log.1.xz to y.log.2.xz, and the live x.log to x.log.1.  Renames
   move ctime and change the path the indexes were saved for.
4. Remount: the background indexer must build no gzip index and no
   checkpoint (user.zmount.stats: indexes_built == 0, checkpoints == 0,
   indexes_loaded == 6; the log's summary says 5 loaded), and every file
   reads back exactly (the xz also by reads in the middle of its Block).
5. Renamed AND rewritten: x.log.4.gz (the three-member one) is replaced by
   a file with other bytes in the stored middle member -- the same size, the
   same first and last 4 KiB, and its old mtime put back (touch -r) -- under
   a new name.  Remount: that index must not be used (one built, the log
   says why: other bytes), the other four are loaded, and the bytes are
   the new file's.
Every mount ends with fusermount3 -u and daemon exit 0.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import gzip
import lzma
import os
import random
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

MiB = 1 << 20
OPTS = 'span=64K,cache_size=64M'


def text(seed, size):
    """Pseudo-random log-like lines, size bytes."""
    r = random.Random(seed)
    words = [''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(r.randint(2, 9)))
             for _ in range(2000)]
    out, n = [], 0
    while n < size:
        line = f'{n:012d} ' + ' '.join(r.choices(words, k=12)) + '\n'
        out.append(line)
        n += len(line)
    return ''.join(out).encode()[:size]


def gz(data, level=6):
    return gzip.compress(data, compresslevel=level, mtime=0)


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def index_files(idx, ext):
    try:
        return sorted(n for n in os.listdir(idx) if n.endswith(ext) and not n.startswith('.'))
    except OSError:
        return []


def wait_indexer(m, want_loaded, deadline=180):
    """Waits (deadline) until the background indexer is done with the gzip
    files (its summary line) and with the xz file: its checkpoints built and
    saved (their summary line, logged after the saves), or want_loaded
    indexes loaded.  Returns the stats then."""
    t = time.monotonic() + deadline
    s = {}
    while time.monotonic() < t and m.alive():
        s = zmtest.stats(m.mnt)
        lines = m.log_lines()
        gz_done = any('background indexing done' in ln for ln in lines)
        ck_done = any('checkpoints inside xz Blocks' in ln for ln in lines)
        if gz_done and (ck_done or s.get('indexes_loaded', 0) >= want_loaded):
            return s
        time.sleep(0.1)
    return s


def read_exact(res, tag, path, data):
    try:
        with open(path, 'rb') as f:
            got = f.read()
    except OSError as e:
        res.fail(f'{tag}: read {os.path.basename(path)}', zmtest.errno_name(e.errno))
        return
    res.check(f'{tag}: {os.path.basename(path)} reads back exactly ({len(data)} bytes)',
              got == data, f'{len(got)} bytes, first difference at '
              f'{next((i for i, (a, b) in enumerate(zip(got, data)) if a != b), min(len(got), len(data)))}')


def read_middle(res, tag, path, data):
    """Reads of 64 KiB at a few offsets inside the Block: served from checkpoints."""
    fd = os.open(path, os.O_RDONLY)
    try:
        for off in (len(data) // 2, len(data) * 3 // 4, len(data) // 5):
            got = os.pread(fd, 65536, off)
            res.check(f'{tag}: {os.path.basename(path)} pread at {off}',
                      got == data[off:off + 65536], f'{len(got)} bytes differ')
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--seed', type=int, default=20)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    top = tempfile.mkdtemp(prefix='zmount-rotate-')
    try:
        run(args, res, top)
    finally:
        zmtest.cleanup_top(top, args.keep)
    return res.finish()


def run(args, res, top):
    src, idx, mnt = (os.path.join(top, d) for d in ('src', 'idx', 'mnt'))
    os.mkdir(src)
    t0 = time.monotonic()
    plain = {}  # name in the mount -> bytes
    for n in range(1, 6):
        data = text(args.seed + n, 4 * MiB + 1000 * n)
        if n == 3:
            head, tail = text(args.seed + 30, 256 << 10), text(args.seed + 31, 256 << 10)
            mid = random.Random(args.seed + 32).randbytes(2 * MiB)
            data = head + mid + tail
            blob = gz(head) + gz(mid, 0) + gz(tail)
        else:
            blob = gz(data)
        write(os.path.join(src, f'x.log.{n}.gz'), blob)
        plain[f'x.log.{n}'] = data
    ydata = text(args.seed + 40, 6 * MiB)
    write(os.path.join(src, 'y.log.1.xz'), lzma.compress(ydata, preset=1))  # one Block
    plain['y.log.1'] = ydata
    live = text(args.seed + 50, 100000)
    write(os.path.join(src, 'x.log'), live)
    print(f'# generated 5 gzip files, a one-Block xz and a live log in '
          f'{time.monotonic() - t0:.1f} s', flush=True)
    opts = f'{OPTS},index_dir={idx}'
    tag = 'first mount'
    with zmtest.Mount(args.zmount, src, mnt, opts=opts, results=res, watchdog=300,
                      log_path=os.path.join(top, 'daemon-1.log')) as m:
        s = wait_indexer(m, 99)
        print(f'#   {tag}: {s}', flush=True)
        res.check(f'{tag}: 5 gzip indexes built', s.get('indexes_built') == 5, str(s))
        res.check(f'{tag}: checkpoints built in the xz Block', s.get('checkpoints', 0) > 0,
                  str(s))
    zmi, zmc = index_files(idx, '.zmi'), index_files(idx, '.zmc')
    res.check('first mount saved 5 .zmi files', len(zmi) == 5, str(zmi))
    res.check('first mount saved 1 .zmc file', len(zmc) == 1, str(zmc))

    # logrotate: oldest first, so that no rename replaces a file
    for n in range(5, 0, -1):
        os.rename(os.path.join(src, f'x.log.{n}.gz'), os.path.join(src, f'x.log.{n + 1}.gz'))
    os.rename(os.path.join(src, 'y.log.1.xz'), os.path.join(src, 'y.log.2.xz'))
    os.rename(os.path.join(src, 'x.log'), os.path.join(src, 'x.log.1'))
    rotated = {f'x.log.{n + 1}': plain[f'x.log.{n}'] for n in range(1, 6)}
    rotated['y.log.2'] = ydata
    rotated['x.log.1'] = live

    tag = 'after logrotate'
    with zmtest.Mount(args.zmount, src, mnt, opts=opts, results=res, watchdog=300,
                      log_path=os.path.join(top, 'daemon-2.log')) as m:
        s = wait_indexer(m, 6)
        print(f'#   {tag}: {s}', flush=True)
        res.check(f'{tag}: no gzip index built (indexes_built == 0)',
                  s.get('indexes_built') == 0, str(s))
        res.check(f'{tag}: no checkpoint built (checkpoints == 0)',
                  s.get('checkpoints') == 0, str(s))
        res.check(f'{tag}: 5 gzip indexes and 1 checkpoint file loaded (indexes_loaded == 6)',
                  s.get('indexes_loaded') == 6, str(s))
        summary = [ln for ln in m.log_lines() if 'background indexing done' in ln]
        res.check(f'{tag}: the summary says 0 built, 5 loaded',
                  len(summary) == 1 and '0 built, 5 loaded' in summary[0],
                  '\n'.join(summary) or 'no summary line')
        for name, data in sorted(rotated.items()):
            read_exact(res, tag, os.path.join(mnt, name), data)
        read_middle(res, tag, os.path.join(mnt, 'y.log.2'), ydata)
        s = zmtest.stats(m.mnt)
        res.check(f'{tag}: reading built nothing either', s.get('indexes_built') == 0
                  and s.get('checkpoints') == 0, str(s))
    res.check(f'{tag}: still 5 .zmi and 1 .zmc files (rebound, not added)',
              len(index_files(idx, '.zmi')) == 5 and len(index_files(idx, '.zmc')) == 1,
              str(os.listdir(idx)))

    # renamed AND rewritten: other bytes in the middle, same size, ends and mtime
    old = os.path.join(src, 'x.log.4.gz')
    st = os.stat(old)
    head, tail = text(args.seed + 30, 256 << 10), text(args.seed + 31, 256 << 10)
    mid = random.Random(args.seed + 33).randbytes(2 * MiB)
    blob = gz(head) + gz(mid, 0) + gz(tail)
    with open(old, 'rb') as f:
        was = f.read()
    res.check('forged file: same size and first and last 4 KiB, other bytes',
              len(blob) == len(was) and blob[:4096] == was[:4096]
              and blob[-4096:] == was[-4096:] and blob != was, f'{len(blob)} vs {len(was)}')
    new = os.path.join(src, 'x.log.7.gz')
    write(new, blob)
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r
    os.unlink(old)
    rotated.pop('x.log.4')
    rotated['x.log.7'] = head + mid + tail

    tag = 'renamed and rewritten'
    with zmtest.Mount(args.zmount, src, mnt, opts=opts, results=res, watchdog=300,
                      log_path=os.path.join(top, 'daemon-3.log')) as m:
        s = wait_indexer(m, 5)
        print(f'#   {tag}: {s}', flush=True)
        res.check(f'{tag}: its index rebuilt (indexes_built == 1)',
                  s.get('indexes_built') == 1, str(s))
        res.check(f'{tag}: the 4 others and the checkpoints loaded (indexes_loaded == 5)',
                  s.get('indexes_loaded') == 5, str(s))
        why = [ln for ln in m.log_lines() if 'x.log.7.gz' in ln and 'other bytes' in ln]
        res.check(f'{tag}: one log line says the saved index holds other bytes',
                  len(why) == 1, '\n'.join(m.log_lines()[-10:]), info=why[0] if why else '')
        for name, data in sorted(rotated.items()):
            read_exact(res, tag, os.path.join(mnt, name), data)


if __name__ == '__main__':
    sys.exit(main())
