#!/usr/bin/env python3
"""test_install.py -- zmount the way an administrator installs and mounts it.

usage: test_install.py --zmount PATH --build-dir DIR [--keep] [--only a,b,c,d,e,f]

Needs root (mount(8), mount namespaces, dpkg) and /dev/fuse; without them it
prints a loud SKIP line and exits 77.  Standard library only.

  a. `mount -t fuse.zmount SRC MNT -o cache_size=16M`: mount(8) runs
     mount.fuse3, which runs `zmount SRC MNT -o OPTS`.  mount(8) clears PATH
     before that, and /bin/sh then searches its default path
     (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin), so a
     zmount that is only on the caller's PATH is never found.  The test
     therefore runs in a private mount namespace (unshare -m) in which
     /usr/local/sbin (or /usr/local/bin) also holds a `zmount` symlink to the
     binary under test; the real system is not touched.  Checks: every file
     reads back exactly (small .gz/.xz/.tar.xz/.tgz made at test time), the
     daemon is the binary under test and got cache_size, `umount MNT` works,
     the daemon exits 0 and is gone.
  b. The fstab path, without touching /etc/fstab: a temporary fstab with
     `SRC MNT fuse.zmount noauto,cache_size=16M 0 0` and
     `mount --fstab TMPFSTAB MNT`; `mount -a --fstab` must skip the noauto
     line.  The same checks as (a), then once more with every fstab-only
     option (defaults, nofail, _netdev, users, comment=, x-systemd.*): none
     may reach zmount.
  c. The Debian package: `cpack -G DEB` with the build directory's
     CPackConfig.cmake (a missing cpack, dpkg or CPackConfig.cmake is a
     FAIL, not a pass); its fields and file list; `dpkg -i`; /usr/bin/zmount
     --version, zmount-cat, the man pages (`man -w`); a mount with the
     installed binary (in a namespace where /usr/local cannot shadow it);
     `dpkg -r zmount`.  A zmount package that is already installed is not
     replaced: that is a FAIL.
     Also: /usr/share/doc/zmount/{copyright,README.md,fstab.example,
     srv-logs.mount}, zmount-stat and its page are in the package, the
     Maintainer is the ZMOUNT_DEB_MAINTAINER cache variable, and
     `systemd-analyze verify` (when installed) accepts the shipped unit.
  d. Stats without getfattr: os.listxattr on the mount root lists nothing of
     ours, os.getxattr gives user.zmount.stats, whose lines all parse as
     name=number, with every
     counter present, cache_budget equal to cache_size, and counters that
     move when an xz file is read; user.zmount.info on an archive.
  e. The daemon started without -f: the launcher exits 0 at once and prints
     nothing, the daemon's stdio is /dev/null, its log lines (info, and an
     error for a corrupt .gz) reach syslog -- a datagram socket the test puts
     at /dev/log inside its mount namespace, so no syslog daemon is needed --
     and after `umount` it exits 0 and is gone.
  f. The README's "## Install" sh block (it must configure with
     -DBUILD_TESTING=OFF) run in a build directory of its own, installing
     into a temporary PREFIX that already holds two files of someone else's
     (bin/zmount-local, share/doc/decoy.txt); no test may be registered or
     built there.  Then `cpack -G DEB` in that same build directory (which
     rewrites its install_manifest.txt with /usr paths), then the README's
     "## Uninstall" sh block (build/ read as that directory, /usr/local as
     PREFIX): nothing of zmount may be left, neither a file nor the
     directories share/doc/zmount, share/man/man1 and share/man that the
     install created, while the two files and the directories bin and
     share/doc that held them before stay.

The daemons started by mount(8) detach; the test makes itself their child
subreaper (prctl PR_SET_CHILD_SUBREAPER) so it can wait for them and read
their exit status.  Daemons are only ever signalled by pid.

Exit status: 0 all passed, 1 something failed, 77 FUSE or root missing.
The last line of output is always `N passed, M failed`.
"""
import argparse
import ctypes
import errno
import glob
import gzip
import io
import lzma
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
CACHE_OPT = 'cache_size=16M'
CACHE_BYTES = 16 * MiB
STATS_KEYS = ('cache_budget cache_used cache_entries cache_hits cache_misses cache_waits '
              'cache_evictions decoded_bytes readahead_bytes prefault_bytes xz_indexes indexes_built '
              'indexes_loaded read_errors').split()
