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
8. checkpoints (issue 31, item 4): CKSRC holds w.zid, one 6 MiB entry
   (header version 2: "ZMIDENT2", size, entry size).  Mounted with
   index_dir=IDX,span=64K, the background pass builds its checkpoints
   through the format's ck hook (95, one every 64 KiB) and saves them in
   IDX as one .zmc file of kind 3.  A fresh mount with noindex (no pass)
   reads 4 KiB 100000 bytes before the end: exact, user.zmount.info says
   95 checkpoints (loaded), at least 1 resume, and the read decoded at most
   a slice and a span (2 MiB + 64 KiB), not the 6 MiB from the entry's start.
On a tree without the table (0aeb292) the dummy build does not exist, and
the plain build shows x.zid raw: every check of 2-6 fails.  Without zid's
ck hook, every check of 8 but the exact bytes fails.
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


def zid2(content, chunk):
    """A version-2 zid file: its entries chunk bytes each."""
    return b'ZMIDENT2' + struct.pack('<QQ', len(content), chunk) + content


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


def info(path):
    """user.zmount.info of path as {name: value}."""
    out = {}
    for ln in os.getxattr(path, 'user.zmount.info').decode(errors='replace').splitlines():
        k, _, v = ln.partition('=')
        out[k] = int(v) if v.isdigit() else v
    return out


def check_ckpt(res, bindir, tmp, rnd):
    """Checkpoints inside one zid entry: built by the background pass, saved, loaded, resumed."""
    src, idx, mnt = (os.path.join(tmp, d) for d in ('cksrc', 'ckidx', 'ckmnt'))
    os.makedirs(src)
    os.makedirs(idx, mode=0o700)
    data = rnd.randbytes(6 * MiB)
    write(os.path.join(src, 'w.zid'), zid2(data, 1 << 30))
    want = len(data) // (64 << 10) - 1  # a point every span, the entry's start not counted
    zmount = os.path.join(bindir, 'zmount')
    with zmtest.Mount(zmount, src, mnt, opts=f'index_dir={idx},span=64K',
                      log_path=os.path.join(tmp, 'ck-1.log'), results=res, watchdog=120,
                      label='dummy checkpoints, first mount') as m:
        # zid's pass is the index pass (FMTTAB_BG_INDEX): its checkpoints are saved by its end
        deadline = time.monotonic() + 60
        done = False
        while time.monotonic() < deadline and not done:
            done = 'background indexing done' in m.log_text()
            time.sleep(0.1)
        zmc = [f for f in os.listdir(idx) if f.endswith('.zmc')]
        st = zmtest.stats(mnt)
        res.check(f'checkpoints: the background pass built {want} in w.zid\'s one entry',
                  st.get('checkpoints') == want, f'{st}\n{m.log_tail()}')
    kinds = []
    for f in zmc:
        with open(os.path.join(idx, f), 'rb') as fh:
            kinds.append(struct.unpack_from('<H', fh.read(128), 106)[0])
    res.check('checkpoints: saved in IDX as one .zmc file of kind 3', kinds == [3],
              f'{zmc} kinds {kinds}')
    with zmtest.Mount(zmount, src, mnt, opts=f'index_dir={idx},span=64K,noindex',
                      log_path=os.path.join(tmp, 'ck-2.log'), results=res, watchdog=120,
                      label='dummy checkpoints, fresh mount') as m:
        off = len(data) - 100000
        w = os.path.join(mnt, 'w')
        # the lookup decodes the first slice (is it a tar?): counted before the read
        i0 = info(w)
        fd = os.open(w, os.O_RDONLY)
        try:
            got = os.pread(fd, 4096, off)
        finally:
            os.close(fd)
        res.check('checkpoints: a far read on a fresh mount is exact', got == data[off:off + 4096],
                  f'{len(got)} bytes')
        i = info(w)
        dec = i.get('decoded', 0) - i0.get('decoded', 0)
        print(f'#   fresh mount, 4 KiB at {off} of {len(data)}: decoded {dec} '
              f'({i0.get("decoded")} before it), resumes={i.get("resumes")} '
              f'checkpoints={i.get("checkpoints")}', flush=True)
        res.check(f'checkpoints: the fresh mount loaded the {want} saved ones',
                  i.get('checkpoints') == want, f'{i}\n{m.log_tail()}')
        res.check('checkpoints: the far read resumed at one (resumes >= 1)',
                  i.get('resumes', 0) >= 1, f'{i}')
        # a slice is 2 MiB at the default cache_size (reader_opts_default)
        res.check('checkpoints: the far read decoded at most a slice and a span (2 MiB + 64 KiB), '
                  'not the 6 MiB before it', 0 < dec <= 2 * MiB + (64 << 10), f'{dec}: {i0} {i}')


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
        check_ckpt(res, args.bin, tmp, rnd)
    finally:
        zmtest.cleanup_top(tmp, args.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
