#!/usr/bin/env python3
"""test_faults.py -- fault and stress tests of the zmount FUSE daemon.

usage: test_faults.py --zmount PATH [--corpus DIR] [--seed N] [--reads N]
                      [--bomb-size SIZE] [--only REGEX] [--keep]

Every item below runs on its own mount (its own daemon, its own private
index_dir or index_dir=none), so one failure cannot cascade, and prints ONE
`PASS: item ...` / `FAIL: item ...` line with what it measured (the details
are the `#` lines above it):

  concurrency     16 threads, 100,000+ preads at random offsets and lengths
                  over xz multi-Block, xz single-Block, gzip and bgzip files
                  (cache_size=16M, so the cache evicts); every byte checked.
  source-change   an archive truncated / renamed over / rewritten in place /
                  deleted while threads read it: each read is EIO, the old
                  bytes or the new bytes, never a mix, never wrong bytes.
  sigterm         SIGTERM to the daemon during reads by 16 threads, more than the
                  request loop's 10 workers: it unmounts and exits 0.
  unmount-busy    fusermount3 -u with files open fails (EBUSY); after they
                  close it succeeds and the daemon exits 0.
  unmount-lazy    fusermount3 -uz with reads in flight: they finish or fail
                  cleanly, and the daemon exits 0 once they close.
  conn-abort      the connection aborted through /sys/fs/fuse/connections
                  during reads: readers return, the daemon exits 0.
  tiny-cache      cache_size=1M with 4 MiB xz Blocks, a 10 MiB single Block
                  and span=4M gzip: everything still reads back exactly.
  fd-limit        RLIMIT_NOFILE=64 over 1,000 archives, 200 files held open
                  at once: errors are EMFILE/ENFILE/EIO only, no crash, and
                  everything reads once they are closed.
  bombs           1 GiB of zeros as one xz Block and as gzip, plus two
                  hand-made xz files whose Index lies about the size: reads
                  stream within cache_size + 64 MiB of VmHWM, liars refused.
  index-overflow  xz-utils bad-3-index-uncomp-overflow.xz and
                  bad-1-index-huge-uncomp.xz: shown raw or EIO, no crash.
  names           spaces, newline, tab, UTF-8 and non-UTF-8 names.
  symlinks        links out of SRC (absolute, relative) stay links; x.gz ->
                  outside gzip is not shown as x; a directory swapped for a
                  symlink under a cached path is not followed by the daemon.
  bigdir          10,000 entries: listing complete, no duplicates, stats ok.
  logging         log lines naming each damaged or changed file, per cause,
                  across the items above: at most 3, and none about the
                  healthy bombs.

About 80-110 s on a busy 2-core machine (the 1 GiB bombs are made in a
background thread meanwhile); at most ~150 MB in a temp dir.

File content is self-verifying: every 16-byte record is `%015x\\n` of
(file base + its own offset), so any range of any version of any file can be
checked from the formula alone.

Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import errno
import gzip
import hashlib
import itertools
import lzma
import os
import random
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from zmtest import drop_cache, errname, mount_alive, open_direct, sha, sha_path, vm_hwm_kib  # noqa: E402

KiB = 1024

def tuning_hint(line):
    """The one warning per archive whose units are wider than cache_size/2
    (README "Choosing cache_size"): advice about a healthy file, not an error."""
    return 'more than cache_size/2' in line

MiB = 1024 * KiB
GiB = 1024 * MiB
REC = 16
WINDOW = 3 * MiB // 2
MOVE_EVERY = 1500
OK_ERRNOS_EMFILE = {errno.EMFILE, errno.ENFILE, errno.EIO}


# --------------------------------------------------------------------------
# self-verifying content
# --------------------------------------------------------------------------
def records(base, size):
    """SIZE bytes; the 16-byte record at offset o is b'%015x\\n' % (base + o)."""
    n = (size + REC - 1) // REC
    return b''.join([b'%015x\n' % (base + o * REC) for o in range(n)])[:size]


def base_of(fileno, version=0):
    return (fileno << 52) | (version << 48)


def classify(got, off, versions):
    """Which version a read returned: a label, or 'MIX'/'WRONG'/'SHORT-<label>'.

    versions: list of (label, bytes); a read of n bytes at off that returns
    exactly ref[off:off+n] for some ref is that ref's label."""
    for label, ref in versions:
        if got == ref[off:off + len(got)]:
            return label
    # record by record: a MIX has every aligned record from some version
    labels = set()
    pos = off
    while pos < off + len(got):
        r0 = pos - pos % REC
        end = min(r0 + REC, off + len(got))
        piece = got[pos - off:end - off]
        hit = [label for label, ref in versions if ref[pos:end] == piece]
        if not hit:
            return 'WRONG'
        labels.add(hit[0] if len(hit) == 1 else '*')
        pos = end
    labels.discard('*')
    return 'MIX' if len(labels) > 1 else 'WRONG'


def read_result(got, off, n, versions):
    """Label of a completed read of N bytes at OFF: a version label when it is
    exactly that version's bytes (incl. its EOF), else a failure label."""
    for label, ref in versions:
        if got == ref[off:off + n]:
            return label
    for label, ref in versions:
        want = ref[off:off + n]
        if len(got) < len(want) and got == want[:len(got)]:
            # the right bytes but cut short: which size did the cut follow?
            for l2, r2 in versions:
                if l2 != label and off + len(got) == len(r2):
                    return f'{label}-BYTES-{l2}-SIZE'
            return f'SHORT-{label}'
    return classify(got, off, versions)


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------
def nfds(pid):
    try:
        return len(os.listdir(f'/proc/{pid}/fd'))
    except OSError:
        return None


def zstats(mnt):
    """The daemon's user.zmount.stats as a dict of ints ({} when unavailable)."""
    try:
        return zmtest.stats(mnt)
    except OSError:
        return {}


def run(argv, **kw):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, **kw)


def compress_files(jobs):
    """jobs: list of (argv, input_path, output_path), run two at a time."""
    pending = list(jobs)
    running = []
    while pending or running:
        while pending and len(running) < 2:
            argv, inp, outp = pending.pop(0)
            fi, fo = open(inp, 'rb'), open(outp, 'wb')
            running.append((subprocess.Popen(argv, stdin=fi, stdout=fo, stderr=subprocess.PIPE),
                            fi, fo, argv))
        p, fi, fo, argv = running.pop(0)
        err = p.communicate()[1]
        fi.close()
        fo.close()
        if p.returncode != 0:
            raise RuntimeError(f'{" ".join(argv)}: {err.decode(errors="replace")}')


def xz_bytes(data, *args):
    p = subprocess.run(['xz', '-q', '-c', *args], input=data, stdout=subprocess.PIPE, check=True)
    return p.stdout


def gz_bytes(data, level=6):
    return gzip.compress(data, compresslevel=level, mtime=0)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data)


# --------------------------------------------------------------------------
# items: plumbing
# --------------------------------------------------------------------------
class Item:
    """Collects the checks of one item; quacks like zmtest.Results for Mount."""

    def __init__(self, key):
        self.key = key
        self.fails = []
        self.infos = []

    def check(self, name, ok, detail='', info=''):
        if ok:
            print(f'#   ok: {name}' + (f' ({info})' if info else ''), flush=True)
        else:
            print(f'#   BAD: {name} -- {detail}', flush=True)
            self.fails.append(f'{name}: {detail}'.split('\n')[0])
        return bool(ok)

    def info(self, msg):
        print(f'#   {msg}', flush=True)
        self.infos.append(msg)

    @staticmethod
    def note(msg):
        print(f'#   {msg}', flush=True)


