#!/usr/bin/env python3
"""test_firstread.py -- saved checkpoints serve the first far read after a mount,
while the background indexer is busy with other files (issue 32, item 1).

usage: test_firstread.py --zmount PATH [--seed N] [--keep]

1. SRC holds one one-Block y.log.xz (16 MiB of log text).  Mount with
   index_dir=IDX,span=256K and wait until its checkpoints are saved (one
   .zmc in IDX); unmount.
2. Remount and at once read 4 KiB 100,000 bytes before the end of y.log,
   before anything else: the background indexer is loading the same set
   then.  The bytes must be exact, and y.log's own `decoded=`
   (user.zmount.info) at most 4 MiB: one span from the nearest saved
   checkpoint, rounded up to the slices it fills.  Decoding from the
   Block's start is 16 MiB: what 0428230 did (it marked the set loaded
   before it was there), 3 runs of 3.
3. Add 24 new .gz files (4 MiB each, each with its own first and last
   member, so no saved index fits them).  The background indexer takes
   gzip files first, so right after the next mount it is busy with them
   and has not reached y.log.xz.  The same far read, the same checks; and
   the stats must show the indexer had not built every gzip index yet
   (else that part proves nothing, and says so).
4. Nothing saved (index_dir=none), a fresh mount over one 16 MiB file, a
   one-frame .zst or a one-Block .xz, and at once a `tail` (the last 4 KiB,
   read to the end) while the indexer starts its checkpoint pass over the
   same bytes.  Once the set is there and the daemon idle, decoded_bytes
   (the tail and the pass together) is at most 1.25x the file: the tail
   either builds the set itself or waits for the pass and resumes from it.
   3e2f9c4 decoded the file twice (32 MiB).
5. Nothing saved, -o noindex, one 16 MiB .zst of 1 MiB frames that state no
   size (split | zstd, as a pipe writes them), and a whole `cat`: the open
   measures every frame, and the frames it decoded stay cached (stage.h),
   so decoded_bytes (the open and the read) is at most 1.1x the file.
   c545fcf decoded it twice.
Every mount ends with fusermount3 -u and daemon exit 0.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import gzip
import lzma
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from test_rotate import text  # noqa: E402  (the same log-like lines)

MiB = 1 << 20
OPTS = 'span=256K,cache_size=64M'
NGZ = 24



def info(path):
    """A file's user.zmount.info as {name: int}, numeric fields only."""
    out = {}
    raw = os.getxattr(path, 'user.zmount.info').decode(errors='replace')
    for ln in raw.splitlines():
        k, _, v = ln.partition('=')
        if v.strip().isdigit():
            out[k.strip()] = int(v)
    return out


def wait_saved(m, idx, deadline=120):
    """Waits until the checkpoint pass has saved y.log.xz's set (a .zmc in idx)."""
    t = time.monotonic() + deadline
    while time.monotonic() < t and m.alive():
        if any('checkpoints inside xz Blocks' in ln for ln in m.log_lines()) and \
                any(f.endswith('.zmc') for f in os.listdir(idx)):
            return True
        time.sleep(0.1)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--seed', type=int, default=7)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    top = tempfile.mkdtemp(prefix='zmount-firstread-')
    try:
        run(args, res, top)
    finally:
        zmtest.cleanup_top(top, args.keep)
    return res.finish()


def run(args, res, top):
    src, idx, mnt = (os.path.join(top, d) for d in ('src', 'idx', 'mnt'))
    for d in (src, idx, mnt):
        os.mkdir(d)
    t0 = time.monotonic()
    ydata = text(args.seed, 16 * MiB)
    with open(os.path.join(src, 'y.log.xz'), 'wb') as f:
        f.write(lzma.compress(ydata, preset=1))  # one Block
    opts = f'{OPTS},index_dir={idx}'
    with zmtest.Mount(args.zmount, src, mnt, opts=opts, results=res, watchdog=300,
                      log_path=os.path.join(top, 'daemon-1.log')) as m:
        res.check('first mount: y.log.xz checkpoints built and saved (one .zmc)',
                  wait_saved(m, idx), str(os.listdir(idx)))

    far_read(args, res, top, ydata, 'indexer loading the set', busy=False)

    # 24 gzip files the indexer has to pass over first: a shared 4 MiB middle
    # member, and a first and last member of their own.
    middle = gzip.compress(text(args.seed + 1, 4 * MiB), compresslevel=1, mtime=0)
    for n in range(NGZ):
        with open(os.path.join(src, f'a{n:02d}.log.gz'), 'wb') as f:
            f.write(gzip.compress(f'head {n}\n'.encode(), mtime=0) + middle +
                    gzip.compress(f'tail {n}\n'.encode(), mtime=0))
    print(f'# generated the xz and {NGZ} gzip files in {time.monotonic() - t0:.1f} s',
          flush=True)
    far_read(args, res, top, ydata, 'indexer busy with gzip files', busy=True)
    for fmt in ('zst', 'xz'):
        fresh_tail(args, res, top, ydata, fmt)
    piped_first_read(args, res, top, ydata)


