#!/usr/bin/env python3
"""test_changes.py -- zmount mount tests: saved indexes, source changes, a large tree.

usage: test_changes.py --zmount PATH [--seed N] [--keep] [--only 1,2,3,4,5]

What it does (every check compares the bytes read through the mount with the
bytes they must be):
  1. Saved gzip indexes (private index_dir per run).  Mount, stat and read a
     20 MiB .gz, unmount; mount again with the same index_dir: the stats
     xattr must show indexes_loaded >= 1 and indexes_built == 0, bytes right.
     Then the saved .zmi is damaged three ways -- bytes flipped in its middle,
     truncated to half, replaced by the .zmi of another source -- and each
     time the next mount must reject it (a log line about the unusable saved
     index), rebuild it (indexes_built == 1) and serve the right bytes; a last
     mount must reuse the rebuilt index (indexes_built == 0).
  2. Sources that change while mounted, for a .gz and a multi-Block .xz,
     run twice: with timeout=0 (checks 2...) and with the default timeout,
     1 s (checks 2g...), both with cache_size=1M,span=64K:
       (a) replaced by rename(2) of a new archive over it (other size: the
           gz one shrinks, the xz one grows),
       (b) truncated in place (O_TRUNC) and rewritten shorter,
       (c) appended to in place (another gzip member / xz Stream),
       (d) deleted, (e) renamed, (f) a new archive and a new directory with
           an archive in it.
     Before the change every file is read whole, its page cache dropped, and
     a buffered handle (first half read) and an O_DIRECT handle opened.  After
     it: the change must show (st_size, listing, ENOENT) within 5 s -- the
     latency of each is printed; with the default timeout this is check (g);
     a fresh open must read the new bytes; each old handle, read whole, must
     give the old bytes exactly: after (a), (d) and (e), whose old inode
     keeps its bytes, with no EIO; after (b) and (c) a correct prefix of
     the old bytes ended by EIO is allowed too, never any new byte; the new
     handle must still read the new bytes
     after that, and so must one more fresh open.  With the default timeout,
     an open made right after the change (before the timeout) may read
     either version whole, or get EIO, but never a mix.  Failures name, page
     by page, which version each byte came from.  With the default timeout
     also: 40 creates and then 40 deletes, the directory listed right after
     each one, must all show within 5 s; final `ls -1A` listings exact.
  3. A tree of 10,000 tiny archives (100 dirs x 100, half .gz, half .xz): the
     time from starting the daemon to a ready mount point (must be < 5 s),
     the time of a full os.walk (printed), the exact listing, and 200 random
     files read back.
  4. tail -F and inode numbers (issue 20 item 1), timeout=0.2: a plain
     live.log gets TAIL_APPENDS lines, one every TAIL_GAP_S (longer than
     the 5 unchanged polls after which tail -F stats the name again), while
     `tail -F -s 0.2 -n 0` follows it: tail must print exactly the appended
     lines and never say the file was replaced.  st_ino through the mount
     is the source's, for live.log across the appends and for an archive
     rewritten in place (its size changes, its inode does not).  A tmpfs
     mounted in SRC with another tmpfs inside it (both roots are inode 1):
     their numbers differ through the mount and `find` sees no loop.
  5. Old handles when only ctime moves (issue 18 item 11), cache_size=1M,
     span=64K: a .gz and a multi-Block .xz of 3 MiB each, per change, get a
     handle that reads their first 64 KiB; then the archive is replaced by
     rename(2), deleted, hard-linked, or chmod'ed, and the handle reads the
     whole file, nearly all of it cold (never decoded before): it must give
     the old bytes exactly, no EIO.  An in-place rewrite with another
     archive of the same size, mtime restored (touch -r), must give EIO on
     its cold ranges, after a correct prefix: never the new bytes.  And
     (issue 19 item 4) a stored (level 0) .gz whose rewrite flips one byte
     in the middle of a later span, keeping both 4 KiB ends and the CRC32
     trailer: the handle's read of that span must give EIO and one log
     line ("span at offset X does not match the checksum ..."), since the
     span's own CRC32, recorded by the index pass, no longer matches.

Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import errno
import gzip
import hashlib
import lzma
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from zmtest import errname, mount_alive, open_direct  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
WATCHDOG_S = 180        # per mount
POLL_DEADLINE_S = 5.0   # (g): a change must show within this
READY_LIMIT_S = 5.0     # 3: the mount point must be ready within this
INFO = 'user.zmount.info'

# --------------------------------------------------------------------------
# deterministic content
# --------------------------------------------------------------------------
WORDS = ('accepted connection from request served in ms user session closed opened '
         'block index cache miss hit evicted checkpoint span offset length read write '
         'timeout retry backend upstream status queue worker thread started stopped '
         'config reload signal received disk quota exceeded latency bytes sent').split()
_BASE = None


def _base():
    """1 MiB of log-like text, made once; content() cuts files out of it."""
    global _BASE
    if _BASE is None:
        rnd = random.Random(7)
        out, n, i = [], 0, 0
        while n < MiB + 256 * KiB:
            s = (f'{1_700_000_000 + i * 3}.{rnd.randrange(1000):03d} host{rnd.randrange(64):02d} '
                 f'{" ".join(rnd.choice(WORDS) for _ in range(rnd.randrange(3, 12)))} '
                 f'id={rnd.getrandbits(32):08x}\n')
            out.append(s)
            n += len(s)
            i += 1
        _BASE = ''.join(out).encode()
    return _BASE


def content(seed, size):
    """Exactly SIZE bytes, a function of SEED: slices of the text base at
    random places (each headed by a line naming seed and slice), with runs of
    random bytes mixed in.  Cheap: 20 MiB in well under a second."""
    base = _base()
    rnd = random.Random(seed)
    parts, n, k = [], 0, 0
    while n < size:
        if rnd.random() < 0.1:
            chunk = rnd.randbytes(rnd.randrange(256, 8 * KiB))
        else:
            a = rnd.randrange(MiB)
            chunk = (f'--- seed {seed} slice {k} at {a} ---\n'.encode()
                     + base[a:a + rnd.randrange(8 * KiB, 192 * KiB)])
        parts.append(chunk)
        n += len(chunk)
        k += 1
    return b''.join(parts)[:size]


def gz(data, level=6):
    return gzip.compress(data, compresslevel=level, mtime=0)


XZ_MULTI = ['xz', '-T1', '-1', '--block-size=128KiB', '-c']


def xz(data):
    """A multi-Block xz (128 KiB Blocks) made by xz(1)."""
    p = subprocess.run(XZ_MULTI, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError(f'{" ".join(XZ_MULTI)}: {p.stderr.decode(errors="replace")}')
    return p.stdout


_XZ_TINY = [{'id': lzma.FILTER_LZMA2, 'preset': 0, 'dict_size': 64 * KiB}]


def xz_tiny(data):
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, filters=_XZ_TINY)


def pack(fmt, data):
    return gz(data) if fmt == 'gz' else xz(data)


def write_file(path, blob):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(blob)


# --------------------------------------------------------------------------
# reading and judging
# --------------------------------------------------------------------------
def read_fd(fd, chunk=128 * KiB):
    """Everything from offset 0 to EOF: (bytes, None), or (the bytes before the
    error, the OSError)."""
    parts, off = [], 0
    try:
        while True:
            b = os.pread(fd, chunk, off)
            if not b:
                return b''.join(parts), None
            parts.append(b)
            off += len(b)
    except OSError as e:
        return b''.join(parts), e


def read_path(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return b'', e
    try:
        return read_fd(fd)
    finally:
        os.close(fd)


def first_diff(a, b):
    """First offset where a and b differ within their common length, or None."""
    n = min(len(a), len(b))
    step = 64 * KiB
    for s in range(0, n, step):
        if a[s:s + step] != b[s:s + step]:
            for i in range(s, min(s + step, n)):
                if a[i] != b[i]:
                    return i
    return None


def provenance(got, want, other, want_name, other_name):
    """Where GOT's bytes come from, page by page (4 KiB at the same offset):
    e.g. '[0, 1052672) OLD, [1052672, 1310720) zeros'."""
    P = 4096
    runs = []
    for s in range(0, len(got), P):
        g = got[s:s + P]
        w, o = want[s:s + len(g)] == g, other[s:s + len(g)] == g
        lab = (f'{want_name}+{other_name}' if w and o else want_name if w else other_name if o
               else 'zeros' if not g.strip(b'\0') else 'other bytes')
        if runs and runs[-1][0] == lab:
            runs[-1][2] = s + len(g)
        else:
            runs.append([lab, s, s + len(g)])
    txt = ', '.join(f'[{a}, {b}) {lab}' for lab, a, b in runs[:6])
    return txt + (f', ... ({len(runs)} runs)' if len(runs) > 6 else '')


def describe(got, err, want, other=None, other_name='the other version', want_name='wanted'):
    """Why GOT (ended by ERR) is not WANT, in a few words."""
    parts = []
    if err is not None:
        parts.append(f'{errname(err)} after {len(got)} bytes')
    parts.append(f'got {len(got)} bytes, want {len(want)}')
    i = first_diff(got, want)
    if i is None:
        if len(got) < len(want):
            parts.append('a correct prefix that ends early (short read before EOF)')
        elif len(got) > len(want):
            parts.append(f'{len(got) - len(want)} extra bytes past the end')
    else:
        parts.append(f'first wrong byte at offset {i}')
    if other is not None and got and got != want:
        if got == other:
            parts.append(f'it is exactly {other_name}')
        else:
            on = other_name.replace('the ', '').replace(' version', '')
            parts.append('by 4 KiB page: ' + provenance(got, want, other, want_name, on))
    return '; '.join(parts)


def judge_old(got, err, old, strict=False):
    """An old handle must give OLD exactly, or (unless STRICT: the file's bytes did
    not change, only its name or its ctime) a correct prefix of OLD ended by EIO."""
    if err is None and got == old:
        return True, 'old bytes'
    if not strict and err is not None and err.errno == errno.EIO and old[:len(got)] == got:
        return True, f'EIO after {len(got)} correct bytes'
    return False, None


def info(path):
    try:
        raw = os.getxattr(path, INFO).decode(errors='replace')
    except OSError as e:
        return {'error': errname(e)}
    return dict(ln.split('=', 1) for ln in raw.splitlines() if '=' in ln)


def listdir(path):
    try:
        return set(os.listdir(path))
    except OSError as e:
        return e


def poll(cond, deadline=POLL_DEADLINE_S, step=0.05):
    """Calls cond() until it returns true or DEADLINE s pass: (ok, seconds)."""
    t0 = time.monotonic()
    while True:
        try:
            ok = cond()
        except OSError:
            ok = False
        el = time.monotonic() - t0
        if ok or el > deadline:
            return bool(ok), el
        time.sleep(step)


def stat_errno(path):
    try:
        os.stat(path)
        return 0
    except OSError as e:
        return e.errno


def with_mount(res, label, zm, src, mnt, opts, log, body, watchdog=WATCHDOG_S):
    """Mounts (house order), runs body(m), unmounts; an exception in body is
    one failed check, never the end of the run.  Returns the Mount, or None if
    it did not come up."""
    m = zmtest.Mount(zm, src, mnt, opts=opts, log_path=log, results=res, watchdog=watchdog,
                     label=label)
    try:
        m.__enter__()
    except zmtest.MountError as e:
        res.fail(f'{label}: mount comes up', str(e))
        return None
    exc = None
    try:
        body(m)
    except Exception as e:  # noqa: BLE001 -- one broken section must not stop the rest
        res.fail(f'{label}: unexpected exception', f'{type(e).__name__}: {e}\n'
                 + traceback.format_exc())
    except BaseException as e:
        exc = e
    if exc is None and not m.alive():
        res.fail(f'{label}: daemon still running after the checks',
                 f'exit status {m.proc.poll()}; log tail:\n{m.log_tail()}')
    if exc is not None:
        m.__exit__(type(exc), exc, exc.__traceback__)
        raise exc
    m.__exit__(None, None, None)
    return m


# --------------------------------------------------------------------------
# 4. tail -F across appends: inode numbers stay the source's
# --------------------------------------------------------------------------
TAIL_APPENDS = 4
TAIL_GAP_S = 1.5    # > 5 polls of 0.2 s: tail -F re-stats the name between appends
TAIL_QUIET_S = 2.0  # after the last line: room for a re-print, were there one


def wait_open_by(pid, path, deadline=10.0):
    """True once process PID holds PATH open (its /proc fd links)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline:
        try:
            for fd in os.listdir(f'/proc/{pid}/fd'):
                try:
                    if os.readlink(f'/proc/{pid}/fd/{fd}') == path:
                        return True
                except OSError:
                    pass
        except OSError:
            return False
        time.sleep(0.05)
    return False