class Ctx:
    def __init__(self, a, tmp):
        self.zmount = os.path.abspath(a.zmount)
        self.corpus = a.corpus
        self.seed = a.seed
        self.reads = a.reads
        self.bomb_size = a.bomb_size
        self.tmp = tmp
        self._base = None
        self.log_causes = []   # (item, cause, number of lines)
        self.bomb_thread = None
        self.bombs = {}

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def mount(self, it, src, tag, opts, watchdog=150, **kw):
        return zmtest.Mount(self.zmount, src, self.path(f'mnt-{tag}'), opts=opts,
                            log_path=self.path(f'daemon-{tag}.log'), results=it,
                            watchdog=watchdog, label=tag, **kw)

    # the shared source tree: read-only for every item that uses it
    def base(self):
        if self._base is not None:
            return self._base
        t0 = time.monotonic()
        src = self.path('base-src')
        raw = self.path('base-raw')
        os.makedirs(src)
        os.makedirs(raw)
        specs = [  # (visible name, file no, size, source name, compressor argv)
            ('multi', 1, 16 * MiB, 'multi.xz', ['xz', '-q', '-c', '-T1', '-2', '--block-size=1MiB']),
            ('single', 2, 4 * MiB, 'single.xz', ['xz', '-q', '-c', '-T1', '-2']),
            ('plain', 3, 16 * MiB, 'plain.gz', ['gzip', '-6', '-n', '-c']),
            ('blk4', 5, 16 * MiB, 'blk4.xz', ['xz', '-q', '-c', '-T1', '-2', '--block-size=4MiB']),
            ('single10', 6, 10 * MiB, 'single10.xz', ['xz', '-q', '-c', '-T1', '-2']),
            ('span', 7, 16 * MiB, 'span.gz', ['gzip', '-6', '-n', '-c']),
        ]
        if shutil.which('bgzip'):
            specs.append(('bgzf', 4, 16 * MiB, 'bgzf.gz', ['bgzip', '-c']))
        else:
            Item.note('bgzip not found: the concurrency item runs without a BGZF file')
        refs, jobs, srcnames = {}, [], {}
        for vis, no, size, sname, argv in specs:
            data = records(base_of(no), size)
            refs[vis] = data
            srcnames[vis] = sname
            rp = os.path.join(raw, vis)
            write(rp, data)
            jobs.append((argv, rp, os.path.join(src, sname)))
        compress_files(jobs)
        shutil.rmtree(raw)
        self._base = dict(src=src, refs=refs, srcnames=srcnames)
        Item.note(f'shared source tree: {len(specs)} archives, '
                  f'{sum(map(len, refs.values())) // MiB} MiB uncompressed, '
                  f'built in {time.monotonic() - t0:.1f} s')
        return self._base

    def record_log(self, item, m, names):
        """Count the daemon log lines naming each of NAMES (a list of
        (cause, [names...])); keeps them for the logging item."""
        lines = [ln for ln in m.log_lines() if not tuning_hint(ln)]
        out = {}
        for cause, nms in names:
            hits = zmtest.lines_naming(lines, nms)
            out[cause] = len(hits)
            self.log_causes.append((item, cause, len(hits), hits[:2]))
        return out


def log_tail_lines(m, n=3):
    return ' | '.join(m.log_lines()[-n:]) or '(log empty)'


def join_all(threads, timeout):
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()]


# --------------------------------------------------------------------------
# 1. concurrency
# --------------------------------------------------------------------------
def rand_len(rnd):
    r = rnd.random()
    if r < 0.50:
        return rnd.randint(1, 512)
    if r < 0.90:
        return rnd.randint(513, 16 * KiB)
    return rnd.randint(16 * KiB + 1, 128 * KiB)


def item_concurrency(ctx, it):
    b = ctx.base()
    names = [n for n in ('multi', 'single', 'plain', 'bgzf') if n in b['refs']]
    weights = {'multi': 0.32, 'single': 0.10, 'plain': 0.29, 'bgzf': 0.29}
    opts = f'cache_size=16M,index_dir={ctx.path("idx-conc")}'
    nthreads = 16
    per = (ctx.reads + nthreads - 1) // nthreads
    budget_s = 150
    counter = itertools.count()
    deadline = time.monotonic() + 60 + budget_s   # + the time to mount and stat
    with ctx.mount(it, b['src'], 'concurrency', opts, watchdog=240) as m:
        mnt = m.mnt
        for n in names:
            st = os.stat(os.path.join(mnt, n))
            it.check(f'st_size of {n}', st.st_size == len(b['refs'][n]),
                     f'{st.st_size} != {len(b["refs"][n])}')
        s0 = zstats(mnt)
        out = [None] * nthreads
        barrier = threading.Barrier(nthreads)

        def worker(i):
            rnd = random.Random(ctx.seed * 7919 + i)
            direct = i % 2 == 0
            fds, res = {}, dict(reads=0, bytes=0, wrong=[], errors=[], direct=direct)
            try:
                for n in names:
                    p = os.path.join(mnt, n)
                    fds[n] = (open_direct(p) if direct else None) or os.open(p, os.O_RDONLY)
                barrier.wait(timeout=60)
                # each file has one hot WINDOW that all threads read in and that
                # jumps elsewhere every MOVE_EVERY preads (counted over all threads):
                # the cache keeps evicting the old windows, yet most reads hit, and
                # misses see several threads wanting the same chunk at once
                w = [weights[n] for n in names]
                for k in range(per):
                    if time.monotonic() > deadline:
                        res['errors'].append(f'gave up after {k} preads: {budget_s} s budget used')
                        break
                    n = rnd.choices(names, w)[0]
                    ref = b['refs'][n]
                    size = len(ref)
                    ln = rand_len(rnd)
                    epoch = next(counter) // MOVE_EVERY
                    wstart = random.Random(f'{ctx.seed}/{n}/{epoch}').randrange(max(1, size - WINDOW))
                    r = rnd.random()
                    if r < 0.02:    # across EOF
                        off = max(0, size - rnd.randint(0, ln))
                    elif r < 0.03:  # past EOF
                        off = size + rnd.randint(0, 4096)
                    else:
                        off = wstart + rnd.randrange(WINDOW)
                    if not direct and k % 48 == 0:
                        drop_cache(fds[n])
                    try:
                        got = os.pread(fds[n], ln, off)
                    except OSError as e:
                        res['errors'].append(f'{n} pread({off},{ln}) -> {errname(e)}')
                        if e.errno == errno.ENOTCONN or len(res['errors']) > 20:
                            break
                        continue
                    res['reads'] += 1
                    res['bytes'] += len(got)
                    if got != ref[off:off + ln]:
                        res['wrong'].append(f'{n} pread({off},{ln}) -> {len(got)} bytes, '
                                            f'{read_result(got, off, ln, [("right", ref)])}')
            except Exception as e:  # noqa: BLE001 -- report, never hang the barrier
                res['errors'].append(f'{type(e).__name__}: {e}')
                barrier.abort()
            finally:
                for fd in fds.values():
                    os.close(fd)
            out[i] = res

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(nthreads)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        hung = join_all(threads, budget_s + 90)
        dt = time.monotonic() - t0
        s1 = zstats(mnt)
        done = [r for r in out if r]
        reads = sum(r['reads'] for r in done)
        nbytes = sum(r['bytes'] for r in done)
        wrong = [w for r in done for w in r['wrong']]
        errs = [e for r in done for e in r['errors']]
        it.check(f'{nthreads} readers finished', not hung and len(done) == nthreads,
                 f'{len(hung)} threads still blocked after {budget_s + 90} s')
        it.check(f'{reads} preads ({nthreads} threads, half O_DIRECT), every byte right',
                 not wrong and not errs and reads >= ctx.reads,
                 f'{len(wrong)} wrong, {len(errs)} errors of {reads}; first: '
                 + ' | '.join((wrong + errs)[:3]),
                 info=f'{nbytes / MiB:.0f} MiB in {dt:.1f} s, {reads / dt:.0f} preads/s')
        it.info(f'{reads} preads, {nbytes / MiB:.0f} MiB, {len(wrong)} wrong, {len(errs)} errors, '
                f'{dt:.1f} s')
        ev = s1.get('cache_evictions', 0) - s0.get('cache_evictions', 0)
        if s1:
            it.check('the cache evicted (cache_size=16M)', ev > 0,
                     f'cache_evictions went {s0.get("cache_evictions")} -> {s1.get("cache_evictions")}',
                     info=f'{ev} evictions, {s1.get("cache_misses", 0) - s0.get("cache_misses", 0)} '
                          f'misses, {s1.get("cache_hits", 0) - s0.get("cache_hits", 0)} hits, '
                          f'{(s1.get("decoded_bytes", 0) - s0.get("decoded_bytes", 0)) // MiB} MiB decoded')
            it.info(f'cache: {ev} evictions, '
                    f'{(s1.get("decoded_bytes", 0) - s0.get("decoded_bytes", 0)) // MiB} MiB decoded, '
                    f'used {s1.get("cache_used", 0) // KiB} KiB of {s1.get("cache_budget", 0) // KiB} KiB')
        else:
            it.note('user.zmount.stats not readable; eviction not measured')
        hwm = vm_hwm_kib(m.proc.pid)
        if hwm:
            it.info(f'daemon VmHWM {hwm // 1024} MiB')
        bad = [ln for ln in m.log_lines()
               if (': error:' in ln or ': warning:' in ln) and not tuning_hint(ln)]
        it.check('no error or warning lines in the daemon log', not bad, ' | '.join(bad[:3]))
        it.check('daemon alive after the run', m.alive() and mount_alive(mnt), 'daemon gone')


