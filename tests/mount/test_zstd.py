#!/usr/bin/env python3
"""test_zstd.py -- zmount over the generated zstd conformance cases.

usage: test_zstd.py --zmount PATH [--tools DIR] [--reads N] [--seed S] [--keep]

1. tests/zstd/make-zstd-cases.sh writes the cases and EXPECTED.tsv into a temp
   dir (zstd -t / zstd -dc are the oracle; column 9 says what zmount must do);
2. the dir is mounted twice: cache_size=256M (frames decoded whole, checksum
   verified first) and cache_size=4M (frames wider than 2 MiB streamed through
   the parked decoder);
3. per row:
     decoded  NAME (suffix stripped) has st_size == usize, a full read hashes
              to column 3, N random preads equal `zstd -dc`'s bytes, EOF reads
              give b'', and NAME.zst is not listed;
     raw      NAME.zst is listed with its own bytes and size, NAME is not, and
              the log names the file (dictionary, window);
     eio      NAME is listed (NAME.zst is not), some read of it fails with EIO
              and none returns wrong bytes; the log names it (one rule with
              damaged gzip and xz files);
   and with --tools, `zmount-index verify` agrees with zstd -t: "ok" for
   every decoded row, "corrupt" for every eio row;
4. saved frame sizes (index_dir): zstd written from a pipe (no
   Frame_Content_Size), one frame and two, mounted three times with one
   index directory: the first mount measures and saves (2 index files; none
   for a file whose frames state their size), the second loads them and
   decodes nothing before the first read (user.zmount.stats), bytes equal;
   the third runs on indexes whose sizes were changed (checksum resealed):
   every read gives EIO or the right bytes, never wrong ones, and the
   index files proven wrong are removed;
5. many frames (issue 18, item 7): 4 files of 1,000,000 frames of 10 bytes,
   each in its own directory, listed in parallel at cache_size=1M: each
   map would need 73 MB, more than cache_size/4, so each is shown raw
   under its own name, with a log line, and the daemon's VmHWM stays
   within test_memory.py's bound for that cache (it was 298-355 MiB: every
   walk allocated every frame before the cap applied);
6. every mount ends with fusermount3 -u and daemon exit 0.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import errno
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, '..', 'zstd', 'make-zstd-cases.sh')


def load_table(path):
    rows = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            c = line.rstrip('\n').split('\t')
            rows.append({'file': c[0], 'sha': c[2], 'usize': int(c[3]) if c[3] != '-' else 0,
                         'show': c[8]})
    return rows


def stripped(name):
    return name[:-len('.zst')] if name.endswith('.zst') else name


def read_all(path):
    with open(path, 'rb') as f:
        return f.read()


def check_decoded(res, label, cases, mnt, row, rng, nreads):
    name = stripped(row['file'])
    path = os.path.join(mnt, name)
    want = subprocess.run(['zstd', '-dcq', os.path.join(cases, row['file'])],
                          stdout=subprocess.PIPE, check=True).stdout
    try:
        st = os.stat(path)
        got = read_all(path)
    except OSError as e:
        res.fail(f'{label}: {name} reads', f'{errno.errorcode.get(e.errno, e.errno)}')
        return
    res.check(f'{label}: {name} size is usize', st.st_size == row['usize'],
              f'{st.st_size} != {row["usize"]}')
    res.check(f'{label}: {name} hashes as zstd -dc', hashlib.sha256(got).hexdigest() == row['sha'],
              'sha256 differs')
    res.check(f'{label}: {row["file"]} is not listed besides {name}',
              row['file'] not in os.listdir(mnt))
    bad = []
    fd = os.open(path, os.O_RDONLY)
    try:
        offs = [0, max(0, len(want) - 1), len(want), len(want) + 4096]
        offs += [rng.randrange(len(want) + 1) for _ in range(nreads)] if want else []
        for off in offs:
            n = rng.choice([1, 100, 4096, 65536, 300000])
            b = os.pread(fd, n, off)
            if b != want[off:off + n]:
                bad.append(off)
    finally:
        os.close(fd)
    res.check(f'{label}: {name} random preads equal zstd -dc', not bad, f'wrong at {bad[:5]}')


def check_raw(res, label, cases, mnt, row, log):
    name = stripped(row['file'])
    raw = os.path.join(mnt, row['file'])
    ok = os.path.exists(raw) and read_all(raw) == read_all(os.path.join(cases, row['file']))
    res.check(f'{label}: {row["file"]} shown raw under its own name', ok)
    res.check(f'{label}: {name} not shown', name not in os.listdir(mnt))
    res.check(f'{label}: the log says why {row["file"]} is raw',
              bool(zmtest.lines_naming(log, [row['file']])))


def check_eio(res, label, cases, mnt, row, m):
    """A damaged file follows gzip's and xz's rule: its stripped name, EIO, never raw."""
    name = stripped(row['file'])
    listing = os.listdir(mnt)
    res.check(f'{label}: {name} (bad) listed under its stripped name, {row["file"]} not',
              name in listing and row['file'] not in listing,
              f'{name} listed: {name in listing}, {row["file"]} listed: {row["file"] in listing}')
    outcome = 'no error'
    try:
        read_all(os.path.join(mnt, name))
    except OSError as e:
        outcome = errno.errorcode.get(e.errno, str(e.errno))
    res.check(f'{label}: {name} (bad) gives EIO', outcome == 'EIO', outcome)
    res.check(f'{label}: the log names {row["file"]}',
              bool(zmtest.lines_naming(m.log_lines(), [row['file']])))


def run_verify(res, tools, cases, rows):
    """zmount-index verify's verdict per row: what zstd -t says (issue 18, items 1, 2, 13)."""
    want = {'decoded': (0, 'ok'), 'eio': (2, 'corrupt')}
    for row in rows:
        if row['show'] not in want:
            continue
        p = subprocess.run([os.path.join(tools, 'zmount-index'), 'verify',
                            os.path.join(cases, row['file'])], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        rc, word = want[row['show']]
        res.check(f'verify {row["file"]}: exit {rc}, {word}',
                  p.returncode == rc and f': {word}' in p.stdout,
                  f'exit {p.returncode}: {p.stdout.strip()[:200]}')


def run(args, res, cases, rows, opts, label):
    work = tempfile.mkdtemp(prefix='zmount-zstd-mnt-')
    mnt = os.path.join(work, 'mnt')
    os.mkdir(mnt)
    rng = random.Random(args.seed)
    try:
        with zmtest.Mount(args.zmount, cases, mnt, opts=opts, results=res,
                          log_path=os.path.join(work, 'daemon.log'), watchdog=600) as m:
            # lookups first, so the log has every verdict before it is read
            for row in rows:
                for n in (stripped(row['file']), row['file']):
                    try:
                        os.stat(os.path.join(mnt, n))
                    except OSError:
                        pass
            for row in rows:
                if row['show'] == 'decoded':
                    check_decoded(res, label, cases, mnt, row, rng, args.reads)
            log = m.log_lines()
            for row in rows:
                if row['show'] == 'raw':
                    check_raw(res, label, cases, mnt, row, log)
                elif row['show'] == 'eio':
                    check_eio(res, label, cases, mnt, row, m)
            os.stat(mnt)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def crc64(b):
    """CRC-64/XZ (doc/index-format.md)."""
    c = (1 << 64) - 1
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ 0xC96C5795D7870F42 if c & 1 else c >> 1
    return c ^ ((1 << 64) - 1)


def forge_first_size(path, delta):
    """Frame 0's size and the total changed by delta in the zstd index at path, resealed."""
    b = bytearray(open(path, 'rb').read())
    le = lambda o, n: int.from_bytes(b[o:o + n], 'little')  # noqa: E731
    if le(106, 2) != 2:
        return False
    rec = 136 + le(60, 4)  # header (version 5), path
    b[rec + 16:rec + 24] = (le(rec + 16, 8) + delta).to_bytes(8, 'little')
    b[72:80] = (le(72, 8) + delta).to_bytes(8, 'little')
    b[-8:] = crc64(bytes(b[:-8])).to_bytes(8, 'little')
    open(path, 'wb').write(b)
    return True


def reads_right_or_eio(path, data):
    """(number of 64 KiB preads that failed with EIO, description of the first wrong result)."""
    failed, wrong = 0, None
    fd = os.open(path, os.O_RDONLY)
    try:
        for off in range(0, len(data), 65536):
            try:
                got = os.pread(fd, 65536, off)
            except OSError as e:
                if e.errno != errno.EIO:
                    wrong = wrong or f'{errno.errorcode.get(e.errno)} at {off}'
                failed += 1
                continue
            if got != data[off:off + 65536]:
                wrong = wrong or f'wrong bytes at {off}'
    finally:
        os.close(fd)
    return failed, wrong


def run_saved_sizes(args, res):
    work = tempfile.mkdtemp(prefix='zmount-zstd-idx-')
    src, mnt, idx = (os.path.join(work, n) for n in ('src', 'mnt', 'idx'))
    os.mkdir(src)
    os.mkdir(mnt)
    os.mkdir(idx, 0o700)
    rng = random.Random(args.seed)
    words = [b'frame', b'zstd', b'pipe', b'size', b'index', b'measured', b'0123456789']
    data = b' '.join(rng.choice(words) + (b'\n' if rng.random() < 0.1 else b'')
                     for _ in range(1200000))[:6 * 1048576 + 4321]
    cut = 2 * 1048576 + 17
    plain = {'stream': data, 'two': data, 'stated': data}

    def zstd(inp, *opts):
        return subprocess.run(['zstd', '-q', '-c', *opts], input=inp, check=True,
                              stdout=subprocess.PIPE).stdout
    with open(os.path.join(src, 'stream.zst'), 'wb') as f:
        f.write(zstd(data))  # from a pipe: no Frame_Content_Size
    with open(os.path.join(src, 'two.zst'), 'wb') as f:
        f.write(zstd(data[:cut]) + zstd(data[cut:], '-19'))
    with open(os.path.join(os.path.join(work, 'data'), ), 'wb') as f:
        f.write(data)
    subprocess.run(['zstd', '-q', '-f', os.path.join(work, 'data'), '-o',
                    os.path.join(src, 'stated.zst')], check=True)
    opts = f'cache_size=64M,index_dir={idx}'
    zmis = lambda: sorted(n for n in os.listdir(idx) if n.endswith('.zmi'))  # noqa: E731
    try:
        for tag in ('first mount', 'second mount', 'forged sizes'):
            if tag == 'forged sizes':
                forged = [forge_first_size(os.path.join(idx, n), -1000) for n in zmis()]
                res.check(f'{tag}: both index files are zstd ones, forged', forged == [True, True],
                          str(forged))
            with zmtest.Mount(args.zmount, src, mnt, opts=opts, results=res,
                              log_path=os.path.join(work, f'{tag}.log'), watchdog=300) as m:
                sizes = {n: os.stat(os.path.join(mnt, n)).st_size for n in plain}
                st = zmtest.stats(mnt)
                info = (f'indexes_built={st.get("indexes_built")} '
                        f'indexes_loaded={st.get("indexes_loaded")} '
                        f'decoded_bytes={st.get("decoded_bytes")}')
                if tag == 'first mount':
                    res.check(f'{tag}: the two streamed files measured ({info})',
                              st.get('indexes_built') == 2 and st.get('decoded_bytes', 0) >= 2 * len(data),
                              info)
                else:
                    res.check(f'{tag}: both saved sizes loaded, nothing decoded at open ({info})',
                              st.get('indexes_loaded') == 2 and st.get('indexes_built') == 0 and
                              st.get('decoded_bytes') == 0, info)
                if tag != 'forged sizes':
                    res.check(f'{tag}: sizes', all(v == len(data) for v in sizes.values()),
                              str(sizes))
                    for n in plain:
                        res.check(f'{tag}: {n} reads back exactly',
                                  read_all(os.path.join(mnt, n)) == data)
                else:
                    res.check(f'{tag}: the forged sizes are shown (1000 bytes short)',
                              sizes['stream'] == len(data) - 1000 and
                              sizes['two'] == len(data) - 1000, str(sizes))
                    for n in ('stream', 'two'):
                        failed, wrong = reads_right_or_eio(os.path.join(mnt, n), data)
                        res.check(f'{tag}: {n}: {failed} reads EIO, none wrong',
                                  failed > 0 and wrong is None, wrong or 'no EIO')
                    res.check(f'{tag}: stated.zst (no index) reads back exactly',
                              read_all(os.path.join(mnt, 'stated')) == data)
                    res.check(f'{tag}: the log names the files',
                              bool(zmtest.lines_naming(m.log_lines(), ['stream.zst'])) and
                              bool(zmtest.lines_naming(m.log_lines(), ['two.zst'])),
                              m.log_tail(10))
            if tag == 'first mount':
                res.check(f'{tag}: 2 index files, none for stated.zst', len(zmis()) == 2,
                          str(zmis()))
            if tag == 'forged sizes':
                res.check(f'{tag}: the disproved index files were removed', zmis() == [],
                          str(zmis()))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def tiny_frames(n, each, seed):
    """n zstd frames without Frame_Content_Size, each one Raw block of `each` bytes."""
    hdr = b'\x28\xb5\x2f\xfd\x00\x00' + (1 | each << 3).to_bytes(3, 'little')
    data = bytes((seed + i) % 26 + 0x61 for i in range(n * each))
    return b''.join(hdr + data[i * each:(i + 1) * each] for i in range(n))


def run_many_frames(args, res):
    import test_memory  # its bound and VmHWM check, for the same README formula
    work = tempfile.mkdtemp(prefix='zmount-zstd-many-')
    src, mnt = os.path.join(work, 'src'), os.path.join(work, 'mnt')
    os.mkdir(mnt)
    dirs = [f'd{i}' for i in range(4)]
    for i, d in enumerate(dirs):
        os.makedirs(os.path.join(src, d))
        with open(os.path.join(src, d, 'many.zst'), 'wb') as f:
            f.write(tiny_frames(1000000, 10, i))
    try:
        with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=1M,threads=2,index_dir=none',
                          results=res, log_path=os.path.join(work, 'many.log'),
                          watchdog=600) as m:
            base = zmtest.proc_status(m.proc.pid)['VmRSS']
            listed = {}

            def lister(d):
                listed[d] = sorted(os.listdir(os.path.join(mnt, d)))
            threads = [threading.Thread(target=lister, args=(d,)) for d in dirs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for d in dirs:
                res.check(f'many frames: {d}/many.zst shown raw under its own name',
                          listed.get(d) == ['many.zst'], str(listed.get(d)))
            raw = os.path.join(mnt, dirs[0], 'many.zst')
            res.check('many frames: its raw bytes are the file\'s', os.path.exists(raw) and
                      read_all(raw) == read_all(os.path.join(src, dirs[0], 'many.zst')))
            res.check('many frames: the log says why (cache_size)',
                      any('many.zst' in ln and 'cache_size' in ln for ln in m.log_lines()),
                      m.log_tail(5))
            test_memory.check_hwm(res, m, 'many frames: VmHWM within the bound at 1M', base,
                                  test_memory.bound(1 << 20, 2, 0))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--tools', help='directory of zmount-index, for verify')
    ap.add_argument('--reads', type=int, default=40)
    ap.add_argument('--seed', type=int, default=12)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    cases = tempfile.mkdtemp(prefix='zmount-zstd-cases-')
    try:
        subprocess.run(['bash', GEN, cases], check=True, stdout=subprocess.DEVNULL)
        rows = load_table(os.path.join(cases, 'EXPECTED.tsv'))
        res.check('cases generated', len(rows) >= 20, f'{len(rows)} rows')
        if args.tools:
            run_verify(res, args.tools, cases, rows)
        run(args, res, cases, rows, 'cache_size=256M,index_dir=none', 'cache 256M')
        run(args, res, cases, rows, 'cache_size=4M,index_dir=none', 'cache 4M')
        run_saved_sizes(args, res)
        run_many_frames(args, res)
    finally:
        if not args.keep:
            shutil.rmtree(cases, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
