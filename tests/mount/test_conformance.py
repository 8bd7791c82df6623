#!/usr/bin/env python3
"""test_conformance.py -- zmount over the generated gzip and xz conformance cases.

usage: test_conformance.py --zmount PATH --corpus DIR [--big] [--opts O] [--reads N]
                           [--seed S] [--cases DIR] [--keep]

For each of DIR/make-gzip-cases.sh and DIR/make-xz-cases.sh:
  1. generate the cases into a temp dir at test time (gzip ~20 s, xz ~45 s;
     with --big also the > 4 GiB cases: about +20 s and +35 s, and only
     ~40 MB more disk, since their content is mostly zeros);
  2. mount that dir with `zmount -f -o <opts>,index_dir=<private temp dir>`;
  3. run `python3 DIR/check-mount.py OUT MNT --partial either --warn either`;
     every row it prints becomes one check here;
  4. for every `error` row whose stripped name is in the mount, the daemon log
     has at least one line naming the file; for an error row shown raw under
     its own name, the log says why (README: "the log says why");
  5. no file is named by more than 3 log lines (one clear line per cause, not
     a flood); the maximum is reported;
  6. with --big: st_size of the > 4 GiB case is 4 298 113 041 (not the
     ISIZE 3 145 745) and reads around and beyond 4 GiB match the content
     formula (every 1 MiB period starts with "%016x\\n" of its own offset);
  7. fusermount3 -u, and the daemon must exit 0.

--cases DIR reuses an earlier run's output (DIR/gzip and DIR/xz, as written
with --keep) instead of generating again.

Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

BIG_N = 4298113041
BIG_CASES = {'gzip': 'good-big-isize-wrap.gz', 'xz': 'good-xz-big-4g.xz'}
MAX_LINES_PER_FILE = 3
MiB = 1 << 20


def vm_hwm(pid):
    try:
        with open(f'/proc/{pid}/status') as f:
            return next((ln.split(':', 1)[1].strip() for ln in f if ln.startswith('VmHWM')), '?')
    except OSError:
        return '?'


def read_expected(d):
    rows = []
    with open(os.path.join(d, 'EXPECTED.tsv')) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            c = line.rstrip('\n').split('\t')
            rows.append(dict(file=c[0], expect=c[1], usize=c[3], tags=c[6] if len(c) > 6 else '-'))
    return rows


def strip(name):
    return re.sub(r'\.(xz|gz)$', '', name)


def generate(res, corpus, kind, out, big):
    script = os.path.join(corpus, f'make-{kind}-cases.sh')
    argv = ['bash', script] + (['--big'] if big else []) + [out]
    print(f'# generating: {" ".join(argv)}', flush=True)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=900)
    except subprocess.TimeoutExpired:
        res.fail(f'{kind}: generate the cases', f'{script} timed out after 900 s')
        return False
    err = p.stderr.decode(errors='replace').strip()
    ok = p.returncode == 0 and os.path.isfile(os.path.join(out, 'EXPECTED.tsv'))
    n = len(read_expected(out)) if ok else 0
    res.check(f'{kind}: generate the cases with {os.path.basename(script)}'
              + (' --big' if big else ''), ok, f'rc={p.returncode}: {err[-400:]}',
              info=f'{n} cases in {time.monotonic() - t0:.1f} s')
    return ok


def formula(off, n):
    """Bytes [off, off+n) of the big cases: every 1 MiB period starts with
    "%016x\\n" of its own offset, the rest is zeros; the file is BIG_N long."""
    out = bytearray()
    end = min(off + n, BIG_N)
    pos = off
    while pos < end:
        period = pos - pos % MiB
        stop = min(period + MiB, end)
        chunk = (b'%016x\n' % period).ljust(MiB, b'\0')
        out += chunk[pos - period:stop - period]
        pos = stop
    return bytes(out)


def check_big(res, kind, mnt):
    name = strip(BIG_CASES[kind])
    path = os.path.join(mnt, name)
    try:
        st = os.stat(path)
    except OSError as e:
        res.fail(f'{kind}: {name}: st_size {BIG_N}', zmtest.errno_name(e.errno))
        return
    res.check(f'{kind}: {name}: st_size is {BIG_N} (not the 32-bit {BIG_N % (1 << 32)})',
              st.st_size == BIG_N, f'st_size {st.st_size}')
    offs = [0, (1 << 32) - 100, 1 << 32, (1 << 32) + 5 * MiB + 3, BIG_N - 17, BIG_N - 1, BIG_N,
            3 * (1 << 30) + 12345]
    bad = []
    t0 = time.monotonic()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        fd = os.open(path, os.O_RDONLY)
    try:
        for off in offs:
            try:
                got = os.pread(fd, 4096, off)
                if got != formula(off, 4096):
                    bad.append(f'@{off}: {len(got)} bytes, wrong')
            except OSError as e:
                bad.append(f'@{off}: {zmtest.errno_name(e.errno)}')
    finally:
        os.close(fd)
    res.check(f'{kind}: {name}: {len(offs)} reads around and beyond 4 GiB match the formula',
              not bad, ' | '.join(bad), info=f'{time.monotonic() - t0:.1f} s')


def run_checker(res, kind, corpus, out, mnt, reads, seed):
    checker = os.path.join(corpus, 'check-mount.py')
    argv = [sys.executable, checker, out, mnt, '--partial', 'either', '--warn', 'either',
            '--reads', str(reads), '--seed', str(seed)]
    zmtest.run_check_mount(res, argv, 1800, f'{kind}: ')


MAGIC = {'.gz': b'\x1f\x8b', '.xz': b'\xfd7zXZ\x00'}


def has_magic(out, name):
    """True when NAME starts with its suffix's magic bytes: a file without them
    is not an archive at all, and README says it passes through silently."""
    try:
        with open(os.path.join(out, name), 'rb') as f:
            head = f.read(6)
    except OSError:
        return False
    want = MAGIC.get(os.path.splitext(name)[1])
    return want is not None and head.startswith(want)


def check_logs(res, kind, m, mnt, rows, out):
    lines = m.log_lines()
    missing, raw_silent = [], []
    for row in rows:
        # .lzma/.lz (xz-utils' set) are no format of zmount's: shown raw, as
        # plain files, and check-mount.py skips their rows
        if row['expect'] != 'error' or strip(row['file']) == row['file']:
            continue
        name, stripped = row['file'], strip(row['file'])
        hits = zmtest.lines_naming(lines, [name, stripped])
        if os.path.lexists(os.path.join(mnt, stripped)):
            if not hits:
                missing.append(name)
        elif os.path.lexists(os.path.join(mnt, name)) and not hits and has_magic(out, name):
            raw_silent.append(name)
    n_err = sum(r['expect'] == 'error' and strip(r['file']) != r['file'] for r in rows)
    res.check(f'{kind}: every error file shown under its stripped name has a log line naming it',
              not missing, f'{len(missing)} without a line: {", ".join(missing)}',
              info=f'{n_err} error rows')
    res.check(f'{kind}: every error file with the magic bytes but shown raw has a log line '
              f'saying why', not raw_silent,
              f'{len(raw_silent)} shown raw without a line: {", ".join(raw_silent)}')
    counts = []
    for row in rows:
        hits = zmtest.lines_naming(lines, [row['file'], strip(row['file'])])
        counts.append((len(hits), row['file'], hits))
    counts.sort(key=lambda c: -c[0])
    worst = counts[0] if counts else (0, '-', [])
    flood = [c for c in counts if c[0] > MAX_LINES_PER_FILE]
    res.check(f'{kind}: no file is named by more than {MAX_LINES_PER_FILE} log lines',
              not flood, '; '.join(f'{f}: {n} lines (e.g. {h[0][:150]!r} / {h[-1][:150]!r})'
                                   for n, f, h in flood),
              info=f'max {worst[0]} line(s), for {worst[1]}; {len(lines)} log lines in all')
    for n, f, h in counts[:5]:
        if n:
            print(f'#   {n} log line(s) name {f}: {h[0][:160]}')


def run_kind(res, a, kind, out, tmp, src=None):
    """Mounts src (default: out itself; test_s3_conformance.py passes an s3://
    URL holding out's files) and checks it against out's EXPECTED.tsv."""
    rows = read_expected(out)
    mnt = os.path.join(tmp, f'mnt-{kind}')
    idx = os.path.join(tmp, f'idx-{kind}')
    opts = ','.join(o for o in (a.opts, f'index_dir={idx}') if o)
    m = zmtest.Mount(os.path.abspath(a.zmount), src or out, mnt, opts=opts,
                     log_path=os.path.join(tmp, f'daemon-{kind}.log'), results=res,
                     watchdog=3600 if a.big else 900, label=f'{kind} cases mount')
    t0 = time.monotonic()
    try:
        m.__enter__()
    except zmtest.MountError as e:
        res.fail(f'{kind}: mount comes up', str(e))
        return
    res.ok(f'{kind}: mount comes up')
    try:
        run_checker(res, kind, a.corpus, out, mnt, a.reads, a.seed)
        res.check(f'{kind}: daemon still running after check-mount.py', m.alive(),
                  f'exit status {m.proc.poll()}; log tail:\n{m.log_tail()}')
        if a.big and BIG_CASES[kind] in {r['file'] for r in rows}:
            check_big(res, kind, mnt)
        check_logs(res, kind, m, mnt, rows, out)
        hwm = vm_hwm(m.proc.pid)
    except BaseException as e:
        m.__exit__(type(e), e, e.__traceback__)
        raise
    m.__exit__(None, None, None)
    print(f'# {kind}: {time.monotonic() - t0:.1f} s mounted; daemon VmHWM {hwm}', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--corpus', required=True, help='the shared corpus dir (holds the generators)')
    ap.add_argument('--big', action='store_true', help='also the > 4 GiB cases (long)')
    ap.add_argument('--opts', default='', help='extra -o options for the daemon')
    ap.add_argument('--reads', type=int, default=64, help='random preads per file (check-mount.py)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--kinds', default='gzip,xz', help='gzip,xz or one of them')
    ap.add_argument('--cases', help='reuse DIR/gzip and DIR/xz from an earlier --keep run')
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()

    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, a.zmount):
        return res.finish()
    a.corpus = os.path.abspath(a.corpus)
    if not os.path.isfile(os.path.join(a.corpus, 'check-mount.py')):
        res.fail('the corpus has check-mount.py', a.corpus)
        return res.finish()
    tmp = tempfile.mkdtemp(prefix='zmount-conformance-')
    print(f'# temp dir {tmp}', flush=True)
    t_all = time.monotonic()
    try:
        for kind in a.kinds.split(','):
            if a.cases:
                out = os.path.join(os.path.abspath(a.cases), kind)
                if not os.path.isfile(os.path.join(out, 'EXPECTED.tsv')):
                    res.fail(f'{kind}: reuse cases from {out}', 'no EXPECTED.tsv there')
                    continue
            else:
                out = os.path.join(tmp, kind)
                if not generate(res, a.corpus, kind, out, a.big):
                    continue
            t0 = time.monotonic()
            run_kind(res, a, kind, out, tmp)
            print(f'# --- {kind}: {time.monotonic() - t0:.1f} s', flush=True)
        print(f'# total time {time.monotonic() - t_all:.1f} s', flush=True)
    finally:
        left = [d for d in os.listdir(tmp) if d.startswith('mnt-')
                and zmtest.is_mounted(os.path.join(tmp, d))]
        if a.keep or left:
            print(f'# kept {tmp}' + (f' (still mounted: {left})' if left else ''), flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
