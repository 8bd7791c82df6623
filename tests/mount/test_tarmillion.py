#!/usr/bin/env python3
"""test_tarmillion.py -- the member table's memory at its worst case (issue 34, item 4).

usage: test_tarmillion.py --zmount PATH [--members N]

A plain tar of N (1,000,000) empty files named dNNN/NNNNNN, written here header by
header (no file on disk per member), mounted with -o tar:
  cache_size=1G (a table cap of 256 MiB): a lookup of the last member while the scan
      runs (answered as the scan reaches it, from a hash of the paths reached); the root
      lists its 1000 directories, one directory its members, 100 members stat as empty
      files; the daemon's VmHWM grows by no more than the README's term (table: 96 B +
      name + 1 per member; view: 40 B per member and per '/' in the names; that hash: at
      most 48 B per path reached) plus 16 MiB of slack;
  cache_size=512M (a cap of 128 MiB), over 1.2x as many members (~124 MiB of table,
      and ~206 MiB with the view): a lookup of a directory the scan reached early
      succeeds (lookups do not wait for the whole table), but listing it fails with EIO,
      as does listing the root, and one log line says the table is over its limit; a
      lookup of the last member, asked during the scan, fails too, and VmHWM grows by at
      most the cap + 16 MiB: the hash of the paths reached counts in the cap with the
      table (it is dropped there, and lookups wait for the table).  Before 2026-12-04
      that hash grew past the cap (48 MiB more) and answered that lookup.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import errno
import os
import random
import shutil
import stat
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

PER_DIR = 1000
MEMBER = 96   # sizeof(struct tar_member)
VIEW = 36 + 4  # tarview_cost: per node before merging; + the node's inode number (first_cost)
SLACK = 16 << 20


def name_of(i):
    return b'd%03d/%06d' % (i // PER_DIR, i)


def header_template():
    h = bytearray(512)
    h[100:108] = b'0000644\0'
    h[108:116] = b'0001750\0'
    h[116:124] = b'0001750\0'
    h[124:136] = b'00000000000\0'
    h[136:148] = b'14524522400\0'  # 1700000000
    h[148:156] = b' ' * 8
    h[156:157] = b'0'
    h[257:265] = b'ustar\x0000'
    return h, sum(h)


def write_tar(path, n):
    tmpl, base = header_template()
    with open(path, 'wb') as f:
        batch = []
        for i in range(n):
            nm = name_of(i)
            h = bytearray(tmpl)
            h[0:len(nm)] = nm
            h[148:156] = b'%06o\0 ' % (base + sum(nm))
            batch.append(bytes(h))
            if len(batch) == 4096:
                f.write(b''.join(batch))
                batch = []
        f.write(b''.join(batch) + bytes(1024))


def term_bytes(n):
    """The README's term for this archive: tartab_bytes + tarview_cost."""
    name_len = len(name_of(0))
    table = n * (MEMBER + name_len + 1) + 2  # + the empty uname and gname, once
    view = (1 + 2 * n) * VIEW + 8  # root, each member, its one parent per member
    return table + view


def listed(res, m, mnt, n):
    top = os.path.join(mnt, 'm.tar')
    t0 = time.monotonic()
    with os.scandir(top) as it:
        dirs = [next(it).name]  # the first getdents: while the scan runs
        took = time.monotonic() - t0
        dirs += [e.name for e in it]  # the rest streams until the scan ends
    whole = time.monotonic() - t0
    ndirs = (n + PER_DIR - 1) // PER_DIR
    res.check('1G: the root lists every directory', len(dirs) == ndirs,
              f'{len(dirs)} of {ndirs}',
              info=f'first batch in {took:.2f} s, whole listing after {whole:.1f} s')
    kids = os.listdir(os.path.join(top, 'd000'))
    res.check('1G: a directory lists its members', len(kids) == min(n, PER_DIR), f'{len(kids)}')
    rnd = random.Random(34)
    bad = []
    for i in rnd.sample(range(n), 100):
        st = os.lstat(os.path.join(top, name_of(i).decode()))
        if not stat.S_ISREG(st.st_mode) or st.st_size != 0:
            bad.append(name_of(i).decode())
    res.check('1G: 100 members stat as empty files', not bad, ', '.join(bad[:5]))


