#!/usr/bin/env python3
"""test_hardening.py -- zmount mount tests: no hang, no crash, no bad mount point.

usage: test_hardening.py --zmount PATH [--keep] [--only 1,2,...]

Each section is a defect of issue 10 or 13 that this test saw happen on
05008aa; each check fails if it comes back.
  1. Deadlock (issue 10 item 2): six 48 MiB .gz files being indexed in the
     background plus four multi-Block .xz files, -o threads=1; `head -c
     3000000` on the .xz files in turn, every run with a deadline, until the
     background indexing is over.  A run that hangs is a failure (the daemon
     is then killed).  Every run's bytes must be right.
  2. Mount points (issue 10 items 3 and 4, issue 13 section 3): zmount must
     refuse, with one line on stderr and exit status 1 and without mounting,
     a MNT inside SRC, a MNT reached through a bind mount of SRC (same
     directory by device and inode, other path), a MNT that contains SRC and
     a MNT that is not a directory.  MNT == SRC must mount and serve SRC's
     decompressed files (the daemon opens SRC before it mounts over it).
  3. Double mount (issue 13 section 3): with SRC mounted on MNT, a second
     `zmount SRC MNT` must fail with one line and exit 1, and leave one
     zmount mount at MNT; so must a second `zmount SRC SRC`.
  4. A deep tree (issue 10 item 6 and the last point of item 13): 2,040
     nested directories with a .gz at the bottom (the deepest a 4 KiB
     relative path reaches; 05008aa died of SIGSEGV right after mounting).  The daemon must stay up,
     the file must read right through the mount and be indexed in the
     background, and unmount must end the daemon, exit 0, within 5 s.
  5. The indexer's summary (issue 13 section 2): 3 good .gz, 1 truncated
     .gz and 1 .gz that is not gzip: the log must say "3 built, 0 loaded,
     1 corrupt, 1 not gzip", and never "indexed all".
  6. Log noise (issue 18 item 13c), each counted in log lines: an index_dir
     that is a regular file is said once, not once per archive (5 .gz); a
     .gz whose header cannot be read is said "not readable as gzip" once,
     though its directory's listing is dropped (a directory of NOISE_FILES
     names is listed after it, over the 4 MiB listing budget) and rebuilt
     three times; a second mount with the same index_dir says its 3 indexes
     were "0 built, 3 loaded", the first "3 built, 0 loaded".
  7. Long paths (issue 18 item 13b), pinned as documented: a chain of
     directories with 200-byte names.  Walked through the mount one name at
     a time (openat on the parent's fd, as find does), every entry whose
     path from the mount root is at most 4,095 bytes (PATH_MAX - 1) is
     reached, a plain file and an archive among them; the first directory
     past that gives ENAMETOOLONG ("File name too long"), while find on
     SRC reaches the bottom; the daemon stays up.
  Within 2 and 3, read-ahead (bdi.c): the backing device of our own mount
  (st_dev of MNT) must have read_ahead_kb 1024, also when MNT == SRC (as
  root only).  The choice of the mountinfo line is tested in check_bdi.

Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import errno
import gzip
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
RUN_DEADLINE_S = 20     # one `head` run; a hang is anything longer
WATCHDOG_S = 240        # per mount

WORDS = ('accepted connection from request served in ms user session closed opened '
         'block index cache miss hit evicted checkpoint span offset length read write '
         'timeout retry backend upstream status queue worker thread').split()


class Hung(Exception):
    """A request through the mount did not finish by its deadline."""


def text(seed, size):
    """SIZE bytes of log-like lines, a function of SEED."""
    rnd = random.Random(seed)
    out, n = [], 0
    while n < size:
        s = (' '.join(rnd.choice(WORDS) for _ in range(rnd.randrange(4, 14)))
             + f' id={rnd.getrandbits(32):08x}\n')
        out.append(s)
        n += len(s)
    return ''.join(out).encode()[:size]


def run_tool(argv, data=None):
    p = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError(f'{" ".join(argv)}: {p.stderr.decode(errors="replace")}')
    return p.stdout


def write(path, blob):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(blob)


def remove_tree(path):
    # rm(1): shutil.rmtree recurses in Python and gives up on a 2,000-level chain.
    subprocess.run(['rm', '-rf', '--one-file-system', path], stderr=subprocess.DEVNULL)


def fresh_dir(path):
    remove_tree(path)
    os.makedirs(path)
    return path


def zmount_run(zm, argv, timeout=20):
    """Runs zmount in the foreground to be refused: (rc, stderr lines); rc None on a timeout."""
    try:
        p = subprocess.run([zm] + argv + ['-f'], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ['(still running after the deadline: it mounted, and was killed)']
    lines = [ln for ln in (p.stdout + p.stderr).decode(errors='replace').splitlines() if ln]
    return p.returncode, lines


def mounts_at(path):
    """Mountinfo lines (fstype, source) of every mount at PATH."""
    want = os.path.realpath(path)
    return [(e.fstype, e.source) for e in zmtest.mountinfo() if e.mnt == want]


def zmount_mounts_at(path):
    return [m for m in mounts_at(path) if m[0] == 'fuse.zmount']


def zmount_mounts_under(top):
    """Mount points of fuse.zmount mounts at or below directory TOP, deepest first."""
    out = [e.mnt for e in zmtest.mountinfo()
           if e.fstype == 'fuse.zmount' and (e.mnt == top or e.mnt.startswith(top + '/'))]
    return sorted(out, key=len, reverse=True)


# --------------------------------------------------------------------------
# 1. deadlock: arctab_close waited for read-ahead while holding the table lock
# --------------------------------------------------------------------------
def section_deadlock(res, zm, tmp):
    src = fresh_dir(os.path.join(tmp, 'src1'))
    mnt = os.path.join(tmp, 'mnt')
    t0 = time.monotonic()
    base = text(11, 8 * MiB)
    plain = os.path.join(tmp, 'g.txt')
    with open(plain, 'wb') as f:
        for _ in range(6):
            f.write(base)
    blob = run_tool(['gzip', '-1', '-c', plain])
    os.unlink(plain)
    for i in range(6):
        write(os.path.join(src, f'g{i}.gz'), blob)
    want = {}
    for i in range(4):
        data = text(100 + i, 8 * MiB)
        write(os.path.join(src, f'x{i}.xz'),
              run_tool(['xz', '-T1', '-1', '--block-size=256KiB', '-c'], data))
        want[f'x{i}'] = data[:3000000]
    print(f'# generated 6 x 48 MiB .gz and 4 x 8 MiB .xz in {time.monotonic() - t0:.1f} s',
          flush=True)

    runs = bad = 0
    hung = head = None
    m = zmtest.Mount(zm, src, mnt, opts='threads=1,index_dir=none',
                     log_path=os.path.join(tmp, 'deadlock.log'), results=res,
                     watchdog=WATCHDOG_S, label='deadlock mount')
    try:
        with m:
            deadline = time.monotonic() + 180
            # Until the background indexing is over (and at least 24 runs).
            while time.monotonic() < deadline:
                log = m.log_text()
                done = 'indexed all' in log or 'background indexing' in log
                if done and runs >= 24:
                    break
                name = f'x{runs % 4}'
                # Not subprocess.run(timeout=): a process blocked on a FUSE request
                # the daemon already took cannot die until the daemon answers or dies.
                out = os.path.join(tmp, 'head.out')
                with open(out, 'wb') as f:
                    head = subprocess.Popen(['head', '-c', '3000000', os.path.join(mnt, name)],
                                            stdin=subprocess.DEVNULL, stdout=f,
                                            stderr=subprocess.DEVNULL)
                try:
                    rc = head.wait(timeout=RUN_DEADLINE_S)
                except subprocess.TimeoutExpired:
                    hung = name
                    raise Hung(name) from None
                head = None
                runs += 1
                with open(out, 'rb') as f:
                    if rc != 0 or f.read() != want[name]:
                        bad += 1
            res.check('deadlock: the daemon is alive after the runs', m.alive(), m.log_tail())
    except Hung:
        pass  # leaving the with block killed the daemon, which frees head
    if head is not None:
        head.kill()
        head.wait()
    res.check(f'deadlock: no `head -c 3000000` on an .xz hangs during background indexing '
              f'with threads=1 ({runs} runs)', hung is None,
              f'the run on {hung} did not finish within {RUN_DEADLINE_S} s after {runs} runs; '
              f'daemon killed; log tail:\n{m.log_tail()}')
    if hung is None:
        res.check('deadlock: every run read the right 3000000 bytes', bad == 0,
                  f'{bad} of {runs} runs wrong')
        res.check('deadlock: the background indexing ran to its end during the runs',
                  'indexed all' in m.log_text() or 'background indexing' in m.log_text(),
                  'no summary line in the log (runs ended before the indexing did)')


# --------------------------------------------------------------------------
# 2. mount points: inside SRC, containing SRC, not a directory, SRC itself
# --------------------------------------------------------------------------
def refused(res, zm, name, argv, words):
    """zmount ARGV (SRC MNT) must print one line containing WORDS, exit 1, and mount nothing."""
    mnt = argv[1]
    # Counted from mountinfo: a stat of a mount whose daemon died fails (ENOTCONN).
    before = len(zmount_mounts_at(mnt))
    rc, lines = zmount_run(zm, argv, timeout=10)
    after = len(zmount_mounts_at(mnt))
    if rc is None or after > before:
        # It mounted (the daemon was killed by the timeout): take the dead mount away.
        for _ in range(max(after - before, 1)):
            zmtest.fusermount(mnt, lazy=True)
    ok = rc == 1 and len(lines) == 1 and all(w in lines[0] for w in words) and after == before
    return res.check(f'{name}: refused with one line and exit 1', ok,
                     f'rc={rc}, {len(lines)} lines: {lines[:5]}; '
                     f'zmount mounts at {mnt}: {before} before, {after} after')


def bdi_read_ahead_kb(path):
    """read_ahead_kb of the backing device of the file system at PATH, or None."""
    st = os.stat(path)
    try:
        with open(f'/sys/class/bdi/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/read_ahead_kb') as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def check_bdi(res, label, mnt):
    if os.geteuid() != 0:
        res.note(f'{label}: not root, so read_ahead_kb stays at its default; not checked')
        return
    kb = bdi_read_ahead_kb(mnt)
    res.check(f'{label}: read_ahead_kb of our own mount is 1024', kb == 1024, f'it is {kb}')


def section_mountpoints(res, zm, tmp):
    src = fresh_dir(os.path.join(tmp, 'src2'))
    data = text(2, 300 * KiB)
    write(os.path.join(src, 'a.gz'), gzip.compress(data, mtime=0))
    os.makedirs(os.path.join(src, 'view'))
    regular = os.path.join(tmp, 'regular')
    write(regular, b'not a directory\n')
    link = os.path.join(tmp, 'link-to-view')
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.join(src, 'view'), link)

    refused(res, zm, 'MNT inside SRC (SRC/view)', [src, os.path.join(src, 'view')],
            ['inside'])
    refused(res, zm, 'MNT inside SRC through a symlink', [src, link], ['inside'])
    refused(res, zm, 'MNT not a directory', [src, regular], ['not a directory'])
    outer = fresh_dir(os.path.join(tmp, 'outer'))
    inner = os.path.join(outer, 'logs')
    os.makedirs(inner)
    write(os.path.join(inner, 'b.gz'), gzip.compress(b'b\n', mtime=0))
    refused(res, zm, 'MNT containing SRC', [inner, outer], ['contains'])
    # Another path to the same directory: realpath cannot see it, device and inode can.
    if os.geteuid() == 0:
        bind = fresh_dir(os.path.join(tmp, 'bind'))
        p = subprocess.run(['mount', '--bind', src, bind], stderr=subprocess.PIPE)
        if p.returncode != 0:
            res.fail('bind mount of SRC for the next check', p.stderr.decode(errors='replace'))
        else:
            try:
                refused(res, zm, 'MNT inside SRC through a bind mount of SRC',
                        [src, os.path.join(bind, 'view')], ['inside'])
                refused(res, zm, 'MNT inside SRC given as a bind mount',
                        [bind, os.path.join(src, 'view')], ['inside'])
            finally:
                subprocess.run(['umount', '-l', bind])
    else:
        res.note('not root: the bind-mount cases were not run')

    # MNT == SRC works: the daemon reads SRC through the descriptor it opened before mounting.
    m = zmtest.Mount(zm, src, src, log_path=os.path.join(tmp, 'over-src.log'), results=res,
                     watchdog=60, label='MNT == SRC')
    with m:
        try:
            with open(os.path.join(src, 'a'), 'rb') as f:
                got = f.read()
        except OSError as e:
            got = e
        res.check('MNT == SRC: a.gz reads decompressed through the mount over SRC', got == data,
                  f'got {got!r:.80}')
        names = sorted(os.listdir(src))
        res.check('MNT == SRC: the listing is the view of SRC', names == ['a', 'view'],
                  f'listing {names}')
        check_bdi(res, 'MNT == SRC', src)
    names = sorted(os.listdir(src))
    res.check('MNT == SRC: SRC itself is unchanged after unmount', names == ['a.gz', 'view'],
              f'listing {names}')


# --------------------------------------------------------------------------
# 3. the same SRC twice on the same MNT
# --------------------------------------------------------------------------
def section_double(res, zm, tmp):
    src = fresh_dir(os.path.join(tmp, 'src3'))
    mnt = os.path.join(tmp, 'mnt')
    write(os.path.join(src, 'c.gz'), gzip.compress(b'c\n', mtime=0))
    m = zmtest.Mount(zm, src, mnt, log_path=os.path.join(tmp, 'double.log'), results=res,
                     watchdog=60, label='double mount: first')
    with m:
        refused(res, zm, 'the same SRC on the same MNT again', [src, mnt],
                ['already mounted'])
        refused(res, zm, 'the same SRC on the same MNT again, spelled otherwise',
                [src + '/', os.path.join(tmp, '.', 'mnt') + '/'], ['already mounted'])
        n = len(zmount_mounts_at(mnt))
        res.check('double mount: one zmount mount at MNT', n == 1, f'{n} mounts')
        try:
            with open(os.path.join(mnt, 'c'), 'rb') as f:
                got = f.read()
        except OSError as e:
            got = e
        res.check('double mount: the first mount still serves', got == b'c\n', f'got {got!r}')
        check_bdi(res, 'double mount', mnt)
    m = zmtest.Mount(zm, src, src, log_path=os.path.join(tmp, 'double2.log'), results=res,
                     watchdog=60, label='double mount over SRC: first')
    with m:
        refused(res, zm, 'the same SRC on itself again', [src, src], ['already mounted'])
        n = len(zmount_mounts_at(src))
        res.check('double mount over SRC: one zmount mount at SRC', n == 1, f'{n} mounts')


# --------------------------------------------------------------------------
# 4. a deep tree: the indexer's walk recursed with 4 KiB of stack per level
# --------------------------------------------------------------------------
DEPTH = 2040   # 'd/' x 2040 + 'x.gz' = 4084 bytes: still a valid relative path


def make_chain(top, depth, leaf, blob):
    """TOP/d/d/.../d/LEAF (DEPTH dirs), made with dir fds: the path is too long for one call."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir('d', dir_fd=fd)
            nfd = os.open('d', os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
        with os.fdopen(wfd, 'wb') as f:
            f.write(blob)
    finally:
        os.close(fd)


def read_chain(top, depth, leaf):
    """Reads TOP/d/.../d/LEAF one component at a time; returns bytes or the OSError."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            nfd = os.open('d', os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        rfd = os.open(leaf, os.O_RDONLY, dir_fd=fd)
        with os.fdopen(rfd, 'rb') as f:
            return f.read()
    except OSError as e:
        return e
    finally:
        os.close(fd)


def section_deep(res, zm, tmp):
    src = fresh_dir(os.path.join(tmp, 'src4'))
    mnt = os.path.join(tmp, 'mnt')
    data = text(4, 200 * KiB)
    make_chain(src, DEPTH, 'x.gz', gzip.compress(data, mtime=0))
    print(f'# made a chain of {DEPTH} directories with x.gz at the bottom', flush=True)
    m = zmtest.Mount(zm, src, mnt, opts='index_dir=none', log_path=os.path.join(tmp, 'deep.log'),
                     results=res, watchdog=120, exit_timeout=5, label='deep tree')
    with m:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and m.alive() and 'background indexing' not in m.log_text():
            time.sleep(0.1)
        res.check(f'deep tree: the daemon is alive after walking {DEPTH} levels', m.alive(),
                  f'exit status {m.proc.poll()}; log tail:\n{m.log_tail()}')
        if m.alive():
            res.check('deep tree: the background indexer reached the bottom and indexed x.gz',
                      '1 built, 0 loaded, 0 corrupt, 0 not gzip' in m.log_text(), m.log_tail())
            got = read_chain(mnt, DEPTH, 'x')
            res.check('deep tree: x.gz at the bottom reads right through the mount', got == data,
                      f'got {got!r:.100}')
            res.check('deep tree: the daemon is still alive', m.alive(), m.log_tail())
        t_unmount = time.monotonic()
    res.note(f'deep tree: unmount to daemon exit took {time.monotonic() - t_unmount:.2f} s')


# --------------------------------------------------------------------------
# 5. the indexer's summary says what the files were
# --------------------------------------------------------------------------
def section_summary(res, zm, tmp):
    src = fresh_dir(os.path.join(tmp, 'src5'))
    mnt = os.path.join(tmp, 'mnt')
    for i in range(3):
        write(os.path.join(src, f'good{i}.gz'), gzip.compress(text(50 + i, 100 * KiB), mtime=0))
    whole = gzip.compress(text(60, 400 * KiB), mtime=0)
    write(os.path.join(src, 'sub', 'truncated.gz'), whole[:len(whole) // 2])
    write(os.path.join(src, 'fake.gz'), b'this is not gzip at all\n' * 100)
    m = zmtest.Mount(zm, src, mnt, opts='index_dir=none', log_path=os.path.join(tmp, 'summary.log'),
                     results=res, watchdog=60, label='summary')
    with m:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and 'background indexing' not in m.log_text() and \
                'indexed all' not in m.log_text():
            time.sleep(0.1)
        lines = [ln for ln in m.log_lines() if 'background indexing' in ln or 'indexed all' in ln]
    res.check('summary: one summary line', len(lines) == 1, f'{lines}\n{m.log_tail()}')
    res.check('summary: it says "3 built, 0 loaded, 1 corrupt, 1 not gzip"',
              len(lines) == 1 and '3 built, 0 loaded, 1 corrupt, 1 not gzip' in lines[0]
              and 'indexed all' not in lines[0], f'{lines}')


# --------------------------------------------------------------------------
# 6. log noise: each thing said once
# --------------------------------------------------------------------------
NOISE_FILES = 70000  # names of 30 bytes: a listing of about 6.5 MiB, over the 4 MiB budget
BAD_GZ = b'\x1f\x8b\x08\xe0' + bytes(6) + b'reserved header flags set' * 40


def summary_of(m, deadline=30):
    """Waits for the indexer's summary line and returns it ('' if none came)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end and m.alive():
        lines = [ln for ln in m.log_lines() if 'background indexing done' in ln]
        if lines:
            return lines[0]
        time.sleep(0.1)
    return ''


def section_noise(res, zm, tmp):
    src = fresh_dir(os.path.join(tmp, 'src6'))
    mnt = os.path.join(tmp, 'mnt')
    for i in range(5):
        write(os.path.join(src, 'gz', f'f{i}.gz'), gzip.compress(text(70 + i, 50 * KiB), mtime=0))
    notdir = os.path.join(tmp, 'index-is-a-file')
    write(notdir, b'not a directory\n')
    m = zmtest.Mount(zm, src, mnt, opts=f'index_dir={notdir}',
                     log_path=os.path.join(tmp, 'noise1.log'), results=res, watchdog=60,
                     label='noise index_dir')
    with m:
        summary_of(m)
        lines = [ln for ln in m.log_lines() if notdir in ln or 'saved index' in ln]
    res.check('noise: an index_dir that is a regular file is said in one log line, not one per '
              'archive', len(lines) == 1, f'{len(lines)} lines: {lines[:3]}')

    src = fresh_dir(os.path.join(tmp, 'src6b'))
    write(os.path.join(src, 'sub', 'bad.gz'), BAD_GZ)
    os.makedirs(os.path.join(src, 'big'))
    for i in range(NOISE_FILES):
        os.close(os.open(os.path.join(src, 'big', f'entry-{i:06d}-of-a-big-dir.log'),
                         os.O_WRONLY | os.O_CREAT, 0o644))
    m = zmtest.Mount(zm, src, mnt, opts='index_dir=none', log_path=os.path.join(tmp, 'noise2.log'),
                     results=res, watchdog=120, label='noise probe')
    with m:
        seen = []
        for _ in range(3):
            seen.append('bad.gz' in os.listdir(os.path.join(mnt, 'sub')))
            n = len(os.listdir(os.path.join(mnt, 'big')))
        st = zmtest.stats(mnt)
        lines = [ln for ln in m.log_lines() if 'not readable as gzip' in ln]
    res.check(f'noise: bad.gz is listed raw, and the big directory lists {NOISE_FILES} names',
              all(seen) and n == NOISE_FILES, f'{seen} {n}')
    res.check('noise: the big listing is over the budget (the small one is dropped each time)',
              st.get('listing_bytes', 0) > st.get('listing_budget', 1), repr(st))
    res.check('noise: "not readable as gzip" is said once for one version of bad.gz, though its '
              'listing was rebuilt three times', len(lines) == 1, f'{len(lines)} lines: {lines}')

    idx = os.path.join(tmp, 'idx6')
    src = os.path.join(tmp, 'src6c')
    for i in range(3):
        write(os.path.join(src, f'g{i}.gz'), gzip.compress(text(80 + i, 50 * KiB), mtime=0))
    got = []
    for k in range(2):
        m = zmtest.Mount(zm, src, mnt, opts=f'index_dir={idx}',
                         log_path=os.path.join(tmp, f'noise3-{k}.log'), results=res, watchdog=60,
                         label=f'noise summary {k + 1}')
        with m:
            got.append(summary_of(m))
    res.check('noise: the first mount says its 3 indexes were built, the second that they were '
              'loaded', '3 built, 0 loaded,' in got[0] and '0 built, 3 loaded,' in got[1],
              f'{got}')


# --------------------------------------------------------------------------
# 7. long paths: ENAMETOOLONG past 4,095 bytes from the mount root
# --------------------------------------------------------------------------
LONG_NAME = 200
LONG_DEPTH = 24  # 24 x 201 bytes: the chain's end is 4,824 bytes from the root


def section_long_paths(res, zm, tmp):
    src = fresh_dir(os.path.join(tmp, 'src7'))
    mnt = os.path.join(tmp, 'mnt')
    names = [f'{k:02d}' + 'd' * (LONG_NAME - 2) for k in range(LONG_DEPTH)]
    fits = (4095 - len('/x.log')) // (LONG_NAME + 1)  # deepest level whose files fit
    data = text(90, 20 * KiB)
    fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY)
    try:  # below PATH_MAX only relative to a directory fd
        for k, n in enumerate(names):
            os.mkdir(n, dir_fd=fd)
            nfd = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            if k + 1 in (fits, LONG_DEPTH):
                for name, blob in (('plain.txt', data), ('x.log.gz', gzip.compress(data, mtime=0))):
                    wfd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                    os.write(wfd, blob)
                    os.close(wfd)
    finally:
        os.close(fd)
    p = subprocess.run(['find', src], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deepest = max(len(ln) - len(src) for ln in p.stdout.split(b'\n'))
    m = zmtest.Mount(zm, src, mnt, opts='index_dir=none', log_path=os.path.join(tmp, 'long.log'),
                     results=res, watchdog=120, label='long paths')
    with m:
        fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
        reached, err, read_ok = 0, None, []
        try:
            for k, n in enumerate(names):
                try:
                    nfd = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                except OSError as e:
                    err = e.errno
                    break
                os.close(fd)
                fd = nfd
                reached = k + 1
                if reached == fits:
                    for name in ('plain.txt', 'x.log'):
                        rfd = os.open(name, os.O_RDONLY, dir_fd=fd)
                        read_ok.append(os.read(rfd, len(data) + 1) == data)
                        os.close(rfd)
        finally:
            os.close(fd)
        alive = m.alive()
    res.check(f'long paths: find on SRC reaches the bottom ({deepest} bytes)',
              p.returncode == 0 and deepest > 4095, f'rc {p.returncode}, {deepest} bytes')
    res.check(f'long paths: through the mount, levels 1 to {fits} (paths up to '
              f'{fits * (LONG_NAME + 1) + len("/x.log")} bytes) are reached and their plain file '
              f'and archive read right', reached >= fits and read_ok == [True, True],
              f'reached {reached}, reads {read_ok}')
    res.check(f'long paths: level {fits + 1} and below ({(fits + 1) * (LONG_NAME + 1)} bytes '
              f'from the root) give ENAMETOOLONG', reached == fits and err == errno.ENAMETOOLONG,
              f'reached {reached}, errno {err and zmtest.errno_name(err)}')
    res.check('long paths: the daemon is still up', alive, m.log_tail())


# --------------------------------------------------------------------------
sections_list = [
    ('1', 'deadlock under background indexing, threads=1', section_deadlock),
    ('2', 'mount points', section_mountpoints),
    ('3', 'the same SRC on the same MNT twice', section_double),
    ('4', f'a chain of {DEPTH} directories', section_deep),
    ('5', "the background indexer's summary", section_summary),
    ('6', 'log noise', section_noise),
    ('7', 'paths over 4,095 bytes', section_long_paths),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True, help='path to the zmount binary')
    ap.add_argument('--keep', action='store_true', help='keep the temp dir')
    ap.add_argument('--only', default=','.join(k for k, _, _ in sections_list),
                    help='sections to run, e.g. 2 or 1,3')
    a = ap.parse_args()
    only = set(a.only.split(','))

    zmtest.require_fuse()
    res = zmtest.Results()
    zm = os.path.abspath(a.zmount)
    if not zmtest.binary_ok(res, zm):
        return res.finish()
    for tool in ('xz', 'gzip', 'head'):
        if shutil.which(tool) is None:
            res.fail(f'{tool}(1) is installed', 'not on PATH')
            return res.finish()

    tmp = tempfile.mkdtemp(prefix='zmount-hardening-')
    print(f'# temp dir {tmp}', flush=True)
    try:
        for key, name, fn in sections_list:
            if key not in only:
                continue
            t0 = time.monotonic()
            print(f'# === {key}: {name}', flush=True)
            try:
                fn(res, zm, tmp)
            except Exception as e:  # noqa: BLE001
                res.fail(f'{name}: unexpected exception',
                         f'{type(e).__name__}: {e}\n' + traceback.format_exc())
            print(f'# === {key}: {name}: {time.monotonic() - t0:.1f} s', flush=True)
            left = zmount_mounts_under(tmp)
            if left:
                res.fail(f'{name}: nothing left mounted', f'still mounted: {left}; lazy-unmounting')
                for mp in left:
                    zmtest.fusermount(mp, lazy=True)
    finally:
        if a.keep or zmount_mounts_under(tmp):
            print(f'# kept {tmp}', flush=True)
        else:
            remove_tree(tmp)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
