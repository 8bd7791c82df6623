#!/usr/bin/env python3
"""test_zstd.py -- zmount over the generated zstd conformance cases.

usage: test_zstd.py --zmount PATH [--reads N] [--seed S] [--keep]

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
     eio      some read of NAME fails with EIO and none returns wrong bytes, or
              the file is shown raw under its own name; the log names it;
4. every mount ends with fusermount3 -u and daemon exit 0.
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
    name = stripped(row['file'])
    if row['file'] in os.listdir(mnt) and name not in os.listdir(mnt):
        ok = read_all(os.path.join(mnt, row['file'])) == read_all(os.path.join(cases, row['file']))
        res.check(f'{label}: {row["file"]} (bad) shown raw with its own bytes', ok)
    else:
        outcome = 'no error'
        try:
            read_all(os.path.join(mnt, name))
        except OSError as e:
            outcome = errno.errorcode.get(e.errno, str(e.errno))
        res.check(f'{label}: {name} (bad) gives EIO', outcome == 'EIO', outcome)
    res.check(f'{label}: the log names {row["file"]}',
              bool(zmtest.lines_naming(m.log_lines(), [row['file']])))


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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zmount', required=True)
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
        run(args, res, cases, rows, 'cache_size=256M,index_dir=none', 'cache 256M')
        run(args, res, cases, rows, 'cache_size=4M,index_dir=none', 'cache 4M')
    finally:
        if not args.keep:
            shutil.rmtree(cases, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
