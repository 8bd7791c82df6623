#!/usr/bin/env python3
"""test_mount.py -- end-to-end test of the zmount FUSE daemon.

usage: test_mount.py --zmount PATH [--corpus DIR] [--seed N] [--reads N]
                     [--keep] [--generate-only DIR]

What it does:
  1. Bad invocations (`-o cache_size=banana`, a missing SRC, a SRC that is a
     regular file) must each exit 1 with exactly one line on stderr and leave
     nothing mounted.
  2. Generates a source tree in a temp dir (about 10 s) with deterministic
     content (log-like lines from a seeded PRNG plus binary and zero runs) and
     the shapes zmount must handle: one-Block xz, many-Block xz, two xz
     Streams with Stream Padding, gzip, concatenated gzip members, pigz -i,
     bgzip (BGZF), empty archives, .tgz/.txz/.tar.gz/.tar.xz, nesting, spaces
     and UTF-8 in names, plain files, symlinks, collisions (x + x.gz, a
     directory or symlink x + x.gz, x.tar + x.tgz), .gz/.xz names without the
     magic or with an unreadable header (shown raw), a 600-entry directory,
     dup.gz + dup.xz (checked loosely), and three damaged archives: an xz
     Block with a flipped data byte, an xz Block with a flipped check byte, a
     gzip file with a flipped byte.
  3. Mounts it with `-f -o cache_size=8M,span=256K` (small, so the cache
     evicts) and checks: a cold concurrent first access, exact names per
     directory, st_size and no write bits, distinct st_ino, sha256 of every
     file, >= 2000 random preads (buffered after POSIX_FADV_DONTNEED, and
     O_DIRECT so odd offsets reach the daemon), cat/grep -c/tail -c/dd/cmp,
     8 concurrent readers, EROFS on every kind of write, mmap/statvfs/lseek,
     EIO + a daemon log line for the damaged ranges while everything else
     still reads back, no error lines about healthy files, and (with
     --corpus) the reference checker check-mount.py over the generated
     archives.  fusermount3 -u; the daemon must exit 0 within 20 s.
  4. Five short extra mounts: without -f (the daemon detaches; it must go
     away after fusermount3 -u), with -d, with -o max_read=65536 (the
     largest archive must read back), with RLIMIT_NOFILE=256 while
     300 archives are read one after another (the daemon must stay within
     its fd budget) and then held open all at once (EMFILE must happen, be
     logged once, and go away once they are closed), and one where a 24 MiB gzip (indexed in the background)
     and a 1 MiB-Block xz are read in order: the stats must show bytes
     decoded ahead by the workers for each, and the mount's read_ahead_kb
     must be 1024.

Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import errno
import gzip
import io
import math
import mmap
import os
import random
import resource
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from zmtest import drop_cache, errname, mount_alive, open_direct, sha, sha_path  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
MOUNT_OPTS = 'cache_size=8M,span=256K'
SPAN = 256 * KiB
MAX_LEN = 3 * MiB // 2
WATCHDOG_S = 300

# --------------------------------------------------------------------------
# deterministic content
# --------------------------------------------------------------------------
SERVICES = ['sshd', 'nginx', 'kernel', 'cron', 'postgres', 'dockerd', 'systemd', 'zmountd']
LEVELS = ['INFO'] * 12 + ['DEBUG'] * 6 + ['WARN'] * 3 + ['ERROR']
WORDS = ('accepted connection from request served in ms user session closed opened '
         'block index cache miss hit evicted checkpoint span offset length read write '
         'timeout retry backend upstream status queue worker thread started stopped '
         'config reload signal received disk quota exceeded latency bytes sent').split()


def log_lines(rnd, size):
    """About SIZE bytes of syslog-ish text (whole lines)."""
    out = []
    n = 0
    t = 1_700_000_000 + rnd.randrange(10_000_000)
    choice, randrange = rnd.choice, rnd.randrange
    while n < size:
        t += randrange(3)
        words = ' '.join(choice(WORDS) for _ in range(randrange(3, 12)))
        line = (f'{t}.{randrange(1000):03d} host{randrange(64):02d} {choice(SERVICES)}'
                f'[{randrange(1, 65536)}]: {choice(LEVELS)} {words} '
                f'id={rnd.getrandbits(32):08x} n={randrange(100000)}\n')
        out.append(line)
        n += len(line)
    return ''.join(out).encode()


def content(seed, size, binary=0.08):
    """Exactly SIZE bytes: log text with runs of random bytes and of zeros mixed in."""
    rnd = random.Random(seed)
    parts = []
    n = 0
    while n < size:
        r = rnd.random()
        if r < binary:
            chunk = rnd.randbytes(rnd.randrange(512, 24 * KiB))
        elif r < binary + 0.02:
            chunk = bytes(rnd.randrange(1, 40 * KiB))
        else:
            chunk = log_lines(rnd, rnd.randrange(4 * KiB, 96 * KiB))
        parts.append(chunk)
        n += len(chunk)
    return b''.join(parts)[:size]


# --------------------------------------------------------------------------
# compressors and archive inspection
# --------------------------------------------------------------------------
def run_filter(argv, data):
    p = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError(f'{" ".join(argv)} failed: {p.stderr.decode(errors="replace")}')
    return p.stdout


# preset 3 speed with the 8 MiB dictionary of xz's default preset 6
XZ = ['xz', '-T1', '--lzma2=preset=3,dict=8MiB', '-c']
XZ_64K = ['xz', '-T1', '--lzma2=preset=3,dict=8MiB', '--block-size=64KiB', '-c']
GZIP = ['gzip', '-6', '-n', '-c']
PIGZ_I = ['pigz', '-i', '-n', '-p', '2', '-c']
BGZIP = ['bgzip', '-c']


def xz_list(path):
    """(streams, blocks) from `xz --robot -lvv`; blocks are dicts with the
    compressed offset, uncompressed offset/size, total size, header size."""
    p = subprocess.run(['xz', '--robot', '-lvv', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=True)
    streams, blocks = [], []
    for line in p.stdout.decode().splitlines():
        c = line.split('\t')
        if c[0] == 'stream':
            streams.append(dict(coff=int(c[3]), uoff=int(c[4]), csize=int(c[5]),
                                usize=int(c[6]), padding=int(c[9])))
        elif c[0] == 'block':
            blocks.append(dict(stream=int(c[1]), coff=int(c[4]), uoff=int(c[5]),
                               total=int(c[6]), usize=int(c[7]), check=c[9],
                               hsize=int(c[11]), dsize=int(c[13])))
    return streams, blocks


def tool_rejects(argv_prefix, path):
    p = subprocess.run(argv_prefix + [path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.returncode == 1


def make_tar(seed, members):
    """Deterministic ustar bytes for MEMBERS [(name, size)]."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.USTAR_FORMAT) as tf:
        d = tarfile.TarInfo('project/')
        d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, 1_700_000_000
        tf.addfile(d)
        for i, (name, size) in enumerate(members):
            data = content(seed * 100 + i, size)
            ti = tarfile.TarInfo('project/' + name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 1_700_000_000 + i
            ti.uname = ti.gname = 'zmount'
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


# --------------------------------------------------------------------------
# the generated tree
# --------------------------------------------------------------------------
class Tree:
    """A source tree plus what the mount must show for it.

    files: mount path -> expected bytes; dirs: mount dirs ('' is the root);
    links: mount path -> symlink target; archives: mount path -> info about
    the archive behind it (src name, kind, block/member edges); corrupt: mount
    path -> info about the damage; unreadable: mount path -> source name of
    an archive whose map cannot be read (shown empty, opens fail with EIO);
    hidden: source names that must not be visible in the mount."""

    def __init__(self, src):
        self.src = src
        self.files = {}
        self.dirs = {''}
        self.links = {}
        self.archives = {}
        self.corrupt = {}
        self.unreadable = {}
        self.hidden = set()
        self.spare = {}     # undamaged copies of damaged archives (not in SRC)
        self.loose = set()  # dirs whose exact listing the contract leaves open
        self.noisy = set()  # source names the daemon may log errors about

    def _add_dirs(self, rel):
        d = os.path.dirname(rel)
        while d:
            self.dirs.add(d)
            d = os.path.dirname(d)

    def _write(self, rel, data):
        path = os.path.join(self.src, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(data)
        self._add_dirs(rel)

    def plain(self, rel, data):
        self._write(rel, data)
        self.files[rel] = data

    def raw(self, rel, blob):
        """A file that passes through under its own name, bytes unchanged."""
        self.plain(rel, blob)

    def damaged(self, src_rel, mount_rel, blob):
        """An archive with the right magic whose map cannot be read: shown under
        mount_rel, size 0, its opens fail with EIO."""
        self._write(src_rel, blob)
        self._add_dirs(mount_rel)
        self.unreadable[mount_rel] = src_rel
        self.hidden.add(src_rel)

    def archive(self, src_rel, mount_rel, data, blob, kind, edges=()):
        self._write(src_rel, blob)
        self._add_dirs(mount_rel)
        self.files[mount_rel] = data
        self.archives[mount_rel] = dict(src=src_rel, kind=kind, edges=sorted(set(edges)))
        self.hidden.add(src_rel)

    def symlink(self, rel, target):
        path = os.path.join(self.src, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(target, path)
        self._add_dirs(rel)
        self.links[rel] = target

    def listing(self):
        """mount dir -> set of names the mount must list there."""
        want = {d: set() for d in self.dirs if d not in self.loose}
        for p in list(self.files) + list(self.unreadable) + list(self.links) + \
                [d for d in self.dirs if d]:
            if os.path.dirname(p) in want:
                want[os.path.dirname(p)].add(os.path.basename(p))
        return want

    def good_files(self):
        return {p: d for p, d in self.files.items() if p not in self.corrupt}


def flip(blob, off):
    b = bytearray(blob)
    b[off] ^= 0x5A
    return bytes(b)


def generate(src, seed):
    """Build SRC; return the Tree.  Raises if a tool did not do what we assume.

    The contents are made first and every compressor runs in a thread pool, so
    the xz runs overlap; the tree is then assembled in a fixed order."""
    t = Tree(src)
    tmpx = os.path.join(os.path.dirname(src), 'gen-scratch')
    os.makedirs(tmpx, exist_ok=True)
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    jobs = {}
    D = {}

    def job(key, argv, data):
        jobs[key] = pool.submit(run_filter, argv, data)

    def got(key):
        return jobs[key].result()

    def lst(blob, name):
        p = os.path.join(tmpx, name)
        with open(p, 'wb') as f:
            f.write(blob)
        return xz_list(p)

    # -- phase 1: contents, and the compressors started on them (slowest first)
    D['single'] = content(seed + 1, 4 * MiB)
    job('single', XZ, D['single'])                       # one xz Block (-T1 never splits)
    D['many'] = content(seed + 2, 3 * MiB + 12345, binary=0.3)
    job('many', XZ_64K, D['many'])                       # 49 Blocks of 64 KiB
    D['two1'], D['two2'] = content(seed + 3, 3 * MiB // 2 + 17), content(seed + 4, 3 * MiB // 2 - 5)
    job('two1', XZ, D['two1'])
    job('two2', XZ_64K, D['two2'])
    D['gzip'] = content(seed + 5, 3 * MiB + 777)
    job('gzip', GZIP, D['gzip'])
    D['members'] = [content(seed + 6, MiB + 1), content(seed + 7, 700 * KiB),
                    content(seed + 8, MiB - 3)]
    for i, part in enumerate(D['members']):
        job(f'member{i}', GZIP, part)
    D['pigz'] = content(seed + 9, 3 * MiB - 99)
    job('pigz', PIGZ_I, D['pigz'])
    D['bgzf'] = content(seed + 10, 3 * MiB)
    job('bgzf', BGZIP, D['bgzf'])
    job('empty-xz', XZ, b'')
    job('empty-gz', GZIP, b'')
    D['deep'] = content(seed + 11, 300 * KiB)
    job('deep', XZ, D['deep'])
    D['deeper'] = content(seed + 12, 200 * KiB)
    job('deeper', GZIP, D['deeper'])
    D['spaces'] = content(seed + 14, 600 * KiB)
    job('spaces', GZIP, D['spaces'])
    D['xy'] = content(seed + 15, 100 * KiB)
    job('xy', XZ, D['xy'])
    job('collide.gz', GZIP, content(seed + 18, 80 * KiB))
    D['tgz'] = make_tar(seed + 20, [('README', 3000), ('src/main.c', 400 * KiB), ('data.bin', MiB)])
    job('tgz', GZIP, D['tgz'])
    D['txz'] = make_tar(seed + 21, [('doc.txt', 200 * KiB), ('empty', 0)])
    job('txz', XZ, D['txz'])
    D['edge'] = content(seed + 30, 20 * KiB)
    job('edge.gz', GZIP, D['edge'])
    job('edge.xz', XZ, D['edge'])
    D['hidden'] = content(seed + 31, 30 * KiB)
    job('hidden', GZIP, D['hidden'])
    D['bundle'] = make_tar(seed + 32, [('a.txt', 5000), ('b.bin', 70 * KiB)])
    job('bundle.gz', GZIP, D['bundle'])
    job('bundle.xz', XZ, D['bundle'])
    job('same.tgz', GZIP, D['bundle'][:-10240] + bytes(10240))
    D['uni'] = content(seed + 33, 40 * KiB)
    job('uni', GZIP, D['uni'])
    D['inner'] = content(seed + 34, 10 * KiB)
    job('inner', GZIP, D['inner'])
    D['dup.gz'], D['dup.xz'] = content(seed + 36, 5000), content(seed + 37, 6000)
    job('dup.gz', GZIP, D['dup.gz'])
    job('dup.xz', XZ, D['dup.xz'])
    D['cblock'] = content(seed + 22, 2 * MiB, binary=0.02)
    job('cblock', XZ_64K, D['cblock'])
    D['ccheck'] = content(seed + 23, MiB + 4321, binary=0.02)
    job('ccheck', XZ_64K, D['ccheck'])
    D['cgz'] = content(seed + 24, MiB, binary=0.02)
    job('cgz', GZIP, D['cgz'])

    # -- phase 2: the tree
    try:
        blob = got('single')
        streams, blocks = lst(blob, 'single.xz')
        assert len(streams) == 1 and len(blocks) == 1, 'xz -T1 made more than one Block'
        t.archive('single-block.log.xz', 'single-block.log', D['single'], blob, 'xz')

        # many 64 KiB Blocks, binary-heavy, size not a multiple of the block size
        blob = got('many')
        streams, blocks = lst(blob, 'many.xz')
        assert len(blocks) == 49, f'expected 49 Blocks, got {len(blocks)}'
        t.archive('many-blocks.bin.xz', 'many-blocks.bin', D['many'], blob, 'xz',
                  [b['uoff'] for b in blocks[1:]])

        # two Streams with 4 bytes of Stream Padding between them
        blob = got('two1') + bytes(4) + got('two2')
        streams, blocks = lst(blob, 'two.xz')
        assert len(streams) == 2 and streams[0]['padding'] == 4, f'two-stream layout: {streams}'
        t.archive('two-streams.log.xz', 'two-streams.log', D['two1'] + D['two2'], blob, 'xz',
                  [b['uoff'] for b in blocks[1:]])

        # gzip -6, one member
        t.archive('plain-gzip.log.gz', 'plain-gzip.log', D['gzip'], got('gzip'), 'gz',
                  range(SPAN, len(D['gzip']), SPAN))

        # three concatenated gzip members of uneven sizes
        parts = D['members']
        t.archive('members.log.gz', 'members.log', b''.join(parts),
                  b''.join(got(f'member{i}') for i in range(3)), 'gz',
                  [len(parts[0]), len(parts[0]) + len(parts[1])])

        # pigz -i (independent deflate blocks inside one member)
        t.archive('pigz-independent.log.gz', 'pigz-independent.log', D['pigz'], got('pigz'), 'gz',
                  range(SPAN, len(D['pigz']), SPAN))

        # bgzip: many small members with the BGZF extra field, plus the EOF member
        blob = got('bgzf')
        assert blob[12:14] == b'BC', 'bgzip output has no BGZF extra field'
        t.archive('bgzf.log.gz', 'bgzf.log', D['bgzf'], blob, 'gz',
                  range(65280, len(D['bgzf']), 65280 * 7))

        # empty archives and an empty plain file
        t.archive('empty-xz.xz', 'empty-xz', b'', got('empty-xz'), 'xz')
        t.archive('empty-gz.gz', 'empty-gz', b'', got('empty-gz'), 'gz')
        t.plain('empty-plain', b'')

        # nesting, spaces
        t.archive('a/b/c/deep.txt.xz', 'a/b/c/deep.txt', D['deep'], got('deep'), 'xz')
        t.archive('a/b/c/deeper.dat.gz', 'a/b/c/deeper.dat', D['deeper'], got('deeper'), 'gz')
        t.plain('a/b/notes.txt', log_lines(random.Random(seed + 13), 10 * KiB))
        t.archive('dir with spaces/name with  spaces.log.gz', 'dir with spaces/name with  spaces.log',
                  D['spaces'], got('spaces'), 'gz')
        t.archive('dir with spaces/x y.xz', 'dir with spaces/x y', D['xy'], got('xy'), 'xz')
        t.plain('dir with spaces/plain file.txt', b'hello with spaces\n')

        # pass-through: a plain file, symlinks to it
        t.plain('plain.txt', content(seed + 16, 300 * KiB + 1))
        t.symlink('link-to-plain', 'plain.txt')
        t.symlink('a/b/up-link', '../../plain.txt')

        # collision: the plain file wins, the .gz stays visible raw
        t.plain('collide', content(seed + 17, 50 * KiB))
        t.raw('collide.gz', got('collide.gz'))

        # .gz / .xz names whose magic does not match: pass through under their own names
        t.raw('fake.gz', b'this is not gzip data, just text with a .gz name\n' * 100)
        t.raw('fake.xz', b'\x00' + random.Random(seed + 19).randbytes(5000))

        # tar archives compressed as a whole: x.tgz -> x.tar, x.txz -> x.tar
        t.archive('src-tree.tgz', 'src-tree.tar', D['tgz'], got('tgz'), 'gz')
        t.archive('docs.txz', 'docs.tar', D['txz'], got('txz'), 'xz')

        # edge cases of the naming rules
        t.raw('edge/.gz', got('edge.gz'))     # nothing left once stripped: passes through
        t.raw('edge/.xz', got('edge.xz'))
        t.archive('edge/.hidden.gz', 'edge/.hidden', D['hidden'], got('hidden'), 'gz')
        t.archive('edge/bundle.tar.gz', 'edge/bundle.tar', D['bundle'], got('bundle.gz'), 'gz')
        t.archive('edge/bundle2.tar.xz', 'edge/bundle2.tar', D['bundle'], got('bundle.xz'), 'xz')
        uni = 'edge/\u00fcn\u00efc\u00f6d\u00e9 \u65e5\u672c.log'
        t.archive(uni + '.gz', uni, D['uni'], got('uni'), 'gz')
        t.archive('edge/logs.gz/inner.txt.gz', 'edge/logs.gz/inner.txt', D['inner'], got('inner'), 'gz')
        t.symlink('edge/alias.gz', '../plain-gzip.log.gz')  # symlinks pass through, even named .gz
        t.plain('edge/same.tar', D['bundle'])                # a plain x.tar wins over x.tgz
        t.raw('edge/same.tgz', got('same.tgz'))
        t.plain('edge/d/in-dir.txt', b'a directory named d\n')  # a directory d wins over d.gz
        t.raw('edge/d.gz', got('inner'))
        t.symlink('edge/s', 'same.tar')                      # so does a symlink s over s.xz
        t.raw('edge/s.xz', got('edge.xz'))
        t.raw('edge/zero.gz', b'')                           # too short for any magic
        t.raw('edge/zero.xz', b'')
        t.raw('edge/one.gz', b'\x1f')
        t.raw('edge/magic-only.xz', b'\xfd7zXZ')
        # the xz magic, then garbage: damaged like a cut file, so shown as one is
        t.damaged('edge/badhdr.xz', 'edge/badhdr', b'\xfd7zXZ\x00' + random.Random(seed + 38).randbytes(100))
        t.raw('edge/badmethod.gz', b'\x1f\x8b\x07' + bytes(60))   # no gzip header: not gzip
        t.noisy |= {'badhdr.xz', 'badmethod.gz'}
        os.makedirs(os.path.join(src, 'edge/emptydir'))
        t.dirs.add('edge/emptydir')

        # a big directory (readdir in several batches); python's gzip for speed
        rnd = random.Random(seed + 35)
        for i in range(300):
            d = log_lines(rnd, rnd.randrange(1, 3000))
            t.archive(f'many/f{i:04d}.txt.gz', f'many/f{i:04d}.txt', d,
                      gzip.compress(d, compresslevel=6, mtime=0), 'gz')
            t.archives[f'many/f{i:04d}.txt']['checked'] = True
            t.plain(f'many/p{i:04d}.txt', d[:rnd.randrange(0, 200)])

        # both x.gz and x.xz: the contract does not say which wins; checked loosely
        t.dirs.add('ambiguous')
        t.loose.add('ambiguous')
        os.makedirs(os.path.join(src, 'ambiguous'))
        for name in ('dup.gz', 'dup.xz'):
            with open(os.path.join(src, 'ambiguous', name), 'wb') as f:
                f.write(got(name))
        t.ambiguous = dict(gz=D['dup.gz'], xz=D['dup.xz'])

        # damaged: xz, 64 KiB Blocks, one data byte flipped in the middle of the middle Block
        good = got('cblock')
        streams, blocks = lst(good, 'corrupt-block.good.xz')
        k = len(blocks) // 2
        b = blocks[k]
        bad = flip(good, b['coff'] + b['hsize'] + b['dsize'] // 2)
        t.archive('corrupt-block.bin.xz', 'corrupt-block.bin', D['cblock'], bad, 'xz',
                  [x['uoff'] for x in blocks[1:]])
        t.corrupt['corrupt-block.bin'] = dict(kind='xz', block=k, blocks=blocks, what='data byte')
        t.spare['corrupt-block.bin.xz'] = good

        # damaged: xz, a byte of Block 5's CRC64 flipped (decodes fine, the check fails)
        good = got('ccheck')
        streams, blocks = lst(good, 'corrupt-check.good.xz')
        k = 5
        b = blocks[k]
        assert b['check'] == 'CRC64'
        bad = flip(good, b['coff'] + b['total'] - 3)
        t.archive('corrupt-check.log.xz', 'corrupt-check.log', D['ccheck'], bad, 'xz',
                  [x['uoff'] for x in blocks[1:]])
        t.corrupt['corrupt-check.log'] = dict(kind='xz', block=k, blocks=blocks, what='check byte')
        t.spare['corrupt-check.log.xz'] = good

        # damaged: gzip, one byte flipped in the middle of the file
        good = got('cgz')
        bad = flip(good, len(good) // 2)
        t.archive('corrupt-member.log.gz', 'corrupt-member.log', D['cgz'], bad, 'gz')
        t.corrupt['corrupt-member.log'] = dict(kind='gz')
        t.spare['corrupt-member.log.gz'] = good

        # every archive must decode with the reference tool to what we think it holds
        def verify(mrel, info):
            path = os.path.join(src, info['src'])
            tool = ['xz', '-dc'] if info['kind'] == 'xz' else ['gzip', '-dc']
            if mrel in t.corrupt:
                assert tool_rejects([tool[0], '-t'], path), \
                    f'{info["src"]}: damage not detected by {tool[0]} -t'
                if info['kind'] == 'xz':
                    xz_list(path)  # the Index is intact, so st_size is known
                return
            p = subprocess.run(tool + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert p.returncode == 0 and p.stdout == t.files[mrel], f'{info["src"]}: {tool} disagrees'

        checks = [pool.submit(verify, m, i) for m, i in t.archives.items() if not i.get('checked')]
        for c in checks:
            c.result()
        for m, i in t.archives.items():
            if i.get('checked'):
                with open(os.path.join(src, i['src']), 'rb') as f:
                    assert gzip.decompress(f.read()) == t.files[m], f'{i["src"]}: gzip module disagrees'
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(tmpx, ignore_errors=True)
    return t


def write_refs(tree, refdir):
    """Uncompressed originals on disk, for cmp and for running tools on."""
    for rel, data in tree.files.items():
        p = os.path.join(refdir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'wb') as f:
            f.write(data)


# --------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------
def check_bad_invocations(res, zmount, tmp):
    base = os.path.join(tmp, 'badopt')
    src = os.path.join(base, 'src')
    mnt = os.path.join(base, 'mnt')
    os.makedirs(src)
    os.makedirs(mnt)
    regular = os.path.join(base, 'regular-file')
    with open(regular, 'wb') as f:
        f.write(b'not a directory\n')
    cases = [
        ('bad option -o cache_size=banana', [src, mnt, '-f', '-o', 'cache_size=banana']),
        ('missing SRC', [os.path.join(base, 'does-not-exist'), mnt, '-f']),
        ('SRC is a regular file', [regular, mnt, '-f']),
    ]
    for what, args in cases:
        argv = [zmount] + args
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=10)
            rc, err = p.returncode, p.stderr.decode(errors='replace')
        except subprocess.TimeoutExpired as e:
            rc, err = 'timeout (still running after 10 s)', (e.stderr or b'').decode(errors='replace')
        mounted = zmtest.is_mounted(mnt)
        if mounted:
            zmtest.fusermount(mnt, lazy=True)
        lines = err.splitlines()
        problems = []
        if rc != 1:
            problems.append(f'exit status {rc}, want 1')
        if len(lines) != 1 or not lines[0].strip():
            problems.append(f'{len(lines)} stderr lines, want exactly 1: {err[:400]!r}')
        if mounted:
            problems.append('it mounted MNT')
        res.check(f'invocation: {what} -> exit 1, one stderr line, nothing mounted',
                  not problems, '; '.join(problems), info=f'stderr: {err.strip()!r}')


class Grouped:
    """Per-file checks, except that files in BULK dirs are reported as one line."""
    BULK = ('many/',)

    def __init__(self, res, label):
        self.res, self.label, self.bulk = res, label, {}

    def check(self, rel, ok, detail='', info=''):
        g = next((b for b in self.BULK if rel.startswith(b)), None)
        if g is None:
            return self.res.check(f'{self.label} {rel}', ok, detail, info=info)
        n, bad = self.bulk.setdefault(g, [0, []])
        self.bulk[g][0] += 1
        if not ok:
            bad.append(f'{rel}: {detail}')
        return ok

    def done(self):
        for g, (n, bad) in sorted(self.bulk.items()):
            self.res.check(f'{self.label} {g}* ({n} files)', not bad,
                           f'{len(bad)} bad: ' + ' | '.join(bad[:5]))


def check_listing(res, mnt, tree):
    for d, want in sorted(tree.listing().items()):
        try:
            got = set(os.listdir(os.path.join(mnt, d)))
        except OSError as e:
            res.fail(f'listing of /{d}', f'listdir failed: {errname(e)}')
            continue
        res.check(f'listing of /{d} has exactly the expected names', got == want,
                  f'missing {sorted(want - got)}, unexpected {sorted(got - want)}')
    leaked = [h for h in sorted(tree.hidden) if os.path.lexists(os.path.join(mnt, h))]
    res.check('archive names (x.xz, x.gz, x.tgz, ...) are not reachable by lookup either',
              not leaked, f'visible: {leaked}')
    for absent in ['single-block.log.gz', 'fake', 'src-tree', 'src-tree.tgz', 'nonexistent']:
        if os.path.lexists(os.path.join(mnt, absent)):
            res.fail(f'lookup of {absent!r} gives ENOENT', 'it exists')
            break
    else:
        res.ok('lookups of names that should not exist give ENOENT')


def check_stat(res, mnt, tree):
    for d in sorted(tree.dirs):
        try:
            st = os.lstat(os.path.join(mnt, d))
            res.check(f'stat /{d}: a directory without write bits',
                      stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o222, oct(st.st_mode))
        except OSError as e:
            res.fail(f'stat /{d}', errname(e))
    g = Grouped(res, 'stat (regular, exact st_size, no write bits)')
    for rel, data in sorted(tree.files.items()):
        if tree.corrupt.get(rel, {}).get('kind') == 'gz':
            continue  # size unknowable; checked in check_corrupt
        try:
            st = os.lstat(os.path.join(mnt, rel))
        except OSError as e:
            g.check(rel, False, errname(e))
            continue
        problems = []
        if not stat.S_ISREG(st.st_mode):
            problems.append(f'not a regular file: {oct(st.st_mode)}')
        if st.st_size != len(data):
            problems.append(f'st_size {st.st_size} != {len(data)}')
        if st.st_mode & 0o222:
            problems.append(f'write bits set: {oct(st.st_mode & 0o7777)}')
        g.check(rel, not problems, '; '.join(problems), info=f'{len(data)} bytes')
    g.done()
    for rel, target in sorted(tree.links.items()):
        p = os.path.join(mnt, rel)
        try:
            st = os.lstat(p)
            tgt = os.readlink(p)
            want = tree.files.get(os.path.normpath(os.path.join(os.path.dirname(rel), target)))
            if want is None:
                # the target is an archive name, which the mount does not show: dangling
                body_ok = not os.path.exists(p)
                how = 'dangling in the mount'
            else:
                with open(p, 'rb') as f:
                    body_ok = f.read() == want
                how = 'content'
            res.check(f'symlink {rel} -> {target}: readlink and {how}',
                      stat.S_ISLNK(st.st_mode) and tgt == target and body_ok,
                      f'mode {oct(st.st_mode)}, readlink {tgt!r}, {how} ok={body_ok}')
        except OSError as e:
            res.fail(f'symlink {rel}', errname(e))


def check_inodes(res, mnt, tree):
    """Distinct files need distinct st_ino: cp -a, tar, du and rsync -H treat
    equal (st_dev, st_ino) as hard links of one file."""
    seen = {}
    for rel in sorted(tree.good_files()):
        try:
            st = os.lstat(os.path.join(mnt, rel))
        except OSError:
            continue
        seen.setdefault(st.st_ino, []).append(rel)
    dups = [v for v in seen.values() if len(v) > 1]
    res.check(f'st_ino is distinct for all {sum(map(len, seen.values()))} regular files', not dups,
              f'{len(dups)} shared inode numbers, e.g. ' + '; '.join(' = '.join(v[:3]) for v in dups[:3]))


def check_fd_budget(res, zmount, tree, tmp, limit=256):
    """The daemon runs with RLIMIT_NOFILE at LIMIT (soft and hard, so its own
    raise to the hard limit changes nothing) and more archives than that exist.

    1. Read one after another, each closed: all must read back and the daemon
       must never run out (no "out of file descriptors" line): it holds no fd
       for an archive nobody has open.
    2. Held open all at once: each open archive costs the daemon one fd, so
       EMFILE must happen.  The opens beyond the budget fail with EMFILE and
       nothing else, those that worked read right, and the daemon says so in
       exactly one log line.
    3. Once they are closed, every archive opens and reads again: EMFILE is
       not kept as a verdict on the file."""
    mnt = os.path.join(tmp, 'mnt-fd')
    arcs = sorted(r for r in tree.archives if r.startswith('many/'))
    tag = f'RLIMIT_NOFILE={limit}'
    if len(arcs) <= limit:
        res.fail(f'{tag}: more archives than the limit', f'only {len(arcs)}')
        return
    # our side must not be the one to run out
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * len(arcs) + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2 * len(arcs) + 64), hard))

    def out_of_fds(m):
        return [ln for ln in m.log_lines() if 'out of file descriptors' in ln]

    def read_all_one_by_one():
        bad = []
        for rel in arcs:
            try:
                with open(os.path.join(mnt, rel), 'rb') as f:
                    if f.read() != tree.files[rel]:
                        bad.append(f'{rel}: wrong bytes')
            except OSError as e:
                bad.append(f'{rel}: {errname(e)}')
        return bad

    try:
        with zmtest.Mount(zmount, tree.src, mnt, opts=MOUNT_OPTS, results=res, watchdog=120,
                          log_path=os.path.join(tmp, 'daemon-fd.log'), nofile=(limit, limit),
                          label=f'{tag} mount') as m:
            with open(f'/proc/{m.proc.pid}/limits') as f:
                lim = [ln for ln in f if ln.startswith('Max open files')]
            res.check(f'{tag}: the daemon runs with that limit', lim and
                      lim[0].split()[3:5] == [str(limit), str(limit)], f'{lim}')
            bad = read_all_one_by_one()
            res.check(f'{tag}: {len(arcs)} archives opened, read and closed one by one all '
                      f'read back, and the daemon never ran out', not bad and not out_of_fds(m),
                      f'{len(bad)} failed, first: ' + ' | '.join(bad[:3]) +
                      f'; log: {out_of_fds(m)[:2]}; daemon holds '
                      f'{len(os.listdir(f"/proc/{m.proc.pid}/fd"))} fds')

            held, emfile, other = [], [], []
            try:
                for rel in arcs:
                    try:
                        held.append((rel, os.open(os.path.join(mnt, rel), os.O_RDONLY)))
                    except OSError as e:
                        (emfile if e.errno == errno.EMFILE else other).append(
                            f'{rel}: {errname(e)}')
                res.check(f'{tag}: {len(arcs)} archives held open at once: the opens beyond '
                          f'the daemon\'s budget fail with EMFILE, and with nothing else',
                          emfile and not other and len(held) + len(emfile) == len(arcs),
                          f'{len(held)} opened, {len(emfile)} EMFILE, {len(other)} other: '
                          + ' | '.join(other[:3]),
                          info=f'{len(held)} opened, {len(emfile)} EMFILE')
                wrong = []
                for rel, fd in held:
                    try:
                        if os.pread(fd, len(tree.files[rel]) + 1, 0) != tree.files[rel]:
                            wrong.append(f'{rel}: wrong bytes')
                    except OSError as e:
                        wrong.append(f'{rel}: {errname(e)}')
                res.check(f'{tag}: the {len(held)} archives that did open read back while '
                          f'the daemon is out of descriptors', held and not wrong,
                          f'{len(wrong)} bad: ' + ' | '.join(wrong[:3]))
            finally:
                for _, fd in held:
                    os.close(fd)
            lines = out_of_fds(m)
            res.check(f'{tag}: the daemon logged running out of descriptors exactly once',
                      len(lines) == 1, f'{len(lines)} lines: {lines[:3]}', info=lines[0] if
                      len(lines) == 1 else '')
            bad = read_all_one_by_one()
            res.check(f'{tag}: after they are closed, all {len(arcs)} archives open and read '
                      f'back again', not bad, f'{len(bad)} failed, first: ' + ' | '.join(bad[:3]))
            try:
                with open(os.path.join(mnt, 'plain.txt'), 'rb') as f:
                    ok = f.read() == tree.files['plain.txt']
                res.check(f'{tag}: a plain file still opens afterwards', ok, 'wrong bytes')
            except OSError as e:
                res.fail(f'{tag}: a plain file still opens afterwards', errname(e))
    except zmtest.MountError as e:
        res.fail(f'{tag} mount comes up', str(e))


def mount_dev(mnt):
    """The "major:minor" of the newest mount on MNT, from /proc/self/mountinfo."""
    devs = [e.dev for e in zmtest.mountinfo() if e.mnt == mnt]
    return devs[-1] if devs else None


def check_read_ahead(res, zmount, tmp):
    """Sequential reads must be decoded ahead by the worker pool, also for a
    gzip file the background indexer opened first (its reader once had no
    pool), and the kernel must be asked for 1 MiB reads (read_ahead_kb)."""
    src = os.path.join(tmp, 'src-ra')
    mnt = os.path.join(tmp, 'mnt-ra')
    os.makedirs(src, exist_ok=True)
    data = content(77, 24 * MiB)
    files = {'gz.log.gz': GZIP, 'xz.log.xz': XZ + ['--block-size=1MiB']}
    for name, argv in files.items():
        with open(os.path.join(src, name), 'wb') as f:
            f.write(run_filter(argv, data))
    try:
        with zmtest.Mount(zmount, src, mnt, opts='cache_size=16M,index_dir=none', results=res,
                          watchdog=120, log_path=os.path.join(tmp, 'daemon-ra.log'),
                          label='read-ahead mount') as m:
            deadline = time.monotonic() + 60
            while zmtest.stats(mnt)['indexes_built'] < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            res.check('read-ahead: the background indexer indexes the gzip file unasked',
                      zmtest.stats(mnt)['indexes_built'] == 1, f'stats: {zmtest.stats(mnt)}')
            ahead = zmtest.stats(mnt)['readahead_bytes']
            for name in sorted(files):
                path = os.path.join(mnt, name[:-3])
                with open(path, 'rb', buffering=0) as f:  # 1 MiB reads, as cat or dd make
                    got = b''.join(iter(lambda: f.read(MiB), b''))
                now = zmtest.stats(mnt)['readahead_bytes']
                res.check(f'read-ahead: {name} read in order comes back whole and right, '
                          f'with bytes decoded ahead by the workers',
                          got == data and now > ahead,
                          f'bytes {"right" if got == data else "WRONG"}, readahead_bytes '
                          f'{ahead} -> {now}')
                ahead = now
            dev = mount_dev(mnt)
            if os.geteuid() != 0:
                res.note('read-ahead: not root, so the kernel read-ahead stays at 128 KiB; '
                         'read_ahead_kb not checked')
            else:
                with open(f'/sys/class/bdi/{dev}/read_ahead_kb') as f:
                    kb = f.read().strip()
                res.check('read-ahead: the mount\'s read_ahead_kb is 1024', kb == '1024',
                          f'bdi {dev}: read_ahead_kb={kb}')
            if m.log_lines():
                res.note('read-ahead mount log: ' + ' | '.join(m.log_lines()[-3:]))
    except zmtest.MountError as e:
        res.fail('read-ahead mount comes up', str(e))


def check_hashes(res, mnt, tree, label='sha256'):
    g = Grouped(res, label)
    for rel, data in sorted(tree.good_files().items()):
        try:
            h, n = sha_path(os.path.join(mnt, rel))
            g.check(rel, (h, n) == (sha(data), len(data)),
                    f'got {h[:16]}../{n} bytes, want {sha(data)[:16]}../{len(data)}')
        except OSError as e:
            g.check(rel, False, errname(e))
    g.done()


def rand_len(rnd):
    r = rnd.random()
    if r < 0.03:
        return 0
    if r < 0.20:
        return rnd.randint(1, 16)
    if r < 0.50:
        return rnd.randint(17, 16 * KiB)
    if r < 0.85:
        return int(math.exp(rnd.uniform(math.log(16 * KiB), math.log(256 * KiB))))
    return rnd.randint(256 * KiB, MAX_LEN)


def pread_plan(rnd, tree, total):
    """[(mount path, offset, length)], the fixed edge cases first then random ones."""
    targets = sorted(p for p in tree.archives
                     if p not in tree.corrupt and not p.startswith(Grouped.BULK))
    plan = []
    for rel in targets:
        size = len(tree.files[rel])
        last = max(size - 1, 0)
        plan += [(rel, o, n) for o, n in [
            (0, 0), (0, 1), (0, 4096), (last, 1), (last, 4096), (size, 0), (size, 1),
            (size, 65536), (size + 1, 1), (size + rnd.randrange(1, MiB), 4096),
            (0, MAX_LEN), (max(size - MAX_LEN, 0), MAX_LEN), (max(size - 100, 0), 1000),
            (size // 2, 0)]]
        for e in tree.archives[rel]['edges']:
            plan += [(rel, e - 1, 2), (rel, max(e - 4096, 0), 8192), (rel, e, 1),
                     (rel, e - 1, 1)]
    sized = [r for r in targets if tree.files[r]]
    while len(plan) < total:
        rel = rnd.choice(sized)
        size = len(tree.files[rel])
        r = rnd.random()
        if r < 0.85:
            off = rnd.randrange(size)
        elif r < 0.90:
            off = max(size - rnd.randrange(1, 8192), 0)
        elif r < 0.95:
            off = size + rnd.randrange(0, 3 * MiB)
        else:
            edges = tree.archives[rel]['edges'] or [0]
            off = max(rnd.choice(edges) + rnd.randrange(-300, 300), 0)
        plan.append((rel, off, rand_len(rnd)))
    rnd.shuffle(plan)
    return plan


def check_random_preads(res, mnt, tree, rnd, total):
    plan = pread_plan(rnd, tree, total)
    fds = {}
    stats = {}
    direct_ok = None
    t0 = time.monotonic()
    try:
        for i, (rel, off, n) in enumerate(plan):
            if rel not in fds:
                p = os.path.join(mnt, rel)
                fds[rel] = (os.open(p, os.O_RDONLY), open_direct(p))
                direct_ok = (direct_ok or False) or fds[rel][1] is not None
            buf_fd, dir_fd = fds[rel]
            use_direct = dir_fd is not None and i % 2 == 1
            st = stats.setdefault(rel, dict(n=0, direct=0, bytes=0, bad=[], t=0.0))
            st['n'] += 1
            st['direct'] += use_direct
            want = tree.files[rel][off:off + n]
            t1 = time.monotonic()
            try:
                if use_direct:
                    got = os.pread(dir_fd, n, off)
                else:
                    drop_cache(buf_fd)
                    got = os.pread(buf_fd, n, off)
            except OSError as e:
                st['t'] += time.monotonic() - t1
                st['bad'].append(f'pread(off={off}, len={n}{", O_DIRECT" if use_direct else ""}) '
                                 f'-> {errname(e)}')
                continue
            st['t'] += time.monotonic() - t1
            st['bytes'] += len(got)
            if got != want:
                first = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]),
                             min(len(got), len(want)))
                st['bad'].append(f'pread(off={off}, len={n}{", O_DIRECT" if use_direct else ""}) '
                                 f'returned {len(got)} bytes, want {len(want)}, first difference '
                                 f'at +{first}')
    finally:
        for a, b in fds.values():
            os.close(a)
            if b is not None:
                os.close(b)
    dt = time.monotonic() - t0
    res.check('O_DIRECT opens work on the mount, so odd offsets and lengths reach the daemon',
              direct_ok, 'every O_DIRECT open failed; all random reads went through the page cache')
    for rel, st in sorted(stats.items()):
        res.check(f'random pread {rel}: {st["n"]} reads ({st["direct"]} O_DIRECT, '
                  f'{st["bytes"]} bytes) equal the original', not st['bad'],
                  f'{len(st["bad"])} bad: ' + ' | '.join(st['bad'][:4]), info=f'{st["t"]:.2f} s')
    res.check('at least 2000 random preads done', len(plan) >= 2000, f'only {len(plan)}',
              info=f'{len(plan)} preads over {len(stats)} files in {dt:.1f} s')


def check_tools(res, mnt, tree, refdir):
    env = dict(os.environ, LC_ALL='C')
    names = ['single-block.log', 'many-blocks.bin', 'two-streams.log', 'plain-gzip.log',
             'bgzf.log', 'dir with spaces/name with  spaces.log', 'src-tree.tar']

    def run(argv):
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, timeout=120)

    for rel in names:
        data = tree.files[rel]
        m, r = os.path.join(mnt, rel), os.path.join(refdir, rel)
        p = run(['cat', m])
        res.check(f'cat {rel}', p.returncode == 0 and p.stdout == data,
                  f'rc={p.returncode}, {len(p.stdout)} bytes, sha ok={p.stdout == data}, '
                  f'stderr={p.stderr[:200]!r}')
        pm, pr = run(['grep', '-a', '-c', '-F', 'ERROR', m]), run(['grep', '-a', '-c', '-F', 'ERROR', r])
        res.check(f'grep -c ERROR {rel}', pm.stdout == pr.stdout and pm.returncode == pr.returncode,
                  f'mount says {pm.stdout.strip()!r} rc={pm.returncode}, original says '
                  f'{pr.stdout.strip()!r} rc={pr.returncode}')
        p = run(['tail', '-c', '1000', m])
        res.check(f'tail -c 1000 {rel}', p.returncode == 0 and p.stdout == data[-1000:],
                  f'rc={p.returncode}, {len(p.stdout)} bytes')
        skip, count = len(data) // 4096 // 3, 37
        p = run(['dd', f'if={m}', 'bs=4096', f'skip={skip}', f'count={count}', 'status=none'])
        want = data[skip * 4096:(skip + count) * 4096]
        res.check(f'dd bs=4096 skip={skip} count={count} {rel}',
                  p.returncode == 0 and p.stdout == want,
                  f'rc={p.returncode}, {len(p.stdout)} bytes (want {len(want)}), '
                  f'stderr={p.stderr[:200]!r}')
        p = run(['cmp', r, m])
        res.check(f'cmp original {rel}', p.returncode == 0,
                  f'rc={p.returncode} {(p.stdout + p.stderr)[:300]!r}')


def check_concurrent(res, mnt, tree, seed, nthreads=8, reads=120):
    same = 'many-blocks.bin'
    others = ['single-block.log', 'plain-gzip.log', 'pigz-independent.log', 'bgzf.log']
    shared_fd = os.open(os.path.join(mnt, same), os.O_RDONLY)
    jobs = [(same, shared_fd), (same, shared_fd), (same, None), (same, None)]
    jobs += [(o, None) for o in others]
    jobs = jobs[:nthreads]
    barrier = threading.Barrier(len(jobs))
    out = [None] * len(jobs)

    def worker(i, rel, fd):
        rnd = random.Random(seed * 1000 + i)
        data = tree.files[rel]
        own = fd is None
        bad, done = [], 0
        try:
            if own:
                path = os.path.join(mnt, rel)
                fd = (open_direct(path) if i % 2 else None) or os.open(path, os.O_RDONLY)
            barrier.wait(timeout=30)
            for k in range(reads):
                off = rnd.randrange(len(data) + 4096)
                n = rnd.choice([1, 100, 4096, 65536, 65536 + 1, 200 * KiB, rnd.randrange(MiB)])
                if k % 10 == 0 and not i % 2:
                    drop_cache(fd)
                try:
                    got = os.pread(fd, n, off)
                except OSError as e:
                    bad.append(f'pread({off},{n}) -> {errname(e)}')
                    continue
                done += 1
                if got != data[off:off + n]:
                    bad.append(f'pread({off},{n}) wrong bytes ({len(got)} returned)')
        except Exception as e:  # noqa: BLE001 -- report, never hang the barrier
            bad.append(f'{type(e).__name__}: {e}')
            barrier.abort()
        finally:
            if own and isinstance(fd, int):
                os.close(fd)
        out[i] = (rel, done, bad)

    threads = [threading.Thread(target=worker, args=(i, rel, fd), daemon=True)
               for i, (rel, fd) in enumerate(jobs)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WATCHDOG_S)
    os.close(shared_fd)
    dt = time.monotonic() - t0
    for i, r in enumerate(out):
        if r is None:
            res.fail(f'concurrent reader {i}', 'did not finish')
            continue
        rel, done, bad = r
        how = 'shared fd' if jobs[i][1] is not None else ('own O_DIRECT fd' if i % 2 else 'own fd')
        res.check(f'concurrent reader {i} on {rel} ({how}): {done}/{reads} preads exact',
                  not bad and done == reads, ' | '.join(bad[:4]))
    res.note(f'{len(jobs)} concurrent readers took {dt:.1f} s')


def check_cold_race(res, mnt, tree):
    """First access of all: 8 threads look up and read files nobody has
    listed or opened yet, several of them the same file at once."""
    jobs = ['plain-gzip.log'] * 3 + ['many-blocks.bin'] * 3 + ['single-block.log', 'members.log']
    barrier = threading.Barrier(len(jobs))
    out = [None] * len(jobs)

    def worker(i, rel):
        try:
            barrier.wait(timeout=30)
            st = os.stat(os.path.join(mnt, rel))
            h, n = sha_path(os.path.join(mnt, rel), chunk=(64 + 37 * i) * KiB)
            out[i] = (st.st_size, h, n)
        except Exception as e:  # noqa: BLE001
            barrier.abort()
            out[i] = e

    threads = [threading.Thread(target=worker, args=(i, r), daemon=True) for i, r in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WATCHDOG_S)
    for i, rel in enumerate(jobs):
        data = tree.files[rel]
        r = out[i]
        if not isinstance(r, tuple):
            res.fail(f'cold first access, thread {i}: stat + full read of {rel}',
                     f'{type(r).__name__}: {r}' if r is not None else 'did not finish')
            continue
        res.check(f'cold first access, thread {i}: stat + full read of {rel}',
                  r == (len(data), sha(data), len(data)),
                  f'st_size {r[0]}, read {r[2]} bytes, sha ok={r[1] == sha(data)}')


def check_misc(res, mnt, tree):
    # mmap is how many programs read files; it goes through the page cache
    rel = 'two-streams.log'
    try:
        with open(os.path.join(mnt, rel), 'rb') as f:
            drop_cache(f.fileno())
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
                data = tree.files[rel]
                ok = mm[:] == data and mm[len(data) // 3:len(data) // 3 + 5000] == \
                    data[len(data) // 3:len(data) // 3 + 5000]
        res.check(f'mmap of {rel} reads the original bytes', ok, 'wrong bytes')
    except (OSError, ValueError) as e:
        res.fail(f'mmap of {rel} reads the original bytes', f'{type(e).__name__}: {e}')
    try:
        sv = os.statvfs(mnt)
        res.check('statvfs on the mount reports ST_RDONLY', sv.f_flag & os.ST_RDONLY,
                  f'f_flag={sv.f_flag:#x}', info=f'f_flag={sv.f_flag:#x}, f_namemax={sv.f_namemax}')
    except OSError as e:
        res.fail('statvfs on the mount reports ST_RDONLY', errname(e))
    # seeking: SEEK_END lands at st_size
    try:
        fd = os.open(os.path.join(mnt, 'members.log'), os.O_RDONLY)
        try:
            end = os.lseek(fd, 0, os.SEEK_END)
        finally:
            os.close(fd)
        res.check('lseek(SEEK_END) on members.log gives the uncompressed size',
                  end == len(tree.files['members.log']), f'{end}')
    except OSError as e:
        res.fail('lseek(SEEK_END) on members.log', errname(e))


def check_ambiguous(res, mnt, tree):
    """dup.gz and dup.xz both map to dup.  Whatever the daemon picks, 'dup'
    must be listed once and hold one of the two contents, and a loser, if
    shown, must be its raw archive bytes under its own name."""
    d = os.path.join(mnt, 'ambiguous')
    try:
        names = os.listdir(d)
    except OSError as e:
        res.fail('ambiguous dup.gz + dup.xz: listing', errname(e))
        return
    problems = []
    if len(names) != len(set(names)):
        problems.append(f'duplicate names in readdir: {sorted(names)}')
    if names.count('dup') != 1:
        problems.append(f'"dup" listed {names.count("dup")} times: {sorted(names)}')
    extra = set(names) - {'dup', 'dup.gz', 'dup.xz'}
    if extra:
        problems.append(f'unexpected names {sorted(extra)}')
    winner = None
    if 'dup' in names:
        try:
            with open(os.path.join(d, 'dup'), 'rb') as f:
                body = f.read()
            winner = 'gz' if body == tree.ambiguous['gz'] else 'xz' if body == tree.ambiguous['xz'] else None
            if winner is None:
                problems.append(f'"dup" holds neither decompression ({len(body)} bytes)')
        except OSError as e:
            problems.append(f'reading dup: {errname(e)}')
    for n in ('dup.gz', 'dup.xz'):
        if n in names:
            with open(os.path.join(tree.src, 'ambiguous', n), 'rb') as f:
                want = f.read()
            try:
                with open(os.path.join(d, n), 'rb') as f:
                    if f.read() != want:
                        problems.append(f'{n} is listed but not its raw bytes')
            except OSError as e:
                problems.append(f'reading {n}: {errname(e)}')
    res.check('ambiguous dup.gz + dup.xz: "dup" listed once with one of the two contents',
              not problems, '; '.join(problems), info=f'listed {sorted(names)}, dup is the {winner}')


def check_log_sanity(res, m, tree):
    """Error lines may only be about the damaged archives."""
    names = set(tree.noisy)
    for rel in tree.corrupt:
        names |= {rel, os.path.basename(rel), os.path.basename(tree.archives[rel]['src'])}
    errs = [ln for ln in m.log_lines() if 'error' in ln.lower()]
    stray = [ln for ln in errs if not zmtest.lines_naming([ln], sorted(names))]
    res.check('every error line in the daemon log is about a damaged or unreadable archive', not stray,
              f'{len(stray)} other error lines: ' + ' | '.join(stray[:5]))


def find_pids_with_arg(arg):
    """Pids whose command line contains ARG exactly (ARG is a unique temp path)."""
    pids = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open(f'/proc/{d}/cmdline', 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if os.fsencode(arg) in argv:
            pids.append(int(d))
    return pids


def check_background_mode(res, zmount, tree, tmp):
    """Without -f the daemon detaches: the command returns 0 with MNT mounted,
    and after fusermount3 -u the detached daemon goes away."""
    mnt = os.path.join(tmp, 'mnt-bg')
    os.makedirs(mnt)
    argv = [zmount, tree.src, mnt, '-o', MOUNT_OPTS]
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=20)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = 'timeout'
    mounted = zmtest.is_mounted(mnt)
    try:
        if not res.check('background mode: zmount without -f returns 0 with MNT mounted',
                         rc == 0 and mounted, f'rc={rc}, mounted={mounted}'):
            return
        with open(os.path.join(mnt, 'bgzf.log'), 'rb') as f:
            ok = f.read() == tree.files['bgzf.log']
        res.check('background mode: a file reads back', ok, 'wrong bytes')
    except OSError as e:
        res.fail('background mode: a file reads back', errname(e))
    finally:
        pids = find_pids_with_arg(mnt)
        if mounted:
            rc_u, msg = zmtest.fusermount(mnt)
            res.check('background mode: fusermount3 -u succeeds', rc_u == 0, f'rc={rc_u} {msg}')
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(os.path.exists(f'/proc/{q}') and
                                                  q in find_pids_with_arg(mnt) for q in pids):
            time.sleep(0.1)
        left = [q for q in pids if q in find_pids_with_arg(mnt)]
        if mounted:
            res.check('background mode: the detached daemon exits after the unmount', not left,
                      f'pids {left} still running after 20 s; killing them')
        for q in left:
            try:
                os.kill(q, 9)
            except OSError:
                pass
        if zmtest.is_mounted(mnt):
            zmtest.fusermount(mnt, lazy=True)


def check_debug_mode(res, zmount, tree, tmp):
    """-d (debug, foreground, trace) mounts, serves and exits 0 on unmount."""
    mnt = os.path.join(tmp, 'mnt-debug')
    try:
        with zmtest.Mount(zmount, tree.src, mnt, opts=MOUNT_OPTS, extra_args=['-d'],
                          log_path=os.path.join(tmp, 'daemon-debug.log'), results=res,
                          watchdog=60, label='-d mount') as m:
            with open(os.path.join(mnt, 'a/b/c/deep.txt'), 'rb') as f:
                res.check('-d mount: a file reads back', f.read() == tree.files['a/b/c/deep.txt'],
                          'wrong bytes')
            res.check('-d mount: the debug trace is not empty', len(m.log_lines()) > 1,
                      f'{len(m.log_lines())} lines')
    except zmtest.MountError as e:
        res.fail('-d mount comes up', str(e))
    except OSError as e:
        res.fail('-d mount: a file reads back', errname(e))


def check_max_read(res, zmount, tree, tmp):
    """FUSE's own max_read=N mounts and serves (libfuse ends the session
    unless the init callback repeats the value)."""
    mnt = os.path.join(tmp, 'mnt-max-read')
    rel = max((r for r in tree.archives if r in tree.files), key=lambda r: len(tree.files[r]))
    try:
        with zmtest.Mount(zmount, tree.src, mnt, opts=MOUNT_OPTS + ',max_read=65536',
                          log_path=os.path.join(tmp, 'daemon-max-read.log'), results=res,
                          watchdog=60, label='max_read mount') as m:
            with open(os.path.join(mnt, rel), 'rb', buffering=0) as f:
                got = b''.join(iter(lambda: f.read(MiB), b''))
            res.check(f'max_read=65536 mount: {rel} ({len(got)} bytes) reads back',
                      got == tree.files[rel], 'wrong bytes')
            res.check('max_read=65536 mount: the daemon is still running', m.alive(),
                      f'log: {m.log_tail()}')
    except zmtest.MountError as e:
        res.fail('max_read=65536 mount comes up', str(e))
    except OSError as e:
        res.fail('max_read=65536 mount: an archive reads back', errname(e))


def expect_errno(res, what, fn, want=errno.EROFS):
    try:
        r = fn()
    except OSError as e:
        return res.check(f'{what} -> {zmtest.errno_name(want)}', e.errno == want,
                         f'got {errname(e)}')
    if isinstance(r, int) and r > 2:
        os.close(r)
    return res.fail(f'{what} -> {zmtest.errno_name(want)}', 'it succeeded')


def check_readonly(res, mnt, tree):
    P = lambda rel: os.path.join(mnt, rel)  # noqa: E731
    before = sorted(os.listdir(tree.src))
    expect_errno(res, 'open(plain.txt, O_WRONLY)', lambda: os.open(P('plain.txt'), os.O_WRONLY))
    expect_errno(res, 'open(single-block.log, O_RDWR)',
                 lambda: os.open(P('single-block.log'), os.O_RDWR))
    expect_errno(res, 'open(plain-gzip.log, O_WRONLY|O_TRUNC)',
                 lambda: os.open(P('plain-gzip.log'), os.O_WRONLY | os.O_TRUNC))
    expect_errno(res, 'open(plain.txt, O_WRONLY|O_APPEND)',
                 lambda: os.open(P('plain.txt'), os.O_WRONLY | os.O_APPEND))
    expect_errno(res, 'create new-file (O_CREAT|O_WRONLY)',
                 lambda: os.open(P('new-file'), os.O_CREAT | os.O_WRONLY, 0o644))
    expect_errno(res, 'create a/b/c/new (O_CREAT|O_EXCL|O_RDWR)',
                 lambda: os.open(P('a/b/c/new'), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644))
    expect_errno(res, 'mkdir newdir', lambda: os.mkdir(P('newdir')))
    expect_errno(res, 'unlink plain.txt', lambda: os.unlink(P('plain.txt')))
    expect_errno(res, 'unlink single-block.log', lambda: os.unlink(P('single-block.log')))
    expect_errno(res, 'rmdir a/b/c', lambda: os.rmdir(P('a/b/c')))
    expect_errno(res, 'rename plain.txt', lambda: os.rename(P('plain.txt'), P('renamed.txt')))
    expect_errno(res, 'truncate plain.txt', lambda: os.truncate(P('plain.txt'), 0))
    expect_errno(res, 'chmod plain.txt', lambda: os.chmod(P('plain.txt'), 0o666))
    expect_errno(res, 'utime plain.txt', lambda: os.utime(P('plain.txt'), (1, 1)))
    expect_errno(res, 'symlink newlink', lambda: os.symlink('plain.txt', P('newlink')))
    expect_errno(res, 'link plain.txt hardlink', lambda: os.link(P('plain.txt'), P('hardlink')))
    with open(os.path.join(tree.src, 'plain.txt'), 'rb') as f:
        same = f.read() == tree.files['plain.txt']
    res.check('source tree unchanged after the write attempts',
              same and sorted(os.listdir(tree.src)) == before,
              f'plain.txt intact={same}; entries now {sorted(os.listdir(tree.src))}')


def log_mentions(m, names):
    return zmtest.lines_naming(m.log_lines(), names)


def read_range(fd, off, n):
    drop_cache(fd)
    return os.pread(fd, n, off)


def check_unreadable(res, mnt, tree):
    for rel, src_rel in sorted(tree.unreadable.items()):
        path = os.path.join(mnt, rel)
        size = None
        try:
            size = os.stat(path).st_size
            with open(path, 'rb') as f:
                f.read()
            res.fail(f'{rel} (unreadable {src_rel}): size 0, open fails with EIO',
                     f'size {size}, and it read')
        except OSError as e:
            res.check(f'{rel} (unreadable {src_rel}): size 0, open fails with EIO',
                      e.errno == errno.EIO and size == 0, errname(e))


def check_corrupt(res, mnt, tree, m):
    check_unreadable(res, mnt, tree)
    for rel, info in sorted(tree.corrupt.items()):
        data = tree.files[rel]
        src_name = os.path.basename(tree.archives[rel]['src'])
        path = os.path.join(mnt, rel)
        if info['kind'] == 'gz':
            check_corrupt_gz(res, mnt, tree, m, rel, src_name, path)
            continue
        blocks, k = info['blocks'], info['block']
        bb = blocks[k]
        tag = f'{rel} (Block {k} {info["what"]} flipped, bytes {bb["uoff"]}+{bb["usize"]})'
        try:
            st = os.stat(path)
            res.check(f'{tag}: st_size from the intact Index', st.st_size == len(data),
                      f'{st.st_size} != {len(data)}')
        except OSError as e:
            res.fail(f'{tag}: stat', errname(e))
            continue
        fd = os.open(path, os.O_RDONLY)
        dfd = open_direct(path)
        try:
            for attempt in (1, 2):
                try:
                    got = read_range(fd, bb['uoff'], bb['usize'])
                    ok_bytes = got == data[bb['uoff']:bb['uoff'] + len(got)]
                    res.fail(f'{tag}: read of the damaged Block gives EIO (try {attempt})',
                             f'returned {len(got)} bytes ({"correct" if ok_bytes else "WRONG"} bytes)')
                except OSError as e:
                    res.check(f'{tag}: read of the damaged Block gives EIO (try {attempt})',
                              e.errno == errno.EIO, f'got {errname(e)}')
            # a small read inside the Block: EIO, never wrong bytes
            mid = bb['uoff'] + bb['usize'] // 2
            for fdx, how in ((fd, 'buffered'), (dfd, 'O_DIRECT')):
                if fdx is None:
                    continue
                try:
                    got = os.pread(fdx, 100, mid) if how == 'O_DIRECT' else read_range(fdx, mid, 100)
                    res.check(f'{tag}: 100-byte {how} read inside the damaged Block: EIO or correct',
                              got == data[mid:mid + 100],
                              f'returned {len(got)} WRONG bytes')
                    if got == data[mid:mid + 100]:
                        res.note(f'{rel}: the daemon served 100 bytes from inside a Block whose '
                                 f'{info["what"]} is damaged (they were correct)')
                except OSError as e:
                    res.check(f'{tag}: 100-byte {how} read inside the damaged Block: EIO or correct',
                              e.errno == errno.EIO, f'got {errname(e)}')
            # other Blocks of the same file, after the error
            for j, why in ((0, 'first'), (k - 1, 'previous'), (k + 1, 'next'),
                           (len(blocks) - 1, 'last')):
                b = blocks[j]
                for fdx, how in ((fd, 'buffered'), (dfd, 'O_DIRECT')):
                    if fdx is None:
                        continue
                    try:
                        got = (os.pread(fdx, b['usize'], b['uoff']) if how == 'O_DIRECT'
                               else read_range(fdx, b['uoff'], b['usize']))
                        res.check(f'{rel}: {why} Block {j} still reads back ({how})',
                                  got == data[b['uoff']:b['uoff'] + b['usize']],
                                  f'{len(got)} bytes, wrong content')
                    except OSError as e:
                        res.fail(f'{rel}: {why} Block {j} still reads back ({how})', errname(e))
            # reading the whole file must stop with EIO
            try:
                h, n = sha_path(path)
                res.fail(f'{rel}: a full sequential read fails with EIO', f'read {n} bytes without error')
            except OSError as e:
                res.check(f'{rel}: a full sequential read fails with EIO', e.errno == errno.EIO,
                          f'got {errname(e)}')
        finally:
            os.close(fd)
            if dfd is not None:
                os.close(dfd)
        hits = log_mentions(m, [rel, src_name])
        res.check(f'{rel}: daemon log has a line naming the file', bool(hits),
                  f'{len(m.log_lines())} log lines, none names {rel} or {src_name}')
        for ln in hits[:3]:
            print(f'#   log: {ln}')
        # every read above hit the one damaged Block: one error, so one line
        res.check(f'{rel}: exactly one log line for its one damaged Block, however often it is read',
                  len(hits) == 1, f'{len(hits)} lines name it: ' + ' | '.join(hits[:4]))
        res.check(f'mount still alive after {rel}', mount_alive(mnt) and m.alive(),
                  'ENOTCONN or daemon gone')


def check_corrupt_gz(res, mnt, tree, m, rel, src_name, path):
    tag = f'{rel} (one byte flipped in the middle of {src_name})'
    if not os.path.lexists(path) and os.path.lexists(os.path.join(mnt, src_name)):
        res.fail(f'{tag}: EIO on open or read',
                 f'nothing at {rel}; the damaged archive is shown raw as {src_name} instead')
    else:
        step = 'stat'
        try:
            os.stat(path)
            step = 'open'
            fd = os.open(path, os.O_RDONLY)
            try:
                step = 'read'
                drop_cache(fd)
                off = 0
                while True:
                    b = os.pread(fd, 128 * KiB, off)
                    if not b:
                        break
                    off += len(b)
            finally:
                os.close(fd)
            res.fail(f'{tag}: EIO on open or read', f'read {off} bytes without any error')
        except OSError as e:
            res.check(f'{tag}: EIO on open or read', e.errno == errno.EIO,
                      f'{step} gave {errname(e)}', info=f'EIO at {step}')
    hits = log_mentions(m, [rel, src_name])
    res.check(f'{rel}: daemon log has a line naming the file', bool(hits),
              f'{len(m.log_lines())} log lines, none names {rel} or {src_name}')
    for ln in hits[:3]:
        print(f'#   log: {ln}')
    res.check(f'mount still alive after {rel}', mount_alive(mnt) and m.alive(),
              'ENOTCONN or daemon gone')


def check_reference_checker(res, mnt, tree, corpus, tmp):
    """Run the corpus's check-mount.py over the generated archives.

    It wants CORPUS/EXPECTED.tsv beside the archives; build such a dir out of
    symlinks into SRC (plus the undamaged copies the from= tags point at)."""
    checker = os.path.join(corpus, 'check-mount.py')
    if not os.path.exists(checker):
        res.fail('reference checker', f'{checker} not found')
        return
    ck = os.path.join(tmp, 'ckcorpus')
    rows = []
    for rel, info in sorted(tree.archives.items()):
        srel = info['src']
        if not srel.endswith(('.xz', '.gz')):
            continue  # .tgz/.txz are not named the way check-mount.py strips suffixes
        if srel.startswith('many/') and srel > 'many/f0040':
            continue  # 40 of the tiny ones are enough here
        dst = os.path.join(ck, srel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.symlink(os.path.join(tree.src, srel), dst)
        fmt = 'xz' if info['kind'] == 'xz' else '-'
        if rel in tree.corrupt:
            c = tree.corrupt[rel]
            tags = '-'
            if c['kind'] == 'xz':
                good = srel[:-3] + '.good.xz'
                with open(os.path.join(ck, good), 'wb') as f:
                    f.write(tree.spare[srel])
                b = c['blocks'][c['block']]
                tags = f'from={good},bad-block={c["block"] + 1}@{b["uoff"]}+{b["usize"]}'
            rows.append([srel, 'error', '-', '-', '1', '-', tags, fmt])
        else:
            d = tree.files[rel]
            rows.append([srel, 'ok', sha(d), str(len(d)), '0', '-', '-', fmt])
    with open(os.path.join(ck, 'EXPECTED.tsv'), 'w') as f:
        f.write('# file\texpect\tsha256\tusize\trc\tmessage\ttags\tformat\n')
        for r in rows:
            f.write('\t'.join(r) + '\n')
    argv = [sys.executable, checker, ck, mnt, '--partial', 'serve', '--reads', '48']
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=240)
    except subprocess.TimeoutExpired:
        res.fail('check-mount.py over the generated archives', 'timed out after 240 s')
        return
    out = p.stdout.decode(errors='replace').splitlines()
    fails = [ln for ln in out if ln.startswith('FAIL')]
    for ln in fails:
        print(f'#   check-mount.py: {ln}')
    res.check(f'check-mount.py --partial serve over {len(rows)} generated archives',
              p.returncode == 0 and not fails and len(out) == len(rows),
              f'rc={p.returncode}, {len(fails)} FAIL rows of {len(out)}; '
              f'{p.stderr.decode(errors="replace").strip()[-300:]}')


# --------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True, help='path to the zmount binary')
    ap.add_argument('--corpus', help='shared corpus dir (enables the check-mount.py cross-check)')
    ap.add_argument('--seed', type=int, default=20240601)
    ap.add_argument('--reads', type=int, default=2200, help='random preads (at least 2000)')
    ap.add_argument('--keep', action='store_true', help='keep the temp dir')
    ap.add_argument('--generate-only', metavar='DIR',
                    help='only build the source tree into DIR/src and verify it; no mount')
    a = ap.parse_args()
    a.reads = max(a.reads, 2000)

    if a.generate_only:
        t0 = time.monotonic()
        os.makedirs(a.generate_only, exist_ok=True)
        tree = generate(os.path.join(a.generate_only, 'src'), a.seed)
        write_refs(tree, os.path.join(a.generate_only, 'ref'))
        print(f'generated {len(tree.files)} files, {len(tree.archives)} archives in '
              f'{time.monotonic() - t0:.1f} s under {a.generate_only}')
        return 0

    zmtest.require_fuse()
    res = zmtest.Results()
    zmount = os.path.abspath(a.zmount)
    if not zmtest.binary_ok(res, zmount):
        return res.finish()

    tmp = tempfile.mkdtemp(prefix='zmount-test-')
    print(f'# temp dir {tmp}, seed {a.seed}', flush=True)
    t_start = time.monotonic()
    mnt = os.path.join(tmp, 'mnt')
    try:
        check_bad_invocations(res, zmount, tmp)

        t0 = time.monotonic()
        try:
            tree = generate(os.path.join(tmp, 'src'), a.seed)
        except (AssertionError, RuntimeError, subprocess.CalledProcessError) as e:
            res.fail('generate the source tree', f'{type(e).__name__}: {e}')
            return res.finish()
        refdir = os.path.join(tmp, 'ref')
        write_refs(tree, refdir)
        print(f'# generated {len(tree.files)} files ({len(tree.archives)} archives, '
              f'{sum(map(len, tree.files.values())) // MiB} MiB) in {time.monotonic() - t0:.1f} s',
              flush=True)
        many = sum(1 for r in tree.archives if r.startswith('many/'))
        kinds = sorted({c['kind'] for c in tree.corrupt.values()})
        res.check('the generated tree has what the checks below need: > 256 archives in many/ '
                  '(fd budget), damaged xz and gzip archives, directories',
                  many > 256 and kinds == ['gz', 'xz'] and len(tree.corrupt) >= 3 and len(tree.dirs) > 1,
                  f'{many} archives in many/, damaged kinds {kinds} ({len(tree.corrupt)}), '
                  f'{len(tree.dirs)} directories')

        mount = zmtest.Mount(zmount, tree.src, mnt, opts=MOUNT_OPTS,
                             log_path=os.path.join(tmp, 'daemon.log'), results=res,
                             watchdog=WATCHDOG_S, label='main mount')
        try:
            mount.__enter__()
        except zmtest.MountError as e:
            res.fail('mount comes up', str(e))
            return res.finish()
        res.ok('mount comes up (daemon in the foreground, MNT mounted)')
        exc = None
        try:
            rnd = random.Random(a.seed)
            sections = [
                ('cold first access', lambda: check_cold_race(res, mnt, tree)),
                ('listing', lambda: check_listing(res, mnt, tree)),
                ('stat', lambda: check_stat(res, mnt, tree)),
                ('sha256', lambda: check_hashes(res, mnt, tree)),
                ('inode numbers', lambda: check_inodes(res, mnt, tree)),
                ('random preads', lambda: check_random_preads(res, mnt, tree, rnd, a.reads)),
                ('tools', lambda: check_tools(res, mnt, tree, refdir)),
                ('concurrency', lambda: check_concurrent(res, mnt, tree, a.seed)),
                ('read-only', lambda: check_readonly(res, mnt, tree)),
                ('mmap, statvfs, lseek', lambda: check_misc(res, mnt, tree)),
                ('ambiguous', lambda: check_ambiguous(res, mnt, tree)),
                ('corruption', lambda: check_corrupt(res, mnt, tree, mount)),
                ('neighbours', lambda: check_hashes(res, mnt, tree, 'after the EIOs, sha256')),
            ]
            if a.corpus:
                sections.append(('check-mount.py',
                                 lambda: check_reference_checker(res, mnt, tree, a.corpus, tmp)))
            sections.append(('daemon log', lambda: check_log_sanity(res, mount, tree)))
            for name, fn in sections:
                t0 = time.monotonic()
                print(f'# --- {name}', flush=True)
                try:
                    fn()
                except Exception as e:  # noqa: BLE001 -- one broken section must not stop the rest
                    res.fail(f'{name}: unexpected exception', f'{type(e).__name__}: {e}')
                print(f'# --- {name}: {time.monotonic() - t0:.1f} s', flush=True)
                if not mount.alive():
                    res.fail(f'daemon still running after the {name} checks',
                             f'exit status {mount.proc.poll()}; log tail:\n{mount.log_tail()}')
                    break
        except BaseException as e:
            exc = e
        if exc is None:
            mount.__exit__(None, None, None)
        else:
            mount.__exit__(type(exc), exc, exc.__traceback__)
            raise exc
        for name, fn in (('background mode', lambda: check_background_mode(res, zmount, tree, tmp)),
                         ('-d mode', lambda: check_debug_mode(res, zmount, tree, tmp)),
                         ('max_read', lambda: check_max_read(res, zmount, tree, tmp)),
                         ('fd budget', lambda: check_fd_budget(res, zmount, tree, tmp)),
                         ('read-ahead', lambda: check_read_ahead(res, zmount, tmp))):
            print(f'# --- {name}', flush=True)
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                res.fail(f'{name}: unexpected exception', f'{type(e).__name__}: {e}')
        lines = mount.log_lines()
        print(f'# daemon log: {len(lines)} lines')
        for ln in lines[:60]:
            print(f'#   | {ln}')
        print(f'# total time {time.monotonic() - t_start:.1f} s', flush=True)
    finally:
        if a.keep or zmtest.is_mounted(mnt):
            print(f'# kept {tmp}', flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
