#!/usr/bin/env python3
"""test_tarmount.py -- -o tar: tar archives shown as directories of their members (issue 34).

usage: test_tarmount.py --zmount PATH

Source tree: one member tree (directories, files of many sizes, names over
100 bytes, symlinks, hard links, an empty file and directory) written by GNU tar
as ustar, gnu and pax, each as .tar.gz, .tgz, .tar.xz (1 MiB Blocks), .txz (one
Block), .tar.zst, .tzst and plain .tar; a tar with a member named ../x (written
by Python's tarfile, since GNU tar refuses); a .tar.xz with a flipped byte.
  with -o tar: each archive shows as NAME.tar/; find and lstat in it match
      `tar -x` into a directory of the test (type, size, permission bits less
      write, mtime, link targets; hard links show as files with their bytes);
      every member's bytes match, and 200 random preads inside members do;
  the ../x member is not shown, the others are, and one log line names it;
  the damaged .tar.xz lists with EIO, one log line names it, the rest read;
  without -o tar: x.tar.gz still shows as the file x.tar.
Saved tables (stage 2), on the gnu archives with an index_dir of the test:
  the first mount's listings save one .zmt per compressed tar; a second mount
      lists every one with no byte decoded (decoded_bytes stays 0) and the
      same names; with every .zmt flipped in one byte, a third mount scans
      again (one line each saying why) and still shows the same tree.
Listing before the table is whole (lazy), on a tar of LAZY_N members of 32 KiB
(128 MiB) as .tar.gz, .tar.zst and a plain .tar, each listed at once after mount:
  the first getdents of x.tar/ returns while the scan runs (tar_scanned_bytes
      under the tar's size; the plain tar's numbers are only printed: a scan
      from the page cache may end first); the listing then goes on to the end
      and holds every member `tar -t` names, each d_ino what lstat gives;
  find x.tar/ at once (.tar.gz, .tar.zst) finds every member `tar -t` names;
  a .tar.gz whose member LAZY_BAD has a broken header: a listing begun at once
      fails with EIO (not a short list), with one log line;
  an unmount while the .tar.gz is being scanned exits 0 within 20 s.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import errno
import io
import os
import random
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

FORMATS = ('ustar', 'gnu', 'pax')
# name suffix -> command that compresses stdin to stdout (None: plain tar)
PACKS = {'.tar.gz': ['gzip', '-c'], '.tgz': ['gzip', '-c'],
         '.tar.xz': ['xz', '-T1', '--block-size=1MiB', '-c'], '.txz': ['xz', '-T1', '-c'],
         '.tar.zst': ['zstd', '-q', '-c'], '.tzst': ['zstd', '-q', '-c'], '.tar': None}


def make_members(top):
    rnd = random.Random(34)
    os.makedirs(os.path.join(top, 'logs', 'deep', 'er'))
    os.makedirs(os.path.join(top, 'empty'))
    long_dir = 'd' * 90
    os.makedirs(os.path.join(top, long_dir))
    for i in range(12):
        size = rnd.choice([0, 1, 511, 512, 513, 4096, 70000, 1 << 20, 3 << 20])
        data = b''.join(b'%08d line of member %d\n' % (k, i) for k in range(size // 24 + 1))[:size]
        sub = ('logs', 'logs/deep', 'logs/deep/er', long_dir)[i % 4] if i != 5 else long_dir
        # 190 bytes in all: ustar splits it into prefix and name, gnu and pax write it long
        name = f'f{i:02d}.log' if i != 5 else 'n' * 95 + '.log'
        with open(os.path.join(top, sub, name), 'wb') as f:
            f.write(data)
        os.utime(os.path.join(top, sub, name), (1700000000 + i * 3600, 1700000000 + i * 3600))
    os.chmod(os.path.join(top, 'logs', 'f00.log'), 0o640)
    os.chmod(os.path.join(top, 'logs', 'deep', 'f01.log'), 0o755)
    os.symlink('deep/f01.log', os.path.join(top, 'logs', 'rel-link'))
    os.symlink('/etc/passwd', os.path.join(top, 'abs-link'))
    os.symlink('../' * 3 + 'outside', os.path.join(top, 'logs', 'up-link'))
    os.link(os.path.join(top, 'logs', 'f00.log'), os.path.join(top, 'hard.log'))


def pack(tar, top, fmt, suffix, dest):
    raw = subprocess.run([tar, '-C', top, f'--format={fmt}', '-cf', '-', '.'],
                         stdout=subprocess.PIPE, check=True).stdout
    cmd = PACKS[suffix]
    data = raw if cmd is None else subprocess.run(cmd, input=raw, stdout=subprocess.PIPE,
                                                  check=True).stdout
    with open(dest, 'wb') as f:
        f.write(data)
    return raw


def shown_name(suffix, stem):
    return stem + '.tar'


def walk(root):
    """{relative path: (type, size, perm, mtime, link target or bytes)}"""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ('l', st.st_size, None, int(st.st_mtime), os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ('d', None, stat.S_IMODE(st.st_mode) & ~0o222, int(st.st_mtime), None)
            else:
                with open(p, 'rb') as f:
                    data = f.read()
                out[rel] = ('f', st.st_size, stat.S_IMODE(st.st_mode) & ~0o222,
                            int(st.st_mtime), data)
    return out


def compare(res, label, got, want, mnt_dir):
    res.check(f'{label}: the same names', sorted(got) == sorted(want),
              f'only shown: {sorted(set(got) - set(want))[:5]}, '
              f'missing: {sorted(set(want) - set(got))[:5]}')
    bad = [k for k in want if k in got and got[k] != want[k] and
           not (want[k][0] == 'd' and got[k][:2] == want[k][:2])]
    # directories: tar sets their times after extraction; compare type and mode only
    bad = [k for k in bad if not (want[k][0] == 'd' and got[k][2] == want[k][2])]
    res.check(f'{label}: type, size, mode, mtime, target and bytes of every member', not bad,
              '; '.join(f'{k}: shown {got[k][:4]} want {want[k][:4]}' for k in bad[:4]))


def random_preads(res, label, mnt_dir, want, rnd):
    files = [k for k, v in want.items() if v[0] == 'f' and v[1] > 0]
    bad = []
    for _ in range(200):
        k = rnd.choice(files)
        data = want[k][4]
        off = rnd.randrange(len(data))
        n = rnd.choice([1, 100, 4096, 65536])
        fd = os.open(os.path.join(mnt_dir, k), os.O_RDONLY)
        try:
            got = os.pread(fd, n, off)
        finally:
            os.close(fd)
        if got != data[off:off + n]:
            bad.append(f'{k}@{off}+{n}')
    res.check(f'{label}: 200 random preads inside members', not bad, ', '.join(bad[:5]))


def unsafe_tar(dest):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as t:
        for name, data in (('good.txt', b'good\n'), ('../x', b'evil\n'), ('also.txt', b'ok\n')):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
    with open(dest, 'wb') as f:
        f.write(subprocess.run(['gzip', '-c'], input=buf.getvalue(), stdout=subprocess.PIPE,
                               check=True).stdout)


def damaged_tar(tar, top, dest):
    raw = subprocess.run([tar, '-C', top, '-cf', '-', '.'], stdout=subprocess.PIPE,
                         check=True).stdout
    xz = bytearray(subprocess.run(['xz', '-T1', '-c'], input=raw, stdout=subprocess.PIPE,
                                  check=True).stdout)
    xz[len(xz) // 2] ^= 0x55
    with open(dest, 'wb') as f:
        f.write(xz)


def check_bad_ones(res, m, mnt):
    names = sorted(os.listdir(os.path.join(mnt, 'bad', 'unsafe.tar')))
    res.check('unsafe: ../x not shown, the others are', names == ['also.txt', 'good.txt'],
              f'shown {names}')
    with open(os.path.join(mnt, 'bad', 'unsafe.tar', 'also.txt'), 'rb') as f:
        res.check('unsafe: a safe member reads', f.read() == b'ok\n')
    try:
        os.listdir(os.path.join(mnt, 'bad', 'damaged.tar'))
        res.fail('damaged: listing fails with EIO', 'it listed')
    except OSError as e:
        res.check('damaged: listing fails with EIO', e.errno == 5, f'errno {e.errno}')
    try:
        os.stat(os.path.join(mnt, 'bad', 'damaged.tar', 'logs'))
        res.fail('damaged: a lookup inside fails with EIO', 'it was found')
    except OSError as e:
        res.check('damaged: a lookup inside fails with EIO', e.errno == 5, f'errno {e.errno}')
    lines = m.log_lines()
    n_unsafe = len([ln for ln in lines if 'unsafe.tar' in ln and '../x' in ln])
    n_damaged = len([ln for ln in lines if 'damaged.tar' in ln])
    res.check('unsafe: one log line names ../x', n_unsafe == 1, f'{n_unsafe} lines:\n' +
              m.log_tail(10))
    res.check('damaged: one log line names it', n_damaged == 1, f'{n_damaged} lines:\n' +
              m.log_tail(10))


def names_under(root):
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, dirs, files in os.walk(root) for n in dirs + files)


def check_saved(res, zmount, src, mnt, idx):
    tars = sorted(n for n in os.listdir(src) if not n.endswith('.tar'))
    shown = [os.path.join(mnt, n.split('.')[0] + '.tar') for n in tars]
    opts = f'tar,noindex,index_dir={idx}'
    with zmtest.Mount(zmount, src, mnt, opts=opts, results=res):
        first = [names_under(d) for d in shown]
    saved = [n for n in os.listdir(idx) if n.endswith('.zmt')]
    res.check('saved: one .zmt per compressed tar', len(saved) == len(tars),
              f'{len(saved)} for {len(tars)}: {sorted(os.listdir(idx))}')
    with zmtest.Mount(zmount, src, mnt, opts=opts, results=res):
        again = [names_under(d) for d in shown]
        dec = zmtest.stats(mnt).get('decoded_bytes')
    res.check('saved: a second mount lists the same members', again == first)
    res.check('saved: a second mount lists with no byte decoded', dec == 0,
              f'decoded_bytes={dec}')
    for n in saved:
        with open(os.path.join(idx, n), 'r+b') as f:
            f.seek(os.path.getsize(os.path.join(idx, n)) // 2)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0x40]))
    with zmtest.Mount(zmount, src, mnt, opts=opts, results=res) as m:
        third = [names_under(d) for d in shown]
        dec = zmtest.stats(mnt).get('decoded_bytes')
        why = [ln for ln in m.log_lines() if 'saved member table not used' in ln]
    res.check('saved, damaged: scanned again, the same members', third == first and dec > 0,
              f'decoded_bytes={dec}')
    res.check('saved, damaged: one line per table says why', len(why) == len(saved),
              f'{len(why)} lines for {len(saved)} tables')


LAZY_N = 4000
LAZY_SIZE = 32 << 10
LAZY_BAD = 2000  # the member whose header lazy_bad.tar.gz breaks


def lazy_tars(src):
    """LAZY_N text members at the top, as .tar.gz, .tar.zst and .tar, and a .tar.gz whose
    member LAZY_BAD has a broken header (in a directory of its own); the tar's size."""
    buf = io.BytesIO()
    line = b'%05d a log line of a member read before its table is whole\n'
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as t:
        for i in range(LAZY_N):
            data = ((line % i) * (LAZY_SIZE // 32))[:LAZY_SIZE]
            ti = tarfile.TarInfo(f'f{i:05d}.log')
            ti.size = len(data)
            ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    os.makedirs(os.path.join(src, 'bad'))
    bad = bytearray(raw)
    bad[LAZY_BAD * (512 + LAZY_SIZE)] ^= 0x20  # a name byte: the checksum no longer holds
    for suffix, cmd, data in (('.tar.gz', ['gzip', '-1', '-c'], raw),
                              ('.tar.zst', ['zstd', '-q', '-c'], raw), ('.tar', None, raw),
                              ('bad.tar.gz', ['gzip', '-1', '-c'], bytes(bad))):
        if cmd:
            data = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, check=True).stdout
        name = 'bad/lazy_bad.tar.gz' if suffix.startswith('bad') else \
            'lazy_' + suffix.replace('.', '') + suffix
        with open(os.path.join(src, name), 'wb') as f:
            f.write(data)
    return len(raw)


def tar_t(path):
    out = subprocess.run(['tar', '-tf', path], stdout=subprocess.PIPE, check=True).stdout
    return sorted(out.decode().split())


def check_first_batch(res, mnt, n, d, size, want, last=True):
    """The first getdents of x.tar/ returns while the scan runs; the listing goes on to
    the end, whole, with the numbers stat gives.  Returns whether the scan was still
    running when the first batch was counted; unless last, a scan that had ended is
    only noted, for the caller to try again on a fresh mount."""
    before = zmtest.stats(mnt).get('tar_scanned_bytes', 0)
    with os.scandir(d) as it:
        got = [next(it)]
        # the tables' sum: this archive's bytes are what the first batch added
        scanned = zmtest.stats(mnt).get('tar_scanned_bytes', size) - before
        got += list(it)
    # a plain tar's scan only reads, no decoding: it may win the race, so noted only;
    # so may any scan on a loaded machine before the stats are read (retried, see check_lazy)
    early = scanned < size
    check = res.check if not n.startswith('lazy_tar.') and (last or early) else \
        lambda *a, **k: res.note(f'lazy {n}: first batch with {scanned} bytes scanned')
    check(f'lazy {n}: the first batch returns before the scan ends', scanned < size,
          f'{scanned} of {size} bytes scanned', info=f'{scanned >> 20} of {size >> 20} MiB')
    names = sorted(e.name for e in got)
    res.check(f'lazy {n}: a listing begun during the scan is whole (tar -t)', names == want,
              f'{len(names)} of {len(want)} members')
    bad = [e.name for e in got if e.inode() != os.lstat(e.path).st_ino]
    res.check(f'lazy {n}: d_ino during the scan is what stat gives', not bad,
              f'{len(bad)} differ, e.g. {bad[:3]}')
    return early


def check_lazy(res, zmount, top):
    src, mnt = os.path.join(top, 'lazy'), os.path.join(top, 'mnt')
    size = lazy_tars(src)
    tars = sorted(n for n in os.listdir(src) if n.startswith('lazy_'))
    want = {n: tar_t(os.path.join(src, n)) for n in tars}
    # Under load the scan of a compressed tar may also end before the stats are read after
    # the first batch: such a tar is tried again on a fresh mount, up to three tries in all.
    # A listing that waited for the scan fails all three.
    todo = [n for n in tars if not n.startswith('lazy_tar.')]
    for attempt in range(3):
        for n in tars:  # scanned from the disk, not from pages the writer or a try left
            fd = os.open(os.path.join(src, n), os.O_RDONLY)
            os.fsync(fd)  # dirty pages are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        with zmtest.Mount(zmount, src, mnt, opts='tar,index_dir=none,noindex', results=res):
            for n in (tars if attempt == 0 else list(todo)):
                early = check_first_batch(res, mnt, n, os.path.join(mnt, n.split('.')[0] + '.tar'),
                                          size, want[n], last=attempt == 2)
                if early and n in todo:
                    todo.remove(n)
        if not todo:
            break
    # find (every member, no lookup first) and a listing of a tar damaged half-way
    # noindex: the background indexer's gzip pass would build the tables (ns_tar.c, struct
    # ptap) before these listings begin; here each listing starts its tar's pass
    with zmtest.Mount(zmount, src, mnt, opts='tar,index_dir=none,noindex', results=res) as m:
        for n in ('lazy_targz.tar.gz', 'lazy_tarzst.tar.zst'):
            d = os.path.join(mnt, n.split('.')[0] + '.tar')
            out = subprocess.run(['find', d, '-mindepth', '1', '-printf', '%P\\n'],
                                 stdout=subprocess.PIPE, check=True).stdout
            got = sorted(out.decode().split())
            res.check(f'lazy {n}: find at once finds every member (tar -t)', got == want[n],
                      f'{len(got)} of {len(want[n])} members')
        try:
            got = os.listdir(os.path.join(mnt, 'bad', 'lazy_bad.tar'))
            res.fail('lazy bad: a listing begun during the scan fails with EIO',
                     f'it listed {len(got)} members')
        except OSError as e:
            res.check('lazy bad: a listing begun during the scan fails with EIO',
                      e.errno == errno.EIO, f'errno {e.errno}')
        said = [ln for ln in m.log_lines() if 'lazy_bad' in ln]
        res.check('lazy bad: one log line names it', len(said) == 1,
                  f'{len(said)} lines:\n' + m.log_tail(10))
    # unmounted while a scan runs: the scan thread ends at its next chunk, the daemon exits 0
    with zmtest.Mount(zmount, src, mnt, opts='tar,index_dir=none,noindex', results=res,
                      label='unmount while scanning'):
        with os.scandir(os.path.join(mnt, 'lazy_targz.tar')) as it:
            next(it)
        scanning = zmtest.stats(mnt).get('tar_scanning')
    res.note(f'unmounted after a first batch, tar_scanning={scanning}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    tar = shutil.which('tar')
    res = zmtest.Results()
    top = tempfile.mkdtemp(prefix='zm-tarmount-')
    try:
        members, src, mnt = (os.path.join(top, d) for d in ('members', 'src', 'mnt'))
        os.makedirs(os.path.join(src, 'bad'))
        make_members(members)
        shown = {}
        for fmt in FORMATS:
            os.makedirs(os.path.join(src, fmt))
            for suffix in PACKS:
                stem = 'x' + suffix.replace('.', '_')
                raw = pack(tar, members, fmt, suffix, os.path.join(src, fmt, stem + suffix))
                shown[(fmt, suffix)] = (os.path.join(fmt, stem + '.tar'), raw)
        unsafe_tar(os.path.join(src, 'bad', 'unsafe.tar.gz'))
        damaged_tar(tar, members, os.path.join(src, 'bad', 'damaged.tar.xz'))
        rnd = random.Random(7)
        with zmtest.Mount(args.zmount, src, mnt, opts='tar,index_dir=none', results=res,
                          watchdog=600) as m:
            for (fmt, suffix), (rel, raw) in shown.items():
                ex = os.path.join(top, 'ex')
                shutil.rmtree(ex, ignore_errors=True)
                os.makedirs(ex)
                # the test's own extraction: the mount itself never writes a file
                subprocess.run([tar, '-C', ex, '-xf', '-'], input=raw, check=True)
                want = walk(ex)
                mdir = os.path.join(mnt, rel)
                label = f'{fmt} {suffix}'
                res.check(f'{label}: shown as a directory', os.path.isdir(mdir))
                compare(res, label, walk(mdir), want, mdir)
                random_preads(res, label, mdir, want, rnd)
            check_bad_ones(res, m, mnt)
        with zmtest.Mount(args.zmount, os.path.join(src, 'gnu'), mnt, opts='index_dir=none',
                          results=res) as m:
            st = os.stat(os.path.join(mnt, 'x_tar_gz.tar'))
            res.check('without -o tar: x.tar.gz is the file x.tar', stat.S_ISREG(st.st_mode))
        idx = os.path.join(top, 'idx')
        os.makedirs(idx, mode=0o700)
        check_saved(res, args.zmount, os.path.join(src, 'gnu'), mnt, idx)
        check_lazy(res, args.zmount, top)
    finally:
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
