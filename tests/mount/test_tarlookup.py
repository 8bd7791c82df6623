#!/usr/bin/env python3
"""test_tarlookup.py -- -o tar: a lookup inside x.tar/ during the member table's scan answers as
soon as the scan has reached the name (issue 34: reaching the directory must not make the mount
wait for the whole archive).  Counted, not timed.

usage: test_tarlookup.py --zmount PATH [--keep]

Source: x.tar.gz (gzip -1, GNU format) of
  first.txt       4 KiB of text, the first member;
  logs/early.log  a small member under a directory with no header yet;
  link            a symlink to first.txt;
  big/part-NNN    BIG_MEMBERS members of 8 MiB of base64 text (240 MiB);
  logs/           the directory's own header, late (mode 0700);
  last.txt        small.
One mount, tar,noindex,timeout=0, an empty index_dir: the first lookup starts the scan (the
gzip index pass run by the archive's open feeds it).  Checks, reading user.zmount.stats:
early:   stat of first.txt, logs and logs/early.log, and readlink of link, return while
         tar_scanned_bytes is under half the tar (before this change each waited for the
         whole table; readlink until 2026-12-05);
absent:  stat of a name not in the tar is ENOENT only once the whole tar was fed;
numbers: the st_ino each early stat gave equals the d_ino of a listing made after the scan,
         and its stat then;
final:   once the scan is over, logs shows its own header's mode (0700, shown 0500), not the
         implied directory's (0755, shown 0555) that the early stat gave; the early members read as tar -xO.
Then y.tar.xz (xz -0, one Block): first.txt, CUT_PARTS members of 8 MiB, then cut.bin, whose
header says 1 GiB while the archive ends 1 MiB into its data (a tar cut short):
open:    first.txt and part-000 open, and read right, before half of y.tar is scanned (opens
         waited for the whole table until 2026-12-05);
cut:     cut.bin is never shown (ENOENT), and one log line names the archive and its offset.
(A .tar.gz member's open waits for the gzip index pass, as any .gz's open does.)
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import base64
import errno
import io
import os
import random
import subprocess
import sys
import tarfile
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

MiB = 1 << 20
BIG_MEMBERS = 30
BIG_SIZE = 8 * MiB
CUT_PARTS = 6


def add(tf, name, data=None, mode=0o644, kind=tarfile.REGTYPE):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.mtime = 1764806400
    ti.size = len(data) if data is not None else 0
    tf.addfile(ti, io.BytesIO(data) if data is not None else None)


def make_tar(path):
    """Writes x.tar.gz; returns (tar size, {name: bytes} of the small members)."""
    rnd = random.Random(34)
    block = base64.b64encode(rnd.randbytes(BIG_SIZE * 3 // 4))[:BIG_SIZE]
    small = {'first.txt': b''.join(b'%06d first member line\n' % i for i in range(4096 // 24)),
             'logs/early.log': b'early\n' * 100, 'last.txt': b'last\n'}
    with open(path, 'wb') as out:
        gz = subprocess.Popen(['gzip', '-1', '-n', '-c'], stdin=subprocess.PIPE, stdout=out)
        counter = io.BufferedWriter(gz.stdin)
        with tarfile.open(fileobj=counter, mode='w|', format=tarfile.GNU_FORMAT) as tf:
            add(tf, 'first.txt', small['first.txt'])
            add(tf, 'logs/early.log', small['logs/early.log'])
            ti = tarfile.TarInfo('link')
            ti.type, ti.linkname, ti.mtime = tarfile.SYMTYPE, 'first.txt', 1764806400
            tf.addfile(ti)
            for i in range(BIG_MEMBERS):
                # differ per member, so gzip cannot reuse the previous one
                add(tf, f'big/part-{i:03d}', b'%08d' % i + block[8:])
            add(tf, 'logs', mode=0o700, kind=tarfile.DIRTYPE)
            add(tf, 'last.txt', small['last.txt'])
        counter.flush()
        gz.stdin.close()
        if gz.wait() != 0:
            raise RuntimeError('gzip failed')
    size = int(subprocess.run(f'gzip -dc {path} | wc -c', shell=True, check=True,
                              stdout=subprocess.PIPE).stdout)
    return size, small


def early(res, mnt, tar_size):
    """The early stats: {path: st_ino}."""
    top = os.path.join(mnt, 'x.tar')
    inos = {}
    for rel, want_dir in (('first.txt', False), ('logs', True), ('logs/early.log', False)):
        st = os.stat(os.path.join(top, rel))
        got = zmtest.stats(mnt)
        fed = got.get('tar_scanned_bytes', -1)
        res.check(f'early: stat {rel} returns before half the tar is scanned',
                  0 <= fed < tar_size // 2 and got.get('tar_scanning') == 1,
                  f'tar_scanned_bytes={fed} of {tar_size}, '
                  f'tar_scanning={got.get("tar_scanning")}',
                  info=f'{fed} of {tar_size} B fed')
        res.check(f'early: {rel} is a {"directory" if want_dir else "file"}',
                  os.path.isdir(os.path.join(top, rel)) == want_dir, oct(st.st_mode))
        inos[rel] = st.st_ino
    target = os.readlink(os.path.join(top, 'link'))
    scanned(res, mnt, tar_size, 'early: readlink link')
    res.check('early: link points to first.txt', target == 'first.txt', repr(target))
    return inos


def scanned(res, mnt, tar_size, what, before=0):
    """Checks that fewer than half of tar_size bytes (past before) were fed to scanners."""
    got = zmtest.stats(mnt)
    fed = got.get('tar_scanned_bytes', -1) - before
    res.check(f'{what} returns before half the tar is scanned',
              0 <= fed < tar_size // 2 and got.get('tar_scanning') == 1,
              f'tar_scanned_bytes={fed} of {tar_size}, tar_scanning={got.get("tar_scanning")}')


def make_cut(path, first):
    """Writes y.tar.xz: first.txt, CUT_PARTS members of 8 MiB, then cut.bin's header (1 GiB)
    and 1 MiB of its data.  Returns (the tar's size, part-000's bytes)."""
    rnd = random.Random(35)
    block = base64.b64encode(rnd.randbytes(BIG_SIZE * 3 // 4))[:BIG_SIZE]
    members = [('first.txt', len(first), first)]
    members += [(f'part-{i:03d}', BIG_SIZE, b'%08d' % i + block[8:]) for i in range(CUT_PARTS)]
    members.append(('cut.bin', 1 << 30, block[:MiB]))
    raw = []
    for name, size, body in members:
        ti = tarfile.TarInfo(name)
        ti.size, ti.mtime = size, 1764806400
        raw += [ti.tobuf(format=tarfile.GNU_FORMAT), body, b'\0' * (-len(body) % 512)]
    raw = b''.join(raw)
    with open(path, 'wb') as out:
        subprocess.run(['xz', '-0', '-T1', '-c'], input=raw, stdout=out, check=True)
    return len(raw), members[1][2]


def cut(res, mnt, m, tar_size, first, part):
    """Opens during y.tar.xz's scan, then its member cut short."""
    top = os.path.join(mnt, 'y.tar')
    before = zmtest.stats(mnt).get('tar_scanned_bytes', 0)
    for rel, want, n in (('first.txt', first, len(first)), ('part-000', part, 65536)):
        with open(os.path.join(top, rel), 'rb') as f:
            scanned(res, mnt, tar_size, f'open: {rel}', before)
            body = f.read(n)
        res.check(f'open: {rel} opened during the scan reads as tar -xO', body == want[:n],
                  f'{len(body)} bytes')
    try:
        os.stat(os.path.join(top, 'cut.bin'))
        res.check('cut: cut.bin is not shown', False, 'stat succeeded')
    except OSError as e:
        res.check('cut: cut.bin is not shown', e.errno == errno.ENOENT, str(e))
    off = str(len(first) + 512 + (len(first) % 512 and 512 - len(first) % 512)
              + CUT_PARTS * (512 + BIG_SIZE))
    said = [ln for ln in zmtest.lines_naming(m.log_lines(), ['y.tar.xz'])
            if 'runs past the end' in ln and off in ln]
    res.check(f'cut: one log line names y.tar.xz and cut.bin\'s offset {off}', len(said) == 1,
              '\n'.join(said) or m.log_tail())


