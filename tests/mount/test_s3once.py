#!/usr/bin/env python3
"""S3 fetches each byte once (issue 32), against the real Ceph RGW of tests/s3/rgw.sh
(ZMOUNT_S3_DIR, ctest fixture s3_rgw; a missing gateway FAILS).

Bytes are counted by the daemon's own s3src counters (user.zmount.stats s3_bytes: the
object bytes its ranged GETs returned; a saved index's GETs and PUTs are not in it) and
decoded bytes by decoded_bytes; nothing is timed.
  - first read: a fresh mount with index_dir=s3://... reads a .gz whole: the pass that
    proves its size fetches it, and nothing fetches it again (saving the index used to
    read it all once more to hash it: 2.0x); its output is decoded once (the pass leaves
    it in the cache, the object fitting in cache_size/2);
  - shared index: a second fresh mount loads that index and reads the .gz whole: about
    the object once;
  - dense reads into cached Blocks: every 1 MiB Block of an .xz read once, then runs of
    three 4 KiB reads at random offsets, in four opens: all cached, so nothing is fetched
    (the reader's read-ahead hints the units after a run, and the source used to fetch
    them although they were cached: up to its 8 MiB of windows per open).
"""
import argparse
import gzip
import hashlib
import mmap
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from test_s3mount import Gateway, compress, text_bytes, xz_blocks  # noqa: E402

PAGE = 4096


def mount(args, res, gw, top, label, sub, opts):
    mnt = os.path.join(top, f'mnt-{label}')
    src = f's3://{gw.bucket}/{sub}'
    return zmtest.Mount(args.zmount, src, mnt,
                        f'endpoint={gw.endpoint},credentials={gw.credfile},{opts}',
                        results=res, watchdog=300, log_path=os.path.join(top, f'{label}.log'),
                        mount_timeout=60, label=label), mnt


def cat_sha(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def check_gz(args, res, gw, top, pre):
    data = text_bytes(24 << 20, 11)
    blob = gzip.compress(data, 6)
    path = os.path.join(top, 'log.gz')
    with open(path, 'wb') as f:
        f.write(blob)
    gw.put(pre + 'gz/log.gz', path)
    want = hashlib.sha256(data).hexdigest()
    opts = f'index_dir=s3://{gw.bucket}/{pre}idx'
    for label, what in (('first', 'first read, index built and saved'),
                        ('shared', 'fresh mount, the shared index loaded')):
        m, mnt = mount(args, res, gw, top, label, pre + 'gz', opts)
        with m:
            s0 = zmtest.stats(mnt)
            got = cat_sha(os.path.join(mnt, 'log'))
            s1 = zmtest.stats(mnt)
        fetched = s1['s3_bytes'] - s0['s3_bytes']
        decoded = s1['decoded_bytes'] - s0['decoded_bytes']
        built = 1 if label == 'first' else 0
        zmtest.Results.note(f'.gz {label}: fetched {fetched / len(blob):.3f}x the object, '
                            f'decoded {decoded / len(data):.2f}x its text')
        res.check(f'.gz {what}: exact bytes, fetched <= 1.1x the object, decoded once',
                  got == want and fetched <= len(blob) * 1.1 and decoded <= len(data)
                  and s1.get('indexes_built') == built and s1.get('indexes_loaded') == 1 - built,
                  f'fetched {fetched} bytes ({fetched / len(blob):.2f}x the object of '
                  f'{len(blob)}), decoded {decoded} of {len(data)}, built '
                  f'{s1.get("indexes_built")} loaded {s1.get("indexes_loaded")}, bytes equal '
                  f'{got == want}')


def check_dense(args, res, gw, top, pre):
    data = text_bytes(32 << 20, 12)
    path = os.path.join(top, 'blocks.xz')
    with open(path, 'wb') as f:
        f.write(compress(['xz', '-c', '-T2', '-2', '--block-size=1MiB'], data))
    gw.put(pre + 'xz/blocks.log.xz', path)
    blocks = xz_blocks(path)  # (coff, csize, uoff, usize)
    m, mnt = mount(args, res, gw, top, 'dense', pre + 'xz', 'cache_size=64M,index_dir=none')
    rnd = random.Random(32)
    runs = [rnd.randrange(len(data) // PAGE - 3) * PAGE for _ in range(200)]
    buf = mmap.mmap(-1, PAGE)
    bad = 0
    with m:
        file = os.path.join(mnt, 'blocks.log')
        fd = os.open(file, os.O_RDONLY | os.O_DIRECT)
        try:
            for _, _, uo, _ in blocks:
                os.preadv(fd, [buf], uo)
        finally:
            os.close(fd)
        s0 = zmtest.stats(mnt)
        # In four opens: each has a source of its own, with windows to fill.
        for part in range(4):
            fd = os.open(file, os.O_RDONLY | os.O_DIRECT)
            try:
                for off in runs[part::4]:
                    for o in (off, off + PAGE, off + 2 * PAGE):
                        bad += os.preadv(fd, [buf], o) != PAGE or buf[:] != data[o:o + PAGE]
            finally:
                os.close(fd)
        s1 = zmtest.stats(mnt)
    fetched = s1['s3_bytes'] - s0['s3_bytes']
    decoded = s1['decoded_bytes'] - s0['decoded_bytes']
    zmtest.Results.note(f'dense: warm fetched {s0["s3_bytes"]}, then {fetched} bytes in {s1["s3_gets"] - s0["s3_gets"]} GETs, '
                        f'readahead_bytes {s1.get("readahead_bytes")}')
    res.check('every Block read once (fetched about the object, all of it decoded)',
              s0['s3_bytes'] <= os.path.getsize(path) * 1.1
              and s0['decoded_bytes'] == len(data),
              f'{s0["s3_bytes"]} bytes fetched of {os.path.getsize(path)}, decoded '
              f'{s0["decoded_bytes"]} of {len(data)}')
    res.check('200 runs of three 4 KiB reads into cached Blocks: exact bytes, nothing decoded '
              'or fetched again', bad == 0 and decoded == 0 and fetched <= 16 << 10,
              f'{bad} bad reads, decoded {decoded}, fetched {fetched} bytes '
              f'({s1["s3_gets"] - s0["s3_gets"]} GETs)')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
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
    gw = Gateway(d)
    top = tempfile.mkdtemp(prefix='zm-s3once-')
    pre = f'zm-s3once-{os.getpid()}-{int(time.time())}/'
    try:
        check_gz(args, res, gw, top, pre)
        check_dense(args, res, gw, top, pre)
    finally:
        zmtest.cleanup_top(top, args.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