def section_tail(res, zm, tmp):
    src, mnt = os.path.join(tmp, 's4-src'), os.path.join(tmp, 'mnt')
    os.makedirs(src)
    live, arc = os.path.join(src, 'live.log'), os.path.join(src, 'arc.log.gz')
    with open(live, 'wb') as f:
        f.write(b''.join(b'old line %d\n' % i for i in range(1000)))
    write_file(arc, gz(content(4, 100 * KiB)))
    lines = [b'appended line %d\n' % i for i in range(TAIL_APPENDS)]
    outer, inner = os.path.join(src, 'fs1'), os.path.join(src, 'fs1', 'fs2')
    mounted = []
    if os.geteuid() != 0:
        res.fail('4: runs as root (it mounts two tmpfs in SRC)', f'euid {os.geteuid()}')
    else:
        for d in (outer, inner):
            os.makedirs(d)
            if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', d]).returncode == 0:
                mounted.append(d)
        res.check('4: two nested tmpfs mounted in SRC', len(mounted) == 2, f'{mounted}')

    def body(m):
        mlive = os.path.join(mnt, 'live.log')
        inos = [os.stat(mlive).st_ino]
        p = subprocess.Popen(['tail', '-F', '-s', '0.2', '-n', '0', mlive],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            res.check('4: tail -F has the file open', wait_open_by(p.pid, mlive),
                      'tail never opened it')
            for ln in lines:
                time.sleep(TAIL_GAP_S)
                with open(live, 'ab') as f:
                    f.write(ln)
                poll(lambda: os.stat(mlive).st_size == os.stat(live).st_size)
                inos.append(os.stat(mlive).st_ino)
            time.sleep(TAIL_QUIET_S)
        finally:
            p.terminate()
            out, err = p.communicate(timeout=10)
        want = b''.join(lines)
        res.check(f'4: tail -F printed exactly the {TAIL_APPENDS} appended lines',
                  out == want, f'{len(out.splitlines())} lines printed, e.g. {out[:120]!r}; '
                  f'stderr {err[-300:]!r}')
        res.check('4: tail -F never saw the file replaced', b'replaced' not in err,
                  err.decode(errors='replace')[-300:])
        sino = os.stat(live).st_ino
        res.check('4: st_ino of live.log is the source\'s, unchanged across the appends',
                  set(inos) == {sino}, f'st_ino seen {inos}, source {sino}')
        marc = os.path.join(mnt, 'arc.log')
        before = os.stat(marc).st_ino
        with open(arc, 'r+b') as f:  # same inode, new contents
            f.write(gz(content(5, 150 * KiB)))
        ok, _ = poll(lambda: os.stat(marc).st_size == 150 * KiB)
        res.check('4: an archive rewritten in place shows its new size and keeps st_ino, the '
                  'source\'s', ok and os.stat(marc).st_ino == before == os.stat(arc).st_ino,
                  f'st_ino {before} -> {os.stat(marc).st_ino}, source {os.stat(arc).st_ino}')
        if len(mounted) == 2:
            inos = [os.stat(os.path.join(mnt, os.path.relpath(d, src))).st_ino for d in mounted]
            p = subprocess.run(['find', mnt], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            res.check('4: two file systems\' root directories (both inode 1 in SRC) have two '
                      'numbers through the mount, and find sees no loop',
                      inos[0] != inos[1] and p.returncode == 0 and not p.stderr,
                      f'st_ino {inos}; find rc {p.returncode} {p.stderr[-200:]!r}')

    try:
        with_mount(res, '4 tail -F', zm, src, mnt, 'timeout=0.2', os.path.join(tmp, 's4.log'),
                   body)
    finally:
        for d in reversed(mounted):
            subprocess.run(['umount', '-l', d])


# --------------------------------------------------------------------------
# 5. old handles when only ctime moves
# --------------------------------------------------------------------------
CTIME_SIZE = 3 * MiB
CTIME_KINDS = ('rename-over', 'delete', 'link', 'chmod', 'rewrite')


def same_size_pair(fmt, a, b):
    """Archives of A and B of one size: gzip padded with zeros (accepted as
    gzip -d accepts them); xz of random bytes, which LZMA2 stores uncompressed,
    so two inputs of one length make archives of one length."""
    pa, pb = pack(fmt, a), pack(fmt, b)
    if fmt == 'gz':
        n = max(len(pa), len(pb))
        pa, pb = pa + bytes(n - len(pa)), pb + bytes(n - len(pb))
    assert len(pa) == len(pb), (fmt, len(pa), len(pb))
    return pa, pb


def middle_rewrite(old):
    """A stored (level 0) gzip of OLD, a copy of it with one stored byte
    flipped about 2 MiB in (both 4 KiB ends, the member's CRC32 trailer
    and the size as they were), and the uncompressed offset of that byte.
    Stored data is the bytes themselves, so a 64-byte piece of OLD found
    once in the archive is where they are."""
    oblob = gzip.compress(old, compresslevel=0, mtime=0)
    for u in range(2 * MiB + 12345, len(old) - 64, 4093):
        at = oblob.find(old[u:u + 64])
        if at > 0 and oblob.find(old[u:u + 64], at + 1) < 0:
            nblob = bytearray(oblob)
            nblob[at] ^= 0x20
            return oblob, bytes(nblob), u
    raise AssertionError('no unique piece of the stored data found')


def same_ends_pair(seed):
    """Two xz files of one size, with the same first and last 4 KiB (the
    same Index: 1 MiB Blocks of random bytes, stored by LZMA2 as they are),
    whose contents differ in the second Block only: what an rsync --inplace
    of a new version that restores the mtime leaves under the same name."""
    rnd = random.Random(seed)
    old = rnd.randbytes(CTIME_SIZE)
    new = old[:MiB] + rnd.randbytes(MiB) + old[2 * MiB:]

    def xz(b):
        return subprocess.run(['xz', '-T1', '--block-size=1MiB', '-c'], input=b,
                              stdout=subprocess.PIPE, check=True).stdout
    oblob, nblob = xz(old), xz(new)
    assert len(oblob) == len(nblob) and oblob[:4096] == nblob[:4096] \
        and oblob[-4096:] == nblob[-4096:]
    return old, new, oblob, nblob


def section_ctime(res, zm, tmp, seed):
    src, mnt = os.path.join(tmp, 's5-src'), os.path.join(tmp, 'mnt')
    stage = os.path.join(tmp, 's5-stage')
    os.makedirs(stage)
    files = {}
    for fi, fmt in enumerate(('gz', 'xz')):
        for ki, kind in enumerate(CTIME_KINDS):
            s1, s2 = seed + 5000 + 10 * fi + ki, seed + 6000 + 10 * fi + ki
            if fmt == 'gz':
                old, new = content(s1, CTIME_SIZE), content(s2, CTIME_SIZE)
            else:
                old, new = (random.Random(x).randbytes(CTIME_SIZE) for x in (s1, s2))
            oblob, nblob = same_size_pair(fmt, old, new)
            name = f'{fmt}/{kind}.log.{fmt}'
            write_file(os.path.join(src, name), oblob)
            files[name] = (fmt, kind, old, new, nblob)
    mold = content(seed + 5100, CTIME_SIZE)
    moblob, mnblob, mu = middle_rewrite(mold)
    mname = 'gz/rewrite-middle.log.gz'
    write_file(os.path.join(src, mname), moblob)
    sold, snew, soblob, snblob = same_ends_pair(seed + 5200)
    sname = 'xz/rewrite-same-ends.log.xz'
    write_file(os.path.join(src, sname), soblob)
    opts = f'cache_size=1M,span=64K,timeout=0.2,index_dir={os.path.join(tmp, "s5-idx")}'

    def change(kind, path, nblob):
        if kind == 'rename-over':
            write_file(os.path.join(stage, 'x'), nblob)
            os.rename(os.path.join(stage, 'x'), path)
        elif kind == 'delete':
            os.unlink(path)
        elif kind == 'link':
            os.link(path, os.path.join(stage, os.path.basename(path)))
        elif kind == 'chmod':
            os.chmod(path, 0o600)
        else:  # rewrite in place, size and mtime as they were
            st = os.stat(path)
            with open(path, 'r+b') as f:
                f.write(nblob)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            after = os.stat(path)
            assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)

    def same_ends(m):
        """Under its own name, mode and owner, only a write moves ctime:
        the handle gets EIO, although the ends hash as before and the new
        Block's Check is valid."""
        fd = os.open(os.path.join(mnt, sname[:-3]), os.O_RDONLY | os.O_DIRECT)
        try:
            got = os.pread(fd, 64 * KiB, 0)
            res.check(f'5 {sname}: the handle reads its first 64 KiB', got == sold[:64 * KiB],
                      describe(got, None, sold[:64 * KiB]))
            change('rewrite', os.path.join(src, sname), snblob)
            got, err = b'', None
            try:
                got = os.pread(fd, 64 * KiB, MiB + 64 * KiB)
            except OSError as e:
                err = e
            res.check(f'5 {sname}: after an in-place rewrite of one Block that keeps size, '
                      f'mtime and both 4 KiB ends, the old handle gets EIO, never the new bytes',
                      err is not None and err.errno == errno.EIO,
                      describe(got, err, sold[MiB + 64 * KiB:MiB + 128 * KiB],
                               snew[MiB + 64 * KiB:MiB + 128 * KiB], 'the NEW version', 'OLD'))
        finally:
            os.close(fd)

    def middle(m):
        """The handle reads its first span; a chmod (a harmless cause for
        ctime to move) and then a rewrite that flips a byte in a later span
        keep both ends: the span's CRC32 catches it, cold: EIO and one log
        line."""
        path, pos = os.path.join(src, mname), mu - mu % (4 * KiB)
        fd = os.open(os.path.join(mnt, mname[:-3]), os.O_RDONLY)
        try:
            got = os.pread(fd, 64 * KiB, 0)
            res.check(f'5 {mname}: the handle reads its first 64 KiB', got == mold[:64 * KiB],
                      describe(got, None, mold[:64 * KiB]))
            os.chmod(path, 0o600)
            change('rewrite', path, mnblob)
            err = None
            try:
                got = os.pread(fd, 4 * KiB, pos)
            except OSError as e:
                got, err = b'', e
            new = bytearray(mold[pos:pos + 4 * KiB])
            new[mu - pos] ^= 0x20
            res.check(f'5 {mname}: after an in-place rewrite of one byte in a later span (ends, '
                      f'size, mtime kept), reading that span through the old handle gives EIO',
                      err is not None and err.errno == errno.EIO,
                      describe(got, err, mold[pos:pos + 4 * KiB], new, 'the NEW version', 'OLD'))
            want = 'does not match the checksum the index pass recorded'
            lines = [ln for ln in m.log_lines() if want in ln]
            res.check(f'5 {mname}: one log line names the file and the span',
                      len(lines) == 1 and 'rewrite-middle.log' in lines[0],
                      f'{len(lines)} lines with "{want}":\n' + '\n'.join(lines)
                      + f'\nlog tail:\n{m.log_tail()}')
        finally:
            os.close(fd)

    def body(m):
        middle(m)
        same_ends(m)
        fds = {}
        try:
            for name, (fmt, kind, old, new, nblob) in files.items():
                fd = os.open(os.path.join(mnt, name[:-len(fmt) - 1]), os.O_RDONLY)
                fds[name] = fd
                got = os.pread(fd, 64 * KiB, 0)
                res.check(f'5 {name}: the handle reads its first 64 KiB', got == old[:64 * KiB],
                          describe(got, None, old[:64 * KiB]))
            for name, (fmt, kind, old, new, nblob) in files.items():
                change(kind, os.path.join(src, name), nblob)
            for name, (fmt, kind, old, new, nblob) in files.items():
                got, err = read_fd(fds[name])
                if kind != 'rewrite':
                    res.check(f'5 {name}: after {kind}, the handle opened before reads the old '
                              f'bytes exactly, no EIO', err is None and got == old,
                              describe(got, err, old, new, 'the NEW version', 'OLD'))
                    continue
                res.check(f'5 {name}: after an in-place rewrite that restored size and mtime, '
                          f'the handle gets EIO after a correct prefix, never the new bytes',
                          err is not None and err.errno == errno.EIO and got == old[:len(got)],
                          describe(got, err, old, new, 'the NEW version', 'OLD'),
                          info=f'EIO after {len(got)} bytes' if err is not None else '')
        finally:
            for fd in fds.values():
                os.close(fd)

    with_mount(res, '5 ctime', zm, src, mnt, opts, os.path.join(tmp, 's5.log'), body)


# --------------------------------------------------------------------------
# 1. saved indexes: reuse, and damaged ones rejected
# --------------------------------------------------------------------------
def zmi_map(idx):
    """Source path recorded in each index file of IDX -> index file path
    (doc/index-format.md: path_len at offset 60, the path at offset 136)."""
    out = {}
    try:
        names = os.listdir(idx)
    except OSError:
        return out
    for n in names:
        if not n.endswith('.zmi') or n.startswith('.'):
            continue
        p = os.path.join(idx, n)
        with open(p, 'rb') as f:
            head = f.read(136 + 4096)
        if len(head) < 136:
            continue
        plen = int.from_bytes(head[60:64], 'little')
        out[head[136:136 + plen].decode(errors='replace')] = p
    return out


def zmi_valid_for(path, src):
    """Does the index file at PATH record SRC and have the length it claims?"""
    try:
        with open(path, 'rb') as f:
            b = f.read()
    except OSError:
        return False
    if len(b) < 144 or b[:8] != b'ZMIDX\r\n\x1a':
        return False
    plen = int.from_bytes(b[60:64], 'little')
    return (int.from_bytes(b[16:24], 'little') == len(b)
            and b[136:136 + plen] == src.encode())


def section_saved_indexes(res, zm, tmp, seed):
    src = os.path.join(tmp, 's1-src')
    idx = os.path.join(tmp, 's1-idx')
    mnt = os.path.join(tmp, 'mnt')
    t0 = time.monotonic()
    big = content(seed + 101, 20 * MiB)
    other = content(seed + 102, 2 * MiB + 333)
    write_file(os.path.join(src, 'big.log.gz'), gz(big, 1))
    write_file(os.path.join(src, 'other.log.gz'), gz(other, 1))
    big_src = os.path.realpath(os.path.join(src, 'big.log.gz'))
    other_src = os.path.realpath(os.path.join(src, 'other.log.gz'))
    print(f'# generated 20 MiB big.log.gz and 2 MiB other.log.gz in '
          f'{time.monotonic() - t0:.1f} s', flush=True)
    opts = f'index_dir={idx},timeout=0'
    runs = [0]

    def stat_read(m, tag, want_built, want_loaded_min):
        try:
            st = os.stat(os.path.join(mnt, 'big.log'))
            res.check(f'{tag}: st_size of big.log', st.st_size == len(big),
                      f'{st.st_size} != {len(big)}')
        except OSError as e:
            res.fail(f'{tag}: stat big.log', errname(e))
        t = time.monotonic()
        got, err = read_path(os.path.join(mnt, 'big.log'))
        res.check(f'{tag}: big.log reads back exactly (20 MiB)', err is None and got == big,
                  describe(got, err, big), info=f'{time.monotonic() - t:.1f} s')
        got, err = read_path(os.path.join(mnt, 'other.log'))
        res.check(f'{tag}: other.log reads back exactly', err is None and got == other,
                  describe(got, err, other))
        s = zmtest.stats(mnt)
        print(f'#   {tag}: indexes_built={s.get("indexes_built")} '
              f'indexes_loaded={s.get("indexes_loaded")} decoded_bytes={s.get("decoded_bytes")}',
              flush=True)
        if want_built is None:
            res.check(f'{tag}: stats show an index pass (indexes_built >= 1)',
                      s.get('indexes_built', 0) >= 1, f'stats: {s}')
        else:
            res.check(f'{tag}: indexes_built == {want_built}',
                      s.get('indexes_built') == want_built, f'stats: {s}')
        if want_loaded_min:
            res.check(f'{tag}: indexes_loaded >= {want_loaded_min}',
                      s.get('indexes_loaded', 0) >= want_loaded_min, f'stats: {s}')

    def mount(tag, body):
        runs[0] += 1
        return with_mount(res, tag, zm, src, mnt, opts,
                          os.path.join(tmp, f's1-daemon-{runs[0]}.log'), body)

    # first mount: builds and saves both indexes
    mount('1 first mount', lambda m: stat_read(m, '1 first mount', None, 0))
    zmis = zmi_map(idx)
    big_zmi = zmis.get(big_src)
    other_zmi = zmis.get(other_src)
    res.check('1: the first mount saved an index for big.log.gz in index_dir', big_zmi is not None,
              f'index files there record: {sorted(zmis)}')
    res.check('1: the first mount saved an index for other.log.gz in index_dir',
              other_zmi is not None, f'index files there record: {sorted(zmis)}')
    if big_zmi is None or other_zmi is None:
        return
    print(f'#   {os.path.basename(big_zmi)}: {os.path.getsize(big_zmi)} bytes '
          f'(big.log.gz), {os.path.basename(other_zmi)}: {os.path.getsize(other_zmi)} bytes',
          flush=True)

    # second mount: reuses them, no index pass
    mount('1 remount', lambda m: stat_read(m, '1 remount (same index_dir)', 0, 1))
    with open(big_zmi, 'rb') as f:
        pristine = f.read()
    with open(other_zmi, 'rb') as f:
        foreign = f.read()

    def flipped(b):
        b = bytearray(b)
        mid = len(b) // 2
        for i in range(mid, mid + 16):
            b[i] ^= 0xA5
        return bytes(b)

    variants = [
        ('16 bytes flipped in the middle', flipped(pristine)),
        ('truncated to half its length', pristine[:len(pristine) // 2]),
        ('replaced by the index of other.log.gz', foreign),
    ]
    for what, blob in variants:
        tag = f'1 saved index {what}'
        with open(big_zmi, 'wb') as f:
            f.write(blob)
        m = mount(tag, lambda m, tag=tag: stat_read(m, tag, 1, 0))
        if m is None:
            continue
        lines = [ln for ln in m.log_lines()
                 if 'index' in ln.lower() and ('big.log.gz' in ln or 'big.log' in ln)]
        res.check(f'{tag}: the daemon log says the saved index is unusable', bool(lines),
                  f'no log line names big.log.gz and an index; log:\n{m.log_tail(20)}')
        for ln in lines[:2]:
            print(f'#   log: {ln}', flush=True)
        res.check(f'{tag}: the rebuilt index was saved over it', zmi_valid_for(big_zmi, big_src),
                  f'{big_zmi} is not a whole index file recording {big_src}')
    # the index rebuilt by the last one is reused
    mount('1 remount after the rebuilds',
          lambda m: stat_read(m, '1 remount after the rebuilds', 0, 1))


# --------------------------------------------------------------------------
# 2. sources that change while mounted
# --------------------------------------------------------------------------
class Case:
    """One archive under change.  old/new: uncompressed bytes before/after;
    oblob/nblob: the archives."""

    def __init__(self, fmt, kind, name, old, oblob, new=None, nblob=None):
        self.fmt, self.kind, self.name = fmt, kind, name
        self.old, self.oblob, self.new, self.nblob = old, oblob, new, nblob
        self.h0 = self.h0d = None

    @property
    def vis(self):  # the visible name
        return self.name[:-len(self.fmt) - 1]


def build_cases(seed, pool):
    """The archives of sections 2 (a)-(f): {fmt: {kind: Case}}, compressed in
    parallel.  gz replacement is smaller, xz replacement larger."""
    plan = {
        'replace': (2 * MiB + 5000, {'gz': MiB + 3000, 'xz': 3 * MiB + 77}),
        'truncate': (2 * MiB + 1234, MiB - 99),
        'append': (MiB + 4321, 700 * KiB + 1),
        'delete': (MiB + 11, None),
        'rename': (MiB - 7, None),
        'new': (800 * KiB + 5, None),
        'inner': (300 * KiB + 3, None),
    }
    jobs = {}
    cases = {}
    for fi, fmt in enumerate(('gz', 'xz')):
        cases[fmt] = {}
        for ki, (kind, (osz, nsz)) in enumerate(plan.items()):
            s = seed + 1000 * (fi + 1) + 10 * ki
            old = content(s, osz)
            new = None
            if isinstance(nsz, dict):
                nsz = nsz[fmt]
            if nsz is not None:
                new = content(s + 1, nsz)
            c = Case(fmt, kind, f'{kind}.log.{fmt}', old, None, new, None)
            cases[fmt][kind] = c
            jobs[(fmt, kind, 'o')] = pool.submit(pack, fmt, old)
            if new is not None:
                jobs[(fmt, kind, 'n')] = pool.submit(pack, fmt, new)
    for (fmt, kind, which), j in jobs.items():
        c = cases[fmt][kind]
        if which == 'o':
            c.oblob = j.result()
        else:
            c.nblob = j.result()
    return cases


def check_new_handle(res, tag, path, want, old):
    """stat size, a new handle reads WANT; returns the open fd (or None)."""
    try:
        st = os.stat(path)
        res.check(f'{tag}: st_size is the new size', st.st_size == len(want),
                  f'{st.st_size} != {len(want)} (old size {len(old)})')
    except OSError as e:
        res.fail(f'{tag}: stat after the change', errname(e))
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        res.fail(f'{tag}: a new open reads the new bytes', f'open: {errname(e)}')
        return None
    got, err = read_fd(fd)
    res.check(f'{tag}: a new open reads the new bytes exactly', err is None and got == want,
              describe(got, err, want, old, 'the OLD version', 'NEW'))
    return fd


def check_old_handles(res, tag, c, new=None, strict=False):
    """Reads the whole file through the handles opened before the change.  STRICT:
    the old inode's bytes did not change (a rename or a delete), so no EIO."""
    for fd, how in ((c.h0, 'buffered'), (c.h0d, 'O_DIRECT')):
        if fd is None:
            continue
        got, err = read_fd(fd)
        ok, why = judge_old(got, err, c.old, strict)
        res.check(f'{tag}: the {how} handle opened before the change reads the old bytes '
                  f'exactly' + ('' if strict else ' or gets EIO'), ok,
                  describe(got, err, c.old, new, 'the NEW version', 'OLD'), info=why or '')


def reread(res, tag, fd, want, old):
    if fd is None:
        return
    got, err = read_fd(fd)
    res.check(f'{tag}: the new handle still reads the new bytes after the old handle was read',
              err is None and got == want, describe(got, err, want, old, 'the OLD version', 'NEW'))


def fresh(res, tag, path, want, old):
    got, err = read_path(path)
    res.check(f'{tag}: one more fresh open reads the new bytes exactly',
              err is None and got == want, describe(got, err, want, old, 'the OLD version', 'NEW'))


def early(res, tag, path, old, new, lat_zero):
    """An open right after the change, before the timeout has passed: the
    kernel may still hold the old size and pages, so either version is
    allowed, or EIO -- never a mix of the two."""
    if lat_zero:
        return
    got, err = read_path(path)
    if err is None and got == new:
        how = 'the new bytes'
    elif err is None and got == old:
        how = 'the old bytes'
    elif err is not None and err.errno == errno.EIO and (old[:len(got)] == got
                                                        or new[:len(got)] == got):
        how = f'EIO after {len(got)} correct bytes'
    else:
        how = None
    d = describe(got, err, new, old, 'the OLD version', 'NEW')
    res.check(f'{tag}: an open right after the change (within the timeout) reads one version '
              f'whole, or gets EIO', how is not None, d, info=how or '')


def section_changes(res, zm, tmp, seed, cases, zero):
    """(a)-(f) on a fresh copy of CASES; ZERO: timeout=0, else the default (1 s)."""
    tag = 't0' if zero else 'tdef'
    label = '2 changes, timeout=0' if zero else '2 changes, default timeout (1 s)'
    src = os.path.join(tmp, f's2-{tag}-src')
    stage = os.path.join(tmp, f's2-{tag}-stage')   # same file system, outside SRC
    idx = os.path.join(tmp, f's2-{tag}-idx')
    mnt = os.path.join(tmp, 'mnt')
    os.makedirs(stage, exist_ok=True)
    for fmt, cs in cases.items():
        for kind, c in cs.items():
            c.h0 = c.h0d = None
            if kind not in ('new', 'inner'):
                write_file(os.path.join(src, fmt, c.name), c.oblob)
    os.makedirs(os.path.join(src, 'burst'))
    opts = f'cache_size=1M,span=64K,index_dir={idx}' + (',timeout=0' if zero else '')
    lat = []

    def body(m):
        try:
            for fmt in ('gz', 'xz'):
                print(f'# --- {label}: {fmt}', flush=True)
                changes_one_format(res, m, mnt, src, stage, fmt, cases[fmt],
                                   f'2{"" if zero else "g"} ', lat, zero)
        finally:
            for cs in cases.values():
                for c in cs.values():
                    for fd in (c.h0, c.h0d):
                        if fd is not None:
                            os.close(fd)
                    c.h0 = c.h0d = None
        if not zero:
            print(f'# --- {label}: bursts', flush=True)
            bursts(res, m, mnt, src, seed, lat)
        lines = m.log_lines()
        print(f'#   daemon log: {len(lines)} lines', flush=True)
        for ln in lines[:40]:
            print(f'#   | {ln}', flush=True)

    with_mount(res, label, zm, src, mnt, opts, os.path.join(tmp, f's2-{tag}-daemon.log'), body)
    if lat:
        print(f'# time until each change showed ({label}; deadline {POLL_DEADLINE_S:g} s):',
              flush=True)
        for what, el, ok in lat:
            print(f'#   {what:62s} {el:5.2f} s{"" if ok else "  (NOT SEEN)"}', flush=True)


def changes_one_format(res, m, mnt, src, stage, fmt, cs, pre, lat, zero):
    sdir = os.path.join(src, fmt)
    mdir = os.path.join(mnt, fmt)
    P = lambda c: os.path.join(mdir, c.vis)          # noqa: E731
    S = lambda c: os.path.join(sdir, c.name)         # noqa: E731
    before = [cs[k] for k in ('replace', 'truncate', 'append', 'delete', 'rename')]

    def shows(tag, what, cond):
        """Polls until the change is visible; records the latency."""
        ok, el = poll(cond)
        lat.append((f'{fmt} ({tag[len(pre)]}) {what}', el, ok))
        res.check(f'{tag}: {what} within {POLL_DEADLINE_S:g} s', ok,
                  f'not seen after {el:.1f} s; listing {listdir(mdir)}', info=f'{el:.2f} s')
        return ok

    def size_is(path, n):
        return os.stat(path).st_size == n

    def after_change(c, tag, new, strict=False):
        """What every change that leaves a new version must show."""
        early(res, tag, P(c), c.old, new, zero)
        shows(tag, 'st_size shows the new size', lambda: size_is(P(c), len(new)))
        fd = check_new_handle(res, tag, P(c), new, c.old)
        check_old_handles(res, tag, c, new, strict=strict)
        reread(res, tag, fd, new, c.old)
        fresh(res, tag, P(c), new, c.old)
        if fd is not None:
            os.close(fd)

    # the starting state, read whole; then handles opened and half read
    names = listdir(mdir)
    res.check(f'{pre}{fmt}: starting listing', names == {c.vis for c in before}, f'{names}')
    for c in before:
        got, err = read_path(P(c))
        res.check(f'{pre}{fmt}/{c.vis}: reads back before any change',
                  err is None and got == c.old, describe(got, err, c.old))
    if fmt == 'xz':
        inf = info(P(cs['replace']))
        res.check(f'{pre}xz/replace.log is a multi-Block xz', int(inf.get('blocks', '0')) > 1,
                  f'info: {inf}', info=f'blocks={inf.get("blocks")}')
    for c in before:
        c.h0 = os.open(P(c), os.O_RDONLY)
        c.h0d = open_direct(P(c))
        # only the first half stays in the kernel's page cache
        os.posix_fadvise(c.h0, 0, 0, os.POSIX_FADV_DONTNEED)
        half = len(c.old) // 2
        got = os.pread(c.h0, half, 0)
        res.check(f'{pre}{fmt}/{c.vis}: handle opened before the change reads its first half',
                  got == c.old[:half], describe(got, None, c.old[:half]))
        if c.h0d is not None:
            got = os.pread(c.h0d, 256 * KiB, 0)
            res.check(f'{pre}{fmt}/{c.vis}: O_DIRECT handle opened before the change reads',
                      got == c.old[:256 * KiB], describe(got, None, c.old[:256 * KiB]))
    if any(c.h0d is None for c in before):
        res.note(f'{pre}{fmt}: O_DIRECT opens fail on this mount; old handles checked buffered only')

    # (a) replaced by rename of a new archive over it
    c = cs['replace']
    tag = f'{pre}a {fmt} replaced by rename ({len(c.old)} -> {len(c.new)} bytes)'
    write_file(os.path.join(stage, c.name), c.nblob)
    os.rename(os.path.join(stage, c.name), S(c))
    after_change(c, tag, c.new, strict=True)

    # (b) truncated in place and rewritten shorter
    c = cs['truncate']
    tag = f'{pre}b {fmt} truncated in place ({len(c.old)} -> {len(c.new)} bytes)'
    wfd = os.open(S(c), os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(c.nblob)
        while view:
            view = view[os.write(wfd, view):]
    finally:
        os.close(wfd)
    after_change(c, tag, c.new)

    # (c) appended to in place: one more gzip member / xz Stream
    c = cs['append']
    whole = c.old + c.new
    tag = f'{pre}c {fmt} appended in place ({len(c.old)} -> {len(whole)} bytes)'
    with open(S(c), 'ab') as f:
        f.write(c.nblob)
    after_change(c, tag, whole)

    # (d) deleted
    c = cs['delete']
    tag = f'{pre}d {fmt} deleted'
    os.unlink(S(c))
    shows(tag, 'the name leaves the listing', lambda: c.vis not in listdir(mdir))
    shows(tag, 'stat gives ENOENT', lambda: stat_errno(P(c)) == errno.ENOENT)
    check_old_handles(res, tag, c, strict=True)

    # (e) renamed
    c = cs['rename']
    tag = f'{pre}e {fmt} renamed {c.name} -> moved.log.{fmt}'
    os.rename(S(c), os.path.join(sdir, f'moved.log.{fmt}'))
    shows(tag, f'listing shows moved.log, not {c.vis}',
          lambda: (lambda n: 'moved.log' in n and c.vis not in n)(listdir(mdir)))
    shows(tag, f'stat of {c.vis} gives ENOENT', lambda: stat_errno(P(c)) == errno.ENOENT)
    moved = os.path.join(mdir, 'moved.log')
    try:
        st = os.stat(moved)
        res.check(f'{tag}: st_size of moved.log', st.st_size == len(c.old),
                  f'{st.st_size} != {len(c.old)}')
    except OSError as e:
        res.fail(f'{tag}: stat moved.log', errname(e))
    got, err = read_path(moved)
    res.check(f'{tag}: moved.log reads back exactly', err is None and got == c.old,
              describe(got, err, c.old))
    check_old_handles(res, tag, c, strict=True)

    # (f) a new archive, and a new directory with an archive in it
    c, ci = cs['new'], cs['inner']
    tag = f'{pre}f {fmt} new archive and new directory'
    write_file(S(c), c.oblob)
    shows(tag, f'listing shows {c.vis}', lambda: c.vis in listdir(mdir))
    os.mkdir(os.path.join(sdir, 'newdir'))
    write_file(os.path.join(sdir, 'newdir', ci.name), ci.oblob)
    inner_dir = os.path.join(mdir, 'newdir')
    shows(tag, f'listing shows newdir, and newdir lists exactly {ci.vis}',
          lambda: 'newdir' in listdir(mdir) and listdir(inner_dir) == {ci.vis})
    for cc, p in ((c, P(c)), (ci, os.path.join(inner_dir, ci.vis))):
        try:
            st = os.stat(p)
            res.check(f'{tag}: st_size of {os.path.relpath(p, mnt)}', st.st_size == len(cc.old),
                      f'{st.st_size} != {len(cc.old)}')
        except OSError as e:
            res.fail(f'{tag}: stat {os.path.relpath(p, mnt)}', errname(e))
        got, err = read_path(p)
        res.check(f'{tag}: {os.path.relpath(p, mnt)} reads back exactly',
                  err is None and got == cc.old, describe(got, err, cc.old))

    want = {'replace.log', 'truncate.log', 'append.log', 'moved.log', 'new.log', 'newdir'}
    names = listdir(mdir)
    res.check(f'{pre}{fmt}: final os.listdir is exactly {sorted(want)}', names == want, f'{names}')
    p = subprocess.run(['ls', '-1A', mdir], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=30)
    got = set(p.stdout.decode(errors='replace').split('\n')) - {''}
    res.check(f'{pre}{fmt}: final `ls -1A` is exactly the same', p.returncode == 0 and got == want,
              f'rc={p.returncode} {sorted(got)} {p.stderr.decode(errors="replace")}')
    res.check(f'{pre}{fmt}: mount still alive', mount_alive(mnt) and m.alive(),
              'ENOTCONN or daemon gone')


def bursts(res, m, mnt, src, seed, lat):
    """40 creates then 40 deletes, the directory listed right after each one,
    so the daemon lists it again within a few ms of every change."""
    bdir, mb = os.path.join(src, 'burst'), os.path.join(mnt, 'burst')
    tiny = {i: content(seed + 9000 + i, 1000 + 37 * i) for i in range(40)}
    blobs = {i: gz(d) if i % 2 else xz_tiny(d) for i, d in tiny.items()}
    name = lambda i: f'b{i:02d}.log.{"gz" if i % 2 else "xz"}'   # noqa: E731
    listdir(mb)
    t0 = time.monotonic()
    for i in range(40):
        write_file(os.path.join(bdir, name(i)), blobs[i])
        listdir(mb)
    took = time.monotonic() - t0
    want = {f'b{i:02d}.log' for i in range(40)}
    ok, el = poll(lambda: listdir(mb) == want)
    lat.append(('burst of 40 creates', el, ok))
    res.check(f'2g burst: 40 archives created, each listed right away: all listed within '
              f'{POLL_DEADLINE_S:g} s', ok,
              f'after {el:.1f} s missing {sorted(want - listdir(mb))[:10]} '
              f'(the creates took {took:.2f} s)', info=f'{el:.2f} s')
    bad = []
    for i in random.Random(seed).sample(range(40), 10):
        got, err = read_path(os.path.join(mb, f'b{i:02d}.log'))
        if err is not None or got != tiny[i]:
            bad.append(f'b{i:02d}.log: {describe(got, err, tiny[i])}')
    res.check('2g burst: 10 of them read back exactly', not bad, '; '.join(bad))
    for i in range(40):
        os.unlink(os.path.join(bdir, name(i)))
        listdir(mb)
    ok, el = poll(lambda: listdir(mb) == set())
    lat.append(('burst of 40 deletes', el, ok))
    res.check(f'2g burst: 40 archives deleted, each listed right away: listing empty within '
              f'{POLL_DEADLINE_S:g} s', ok,
              f'after {el:.1f} s still listed {sorted(listdir(mb))[:10]}', info=f'{el:.2f} s')
    res.check('2g: mount still alive', mount_alive(mnt) and m.alive(), 'ENOTCONN or daemon gone')


# --------------------------------------------------------------------------
# 3. a large tree
# --------------------------------------------------------------------------
def tiny_data(d, f):
    i = d * 100 + f
    if i % 97 == 0:
        return b''
    line = f'd{d:02d}/f{f:02d} line of archive {i}\n'.encode()
    return line * (i % 41 + 1) + hashlib.sha256(line).digest() * (i % 7)


def section_large_tree(res, zm, tmp, seed):
    src = os.path.join(tmp, 's3-src')
    idx = os.path.join(tmp, 's3-idx')
    mnt = os.path.join(tmp, 'mnt')
    t0 = time.monotonic()
    files = {}
    for d in range(100):
        dd = os.path.join(src, f'd{d:02d}')
        os.makedirs(dd)
        for f in range(100):
            data = tiny_data(d, f)
            if (d + f) % 2:
                blob, ext = xz_tiny(data), 'xz'
            else:
                blob, ext = gz(data), 'gz'
            with open(os.path.join(dd, f'f{f:02d}.txt.{ext}'), 'wb') as fh:
                fh.write(blob)
            files[f'd{d:02d}/f{f:02d}.txt'] = data
    gen = time.monotonic() - t0
    res.ok(f'3: generated 10,000 archives (100 dirs x 100, 5,000 .gz + 5,000 .xz)',
           info=f'{gen:.1f} s')

    m = zmtest.Mount(zm, src, mnt, opts=f'index_dir={idx}',
                     log_path=os.path.join(tmp, 's3-daemon.log'), results=res,
                     watchdog=WATCHDOG_S, label='3 large tree')
    t0 = time.monotonic()
    try:
        m.__enter__()
    except zmtest.MountError as e:
        res.fail('3: mount comes up', str(e))
        return
    ready = time.monotonic() - t0
    print(f'# TIMING 3: daemon start -> mount point ready (ismount): {ready:.2f} s', flush=True)
    res.check(f'3: the mount point is ready within {READY_LIMIT_S:g} s of starting the daemon',
              ready <= READY_LIMIT_S, f'{ready:.2f} s', info=f'{ready:.2f} s')
    exc = None
    try:
        t0 = time.monotonic()
        seen = {}
        errs = []
        for dirpath, dirnames, filenames in os.walk(mnt, onerror=errs.append):
            rel = os.path.relpath(dirpath, mnt)
            seen[rel] = set(dirnames) | set(filenames)
        walk = time.monotonic() - t0
        print(f'# TIMING 3: full recursive listing (os.walk, 101 dirs, 10,000 files): '
              f'{walk:.2f} s', flush=True)
        want = {'.': {f'd{d:02d}' for d in range(100)}}
        for d in range(100):
            want[f'd{d:02d}'] = {f'f{f:02d}.txt' for f in range(100)}
        wrong = [r for r in sorted(set(want) | set(seen)) if want.get(r) != seen.get(r)]
        detail = '; '.join(f'{r}: missing {sorted((want.get(r) or set()) - (seen.get(r) or set()))[:5]} '
                           f'extra {sorted((seen.get(r) or set()) - (want.get(r) or set()))[:5]}'
                           for r in wrong[:5])
        res.check('3: os.walk lists exactly the expected 100 dirs and 10,000 names',
                  not wrong and not errs, f'{len(wrong)} dirs wrong: {detail}; errors: {errs[:3]}',
                  info=f'{walk:.2f} s')
        t0 = time.monotonic()
        sample = random.Random(seed).sample(sorted(files), 200)
        bad = []
        for rel in sample:
            p = os.path.join(mnt, rel)
            try:
                sz = os.stat(p).st_size
            except OSError as e:
                bad.append(f'{rel}: stat {errname(e)}')
                continue
            got, err = read_path(p)
            if err is not None or got != files[rel] or sz != len(files[rel]):
                bad.append(f'{rel}: st_size {sz}, {describe(got, err, files[rel])}')
        rd = time.monotonic() - t0
        print(f'# TIMING 3: stat + read of 200 random files: {rd:.2f} s', flush=True)
        res.check('3: 200 random files: st_size and bytes exact', not bad,
                  f'{len(bad)} wrong: ' + ' | '.join(bad[:5]), info=f'{rd:.2f} s')
        t0 = time.monotonic()
        seen2 = sum(len(fs) for _, _, fs in os.walk(mnt))
        print(f'# TIMING 3: second os.walk (warm): {time.monotonic() - t0:.2f} s', flush=True)
        res.check('3: a second walk lists 10,000 files too', seen2 == 10000, f'{seen2}')
        try:
            s = zmtest.stats(mnt)
            print(f'#   stats: indexes_built={s.get("indexes_built")} '
                  f'xz_indexes={s.get("xz_indexes")} indexes_loaded={s.get("indexes_loaded")}',
                  flush=True)
        except OSError as e:
            res.note(f'3: stats xattr: {errname(e)}')
        res.check('3: mount still alive', mount_alive(mnt) and m.alive(), 'ENOTCONN or daemon gone')
    except Exception as e:  # noqa: BLE001
        res.fail('3: unexpected exception', f'{type(e).__name__}: {e}\n' + traceback.format_exc())
    except BaseException as e:
        exc = e
    if exc is not None:
        m.__exit__(type(exc), exc, exc.__traceback__)
        raise exc
    t0 = time.monotonic()
    m.__exit__(None, None, None)
    print(f'# TIMING 3: unmount + daemon exit: {time.monotonic() - t0:.2f} s', flush=True)
    errs = [ln for ln in m.log_lines() if re.search(r':\s*error:', ln)]
    res.check('3: no error lines in the daemon log', not errs, '\n'.join(errs[:5]))


# --------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True, help='path to the zmount binary')
    ap.add_argument('--seed', type=int, default=20240607)
    ap.add_argument('--keep', action='store_true', help='keep the temp dir')
    ap.add_argument('--only', default='1,2,3,4,5', help='sections to run, e.g. 2 or 1,3')
    a = ap.parse_args()
    only = set(a.only.split(','))

    zmtest.require_fuse()
    res = zmtest.Results()
    zm = os.path.abspath(a.zmount)
    if not zmtest.binary_ok(res, zm):
        return res.finish()
    if shutil.which('xz') is None:
        res.fail('xz(1) is installed (it makes the multi-Block .xz files)', 'not on PATH')
        return res.finish()

    tmp = tempfile.mkdtemp(prefix='zmount-changes-')
    print(f'# temp dir {tmp}, seed {a.seed}', flush=True)
    t_start = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=2)
    cases = {}

    def changes(zero):
        if not cases:
            t0 = time.monotonic()
            cases.update(build_cases(a.seed, pool))
            print(f'# generated {sum(len(cs) for cs in cases.values())} archives for (a)-(f) '
                  f'in {time.monotonic() - t0:.1f} s', flush=True)
        section_changes(res, zm, tmp, a.seed, cases, zero)

    sections = [
        ('1', 'saved indexes', lambda: section_saved_indexes(res, zm, tmp, a.seed)),
        ('2', 'source changes (a)-(f), timeout=0', lambda: changes(True)),
        ('2', 'source changes (a)-(g), default timeout', lambda: changes(False)),
        ('3', 'large tree', lambda: section_large_tree(res, zm, tmp, a.seed)),
        ('4', 'tail -F and inode numbers', lambda: section_tail(res, zm, tmp)),
        ('5', 'old handles when only ctime moves', lambda: section_ctime(res, zm, tmp, a.seed)),
    ]
    try:
        for key, name, fn in sections:
            if key not in only:
                continue
            t0 = time.monotonic()
            print(f'# === {key}: {name}', flush=True)
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                res.fail(f'{name}: unexpected exception',
                         f'{type(e).__name__}: {e}\n' + traceback.format_exc())
            print(f'# === {key}: {name}: {time.monotonic() - t0:.1f} s', flush=True)
            if zmtest.is_mounted(os.path.join(tmp, 'mnt')):
                res.fail(f'{name}: nothing left mounted', 'still mounted; lazy-unmounting')
                zmtest.fusermount(os.path.join(tmp, 'mnt'), lazy=True)
        print(f'# total time {time.monotonic() - t_start:.1f} s', flush=True)
    finally:
        pool.shutdown()
        if a.keep or zmtest.is_mounted(os.path.join(tmp, 'mnt')):
            print(f'# kept {tmp}', flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