# --------------------------------------------------------------------------
# 2. source archive truncated / replaced / rewritten / deleted under readers
# --------------------------------------------------------------------------
def item_source_change(ctx, it):
    # version A: 8 MiB; version B: 6 MiB and other record bases
    va = {'x': records(base_of(8, 0), 8 * MiB), 'y': records(base_of(9, 0), 8 * MiB)}
    vb = {'x': records(base_of(8, 1), 6 * MiB), 'y': records(base_of(9, 1), 6 * MiB)}
    xz_args = ('-T1', '-2', '--block-size=512KiB')
    arch_a = {'x': xz_bytes(va['x'], *xz_args), 'y': gz_bytes(va['y'])}
    arch_b = {'x': xz_bytes(vb['x'], *xz_args), 'y': gz_bytes(vb['y'])}
    srcname = {'x': 'x.xz', 'y': 'y.gz'}
    for mode in ('truncate', 'rename', 'rewrite', 'delete'):
        src = ctx.path(f'chg-{mode}', 'src')
        spare = ctx.path(f'chg-{mode}', 'spare')
        os.makedirs(spare)
        for k in ('x', 'y'):
            write(os.path.join(src, srcname[k]), arch_a[k])
        opts = f'cache_size=2M,timeout=0.3,index_dir={ctx.path(f"idx-chg-{mode}")}'
        t_mode = time.monotonic()
        with ctx.mount(it, src, f'change-{mode}', opts, watchdog=90) as m:
            mnt = m.mnt
            stop = threading.Event()
            changed = threading.Event()   # set just BEFORE the change starts
            out = []
            lock = threading.Lock()

            def worker(i, k):
                rnd = random.Random(ctx.seed * 31 + i)
                versions = [('old', va[k])] + ([('new', vb[k])] if mode in ('rename', 'rewrite') else [])
                direct = i % 3 != 1
                reopen_every = 25 if i % 3 == 2 else 0
                r = dict(k=k, direct=direct, reads=0, labels={}, bad=[], errs={}, open_errs={},
                         after={})
                fd = None
                path = os.path.join(mnt, k)
                try:
                    nread = 0
                    while not stop.is_set():
                        if fd is None or (reopen_every and nread % reopen_every == 0):
                            if fd is not None:
                                os.close(fd)
                                fd = None
                            try:
                                fd = (open_direct(path) if direct else None) or os.open(path, os.O_RDONLY)
                            except OSError as e:
                                r['open_errs'][errname(e)] = r['open_errs'].get(errname(e), 0) + 1
                                time.sleep(0.02)
                                continue
                        nread += 1
                        off = rnd.randrange(8 * MiB)
                        ln = rnd.choice([1, 100, 4096, 65536, 200 * KiB, rnd.randrange(1, 300 * KiB)])
                        if not direct and nread % 16 == 0:
                            drop_cache(fd)
                        try:
                            got = os.pread(fd, ln, off)
                        except OSError as e:
                            # not set yet when the read has failed: it failed before the change
                            after = changed.is_set()
                            key = errname(e) + (' (after)' if after else ' (before)')
                            r['errs'][key] = r['errs'].get(key, 0) + 1
                            if e.errno != errno.EIO or not after:
                                r['bad'].append(f'pread({off},{ln}) -> {errname(e)} '
                                                f'{"after" if after else "BEFORE"} the change')
                            if e.errno == errno.ENOTCONN:
                                break
                            continue
                        after = changed.is_set()
                        r['reads'] += 1
                        lab = read_result(got, off, ln, versions)
                        if lab.startswith('SHORT-'):
                            # a short read is only fair when the next byte is an error
                            # (the kernel returns what it got before a failing request)
                            try:
                                nxt = os.pread(fd, 1, off + len(got))
                                lab += f' then {len(nxt)} byte(s)'
                            except OSError as e:
                                lab = f'{lab[6:]}, cut short by {errname(e)}'
                        r['labels'][lab] = r['labels'].get(lab, 0) + 1
                        if after:
                            r['after'][lab] = r['after'].get(lab, 0) + 1
                        if lab not in ('old', 'new') and not lab.endswith('cut short by EIO'):
                            r['bad'].append(f'{"O_DIRECT" if direct else "buffered"} '
                                            f'pread({off},{ln}) -> {len(got)} bytes: {lab}')
                except Exception as e:  # noqa: BLE001
                    r['bad'].append(f'{type(e).__name__}: {e}')
                finally:
                    if fd is not None:
                        os.close(fd)
                with lock:
                    out.append(r)

            # warm up: both files indexed and read once, so the change hits live state
            for k in ('x', 'y'):
                h, n = sha_path(os.path.join(mnt, k))
                it.check(f'{mode}: {k} reads back before the change', h == sha(va[k]),
                         f'{n} bytes, wrong sha')
            threads = [threading.Thread(target=worker, args=(i, k), daemon=True)
                       for i, k in enumerate(['x', 'y'] * 3)]
            for t in threads:
                t.start()
            time.sleep(0.8)
            changed.set()
            for k in ('x', 'y'):
                p = os.path.join(src, srcname[k])
                if mode == 'truncate':
                    os.truncate(p, len(arch_a[k]) // 2)
                elif mode == 'rename':
                    q = os.path.join(spare, srcname[k])
                    write(q, arch_b[k])
                    os.rename(q, p)
                elif mode == 'rewrite':
                    with open(p, 'r+b') as f:   # same inode, new bytes
                        f.truncate(0)
                        f.write(arch_b[k])
                elif mode == 'delete':
                    os.unlink(p)
            time.sleep(1.5)
            stop.set()
            hung = join_all(threads, 60)
            it.check(f'{mode}: readers finished', not hung, f'{len(hung)} readers blocked')
            tot, after, errs, open_errs, bad = {}, {}, {}, {}, []
            for r in out:
                for d, s in ((tot, r['labels']), (after, r['after']), (errs, r['errs']),
                             (open_errs, r['open_errs'])):
                    for kk, v in s.items():
                        d[kk] = d.get(kk, 0) + v
                bad += [f'{r["k"]}: {x}' for x in r['bad']]
            summary = (f'reads {tot}; after the change {after}; read errors {errs}; '
                       f'open errors {open_errs}')
            it.check(f'{mode}: every read is EIO, the old bytes or the new bytes', not bad,
                     f'{len(bad)} bad reads: ' + ' | '.join(bad[:4]) + f'; {summary}')
            it.info(f'{mode}: {summary}')
            # a new open after the attribute timeout sees the new state
            time.sleep(0.5)
            for k in ('x', 'y'):
                p = os.path.join(mnt, k)
                try:
                    h, n = sha_path(p)
                    state = 'new' if h == sha(vb[k]) else 'old' if h == sha(va[k]) else f'?{n}'
                except OSError as e:
                    state = errname(e)
                raw = os.path.lexists(os.path.join(mnt, srcname[k]))
                want = {'rename': ('new',), 'rewrite': ('new',), 'delete': ('ENOENT',),
                        'truncate': ('ENOENT', 'EIO')}[mode]
                it.check(f'{mode}: a new open of {k} after the timeout gives {"/".join(want)}',
                         state in want, f'got {state}' + (' (raw shown)' if raw else ''),
                         info=f'{state}' + (f', {srcname[k]} shown raw' if raw else ''))
            it.check(f'{mode}: daemon alive', m.alive() and mount_alive(mnt), 'daemon gone')
        causes = ctx.record_log('source-change', m, [(f'{mode} {srcname[k]}', [srcname[k], k])
                                                     for k in ('x', 'y')])
        it.info(f'{mode}: log lines per file {causes}; {time.monotonic() - t_mode:.1f} s')


# --------------------------------------------------------------------------
# 3. SIGTERM during reads
# --------------------------------------------------------------------------
def spin_readers(mnt, refs, names, n, seed, stop, direct=True, max_reads=None):
    """N threads reading random ranges until STOP (or an error, or max_reads).
    Returns (threads, results list)."""
    out = [None] * n

    def worker(i):
        rnd = random.Random(seed + i)
        r = dict(reads=0, wrong=[], errs={}, after_stop=0, t_last=None)
        out[i] = r   # live: the caller samples r['reads'] while the thread runs
        fds = {}
        try:
            for nm in names:
                p = os.path.join(mnt, nm)
                fds[nm] = (open_direct(p) if direct else None) or os.open(p, os.O_RDONLY)
            while not stop.is_set() and (max_reads is None or r['reads'] < max_reads):
                nm = rnd.choice(names)
                ref = refs[nm]
                off = rnd.randrange(len(ref))
                ln = rnd.choice([512, 4096, 65536, 128 * KiB])
                try:
                    got = os.pread(fds[nm], ln, off)
                except OSError as e:
                    r['errs'][errname(e)] = r['errs'].get(errname(e), 0) + 1
                    if e.errno in (errno.ENOTCONN, errno.ECONNABORTED, errno.ENODEV) or \
                            sum(r['errs'].values()) > 5:
                        break
                    continue
                r['reads'] += 1
                r['t_last'] = time.monotonic()
                if got != ref[off:off + ln]:
                    r['wrong'].append(f'{nm} pread({off},{ln}) -> {len(got)} wrong bytes')
        except OSError as e:
            r['errs']['open ' + errname(e)] = 1
        finally:
            for fd in fds.values():
                try:
                    os.close(fd)
                except OSError as e:
                    r['errs']['close ' + errname(e)] = 1

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    return threads, out


def merge(out):
    reads = sum(r['reads'] for r in out if r)
    wrong = [w for r in out if r for w in r['wrong']]
    errs = {}
    for r in out:
        for k, v in (r or {}).get('errs', {}).items():
            errs[k] = errs.get(k, 0) + v
    return reads, wrong, errs


def item_sigterm(ctx, it):
    b = ctx.base()
    m = ctx.mount(it, b['src'], 'sigterm', f'cache_size=16M,index_dir={ctx.path("idx-sigterm")}',
                  watchdog=90)
    m.__enter__()
    try:
        stop = threading.Event()
        # more readers than the request loop's 10 workers (fs/loop.h): the signal comes
        # while its receiving thread waits for one to be idle
        threads, out = spin_readers(m.mnt, b['refs'], ['multi', 'plain', 'single'], 16,
                                    ctx.seed, stop)
        time.sleep(1.5)
        reads_before = merge(out)[0] if all(out) else None
        t0 = time.monotonic()
        m.proc.send_signal(signal.SIGTERM)
        try:
            rc = m.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            rc = None
        t_exit = time.monotonic() - t0
        deadline = time.monotonic() + 10
        while zmtest.is_mounted(m.mnt) and time.monotonic() < deadline:
            time.sleep(0.05)
        gone = not zmtest.is_mounted(m.mnt)
        stop.set()
        hung = join_all(threads, 20)
        reads, wrong, errs = merge(out)
        it.check('daemon exits 0 after SIGTERM', rc == 0,
                 f'exit status {rc} after {t_exit:.1f} s; log tail: {log_tail_lines(m)}',
                 info=f'in {t_exit:.2f} s')
        it.check('the mount is gone after SIGTERM', gone, f'{m.mnt} still in mountinfo')
        it.check('readers return (no hang)', not hung, f'{len(hung)} readers still blocked')
        it.check('no wrong bytes before or after the signal', not wrong, ' | '.join(wrong[:3]))
        it.info(f'{reads} reads ({reads_before} before the signal); reader errors after it: {errs}; '
                f'exit {rc} in {t_exit:.2f} s')
    finally:
        m._emergency()  # lazy unmount + kill, only if still there; never raises


def conn_minor(mnt):
    """The FUSE connection number (the mount's minor device) of the mount at mnt, or None."""
    want = os.path.realpath(mnt)
    for e in zmtest.mountinfo():
        if e.mnt == want:
            return e.dev.split(':')[1]
    return None


def item_conn_abort(ctx, it):
    b = ctx.base()
    m = ctx.mount(it, b['src'], 'conn-abort', f'cache_size=16M,index_dir={ctx.path("idx-ca")}',
                  watchdog=90)
    m.__enter__()
    try:
        stop = threading.Event()
        threads, out = spin_readers(m.mnt, b['refs'], ['multi', 'plain'], 4, ctx.seed + 50, stop)
        time.sleep(0.8)
        minor = conn_minor(m.mnt)
        if not os.path.ismount('/sys/fs/fuse/connections'):
            # fusectl is not always mounted (containers, minimal hosts); as root we can
            subprocess.run(['mount', '-t', 'fusectl', 'none', '/sys/fs/fuse/connections'],
                           stderr=subprocess.DEVNULL)
        it.check('the mount has a connection in /sys/fs/fuse/connections',
                 minor is not None and os.path.exists(f'/sys/fs/fuse/connections/{minor}/abort'),
                 f'minor {minor}')
        if minor is not None:
            with open(f'/sys/fs/fuse/connections/{minor}/abort', 'w') as a:
                a.write('1')
        try:
            rc = m.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            rc = None
        stop.set()
        hung = join_all(threads, 20)
        reads, wrong, errs = merge(out)
        it.check('daemon exits 0 after the connection is aborted', rc == 0,
                 f'exit status {rc}; log tail: {log_tail_lines(m)}')
        it.check('readers return (no hang)', not hung, f'{len(hung)} readers still blocked')
        it.check('no wrong bytes before the abort', not wrong, ' | '.join(wrong[:3]))
        it.info(f'{reads} reads; reader errors {errs}; exit {rc}')
    finally:
        m._emergency()


# --------------------------------------------------------------------------
# 4. fusermount3 -u / -uz with reads in flight
# --------------------------------------------------------------------------
def item_unmount_busy(ctx, it):
    b = ctx.base()
    with ctx.mount(it, b['src'], 'umount-busy', f'cache_size=16M,index_dir={ctx.path("idx-ub")}',
                   watchdog=90) as m:
        stop = threading.Event()
        threads, out = spin_readers(m.mnt, b['refs'], ['multi', 'plain'], 4, ctx.seed + 100, stop)
        time.sleep(0.8)
        rc, msg = zmtest.fusermount(m.mnt)
        still = zmtest.is_mounted(m.mnt)
        it.check('fusermount3 -u with files open fails with EBUSY', rc != 0 and still and
                 ('busy' in msg.lower()), f'rc={rc}, still mounted={still}, "{msg}"',
                 info=f'rc={rc}: "{msg}"')
        r0 = merge(out)[0]
        time.sleep(0.5)
        r1 = merge(out)[0]
        stop.set()
        hung = join_all(threads, 30)
        reads, wrong, errs = merge(out)
        it.check('reads keep working after the refused unmount', r1 > r0 and not wrong and not errs
                 and not hung, f'reads {r0} -> {r1}, wrong {wrong[:2]}, errors {errs}, hung {len(hung)}')
        it.info(f'{reads} reads, errors {errs}')
    # leaving the block: fusermount3 -u must succeed now and the daemon exit 0


def item_unmount_lazy(ctx, it):
    b = ctx.base()
    m = ctx.mount(it, b['src'], 'umount-lazy', f'cache_size=16M,index_dir={ctx.path("idx-ul")}',
                  watchdog=90)
    m.__enter__()
    try:
        stop = threading.Event()
        threads, out = spin_readers(m.mnt, b['refs'], ['multi', 'plain', 'bgzf' if 'bgzf' in b['refs']
                                                       else 'single'], 8, ctx.seed + 200, stop)
        time.sleep(0.8)
        r0 = merge(out)[0]
        rc, msg = zmtest.fusermount(m.mnt, lazy=True)
        gone = not zmtest.is_mounted(m.mnt)
        it.check('fusermount3 -uz with reads in flight succeeds at once', rc == 0 and gone,
                 f'rc={rc} "{msg}", still mounted={not gone}')
        try:
            os.stat(os.path.join(m.mnt, 'multi'))
            it.check('the path no longer reaches the mount', False, 'multi still visible at MNT')
        except OSError as e:
            it.check('the path no longer reaches the mount', e.errno == errno.ENOENT, errname(e))
        time.sleep(1.0)
        still_alive = m.alive()
        r1 = merge(out)[0]
        stop.set()
        hung = join_all(threads, 30)
        t_close = time.monotonic()
        reads, wrong, errs = merge(out)
        it.check('open files keep reading after the lazy unmount (or fail cleanly)',
                 not wrong and not hung and (r1 > r0 or errs),
                 f'reads {r0} -> {r1}, wrong {wrong[:2]}, errors {errs}, {len(hung)} hung')
        it.check('daemon stays up while the detached files are open', still_alive,
                 f'exited with {m.proc.poll()} before the files were closed')
        try:
            rc2 = m.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            rc2 = None
        it.check('daemon exits 0 once the last file is closed', rc2 == 0,
                 f'exit status {rc2}; log tail: {log_tail_lines(m)}',
                 info=f'{time.monotonic() - t_close:.2f} s after the last close')
        it.info(f'{r0} reads before -uz, {reads - r0} after; reader errors {errs}; exit {rc2}')
    finally:
        m._emergency()


# --------------------------------------------------------------------------
# 5. cache smaller than one chunk
# --------------------------------------------------------------------------
def item_tiny_cache(ctx, it):
    b = ctx.base()
    names = ['blk4', 'single10', 'span']
    with ctx.mount(it, b['src'], 'tiny-cache', 'cache_size=1M,span=4M,index_dir=none',
                   watchdog=200) as m:
        mnt = m.mnt
        rnd = random.Random(ctx.seed + 5)
        for nm in names:
            ref = b['refs'][nm]
            p = os.path.join(mnt, nm)
            t0 = time.monotonic()
            st = os.stat(p)
            h, n = sha_path(p, chunk=128 * KiB)
            it.check(f'{nm}: st_size and a full sequential read',
                     st.st_size == len(ref) and h == sha(ref),
                     f'st_size {st.st_size}, read {n} bytes, sha ok={h == sha(ref)}',
                     info=f'{len(ref) // MiB} MiB in {time.monotonic() - t0:.1f} s')
            fd = open_direct(p) or os.open(p, os.O_RDONLY)
            bad, t0, k = [], time.monotonic(), 0
            try:
                for k in range(60):
                    off = rnd.randrange(len(ref))
                    ln = rnd.choice([1, 4096, 100000, 3 * MiB])
                    try:
                        got = os.pread(fd, ln, off)
                        if got != ref[off:off + ln]:
                            bad.append(f'pread({off},{ln}) wrong ({len(got)} bytes)')
                    except OSError as e:
                        bad.append(f'pread({off},{ln}) {errname(e)}')
            finally:
                os.close(fd)
            it.check(f'{nm}: 60 random O_DIRECT preads (up to 3 MiB) exact', not bad,
                     ' | '.join(bad[:3]), info=f'{time.monotonic() - t0:.1f} s')
        time.sleep(0.2)
        s = zstats(mnt)
        if s:
            it.check('cache_used back within cache_budget when idle',
                     s.get('cache_used', 0) <= s.get('cache_budget', 0),
                     f'used {s.get("cache_used")} > budget {s.get("cache_budget")}',
                     info=f'used {s.get("cache_used", 0) // KiB} KiB of {s.get("cache_budget", 0) // KiB} KiB')
        hwm = vm_hwm_kib(m.proc.pid)
        it.info(f'daemon VmHWM {hwm // 1024 if hwm else "?"} MiB with cache_size=1M')


# --------------------------------------------------------------------------
# 6. low fd limit
# --------------------------------------------------------------------------
def item_fd_limit(ctx, it):
    src = ctx.path('fd-src')
    t0 = time.monotonic()
    refs = {}
    for i in range(1000):
        d = f'd{i % 4}'
        data = records(base_of(10, 0) + i * 0x10000000, 2048 + (i % 7) * 100)
        if i % 2:
            sname, vis = f'{d}/a{i:04d}.gz', f'{d}/a{i:04d}'
            blob = gz_bytes(data, 1)
        else:
            sname, vis = f'{d}/a{i:04d}.xz', f'{d}/a{i:04d}'
            blob = lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32,
                                 filters=[{'id': lzma.FILTER_LZMA2, 'preset': 0, 'dict_size': 64 * KiB}])
        write(os.path.join(src, sname), blob)
        refs[vis] = data
    for i in range(40):
        data = records(base_of(11, 0) + i * 0x10000000, 3000)
        write(os.path.join(src, 'plain', f'p{i:02d}.txt'), data)
        refs[f'plain/p{i:02d}.txt'] = data
    it.note(f'built 1000 archives + 40 plain files in {time.monotonic() - t0:.1f} s')
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 512 and hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    with ctx.mount(it, src, 'fd-limit', 'cache_size=8M,index_dir=none', nofile=(64, 64),
                   watchdog=150) as m:
        mnt = m.mnt
        pid = m.proc.pid
        listed = sum(len(os.listdir(os.path.join(mnt, d))) for d in ('d0', 'd1', 'd2', 'd3', 'plain'))
        it.check('all 1,040 entries listed under RLIMIT_NOFILE=64', listed == 1040, f'{listed} listed')
        rnd = random.Random(ctx.seed + 6)
        pick = rnd.sample(sorted(k for k in refs if not k.startswith('plain')), 180) + \
            [f'plain/p{i:02d}.txt' for i in range(20)]
        held, open_errs, read_errs, wrong = {}, {}, {}, []
        for vis in pick:
            try:
                held[vis] = os.open(os.path.join(mnt, vis), os.O_RDONLY)
            except OSError as e:
                open_errs[errname(e)] = open_errs.get(errname(e), 0) + 1
        peak_fds = nfds(pid)
        for vis, fd in held.items():
            try:
                got = os.pread(fd, 1 << 20, 0)
                if got != refs[vis]:
                    wrong.append(vis)
            except OSError as e:
                read_errs[errname(e)] = read_errs.get(errname(e), 0) + 1
        alive = m.alive() and mount_alive(mnt)
        for fd in held.values():
            os.close(fd)
        nerr = sum(open_errs.values()) + sum(read_errs.values())
        odd = {k: v for d in (open_errs, read_errs) for k, v in d.items()
               if k not in {zmtest.errno_name(x) for x in OK_ERRNOS_EMFILE}}
        it.check(f'{len(pick)} files held open at once: errors only EMFILE/ENFILE/EIO, no wrong bytes',
                 not odd and not wrong, f'unexpected errors {odd}, {len(wrong)} wrong: {wrong[:3]}',
                 info=f'{len(held)} opened, open errors {open_errs}, read errors {read_errs}, '
                      f'daemon fds {peak_fds}')
        # the point of this item: 200 files held open under 64 descriptors
        # must really run the daemon out of them, or it tested nothing
        it.check('the daemon ran out of descriptors (EMFILE/ENFILE seen), so the limit was tested',
                 any(k in ('EMFILE', 'ENFILE') for d in (open_errs, read_errs) for k in d),
                 f'no EMFILE with {len(held)} files open; daemon fds at the peak {peak_fds}')
        it.check('daemon alive after running out of fds', alive, f'log: {log_tail_lines(m)}')
        time.sleep(0.3)
        bad = []
        for vis in sorted(refs):
            try:
                with open(os.path.join(mnt, vis), 'rb') as f:
                    if f.read() != refs[vis]:
                        bad.append(f'{vis}: wrong')
            except OSError as e:
                bad.append(f'{vis}: {errname(e)}')
        it.check('after closing them, all 1,040 files read back one by one', not bad,
                 f'{len(bad)} failed: {bad[:3]}', info=f'daemon holds {nfds(pid)} fds')
        lines = m.log_lines()
        emfile = [ln for ln in lines if 'Too many open files' in ln or 'EMFILE' in ln]
        it.info(f'{len(emfile)} log lines mention EMFILE for {nerr} failed requests; '
                f'{len(lines)} log lines in all')
        if emfile:
            it.note('first: ' + emfile[0][:200])
    per_file = {}
    for ln in emfile:
        mm = re.search(r'(d\d/a\d{4})', ln)
        if mm:
            per_file[mm.group(1)] = per_file.get(mm.group(1), 0) + 1
    worst = max(per_file.values()) if per_file else 0
    ctx.log_causes.append(('fd-limit', 'EMFILE, most lines naming one file', worst,
                           emfile[:2]))


