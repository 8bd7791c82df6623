#!/usr/bin/env python3
"""test_rotate.py -- saved indexes survive a logrotate rename (issue 20, item 2).

usage: test_rotate.py --zmount PATH [--seed N] [--keep] [--part index|tail|all]

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
6. Live logs (--part tail, its own ctest): for each of logrotate's three
   styles -- create (rename, a new empty file, the old one gzipped and
   unlinked), copytruncate, and nocreate (rename; the writer's next append
   makes the new file) -- run the real `tail -n0 -F MNT/app.log` (coreutils
   polls a FUSE file once a second), append numbered lines to SRC/app.log
   every 0.2 s, rotate with a real `logrotate -f -s STATE CONF` midway, keep
   writing, and wait (at most 12 s) for tail to print the last line.  Its
   stdout must be every line exactly once, in order, and none of the lines
   the log held before tail started.  copytruncate: a line written after
   tail's last poll and before the truncation is gone from app.log for any
   polling reader, so that case waits for tail to catch up before rotating.
Every mount ends with fusermount3 -u and daemon exit 0.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import gzip
import lzma
import os
import random
import shutil
import subprocess
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
    ap.add_argument('--part', choices=('index', 'tail', 'all'), default='all',
                    help='saved indexes (1-5), tail -F across rotations (6), or both')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    top = tempfile.mkdtemp(prefix='zmount-rotate-')
    try:
        if args.part in ('index', 'all'):
            run(args, res, top)
        if args.part in ('tail', 'all'):
            if shutil.which('tail') and shutil.which('logrotate'):
                for style in ('create', 'copytruncate', 'nocreate'):
                    follow(args, res, top, style)
            else:
                res.fail('tail and logrotate installed (tools/deps.sh)')
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


# -- 6: tail -F across a rotation --------------------------------------------

LINES_BEFORE, LINES_AFTER, PERIOD = 10, 10, 0.2
CONF = {
    # logrotate's default: rename, create a new empty file; gzip and unlink
    # the old one at once, so tail's handle outlives the old file's name
    'create': 'create\n    compress',
    'copytruncate': 'copytruncate',
    # rename only: the writer's next append creates the file
    'nocreate': 'nocreate',
}


def log_line(i):
    return f'line {i:04d} ' + 'x' * (40 + i % 23) + '\n'


def append(path, text):
    with open(path, 'a') as f:
        f.write(text)


def fd_open_on(pid, path):
    """True once process pid holds an open descriptor on path."""
    try:
        fds = os.listdir(f'/proc/{pid}/fd')
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f'/proc/{pid}/fd/{fd}') == path:
                return True
        except OSError:
            pass
    return False


def wait_for(pred, deadline):
    t = time.monotonic() + deadline
    while time.monotonic() < t:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def read_text(path):
    with open(path, 'rb') as f:
        return f.read().decode('utf-8', errors='replace')


def follow(args, res, top, style):
    """tail -n0 -F MNT/app.log while SRC/app.log is written and rotated in style."""
    tag = f'tail -F, logrotate {style}'
    d = os.path.join(top, f'tail-{style}')
    src, mnt = os.path.join(d, 'src'), os.path.join(d, 'mnt')
    os.makedirs(src)
    log = os.path.join(src, 'app.log')
    # 16 KiB already there: tail -n0 must print none of it, and a truncation
    # leaves the file far shorter than tail's offset, as tail needs to see it
    append(log, ''.join(f'old {i:04d} ' + 'o' * 50 + '\n' for i in range(280)))
    conf = os.path.join(d, 'rotate.conf')
    with open(conf, 'w') as f:
        f.write(f'{log} {{\n    rotate 3\n    missingok\n    {CONF[style]}\n}}\n')
    out_path, err_path = os.path.join(d, 'tail.out'), os.path.join(d, 'tail.err')
    want = [log_line(i) for i in range(LINES_BEFORE + LINES_AFTER)]
    with zmtest.Mount(args.zmount, src, mnt, results=res, watchdog=120,
                      log_path=os.path.join(d, 'daemon.log')) as m, \
            open(out_path, 'wb') as out, open(err_path, 'wb') as err:
        seen = os.path.join(mnt, 'app.log')
        tail = subprocess.Popen(['tail', '-n0', '-F', seen], stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        try:
            if not wait_for(lambda: fd_open_on(tail.pid, seen), 10):
                res.fail(f'{tag}: tail opened {seen}', read_text(err_path))
                return
            t0 = time.monotonic()
            for i, line in enumerate(want):
                if i == LINES_BEFORE:
                    if style == 'copytruncate':
                        # what tail has not read by the truncation is lost to
                        # any reader that polls (README, "Live logs")
                        wait_for(lambda: read_text(out_path).endswith(want[i - 1]), 12)
                    r = subprocess.run(['logrotate', '-f', '-s', os.path.join(d, 'state'),
                                        conf], capture_output=True, text=True)
                    if r.returncode != 0:
                        res.fail(f'{tag}: logrotate ran', r.stderr.strip())
                        return
                    t_rot = time.monotonic()
                    if style == 'create':
                        res.check(f'{tag}: the old log was gzipped and unlinked while tail '
                                  'held it', os.path.exists(log + '.1.gz') and
                                  not os.path.exists(log + '.1'), str(os.listdir(src)))
                append(log, line)
                time.sleep(PERIOD)
            t_last = time.monotonic()
            caught = wait_for(lambda: read_text(out_path).endswith(want[-1]), 12)
            lag = time.monotonic() - t_last
        finally:
            tail.terminate()
            tail.wait(10)
        got = read_text(out_path).splitlines(keepends=True)
        errs = read_text(err_path).strip().replace('\n', ' | ')
        print(f'#   {tag}: {len(got)} lines out, rotated at {t_rot - t0:.1f} s, last line '
              f'{"after" if caught else "not within"} {lag:.1f} s; tail said: {errs}',
              flush=True)
        missing = [ln[:9] for ln in want if ln not in got]
        extra = [ln[:9] for ln in got if ln not in want]
        dups = sorted({ln[:9] for ln in got if got.count(ln) > 1})
        res.check(f'{tag}: stdout is every line once, in order ({len(want)} lines)',
                  got == want,
                  f'{len(got)} lines; missing {missing}; duplicated {dups}; not written '
                  f'since tail started {extra[:5]}{"..." if len(extra) > 5 else ""}; '
                  f'in order: {[ln for ln in got if ln in want] == want}')


if __name__ == '__main__':
    sys.exit(main())