def piped_first_read(args, res, top, data):
    """Part 5: the frames measured at open serve the first whole read."""
    src, mnt = os.path.join(top, 'src-piped'), os.path.join(top, 'mnt')
    os.mkdir(src)
    frames = b''.join(
        subprocess.run(['zstd', '-q', '-3', '-c', '-'], input=data[i:i + MiB],
                       stdout=subprocess.PIPE, check=True).stdout
        for i in range(0, len(data), MiB))
    with open(os.path.join(src, 'p.log.zst'), 'wb') as f:
        f.write(frames)
    tag = 'piped frames, first whole read'
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=64M,index_dir=none,noindex',
                      results=res, watchdog=300,
                      log_path=os.path.join(top, 'daemon-piped.log')) as m:
        path = os.path.join(mnt, 'p.log')
        with open(path, 'rb') as f:
            got = f.read()
        res.check(f'{tag}: the bytes are exact', got == data, f'{len(got)} bytes')
        dec = zmtest.stats(m.mnt).get('decoded_bytes', -1)
        print(f'#   {tag}: decoded_bytes {dec} ({dec / len(data):.2f}x the file)', flush=True)
        res.check(f'{tag}: the open and the read decoded at most 1.1x the file',
                  0 < dec <= len(data) * 11 // 10, f'decoded_bytes {dec} of {len(data)}')


def fresh_tail(args, res, top, data, fmt):
    """Part 4: a tail right after a mount with nothing saved decodes the file about once."""
    src, mnt = os.path.join(top, 'src-' + fmt), os.path.join(top, 'mnt')
    os.mkdir(src)
    if fmt == 'xz':
        comp = lzma.compress(data, preset=1)  # one Block
    else:
        comp = subprocess.run(['zstd', '-q', '-1', '-c'], input=data, stdout=subprocess.PIPE,
                              check=True).stdout  # one frame, its size stated
    with open(os.path.join(src, 'f.log.' + fmt), 'wb') as f:
        f.write(comp)
    tag = f'fresh tail ({fmt})'
    with zmtest.Mount(args.zmount, src, mnt, opts=f'{OPTS},index_dir=none', results=res,
                      watchdog=300, log_path=os.path.join(top, f'daemon-tail-{fmt}.log')) as m:
        path = os.path.join(mnt, 'f.log')
        with open(path, 'rb') as f:
            f.seek(len(data) - 4096)
            got = f.read()
        res.check(f'{tag}: the tail is exact', got == data[-4096:], f'{len(got)} bytes')
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and info(path).get('checkpoints', 0) == 0:
            time.sleep(0.1)
        last, s = None, zmtest.stats(m.mnt)
        while time.monotonic() < deadline and s.get('decoded_bytes') != last:
            last = s.get('decoded_bytes')
            time.sleep(0.5)
            s = zmtest.stats(m.mnt)
        dec = s.get('decoded_bytes', -1)
        print(f'#   {tag}: decoded_bytes {dec} ({dec / len(data):.2f}x the file); '
              f'{info(path)}', flush=True)
        res.check(f'{tag}: the set was built', info(path).get('checkpoints', 0) > 0)
        res.check(f'{tag}: the tail and the pass decoded at most 1.25x the file',
                  0 < dec <= len(data) * 5 // 4, f'decoded_bytes {dec} of {len(data)}')


def far_read(args, res, top, ydata, tag, busy):
    """Mounts, and reads 4 KiB near y.log's end before anything else."""
    src, idx, mnt = (os.path.join(top, d) for d in ('src', 'idx', 'mnt'))
    off = len(ydata) - 100000
    with zmtest.Mount(args.zmount, src, mnt, opts=f'{OPTS},index_dir={idx}', results=res,
                      watchdog=300, log_path=os.path.join(top, f'daemon-{tag[:12]}.log')) as m:
        path = os.path.join(mnt, 'y.log')
        t = time.monotonic()
        fd = os.open(path, os.O_RDONLY)
        try:
            got = os.pread(fd, 4096, off)
        finally:
            os.close(fd)
        ms = (time.monotonic() - t) * 1000
        s = zmtest.stats(m.mnt)
        i = info(path)
        print(f'#   {tag}: far read in {ms:.0f} ms; y.log {i}; stats {s}', flush=True)
        if busy:
            built = s.get('indexes_built', 0)
            res.check(f'{tag}: the indexer was still on the gzip files ({built} of {NGZ} built)',
                      built < NGZ, 'it had finished them: this part proves nothing')
        res.check(f'{tag}: the far read is exact', got == ydata[off:off + 4096])
        dec = i.get('decoded', -1)
        res.check(f'{tag}: the far read decoded at most 4 MiB of y.log (its saved set used)',
                  0 < dec <= 4 * MiB, f'decoded {dec} bytes of {len(ydata)}')
        res.check(f'{tag}: it resumed from a saved checkpoint', i.get('resumes', 0) >= 1,
                  str(i))

if __name__ == '__main__':
    sys.exit(main())