def early_bytes(n):
    """The README's bound on the hash of paths reached: 48 B per member and directory."""
    return 48 * (n + (n + PER_DIR - 1) // PER_DIR)


def last_lookup(res, mnt, n, label, want_ok):
    """lstat of the last member, which the scan reaches last."""
    path = os.path.join(mnt, 'm.tar', name_of(n - 1).decode())
    try:
        st = os.lstat(path)
        res.check(f'{label}: a lookup of the last member during the scan', want_ok and
                  stat.S_ISREG(st.st_mode), 'it succeeded' if not want_ok else oct(st.st_mode))
    except OSError as e:
        res.check(f'{label}: a lookup of the last member during the scan', not want_ok,
                  zmtest.errname(e))


def check_fits(res, zmount, src, mnt, n):
    with zmtest.Mount(zmount, src, mnt, opts='tar,index_dir=none,cache_size=1G',
                      results=res, watchdog=600) as m:
        before = zmtest.proc_status(m.proc.pid)['VmHWM']
        last_lookup(res, mnt, n, '1G', True)
        listed(res, m, mnt, n)
        after = zmtest.proc_status(m.proc.pid)['VmHWM']
        st = zmtest.stats(mnt)
    grew, term = after - before, term_bytes(n) + early_bytes(n)
    res.check('1G: VmHWM grows within the README term + 16 MiB', grew <= term + SLACK,
              f'grew {grew >> 20} MiB, term {term >> 20} MiB',
              info=f'VmHWM {before >> 20} -> {after >> 20} MiB (+{grew / n:.0f} B/member; '
              f'term {term / n:.0f} B/member); tar_table_bytes={st.get("tar_table_bytes")}')


def check_capped(res, zmount, src, mnt, n):
    with zmtest.Mount(zmount, src, mnt, opts='tar,index_dir=none,cache_size=512M',
                      results=res, watchdog=600) as m:
        before = zmtest.proc_status(m.proc.pid)['VmHWM']
        # d000 is reached before the cap: its lookup answers at once, its listing waits
        try:
            os.lstat(os.path.join(mnt, 'm.tar', 'd000'))
            res.check('512M: a lookup of a name reached before the cap succeeds', True)
        except OSError as e:
            res.fail('512M: a lookup of a name reached before the cap succeeds',
                     zmtest.errname(e))
        last_lookup(res, mnt, n, '512M', False)
        grew = zmtest.proc_status(m.proc.pid)['VmHWM'] - before
        res.check('512M: VmHWM grows within the cap (128 MiB) + 16 MiB',
                  grew <= (128 << 20) + SLACK, f'grew {grew >> 20} MiB')
        for label, fn in (('listing d000', lambda: os.listdir(os.path.join(mnt, 'm.tar', 'd000'))),
                          ('listing', lambda: os.listdir(os.path.join(mnt, 'm.tar')))):
            try:
                fn()
                res.fail(f'512M: {label} fails with EIO', 'it succeeded')
            except OSError as e:
                res.check(f'512M: {label} fails with EIO', e.errno == errno.EIO,
                          zmtest.errname(e))
        lines = [ln for ln in m.log_lines() if 'over its limit' in ln]
    res.check('512M: one log line says the table is over its limit', len(lines) == 1,
              f'{len(lines)} lines:\n' + m.log_tail(10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--members', type=int, default=1000000)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    top = tempfile.mkdtemp(prefix='zm-tarmillion-')
    try:
        src, mnt = os.path.join(top, 'src'), os.path.join(top, 'mnt')
        os.makedirs(src)
        t0 = time.monotonic()
        write_tar(os.path.join(src, 'm.tar'), args.members)
        zmtest.Results.note(f'wrote {args.members} headers in {time.monotonic() - t0:.1f} s')
        check_fits(res, args.zmount, src, mnt, args.members)
        more = args.members * 6 // 5
        write_tar(os.path.join(src, 'm.tar'), more)
        check_capped(res, args.zmount, src, mnt, more)
    finally:
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
