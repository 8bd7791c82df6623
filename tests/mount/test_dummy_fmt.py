#!/usr/bin/env python3
"""test_dummy_fmt.py -- a format added through the table alone is picked up everywhere.

usage: test_dummy_fmt.py --bin DIR [--keep]

DIR holds zmount and the tools built with one more line in index/fmttab.c's
table: the dummy "zid" format of tests/fmt/fmt_zid.c (a 16-byte header,
"ZMIDENT1" and the content's size, then the content as it is; one map entry
per MiB).  Nothing else in fs/ or tools/ knows it (issue 20, item 9).

1. SRC holds x.zid (3.5 MiB), y.tzid (its tar suffix), bad.zid (a header
   that does not match the file: shown raw) and g.gz; it is mounted;
2. listed: x under its stripped name with its decoded size, y.tar, bad.zid
   raw under its own name with its own size; x.zid and y.tzid not listed;
3. read: x exactly at offsets around its MiB entries and its end;
4. named: `getfattr -n user.zmount.info MNT/x` says format=zid; the
   stats say zid_indexes (the format's own counter) counted its opens;
5. indexed: the background indexer's summary counts the zid files with the
   gzip one, in the index pass the dummy's policy asks for;
6. tools: zmount-info, zmount-cat, zmount-index info/verify/build name,
   read and count it; build saves its index (its saved hook) and a second
   build finds it fresh;
7. the mount ends with fusermount3 -u and daemon exit 0.
On a tree without the table (0aeb292) the dummy build does not exist, and
the plain build shows x.zid raw: every check of 2-6 fails.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import gzip
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

MiB = 1 << 20


def zid(content):
    return b'ZMIDENT1' + struct.pack('<Q', len(content)) + content


def write(path, blob):
    with open(path, 'wb') as f:
        f.write(blob)


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout, p.stderr.decode(errors='replace')


def check_mount(res, bindir, src, mnt, tmp, data, small):
    m = zmtest.Mount(os.path.join(bindir, 'zmount'), src, mnt, opts='index_dir=none',
                     log_path=os.path.join(tmp, 'daemon.log'), results=res, watchdog=120,
                     label='dummy format')
    with m:
        names = sorted(os.listdir(mnt))
        res.check('listed: x.zid as x, y.tzid as y.tar, bad.zid raw, g.gz as g',
                  names == ['bad.zid', 'g', 'x', 'y.tar'], f'listing {names}')
        size = os.stat(os.path.join(mnt, 'x')).st_size if 'x' in names else None
        res.check('listed: x has its decoded size', size == len(data),
                  f'st_size {size}, want {len(data)}')
        bad = os.path.join(mnt, 'bad.zid')
        res.check('listed: bad.zid (header does not match) keeps its own name and size',
                  os.path.exists(bad) and os.stat(bad).st_size == os.stat(
                      os.path.join(src, 'bad.zid')).st_size, m.log_tail())
        if size == len(data):
            fd = os.open(os.path.join(mnt, 'x'), os.O_RDONLY)
            try:
                for off, n in ((0, 4096), (MiB - 7, 14), (MiB, 1), (2 * MiB + MiB // 2, 100000),
                               (len(data) - 10, 10), (len(data) - 5, 100), (len(data), 10),
                               (123457, 3 * MiB)):
                    got = os.pread(fd, n, off)
                    res.check(f'read: x at {off} for {n} is exact', got == data[off:off + n],
                              f'{len(got)} bytes, first {got[:16]!r}')
            finally:
                os.close(fd)
            with open(os.path.join(mnt, 'y.tar'), 'rb') as f:
                res.check('read: y.tar whole is exact', f.read() == small)
        gf = subprocess.run(['getfattr', '--only-values', '-n', 'user.zmount.info',
                             os.path.join(mnt, 'x')], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
        info = gf.stdout.decode(errors='replace')
        res.check('named: getfattr -n user.zmount.info MNT/x says format=zid',
                  gf.returncode == 0 and 'format=zid\n' in info and
                  f'uncompressed={len(data)}\n' in info, f'{info!r} {gf.stderr!r}')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and 'background indexing done' not in m.log_text():
            time.sleep(0.1)
        lines = [ln for ln in m.log_lines() if 'background indexing done' in ln]
        res.check('indexed: the background index pass visited the zid files with the gzip one',
                  len(lines) == 1 and '4 gzip/zid files' in lines[0] and
                  '3 built, 0 loaded, 0 corrupt, 1 not gzip/zid' in lines[0],
                  f'{lines}\n{m.log_tail()}')
        st = zmtest.stats(mnt)
        res.check('named: the stats carry the format\'s own counter, zid_indexes',
                  st.get('zid_indexes', 0) >= 2 and 'xz_indexes' in st, f'{st}')


def check_tools(res, bindir, src, data):
    x = os.path.join(src, 'x.zid')
    rc, out, err = run([os.path.join(bindir, 'zmount-info'), x])
    res.check('tools: zmount-info names zid and its fields',
              rc == 0 and out.decode() == f'{x}\tzid\tchunks=4\tcompressed={len(data) + 16}'
              f'\tuncompressed={len(data)}\n', f'rc {rc} {out!r} {err}')
    rc, out, err = run([os.path.join(bindir, 'zmount-cat'), x, str(MiB - 3), str(MiB + 6)])
    res.check('tools: zmount-cat reads x.zid exactly', rc == 0 and out == data[MiB - 3:2 * MiB + 3],
              f'rc {rc}, {len(out)} bytes {err}')
    rc, out, err = run([os.path.join(bindir, 'zmount-index'), 'info', '-d',
                        os.path.join(src, '..', 'idx'), x])
    text = out.decode(errors='replace')
    res.check('tools: zmount-index info says format=zid, its chunks and size',
              rc == 0 and 'format=zid\n' in text and 'chunks=4\n' in text and
              f'uncompressed={len(data)}\n' in text, f'rc {rc} {text!r} {err}')
    rc, out, err = run([os.path.join(bindir, 'zmount-index'), 'verify', src])
    text = out.decode(errors='replace')
    res.check('tools: zmount-index verify checks the zid files',
              f'{x}: ok\n' in text and 'y.tzid: ok\n' in text, f'rc {rc} {text!r} {err}')
    rc, out, err = run([os.path.join(bindir, 'zmount-index'), 'build', '-d',
                        os.path.join(src, '..', 'idx'), src])
    text = out.decode(errors='replace')
    # the dummy saves its index through its saved hook alone (fmt.h): built and saved
    # bad.zid, whose header disagrees with its size, fails as a damaged gzip file would (rc 2)
    res.check('tools: zmount-index build saves the zid files\' indexes by their saved hook',
              rc == 2 and ' and zid files' in text and 'skipped: xz=0 other=0' in text and
              'zid: 2 files' in text and 'index built for 2' in text and 'failed=1' in text and
              'bad.zid: zid header says' in err,
              f'rc {rc} {text!r} {err}')
    rc, out, err = run([os.path.join(bindir, 'zmount-index'), 'build', '-d',
                        os.path.join(src, '..', 'idx'), src])
    text = out.decode(errors='replace')
    res.check('tools: a second build finds the zid indexes saved and fresh',
              rc == 2 and 'zid: 2 files' in text and 'index already saved for 2' in text,
              f'rc {rc} {text!r} {err}')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bin', required=True, help='directory of the dummy-enabled build')
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, os.path.join(args.bin, 'zmount')):
        return res.finish()
    tmp = tempfile.mkdtemp(prefix='zm-dummyfmt.')
    try:
        src = os.path.join(tmp, 'src')
        os.makedirs(src)
        rnd = random.Random(20)
        data = rnd.randbytes(3 * MiB + MiB // 2)
        small = rnd.randbytes(70000)
        write(os.path.join(src, 'x.zid'), zid(data))
        write(os.path.join(src, 'y.tzid'), zid(small))
        write(os.path.join(src, 'bad.zid'), zid(small)[:-1])
        write(os.path.join(src, 'g.gz'), gzip.compress(b'gzip beside it\n' * 1000, mtime=0))
        check_mount(res, args.bin, src, os.path.join(tmp, 'mnt'), tmp, data, small)
        check_tools(res, args.bin, src, data)
    finally:
        zmtest.cleanup_top(tmp, args.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