FSTAB_ONLY = 'defaults,nofail,_netdev,users,comment=zmount-test,x-systemd.idle-timeout=60'
INNER_TIMEOUT = 300   # seconds for one namespace phase
DAEMON_EXIT_S = 20    # seconds a daemon may take to exit after umount
PR_SET_CHILD_SUBREAPER = 36
SH_DEFAULT_PATH = ('/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin')


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------
def run(argv, timeout=60, env=None, cwd=None, input=None, devnull=True):
    """Run ARGV; return (rc, stdout+stderr text).  rc None: timed out or not runnable.
    Standard input is /dev/null, or INPUT, or (devnull False) ours."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL if input is None and devnull else None,
                           input=input, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, f'{" ".join(argv)}: timed out after {timeout} s'
    except OSError as e:
        return None, f'{argv[0]}: {e}'
    return p.returncode, p.stdout.decode(errors='replace').strip()


def short(text, n=1500):
    text = text.strip()
    return text if len(text) <= n else text[:n] + ' [...]'


def mountinfo_entry(mnt):
    """(fstype, source, super options, mount options) of MNT, or None."""
    want = os.path.realpath(mnt)
    for e in zmtest.mountinfo():
        if e.mnt == want:
            return e.fstype, e.source, e.sopts, e.opts
    return None


def proc_children(ppid):
    """Pids whose parent is PPID (from /proc/*/stat)."""
    out = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open(f'/proc/{d}/stat', 'rb') as f:
                stat = f.read().decode(errors='replace')
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        rest = stat[stat.rfind(')') + 2:].split(' ')
        if len(rest) > 1 and rest[1] == str(ppid):
            out.append(int(d))
    return out


def proc_comm(pid):
    try:
        with open(f'/proc/{pid}/comm') as f:
            return f.read().strip()
    except OSError:
        return None


def proc_cmdline(pid):
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return [a.decode(errors='replace') for a in f.read().split(b'\0') if a]
    except OSError:
        return []


def become_subreaper():
    """Detached daemons (mount.fuse3 -> zmount -> fork) become our children."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def wait_exit(pid, timeout):
    """Reap child PID; return its exit status (or -signal), or None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 'not-a-child'
        if got == pid:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def kill_pid(pid):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        for _ in range(40):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            except ChildProcessError:
                if not os.path.exists(f'/proc/{pid}'):
                    return
            time.sleep(0.05)


def read_file(path):
    with open(path, 'rb') as f:
        return f.read()


# --------------------------------------------------------------------------
# the source tree: small, deterministic, made with the standard library
# --------------------------------------------------------------------------
def log_text(rnd, size):
    words = ('GET POST accepted closed session user request served bytes timeout retry '
             'upstream cache miss hit index span block offset worker started').split()
    lines, n, t = [], 0, 1_764_000_000
    while n < size:
        t += rnd.randrange(3)
        line = (f'{t} host{rnd.randrange(8)} app[{rnd.randrange(1, 9999)}]: '
                f'{rnd.choice(["INFO", "INFO", "INFO", "WARN", "ERROR"])} '
                f'{" ".join(rnd.choice(words) for _ in range(rnd.randrange(3, 10)))}\n')
        lines.append(line)
        n += len(line)
    return ''.join(lines).encode()


def binary_blob(rnd, size):
    parts, n = [], 0
    while n < size:
        k = rnd.randrange(3)
        chunk = (rnd.randbytes(rnd.randrange(256, 16 * KiB)) if k == 0 else
                 bytes(rnd.randrange(1, 8 * KiB)) if k == 1 else log_text(rnd, 4 * KiB))
        parts.append(chunk)
        n += len(chunk)
    return b''.join(parts)[:size]


def tar_bytes(rnd, members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 1_764_000_000
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def make_tree(src, seed=4242, corrupt=False):
    """Writes SRC; returns {visible relative path: expected bytes}."""
    rnd = random.Random(seed)
    expect = {}

    def put(src_rel, blob, shown_rel=None, data=None):
        path = os.path.join(src, src_rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(blob)
        if shown_rel is not None:
            expect[shown_rel] = blob if data is None else data

    def gz(data):
        return gzip.compress(data, compresslevel=6, mtime=0)

    def xz(data):
        return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64)

    plain = log_text(rnd, 120 * KiB)
    put('app.log', plain, 'app.log')
    d = log_text(rnd, 700 * KiB)
    put('app.log.1.gz', gz(d), 'app.log.1', d)
    d = log_text(rnd, 500 * KiB)
    put('app.log.2.xz', xz(d), 'app.log.2', d)
    d = binary_blob(rnd, 1200 * KiB)
    put('data.bin.xz', xz(d), 'data.bin', d)
    d = log_text(rnd, 90 * KiB)
    put('sub/nested.txt.gz', gz(d), 'sub/nested.txt', d)
    d = tar_bytes(rnd, [('bundle/a.txt', log_text(rnd, 40 * KiB)),
                        ('bundle/b.bin', binary_blob(rnd, 60 * KiB))])
    put('bundle.tar.xz', xz(d), 'bundle.tar', d)
    d = tar_bytes(rnd, [('small/c.txt', log_text(rnd, 10 * KiB))])
    put('small.tgz', gz(d), 'small.tar', d)
    raw = b'not gzip data, shown under its own name\n'
    put('notes.gz', raw, 'notes.gz')
    if corrupt:
        good = gz(log_text(rnd, 64 * KiB))
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0x55
        put('broken.gz', bytes(bad))  # shows as `broken`; open gives EIO
    return expect


def listing(expect, d):
    names = set()
    for rel in expect:
        parent, _, rest = rel.partition('/') if '/' in rel else ('', '', rel)
        if d == '':
            names.add(parent if parent else rest)
        elif parent == d:
            names.add(rest)
    return sorted(names)


# --------------------------------------------------------------------------
# inner phases: run as `unshare -m --propagation private -- python3 THIS --inner X`
# --------------------------------------------------------------------------
class Inner:
    """State of one namespace phase: results, the daemons it saw, cleanup."""

    def __init__(self, a):
        self.a = a
        self.res = zmtest.Results()
        self.work = a.work
        self.daemons = []
        self.mounts = []
        self.subreaper = become_subreaper()
        self.timer = threading.Timer(INNER_TIMEOUT - 30, self.watchdog)
        self.timer.daemon = True
        self.timer.start()

    def watchdog(self):
        print(f'TIMEOUT: phase {self.a.inner}: killing daemons {self.daemons} and '
              f'lazy-unmounting {self.mounts}', flush=True)
        for pid in self.daemons:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for m in self.mounts:
            run(['umount', '-l', m], timeout=10)

    def cleanup(self):
        self.timer.cancel()
        for m in self.mounts:
            if zmtest.is_mounted(m):
                print(f'# cleanup: lazy unmount of {m}', flush=True)
                run(['umount', '-l', m], timeout=20)
        for pid in self.daemons:
            if os.path.exists(f'/proc/{pid}'):
                kill_pid(pid)

    # -- making zmount reachable the way mount.fuse3 looks for it ---------
    def shadow_dir(self, d, add=None, remove=()):
        """Inside this namespace only: make directory D show its own entries
        minus REMOVE plus ADD {name: target} (symlinks)."""
        tag = d.strip('/').replace('/', '-')
        orig = tempfile.mkdtemp(prefix=f'ns-{self.a.inner}-orig-{tag}-', dir=self.work)
        farm = tempfile.mkdtemp(prefix=f'ns-{self.a.inner}-farm-{tag}-', dir=self.work)
        os.chmod(farm, 0o755)
        rc, out = run(['mount', '--bind', d, orig])
        if rc != 0:
            raise RuntimeError(f'mount --bind {d} {orig}: {out}')
        for name in os.listdir(orig):
            if name not in remove and name not in (add or {}):
                os.symlink(os.path.join(orig, name), os.path.join(farm, name))
        for name, target in (add or {}).items():
            os.symlink(target, os.path.join(farm, name))
        rc, out = run(['mount', '--bind', farm, d])
        if rc != 0:
            raise RuntimeError(f'mount --bind {farm} {d}: {out}')

    def which_default_path(self):
        """What `exec zmount` finds when PATH is unset, as mount.fuse3 runs it."""
        rc, out = run(['env', '-i', '/bin/sh', '-c', 'command -v zmount'])
        return out if rc == 0 and out else None

    def expose(self, zmount):
        """Put zmount first on /bin/sh's default path, in this namespace."""
        d = '/usr/local/sbin' if os.path.isdir('/usr/local/sbin') else '/usr/local/bin'
        self.shadow_dir(d, add={'zmount': zmount})
        found = self.which_default_path()
        ok = found is not None and os.path.realpath(found) == os.path.realpath(zmount)
        self.res.check(f'namespace: `zmount` on the default PATH is the binary under test '
                       f'({d}/zmount)', ok, f'command -v zmount gives {found!r}')
        return ok

    def hide_local(self):
        """Hide zmount in /usr/local/{sbin,bin}, so the packaged /usr/bin/zmount runs."""
        for d in ('/usr/local/sbin', '/usr/local/bin'):
            if os.path.lexists(os.path.join(d, 'zmount')):
                self.shadow_dir(d, remove=('zmount',))

    # -- one mount through mount(8) ------------------------------------------
    def find_daemon(self, mnt, before):
        """The zmount daemon serving MNT: a new child of ours (subreaper)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pids = (proc_children(os.getpid()) if self.subreaper else
                    [int(d) for d in os.listdir('/proc') if d.isdigit()])
            for pid in pids:
                if pid in before or proc_comm(pid) != 'zmount':
                    continue
                if os.path.realpath(mnt) in proc_cmdline(pid) or mnt in proc_cmdline(pid):
                    return pid
            time.sleep(0.05)
        return None

    def mount_checks(self, label, mnt, src, expect, want_exe, mount_argv, env=None,
                     forbidden_opts=(), stats=False):
        """mount(8) MNT, check it and every file, unmount, reap the daemon."""
        res = self.res
        os.makedirs(mnt, exist_ok=True)
        before = set(proc_children(os.getpid()))
        self.mounts.append(mnt)
        rc, out = run(mount_argv, timeout=60, env=env)
        if not res.check(f'{label}: `{" ".join(mount_argv)}` exits 0', rc == 0,
                         f'rc={rc}: {short(out)}'):
            return
        ent = mountinfo_entry(mnt)
        res.check(f'{label}: MNT is mounted as fuse.zmount from SRC, read-only',
                  ent is not None and ent[0] == 'fuse.zmount' and ent[1] == os.path.realpath(src)
                  and 'ro' in ent[3].split(','), f'mountinfo: {ent}')
        pid = self.find_daemon(mnt, before)
        if pid is None:
            res.fail(f'{label}: found the zmount daemon serving MNT',
                     f'no zmount child of pid {os.getpid()} '
                     f'(subreaper={"on" if self.subreaper else "off"})')
        else:
            self.daemons.append(pid)
            print(f'# daemon pid {pid}', flush=True)
            exe = os.path.realpath(f'/proc/{pid}/exe')
            res.check(f'{label}: the daemon runs {want_exe}',
                      exe == os.path.realpath(want_exe), f'/proc/{pid}/exe -> {exe}')
            argv = proc_cmdline(pid)
            opts = ','.join(argv[i + 1] for i, x in enumerate(argv[:-1]) if x == '-o')
            res.check(f'{label}: the daemon got {CACHE_OPT}', CACHE_OPT in opts.split(','),
                      f'argv {argv}')
            leaked = [o for o in opts.split(',') if o.split('=')[0] in forbidden_opts]
            if forbidden_opts:
                res.check(f'{label}: no fstab-only option reaches zmount', not leaked,
                          f'zmount got {leaked} in argv {argv}')
        try:
            self.file_checks(label, mnt, expect)
            if stats:
                self.stats_checks(label, mnt, expect)
        finally:
            rc, out = run(['umount', mnt], timeout=30)
            gone = rc == 0 and not zmtest.is_mounted(mnt)
            res.check(f'{label}: `umount MNT` works', gone, f'rc={rc}: {out}')
            if not gone:
                run(['umount', '-l', mnt], timeout=20)
        if pid is not None:
            self.reap(label, pid)

    def reap(self, label, pid):
        status = wait_exit(pid, DAEMON_EXIT_S)
        if status == 'not-a-child':
            deadline = time.monotonic() + DAEMON_EXIT_S
            while os.path.exists(f'/proc/{pid}') and time.monotonic() < deadline:
                time.sleep(0.05)
            self.res.check(f'{label}: the daemon is gone after umount',
                           not os.path.exists(f'/proc/{pid}'), f'pid {pid} still exists')
            return
        if status is None:
            kill_pid(pid)
        self.res.check(f'{label}: the daemon exits 0 within {DAEMON_EXIT_S} s of umount',
                       status == 0, f'pid {pid}: exit status {status}')
        self.res.check(f'{label}: the daemon process is gone', not os.path.exists(f'/proc/{pid}'),
                       f'/proc/{pid} still exists')

    def file_checks(self, label, mnt, expect, extra=()):
        """Exact listings (EXTRA: more names in the root) and exact bytes."""
        res = self.res
        for d in ('', 'sub'):
            want = sorted(listing(expect, d) + (list(extra) if d == '' else []))
            try:
                got = sorted(os.listdir(os.path.join(mnt, d)))
            except OSError as e:
                got = f'{type(e).__name__}: {e}'
            res.check(f'{label}: listing of /{d} is exactly what zmount shows', got == want,
                      f'got {got}, want {want}')
        bad = []
        for rel, data in sorted(expect.items()):
            try:
                st = os.stat(os.path.join(mnt, rel))
                got = read_file(os.path.join(mnt, rel))
            except OSError as e:
                bad.append(f'{rel}: {e}')
                continue
            if got != data or st.st_size != len(data):
                bad.append(f'{rel}: {len(got)} bytes (st_size {st.st_size}), want {len(data)}'
                           + ('' if len(got) != len(data) else ' (content differs)'))
        res.check(f'{label}: all {len(expect)} files read back exactly', not bad, '; '.join(bad))

    def stats_checks(self, label, mnt, expect):
        """(d) the stats xattr, with os.getxattr only."""
        res = self.res
        try:
            names = os.listxattr(mnt)
        except OSError as e:
            names = f'{type(e).__name__}: {e}'
        # Served by name only: a listed name is one that cp -a and rsync -X copy.
        res.check(f'{label}: os.listxattr(MNT) lists no user.zmount.* (served by name only)',
                  isinstance(names, list) and not any(n.startswith('user.zmount')
                                                      for n in names), f'got {names}')

        def stats():
            raw = os.getxattr(mnt, 'user.zmount.stats')
            text = raw.decode('ascii')
            out, junk = {}, []
            for line in text.splitlines():
                m = re.fullmatch(r'([a-z_]+)=(\d+)', line)
                if m:
                    out[m.group(1)] = int(m.group(2))
                # top files (DECODED NAME), where the log goes, damaged files, passes
                elif not re.fullmatch(r'(top=\d+ |log=|damaged=|pass=)\S.*', line):
                    junk.append(line)
            if junk or not text.endswith('\n'):
                raise ValueError(f'unparsable stats {text!r}')
            return out

        try:
            s0 = stats()
        except (OSError, ValueError, UnicodeDecodeError) as e:
            res.fail(f'{label}: os.getxattr(MNT, "user.zmount.stats") parses as name=number lines',
                     f'{type(e).__name__}: {e}')
            return
        missing = [k for k in STATS_KEYS if k not in s0]
        res.check(f'{label}: os.getxattr(MNT, "user.zmount.stats") parses, all '
                  f'{len(STATS_KEYS)} counters present', not missing, f'missing {missing} in {s0}')
        res.check(f'{label}: stats cache_budget equals cache_size (16 MiB)',
                  s0.get('cache_budget') == CACHE_BYTES, f'cache_budget={s0.get("cache_budget")}')
        # A fresh open of an xz file that was read must not be served from nothing:
        # read one more time with a new mount-relative open after dropping the
        # kernel's pages, and watch the counters move.
        path = os.path.join(mnt, 'data.bin')
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        before = stats()
        data = read_file(path)
        after = stats()
        hits_or_misses = ((after['cache_hits'] + after['cache_misses'])
                          - (before['cache_hits'] + before['cache_misses']))
        res.check(f'{label}: reading data.bin (xz) moves the cache counters',
                  data == expect['data.bin'] and hits_or_misses > 0,
                  f'hits+misses grew by {hits_or_misses}; before {before}, after {after}')
        res.check(f'{label}: stats after reading everything: decoded_bytes >= the xz '
                  f'files\' sizes, xz_indexes >= 3, gzip indexes >= 3, read_errors = 0, '
                  f'cache_used <= cache_budget',
                  after['decoded_bytes'] >= len(expect['data.bin']) + len(expect['app.log.2'])
                  and after['xz_indexes'] >= 3
                  and after['indexes_built'] + after['indexes_loaded'] >= 3
                  and after['read_errors'] == 0 and after['cache_used'] <= after['cache_budget'],
                  f'{after}')
        try:
            info = os.getxattr(os.path.join(mnt, 'app.log.2'), 'user.zmount.info').decode()
        except OSError as e:
            info = f'{type(e).__name__}: {e}'
        res.check(f'{label}: os.getxattr(app.log.2, "user.zmount.info") names the source '
                  f'and the size', 'source=app.log.2.xz' in info and 'format=xz' in info
                  and f'uncompressed={len(expect["app.log.2"])}' in info, repr(info))
        try:
            os.getxattr(os.path.join(mnt, 'app.log'), 'user.zmount.info')
            e_no = 0
        except OSError as e:
            e_no = e.errno
        res.check(f'{label}: a plain file has no user.zmount.info (ENODATA)',
                  e_no == errno.ENODATA, f'errno {zmtest.errno_name(e_no)}')


def phase_a(x):
    a = x.a
    src, expect = os.path.join(a.work, 'src'), x.expect
    found = x.which_default_path()
    if found is None:
        # Documents why (a) needs the namespace: the caller's PATH is ignored.
        os.makedirs(os.path.join(a.work, 'mnt-a0'), exist_ok=True)
        rc, out = run(['mount', '-t', 'fuse.zmount', src, os.path.join(a.work, 'mnt-a0'),
                       '-o', CACHE_OPT],
                      env=dict(os.environ, PATH=os.path.dirname(a.zmount) + ':'
                               + os.environ.get('PATH', '/usr/bin:/bin')))
        zmtest.Results.note(f'with zmount only on the caller\'s PATH, mount -t fuse.zmount '
                            f'gives rc={rc}: {short(out, 200)!r} (mount(8) clears PATH)')
        if zmtest.is_mounted(os.path.join(a.work, 'mnt-a0')):
            run(['umount', os.path.join(a.work, 'mnt-a0')])
    if not x.expose(a.zmount):
        return
    env = dict(os.environ, PATH=os.path.dirname(a.zmount) + ':' + os.environ.get('PATH', ''),
               XDG_CACHE_HOME=os.path.join(a.work, 'xdg-a'))
    mnt = os.path.join(a.work, 'mnt-a')
    x.mount_checks('(a) mount -t fuse.zmount', mnt, src, expect, a.zmount,
                   ['mount', '-t', 'fuse.zmount', src, mnt, '-o', CACHE_OPT], env=env,
                   stats=True)


def phase_b(x):
    a = x.a
    src, expect = os.path.join(a.work, 'src'), x.expect
    if not x.expose(a.zmount):
        return
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(a.work, 'xdg-b'))
    mnt = os.path.join(a.work, 'mnt-b')
    mnt2 = os.path.join(a.work, 'mnt-b2')
    fstab = os.path.join(a.work, 'fstab')
    with open(fstab, 'w') as f:
        f.write('# written by test_install.py\n'
                f'{src}\t{mnt}\tfuse.zmount\tnoauto,{CACHE_OPT}\t0 0\n'
                f'{src}\t{mnt2}\tfuse.zmount\tnoauto,{FSTAB_ONLY},{CACHE_OPT},allow_other\t0 0\n')
    os.makedirs(mnt, exist_ok=True)
    os.makedirs(mnt2, exist_ok=True)
    rc, out = run(['mount', '-a', '--fstab', fstab], env=env)
    x.res.check('(b) `mount -a --fstab TMPFSTAB` skips the noauto lines',
                rc == 0 and not zmtest.is_mounted(mnt) and not zmtest.is_mounted(mnt2),
                f'rc={rc} {out}; mounted: {zmtest.is_mounted(mnt)} {zmtest.is_mounted(mnt2)}')
    for m in (mnt, mnt2):
        if zmtest.is_mounted(m):
            run(['umount', m])
    x.mount_checks('(b) fstab noauto,cache_size=16M', mnt, src, expect, a.zmount,
                   ['mount', '--fstab', fstab, mnt], env=env,
                   forbidden_opts=('noauto',))
    x.mount_checks('(b) fstab with every fstab-only option', mnt2, src, expect, a.zmount,
                   ['mount', '--fstab', fstab, mnt2], env=env,
                   forbidden_opts=tuple(o.split('=')[0] for o in ('noauto,' + FSTAB_ONLY).split(','))
                   + ('x-systemd.idle-timeout',))


def phase_c_mount(x):
    a = x.a
    src, expect = os.path.join(a.work, 'src'), x.expect
    x.hide_local()
    found = x.which_default_path()
    ok = found is not None and os.path.realpath(found) == os.path.realpath('/usr/bin/zmount')
    if not x.res.check('(c) `zmount` on the default PATH is the packaged /usr/bin/zmount', ok,
                       f'command -v zmount gives {found!r}'):
        return
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(a.work, 'xdg-c'))
    mnt = os.path.join(a.work, 'mnt-c')
    x.mount_checks('(c) installed package: mount -t fuse.zmount', mnt, src, expect,
                   '/usr/bin/zmount', ['mount', '-t', 'fuse.zmount', src, mnt, '-o', CACHE_OPT],
                   env=env)


class FakeSyslog:
    """A datagram socket at /dev/log, in this mount namespace only."""

    def __init__(self, work):
        self.messages = []
        self.lock = threading.Lock()
        d = os.path.join(work, 'devlog')
        os.makedirs(d, exist_ok=True)
        if os.path.lexists('/dev/log'):
            # bind our socket over the real one (namespace-private)
            path = os.path.join(d, 'log')
            self.sock = self._bind(path)
            rc, out = run(['mount', '--bind', path, '/dev/log'])
            if rc != 0:
                raise RuntimeError(f'mount --bind {path} /dev/log: {out}')
        else:
            # no /dev/log to bind over: a private /dev with the nodes needed here
            old = os.path.join(d, 'olddev')
            os.makedirs(old, exist_ok=True)
            for argv in (['mount', '--bind', '/dev', old],
                         ['mount', '-t', 'tmpfs', '-o', 'mode=0755,size=1m', 'zmount-test-dev',
                          '/dev']):
                rc, out = run(argv)
                if rc != 0:
                    raise RuntimeError(f'{" ".join(argv)}: {out}')
            # null first: run() gives its children /dev/null as stdin
            for name in ('null', 'fuse', 'zero', 'full', 'random', 'urandom', 'tty'):
                if os.path.exists(os.path.join(old, name)):
                    open(os.path.join('/dev', name), 'w').close()
                    rc, out = run(['mount', '--bind', os.path.join(old, name),
                                   os.path.join('/dev', name)], devnull=False)
                    if rc != 0:
                        raise RuntimeError(f'mount --bind /dev/{name}: {out}')
            for name, target in (('fd', '/proc/self/fd'), ('stdin', '/proc/self/fd/0'),
                                 ('stdout', '/proc/self/fd/1'), ('stderr', '/proc/self/fd/2')):
                os.symlink(target, os.path.join('/dev', name))
            self.sock = self._bind('/dev/log')
        self.thread = threading.Thread(target=self._recv, daemon=True)
        self.thread.start()

    @staticmethod
    def _bind(path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(path)
        os.chmod(path, 0o666)
        return s

    def _recv(self):
        while True:
            try:
                msg = self.sock.recv(65536)
            except OSError:
                return
            with self.lock:
                self.messages.append(msg.decode(errors='replace'))

    def wait_for(self, pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                hit = [m for m in self.messages if pred(m)]
            if hit:
                return hit[0]
            time.sleep(0.05)
        return None

    def all(self):
        with self.lock:
            return list(self.messages)


def phase_e(x):
    a, res = x.a, x.res
    src = os.path.join(a.work, 'src-e')
    expect = make_tree(src, seed=77, corrupt=True)
    try:
        syslog = FakeSyslog(a.work)
    except (OSError, RuntimeError) as e:
        res.fail('(e) a private /dev/log socket for syslog', f'{type(e).__name__}: {e}')
        return
    mnt = os.path.join(a.work, 'mnt-e')
    os.makedirs(mnt, exist_ok=True)
    before = set(proc_children(os.getpid()))
    argv = [a.zmount, src, mnt, '-o', f'{CACHE_OPT},index_dir=none']
    x.mounts.append(mnt)
    t0 = time.monotonic()
    rc, out = run(argv, timeout=30)
    res.check('(e) `zmount SRC MNT` without -f: the launcher exits 0 and prints nothing',
              rc == 0 and out == '', f'rc={rc}, output {out!r}')
    if rc != 0:
        return
    res.check('(e) MNT is mounted when the launcher returns', zmtest.is_mounted(mnt),
              f'after {time.monotonic() - t0:.1f} s')
    pid = x.find_daemon(mnt, before)
    if not res.check('(e) the detached daemon is found', pid is not None,
                     f'no zmount child (subreaper={"on" if x.subreaper else "off"})'):
        run(['umount', '-l', mnt])
        return
    x.daemons.append(pid)
    print(f'# daemon pid {pid}', flush=True)
    fds = {n: os.path.realpath(f'/proc/{pid}/fd/{n}') for n in (0, 1, 2)}
    res.check('(e) the daemon\'s stdin, stdout and stderr are /dev/null',
              all(v == '/dev/null' for v in fds.values()), f'{fds}')
    try:
        x.file_checks('(e) daemonized', mnt, expect, extra=('broken',))
        try:
            read_file(os.path.join(mnt, 'broken'))
            e_no = 0
        except OSError as e:
            e_no = e.errno
        res.check('(e) the corrupt broken.gz gives EIO', e_no == errno.EIO,
                  f'errno {zmtest.errno_name(e_no)}')
        tag = f'zmount[{pid}]: '
        info = syslog.wait_for(lambda m: tag in m and f'mounted {src} on {mnt}' in m, 10)
        # <30>: facility daemon (3 << 3) | LOG_INFO (6)
        res.check('(e) syslog gets "info: mounted SRC on MNT" from zmount[PID], facility daemon',
                  info is not None and info.startswith('<30>') and ': info: ' in info,
                  f'got {info!r}; all messages: {syslog.all()}')
        err = syslog.wait_for(lambda m: tag in m and 'broken.gz' in m and m.startswith('<27>'),
                              10)
        res.check('(e) syslog gets an error line (LOG_ERR, facility daemon) naming broken.gz',
                  err is not None and ': error: ' in err, f'all messages: {syslog.all()}')
        for m in syslog.all()[:6]:
            print(f'# syslog: {m!r}', flush=True)
        stray = [m for m in syslog.all() if 'zmount' in m and tag not in m]
        res.check('(e) every syslog line is tagged zmount[PID] of the daemon', not stray,
                  f'{stray}')
    finally:
        rc, out = run(['umount', mnt], timeout=30)
        gone = rc == 0 and not zmtest.is_mounted(mnt)
        res.check('(e) `umount MNT` works', gone, f'rc={rc}: {out}')
        if not gone:
            run(['umount', '-l', mnt])
    x.reap('(e) daemonized', pid)


PHASES = {'a': phase_a, 'b': phase_b, 'c': phase_c_mount, 'e': phase_e}


def inner_main(a):
    x = Inner(a)
    try:
        if not x.subreaper:
            zmtest.Results.note('prctl(PR_SET_CHILD_SUBREAPER) failed: exit statuses of '
                                'detached daemons cannot be read; checking that they are gone')
        x.expect = make_tree(os.path.join(a.work, 'src-check'), seed=4242)
        shutil.rmtree(os.path.join(a.work, 'src-check'), ignore_errors=True)
        PHASES[a.inner](x)
    except Exception as e:  # noqa: BLE001 -- report anything as one FAIL line
        x.res.fail(f'phase {a.inner} ran to the end',
                   f'{type(e).__name__}: {e}\n{traceback.format_exc()}')
    finally:
        x.cleanup()
    return 1 if x.res.failed else 0


# --------------------------------------------------------------------------
# the outer test
# --------------------------------------------------------------------------
class Outer:
    def __init__(self, a):
        self.a = a
        self.res = zmtest.Results()

    def relay(self, phase, extra=()):
        """Run one inner phase in a private mount namespace; relay its lines."""
        a, res = self.a, self.res
        argv = ['unshare', '--mount', '--propagation', 'private', '--',
                sys.executable, os.path.abspath(__file__), '--inner', phase,
                '--zmount', a.zmount, '--build-dir', a.build_dir, '--work', a.work, *extra]
        print(f'# phase {phase}: {" ".join(argv)}', flush=True)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        daemons, timed_out = [], []

        def on_timeout():
            timed_out.append(True)
            for pid in daemons + [p.pid]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

        timer = threading.Timer(INNER_TIMEOUT, on_timeout)
        timer.daemon = True
        timer.start()
        counted = 0
        for raw in p.stdout:
            line = raw.decode(errors='replace').rstrip('\n')
            m = re.match(r'(PASS|FAIL): (.*)', line)
            if m:
                counted += 1
                name = re.sub(r' -- .*', '', m.group(2))
                if m.group(1) == 'PASS':
                    res.passed += 1
                else:
                    res.failed += 1
                    res.failures.append(name)
                print(line, flush=True)
            elif re.fullmatch(r'\d+ passed, \d+ failed', line) or line.startswith('failed checks:'):
                continue
            else:
                d = re.fullmatch(r'# daemon pid (\d+)', line)
                if d:
                    daemons.append(int(d.group(1)))
                print(line, flush=True)
        rc = p.wait()
        timer.cancel()
        if timed_out:
            res.fail(f'phase {phase} finished within {INNER_TIMEOUT} s', 'killed it')
        elif rc not in (0, 1) or counted == 0:
            res.fail(f'phase {phase} ran (unshare -m)', f'exit status {rc}, {counted} checks')

    # -- (c) the Debian package ---------------------------------------------
    def phase_f(self):
        """The README's install and uninstall recipes, in a build directory of
        their own, with `cpack -G DEB` run there in between."""
        a, res = self.a, self.res
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
        top = os.path.realpath(top)
        readme = open(os.path.join(top, 'README.md')).read()
        inst = re.search(r'^## Install\n.*?^```sh\n(.*?)^```', readme, re.S | re.M)
        uninst = re.search(r'^## Uninstall\n.*?^```sh\n(.*?)^```', readme, re.S | re.M)
        if not res.check('(f) the README has "## Install" and "## Uninstall" sh blocks',
                         inst is not None and uninst is not None):
            return
        tools = {t: shutil.which(t) for t in ('cmake', 'cpack', 'ctest')}
        if not res.check('(f) cmake, cpack and ctest are installed', all(tools.values()),
                         f'{tools}'):
            return
        bdir = os.path.join(a.work, 'f-build')
        prefix = os.path.join(a.work, 'f', 'usr', 'local')

        def readme_sh(block):
            """A README block as run here: its build/ is bdir, /usr/local is
            prefix, no sudo, no deps.sh (the machine has them)."""
            lines = [ln for ln in block.splitlines() if 'tools/deps.sh' not in ln]
            text = '\n'.join(re.sub(r'\s+#.*$', '', ln) for ln in lines)
            text = re.sub(r'(?<![\w/.-])build(?=[\s/)]|$)', bdir, text, flags=re.M)
            text = re.sub(r'\bsudo\s+', '', text).replace('/usr/local', prefix)
            return re.sub(r'(cmake --install \S+)', rf'\1 --prefix {prefix}', text)

        # Issue "Everyday use" 6: those who only install do not build the tests.
        res.check('(f) the README\'s install block configures with -DBUILD_TESTING=OFF',
                  '-DBUILD_TESTING=OFF' in inst.group(1), inst.group(1))
        # Pre-existing files and directories that are not zmount's: they must
        # survive the uninstall, and so must the directories holding them.
        decoys = [os.path.join(prefix, 'bin', 'zmount-local'),
                  os.path.join(prefix, 'share', 'doc', 'decoy.txt')]
        for d in decoys:
            os.makedirs(os.path.dirname(d), exist_ok=True)
            with open(d, 'w') as f:
                f.write('not zmount\n')
        env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL='2', CMAKE_BUILD_TYPE='Debug')
        if shutil.which('ccache'):
            # Paths relative to the build directory, which is always as deep
            # (/tmp/zmount-install-*/f-build), so that a second run hits the cache.
            env.update(CMAKE_C_COMPILER_LAUNCHER='ccache', CCACHE_BASEDIR='/',
                       CCACHE_NOHASHDIR='1')
        t0 = time.monotonic()
        script = readme_sh(inst.group(1))
        rc, out = run(['bash', '-euc', script], timeout=900, env=env, cwd=top)
        if not res.check('(f) the README\'s install block builds and installs into a '
                         'temporary prefix', rc == 0 and
                         os.path.isfile(os.path.join(prefix, 'bin', 'zmount')) and
                         os.path.isdir(os.path.join(prefix, 'share', 'doc', 'zmount')),
                         f'rc={rc}: {script}\n{short(out)}',
                         info=f'{time.monotonic() - t0:.0f} s'):
            return
        rc, out = run([tools['ctest'], '-N'], cwd=bdir)
        built = [os.path.join(d, f) for d, _, fs in os.walk(bdir) for f in fs
                 if f.startswith('check_') and os.access(os.path.join(d, f), os.X_OK)]
        res.check('(f) -DBUILD_TESTING=OFF: no test registered and no check_* binary built',
                  rc == 0 and re.search(r'Total Tests: 0\b', out) and not built,
                  f'ctest -N: {short(out, 300)}; built: {built[:5]}')
        installed = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs
                     if os.path.join(d, f) not in decoys]
        # cpack in the same build directory rewrites its install_manifest.txt
        # with the staging install's /usr paths.
        rc, out = run([tools['cpack'], '-G', 'DEB'], timeout=900, cwd=bdir)
        debs = glob.glob(os.path.join(bdir, 'zmount_*.deb'))
        if not res.check('(f) `cpack -G DEB` in that build directory makes a .deb',
                         rc == 0 and len(debs) == 1, f'rc={rc}: {short(out)}'):
            return
        script = readme_sh(uninst.group(1))
        rc, out = run(['bash', '-euc', script], timeout=300, env=env, cwd=top)
        left = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs
                if os.path.join(d, f) not in decoys]
        res.check(f'(f) after cpack, the README\'s uninstall commands succeed and remove all '
                  f'{len(installed)} installed files', rc == 0 and installed and not left,
                  f'rc={rc} {script}: {short(out, 600)}; left: {left}')
        res.check('(f) uninstalling leaves the files that were there before it',
                  all(os.path.isfile(d) for d in decoys),
                  f'gone: {[d for d in decoys if not os.path.isfile(d)]}')
        for d in ('share/doc/zmount', 'share/man/man1', 'share/man'):
            res.check(f'(f) uninstalling removes PREFIX/{d}, which the install created',
                      not os.path.exists(os.path.join(prefix, d)), f'still there after: {script}')
        for d in ('bin', 'share/doc'):
            res.check(f'(f) uninstalling keeps PREFIX/{d}, which was there before',
                      os.path.isdir(os.path.join(prefix, d)))

    def phase_c(self):
        a, res = self.a, self.res
        tools = {t: shutil.which(t) for t in ('cpack', 'dpkg', 'dpkg-deb', 'dpkg-query')}
        missing = [t for t, p in tools.items() if p is None]
        if not res.check('(c) cpack, dpkg, dpkg-deb and dpkg-query are installed', not missing,
                         f'missing {missing}: the .deb checks did NOT run'):
            return
        conf = os.path.join(a.build_dir, 'CPackConfig.cmake')
        if not res.check('(c) the build directory has CPackConfig.cmake', os.path.isfile(conf),
                         f'{conf} is missing: is include(packaging/CPack.cmake) in the '
                         f'top-level CMakeLists.txt?'):
            return
        rc, status = run(['dpkg-query', '-W', '-f=${Status}', 'zmount'])
        if not res.check('(c) no zmount package installed before the test',
                         rc != 0 or 'installed' not in status.split(),
                         f'dpkg says "{status}": not replacing an installed zmount; '
                         f'remove it (dpkg -r zmount) to run this check'):
            return
        pkgdir = os.path.join(a.work, 'pkg')
        t0 = time.monotonic()
        rc, out = run(['cpack', '--config', conf, '-G', 'DEB', '-B', pkgdir], timeout=900,
                      cwd=a.build_dir)
        debs = sorted(glob.glob(os.path.join(pkgdir, 'zmount_*.deb')))
        if not res.check('(c) `cpack -G DEB` makes one zmount_*.deb', rc == 0 and len(debs) == 1,
                         f'rc={rc}, debs {debs}: {short(out)}',
                         info=f'{os.path.basename(debs[0])}, {time.monotonic() - t0:.0f} s'
                         if debs else ''):
            return
        deb = debs[0]
        rc, out = run(['dpkg-deb', '-f', deb, 'Package', 'Section', 'Depends', 'Maintainer',
                       'Description'])
        fields = dict(re.findall(r'^(\w+): (.*)$', out, re.M))
        depends = fields.get('Depends', '')
        res.check('(c) .deb fields: Package zmount, Section utils, a Maintainer, a Description',
                  fields.get('Package') == 'zmount' and fields.get('Section') == 'utils'
                  and fields.get('Maintainer') and fields.get('Description'), out)
        dep_names = {re.sub(r'\s*\(.*', '', d).strip() for d in depends.split(',')}
        want = {'fuse3', 'libfuse3-3', 'liblzma5', 'zlib1g'}
        res.check('(c) .deb Depends: fuse3, libfuse3-3, liblzma5, zlib1g',
                  want <= dep_names, f'Depends: {depends}')
        readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                   'README.md')).read()
        m = re.search(r'\(depends on (.*?)\):', readme, re.S)
        said = set(re.findall(r'`([\w.+-]+)`', m.group(1))) if m else set()
        res.check('(c) the README\'s "(depends on ...)" names exactly the .deb\'s Depends',
                  said == dep_names, f'Depends: {depends}; README: {sorted(said)}')
        rc, out = run(['dpkg-deb', '-c', deb])
        files = {ln.split()[-1].lstrip('.') for ln in out.splitlines() if ln.split()}
        bins = ['zmount', 'zmount-cat', 'zmount-info']
        if os.path.exists(os.path.join(a.build_dir, 'tools', 'zmount-index')):
            bins.append('zmount-index')
        want_files = ([f'/usr/bin/{b}' for b in bins]
                      + [f'/usr/share/man/man1/{p}.1.gz'
                         for p in ('zmount', 'zmount-cat', 'zmount-info', 'zmount-index')])
        lacking = [f for f in want_files if f not in files]
        res.check(f'(c) .deb holds {len(bins)} programs in /usr/bin and 4 man pages',
                  not lacking, f'missing {lacking}; contents:\n{out}')
        # Issue 13: documentation, examples and the stats tool ship too.
        docs = [f'/usr/share/doc/zmount/{f}'
                for f in ('copyright', 'README.md', 'fstab.example', 'srv-logs.mount')]
        extra = docs + ['/usr/bin/zmount-stat', '/usr/share/man/man1/zmount-stat.1.gz']
        lacking = [f for f in extra if f not in files]
        res.check('(c) .deb holds /usr/share/doc/zmount/{copyright,README.md,fstab.example,'
                  'srv-logs.mount}, zmount-stat and its man page', not lacking,
                  f'missing {lacking}; contents:\n{out}')
        cache = os.path.join(a.build_dir, 'CMakeCache.txt')
        want_maint = None
        if os.path.exists(cache):
            with open(cache) as f:
                m = re.search(r'^ZMOUNT_DEB_MAINTAINER:STRING=(.*)$', f.read(), re.M)
                want_maint = m.group(1) if m else None
        res.check('(c) .deb Maintainer is the ZMOUNT_DEB_MAINTAINER cache variable',
                  want_maint is not None and fields.get('Maintainer') == want_maint,
                  f'Maintainer {fields.get("Maintainer")!r}, cache variable {want_maint!r}')

        installed = False
        try:
            rc, out = run(['dpkg', '-i', deb], timeout=300)
            installed = rc == 0
            if not res.check('(c) `dpkg -i` installs it', installed, f'rc={rc}: {short(out)}'):
                return
            rc, out = run(['/usr/bin/zmount', '--version'])
            res.check('(c) /usr/bin/zmount --version works', rc == 0 and out.startswith('zmount '),
                      f'rc={rc}: {out}', info=out)
            xzf = os.path.join(a.work, 'src', 'app.log.2.xz')
            with open(xzf, 'rb') as f:
                want_data = lzma.decompress(f.read())
            p = subprocess.run(['/usr/bin/zmount-cat', xzf], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            res.check('(c) /usr/bin/zmount-cat decompresses an .xz exactly',
                      p.returncode == 0 and p.stdout == want_data,
                      f'rc={p.returncode}, {len(p.stdout)} bytes: {p.stderr.decode(errors="replace")}')
            for page in ('zmount', 'zmount-cat', 'zmount-info', 'zmount-index'):
                path = f'/usr/share/man/man1/{page}.1.gz'
                if shutil.which('man'):
                    rc, out = run(['man', '-w', page])
                    res.check(f'(c) `man -w {page}` finds the installed page', rc == 0
                              and os.path.realpath(out) == path, f'rc={rc}: {out}')
                else:
                    res.check(f'(c) {path} is installed', os.path.isfile(path))
            rc, out = run(['/usr/bin/zmount-stat', '--version'])
            res.check('(c) /usr/bin/zmount-stat --version works',
                      rc == 0 and out.startswith('zmount-stat '), f'rc={rc}: {out}')
            unit = '/usr/share/doc/zmount/srv-logs.mount'
            if shutil.which('systemd-analyze'):
                udir = tempfile.mkdtemp(prefix='zm-unit.', dir=a.work)
                shutil.copy(unit, udir)
                rc, out = run(['systemd-analyze', 'verify',
                               os.path.join(udir, 'srv-logs.mount')])
                res.check('(c) `systemd-analyze verify` accepts the shipped srv-logs.mount',
                          rc == 0, f'rc={rc}: {short(out)}')
            else:
                res.note('systemd-analyze not installed: the shipped unit was not verified')
            if shutil.which('man'):
                rc, out = run(['man', '-P', 'cat', 'zmount'],
                              env=dict(os.environ, MANWIDTH='80', LC_ALL='C.UTF-8'))
                res.check('(c) `man zmount` renders (NAME, fuse.zmount, user.zmount.stats)',
                          rc == 0 and 'fuse.zmount' in out and 'user.zmount.stats' in out
                          and 'NAME' in out, f'rc={rc}: {short(out, 400)}')
            self.relay('c')
        finally:
            if installed:
                rc, out = run(['dpkg', '-r', 'zmount'], timeout=300)
                res.check('(c) `dpkg -r zmount` removes it again',
                          rc == 0 and not os.path.exists('/usr/bin/zmount')
                          and not os.path.exists('/usr/share/man/man1/zmount.1.gz'),
                          f'rc={rc}: {short(out)}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True, help='the zmount binary to test')
    ap.add_argument('--build-dir', required=True, help='the CMake build directory (for cpack)')
    ap.add_argument('--keep', action='store_true', help='keep the temp dir')
    ap.add_argument('--only', default='a,b,c,d,e,f', help='comma-separated subset of a,b,c,d,e,f')
    ap.add_argument('--inner', help=argparse.SUPPRESS)
    ap.add_argument('--work', help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.zmount = os.path.abspath(a.zmount)
    a.build_dir = os.path.abspath(a.build_dir)
    if a.inner:
        return inner_main(a)

    zmtest.require_fuse()
    if os.geteuid() != 0:
        print('SKIP: test_install.py needs root (mount(8), mount namespaces, dpkg) '
              '-- install tests NOT run', flush=True)
        return zmtest.SKIP_RC
    o = Outer(a)
    res = o.res
    only = set(a.only.split(','))
    if not res.check('zmount binary exists and is executable',
                     os.path.isfile(a.zmount) and os.access(a.zmount, os.X_OK), a.zmount):
        return res.finish()
    need = {t: shutil.which(t) for t in ('mount', 'umount', 'unshare', 'mount.fuse3')}
    if not shutil.which('mount.fuse3') and os.path.exists('/sbin/mount.fuse3'):
        need['mount.fuse3'] = '/sbin/mount.fuse3'
    if not res.check('mount, umount, unshare and mount.fuse3 (package fuse3) are installed',
                     all(need.values()), f'{need}'):
        return res.finish()
    a.work = tempfile.mkdtemp(prefix='zmount-install-')
    os.chmod(a.work, 0o755)
    print(f'# temp dir {a.work}', flush=True)
    try:
        expect = make_tree(os.path.join(a.work, 'src'), seed=4242)
        res.ok(f'generated {len(expect)} files ({sum(map(len, expect.values())) // KiB} KiB) '
               f'as .gz, .xz, .tgz, .tar.xz and plain')
        if only & {'a', 'd'}:
            o.relay('a')   # (d) runs inside (a): the stats of that mount
        if 'b' in only:
            o.relay('b')
        if 'e' in only:
            o.relay('e')
        if 'c' in only:
            o.phase_c()
        if 'f' in only:
            o.phase_f()
    finally:
        if a.keep:
            print(f'# kept {a.work}', flush=True)
        else:
            shutil.rmtree(a.work, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