# --------------------------------------------------------------------------
# 7. bombs and lying Indexes
# --------------------------------------------------------------------------
def crc32(b):
    return zlib.crc32(b) & 0xffffffff


def read_vli(b, pos):
    n, shift = 0, 0
    while True:
        c = b[pos]
        pos += 1
        n |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return n, pos


def xz_index_records(blob):
    """[(unpadded size, uncompressed size)] from the Index of single-Stream xz BLOB."""
    footer = blob[-12:]
    bsize = (struct.unpack('<I', footer[4:8])[0] + 1) * 4
    idx = blob[len(blob) - 12 - bsize:len(blob) - 12]
    n, pos = read_vli(idx, 1)
    recs = []
    for _ in range(n):
        unp, pos = read_vli(idx, pos)
        usz, pos = read_vli(idx, pos)
        recs.append((unp, usz))
    return recs


def xz_set_index(blob, usizes):
    """A copy of single-Stream xz BLOB whose Index claims USIZES (one per
    Block) as uncompressed sizes; Index CRC32, padding and footer redone."""
    footer = blob[-12:]
    assert footer[-2:] == b'YZ'
    bsize = (struct.unpack('<I', footer[4:8])[0] + 1) * 4
    istart = len(blob) - 12 - bsize
    idx = blob[istart:istart + bsize]
    assert idx[0] == 0
    n, pos = read_vli(idx, 1)
    assert n == len(usizes)
    recs = []
    for _ in range(n):
        unp, pos = read_vli(idx, pos)
        _, pos = read_vli(idx, pos)
        recs.append(unp)
    body = b'\x00' + zmtest.xz_vli(n) + b''.join(zmtest.xz_vli(u) + zmtest.xz_vli(s) for u, s in zip(recs, usizes))
    body += b'\x00' * (-len(body) % 4)
    body += struct.pack('<I', crc32(body))
    flags = footer[8:10]
    bs = struct.pack('<I', len(body) // 4 - 1)
    return blob[:istart] + body + struct.pack('<I', crc32(bs + flags)) + bs + flags + b'YZ'


def start_bombs(ctx):
    """Generate the 1 GiB bombs in a background thread (they take ~15 s of CPU)."""
    out = ctx.bombs
    d = ctx.path('bombs-src')
    os.makedirs(d, exist_ok=True)

    def gen():
        t0 = time.monotonic()
        try:
            n = ctx.bomb_size
            chunk = bytes(MiB)
            c = zlib.compressobj(9, zlib.DEFLATED, 31, 9, zlib.Z_RLE)  # gzip wrapper, RLE: fast on zeros
            with open(os.path.join(d, 'zeros-gz.gz'), 'wb') as f:
                for _ in range(n // MiB):
                    f.write(c.compress(chunk))
                f.write(c.flush())
            p = subprocess.run(['nice', '-n', '5', 'sh', '-c',
                                f'head -c {n} /dev/zero | xz -q -T1 -0 -c > "$1"', 'sh',
                                os.path.join(d, 'zeros-xz.xz')], stderr=subprocess.PIPE)
            out['ok'] = p.returncode == 0
            out['err'] = p.stderr.decode(errors='replace')
        except Exception as e:  # noqa: BLE001
            out['ok'] = False
            out['err'] = f'{type(e).__name__}: {e}'
        out['secs'] = time.monotonic() - t0

    ctx.bomb_thread = threading.Thread(target=gen, daemon=True)
    ctx.bomb_thread.start()


def item_bombs(ctx, it):
    d = ctx.path('bombs-src')
    if ctx.bomb_thread is None:
        start_bombs(ctx)
    # the liars: one Block of 64 KiB of incompressible bytes, Index rewritten
    rnd = random.Random(ctx.seed + 7)
    payload = rnd.randbytes(64 * KiB)
    blob = xz_bytes(payload, '-T1', '-0')
    unpadded = xz_index_records(blob)[0][0]
    liar_ok = xz_set_index(blob, [60000 * unpadded])        # under a 65536:1 ratio cap
    liar_big = xz_set_index(blob, [(1 << 62) + 12345])      # absurd
    write(os.path.join(d, 'liar-ratio.xz'), liar_ok)
    write(os.path.join(d, 'liar-huge.xz'), liar_big)
    for nm, bl in (('liar-ratio.xz', liar_ok), ('liar-huge.xz', liar_big)):
        p = run(['xz', '--robot', '-l', os.path.join(d, nm)])
        it.note(f'{nm}: {len(bl)} bytes; xz -l rc={p.returncode} '
                f'({"Index accepted" if p.returncode == 0 else p.stderr.decode().strip()[:80]})')
    t0 = time.monotonic()
    ctx.bomb_thread.join(timeout=180)
    if not ctx.bombs.get('ok'):
        it.check('generate the bombs', False, ctx.bombs.get('err', 'timed out'))
        return
    sizes = {nm: os.path.getsize(os.path.join(d, nm)) for nm in ('zeros-xz.xz', 'zeros-gz.gz')}
    it.info(f'bombs: {ctx.bomb_size // MiB} MiB of zeros -> xz {sizes["zeros-xz.xz"]} bytes, '
            f'gzip {sizes["zeros-gz.gz"]} bytes (made in {ctx.bombs["secs"]:.1f} s in the '
            f'background; waited {time.monotonic() - t0:.1f} s)')
    cache = 16 * MiB
    with ctx.mount(it, d, 'bombs', f'cache_size=16M,index_dir=none', watchdog=240) as m:
        mnt = m.mnt
        pid = m.proc.pid
        zero = bytes(MiB)
        for nm in ('zeros-xz', 'zeros-gz'):
            p = os.path.join(mnt, nm)
            t0 = time.monotonic()
            try:
                st = os.stat(p)
                fd = os.open(p, os.O_RDONLY)
                try:
                    drop_cache(fd)
                    off, bad = 0, None
                    while True:
                        got = os.pread(fd, MiB, off)
                        if not got:
                            break
                        if got != zero[:len(got)]:
                            bad = off
                            break
                        off += len(got)
                        if off % (256 * MiB) == 0:
                            drop_cache(fd)  # keep the page cache out of the picture
                finally:
                    os.close(fd)
                ok = st.st_size == ctx.bomb_size and off == ctx.bomb_size and bad is None
                it.check(f'{nm}: {ctx.bomb_size // MiB} MiB of zeros read sequentially', ok,
                         f'st_size {st.st_size}, read {off}, non-zero at {bad}',
                         info=f'{time.monotonic() - t0:.1f} s, VmHWM now '
                              f'{(vm_hwm_kib(pid) or 0) // 1024} MiB')
            except OSError as e:
                it.check(f'{nm}: {ctx.bomb_size // MiB} MiB of zeros read sequentially', False,
                         errname(e))
            # random reads far into the file (xz: decodes the one Block from its start)
            fd = open_direct(p) or os.open(p, os.O_RDONLY)
            t0 = time.monotonic()
            try:
                bad = []
                for off in (ctx.bomb_size - 4096, ctx.bomb_size // 3, 12345, ctx.bomb_size - 1):
                    try:
                        got = os.pread(fd, 4096, off)
                        if got != bytes(min(4096, ctx.bomb_size - off)):
                            bad.append(f'{off}: wrong')
                    except OSError as e:
                        bad.append(f'{off}: {errname(e)}')
                it.check(f'{nm}: 4 random O_DIRECT reads far into the file', not bad, ' | '.join(bad),
                         info=f'{time.monotonic() - t0:.1f} s')
            finally:
                os.close(fd)
        # the liars
        for nm, stripped in (('liar-ratio.xz', 'liar-ratio'), ('liar-huge.xz', 'liar-huge')):
            raw = os.path.lexists(os.path.join(mnt, nm))
            vis = os.path.lexists(os.path.join(mnt, stripped))
            if raw and not vis:
                with open(os.path.join(mnt, nm), 'rb') as f:
                    same = f.read() == open(os.path.join(d, nm), 'rb').read()
                it.check(f'{nm}: refused, shown raw', same, 'raw bytes differ',
                         info='shown raw under its own name')
                continue
            if not vis:
                it.check(f'{nm}: refused (raw or EIO)', False, 'neither name is in the mount')
                continue
            try:
                st_size = os.stat(os.path.join(mnt, stripped)).st_size
            except OSError as e:
                st_size = errname(e)
            outcomes, served = [], 0
            t0 = time.monotonic()
            try:
                fd = os.open(os.path.join(mnt, stripped), os.O_RDONLY | os.O_DIRECT)
            except OSError as e:
                outcomes.append(f'open {errname(e)}')
                fd = None
            if fd is not None:
                try:
                    for off in (0, 64 * KiB, 70 * KiB, 3 * MiB, 1 << 31):
                        try:
                            got = os.pread(fd, 8192, off)
                            served += len(got)
                            good = got == payload[off:off + 8192] and off + len(got) <= len(payload)
                            outcomes.append(f'@{off}: {len(got)} bytes{"" if good else " WRONG"}')
                        except OSError as e:
                            outcomes.append(f'@{off}: {errname(e)}')
                finally:
                    os.close(fd)
            ok = all(('EIO' in o) or (o.startswith('@0:') and 'WRONG' not in o) for o in outcomes)
            it.check(f'{nm}: shown as {stripped} (st_size {st_size}); reads EIO, nothing invented',
                     ok, '; '.join(outcomes),
                     info=f'{"; ".join(outcomes)} in {time.monotonic() - t0:.1f} s')
        hwm = vm_hwm_kib(pid)
        limit = (cache + 64 * MiB) // KiB
        it.check(f'daemon VmHWM below cache_size + 64 MiB ({limit // 1024} MiB)',
                 hwm is not None and hwm < limit, f'VmHWM {hwm} KiB',
                 info=f'VmHWM {hwm // 1024 if hwm else "?"} MiB')
        it.check('daemon alive', m.alive() and mount_alive(mnt), 'gone')
    c = ctx.record_log('bombs', m, [('liar-ratio.xz', ['liar-ratio.xz', 'liar-ratio']),
                                    ('liar-huge.xz', ['liar-huge.xz', 'liar-huge']),
                                    ('zeros-xz.xz (healthy)',
                                     ['zeros-xz.xz', 'zeros-xz']),
                                    ('zeros-gz.gz (healthy)', ['zeros-gz.gz', 'zeros-gz'])])
    it.info(f'log lines per file: {c}')


# --------------------------------------------------------------------------
# 8. Index numbers that overflow
# --------------------------------------------------------------------------
def item_index_overflow(ctx, it):
    xu = os.path.join(ctx.corpus, 'xz-utils')
    files = ['bad-3-index-uncomp-overflow.xz', 'bad-1-index-huge-uncomp.xz']
    control = 'good-1-check-crc64.xz'
    src = ctx.path('ovf-src')
    os.makedirs(src)
    for f in files + [control]:
        shutil.copyfile(os.path.join(xu, f), os.path.join(src, f))
    with ctx.mount(it, src, 'index-overflow', 'cache_size=8M,index_dir=none', watchdog=60) as m:
        mnt = m.mnt
        listing = sorted(os.listdir(mnt))
        it.info(f'listing: {listing}')
        for f in files:
            stripped = f[:-3]
            raw = f in listing
            vis = stripped in listing
            if raw and not vis:
                with open(os.path.join(mnt, f), 'rb') as fh:
                    same = fh.read() == open(os.path.join(src, f), 'rb').read()
                it.check(f'{f}: rejected', same, 'shown raw but the bytes differ',
                         info='shown raw under its own name')
                continue
            if not vis:
                it.check(f'{f}: rejected', False, 'neither name is listed')
                continue
            try:
                st = os.stat(os.path.join(mnt, stripped))
                fd = os.open(os.path.join(mnt, stripped), os.O_RDONLY)
                try:
                    got = os.pread(fd, 65536, 0)
                    it.check(f'{f}: rejected', False, f'st_size {st.st_size}, read returned '
                             f'{len(got)} bytes')
                finally:
                    os.close(fd)
            except OSError as e:
                it.check(f'{f}: rejected', e.errno == errno.EIO, errname(e), info='EIO')
        h, n = sha_path(os.path.join(mnt, control[:-3]))
        want = hashlib.sha256(run(['xz', '-dc', os.path.join(src, control)]).stdout).hexdigest()
        it.check(f'{control} beside them reads back', h == want, f'{n} bytes, wrong sha')
        it.check('daemon alive', m.alive() and mount_alive(mnt), 'gone')
    c = ctx.record_log('index-overflow', m, [(f, [f, f[:-3]]) for f in files])
    it.info(f'log lines per file: {c}')
    for f in files:
        it.check(f'{f}: the log says why', c[f] >= 1, 'no log line names it')


# --------------------------------------------------------------------------
# 9. names
# --------------------------------------------------------------------------
def item_names(ctx, it):
    src = ctx.path('names-src').encode()
    os.makedirs(src)
    specs = [  # (source name, visible name, kind)
        (b'with space.gz', b'with space', 'gz'),
        (b'new\nline.xz', b'new\nline', 'xz'),
        (b'tab\there.gz', b'tab\there', 'gz'),
        ('ünïcødé 日本語.log.gz'.encode(), 'ünïcødé 日本語.log'.encode(), 'gz'),
        ('ελληνικά.xz'.encode(), 'ελληνικά'.encode(), 'xz'),
        (b'latin1-\xe9t\xe9.xz', b'latin1-\xe9t\xe9', 'xz'),
        (b'bad-\xff\xfe-bytes.gz', b'bad-\xff\xfe-bytes', 'gz'),
        (b'-leading-dash.gz', b'-leading-dash', 'gz'),
        (b' leading space.xz', b' leading space', 'xz'),
        (b'plain with space.txt', b'plain with space.txt', 'plain'),
        (b'plain-\xff.txt', b'plain-\xff.txt', 'plain'),
        (b'ends-with-newline.gz\n', b'ends-with-newline.gz\n', 'plain'),  # not a .gz suffix
        ('dir ü\n/inner é.xz'.encode(), 'dir ü\n/inner é'.encode(), 'xz'),
    ]
    refs = {}
    for i, (sname, vis, kind) in enumerate(specs):
        data = records(base_of(12, 0) + i * 0x100000000, 20000 + i * 77)
        blob = gz_bytes(data) if kind == 'gz' else xz_bytes(data, '-T1', '-0') if kind == 'xz' else data
        p = os.path.join(src, sname)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'wb') as f:
            f.write(blob)
        refs[vis] = data
    with ctx.mount(it, src.decode(errors='surrogateescape'), 'names',
                   'cache_size=8M,index_dir=none', watchdog=60) as m:
        mnt = m.mnt.encode(errors='surrogateescape')
        want_root = sorted({v.split(b'/')[0] for v in refs})
        got_root = sorted(os.listdir(mnt))
        it.check('root listing is exactly the stripped names', got_root == want_root,
                 f'extra {sorted(set(got_root) - set(want_root))}, '
                 f'missing {sorted(set(want_root) - set(got_root))}')
        sub = [v for v in refs if b'/' in v][0]
        got_sub = os.listdir(os.path.join(mnt, sub.split(b'/')[0]))
        it.check('subdirectory listing', got_sub == [sub.split(b'/')[1]], f'{got_sub}')
        bad = []
        for vis, data in refs.items():
            try:
                with open(os.path.join(mnt, vis), 'rb') as f:
                    got = f.read()
                st = os.stat(os.path.join(mnt, vis))
                if got != data or st.st_size != len(data):
                    bad.append(f'{vis!r}: {len(got)} bytes, st_size {st.st_size}, want {len(data)}')
            except OSError as e:
                bad.append(f'{vis!r}: {errname(e)}')
        it.check(f'all {len(refs)} files read back by their names', not bad, ' | '.join(bad[:4]))
        errs = [ln for ln in m.log_lines() if ': error:' in ln]
        it.check('no error lines in the log', not errs, ' | '.join(errs[:2]))


# --------------------------------------------------------------------------
# 10. symlinks
# --------------------------------------------------------------------------
def item_symlinks(ctx, it):
    top = ctx.path('sym')
    src, outside = os.path.join(top, 'src'), os.path.join(top, 'outside')
    secret = records(base_of(13, 0), 5000)
    out_gz = gz_bytes(secret)
    out_xz = xz_bytes(secret, '-T1', '-0')
    write(os.path.join(outside, 'real.gz'), out_gz)
    write(os.path.join(outside, 'real.xz'), out_xz)
    write(os.path.join(outside, 'secret.txt'), secret)
    # the tree that gets swapped in under a cached path (depth 2)
    write(os.path.join(outside, 'tree', 'e', 'f.gz'), out_gz)
    write(os.path.join(outside, 'tree', 'e', 'p.txt'), secret)
    inside = records(base_of(13, 1), 6000)
    write(os.path.join(src, 'd', 'e', 'f.gz'), gz_bytes(inside))
    write(os.path.join(src, 'd', 'e', 'p.txt'), inside)
    write(os.path.join(src, 'c', 'g.gz'), gz_bytes(inside))
    write(os.path.join(src, 'in.gz'), gz_bytes(inside))
    links = {
        'etc-abs': '/etc',
        'passwd-abs': '/etc/passwd',
        'rel-out': '../outside/secret.txt',
        'rel-out-dir': '../outside',
        'x.gz': os.path.join(outside, 'real.gz'),
        'y.xz': '../outside/real.xz',
        'dangling.gz': 'nowhere.gz',
        'self-loop': 'self-loop',
        'to-inside.gz': 'in.gz',
    }
    for name, target in links.items():
        os.symlink(target, os.path.join(src, name))
    # timeout=60: the kernel keeps d, d/e, d/e/f (and c, c/g) cached for the swap below
    # MNT beside SRC, so that '../outside' means the same directory from both
    with zmtest.Mount(ctx.zmount, src, os.path.join(top, 'mnt'),
                      opts='cache_size=8M,index_dir=none,timeout=60',
                      log_path=ctx.path('daemon-symlinks.log'), results=it, watchdog=60,
                      label='symlinks') as m:
        mnt = m.mnt
        got = sorted(os.listdir(mnt))
        want = sorted(list(links) + ['d', 'c', 'in'])
        it.check('listing: links under their own names (x.gz, y.xz not stripped)', got == want,
                 f'got {got}')
        bad = []
        for e in os.scandir(mnt):
            if e.name in links:
                if not e.is_symlink():
                    bad.append(f'{e.name}: readdir type not DT_LNK')
                st = os.lstat(os.path.join(mnt, e.name))
                if not stat.S_ISLNK(st.st_mode):
                    bad.append(f'{e.name}: lstat mode {oct(st.st_mode)}')
                tgt = os.readlink(os.path.join(mnt, e.name))
                if tgt != links[e.name]:
                    bad.append(f'{e.name}: readlink {tgt!r} != {links[e.name]!r}')
        it.check('every link: DT_LNK, S_ISLNK, readlink gives the original target', not bad,
                 ' | '.join(bad[:4]))
        for nm in ('x', 'y'):
            it.check(f'no decompressed "{nm}" for the link {nm}.{"gz" if nm == "x" else "xz"}',
                     not os.path.lexists(os.path.join(mnt, nm)), f'{nm} exists in the mount')
        with open(os.path.join(mnt, 'x.gz'), 'rb') as f:
            it.check('x.gz through the link (kernel resolves it outside) is the raw gzip',
                     f.read() == out_gz, 'bytes differ from the outside real.gz')
        try:
            with open(os.path.join(mnt, 'y.xz'), 'rb') as f:
                data = f.read()
            it.check('y.xz through the relative link is the raw xz outside', data == out_xz,
                     f'{len(data)} other bytes')
        except OSError as e:
            it.check('y.xz through the relative link is the raw xz outside', False, errname(e))
        # cached path, then the directory is swapped for a symlink that leads out of SRC
        with open(os.path.join(mnt, 'd', 'e', 'f'), 'rb') as f:
            first = f.read()
        with open(os.path.join(mnt, 'c', 'g'), 'rb') as f:
            first_c = f.read()
        with open(os.path.join(mnt, 'd', 'e', 'p.txt'), 'rb') as f:
            first_p = f.read()
        it.check('d/e/f, d/e/p.txt and c/g read back before the swap',
                 first == inside and first_c == inside and first_p == inside, 'wrong bytes')
        os.rename(os.path.join(src, 'd'), os.path.join(src, 'd.old'))
        os.symlink(os.path.join(outside, 'tree'), os.path.join(src, 'd'))
        os.rename(os.path.join(src, 'c'), os.path.join(src, 'c.old'))
        os.symlink(os.path.join(outside, 'tree', 'e'), os.path.join(src, 'c'))
        write(os.path.join(outside, 'tree', 'e', 'g.gz'), out_gz)
        for rel, what in (('d/e/f', 'archive, depth 2'), ('d/e/p.txt', 'plain file, depth 2'),
                          ('c/g', 'archive, depth 1')):
            outcomes, leaked = [], False
            for how in ('O_DIRECT', 'buffered', 'stat'):
                p = os.path.join(mnt, rel)
                try:
                    if how == 'stat':
                        st = os.stat(p)
                        outcomes.append(f'stat: size {st.st_size}'
                                        + (' (the OUTSIDE file\'s size)' if st.st_size == len(secret)
                                           else ''))
                        continue
                    fd = open_direct(p) if how == 'O_DIRECT' else os.open(p, os.O_RDONLY)
                    if fd is None:
                        outcomes.append(f'{how}: open refused')
                        continue
                    try:
                        if how == 'buffered':
                            drop_cache(fd)
                        data = os.pread(fd, 1 << 20, 0)
                    finally:
                        os.close(fd)
                    leak = records(base_of(13, 0), 16) in data   # the outside file's first record
                    leaked |= leak
                    outcomes.append(f'{how}: {len(data)} bytes, '
                                    + ('CONTENT OF THE FILE OUTSIDE SRC' if leak else
                                       read_result(data, 0, 1 << 20, [('inside', inside)])))
                except OSError as e:
                    outcomes.append(f'{how}: {errname(e)}')
            verdict = '; '.join(outcomes)
            it.check(f'{rel} after {rel.split("/")[0]} became a symlink out of SRC ({what}): '
                     f'not served from outside', not leaked,
                     'the daemon followed the symlink: ' + verdict, info=verdict)
        it.check('daemon alive', m.alive() and mount_alive(mnt), 'gone')


# --------------------------------------------------------------------------
# 11. a directory of 10,000 entries
# --------------------------------------------------------------------------
def item_bigdir(ctx, it):
    src = ctx.path('bigdir-src')
    os.makedirs(src)
    t0 = time.monotonic()
    refs = {}
    filt = [{'id': lzma.FILTER_LZMA2, 'preset': 0, 'dict_size': 4096}]
    for i in range(10000):
        data = b'%07d ' % i + records(base_of(14, 0) + i * 0x1000000, 64 + (i % 50) * 16)
        if i % 10 < 3:
            name, blob = f'e{i:05d}.log.gz', gz_bytes(data, 1)
        elif i % 10 < 5:
            name, blob = f'e{i:05d}.log.xz', lzma.compress(data, format=lzma.FORMAT_XZ,
                                                           check=lzma.CHECK_CRC32, filters=filt)
        else:
            name, blob = f'e{i:05d}.txt', data
        with open(os.path.join(src, name), 'wb') as f:
            f.write(blob)
        refs[re.sub(r'\.(gz|xz)$', '', name)] = data
    it.note(f'built 10,000 entries (3,000 gz, 2,000 xz, 5,000 plain) in {time.monotonic() - t0:.1f} s')
    with ctx.mount(it, src, 'bigdir', 'cache_size=8M,index_dir=none', watchdog=180) as m:
        mnt = m.mnt
        t0 = time.monotonic()
        got = os.listdir(mnt)
        t_list = time.monotonic() - t0
        dups = len(got) - len(set(got))
        missing = set(refs) - set(got)
        extra = set(got) - set(refs)
        it.check('cold listing: 10,000 names, no duplicates, none missing or extra',
                 len(got) == 10000 and not dups and not missing and not extra,
                 f'{len(got)} names, {dups} duplicates, {len(missing)} missing '
                 f'({sorted(missing)[:3]}), {len(extra)} extra ({sorted(extra)[:3]})',
                 info=f'{t_list:.1f} s')
        t0 = time.monotonic()
        again = sorted(e.name for e in os.scandir(mnt))
        it.check('second listing (scandir) identical', again == sorted(got), 'differs',
                 info=f'{time.monotonic() - t0:.2f} s')
        rnd = random.Random(ctx.seed + 11)
        bad = []
        t0 = time.monotonic()
        sample = rnd.sample(sorted(refs), 400)
        inos = {}
        for vis in sample:
            try:
                st = os.stat(os.path.join(mnt, vis))
                if st.st_size != len(refs[vis]) or not stat.S_ISREG(st.st_mode):
                    bad.append(f'{vis}: st_size {st.st_size} want {len(refs[vis])}')
                inos.setdefault(st.st_ino, []).append(vis)
            except OSError as e:
                bad.append(f'{vis}: {errname(e)}')
        for vis in sample[:150]:
            try:
                with open(os.path.join(mnt, vis), 'rb') as f:
                    if f.read() != refs[vis]:
                        bad.append(f'{vis}: wrong bytes')
            except OSError as e:
                bad.append(f'{vis}: read {errname(e)}')
        same_ino = [v for v in inos.values() if len(v) > 1]
        it.check('stat of 400 sampled entries and read of 150: sizes, types, bytes, distinct st_ino',
                 not bad and not same_ino, f'{len(bad)} bad: {bad[:3]}; shared inodes {same_ino[:2]}',
                 info=f'{time.monotonic() - t0:.1f} s')
        errs = [ln for ln in m.log_lines()
                if (': error:' in ln or ': warning:' in ln) and not tuning_hint(ln)]
        it.check('no error or warning lines in the log', not errs, ' | '.join(errs[:2]))


# --------------------------------------------------------------------------
# 12. logging summary
# --------------------------------------------------------------------------
def item_logging(ctx, it):
    if not ctx.log_causes:
        it.check('log lines were counted', False, 'no item recorded any (did they all fail early?)')
        return
    worst = max(ctx.log_causes, key=lambda c: c[2])
    for item, cause, n, first in ctx.log_causes:
        healthy = 'healthy' in cause
        print(f'#   {item:15s} {cause:45s} {n:3d} line(s)' + (f'   e.g. {first[0][:140]}' if first else ''))
        if healthy:
            it.check(f'{item}: {cause}: no log lines about a healthy file', n == 0, f'{n} lines')
        elif 'EMFILE' in cause:
            it.check(f'{item}: {cause}: at most 3', n <= 3, f'{n} lines')
        else:
            it.check(f'{item}: {cause}: at most 3 lines', n <= 3, f'{n} lines naming it: '
                     + ' | '.join(x[:120] for x in first))
    it.info(f'max lines for one cause: {worst[2]} ({worst[0]}: {worst[1]})')


# --------------------------------------------------------------------------
ITEMS = [
    ('concurrency', item_concurrency),
    ('source-change', item_source_change),
    ('sigterm', item_sigterm),
    ('unmount-busy', item_unmount_busy),
    ('unmount-lazy', item_unmount_lazy),
    ('conn-abort', item_conn_abort),
    ('tiny-cache', item_tiny_cache),
    ('fd-limit', item_fd_limit),
    ('index-overflow', item_index_overflow),
    ('names', item_names),
    ('symlinks', item_symlinks),
    ('bigdir', item_bigdir),
    ('bombs', item_bombs),
    ('logging', item_logging),
]


def parse_size(s):
    m = re.fullmatch(r'(\d+)([KMG]?)', s.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError(f'bad size {s!r}')
    return int(m.group(1)) * {'': 1, 'K': KiB, 'M': MiB, 'G': GiB}[m.group(2)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--corpus', default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     '..', '..', '..', 'shared', 'corpus'),
                    help='shared corpus dir (for the xz-utils overflow files)')
    ap.add_argument('--seed', type=int, default=20240611)
    ap.add_argument('--reads', type=int, default=102400, help='preads in the concurrency item')
    ap.add_argument('--bomb-size', type=parse_size, default=GiB)
    ap.add_argument('--only', default='', help='regex: run only the items whose name matches')
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()

    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, a.zmount):
        return res.finish()
    tmp = tempfile.mkdtemp(prefix='zmount-faults-')
    print(f'# temp dir {tmp}, seed {a.seed}', flush=True)
    ctx = Ctx(a, tmp)
    t_all = time.monotonic()
    items = [(k, f) for k, f in ITEMS if not a.only or re.search(a.only, k)]
    if any(k == 'bombs' for k, _ in items):
        start_bombs(ctx)   # overlaps the other items
    timings = []
    try:
        for key, fn in items:
            if key == 'index-overflow' and not os.path.isdir(os.path.join(a.corpus, 'xz-utils')):
                res.fail(key, f'no xz-utils corpus under {a.corpus} (give --corpus)')
                continue
            it = Item(key)
            print(f'# --- {key}', flush=True)
            t0 = time.monotonic()
            try:
                fn(ctx, it)
            except zmtest.MountError as e:
                it.check('mount comes up', False, str(e))
            except Exception as e:  # noqa: BLE001 -- one broken item must not stop the rest
                traceback.print_exc(file=sys.stdout)
                it.check('unexpected exception', False, f'{type(e).__name__}: {e}')
            dt = time.monotonic() - t0
            timings.append((key, dt))
            summary = '; '.join(it.infos)
            res.check(f'{key} [{dt:.1f} s]', not it.fails,
                      f'{len(it.fails)} problem(s): ' + ' || '.join(it.fails) +
                      (f' || measured: {summary}' if summary else ''),
                      info=summary)
        print('# timings: ' + ', '.join(f'{k} {t:.1f} s' for k, t in timings) +
              f'; total {time.monotonic() - t_all:.1f} s', flush=True)
    finally:
        left = [d for d in os.listdir(tmp) if d.startswith('mnt-')
                and zmtest.is_mounted(os.path.join(tmp, d))]
        if a.keep or left:
            print(f'# kept {tmp}' + (f' (still mounted: {left})' if left else ''), flush=True)
        else:
            t0 = time.monotonic()
            shutil.rmtree(tmp, ignore_errors=True)
            print(f'# removed {tmp} in {time.monotonic() - t0:.1f} s', flush=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