def absent(res, mnt, tar_size):
    try:
        os.stat(os.path.join(mnt, 'x.tar', 'not-there'))
        res.check('absent: a name not in the tar is ENOENT', False, 'stat succeeded')
    except OSError as e:
        fed = zmtest.stats(mnt).get('tar_scanned_bytes', -1)
        res.check('absent: a name not in the tar is ENOENT', e.errno == errno.ENOENT, str(e))
        res.check('absent: ... only once the whole tar was fed', fed >= tar_size - 10240,
                  f'tar_scanned_bytes={fed} of {tar_size}')


def final(res, mnt, inos, small):
    top = os.path.join(mnt, 'x.tar')
    listed = {e.name: e.inode() for e in os.scandir(top)}
    listed.update({'logs/' + e.name: e.inode() for e in os.scandir(os.path.join(top, 'logs'))})
    for rel, ino in inos.items():
        res.check(f'numbers: {rel}: the early st_ino is the listing\'s d_ino and stat\'s',
                  listed.get(rel) == ino == os.stat(os.path.join(top, rel)).st_ino,
                  f'early {ino:#x}, listed {listed.get(rel, 0):#x}, '
                  f'stat {os.stat(os.path.join(top, rel)).st_ino:#x}')
    mode = os.stat(os.path.join(top, 'logs')).st_mode & 0o7777
    # the mount is read-only: 0700 shows as 0500, an implied directory's 0755 as 0555
    res.check('final: logs shows its own header\'s mode', mode == 0o500, oct(mode))
    for rel in ('first.txt', 'logs/early.log', 'last.txt'):
        with open(os.path.join(top, rel), 'rb') as f:
            body = f.read()
        res.check(f'final: {rel} reads as tar -xO', body == small[rel], f'{len(body)} bytes')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    top = tempfile.mkdtemp(prefix='zm-tarlookup-')
    try:
        src, mnt, idx = (os.path.join(top, d) for d in ('src', 'mnt', 'idx'))
        for d in (src, mnt, idx):
            os.makedirs(d)
        tar_size, small = make_tar(os.path.join(src, 'x.tar.gz'))
        y_size, y_part = make_cut(os.path.join(src, 'y.tar.xz'), small['first.txt'])
        with zmtest.Mount(args.zmount, src, mnt, opts=f'tar,noindex,timeout=0,index_dir={idx}',
                          results=res, label='lookup') as m:
            inos = early(res, mnt, tar_size)
            absent(res, mnt, tar_size)
            final(res, mnt, inos, small)
            cut(res, mnt, m, y_size, small['first.txt'], y_part)
    finally:
        zmtest.cleanup_top(top, args.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
