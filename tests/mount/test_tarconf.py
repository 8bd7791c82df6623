#!/usr/bin/env python3
"""test_tarconf.py -- -o tar conformance cases that mount_tar (test_tarmount.py) leaves out
(issue 34, "done when": each header kind, each bad-input kind, tars inside each compressed
format, every member read through the mount equal to `tar -xO`).

usage: test_tarconf.py --zmount PATH [--keep]

mount_tar has ustar, gnu and pax (long names, symlinks, hard links) in every compression,
and one unsafe ../ name and one corrupt .xz.  Here:
  header kinds: GNU tar's v7 and oldgnu formats; GNU sparse members ('S' headers, gnu and
      oldgnu) and pax sparse 0.0, 0.1 and 1.0; pax times with a fraction; a symlink
      target over 100 bytes (GNU 'K', pax linkpath); each as .tar.gz, .tar.xz (one Block),
      .tar.zst and plain .tar: every member the mount shows is one of `tar -tf`, every
      one of those is shown, a regular file's (and a hard link's) bytes equal
      `tar -xOf TAR NAME` (its target's for a hard link), a symlink's target and a
      directory's type are tar's;
  bad inputs (each a .tar.gz, made by Python's tarfile since GNU tar refuses them): a
      header checksum that fails, a member running past the end (the tar cut short), an
      absolute name, a ../ name, a pax path holding a NUL, a pax path longer than PATH_MAX:
      the members before a damaged header still show and read; an unsafe member is not
      shown and the rest are; one log line names each archive (two for the two unsafe
      names of one), and no file gets more than three.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import io
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

PACKS = {'.tar.gz': ['gzip', '-cn'], '.tar.xz': ['xz', '-T1', '-c'],
         '.tar.zst': ['zstd', '-q', '-c'], '.tar': None}
# name -> GNU tar's options; the members are the whole tree unless said
KINDS = {
    'v7': ['--format=v7'],
    'oldgnu': ['--format=oldgnu', '-S'],
    'gnu-sparse': ['--format=gnu', '-S'],
    'pax-sparse0.0': ['--format=pax', '--sparse-version=0.0', '-S'],
    'pax-sparse0.1': ['--format=pax', '--sparse-version=0.1', '-S'],
    'pax-sparse1.0': ['--format=pax', '--sparse-version=1.0', '-S'],
    'pax-times': ['--format=pax'],
}


def make_tree(top):
    """Short names (v7 holds 99 bytes), a sparse file, a hard link, a long symlink target."""
    os.makedirs(os.path.join(top, 'd', 'sub'))
    with open(os.path.join(top, 'd', 'log'), 'wb') as f:
        f.write(b''.join(b'%06d a line of the log\n' % i for i in range(40000)))
    with open(os.path.join(top, 'd', 'sub', 'small'), 'wb') as f:
        f.write(b'small\n')
    open(os.path.join(top, 'd', 'empty'), 'wb').close()
    with open(os.path.join(top, 'd', 'sparse'), 'wb') as f:
        f.write(os.urandom(5000))
        f.seek(1 << 20)
        f.write(os.urandom(9000))
        f.truncate(3 << 20)
    os.link(os.path.join(top, 'd', 'log'), os.path.join(top, 'd', 'hard'))
    os.symlink('sub/' + 'x' * 120, os.path.join(top, 'd', 'longlink'))
    os.utime(os.path.join(top, 'd', 'sub', 'small'), ns=(1700000000_123456789,) * 2)


def pack(raw, suffix, dest):
    cmd = PACKS[suffix]
    data = raw if cmd is None else subprocess.run(cmd, input=raw, stdout=subprocess.PIPE,
                                                  check=True).stdout
    with open(dest, 'wb') as f:
        f.write(data)


def tar_members(tar_path):
    """{name: (type, link target)} as tarfile reads them, names in normal form, with the
    directories they imply (the mount shows those)."""
    out = {}
    with tarfile.open(tar_path) as t:
        for m in t.getmembers():
            name = m.name[2:] if m.name.startswith('./') else m.name
            name = name.rstrip('/')
            if name in ('', '.'):
                continue
            kind = ('d' if m.isdir() else 'l' if m.issym() else 'h' if m.islnk() else 'f')
            out[name] = (kind, m.linkname)
    for name in list(out):  # the mount shows the directories a name implies
        while '/' in name:
            name = name.rsplit('/', 1)[0]
            out.setdefault(name, ('d', ''))
    return out


def xO(tar_path, name):
    return subprocess.run(['tar', '-xOf', tar_path, name], stdout=subprocess.PIPE,
                          check=True).stdout


def shown(mdir):
    out = {}
    for d, dirs, files in os.walk(mdir):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, mdir)] = p
    return out


def check_archive(res, label, tar_path, mdir):
    want = tar_members(tar_path)
    try:
        got = shown(mdir)
    except OSError as e:
        res.fail(f'{label}: listed', str(e))
        return
    res.check(f'{label}: the names of tar -tf', sorted(got) == sorted(want),
              f'only shown {sorted(set(got) - set(want))}, missing {sorted(set(want) - set(got))}')
    bad = []
    for name, (kind, link) in want.items():
        p = got.get(name)
        if p is None:
            continue
        st = os.lstat(p)
        if kind == 'd':
            ok = stat.S_ISDIR(st.st_mode)
        elif kind == 'l':
            ok = stat.S_ISLNK(st.st_mode) and os.readlink(p) == link
        else:
            with open(p, 'rb') as f:
                ok = stat.S_ISREG(st.st_mode) and f.read() == xO(tar_path, link if kind == 'h'
                                                                 else name)
        if not ok:
            bad.append(name)
    res.check(f'{label}: every member equals tar -xO (a symlink: its target)', not bad,
              f'differ: {bad}')


def member(t, name, data=b'x\n', pax=None):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = 1700000000
    if pax:
        ti.pax_headers = pax
    t.addfile(ti, io.BytesIO(data))


def bad_tars(d):
    """{file name: (names shown, log lines naming it)}: archives GNU tar would not write."""
    def gnu(path, names):
        with tarfile.open(path, 'w', format=tarfile.GNU_FORMAT) as t:
            for n in names:
                member(t, n, n.encode() + b'\n')

    gnu(os.path.join(d, 'cksum.tar'), ['one', 'two', 'three'])
    b = bytearray(open(os.path.join(d, 'cksum.tar'), 'rb').read())
    b[1024 + 5] ^= 0x20     # the second header's name: its checksum now fails
    open(os.path.join(d, 'cksum.tar'), 'wb').write(b)
    gnu(os.path.join(d, 'cut.tar'), ['first', 'second'])
    with tarfile.open(os.path.join(d, 'cut2.tar'), 'w', format=tarfile.GNU_FORMAT) as t:
        member(t, 'first', b'first\n')
        member(t, 'big', os.urandom(100000))
    b = open(os.path.join(d, 'cut2.tar'), 'rb').read()
    open(os.path.join(d, 'cut.tar'), 'wb').write(b[:1024 + 512 + 50000])
    os.remove(os.path.join(d, 'cut2.tar'))
    gnu(os.path.join(d, 'abs.tar'), ['ok-a', '/etc/evil', 'ok-b'])
    gnu(os.path.join(d, 'dotdot.tar'), ['ok-a', 'a/../../evil', '../evil2', 'ok-b'])
    # pax paths tarfile writes as given: one holding a NUL, one over PATH_MAX
    for name, bad in (('nul.tar', 'evil\0name'), ('long.tar', 'l/' * 2100 + 'evil')):
        with tarfile.open(os.path.join(d, name), 'w', format=tarfile.PAX_FORMAT) as t:
            member(t, 'ok-a')
            member(t, 'placeholder', pax={'path': bad})
            member(t, 'ok-b')
    for n in os.listdir(d):
        subprocess.run(['gzip', '-n', os.path.join(d, n)], check=True)
    return {'cksum': (['one'], 1), 'cut': (['first'], 1), 'abs': (['ok-a', 'ok-b'], 1),
            'dotdot': (['ok-a', 'ok-b'], 2), 'nul': (['ok-a', 'ok-b'], 1),
            'long': (['ok-a', 'ok-b'], 1)}


def check_bad(res, m, mnt, expect):
    for stem in expect:     # each tar is scanned (and logs) at its first listing
        try:
            os.listdir(os.path.join(mnt, 'bad', stem + '.tar'))
        except OSError:
            pass
    lines = m.log_lines()
    for stem, (names, nlines) in sorted(expect.items()):
        mdir = os.path.join(mnt, 'bad', stem + '.tar')
        try:
            got = sorted(os.listdir(mdir))
        except OSError as e:
            got = f'error {e}'
        res.check(f'bad {stem}: shows {names}', got == names, f'shown {got}')
        reads = []
        for n in names if got == names else []:
            with open(os.path.join(mdir, n), 'rb') as f:
                reads.append(f.read() in (n.encode() + b'\n', b'x\n'))
        res.check(f'bad {stem}: the members shown read', all(reads), f'{reads}')
        k = len([ln for ln in lines if f'{stem}.tar.gz' in ln])
        res.check(f'bad {stem}: {nlines} log line(s) name it', k == nlines,
                  f'{k} lines:\n' + m.log_tail(12))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    top = tempfile.mkdtemp(prefix='zm-tarconf-')
    try:
        tree, src, mnt, plain = (os.path.join(top, d) for d in ('tree', 'src', 'mnt', 'plain'))
        for d in (tree, os.path.join(src, 'bad'), plain):
            os.makedirs(d)
        make_tree(tree)
        cases = []
        for kind, opts in KINDS.items():
            members = ['d/sub', 'd/log', 'd/empty'] if kind == 'v7' else ['d']
            raw = subprocess.run(['tar', '-C', tree] + opts + ['-cf', '-'] + members,
                                 stdout=subprocess.PIPE, check=True).stdout
            with open(os.path.join(plain, kind + '.tar'), 'wb') as f:
                f.write(raw)
            for suffix in PACKS:
                stem = kind + suffix.replace('.', '_')
                pack(raw, suffix, os.path.join(src, stem + suffix))
                cases.append((f'{kind} {suffix}', os.path.join(plain, kind + '.tar'),
                              stem + '.tar'))
        expect = bad_tars(os.path.join(src, 'bad'))
        with zmtest.Mount(args.zmount, src, mnt, opts='tar,index_dir=none', results=res,
                          watchdog=600) as m:
            for label, tar_path, rel in cases:
                check_archive(res, label, tar_path, os.path.join(mnt, rel))
            check_bad(res, m, mnt, expect)
            worst = max((sum(1 for ln in m.log_lines() if n in ln), n)
                        for n in os.listdir(os.path.join(src, 'bad')))
            res.check('no file is named by more than 3 log lines', worst[0] <= 3, f'{worst}')
    finally:
        if args.keep:
            print(f'# kept {top}')
        else:
            shutil.rmtree(top, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
