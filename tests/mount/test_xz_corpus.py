#!/usr/bin/env python3
"""test_xz_corpus.py -- zmount over the upstream XZ Utils test files.

usage: test_xz_corpus.py --zmount PATH --corpus DIR [--source SRC] [--opts O] [--reads N]
                         [--partial strict|serve|either] [--warn serve|eio|either] [--keep]

Mounts DIR/xz-utils itself (read-only shared corpus) with `zmount -f` and:
  * runs DIR/check-mount.py DIR/xz-utils MNT (one check per EXPECTED.tsv row:
    ok rows read back with their sha256 at random offsets, error rows give
    EIO or show the archive raw under its own name; lzma/lzip rows are skipped
    by the checker);
  * the root listing: every .xz shows up exactly once, either stripped (x) or
    raw (x.xz), and every other file (README, EXPECTED.tsv, .lz, .lzma, ...)
    is there under its own name with its own bytes, nothing else;
  * for every `error` row whose stripped name exists in the mount, the daemon
    log has at least one line naming that file;
  * fusermount3 -u, and the daemon must exit 0.

--source mounts another corpus dir instead of DIR/xz-utils, e.g. the OUT of
DIR/make-gzip-cases.sh or DIR/make-xz-cases.sh (check-mount.py still comes
from DIR); --partial and --warn are handed to check-mount.py.

Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402


def read_expected(src):
    rows = []
    with open(os.path.join(src, 'EXPECTED.tsv')) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            c = line.rstrip('\n').split('\t')
            rows.append(dict(file=c[0], expect=c[1], fmt=c[7] if len(c) > 7 else '-'))
    return rows


def file_sha(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for b in iter(lambda: f.read(1 << 20), b''):
            h.update(b)
    return h.hexdigest()


def strip(name):
    return re.sub(r'\.(xz|gz)$', '', name)


def check_listing(res, src, mnt):
    try:
        got = set(os.listdir(mnt))
    except OSError as e:
        res.fail('listing of the mount root', f'listdir failed: {zmtest.errno_name(e.errno)}')
        return
    entries = sorted(os.listdir(src))
    xz = [n for n in entries if n.endswith(('.xz', '.gz')) and os.path.isfile(os.path.join(src, n))]
    other = [n for n in entries if n not in xz]
    both, neither = [], []
    for n in xz:
        shown = (strip(n) in got) + (n in got)
        (both if shown == 2 else neither if shown == 0 else []).append(n)
    res.check(f'every .xz/.gz ({len(xz)}) is listed exactly once, stripped or raw',
              not both and not neither, f'listed twice: {both}; missing: {neither}')
    missing = [n for n in other if n not in got]
    res.check(f'every other file ({len(other)}) is listed under its own name', not missing,
              f'missing: {missing}')
    allowed = set(other) | set(xz) | {strip(n) for n in xz}
    extra = sorted(got - allowed)
    res.check('nothing else is listed', not extra, f'unexpected: {extra}')
    wrong = []
    for n in other:
        if n not in got or not os.path.isfile(os.path.join(src, n)):
            continue
        try:
            if file_sha(os.path.join(mnt, n)) != file_sha(os.path.join(src, n)):
                wrong.append(n)
        except OSError as e:
            wrong.append(f'{n} ({zmtest.errno_name(e.errno)})')
    res.check('other files (.lz, .lzma, README, ...) pass through byte-identical',
              not wrong, f'differ: {wrong}')
    raw = [n for n in xz if n in got]
    if raw:
        res.note(f'{len(raw)} archives are shown raw under their own names: {", ".join(raw)}')
    bad_raw = []
    for n in raw:
        try:
            if file_sha(os.path.join(mnt, n)) != file_sha(os.path.join(src, n)):
                bad_raw.append(n)
        except OSError as e:
            bad_raw.append(f'{n} ({zmtest.errno_name(e.errno)})')
    res.check('archives shown raw have exactly the archive bytes', not bad_raw,
              f'differ: {bad_raw}')


def run_checker(res, checker, src, mnt, reads, seed, extra):
    argv = [sys.executable, checker, src, mnt, '--reads', str(reads), '--seed', str(seed)] + extra
    zmtest.run_check_mount(res, argv, 480)


def check_error_logs(res, m, mnt, rows):
    lines = m.log_lines()
    for row in rows:
        if row['expect'] != 'error' or row['fmt'] in ('lzma', 'lzip'):
            continue
        name = row['file']
        stripped = strip(name)
        if not os.path.lexists(os.path.join(mnt, stripped)):
            continue
        hits = zmtest.lines_naming(lines, [name, stripped])
        res.check(f'daemon log names {name}', bool(hits),
                  f'{stripped} is in the mount but none of {len(lines)} log lines names it',
                  info=hits[0][:160] if hits else '')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--corpus', required=True, help='the shared corpus dir (holds xz-utils/)')
    ap.add_argument('--opts', default='cache_size=8M,span=256K', help='-o for the daemon')
    ap.add_argument('--reads', type=int, default=64)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--source', help='corpus dir to mount instead of CORPUS/xz-utils')
    ap.add_argument('--partial', choices=['strict', 'serve', 'either'], default=None)
    ap.add_argument('--warn', choices=['serve', 'eio', 'either'], default=None)
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()

    zmtest.require_fuse()
    res = zmtest.Results()
    zmount = os.path.abspath(a.zmount)
    src = os.path.abspath(a.source or os.path.join(a.corpus, 'xz-utils'))
    extra = (['--partial', a.partial] if a.partial else []) + (['--warn', a.warn] if a.warn else [])
    checker = os.path.abspath(os.path.join(a.corpus, 'check-mount.py'))
    if not zmtest.binary_ok(res, zmount):
        return res.finish()
    if not (os.path.isfile(os.path.join(src, 'EXPECTED.tsv')) and os.path.isfile(checker)):
        res.fail('the source has EXPECTED.tsv and the corpus check-mount.py', f'{src}, {checker}')
        return res.finish()
    rows = read_expected(src)

    tmp = tempfile.mkdtemp(prefix='zmount-xzcorpus-')
    mnt = os.path.join(tmp, 'mnt')
    t0 = time.monotonic()
    try:
        m = zmtest.Mount(zmount, src, mnt, opts=a.opts or None,
                         log_path=os.path.join(tmp, 'daemon.log'), results=res,
                         watchdog=600, label=f'{os.path.basename(src)} mount')
        try:
            m.__enter__()
        except zmtest.MountError as e:
            res.fail(f'mount of {src} comes up', str(e))
            return res.finish()
        res.ok(f'mount of {src} comes up')
        try:
            check_listing(res, src, mnt)
            run_checker(res, checker, src, mnt, a.reads, a.seed, extra)
            res.check('daemon still running after check-mount.py', m.alive(),
                      f'exit status {m.proc.poll()}; log tail:\n{m.log_tail()}')
            check_error_logs(res, m, mnt, rows)
        except BaseException as e:
            m.__exit__(type(e), e, e.__traceback__)
            raise
        m.__exit__(None, None, None)
        lines = m.log_lines()
        print(f'# daemon log: {len(lines)} lines; first ones:')
        for ln in lines[:15]:
            print(f'#   | {ln}')
        print(f'# total time {time.monotonic() - t0:.1f} s')
    finally:
        if a.keep or zmtest.is_mounted(mnt):
            print(f'# kept {tmp}')
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
